/* The product of a Linear layer whose W was packed into panels at load
 * (kernels.h, ted_pack_panels): panel p holds W's rows 16p .. 16p + 15 as
 * (in_features, 16), so one k gives the 16 weights of 16 output columns in
 * one contiguous run. Compiled once per instruction set.
 *
 * A tile is ROWS rows of x by PANELS panels: for each k it loads the
 * panels' weights as vectors and multiplies them by each row's x[k],
 * broadcast; every load feeds ROWS (or PANELS) multiply-adds. The weights
 * stream in order, panel by panel, and k runs in blocks of the caller's
 * length (src/kernels/matmul.c), each over every tile of rows. */
#include <stdbool.h>
#include <stddef.h>

#include "kernels/simd.h"
#include "kernels/variants.h"

enum {
    PANEL = TED_PANEL_COLUMNS,
    PANEL_VECTORS = PANEL / TED_VEC_FLOATS,
    /* Each panel's weights are fetched into the second-level cache this
     * many k (of 16 floats, 64 bytes) ahead of their use: a tile reads
     * several panels at once, streams the hardware prefetcher of some CPUs
     * follows too late. Past a panel's end it fetches the next one's
     * start, which comes soon. When several tiles of rows share a block,
     * the weights are fetched a block of 128 k ahead instead: the block's
     * first tile finds them in cache, fetched while the later tiles of the
     * block before ran from the first-level cache. A single tile of rows
     * keeps the short distance (measurements: docs/performance.md#prefetch). */
    PREFETCH_AHEAD = 32,
    PREFETCH_AHEAD_SHARED = 128,
};

enum { TILE_ROWS = TED_TILE_ROWS, TILE_PANELS = TED_TILE_PANELS };

/* y[i][0 .. PANELS * 16) (+)= x[i][k0 .. k1) . W's columns, for ROWS rows
 * of x (rows ldx apart) and PANELS panels from `panels` (K * 16 floats
 * apart). `first`: the block that starts the sums (else they go on from
 * y); `bias` (or NULL) is added as the sums end; the weights `ahead` k
 * further on are fetched meanwhile. ROWS and PANELS are
 * constants at each call site, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void tile(float *y, int ldy, const float *x,
                                                       int ldx, const float *panels, int K,
                                                       int k0, int k1, bool first,
                                                       const float *bias, int ahead,
                                                       const int ROWS, const int PANELS)
{
    enum { VECTORS = 3 * PANEL_VECTORS };  /* the largest tile of any set: 8 x 3 */
    const int V = TED_VEC_FLOATS;
    ted_vec acc[8][VECTORS];
    for (int i = 0; i < ROWS; i++)
        for (int v = 0; v < PANELS * PANEL_VECTORS; v++)
            acc[i][v] = first ? (ted_vec){0} : ted_vec_load(y + (size_t)i * ldy + v * V);
    for (int k = k0; k < k1; k++) {
        ted_vec w[VECTORS];
#pragma GCC unroll 4
        for (int p = 0; p < PANELS; p++) {
            for (int v = 0; v < PANEL_VECTORS; v++)
                w[p * PANEL_VECTORS + v] =
                    ted_vec_load(panels + ((size_t)p * K + k) * PANEL + v * V);
            __builtin_prefetch(panels + ((size_t)p * K + k + ahead) * PANEL, 0, 2);
        }
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; i++) {
            float xi = x[(size_t)i * ldx + k];
#pragma GCC unroll 4
            for (int v = 0; v < PANELS * PANEL_VECTORS; v++)
                acc[i][v] += w[v] * xi;
        }
    }
    for (int i = 0; i < ROWS; i++)
        for (int v = 0; v < PANELS * PANEL_VECTORS; v++) {
            ted_vec sum = acc[i][v];
            if (bias)
                sum += ted_vec_load(bias + v * V);
            ted_vec_store(y + (size_t)i * ldy + v * V, sum);
        }
}

/* tile() with ROWS and PANELS as constants: 1 .. TILE_ROWS by
 * 1 .. TILE_PANELS (the cases past them compile to nothing). */
#define TILE_CASE(R, P)                                                                        \
    case (R) * 4 + (P):                                                                         \
        if ((R) <= TILE_ROWS && (P) <= TILE_PANELS)                                             \
            tile(y, ldy, x, ldx, panels, K, k0, k1, first, bias, ahead, R, P);                  \
        break;

static void any_tile(float *y, int ldy, const float *x, int ldx, const float *panels, int K,
                     int k0, int k1, bool first, const float *bias, int ahead, int rows,
                     int count)
{
    switch (rows * 4 + count) {
        TILE_CASE(1, 1) TILE_CASE(2, 1) TILE_CASE(3, 1) TILE_CASE(4, 1)
        TILE_CASE(5, 1) TILE_CASE(6, 1) TILE_CASE(7, 1) TILE_CASE(8, 1)
        TILE_CASE(1, 2) TILE_CASE(2, 2) TILE_CASE(3, 2) TILE_CASE(4, 2)
        TILE_CASE(5, 2) TILE_CASE(6, 2) TILE_CASE(7, 2) TILE_CASE(8, 2)
        TILE_CASE(1, 3) TILE_CASE(2, 3) TILE_CASE(3, 3) TILE_CASE(4, 3)
        TILE_CASE(5, 3) TILE_CASE(6, 3) TILE_CASE(7, 3) TILE_CASE(8, 3)
    }
}

/* All rows of x by `count` whole panels: k in blocks, each block over every
 * tile of rows while its weights are in cache. */
static void whole_panels(float *y, int ldy, const float *x, const float *panels,
                         const float *bias, int rows, int K, int count, int k_block)
{
    int ahead = rows > TILE_ROWS ? PREFETCH_AHEAD_SHARED : PREFETCH_AHEAD;
    for (int k0 = 0; k0 < K; k0 += k_block) {
        int k1 = K - k0 > k_block ? k0 + k_block : K;
        for (int i = 0; i < rows; i += TILE_ROWS)
            any_tile(y + (size_t)i * ldy, ldy, x + (size_t)i * K, K, panels, K, k0, k1,
                     k0 == 0, k1 == K ? bias : NULL, ahead,
                     rows - i < TILE_ROWS ? rows - i : TILE_ROWS, count);
    }
}

/* The last panels, whose columns run past `columns` (W's rows, zero in the
 * panels): each tile into a buffer, whose first columns are copied. */
static void last_panels(float *y, int ldy, const float *x, const float *panels,
                        const float *bias, int rows, int K, int count, int columns)
{
    float buffer[TILE_ROWS * TILE_PANELS * PANEL];
    const int width = TILE_PANELS * PANEL;
    for (int i = 0; i < rows; i += TILE_ROWS) {
        int tile_rows = rows - i < TILE_ROWS ? rows - i : TILE_ROWS;
        any_tile(buffer, width, x + (size_t)i * K, K, panels, K, 0, K, true, NULL, PREFETCH_AHEAD,
                 tile_rows, count);
        for (int r = 0; r < tile_rows; r++)
            for (int j = 0; j < columns; j++)
                y[(size_t)(i + r) * ldy + j] = buffer[r * width + j] + (bias ? bias[j] : 0.0f);
    }
}

void TED_VARIANT_NAME(ted_matmul_panels)(float *y, int ldy, const float *x,
                                         const float *panels, const float *b, int rows, int K,
                                         int out, int first, int last, int k_block)
{
    for (int p = first; p < last; p += TILE_PANELS) {
        int count = last - p < TILE_PANELS ? last - p : TILE_PANELS;
        int column = p * PANEL, columns = out - column;
        const float *W = panels + (size_t)p * K * PANEL;
        const float *bias = b ? b + column : NULL;
        if (columns >= count * PANEL)
            whole_panels(y + column, ldy, x, W, bias, rows, K, count, k_block);
        else
            last_panels(y + column, ldy, x, W, bias, rows, K, count, columns);
    }
}
