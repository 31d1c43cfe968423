/* The position-wise feed-forward network, applied to every position alike:
 *   plain (the paper):  FFN(x) = Linear2(activation(Linear1(x)))
 *   gated (T5 v1.1):    FFN(x) = Linear2(activation(Linear1(x)) * Up(x))
 * Its kind (the activation, and the network that applies it) is chosen
 * once, at load (model.h's ted_layer_kinds): ReLU (the paper), GELU, SiLU,
 * GELU's tanh approximation. */
#ifndef TED_LAYERS_FEED_FORWARD_H
#define TED_LAYERS_FEED_FORWARD_H

#include <stddef.h>

#include "kernels/kernels.h"

typedef struct ted_feed_forward_weights {
    ted_matrix linear1_weight;  /* (d_ff, d_model) */
    const float *linear1_bias;  /* (d_ff) */
    ted_matrix linear2_weight;  /* (d_model, d_ff) */
    const float *linear2_bias;  /* (d_model) */
    ted_matrix up_weight;       /* gated: (d_ff, d_model), not activated (T5's wi_1) */
    const float *up_bias;       /* gated: (d_ff) */
} ted_feed_forward_weights;

/* The sizes of one call: `rows` positions of Embedding Size d_model, and
 * the inner layer's d_ff. */
typedef struct ted_feed_forward_shape {
    int rows;
    int d_model;
    int d_ff;
} ted_feed_forward_shape;

/* An activation, in place over x (n). */
typedef void ted_activation_fn(float *x, size_t n);

/* x (rows, d_model) -> hidden (rows, d_ff) -> out (rows, d_model), with
 * `activate` between the Linears. `hidden` is scratch the caller owns:
 * (rows, d_ff) for the plain network, (2, rows, d_ff) for the gated one. */
typedef void ted_feed_forward_fn(float *out, float *hidden, const float *x,
                                 const ted_feed_forward_weights *ffn,
                                 ted_activation_fn *activate, ted_feed_forward_shape shape);

typedef struct ted_feed_forward_kind {
    const char *name;              /* the config's activation: "relu", "gelu", "silu",
                                    * "gelu_tanh" */
    ted_activation_fn *activate;
    ted_feed_forward_fn *forward;  /* Linear -> activate -> Linear, or gated */
    int hidden_rows;               /* the (rows, d_ff) blocks of `hidden` it takes: 1, 2 */
} ted_feed_forward_kind;

extern const ted_feed_forward_kind ted_relu_feed_forward;
extern const ted_feed_forward_kind ted_gelu_feed_forward;
extern const ted_feed_forward_kind ted_silu_feed_forward;
extern const ted_feed_forward_kind ted_gelu_tanh_feed_forward;
extern const ted_feed_forward_kind ted_gated_relu_feed_forward;
extern const ted_feed_forward_kind ted_gated_gelu_feed_forward;
extern const ted_feed_forward_kind ted_gated_silu_feed_forward;
extern const ted_feed_forward_kind ted_gated_gelu_tanh_feed_forward;

/* The network of `kind`: x (rows, d_model) -> out (rows, d_model), through
 * hidden (kind->hidden_rows, rows, d_ff), scratch the caller owns. */
void ted_feed_forward(float *out, float *hidden, const float *x,
                      const ted_feed_forward_weights *ffn, const ted_feed_forward_kind *kind,
                      ted_feed_forward_shape shape);

/* The activations, in place over x (n). */
void ted_relu(float *x, size_t n);
void ted_gelu(float *x, size_t n);
void ted_silu(float *x, size_t n);
void ted_gelu_tanh(float *x, size_t n);

#endif
