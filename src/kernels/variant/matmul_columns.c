/* The two kernels of ted_matmul for up to 128 rows of x (src/kernels/
 * matmul.c splits the work and runs OpenBLAS above that), compiled once per
 * instruction set (kernels/variants.h):
 *   - a batch of decoder rows (8 or more): x comes transposed, so that each
 *     k gives one vector over the rows, multiplied by W[n][k] broadcast:
 *     every element of W is read once per chunk of rows and feeds a whole
 *     vector of multiply-adds, with no horizontal sums;
 *   - a few rows (1 to 7, e.g. one sentence): dot products of the rows of x
 *     with 4 rows of W at a time, bound by reading W from memory. */
#include <stddef.h>

#include "kernels/simd.h"
#include "kernels/variants.h"

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

/* Two chunks of rows share every broadcast weight: two multiply-adds per
 * weight loaded instead of one. With 32 vector registers (AVX-512) a pair
 * takes the whole tile of 8 columns (16 accumulators; 20% faster with 32
 * rows); with 16 (AVX2, SSE) the tile in two halves of 4 columns (8
 * accumulators; 1.4-1.6x with 16 rows on AVX2). */
#if defined(__AVX512F__)
enum { PAIR_COLUMNS = 8 };
#else
enum { PAIR_COLUMNS = 4 };
#endif

/* y[c * V + lane][j] = sum_k xt[c][k][lane] * W[j][k] (+ b[j]) for CHUNKS
 * chunks of V rows (the last one `rows` - (CHUNKS - 1) * V rows) and
 * COLUMNS rows of W. `next` (or NULL) is the same columns of the tile of W
 * that comes next: fetching it into cache while this one is computed keeps
 * the kernel from waiting on memory (25% faster with 16 rows). CHUNKS and
 * COLUMNS are constants at each call site, so the accumulators stay in
 * registers. */
static inline __attribute__((always_inline)) void column_tile(
    float *y, int ldy, const float *xt, int rows, const float *W, const float *next,
    const float *b, int K, const int CHUNKS, const int COLUMNS)
{
    const int V = TED_VEC_FLOATS;
    ted_vec acc[2][TILE_COLUMNS] = {{{0}}};
    for (int k = 0; k < K; k++) {
        if (next && (k & 15) == 0)
            for (int j = 0; j < COLUMNS; j++)
                __builtin_prefetch(next + (size_t)j * K + k);
        ted_vec xk[2];
        for (int c = 0; c < CHUNKS; c++)
            xk[c] = ted_vec_load(xt + ((size_t)c * K + k) * V);
#pragma GCC unroll 8
        for (int j = 0; j < COLUMNS; j++) {
            float w = W[(size_t)j * K + k];
            for (int c = 0; c < CHUNKS; c++)
                acc[c][j] += xk[c] * w;
        }
    }
    for (int c = 0; c < CHUNKS; c++)
        for (int j = 0; j < COLUMNS; j++) {
            float bias = b ? b[j] : 0.0f;
            int lanes = rows - c * V < V ? rows - c * V : V;
            for (int lane = 0; lane < lanes; lane++)
                y[(size_t)(c * V + lane) * ldy + j] = acc[c][j][lane] + bias;
        }
}

/* Rows [0, rows) of one tile of columns: pairs of chunks, then a last
 * chunk alone. */
static void column_tiles(float *y, int ldy, const float *xt, int rows, const float *W,
                         const float *next, const float *b, int K)
{
    const int V = TED_VEC_FLOATS;
    int r = 0;
    for (; rows - r > V; r += 2 * V)
        for (int j = 0; j < TILE_COLUMNS; j += PAIR_COLUMNS)
            column_tile(y + (size_t)r * ldy + j, ldy, xt + (size_t)(r / V) * K * V,
                        rows - r < 2 * V ? rows - r : 2 * V, W + (size_t)j * K,
                        r == 0 && next ? next + (size_t)j * K : NULL, b ? b + j : NULL, K, 2,
                        PAIR_COLUMNS);
    for (; r < rows; r += V)
        column_tile(y + (size_t)r * ldy, ldy, xt + (size_t)(r / V) * K * V,
                    rows - r < V ? rows - r : V, W, r == 0 ? next : NULL, b, K, 1,
                    TILE_COLUMNS);
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
        column_tiles(y + n, ldy, xt, by_vector, tile_W, next, b ? b + n : NULL, K);
        if (by_vector < rows)
            kernel_columns(y + (size_t)by_vector * ldy, ldy, x + (size_t)by_vector * K, W, b,
                           rows - by_vector, K, n, n + TILE_COLUMNS);
    }
    for (; n < last; n++)
        single_column(y + n, ldy, x, W + (size_t)n * K, b ? b + n : NULL, rows, K);
}

void TED_VARIANT_NAME(ted_matmul_columns)(float *y, int ldy, const float *x, const float *xt,
                                          const float *W, const float *b, int rows, int K,
                                          int first, int last)
{
    if (xt)
        transposed_columns(y, ldy, x, xt, W, b, rows, K, first, last);
    else
        kernel_columns(y, ldy, x, W, b, rows, K, first, last);
}
