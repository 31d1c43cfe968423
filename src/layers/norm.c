/* LayerNorm, the paper's normalization, and the call of a model's kind
 * (layers/norm.h). RMSNorm is in rms_norm.c. */
#include "layers/norm.h"

#include "kernels/kernels.h"

void ted_layer_norm(float *y, const float *x, const ted_norm_weights *weights, int rows,
                    int d_model, float eps)
{
    ted_normalize_rows(y, x, weights->weight, weights->bias, rows, d_model, eps);
}

const ted_norm_kind ted_layer_norm_kind = {"LayerNorm", ted_layer_norm};

void ted_normalize(float *y, const float *x, const ted_norm_weights *weights,
                   const ted_norm *norm, int rows, int d_model)
{
    norm->kind->normalize(y, x, weights, rows, d_model, norm->eps);
}
