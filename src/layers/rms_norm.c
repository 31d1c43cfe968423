/* RMSNorm (Zhang & Sennrich 2019; T5's T5LayerNorm): each row scaled by
 * the reciprocal of its root mean square, then by gamma, with neither the
 * mean subtracted nor a bias added (layers/norm.h). */
#include "layers/norm.h"

#include <math.h>
#include <stddef.h>

void ted_rms_norm(float *y, const float *x, const ted_norm_weights *weights, int rows,
                  int d_model, float eps)
{
    const float *gamma = weights->weight;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * d_model;
        float *yr = y + (size_t)r * d_model;
        double square_sum = 0.0;
        for (int i = 0; i < d_model; i++)
            square_sum += (double)xr[i] * xr[i];
        double inv_rms = 1.0 / sqrt(square_sum / d_model + eps);
        for (int i = 0; i < d_model; i++)
            yr[i] = (float)(xr[i] * inv_rms) * gamma[i];
    }
}

const ted_norm_kind ted_rms_norm_kind = {"RMSNorm", ted_rms_norm};
