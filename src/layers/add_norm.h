/* Add & Norm: the residual connection and the normalization around every
 * sub-layer (attention, feed-forward), in either arrangement:
 *   post-norm (the paper):  x = Norm(x + Sublayer(x))
 *   pre-norm:               x = x + Sublayer(Norm(x))
 * Norm is the model's kind (layers/norm.h: LayerNorm, RMSNorm), and
 * norm->first says which arrangement. A layer calls ted_add_norm_input()
 * for the sub-layer's input and ted_add_norm_output() with its output, and
 * reads the same either way. */
#ifndef TED_LAYERS_ADD_NORM_H
#define TED_LAYERS_ADD_NORM_H

#include "layers/norm.h"

/* The sub-layer's input: Norm(x) written to `scratch` (pre-norm), or x
 * itself (post-norm). x, scratch (rows, d_model). */
const float *ted_add_norm_input(const float *x, float *scratch, const ted_norm_weights *weights,
                                const ted_norm *norm, int rows, int d_model);

/* Adds the sub-layer's output to the residual stream x, normalizing after
 * the addition in post-norm. x, sublayer_out (rows, d_model). */
void ted_add_norm_output(float *x, const float *sublayer_out, const ted_norm_weights *weights,
                         const ted_norm *norm, int rows, int d_model);

#endif
