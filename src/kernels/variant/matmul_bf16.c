/* The kernels of the bfloat16 products (src/kernels/matmul.c): y = x W^T
 * + b with a bfloat16 W (out, K) and a float x; float sums. Compiled once
 * per instruction set (kernels/variants.h).
 *
 * A model's W is in bf16 panels, packed at load (kernels.h), in every set:
 *   a lone row, avx512 with AVX512_BF16 (checked with the CPU's
 *             features): vdpbf16ps, 32 bf16 products summed pairwise into
 *             16 float lanes; both operands are bf16, so x comes split
 *             into TED_BF16_PARTS bf16 rows whose sum is x
 *             (ted_split_bf16_rows below): three parts keep 24 significant
 *             bits, all of a float's, and the products of two bf16 are
 *             exact in float;
 *   several rows, and every other set: each panel vector widened into
 *             floats (a 16-bit shift: bf16 is the top half of a float),
 *             float multiply-adds as the float panels' (matmul_panels.c);
 *             with many rows on AVX2, each block of a panel widened once
 *             for all rows.
 * A W as stored (weights built by hand): the row-major vdpbf16ps tiles
 * with AVX512_BF16; elsewhere each weight widened and multiplied a vector
 * at a time, tiles of rows x 4 columns, each output one dot product whose
 * lanes are summed at the end.
 *
 * measurements: docs/performance.md#bf16-kernels */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/simd.h"
#include "kernels/variants.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

/* How far ahead of the tile being computed W is fetched, in bytes, into
 * the second-level cache: a tile reads 4 rows of W at once, 4 short
 * streams that the hardware prefetcher does not follow as it follows the
 * one stream of float panels (as in matmul_i8.c; measurements:
 * docs/performance.md#bf16-weights). */
enum { PREFETCH_BYTES = 8192, PREFETCH_LOCALITY = 2 };

/* In bf16 panels, one stream a panel: fetched 32 pairs of k (2 KiB) ahead,
 * as the float panels are (matmul_panels.c). */
enum { PANEL_PREFETCH_HALVES = 32 * 32 };

/* ---- the conversion: every set ------------------------------------------- */

typedef uint16_t ted_hvec __attribute__((vector_size(TED_VEC_FLOATS * sizeof(uint16_t)),
                                         aligned(sizeof(uint16_t))));
typedef unsigned ted_uvec __attribute__((vector_size(TED_VEC_FLOATS * sizeof(unsigned))));

/* TED_VEC_FLOATS bf16 values at p, as floats. */
static inline ted_vec widen_vec(const uint16_t *p)
{
    ted_uvec wide = __builtin_convertvector(*(const ted_hvec *)p, ted_uvec);
    return (ted_vec)(wide << 16);
}

/* Rows of x a tile of 4 columns takes: 4 with vdpbf16ps (16 sums of the
 * 32 registers, 48 for a lone row); the widening kernel 4 with AVX-512, 2
 * elsewhere (8 sums of 16 registers, beside 4 widened weights and x). */
enum { TILE_ROWS = 4 };
#if defined(__AVX512F__)
enum { WIDE_ROWS = 4 };
#else
enum { WIDE_ROWS = 2 };
#endif

/* y[i][j] for ROWS rows of x (rows ldx floats apart) and 4 rows of W;
 * `next` (or NULL): 4 rows of W further on, fetched meanwhile. */
static inline __attribute__((always_inline)) void tile_widened(
    float *y, int ldy, const float *x, int ldx, const uint16_t *W, const uint16_t *next,
    const float *b, int K, const int ROWS)
{
    ted_vec acc[WIDE_ROWS][4];
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[i][j] = (ted_vec){0};
    int k = 0;
    for (; k + TED_VEC_FLOATS <= K; k += TED_VEC_FLOATS) {
        ted_vec w[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            w[j] = widen_vec(W + (size_t)j * K + k);
            if (next && k % 32 == 0)
                __builtin_prefetch(next + (size_t)j * K + k, 0, PREFETCH_LOCALITY);
        }
#pragma GCC unroll 4
        for (int i = 0; i < ROWS; i++) {
            ted_vec xi = ted_vec_load(x + (size_t)i * ldx + k);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                acc[i][j] += xi * w[j];
        }
    }
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < 4; j++) {
            float s = ted_vec_sum(acc[i][j]);
            for (int t = k; t < K; t++)
                s += x[(size_t)i * ldx + t] * ted_bf16_to_float(W[(size_t)j * K + t]);
            y[(size_t)i * ldy + j] = b ? s + b[j] : s;
        }
}

/* The first tile of rows fetches W ahead (`next`, or NULL). */
static void four_columns_widened(float *y, int ldy, const float *x, int ldx, const uint16_t *W,
                                 const uint16_t *next, const float *b, int rows, int K)
{
    int i = 0;
    for (; i + WIDE_ROWS <= rows; i += WIDE_ROWS)
        tile_widened(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, ldx, W,
                     i == 0 ? next : NULL, b, K, WIDE_ROWS);
    for (; i < rows; i++)
        tile_widened(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, ldx, W,
                     i == 0 ? next : NULL, b, K, 1);
}

/* One column n of y: plain dot products. */
static void one_column(float *y, int ldy, const float *x, int ldx, const uint16_t *w,
                       const float *b, int rows, int K)
{
    for (int i = 0; i < rows; i++) {
        float s = 0.0f;
        for (int k = 0; k < K; k++)
            s += x[(size_t)i * ldx + k] * ted_bf16_to_float(w[k]);
        y[(size_t)i * ldy] = b ? s + *b : s;
    }
}

/* ---- W in bf16 panels, widened: every set ------------------------------------
 * Each 32-bit lane of a bf16 panel vector holds one column's pair (k,
 * k + 1), k's weight in the low half: a shift left by 16 gives k's weights
 * as floats, a mask of the high half k + 1's. Both multiply the row's x[k]
 * and x[k + 1], broadcast, in float multiply-adds: the float panels' work
 * (matmul_panels.c) at half their bytes, the widening (two operations per
 * pair of k and vector of columns) shared by the rows of a tile. */

typedef uint32_t ted_pairs __attribute__((vector_size(TED_VEC_FLOATS * sizeof(uint32_t)),
                                          aligned(sizeof(uint32_t))));

/* The tiles, chosen by measurement (docs/performance.md#bf16-kernels):
 * rows x panels of a widened tile, within each set's registers beside the
 * widened weights (AVX-512 6 x 2: 12 accumulators of 32 registers; AVX2
 * 3 x 2: 12 of 16; SSE 3 x 1: 12 of 16); from how many rows a product
 * widens each block of a panel once for all rows instead (AVX2 only: the
 * widening in the tile takes a quarter of its work there), and that
 * kernel's rows. */
#if defined(__AVX512F__)
enum { WIDE_TILE_ROWS = 6, WIDE_TILE_PANELS = 2, BLOCKED_FROM = INT_MAX, BLOCK_ROWS = 6 };
#elif defined(__AVX__)
enum { WIDE_TILE_ROWS = 3, WIDE_TILE_PANELS = 2, BLOCKED_FROM = 4, BLOCK_ROWS = 6 };
#else
enum { WIDE_TILE_ROWS = 3, WIDE_TILE_PANELS = 1, BLOCKED_FROM = INT_MAX, BLOCK_ROWS = 3 };
#endif
enum { PANEL_VECS = TED_PANEL_COLUMNS / TED_VEC_FLOATS };

/* acc[i][v] += row i's x[k] times the widened weights of pair vector v,
 * and odd[i][v] += x[k + 1] times the others when `both` (odd may be
 * acc). */
static inline __attribute__((always_inline)) void widened_step(
    ted_vec acc[WIDE_TILE_ROWS][WIDE_TILE_PANELS * PANEL_VECS],
    ted_vec odd[WIDE_TILE_ROWS][WIDE_TILE_PANELS * PANEL_VECS], const float *x, int K, int k,
    const uint16_t *panels, size_t panel_halves, bool both, const int ROWS, const int PANELS)
{
    const ted_pairs high = (ted_pairs){0} + 0xffff0000u;
#pragma GCC unroll 4
    for (int p = 0; p < PANELS; p++)
#pragma GCC unroll 4
        for (int v = 0; v < PANEL_VECS; v++) {
            ted_pairs pair = *(const ted_pairs *)(panels + p * panel_halves + (size_t)k * 16 +
                                                  2 * v * TED_VEC_FLOATS);
            ted_vec w0 = (ted_vec)(pair << 16), w1 = (ted_vec)(pair & high);
#pragma GCC unroll 8
            for (int i = 0; i < ROWS; i++) {
                acc[i][p * PANEL_VECS + v] += w0 * x[(size_t)i * K + k];
                if (both)
                    odd[i][p * PANEL_VECS + v] += w1 * x[(size_t)i * K + k + 1];
            }
        }
}

/* y[i][0 .. cols) = x[i] . W's columns + bias for ROWS rows of x (rows K
 * apart) and PANELS panels (K2 * 16 halves apart), cols <= PANELS * 16;
 * a tile whose columns run past cols goes through a buffer. */
static inline __attribute__((always_inline)) void widened_tile(
    float *y, int ldy, const float *x, int K, const uint16_t *panels, int K2,
    const float *bias, int cols, const int ROWS, const int PANELS)
{
    /* A small tile sums k and k + 1 apart: one chain of multiply-adds per
     * accumulator and pair of k, not two, which latency would bound. */
    const bool SPLIT = ROWS * PANELS * PANEL_VECS <= 8;
    ted_vec acc[WIDE_TILE_ROWS][WIDE_TILE_PANELS * PANEL_VECS];
    ted_vec acc_odd[WIDE_TILE_ROWS][WIDE_TILE_PANELS * PANEL_VECS];
    for (int i = 0; i < ROWS; i++)
        for (int v = 0; v < PANELS * PANEL_VECS; v++)
            acc[i][v] = acc_odd[i][v] = (ted_vec){0};
    const size_t panel_halves = (size_t)K2 * 16;
    int k = 0;
    for (; k + 2 <= K; k += 2) {
        for (int p = 0; p < PANELS; p++)
            __builtin_prefetch(panels + p * panel_halves + (size_t)k * 16 + PANEL_PREFETCH_HALVES,
                               0, PREFETCH_LOCALITY);
        widened_step(acc, SPLIT ? acc_odd : acc, x, K, k, panels, panel_halves, true, ROWS,
                     PANELS);
    }
    if (k < K)
        widened_step(acc, acc, x, K, k, panels, panel_halves, false, ROWS, PANELS);
    float buffer[WIDE_TILE_ROWS * WIDE_TILE_PANELS * TED_PANEL_COLUMNS];
    bool whole = cols >= PANELS * TED_PANEL_COLUMNS;
    int ld = whole ? ldy : WIDE_TILE_PANELS * TED_PANEL_COLUMNS;
    float *out = whole ? y : buffer;
    for (int i = 0; i < ROWS; i++)
        for (int v = 0; v < PANELS * PANEL_VECS; v++)
            ted_vec_store(out + (size_t)i * ld + v * TED_VEC_FLOATS,
                          SPLIT ? acc[i][v] + acc_odd[i][v] : acc[i][v]);
    int n = whole ? PANELS * TED_PANEL_COLUMNS : cols;
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < n; j++) {
            float sum = out[(size_t)i * ld + j] + (bias ? bias[j] : 0.0f);
            y[(size_t)i * ldy + j] = sum;
        }
}

/* widened_tile() with ROWS and PANELS as constants. */
#define WIDE_CASE(R, P)                                                                        \
    case (R) * 4 + (P):                                                                         \
        if ((R) <= WIDE_TILE_ROWS && (P) <= WIDE_TILE_PANELS)                                   \
            widened_tile(y, ldy, x, K, panels, K2, bias, cols, R, P);                           \
        break;

static void any_widened_tile(float *y, int ldy, const float *x, int K, const uint16_t *panels,
                             int K2, const float *bias, int cols, int rows, int count)
{
    switch (rows * 4 + count) {
        WIDE_CASE(1, 1) WIDE_CASE(2, 1) WIDE_CASE(3, 1) WIDE_CASE(4, 1)
        WIDE_CASE(5, 1) WIDE_CASE(6, 1) WIDE_CASE(7, 1) WIDE_CASE(8, 1)
        WIDE_CASE(1, 2) WIDE_CASE(2, 2) WIDE_CASE(3, 2) WIDE_CASE(4, 2)
        WIDE_CASE(5, 2) WIDE_CASE(6, 2) WIDE_CASE(7, 2) WIDE_CASE(8, 2)
    }
}

/* ---- many rows: a block of a panel widened once for all rows ---------------
 * Widening in the tile costs two operations per vector of weights for each
 * tile of rows; with 16 registers (AVX2, SSE) the tiles are small and the
 * widening takes a fifth to a quarter of the work. There, with many rows,
 * each block of K_BLOCK k of a panel is widened once, onto the stack (8
 * KiB, in the first-level cache), and every tile of rows multiplies it in
 * float as the float panels are multiplied (matmul_panels.c), its sums
 * going on in y from block to block. */
enum { K_BLOCK = 128 };

/* block (n, 16) floats = k0 .. k0 + n of a bf16 panel, k0 even. */
static void widen_block(float *block, const uint16_t *panel, int k0, int n)
{
    const ted_pairs high = (ted_pairs){0} + 0xffff0000u;
    for (int k = 0; k < n; k += 2) {
        for (int v = 0; v < PANEL_VECS; v++) {
            ted_pairs pair = *(const ted_pairs *)(panel + (size_t)(k0 + k) * 16 +
                                                  2 * v * TED_VEC_FLOATS);
            ted_vec_store(block + (size_t)k * 16 + v * TED_VEC_FLOATS, (ted_vec)(pair << 16));
            if (k + 1 < n)
                ted_vec_store(block + (size_t)(k + 1) * 16 + v * TED_VEC_FLOATS,
                              (ted_vec)(pair & high));
        }
    }
}

/* y[i][0 .. 16) (+)= x[i][k0 .. k0 + n) . block for ROWS rows: from zero
 * when `first`, + bias when `bias`; `next` (or NULL): the bf16 block to
 * come, fetched meanwhile a line per pair of k (spread over the work, not
 * a burst that fills the fetch queue). */
static inline __attribute__((always_inline)) void block_tile(
    float *y, int ldy, const float *x, int K, const float *block, const uint16_t *next, int k0,
    int n, bool first, const float *bias, const int ROWS)
{
    ted_vec acc[BLOCK_ROWS][PANEL_VECS];
    for (int i = 0; i < ROWS; i++)
        for (int v = 0; v < PANEL_VECS; v++)
            acc[i][v] = first ? (ted_vec){0} : ted_vec_load(y + (size_t)i * ldy + v * TED_VEC_FLOATS);
    for (int k = 0; k < n; k++) {
        if (next && k % 2 == 0)
            __builtin_prefetch(next + (size_t)k * 16, 0, PREFETCH_LOCALITY);
        ted_vec w[PANEL_VECS];
        for (int v = 0; v < PANEL_VECS; v++)
            w[v] = ted_vec_load(block + (size_t)k * 16 + v * TED_VEC_FLOATS);
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
            for (int v = 0; v < PANEL_VECS; v++)
                acc[i][v] += w[v] * x[(size_t)i * K + k0 + k];
    }
    for (int i = 0; i < ROWS; i++)
        for (int v = 0; v < PANEL_VECS; v++)
            ted_vec_store(y + (size_t)i * ldy + v * TED_VEC_FLOATS,
                          bias ? acc[i][v] + ted_vec_load(bias + v * TED_VEC_FLOATS) : acc[i][v]);
}

#define BLOCK_CASE(R)                                                                          \
    case R:                                                                                     \
        if ((R) <= BLOCK_ROWS)                                                                  \
            block_tile(y, ldy, x, K, block, next, k0, n, first, bias, R);                      \
        break;

static void any_block_tile(float *y, int ldy, const float *x, int K, const float *block,
                           const uint16_t *next, int k0, int n, bool first, const float *bias,
                           int rows)
{
    switch (rows) {
        BLOCK_CASE(1) BLOCK_CASE(2) BLOCK_CASE(3) BLOCK_CASE(4)
        BLOCK_CASE(5) BLOCK_CASE(6) BLOCK_CASE(7) BLOCK_CASE(8)
    }
}

/* One whole panel (16 columns of y) for every row, block by block. */
static void blocked_panel(float *y, int ldy, const float *x, int K, const uint16_t *panel,
                          const float *bias, int rows)
{
    _Alignas(64) float block[K_BLOCK * TED_PANEL_COLUMNS];
    int tiles = (rows + BLOCK_ROWS - 1) / BLOCK_ROWS;
    for (int k0 = 0; k0 < K; k0 += K_BLOCK) {
        int n = K - k0 < K_BLOCK ? K - k0 : K_BLOCK;
        widen_block(block, panel, k0, n);
        for (int t = 0, i = 0; t < tiles; t++) {
            int end = (int)((long long)rows * (t + 1) / tiles);
            any_block_tile(y + (size_t)i * ldy, ldy, x + (size_t)i * K, K, block,
                           t == 0 ? panel + (size_t)(k0 + K_BLOCK) * 16 : NULL, k0, n, k0 == 0,
                           k0 + n == K ? bias : NULL, end - i);
            i = end;
        }
    }
}

/* Panels [first, last) for every row, widened: over each group of panels,
 * the rows in as few tiles as the tile's rows allow, as even as they can be
 * (16 rows in tiles of 6: 5, 5 and 6, not 6, 6 and 4). */
static void widened_panels(float *y, int ldy, const float *x, const uint16_t *panels,
                           const float *b, int rows, int K, int out, int first, int last)
{
    int K2 = (K + 1) / 2 * 2, tiles = (rows + WIDE_TILE_ROWS - 1) / WIDE_TILE_ROWS;
    int p = first;
    for (; rows >= BLOCKED_FROM && p < last && out - p * TED_PANEL_COLUMNS >= TED_PANEL_COLUMNS;
         p++)
        blocked_panel(y + p * TED_PANEL_COLUMNS, ldy, x, K,
                      panels + (size_t)p * K2 * TED_PANEL_COLUMNS,
                      b ? b + p * TED_PANEL_COLUMNS : NULL, rows);
    for (; p < last; p += WIDE_TILE_PANELS) {
        int count = last - p < WIDE_TILE_PANELS ? last - p : WIDE_TILE_PANELS;
        const uint16_t *group = panels + (size_t)p * K2 * TED_PANEL_COLUMNS;
        for (int t = 0, i = 0; t < tiles; t++) {
            int next = (int)((long long)rows * (t + 1) / tiles);
            any_widened_tile(y + (size_t)i * ldy + p * TED_PANEL_COLUMNS, ldy,
                             x + (size_t)i * K, K, group, K2,
                             b ? b + p * TED_PANEL_COLUMNS : NULL, out - p * TED_PANEL_COLUMNS,
                             next - i, count);
            i = next;
        }
    }
}

/* ---- avx512 with AVX512_BF16 ----------------------------------------------- */
#if defined(__AVX512F__)
#define TED_BF16 __attribute__((target("avx512bf16,avx512bw,avx512f")))

/* libgcc's CPU model, filled before main (see dispatch.c). */
static bool cpu_has_bf16(void)
{
    return __builtin_cpu_supports("avx512bf16");
}

/* The lanes of v summed. */
static inline float sum_lanes(__m512 v)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

/* y[i][j] for ROWS rows of x (each TED_BF16_PARTS bf16 rows ldp apart,
 * zero from K to ldp) and 4 rows of W; the last vector of a row is a
 * masked load, which reads nothing past the row. */
TED_BF16 static inline __attribute__((always_inline)) void tile_dpbf16(
    float *y, int ldy, const uint16_t *parts, int ldp, const uint16_t *W, const uint16_t *next,
    const float *b, int K, const int ROWS)
{
    /* One row alone sums each part into its own accumulators: three
     * independent chains of vdpbf16ps instead of one three times as long
     * (latency, not throughput, bounds a lone row). */
    const int SUMS = ROWS == 1 ? TED_BF16_PARTS : 1;
    __m512 acc[TILE_ROWS][TED_BF16_PARTS][4];
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 3
        for (int s = 0; s < SUMS; s++)
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                acc[i][s][j] = _mm512_setzero_ps();
    for (int k = 0; k < K; k += 32) {
        __mmask32 m = K - k >= 32 ? ~(__mmask32)0 : ((__mmask32)1 << (K - k)) - 1;
        __m512bh w[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            w[j] = (__m512bh)_mm512_maskz_loadu_epi16(m, W + (size_t)j * K + k);
            if (next)
                __builtin_prefetch(next + (size_t)j * K + k, 0, PREFETCH_LOCALITY);
        }
#pragma GCC unroll 4
        for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 3
            for (int p = 0; p < TED_BF16_PARTS; p++) {
                const uint16_t *xp = parts + ((size_t)i * TED_BF16_PARTS + p) * ldp + k;
                __m512bh xv = (__m512bh)_mm512_loadu_si512(xp);
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++)
                    acc[i][p % SUMS][j] = _mm512_dpbf16_ps(acc[i][p % SUMS][j], xv, w[j]);
            }
    }
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            __m512 total = acc[i][0][j];
#pragma GCC unroll 3
            for (int s = 1; s < SUMS; s++)
                total = _mm512_add_ps(total, acc[i][s][j]);
            float v = sum_lanes(total);
            y[(size_t)i * ldy + j] = b ? v + b[j] : v;
        }
}

TED_BF16 static void four_columns_dpbf16(float *y, int ldy, const uint16_t *parts, int ldp,
                                         const uint16_t *W, const uint16_t *next,
                                         const float *b, int rows, int K)
{
    int i = 0;
    size_t row_step = (size_t)TED_BF16_PARTS * ldp;
    for (; i + 4 <= rows; i += 4)
        tile_dpbf16(y + (size_t)i * ldy, ldy, parts + i * row_step, ldp, W,
                    i == 0 ? next : NULL, b, K, 4);
    float *yi = y + (size_t)i * ldy;
    const uint16_t *pi = parts + i * row_step;
    const uint16_t *n = i == 0 ? next : NULL;
    switch (rows - i) {
    case 3: tile_dpbf16(yi, ldy, pi, ldp, W, n, b, K, 3); break;
    case 2: tile_dpbf16(yi, ldy, pi, ldp, W, n, b, K, 2); break;
    case 1: tile_dpbf16(yi, ldy, pi, ldp, W, n, b, K, 1); break;
    }
}

/* ---- avx512 with AVX512_BF16, W in bf16 panels ------------------------------
 * Panel p holds W's rows 16p .. 16p + 15 as (K2 / 2, 16, 2), K2 = K rounded
 * up to even: for each pair of k, the 16 columns' two weights side by side,
 * one vector that vdpbf16ps multiplies by the pair (x[k], x[k + 1]) of a
 * row, broadcast. One panel is one contiguous stream, 16 sums a vector,
 * and no sums across lanes at the end. */

/* y[i][0 .. PANELS * 16) = x[i] . W's columns + bias for ROWS rows (each
 * TED_BF16_PARTS bf16 rows ldp apart) and PANELS panels (K2 * 16 apart);
 * `cols` (<= PANELS * 16) columns are written. A lone row keeps each part's
 * sums apart (three chains instead of one three times as long). */
TED_BF16 static inline __attribute__((always_inline)) void panel_tile(
    float *y, int ldy, const uint16_t *parts, int ldp, const uint16_t *panels, int K2,
    const float *bias, int cols, const int ROWS, const int PANELS)
{
    const int SUMS = ROWS == 1 ? TED_BF16_PARTS : 1;
    __m512 acc[TILE_ROWS][TED_BF16_PARTS][4];
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 3
        for (int s = 0; s < SUMS; s++)
#pragma GCC unroll 4
            for (int p = 0; p < PANELS; p++)
                acc[i][s][p] = _mm512_setzero_ps();
    const size_t panel_halves = (size_t)K2 * 16;
    for (int kk = 0; kk < K2 / 2; kk++) {
        __m512bh w[4];
#pragma GCC unroll 4
        for (int p = 0; p < PANELS; p++) {
            const uint16_t *wp = panels + p * panel_halves + (size_t)kk * 32;
            w[p] = (__m512bh)_mm512_loadu_si512(wp);
            __builtin_prefetch(wp + PANEL_PREFETCH_HALVES, 0, PREFETCH_LOCALITY);
        }
#pragma GCC unroll 6
        for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 3
            for (int part = 0; part < TED_BF16_PARTS; part++) {
                int32_t pair;
                memcpy(&pair, parts + ((size_t)i * TED_BF16_PARTS + part) * ldp + 2 * kk,
                       sizeof pair);
                __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
                for (int p = 0; p < PANELS; p++)
                    acc[i][part % SUMS][p] = _mm512_dpbf16_ps(acc[i][part % SUMS][p], w[p], xv);
            }
    }
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
        for (int p = 0; p < PANELS; p++) {
            __m512 total = acc[i][0][p];
#pragma GCC unroll 3
            for (int s = 1; s < SUMS; s++)
                total = _mm512_add_ps(total, acc[i][s][p]);
            int left = cols - 16 * p;
            __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
            if (bias)
                total = _mm512_add_ps(total, _mm512_maskz_loadu_ps(m, bias + 16 * p));
            _mm512_mask_storeu_ps(y + (size_t)i * ldy + 16 * p, m, total);
        }
}

/* Panels [first, last) of a lone row (a decoder step at batch 1, bound by
 * reading W) with vdpbf16ps, four panels at a time
 * (measurements: docs/performance.md#bf16-weights). */
TED_BF16 static void lone_row_avx512(float *y, const uint16_t *parts, int ldp,
                                     const uint16_t *panels, const float *b, int K, int out,
                                     int first, int last)
{
    int K2 = (K + 1) / 2 * 2, p = first;
    for (; p + 4 <= last; p += 4)
        panel_tile(y + 16 * p, out, parts, ldp, panels + (size_t)p * K2 * 16, K2,
                   b ? b + 16 * p : NULL, out - 16 * p, 1, 4);
    for (; p < last; p++)
        panel_tile(y + 16 * p, out, parts, ldp, panels + (size_t)p * K2 * 16, K2,
                   b ? b + 16 * p : NULL, out - 16 * p, 1, 1);
}
#endif

void TED_VARIANT_NAME(ted_matmul_bf16_panels)(float *y, int ldy, const float *x,
                                              const uint16_t *parts, int ldp,
                                              const uint16_t *panels, const float *b, int rows,
                                              int K, int out, int first, int last)
{
#if defined(__AVX512F__)
    if (parts && rows == 1) {
        lone_row_avx512(y, parts, ldp, panels, b, K, out, first, last);
        return;
    }
#else
    (void)parts, (void)ldp;  /* only AVX512_BF16 reads parts */
#endif
    widened_panels(y, ldy, x, panels, b, rows, K, out, first, last);
}

/* Rows of x taken together, so that a block stays in cache while the
 * columns of W pass. */
enum { ROW_BLOCK = 16 };

void TED_VARIANT_NAME(ted_matmul_bf16_columns)(float *y, int ldy, const float *x,
                                               const uint16_t *parts, int ldp,
                                               const uint16_t *W, const float *b, int rows,
                                               int K, int first, int last)
{
#if !defined(__AVX512F__)
    (void)parts, (void)ldp;  /* only AVX512_BF16 reads parts */
#endif
    int ahead = PREFETCH_BYTES / (2 * K) / 4 * 4;
    ahead = ahead < 4 ? 4 : ahead;
    for (int r = 0; r < rows; r += ROW_BLOCK) {
        int count = rows - r < ROW_BLOCK ? rows - r : ROW_BLOCK;
        float *yr = y + (size_t)r * ldy;
        const float *xr = x + (size_t)r * K;
        int n = first;
        for (; n + 4 <= last; n += 4) {
            const uint16_t *Wn = W + (size_t)n * K;
            const uint16_t *next = n + ahead + 4 <= last ? Wn + (size_t)ahead * K : NULL;
            const float *bn = b ? b + n : NULL;
#if defined(__AVX512F__)
            if (parts) {
                four_columns_dpbf16(yr + n, ldy, parts + (size_t)r * TED_BF16_PARTS * ldp, ldp,
                                    Wn, next, bn, count, K);
                continue;
            }
#endif
            four_columns_widened(yr + n, ldy, xr, K, Wn, next, bn, count, K);
        }
        for (; n < last; n++)
            one_column(yr + n, ldy, xr, K, W + (size_t)n * K, b ? b + n : NULL, count, K);
    }
}

/* ---- x as bf16 parts ------------------------------------------------------- */

int TED_VARIANT_NAME(ted_split_bf16_rows)(uint16_t *parts, const float *x, int rows, int K,
                                          int ldp)
{
#if defined(__AVX512F__)
    if (!cpu_has_bf16())
        return 0;
    for (int i = 0; i < rows; i++) {
        uint16_t *row = parts + (size_t)i * TED_BF16_PARTS * ldp;
        for (int k = 0; k < K; k++) {
            float rest = x[(size_t)i * K + k];
            for (int p = 0; p < TED_BF16_PARTS; p++) {
                uint16_t h = ted_bf16_from_float(rest);
                row[(size_t)p * ldp + k] = h;
                rest -= ted_bf16_to_float(h);
            }
        }
        for (int p = 0; p < TED_BF16_PARTS; p++)
            memset(row + (size_t)p * ldp + K, 0, (size_t)(ldp - K) * sizeof *row);
    }
    return TED_BF16_PARTS;
#else
    (void)parts, (void)x, (void)rows, (void)K, (void)ldp;
    return 0;
#endif
}
