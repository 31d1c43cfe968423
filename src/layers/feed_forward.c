#include "layers/feed_forward.h"

#include <stddef.h>

#include "kernels/kernels.h"

void ted_relu(float *x, size_t n)
{
    ted_zero_negatives(x, n);
}

/* The exact form PyTorch uses by default, not the tanh approximation. */
void ted_gelu(float *x, size_t n)
{
    ted_times_normal_cdf(x, n);
}

/* SiLU, which Hugging Face calls "swish": x * sigmoid(x). */
void ted_silu(float *x, size_t n)
{
    ted_times_sigmoid(x, n);
}

/* GELU's tanh approximation, as Hugging Face's gelu_new (NewGELUActivation). */
void ted_gelu_tanh(float *x, size_t n)
{
    ted_times_normal_cdf_tanh(x, n);
}

/* The paper's network: Linear1, the activation, Linear2. */
static void position_wise(float *out, float *hidden, const float *x,
                          const ted_feed_forward_weights *ffn, ted_activation_fn *activate,
                          ted_feed_forward_shape shape)
{
    int rows = shape.rows, d_model = shape.d_model, d_ff = shape.d_ff;
    ted_linear(hidden, x, ffn->linear1_weight, ffn->linear1_bias, rows, d_model, d_ff);
    activate(hidden, (size_t)rows * d_ff);
    ted_linear(out, hidden, ffn->linear2_weight, ffn->linear2_bias, rows, d_ff, d_model);
}

/* The gated network (T5 v1.1, mT5): the activated Linear1 times Up, then
 * Linear2. hidden (2, rows, d_ff): Linear1's, then Up's. */
static void gated(float *out, float *hidden, const float *x, const ted_feed_forward_weights *ffn,
                  ted_activation_fn *activate, ted_feed_forward_shape shape)
{
    int rows = shape.rows, d_model = shape.d_model, d_ff = shape.d_ff;
    size_t n = (size_t)rows * d_ff;
    float *up = hidden + n;
    ted_linear(hidden, x, ffn->linear1_weight, ffn->linear1_bias, rows, d_model, d_ff);
    activate(hidden, n);
    ted_linear(up, x, ffn->up_weight, ffn->up_bias, rows, d_model, d_ff);
    for (size_t i = 0; i < n; i++)
        hidden[i] *= up[i];
    ted_linear(out, hidden, ffn->linear2_weight, ffn->linear2_bias, rows, d_ff, d_model);
}

const ted_feed_forward_kind ted_relu_feed_forward = {"relu", ted_relu, position_wise, 1};
const ted_feed_forward_kind ted_gelu_feed_forward = {"gelu", ted_gelu, position_wise, 1};
const ted_feed_forward_kind ted_silu_feed_forward = {"silu", ted_silu, position_wise, 1};
const ted_feed_forward_kind ted_gelu_tanh_feed_forward = {"gelu_tanh", ted_gelu_tanh,
                                                          position_wise, 1};
const ted_feed_forward_kind ted_gated_relu_feed_forward = {"relu", ted_relu, gated, 2};
const ted_feed_forward_kind ted_gated_gelu_feed_forward = {"gelu", ted_gelu, gated, 2};
const ted_feed_forward_kind ted_gated_silu_feed_forward = {"silu", ted_silu, gated, 2};
const ted_feed_forward_kind ted_gated_gelu_tanh_feed_forward = {"gelu_tanh", ted_gelu_tanh,
                                                                gated, 2};

void ted_feed_forward(float *out, float *hidden, const float *x,
                      const ted_feed_forward_weights *ffn, const ted_feed_forward_kind *kind,
                      ted_feed_forward_shape shape)
{
    kind->forward(out, hidden, x, ffn, kind->activate, shape);
}
