/* Sinusoidal positional encoding:
 *   PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
 *   PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))
 * Computed by each session for the positions it reaches. */
#ifndef TED_LAYERS_POSITIONAL_ENCODING_H
#define TED_LAYERS_POSITIONAL_ENCODING_H

#include "ted/ted.h"

/* Fills table (max_positions, d_model). With the interleaved layout the
 * sine of frequency i sits at dimension 2i and its cosine at 2i + 1; with
 * the concatenated layout all sines come first, then all cosines.
 * d_model must be even. */
void ted_positional_encoding_table(float *table, int max_positions, int d_model,
                                   ted_positional_layout layout);

/* x (count, d_model) += PE rows of positions first_position ... */
void ted_add_positional_encoding(float *x, const float *table, int first_position, int count,
                                 int d_model);

#endif
