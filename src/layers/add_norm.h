/* Add & Norm: the residual connection and layer normalization around every
 * sub-layer (attention, feed-forward), in either arrangement:
 *   post-norm (the paper):  x = LayerNorm(x + Sublayer(x))
 *   pre-norm:               x = x + Sublayer(LayerNorm(x))
 * A layer calls ted_add_norm_input() for the sub-layer's input and
 * ted_add_norm_output() with its output, and reads the same either way. */
#ifndef TED_LAYERS_ADD_NORM_H
#define TED_LAYERS_ADD_NORM_H

#include <stdbool.h>

typedef struct ted_layer_norm_weights {
    const float *weight;  /* gamma (d_model) */
    const float *bias;    /* beta (d_model) */
} ted_layer_norm_weights;

/* y = (x - mean) / sqrt(var + eps) * gamma + beta over each row.
 * x, y (rows, d_model); y may equal x. */
void ted_layer_norm(float *y, const float *x, const ted_layer_norm_weights *norm, int rows,
                    int d_model, float eps);

/* The sub-layer's input: LayerNorm(x) written to `scratch` (pre-norm), or x
 * itself (post-norm). x, scratch (rows, d_model). */
const float *ted_add_norm_input(const float *x, float *scratch,
                                const ted_layer_norm_weights *norm, bool norm_first, int rows,
                                int d_model, float eps);

/* Adds the sub-layer's output to the residual stream x, normalizing after
 * the addition in post-norm. x, sublayer_out (rows, d_model). */
void ted_add_norm_output(float *x, const float *sublayer_out,
                         const ted_layer_norm_weights *norm, bool norm_first, int rows,
                         int d_model, float eps);

#endif
