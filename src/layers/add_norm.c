#include "layers/add_norm.h"

#include <stddef.h>

#include "kernels/kernels.h"

void ted_layer_norm(float *y, const float *x, const ted_layer_norm_weights *norm, int rows,
                    int d_model, float eps)
{
    ted_normalize_rows(y, x, norm->weight, norm->bias, rows, d_model, eps);
}

const float *ted_add_norm_input(const float *x, float *scratch,
                                const ted_layer_norm_weights *norm, bool norm_first, int rows,
                                int d_model, float eps)
{
    if (!norm_first)
        return x;
    ted_layer_norm(scratch, x, norm, rows, d_model, eps);
    return scratch;
}

void ted_add_norm_output(float *x, const float *sublayer_out,
                         const ted_layer_norm_weights *norm, bool norm_first, int rows,
                         int d_model, float eps)
{
    size_t n = (size_t)rows * d_model;
    for (size_t i = 0; i < n; i++)
        x[i] += sublayer_out[i];
    if (!norm_first)
        ted_layer_norm(x, x, norm, rows, d_model, eps);
}
