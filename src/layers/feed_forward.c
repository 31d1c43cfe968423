#include "layers/feed_forward.h"

#include <math.h>
#include <stddef.h>

#include "kernels/kernels.h"

void ted_relu(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* The exact form PyTorch uses by default, not the tanh approximation. */
void ted_gelu(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void ted_feed_forward(float *out, float *hidden, const float *x,
                      const ted_feed_forward_weights *ffn, ted_activation activation, int rows,
                      int d_model, int d_ff)
{
    ted_matmul(hidden, x, ffn->linear1_weight, ffn->linear1_bias, rows, d_model, d_ff);
    size_t n = (size_t)rows * d_ff;
    if (activation == TED_ACTIVATION_GELU)
        ted_gelu(hidden, n);
    else
        ted_relu(hidden, n);
    ted_matmul(out, hidden, ffn->linear2_weight, ffn->linear2_bias, rows, d_ff, d_model);
}
