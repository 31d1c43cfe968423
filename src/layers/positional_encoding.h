/* Sinusoidal positional encoding:
 *   PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
 *   PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))
 * or, fairseq's (M2M-100, NLLB), sines then cosines of pos / 10000^(i / (d_model/2 - 1)).
 * Computed by each session for the positions it reaches; a learned table
 * (mBART) is one of the weights, added the same way. */
#ifndef TED_LAYERS_POSITIONAL_ENCODING_H
#define TED_LAYERS_POSITIONAL_ENCODING_H

#include "ted/ted.h"

/* Fills table (max_positions, d_model). With the interleaved layout the
 * sine of frequency i sits at dimension 2i and its cosine at 2i + 1; with
 * the concatenated and fairseq layouts all sines come first, then all
 * cosines. d_model must be even (fairseq: and >= 4); not for learned. */
void ted_positional_encoding_table(float *table, int max_positions, int d_model,
                                   ted_positional_layout layout);

/* The tokens that take no position: fairseq's sinusoidal encoding (M2M-100)
 * gives every padding token the padding position, whose row is zero. */
typedef struct ted_padding_position {
    const int *ids;  /* (count): the tokens of the rows; NULL: every row takes its position */
    int id;          /* the padding token */
} ted_padding_position;

/* x (count, d_model) += PE rows of positions first_position ..., but for
 * the rows of padding tokens. */
void ted_add_positional_encoding(float *x, const float *table, int first_position, int count,
                                 int d_model, ted_padding_position padding);

#endif
