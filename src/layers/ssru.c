#include "layers/ssru.h"

#include <math.h>
#include <stddef.h>

/* The logistic function, without overflow for large |v|. */
static float sigmoid(float v)
{
    if (v >= 0.0f)
        return 1.0f / (1.0f + expf(-v));
    float e = expf(v);
    return e / (1.0f + e);
}

void ted_ssru_step(float *h, float *cell, const float *x, const ted_ssru_weights *w,
                   int rows, int d_model, float *scratch)
{
    size_t n = (size_t)rows * d_model;
    float *input = scratch, *gate = scratch + n;
    ted_linear(input, x, w->weight, NULL, rows, d_model, d_model);
    ted_linear(gate, x, w->forget_weight, w->forget_bias, rows, d_model, d_model);
    for (size_t i = 0; i < n; i++) {
        float f = sigmoid(gate[i]);
        float c = f * cell[i] + (1.0f - f) * input[i];
        cell[i] = c;
        h[i] = c > 0.0f ? c : 0.0f;
        gate[i] = f;
    }
}
