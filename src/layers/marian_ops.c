/* Marian's float arithmetic (layers/marian_ops.h). The expressions are
 * written in Marian's order; the build contracts no multiply-add into an
 * FMA (-std=c11), as Marian's vector code has none; MKL's fused
 * multiply-adds are written as fmaf. */
#include "layers/marian_ops.h"

#include <math.h>
#include <stdbool.h>
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

/* ---- attention's products in MKL's order ------------------------------------ */

/* The entry points in two copies, one for CPUs with FMA, where fmaf is an
 * instruction rather than a call; the same results from either. (A copy
 * chosen by the CPU at each call, not target_clones: an ifunc resolver
 * runs before ThreadSanitizer's runtime is up.) */
#if defined(__x86_64__) && defined(__GNUC__)
#define FMA_COPY __attribute__((target("fma")))
#define IN_EACH_COPY __attribute__((always_inline)) inline
#define CPU_HAS_FMA() __builtin_cpu_supports("fma")
#else
#define FMA_COPY
#define IN_EACH_COPY inline
#define CPU_HAS_FMA() 0
#endif

/* The orders MKL's AVX2 sgemm sums a dot product of n products in. */
typedef enum sum_order {
    ONE_CHAIN,          /* x_0, then each next one fused in */
    TWO_CHAINS,         /* the even and the odd products each one fused chain, the
                         * chains added, an odd last product fused in */
    TWO_ROUNDED_CHAINS, /* the same with each product rounded before it is added */
    PAIRS_OF_16,        /* 8 lanes of x_i + x_{i+8} a block of 16 (one query) */
    LANES_OF_16,        /* 16 fused lanes of every 16th product, halved */
    LANES_OF_8          /* 8 rounded lanes of every 8th product, halved */
} sum_order;

/* One dot product of a (n) and b (n, every `stride`-th float). */
static IN_EACH_COPY float one_chain(const float *a, const float *b, size_t stride, int n)
{
    float s = a[0] * b[0];
    for (int i = 1; i < n; i++)
        s = fmaf(a[i], b[i * stride], s);
    return s;
}

/* one_chain of 8 dot products side by side: out[l] of a (n) and b + l *
 * across (n, every `along`-th float). */
static IN_EACH_COPY void one_chain_of_8(float *out, const float *a, const float *b,
                                        size_t along, size_t across, int n)
{
    float s[8];
    for (int l = 0; l < 8; l++)
        s[l] = a[0] * b[l * across];
    for (int i = 1; i < n; i++)
        for (int l = 0; l < 8; l++)
            s[l] = fmaf(a[i], b[i * along + l * across], s[l]);
    memcpy(out, s, sizeof s);
}

static IN_EACH_COPY float two_chains(const float *a, const float *b, size_t stride, int n,
                                      bool fused)
{
    if (n < 2)
        return a[0] * b[0];
    float chain[2] = {a[0] * b[0], a[1] * b[stride]};
    int even = n / 2 * 2;
    for (int i = 2; i < even; i++)
        chain[i % 2] = fused ? fmaf(a[i], b[i * stride], chain[i % 2])
                             : chain[i % 2] + a[i] * b[i * stride];
    float s = chain[0] + chain[1];
    if (n % 2)
        s = fused ? fmaf(a[n - 1], b[(n - 1) * stride], s) : s + a[n - 1] * b[(n - 1) * stride];
    return s;
}

/* The 8 lanes' pairs of the 16 products from a and b. */
static IN_EACH_COPY void pairs(float *pair, const float *a, const float *b)
{
    for (int l = 0; l < 8; l++)
        pair[l] = fmaf(a[l], b[l], a[l + 8] * b[l + 8]);
}

static IN_EACH_COPY float pairs_of_16(const float *a, const float *b, int n)
{
    float lane[8], pair[8];
    pairs(lane, a, b);
    for (int block = 16; block < n; block += 16) {
        pairs(pair, a + block, b + block);
        for (int l = 0; l < 8; l++)
            lane[l] = lane[l] + pair[l];
    }
    return ((lane[0] + lane[1]) + (lane[4] + lane[5])) +
           ((lane[2] + lane[3]) + (lane[6] + lane[7]));
}

/* `width` lanes, lane l the chain of products l, l + width, ...; then lane
 * l + w/2 added to lane l, w halving down to 1. */
static IN_EACH_COPY float lanes(const float *a, const float *b, int n, int width, bool fused)
{
    float lane[16];
    for (int l = 0; l < width; l++) {
        lane[l] = a[l] * b[l];
        for (int i = l + width; i < n; i += width)
            lane[l] = fused ? fmaf(a[i], b[i], lane[l]) : lane[l] + a[i] * b[i];
    }
    for (int w = width / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            lane[l] = lane[l] + lane[l + w];
    return lane[0];
}

static IN_EACH_COPY float dot_in(sum_order order, const float *a, const float *b,
                                  size_t stride, int n)
{
    switch (order) {
    case TWO_CHAINS: return two_chains(a, b, stride, n, true);
    case TWO_ROUNDED_CHAINS: return two_chains(a, b, stride, n, false);
    case PAIRS_OF_16: return pairs_of_16(a, b, n);
    case LANES_OF_16: return lanes(a, b, n, 16, true);
    case LANES_OF_8: return lanes(a, b, n, 8, false);
    case ONE_CHAIN: break;
    }
    return one_chain(a, b, stride, n);
}

/* The order of a row in the last block of 1 to 3 rows of a product of 6
 * rows a block; ONE_CHAIN for the other rows. */
static IN_EACH_COPY sum_order last_rows_order(ted_product_place at)
{
    int left = at.rows >= 6 ? at.rows % 6 : 0;
    if (left == 0 || left > 3 || at.row < at.rows - left)
        return ONE_CHAIN;
    return left == 3 ? TWO_CHAINS : TWO_ROUNDED_CHAINS;
}

static IN_EACH_COPY sum_order scores_order(ted_product_place at, int column, int size)
{
    if (size % 16)
        return ONE_CHAIN;
    if (at.rows == 1)
        return PAIRS_OF_16;
    if (at.rows <= 3)
        return at.row % 2 ? LANES_OF_8 : LANES_OF_16;
    sum_order last = last_rows_order(at);
    if (last != ONE_CHAIN)
        return last;
    bool whole = column < at.columns / 16 * 16 || at.columns % 16 > 8;
    return whole ? ONE_CHAIN : TWO_CHAINS;
}

static IN_EACH_COPY void dots(float *scores, const float *q, const float *keys, int count, int size,
                               float scale, ted_product_place at)
{
    int j = 0;
    /* 8 keys at a time while they sum in one chain (the columns that do not
     * are the last ones) */
    for (; j + 8 <= count && scores_order(at, j + 7, size) == ONE_CHAIN; j += 8) {
        one_chain_of_8(scores + j, q, keys + (size_t)j * size, 1, (size_t)size, size);
        for (int l = 0; l < 8; l++)
            scores[j + l] = scores[j + l] * scale;
    }
    for (; j < count; j++) {
        sum_order order = scores_order(at, j, size);
        scores[j] = dot_in(order, q, keys + (size_t)j * size, 1, size) * scale;
    }
}

static IN_EACH_COPY void weigh(float *out, const float *weights, const float *values, int count,
                                int size, ted_product_place at)
{
    sum_order order = at.rows == 1 ? ONE_CHAIN
                      : at.rows <= 3 ? TWO_CHAINS : last_rows_order(at);
    int i = 0;
    if (order == ONE_CHAIN)  /* 8 outputs at a time, each its own chain */
        for (; i + 8 <= size; i += 8)
            one_chain_of_8(out + i, weights, values + i, (size_t)size, 1, count);
    for (; i < size; i++)
        out[i] = dot_in(order, weights, values + i, (size_t)size, count);
}

FMA_COPY
static void dots_fma(float *scores, const float *q, const float *keys, int count, int size,
                     float scale, ted_product_place at)
{
    dots(scores, q, keys, count, size, scale, at);
}

static void marian_dots(float *scores, const float *q, const float *keys, int count, int size,
                        float scale, ted_product_place at)
{
    if (CPU_HAS_FMA())
        dots_fma(scores, q, keys, count, size, scale, at);
    else
        dots(scores, q, keys, count, size, scale, at);
}

FMA_COPY
static void weigh_fma(float *out, const float *weights, const float *values, int count,
                      int size, ted_product_place at)
{
    weigh(out, weights, values, count, size, at);
}

static void marian_weigh(float *out, const float *weights, const float *values, int count,
                         int size, ted_product_place at)
{
    if (CPU_HAS_FMA())
        weigh_fma(out, weights, values, count, size, at);
    else
        weigh(out, weights, values, count, size, at);
}

const ted_attention_arithmetic ted_marian_attention = {marian_dots, ted_marian_softmax,
                                                       marian_weigh};
