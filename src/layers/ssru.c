#include "layers/ssru.h"

#include <stddef.h>

#include "layers/marian_ops.h"

void ted_ssru_step(float *h, float *cell, const float *x, const ted_ssru_weights *w,
                   int rows, int d_model, float *scratch)
{
    size_t n = (size_t)rows * d_model;
    float *input = scratch, *gate = scratch + n;
    ted_linear(input, x, w->weight, NULL, rows, d_model, d_model);
    ted_linear(gate, x, w->forget_weight, w->forget_bias, rows, d_model, d_model);
    /* the gates as Marian's SSRU computes them (its highway operation) */
    for (int r = 0; r < rows; r++)
        ted_marian_sigmoid(gate + (size_t)r * d_model, d_model);
    for (size_t i = 0; i < n; i++) {
        float f = gate[i], c = f * cell[i] + (1.0f - f) * input[i];
        cell[i] = c;
        h[i] = c > 0.0f ? c : 0.0f;
    }
}
