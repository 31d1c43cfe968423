/* Positional encoding kinds, chosen once at load (model.h's
 * ted_layer_kinds), each adding its encoding of a position to the
 * embedding of the token there:
 *   interleaved (the paper): PE(pos, 2i) = sin(pos / 10000^(2i / d_model)),
 *                            PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))
 *   concatenated (Marian):   the same sines, then the same cosines
 *   fairseq (M2M-100, NLLB): sines then cosines of pos / 10000^(i / (d_model/2 - 1)),
 *                            none for a padding token
 *   learned (mBART):         a table of the weights file per stack
 *   relative (T5):           none: a bias of the attention scores instead
 *                            (layers/relative_position.h)
 * A sinusoidal table is computed by each session for the positions it
 * reaches; a learned one is added the same way. */
#ifndef TED_LAYERS_POSITIONAL_ENCODING_H
#define TED_LAYERS_POSITIONAL_ENCODING_H

/* The tokens that take no position: fairseq's sinusoidal encoding (M2M-100)
 * gives every padding token the padding position, whose row is zero. */
typedef struct ted_padding_position {
    const int *ids;  /* (count): the tokens of the rows */
    int id;          /* the padding token */
} ted_padding_position;

typedef struct ted_position_kind {
    const char *name;  /* the config's positional_encoding */
    /* Fills table (count, d_model) with the encoding of positions
     * 0..count-1. d_model is even (fairseq: and >= 4). NULL: the table is
     * one of the model's weights (learned). */
    void (*fill)(float *table, int count, int d_model);
    /* x (count, d_model) += the table's rows of positions first_position
     * ...; padding: the rows' tokens, for the kind that skips padding. */
    void (*add)(float *x, const float *table, int first_position, int count, int d_model,
                ted_padding_position padding);
} ted_position_kind;

extern const ted_position_kind ted_interleaved_positions;
extern const ted_position_kind ted_concatenated_positions;
extern const ted_position_kind ted_fairseq_positions;
extern const ted_position_kind ted_learned_positions;
extern const ted_position_kind ted_relative_positions;
/* fairseq's table added to every token, padding or not (Marian's own
 * models: sines then cosines of 10000^(-i / (d_model/2 - 1))) */
extern const ted_position_kind ted_marian_positions;

#endif
