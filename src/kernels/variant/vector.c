/* The vector kernels (declared in kernels/kernels.h), compiled once per
 * instruction set (kernels/variants.h): what attention's scores and
 * weighted sums, the softmax over the vocabulary and the check of the
 * logits are made of (the activations: activation.c). */
#include <math.h>
#include <stddef.h>

#include "kernels/simd.h"
#include "kernels/variants.h"

/* A head's query_size in whole vectors, at most this many (AVX-512: 128
 * floats, AVX2: 64), keeps a query or a weighted sum in registers over all
 * the keys; other sizes take the general loops. */
enum { MAX_HEAD_VECTORS = 8 };

/* scores[j] = q . keys[j] * scale for VECTORS * TED_VEC_FLOATS floats,
 * four keys at a time: four independent sums. */
static inline __attribute__((always_inline)) void scaled_dots_in_registers(
    float *scores, const float *q, const float *keys, int count, float scale, const int VECTORS)
{
    const int V = TED_VEC_FLOATS, size = VECTORS * V;
    ted_vec query[MAX_HEAD_VECTORS];
#pragma GCC unroll 8
    for (int v = 0; v < VECTORS; v++)
        query[v] = ted_vec_load(q + v * V);
    int j = 0;
    for (; j + 4 <= count; j += 4) {
        const float *key = keys + (size_t)j * size;
        ted_vec sum[4] = {{0}, {0}, {0}, {0}};
#pragma GCC unroll 8
        for (int v = 0; v < VECTORS; v++)
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                sum[r] += query[v] * ted_vec_load(key + r * size + v * V);
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            scores[j + r] = ted_vec_sum(sum[r]) * scale;
    }
    for (; j < count; j++) {
        ted_vec sum = {0};
#pragma GCC unroll 8
        for (int v = 0; v < VECTORS; v++)
            sum += query[v] * ted_vec_load(keys + (size_t)j * size + v * V);
        scores[j] = ted_vec_sum(sum) * scale;
    }
}

/* out = sum_j weights[j] * values[j] for VECTORS * TED_VEC_FLOATS floats,
 * the sum in registers. */
static inline __attribute__((always_inline)) void weighted_sum_in_registers(
    float *out, const float *weights, const float *values, int count, const int VECTORS)
{
    const int V = TED_VEC_FLOATS, size = VECTORS * V;
    ted_vec sum[MAX_HEAD_VECTORS];
#pragma GCC unroll 8
    for (int v = 0; v < VECTORS; v++)
        sum[v] = (ted_vec){0};
    for (int j = 0; j < count; j++) {
        float w = weights[j];
#pragma GCC unroll 8
        for (int v = 0; v < VECTORS; v++)
            sum[v] += w * ted_vec_load(values + (size_t)j * size + v * V);
    }
#pragma GCC unroll 8
    for (int v = 0; v < VECTORS; v++)
        ted_vec_store(out + v * V, sum[v]);
}

/* The number of vectors of a head of `size` floats that the functions
 * above take, or 0. */
static int head_vectors(int size)
{
    int vectors = size / TED_VEC_FLOATS;
    return size % TED_VEC_FLOATS == 0 && vectors <= MAX_HEAD_VECTORS ? vectors : 0;
}

void TED_VARIANT_NAME(ted_scaled_dots)(float *scores, const float *q, const float *keys,
                                       int count, int size, float scale)
{
    switch (head_vectors(size)) {
#define DOTS_CASE(N)                                                                           \
    case N:                                                                                     \
        scaled_dots_in_registers(scores, q, keys, count, scale, N);                             \
        return;
        DOTS_CASE(1) DOTS_CASE(2) DOTS_CASE(3) DOTS_CASE(4)
        DOTS_CASE(5) DOTS_CASE(6) DOTS_CASE(7) DOTS_CASE(8)
#undef DOTS_CASE
    }
    for (int j = 0; j < count; j++)
        scores[j] = ted_dot(q, keys + (size_t)j * size, size) * scale;
}

void TED_VARIANT_NAME(ted_weighted_sum)(float *out, const float *weights, const float *values,
                                        int count, int size)
{
    switch (head_vectors(size)) {
#define SUM_CASE(N)                                                                            \
    case N:                                                                                     \
        weighted_sum_in_registers(out, weights, values, count, N);                              \
        return;
        SUM_CASE(1) SUM_CASE(2) SUM_CASE(3) SUM_CASE(4)
        SUM_CASE(5) SUM_CASE(6) SUM_CASE(7) SUM_CASE(8)
#undef SUM_CASE
    }
    for (int i = 0; i < size; i++)
        out[i] = 0.0f;
    for (int j = 0; j < count; j++)
        ted_axpy(out, weights[j], values + (size_t)j * size, size);
}

/* By vectors, like a scalar scan with '>': NaN is skipped. */
float TED_VARIANT_NAME(ted_max)(const float *x, int n)
{
    ted_vec best = (ted_vec){0} - __builtin_inff();
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS) {
        ted_vec v = ted_vec_load(x + i);
        best = ted_vec_select(v > best, v, best);
    }
    float m = -INFINITY;
    for (int lane = 0; lane < TED_VEC_FLOATS; lane++)
        if (best[lane] > m)
            m = best[lane];
    for (; i < n; i++)
        if (x[i] > m)
            m = x[i];
    return m;
}

/* Greedy decoding scans the whole target vocabulary for every sentence at
 * every step: one pass by vectors, each lane keeping its largest value and
 * the first index that held it (a strict '>', which also skips NaN), then
 * the largest of the lanes, the first index on ties, then the tail. */
int TED_VARIANT_NAME(ted_index_of_max)(const float *x, int n)
{
    ted_vec best = (ted_vec){0} - __builtin_inff();
    ted_ivec best_at = {0}, at;
    for (int lane = 0; lane < TED_VEC_FLOATS; lane++)
        at[lane] = lane;
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS, at += TED_VEC_FLOATS) {
        ted_vec v = ted_vec_load(x + i);
        ted_ivec greater = v > best;
        best = ted_vec_select(greater, v, best);
        best_at = (greater & at) | (~greater & best_at);
    }
    float best_value = -__builtin_inff();
    int best_index = 0;
    for (int lane = 0; lane < TED_VEC_FLOATS; lane++)
        if (best[lane] > best_value ||
            (best[lane] == best_value && best[lane] > -__builtin_inff() &&
             best_at[lane] < best_index)) {
            best_value = best[lane];
            best_index = best_at[lane];
        }
    for (; i < n; i++)
        if (x[i] > best_value) {
            best_value = x[i];
            best_index = i;
        }
    return best_index;
}

/* The softmax over the whole target vocabulary runs at every step of beam
 * search and sampling: exp is vectorized (simd.h). */
double TED_VARIANT_NAME(ted_exp_shifted)(float *x, int n, float shift)
{
    ted_vec sum = {0};
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS) {
        ted_vec e = ted_vec_exp(ted_vec_load(x + i) - shift);
        ted_vec_store(x + i, e);
        sum += e;
    }
    double total = ted_vec_sum(sum);
    for (; i < n; i++) {
        x[i] = expf(x[i] - shift);
        total += x[i];
    }
    return total;
}

double TED_VARIANT_NAME(ted_sum_exp_shifted)(const float *x, int n, float shift)
{
    double sum = 0.0;
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS)
        sum += ted_vec_sum(ted_vec_exp(ted_vec_load(x + i) - shift));
    for (; i < n; i++)
        sum += expf(x[i] - shift);
    return sum;
}

/* The blocks of ted_sum_exp_shifted's row that hold any of the ids, each
 * built whole (-infinity where the row has no value), exp'd and summed
 * as that loop does; the blocks without one add 0 there. */
double TED_VARIANT_NAME(ted_sum_exp_shifted_at)(const float *values, const int *ids,
                                                  int count, int n, float shift)
{
    const int V = TED_VEC_FLOATS, whole = n / V * V;
    double sum = 0.0;
    int j = 0;
    while (j < count && ids[j] < whole) {
        int start = ids[j] / V * V;
        if (ids[j] == start && j + V <= count && ids[j + V - 1] == start + V - 1) {
            sum += ted_vec_sum(ted_vec_exp(ted_vec_load(values + j) - shift));
            j += V;  /* a whole block of the row: its values in a row */
            continue;
        }
        float block[TED_VEC_FLOATS];
        for (int l = 0; l < V; l++)
            block[l] = -__builtin_inff();
        for (; j < count && ids[j] < start + V; j++)
            block[ids[j] - start] = values[j];
        sum += ted_vec_sum(ted_vec_exp(ted_vec_load(block) - shift));
    }
    for (; j < count; j++)
        sum += expf(values[j] - shift);
    return sum;
}

void TED_VARIANT_NAME(ted_scale)(float *x, int n, float factor)
{
    for (int i = 0; i < n; i++)
        x[i] *= factor;
}

/* x * 0 is 0 for a finite x and NaN for NaN or an infinity, and a sum
 * with a NaN in it is NaN: one multiply-add per value, no branch (the
 * logits of every step are checked, (batch, vocab) of them). */
bool TED_VARIANT_NAME(ted_all_finite)(const float *x, size_t n)
{
    ted_vec acc = {0};
    size_t i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS)
        acc += ted_vec_load(x + i) * 0.0f;
    float sum = ted_vec_sum(acc);
    for (; i < n; i++)
        sum += x[i] * 0.0f;
    return sum == 0.0f;
}

/* ---- layer normalization -------------------------------------------------
 * Sums in double over 8 independent partial sums, so the additions overlap
 * instead of waiting on one another; two passes, and the mean subtracted in
 * double: rows with a large mean would otherwise lose their digits to the
 * rounding of the mean. The 8 sums are held in registers of the set's
 * width (AVX-512: one, AVX2: two, SSE: four; wider vectors than the
 * registers would go through memory): every set adds the same numbers in
 * the same order. */
enum {
    DOUBLES = TED_VEC_FLOATS / 2,   /* doubles in a register */
    PARTIALS = 8,
    PARTIAL_VECTORS = PARTIALS / DOUBLES,
};
typedef double ted_dvec __attribute__((vector_size(DOUBLES * sizeof(double))));
typedef float ted_half_vec
    __attribute__((vector_size(DOUBLES * sizeof(float)), aligned(sizeof(float))));

#define AS_DOUBLES(p) __builtin_convertvector(*(const ted_half_vec *)(p), ted_dvec)

/* The sum of the 8 partial sums (x[i] went into sum i % 8), after `tail`
 * (the last n % 8 values). */
static double sum_partials(const ted_dvec partial[PARTIAL_VECTORS], double tail)
{
    for (int v = 0; v < PARTIAL_VECTORS; v++)
        for (int lane = 0; lane < DOUBLES; lane++)
            tail += partial[v][lane];
    return tail;
}

static double row_mean(const float *x, int n)
{
    ted_dvec partial[PARTIAL_VECTORS] = {{0}};
    int i = 0;
    for (; i + PARTIALS <= n; i += PARTIALS)
#pragma GCC unroll 4
        for (int v = 0; v < PARTIAL_VECTORS; v++)
            partial[v] += AS_DOUBLES(x + i + v * DOUBLES);
    double tail = 0.0;
    for (; i < n; i++)
        tail += x[i];
    return sum_partials(partial, tail) / n;
}

static double row_variance(const float *x, int n, double mean)
{
    ted_dvec partial[PARTIAL_VECTORS] = {{0}};
    int i = 0;
    for (; i + PARTIALS <= n; i += PARTIALS)
#pragma GCC unroll 4
        for (int v = 0; v < PARTIAL_VECTORS; v++) {
            ted_dvec centered = AS_DOUBLES(x + i + v * DOUBLES) - mean;
            partial[v] += centered * centered;
        }
    double tail = 0.0;
    for (; i < n; i++)
        tail += (x[i] - mean) * (x[i] - mean);
    return sum_partials(partial, tail) / n;
}

void TED_VARIANT_NAME(ted_normalize_rows)(float *y, const float *x, const float *gamma,
                                          const float *beta, int rows, int n, float eps)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n;
        double mean = row_mean(xr, n);
        double inv_std = 1.0 / sqrt(row_variance(xr, n, mean) + eps);
        int i = 0;
        for (; i + DOUBLES <= n; i += DOUBLES) {
            ted_half_vec normed =
                __builtin_convertvector((AS_DOUBLES(xr + i) - mean) * inv_std, ted_half_vec);
            *(ted_half_vec *)(yr + i) =
                normed * *(const ted_half_vec *)(gamma + i) + *(const ted_half_vec *)(beta + i);
        }
        for (; i < n; i++)
            yr[i] = (float)((xr[i] - mean) * inv_std) * gamma[i] + beta[i];
    }
}
