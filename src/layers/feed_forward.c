#include "layers/feed_forward.h"

#include <math.h>
#include <stddef.h>

#include "kernels/kernels.h"

void ted_relu(float *x, size_t n)
{
    ted_zero_negatives(x, n);
}

/* The exact form PyTorch uses by default, not the tanh approximation. */
void ted_gelu(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

/* SiLU, which Hugging Face calls "swish": x * sigmoid(x). */
void ted_silu(float *x, size_t n)
{
    ted_times_sigmoid(x, n);
}

static void activate(float *x, size_t n, ted_activation activation)
{
    switch (activation) {
    case TED_ACTIVATION_RELU: ted_relu(x, n); break;
    case TED_ACTIVATION_GELU: ted_gelu(x, n); break;
    case TED_ACTIVATION_SILU: ted_silu(x, n); break;
    }
}

void ted_feed_forward(float *out, float *hidden, const float *x,
                      const ted_feed_forward_weights *ffn, ted_activation activation,
                      ted_feed_forward_shape shape)
{
    int rows = shape.rows, d_model = shape.d_model, d_ff = shape.d_ff;
    ted_linear(hidden, x, ffn->linear1_weight, ffn->linear1_bias, rows, d_model, d_ff);
    activate(hidden, (size_t)rows * d_ff, activation);
    ted_linear(out, hidden, ffn->linear2_weight, ffn->linear2_bias, rows, d_ff, d_model);
}
