/* The position-wise feed-forward network: Linear -> activation -> Linear,
 * applied to every position alike. */
#ifndef TED_LAYERS_FEED_FORWARD_H
#define TED_LAYERS_FEED_FORWARD_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "ted/config.h"

typedef struct ted_feed_forward_weights {
    ted_matrix linear1_weight;  /* (d_ff, d_model) */
    const float *linear1_bias;  /* (d_ff) */
    ted_matrix linear2_weight;  /* (d_model, d_ff) */
    const float *linear2_bias;  /* (d_model) */
} ted_feed_forward_weights;

/* The sizes of one call: `rows` positions of Embedding Size d_model, and
 * the inner layer's d_ff. */
typedef struct ted_feed_forward_shape {
    int rows;
    int d_model;
    int d_ff;
} ted_feed_forward_shape;

/* x (rows, d_model) -> hidden (rows, d_ff) -> out (rows, d_model).
 * `hidden` is scratch the caller owns. */
void ted_feed_forward(float *out, float *hidden, const float *x,
                      const ted_feed_forward_weights *ffn, ted_activation activation,
                      ted_feed_forward_shape shape);

/* The activations, in place over n values. */
void ted_relu(float *x, size_t n);
void ted_gelu(float *x, size_t n);
void ted_silu(float *x, size_t n);

#endif
