#include "layers/add_norm.h"

#include <math.h>
#include <stddef.h>

/* Sums in double over LANES independent partial sums, so the additions
 * overlap instead of waiting on one another (the layer norm would otherwise
 * cost a third of a small model's matrix products). */
enum { LANES = 8 };

static double row_mean(const float *x, int n)
{
    double partial[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int lane = 0; lane < LANES; lane++)
            partial[lane] += x[i + lane];
    double sum = 0.0;
    for (; i < n; i++)
        sum += x[i];
    for (int lane = 0; lane < LANES; lane++)
        sum += partial[lane];
    return sum / n;
}

static double row_variance(const float *x, int n, double mean)
{
    double partial[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int lane = 0; lane < LANES; lane++) {
            double centered = x[i + lane] - mean;
            partial[lane] += centered * centered;
        }
    double sum = 0.0;
    for (; i < n; i++)
        sum += (x[i] - mean) * (x[i] - mean);
    for (int lane = 0; lane < LANES; lane++)
        sum += partial[lane];
    return sum / n;
}

void ted_layer_norm(float *y, const float *x, const ted_layer_norm_weights *norm, int rows,
                    int d_model, float eps)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * d_model;
        float *yr = y + (size_t)r * d_model;
        /* In double, two passes, and the mean subtracted in double too:
         * rows with a large mean would otherwise lose their digits to the
         * rounding of the mean. */
        double mean = row_mean(xr, d_model);
        double inv_std = 1.0 / sqrt(row_variance(xr, d_model, mean) + eps);
        for (int i = 0; i < d_model; i++)
            yr[i] = (float)((xr[i] - mean) * inv_std) * norm->weight[i] + norm->bias[i];
    }
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
