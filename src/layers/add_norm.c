#include "layers/add_norm.h"

#include <stddef.h>

const float *ted_add_norm_input(const float *x, float *scratch, const ted_norm_weights *weights,
                                const ted_norm *norm, int rows, int d_model)
{
    if (!norm->first)
        return x;
    ted_normalize(scratch, x, weights, norm, rows, d_model);
    return scratch;
}

void ted_add_norm_output(float *x, const float *sublayer_out, const ted_norm_weights *weights,
                         const ted_norm *norm, int rows, int d_model)
{
    size_t n = (size_t)rows * d_model;
    for (size_t i = 0; i < n; i++)
        x[i] += sublayer_out[i];
    if (!norm->first)
        ted_normalize(x, x, weights, norm, rows, d_model);
}
