/* Marian's float arithmetic (layers/marian_ops.h). The expressions are
 * written in Marian's order; the build contracts no multiply-add into an
 * FMA (-std=c11), as the vector code it follows has none. */
#include "layers/marian_ops.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

float ted_marian_exp(float x)
{
    x = fminf(fmaxf(x, -88.3762626647949f), 88.3762626647949f);
    float fx = floorf(x * 1.44269504088896341f + 0.5f);  /* n = round(x / ln 2) */
    x = x - fx * 0.693359375f;
    x = x - fx * -2.12194440e-4f;
    float z = x * x, y = 1.9875691500E-4f;
    y = y * x + 1.3981999507E-3f;
    y = y * x + 8.3334519073E-3f;
    y = y * x + 4.1665795894E-2f;
    y = y * x + 1.6666665459E-1f;
    y = y * x + 5.0000001201E-1f;
    y = y * z + x + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)fx + 127) << 23;  /* 2^n */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

void ted_marian_sigmoid(float *x, int n)
{
    for (int i = 0; i < n; i++) {
        float v = x[i];
        if (n % 4 == 0) {
            float e = ted_marian_exp(v);
            x[i] = e / (1.0f + e);
        } else if (v > 0.0f) {
            x[i] = 1.0f / (1.0f + expf(-v));
        } else {
            float e = expf(v);
            x[i] = e / (1.0f + e);
        }
    }
}

void ted_marian_softmax(float *x, int n)
{
    int lanes = n % 8 == 0 ? 8 : n % 4 == 0 ? 4 : 1;
    float most = x[0], sums[8] = {0.0f};
    for (int i = 1; i < n; i++)
        most = x[i] > most ? x[i] : most;
    for (int i = 0; i < n; i++) {
        float e = lanes > 1 ? ted_marian_exp(x[i] - most) : expf(x[i] - most);
        sums[i % lanes] += e;
        x[i] = e;
    }
    float sum = 0.0f;
    for (int k = 0; k < lanes; k++)
        sum += sums[k];
    for (int i = 0; i < n; i++)
        x[i] = x[i] / sum;
}

/* The sum of v (n) in Marian's order (ted_marian_layer_norm_kind). */
static float lanes_sum(const float *v, int n)
{
    float r[8] = {0.0f};
    int whole = n / 8 * 8;
    for (int i = 0; i < whole; i++)
        r[i % 8] += v[i];
    float s = ((r[0] + r[4]) + (r[2] + r[6])) + ((r[1] + r[5]) + (r[3] + r[7]));
    for (int i = whole; i < n; i++)
        s += v[i];
    return s;
}

/* The sum of (v - mean)^2 over v (n), in the same order. */
static float lanes_squares(const float *v, int n, float mean)
{
    float r[8] = {0.0f};
    int whole = n / 8 * 8;
    for (int i = 0; i < whole; i++) {
        float d = v[i] - mean;
        r[i % 8] += d * d;
    }
    float s = ((r[0] + r[4]) + (r[2] + r[6])) + ((r[1] + r[5]) + (r[3] + r[7]));
    for (int i = whole; i < n; i++) {
        float d = v[i] - mean;
        s += d * d;
    }
    return s;
}

static void marian_layer_norm(float *y, const float *x, const ted_norm_weights *weights,
                              int rows, int n, float eps)
{
    float per = 1.0f / (float)n;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n;
        float mean = lanes_sum(xr, n) * per;
        float inv = 1.0f / sqrtf(lanes_squares(xr, n, mean) * per + eps);
        for (int i = 0; i < n; i++)
            yr[i] = (xr[i] - mean) * (weights->weight[i] * inv) + weights->bias[i];
    }
}

const ted_norm_kind ted_marian_layer_norm_kind = {"LayerNorm", marian_layer_norm};
