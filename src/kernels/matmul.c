/* The matrix product of every Linear layer, y = x W^T + b, with W as
 * PyTorch stores it: (out, in), row-major, used straight from the mapped
 * weights file.
 *
 * Three paths, by the number of rows of x:
 *   - many (the encoder: batch * source length): OpenBLAS sgemm;
 *   - a batch of decoder rows (8 or more): x is transposed once, so that
 *     each k gives one vector over the rows, multiplied by W[n][k]
 *     broadcast: every element of W is read once and feeds a whole vector
 *     of multiply-adds, with no horizontal sums;
 *   - a few rows (1 to 7, e.g. one sentence): dot products of the rows of x
 *     with 4 rows of W at a time, bound by reading W from memory.
 * sgemm re-packs W on every call, which costs more than the product itself
 * when x has a handful of rows: hence the two kernels. Each path splits the
 * output columns over the thread pool. */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/simd.h"

/* Where each path wins, measured on make bench's shapes. */
enum { TRANSPOSED_MIN_ROWS = 8, KERNEL_MAX_ROWS = 128 };

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

/* ---- a batch of rows: x transposed ------------------------------------- */

enum { TILE_COLUMNS = 8 };

/* The rows of x in chunks of one vector: xt[(c * K + k) * V + lane] =
 * x[c * V + lane][k], zero past the last row. */
static void transpose_rows(float *xt, const float *x, int rows, int K)
{
    const int V = TED_VEC_FLOATS;
    int padded = (rows + V - 1) / V * V;
    for (int r = 0; r < padded; r++) {
        float *column = xt + (size_t)(r / V) * K * V + r % V;
        for (int k = 0; k < K; k++)
            column[(size_t)k * V] = r < rows ? x[(size_t)r * K + k] : 0.0f;
    }
}

/* y[lane][j] = sum_k xt[k][lane] * W[j][k] (+ b[j]) for one chunk of rows
 * and TILE_COLUMNS rows of W. `next` (or NULL) is the tile of W that comes
 * next: fetching it into cache while this one is computed keeps the kernel
 * from waiting on memory (25% faster with 16 rows). */
static void column_tile(float *y, int ldy, const float *xt, int rows, const float *W,
                        const float *next, const float *b, int K)
{
    ted_vec acc[TILE_COLUMNS] = {{0}};
    for (int k = 0; k < K; k++) {
        if (next && (k & 15) == 0)
            for (int j = 0; j < TILE_COLUMNS; j++)
                __builtin_prefetch(next + (size_t)j * K + k);
        ted_vec xk = ted_vec_load(xt + (size_t)k * TED_VEC_FLOATS);
#pragma GCC unroll 8
        for (int j = 0; j < TILE_COLUMNS; j++)
            acc[j] += xk * W[(size_t)j * K + k];
    }
    for (int j = 0; j < TILE_COLUMNS; j++) {
        float bias = b ? b[j] : 0.0f;
        for (int lane = 0; lane < rows; lane++)
            y[(size_t)lane * ldy + j] = acc[j][lane] + bias;
    }
}

/* A last chunk of a few rows would fill a few lanes of each vector: those
 * rows take the dot-product kernel instead, on the W tile still in cache. */
enum { TAIL_BY_DOT_MAX = 4 };

static void transposed_columns(float *y, int ldy, const float *x, const float *xt,
                               const float *W, const float *b, int rows, int K, int first,
                               int last)
{
    const int V = TED_VEC_FLOATS;
    int tail = rows % V;
    int by_vector = rows > V && tail <= TAIL_BY_DOT_MAX ? rows - tail : rows;
    int n = first;
    for (; n + TILE_COLUMNS <= last; n += TILE_COLUMNS) {
        const float *tile_W = W + (size_t)n * K;
        const float *next = n + 2 * TILE_COLUMNS <= last ? tile_W + TILE_COLUMNS * K : NULL;
        for (int r = 0; r < by_vector; r += V)
            column_tile(y + (size_t)r * ldy + n, ldy, xt + (size_t)(r / V) * K * V,
                        by_vector - r < V ? by_vector - r : V, tile_W, r == 0 ? next : NULL,
                        b ? b + n : NULL, K);
        if (by_vector < rows)
            kernel_columns(y + (size_t)by_vector * ldy, ldy, x + (size_t)by_vector * K, W, b,
                           rows - by_vector, K, n, n + TILE_COLUMNS);
    }
    for (; n < last; n++)
        single_column(y + n, ldy, x, W + (size_t)n * K, b ? b + n : NULL, rows, K);
}

/* The transposed x of the calling thread, reused across calls and freed
 * when the thread ends. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

typedef struct scratch {
    float *data;
    size_t size;
} scratch;

static void free_scratch(void *p)
{
    scratch *s = p;
    free(s->data);
    free(s);
}

static void create_scratch_key(void)
{
    pthread_key_create(&scratch_key, free_scratch);
}

static float *thread_scratch(size_t floats)
{
    pthread_once(&scratch_once, create_scratch_key);
    scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        if (!(s = calloc(1, sizeof *s)))
            return NULL;
        pthread_setspecific(scratch_key, s);
    }
    if (s->size < floats) {
        float *grown = realloc(s->data, floats * sizeof(float));
        if (!grown)
            return NULL;
        s->data = grown;
        s->size = floats;
    }
    return s->data;
}

/* ---- many rows: OpenBLAS ------------------------------------------------- */

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

/* ---- splitting the columns over the pool -------------------------------- */

typedef struct linear_job {
    float *y;
    const float *x, *xt, *W, *b;  /* xt: NULL unless the transposed path runs */
    int rows, in_features, out_features;
    int columns_per_task;  /* a multiple of the tiles' widths */
} linear_job;

static void linear_task(void *context, int index)
{
    const linear_job *j = context;
    int first = index * j->columns_per_task;
    int last = first + j->columns_per_task;
    if (last > j->out_features)
        last = j->out_features;
    if (j->rows > KERNEL_MAX_ROWS)
        sgemm_columns(j->y, j->out_features, j->x, j->W, j->b, j->rows, j->in_features, first,
                      last);
    else if (j->xt)
        transposed_columns(j->y, j->out_features, j->x, j->xt, j->W, j->b, j->rows,
                           j->in_features, first, last);
    else
        kernel_columns(j->y, j->out_features, j->x, j->W, j->b, j->rows, j->in_features, first,
                       last);
}

void ted_matmul(float *y, const float *x, const float *W, const float *b, int rows,
                int in_features, int out_features)
{
    linear_job job = {y, x, NULL, W, b, rows, in_features, out_features, 0};
    if (rows >= TRANSPOSED_MIN_ROWS && rows <= KERNEL_MAX_ROWS) {
        size_t padded = (size_t)(rows + TED_VEC_FLOATS - 1) / TED_VEC_FLOATS * TED_VEC_FLOATS;
        float *xt = thread_scratch(padded * in_features);
        if (xt) {  /* without memory for it, the dot-product kernel still works */
            transpose_rows(xt, x, rows, in_features);
            job.xt = xt;
        }
    }
    /* A few tasks per thread, so a thread that falls behind is helped. */
    int tasks = ted_parallel_threads() * 4;
    int per_task = (out_features + tasks - 1) / tasks;
    per_task = (per_task + 15) / 16 * 16;
    if (per_task < 64)
        per_task = 64;
    job.columns_per_task = per_task;
    ted_parallel_for((out_features + per_task - 1) / per_task, linear_task, &job);
}
