/* The Linear layer, y = x W^T + b, with W as PyTorch stores it: (out, in),
 * row-major, used straight from the mapped weights file.
 *
 * Two paths. Many rows (the encoder: batch * source length) go to OpenBLAS
 * sgemm. Few rows (a decoder step: one row per sentence) go to the kernel
 * below: sgemm re-packs W on every call, which costs more than the product
 * itself when x has a handful of rows, while the kernel reads each row of W
 * once and applies it to every row of x while it is in cache.
 * Either way the output columns are split over the thread pool. */
#include "layers/linear.h"

#include <cblas.h>
#include <string.h>

#include "core/parallel.h"
#include "layers/simd.h"

/* Below this many rows the kernel beats sgemm (measured with make bench). */
enum { KERNEL_MAX_ROWS = 24 };

/* y[i][j] = x[i] . W[j] (+ b[j]) for ROWS rows of x and 4 rows of W: the
 * 4 * ROWS dot products share every load. ROWS is a constant at each call
 * site, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void tile(float *y, int ldy, const float *x,
                                                       const float *W, const float *b, int K,
                                                       const int ROWS)
{
    ted_vec acc[4][4] = {{{0}}};
    int k = 0;
    for (; k + TED_VEC_FLOATS <= K; k += TED_VEC_FLOATS) {
        ted_vec w[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            w[j] = ted_vec_load(W + (size_t)j * K + k);
#pragma GCC unroll 4
        for (int i = 0; i < ROWS; i++) {
            ted_vec xi = ted_vec_load(x + (size_t)i * K + k);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                acc[i][j] += xi * w[j];
        }
    }
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < 4; j++) {
            float s = ted_vec_sum(acc[i][j]);
            for (int t = k; t < K; t++)
                s += x[(size_t)i * K + t] * W[(size_t)j * K + t];
            y[(size_t)i * ldy + j] = b ? s + b[j] : s;
        }
}

/* One output column at a time, for the last out % 4 columns. */
static void single_column(float *y, int ldy, const float *x, const float *w, const float *b,
                          int rows, int K)
{
    for (int i = 0; i < rows; i++) {
        float s = ted_dot(x + (size_t)i * K, w, K);
        y[(size_t)i * ldy] = b ? s + *b : s;
    }
}

/* Output columns [first, last) of y (rows, ldy) = x (rows, K) W^T + b. */
static void kernel_columns(float *y, int ldy, const float *x, const float *W, const float *b,
                           int rows, int K, int first, int last)
{
    int n = first;
    for (; n + 4 <= last; n += 4) {
        const float *Wn = W + (size_t)n * K;
        const float *bn = b ? b + n : NULL;
        int i = 0;
        for (; i + 4 <= rows; i += 4)
            tile(y + (size_t)i * ldy + n, ldy, x + (size_t)i * K, Wn, bn, K, 4);
        float *yi = y + (size_t)i * ldy + n;
        const float *xi = x + (size_t)i * K;
        switch (rows - i) {
        case 3: tile(yi, ldy, xi, Wn, bn, K, 3); break;
        case 2: tile(yi, ldy, xi, Wn, bn, K, 2); break;
        case 1: tile(yi, ldy, xi, Wn, bn, K, 1); break;
        }
    }
    for (; n < last; n++)
        single_column(y + n, ldy, x, W + (size_t)n * K, b ? b + n : NULL, rows, K);
}

static void sgemm_columns(float *y, int ldy, const float *x, const float *W, const float *b,
                          int rows, int K, int first, int last)
{
    int n = last - first;
    float beta = 0.0f;
    if (b) {
        for (int r = 0; r < rows; r++)
            memcpy(y + (size_t)r * ldy + first, b + first, sizeof(float) * n);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, K, 1.0f, x, K,
                W + (size_t)first * K, K, beta, y + first, ldy);
}

typedef struct linear_job {
    float *y;
    const float *x, *W, *b;
    int rows, in_features, out_features;
    int columns_per_task;  /* a multiple of 4 */
} linear_job;

static void linear_task(void *context, int index)
{
    const linear_job *j = context;
    int first = index * j->columns_per_task;
    int last = first + j->columns_per_task;
    if (last > j->out_features)
        last = j->out_features;
    if (j->rows <= KERNEL_MAX_ROWS)
        kernel_columns(j->y, j->out_features, j->x, j->W, j->b, j->rows, j->in_features, first,
                       last);
    else
        sgemm_columns(j->y, j->out_features, j->x, j->W, j->b, j->rows, j->in_features, first,
                      last);
}

void ted_linear(float *y, const float *x, const float *W, const float *b, int rows,
                int in_features, int out_features)
{
    /* A few tasks per thread, so a thread that falls behind is helped. */
    int tasks = ted_parallel_threads() * 4;
    int per_task = (out_features + tasks - 1) / tasks;
    per_task = (per_task + 15) / 16 * 16;
    if (per_task < 64)
        per_task = 64;
    linear_job job = {y, x, W, b, rows, in_features, out_features, per_task};
    ted_parallel_for((out_features + per_task - 1) / per_task, linear_task, &job);
}
