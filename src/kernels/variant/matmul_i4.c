/* The kernel of the int4 product (src/kernels/matmul.c): output columns of
 * y = x W^T + b with W in groups of 32 4-bit values (kernels.h,
 * TED_I4_GROUP) and x quantized to int8 per row, compiled once per
 * instruction set (kernels/variants.h). Each group's dot product is exact
 * in int32; it is multiplied by the group's scale and summed in float,
 * and the row's sum by x's scale.
 *
 *   avx512    with AVX512_VNNI (when the CPU has it), from PANEL_MIN_ROWS
 *             rows: panels of 16 columns unpacked once into int8 (below);
 *             under that, and for the columns left: four groups a step,
 *             64 bytes of W as stored: vpdpbusd of the nibbles w + 8
 *             (unsigned) and x, 16 groups' int32 sums a vector, less 8
 *             times x's group sums, one conversion and one FMA with their
 *             scales; tiles of 2 rows and 2 columns, or 1 row and 4
 *             columns (below); without VNNI the avx2 code below.
 *   avx2      from PANEL_MIN_ROWS rows: panels of 8 columns (below);
 *             under that, and for the columns left: two groups a step,
 *             32 bytes of W as stored, vpmaddubsw of the nibbles w + 8
 *             and x less that of 8 and x (no int16 sum saturates), one
 *             vpmaddwd, one conversion and one FMA with the two groups'
 *             scales (below).
 *   portable  plain C, widened to int32.
 *
 * x comes quantized (ted_quantize_rows_fn), rows `ldx` bytes apart, zero
 * from K to ldx; ldx covers every group, a partial last one included. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/simd.h"
#include "kernels/variants.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

/* How far ahead of the step each row of W is prefetched (its scales a
 * quarter as far: 4 bytes a group against 16): with a lone row of x the
 * loads of W are too few in flight without it, and the product stays
 * under the memory's speed (measurements: docs/performance.md#int4-few-rows). */
#ifndef PREFETCH_BYTES
#define PREFETCH_BYTES 2048
#endif

/* The dot product of one group: 32 bytes of x and 16 bytes of W. */
static inline int32_t dot_group(const int8_t *x, const uint8_t *w)
{
    int32_t s = 0;
    for (int k = 0; k < TED_I4_GROUP / 2; k++) {
        s += (int32_t)x[k] * ((w[k] & 15) - 8);
        s += (int32_t)x[k + TED_I4_GROUP / 2] * ((w[k] >> 4) - 8);
    }
    return s;
}

static inline float finish(float sum, float x_scale, const float *b, int j)
{
    float v = sum * x_scale;
    return b ? v + b[j] : v;
}

#if defined(__AVX2__)
static inline float sum_lanes_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 32 values of a group as bytes w - 8, in the order of x. */
static inline __m256i unpack_group(const uint8_t *w)
{
    const __m128i low = _mm_set1_epi8(15);
    __m128i p = _mm_loadu_si128((const __m128i *)w);
    __m128i lo = _mm_and_si128(p, low), hi = _mm_and_si128(_mm_srli_epi16(p, 4), low);
    return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
}

/* Products of few rows without VNNI (under PANEL_MIN_ROWS, and the
 * columns the panels leave): W read as stored, 32 bytes a step (two
 * groups, 128-bit lane L holding group g + L), its low and high nibbles
 * (w + 8) one AND and one shift each; x's 64 bytes of the same groups split
 * into those two orders once a step and row (two vperm2i128), with 8 times
 * their pairs' sums (vpmaddubsw of 8s) beside them. vpmaddubsw of the
 * nibbles and x, the two added and less the 8s' pairs, hold the pairs of
 * (w + 8 - 8) . x: each at most 2 * 8 * 128 in magnitude, 2 * 15 * 128
 * before the subtraction, so no int16 sum saturates; one vpmaddwd to
 * int32, one conversion and one FMA with the two groups' scales. Tiles of
 * 2 rows and 2 columns, or 1 row and 4 columns. */
enum { AVX2_STEP_GROUPS = 2, AVX2_BLOCK_GROUPS = 8 };

typedef struct i4_small_avx2 {
    const int8_t *x;
    const uint8_t *W;
    const float *w_scale;
    size_t row_bytes;
    int ldx, groups;
} i4_small_avx2;

/* Groups g and g + 1 of a row of x (those of them that are `valid`):
 * lo holds their bytes 0..15, hi 16..31, eights the pairs of 8 . x. */
static inline __attribute__((always_inline)) void x_step_avx2(__m256i *lo, __m256i *hi,
                                                              __m256i *eights, const int8_t *x,
                                                              int valid)
{
    const __m256i zero = _mm256_setzero_si256(), eight = _mm256_set1_epi8(8);
    __m256i a = valid >= 1 ? _mm256_loadu_si256((const __m256i *)x) : zero;
    __m256i b = valid >= 2 ? _mm256_loadu_si256((const __m256i *)(x + 32)) : zero;
    *lo = _mm256_permute2x128_si256(a, b, 0x20);
    *hi = _mm256_permute2x128_si256(a, b, 0x31);
    *eights = _mm256_add_epi16(_mm256_maddubs_epi16(eight, *lo), _mm256_maddubs_epi16(eight, *hi));
}

/* The same groups of a row of W: the low and the high nibbles (w + 8). */
static inline __attribute__((always_inline)) void w_step_avx2(__m256i *lo, __m256i *hi,
                                                              const uint8_t *w, int valid)
{
    const __m256i low = _mm256_set1_epi8(15), zero = _mm256_setzero_si256();
    __m256i p = valid >= 2   ? _mm256_loadu_si256((const __m256i *)w)
                : valid == 1 ? _mm256_inserti128_si256(zero, _mm_loadu_si128((const __m128i *)w), 0)
                             : zero;
    *lo = _mm256_and_si256(p, low);
    *hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), low);
}

/* acc[i][c] += the block of groups [g0, g0 + 8) (those under `groups`;
 * all of them when `full`) of rows [i0, i0 + ROWS) and columns [j0, j0 +
 * COLUMNS). */
static inline __attribute__((always_inline)) void block_avx2(__m256 acc[2][4],
                                                             const i4_small_avx2 *m, int i0,
                                                             int j0, int g0, bool full,
                                                             const int ROWS, const int COLUMNS)
{
    const __m256i ones16 = _mm256_set1_epi16(1);
    int left = full ? AVX2_BLOCK_GROUPS : m->groups - g0;
    __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(left),
                                       _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
    __m256 scales[4];
#pragma GCC unroll 4
    for (int c = 0; c < COLUMNS; c++) {
        const float *s = m->w_scale + (size_t)(j0 + c) * m->groups + g0;
        scales[c] = full ? _mm256_loadu_ps(s) : _mm256_maskload_ps(s, lanes);
    }
#pragma GCC unroll 4
    for (int st = 0; st < AVX2_BLOCK_GROUPS / AVX2_STEP_GROUPS; st++) {
        int g = g0 + st * AVX2_STEP_GROUPS;
        __m256i xlo[2], xhi[2], eights[2];
#pragma GCC unroll 2
        for (int i = 0; i < ROWS; i++)
            x_step_avx2(&xlo[i], &xhi[i], &eights[i],
                        m->x + (size_t)(i0 + i) * m->ldx + (size_t)g * TED_I4_GROUP, left - 2 * st);
        const __m256i order = _mm256_set_epi32(2 * st + 1, 2 * st + 1, 2 * st + 1, 2 * st + 1,
                                               2 * st, 2 * st, 2 * st, 2 * st);
#pragma GCC unroll 4
        for (int c = 0; c < COLUMNS; c++) {
            const uint8_t *w = m->W + (size_t)(j0 + c) * m->row_bytes + (size_t)g * 16;
            if (st % 2 == 0)  /* a 64-byte line every two steps */
                _mm_prefetch((const char *)w + PREFETCH_BYTES, _MM_HINT_T0);
            __m256i wlo, whi;
            w_step_avx2(&wlo, &whi, w, left - 2 * st);
            __m256 s = _mm256_permutevar8x32_ps(scales[c], order);
#pragma GCC unroll 2
            for (int i = 0; i < ROWS; i++) {
                __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(wlo, xlo[i]),
                                                 _mm256_maddubs_epi16(whi, xhi[i]));
                __m256i d = _mm256_madd_epi16(_mm256_sub_epi16(pairs, eights[i]), ones16);
                acc[i][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, acc[i][c]);
            }
        }
    }
}

/* y[i][j] for rows [i0, i0 + ROWS) and columns [j0, j0 + COLUMNS). */
static inline __attribute__((always_inline)) void small_tile_avx2(
    float *y, int ldy, const float *x_scale, const float *b, const i4_small_avx2 *m, int i0,
    int j0, const int ROWS, const int COLUMNS)
{
    __m256 acc[2][4];
#pragma GCC unroll 2
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
        for (int c = 0; c < COLUMNS; c++)
            acc[i][c] = _mm256_setzero_ps();
    int g0 = 0;
    for (; g0 + AVX2_BLOCK_GROUPS <= m->groups; g0 += AVX2_BLOCK_GROUPS)
        block_avx2(acc, m, i0, j0, g0, true, ROWS, COLUMNS);
    if (g0 < m->groups)
        block_avx2(acc, m, i0, j0, g0, false, ROWS, COLUMNS);
    for (int i = 0; i < ROWS; i++)
        for (int c = 0; c < COLUMNS; c++)
            y[(size_t)(i0 + i) * ldy + j0 + c] =
                finish(sum_lanes_ps(acc[i][c]), x_scale[i0 + i], b, j0 + c);
}

/* Columns [first, last) of y for every row: tiles of 2 rows and 2
 * columns, a row left in tiles of 4 columns. */
static void columns_avx2(float *y, int ldy, const int8_t *x, const float *x_scale, int ldx,
                         const uint8_t *W, const float *w_scale, const float *b, int rows, int K,
                         int first, int last)
{
    int groups = (K + TED_I4_GROUP - 1) / TED_I4_GROUP, i = 0;
    i4_small_avx2 m = {x, W, w_scale, (size_t)groups * (TED_I4_GROUP / 2), ldx, groups};
    for (; i + 2 <= rows; i += 2) {
        int j = first;
        for (; j + 2 <= last; j += 2)
            small_tile_avx2(y, ldy, x_scale, b, &m, i, j, 2, 2);
        for (; j < last; j++)
            small_tile_avx2(y, ldy, x_scale, b, &m, i, j, 2, 1);
    }
    if (i < rows) {
        int j = first;
        for (; j + 4 <= last; j += 4)
            small_tile_avx2(y, ldy, x_scale, b, &m, i, j, 1, 4);
        for (; j < last; j++)
            small_tile_avx2(y, ldy, x_scale, b, &m, i, j, 1, 1);
    }
}

/* The panels of many rows (PANEL_MIN_ROWS and more; measurements:
 * docs/performance.md#int4-panels): PANEL_COLUMNS columns (16 with
 * AVX512_VNNI, AVX2_COLUMNS = 8 in AVX2), PANEL_GROUPS groups unpacked
 * once, x + 128 copied PANEL_ROWS rows at a time. */
enum { PANEL_COLUMNS = 16, AVX2_COLUMNS = 8, PANEL_GROUPS = 32, PANEL_ROWS = 8 };
enum { PANEL_MIN_ROWS = 8, AVX2_ROWS = 4, PANEL_K = PANEL_GROUPS * TED_I4_GROUP };

/* Rows [i0, i0 + n) of x, groups [g0, g0 + count), xor 0x80 into xu. */
static void copy_rows(uint8_t *xu, const int8_t *x, int ldx, int i0, int n, int g0,
                      int count)
{
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int i = 0; i < n; i++) {
        const int8_t *xi = x + (size_t)(i0 + i) * ldx + (size_t)g0 * TED_I4_GROUP;
        for (int g = 0; g < count; g++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(xi + (size_t)g * TED_I4_GROUP));
            _mm256_store_si256((__m256i *)(xu + (size_t)i * PANEL_K + (size_t)g * TED_I4_GROUP),
                               _mm256_xor_si256(v, flip));
        }
    }
}

typedef struct i4_panel_avx2 {
    int32_t w[PANEL_K / 4][AVX2_COLUMNS];        /* 4 signed bytes of k a column */
    int32_t excess[PANEL_GROUPS][AVX2_COLUMNS];  /* -128 * the group's sum of w */
    float scale[PANEL_GROUPS][AVX2_COLUMNS];
} i4_panel_avx2;

/* The 8 x 8 dwords of r (r[c]: column c) transposed (r[e]: dword e). */
static inline void transpose_8x8(__m256i r[8])
{
    __m256i t[8], u[8];
    for (int c = 0; c < 8; c += 2) {
        t[c] = _mm256_unpacklo_epi32(r[c], r[c + 1]);
        t[c + 1] = _mm256_unpackhi_epi32(r[c], r[c + 1]);
    }
    for (int c = 0; c < 8; c += 4) {
        u[c] = _mm256_unpacklo_epi64(t[c], t[c + 2]);
        u[c + 1] = _mm256_unpackhi_epi64(t[c], t[c + 2]);
        u[c + 2] = _mm256_unpacklo_epi64(t[c + 1], t[c + 3]);
        u[c + 3] = _mm256_unpackhi_epi64(t[c + 1], t[c + 3]);
    }
    for (int e = 0; e < 4; e++) {
        r[e] = _mm256_permute2x128_si256(u[e], u[e + 4], 0x20);
        r[e + 4] = _mm256_permute2x128_si256(u[e], u[e + 4], 0x31);
    }
}

/* Groups [g0, g0 + count) of columns [j0, j0 + AVX2_COLUMNS) into p. */
static void unpack_panel_avx2(i4_panel_avx2 *p, const uint8_t *W, const float *w_scale, int j0,
                              int groups, int g0, int count)
{
    size_t row_bytes = (size_t)groups * (TED_I4_GROUP / 2);
    const uint8_t *w = W + (size_t)j0 * row_bytes + (size_t)g0 * (TED_I4_GROUP / 2);
    const float *s = w_scale + (size_t)j0 * groups + g0;
    const __m256i ones = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    const __m256i columns =
        _mm256_mullo_epi32(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32(groups));
    for (int g = 0; g < count; g++) {
        __m256i r[8];
        for (int c = 0; c < 8; c++)
            r[c] = unpack_group(w + (size_t)c * row_bytes + (size_t)g * (TED_I4_GROUP / 2));
        transpose_8x8(r);
        __m256i sum = _mm256_setzero_si256();
        for (int e = 0; e < 8; e++) {
            _mm256_store_si256((__m256i *)p->w[g * 8 + e], r[e]);
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, r[e]), ones16));
        }
        _mm256_store_si256((__m256i *)p->excess[g],
                           _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, 7)));
        _mm256_store_ps(p->scale[g], _mm256_i32gather_ps(s + g, columns, 4));
    }
}

/* y[i][0..7] (+)= the panel's `count` groups against AVX2_ROWS rows of xu
 * (x + 128, rows PANEL_K bytes apart). vpmaddubsw of x + 128 (at most 255)
 * and w (at most 8 in magnitude) gives pairs of at most 4080, and the 8
 * steps of a group sum to at most 32640: the int16 sums cannot saturate. */
static inline __attribute__((always_inline)) void panel_rows_avx2(
    float *y, int ldy, const uint8_t *xu, const i4_panel_avx2 *p, int count, bool add,
    const int ROWS)
{
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256 acc[AVX2_ROWS];
    for (int i = 0; i < ROWS; i++)
        acc[i] = _mm256_setzero_ps();
    for (int g = 0; g < count; g++) {
        __m256i excess = _mm256_load_si256((const __m256i *)p->excess[g]);
        __m256 s = _mm256_load_ps(p->scale[g]);
#pragma GCC unroll 4
        for (int i = 0; i < ROWS; i++) {
            const int32_t *xi = (const int32_t *)(xu + (size_t)i * PANEL_K) + g * 8;
            __m256i d = _mm256_setzero_si256();
#pragma GCC unroll 8
            for (int e = 0; e < 8; e++)
                d = _mm256_add_epi16(d, _mm256_maddubs_epi16(
                                            _mm256_set1_epi32(xi[e]),
                                            _mm256_load_si256((const __m256i *)p->w[g * 8 + e])));
            d = _mm256_add_epi32(_mm256_madd_epi16(d, ones16), excess);
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), s, acc[i]);
        }
    }
    for (int i = 0; i < ROWS; i++) {
        float *yi = y + (size_t)i * ldy;
        _mm256_storeu_ps(yi, add ? _mm256_add_ps(_mm256_loadu_ps(yi), acc[i]) : acc[i]);
    }
}

/* Columns [j0, j0 + AVX2_COLUMNS) of y for every row, in chunks of
 * PANEL_GROUPS groups; then x's scale and the bias. */
static void panel_columns_avx2(float *y, int ldy, const int8_t *x, const float *x_scale, int ldx,
                               const uint8_t *W, const float *w_scale, const float *b, int rows,
                               int groups, int j0)
{
    _Alignas(32) i4_panel_avx2 panel;  /* 10 KiB and 8 KiB of stack */
    _Alignas(32) uint8_t xu[PANEL_ROWS * PANEL_K];
    for (int g0 = 0; g0 < groups; g0 += PANEL_GROUPS) {
        int count = groups - g0 < PANEL_GROUPS ? groups - g0 : PANEL_GROUPS;
        bool add = g0 > 0;
        unpack_panel_avx2(&panel, W, w_scale, j0, groups, g0, count);
        for (int i0 = 0; i0 < rows; i0 += PANEL_ROWS) {
            int n = rows - i0 < PANEL_ROWS ? rows - i0 : PANEL_ROWS, i = 0;
            copy_rows(xu, x, ldx, i0, n, g0, count);
            float *yi = y + (size_t)i0 * ldy + j0;
            for (; i + AVX2_ROWS <= n; i += AVX2_ROWS)
                panel_rows_avx2(yi + (size_t)i * ldy, ldy, xu + (size_t)i * PANEL_K, &panel,
                                count, add, AVX2_ROWS);
            for (; i < n; i++)
                panel_rows_avx2(yi + (size_t)i * ldy, ldy, xu + (size_t)i * PANEL_K, &panel,
                                count, add, 1);
        }
    }
    __m256 bias = b ? _mm256_loadu_ps(b + j0) : _mm256_setzero_ps();
    for (int i = 0; i < rows; i++) {
        float *yi = y + (size_t)i * ldy + j0;
        _mm256_storeu_ps(yi, _mm256_fmadd_ps(_mm256_loadu_ps(yi), _mm256_set1_ps(x_scale[i]), bias));
    }
}

/* Panels of AVX2_COLUMNS columns from PANEL_MIN_ROWS rows, then the tiles. */
static void product_avx2_all(float *y, int ldy, const int8_t *x, const float *x_scale, int ldx,
                             const uint8_t *W, const float *w_scale, const float *b, int rows,
                             int K, int first, int last)
{
    int groups = (K + TED_I4_GROUP - 1) / TED_I4_GROUP, j = first;
    if (rows >= PANEL_MIN_ROWS)
        for (; j + AVX2_COLUMNS <= last; j += AVX2_COLUMNS)
            panel_columns_avx2(y, ldy, x, x_scale, ldx, W, w_scale, b, rows, groups, j);
    columns_avx2(y, ldy, x, x_scale, ldx, W, w_scale, b, rows, K, j, last);
}
#endif

#if defined(__AVX512F__)
#define TED_VNNI __attribute__((target("avx512vnni,avx512bw,avx512dq,avx512f")))

/* Products of few rows (under PANEL_MIN_ROWS: a decoder step of one
 * sentence or a small beam; and the columns the panels leave). W is read
 * as stored, 64 bytes a step: four groups, 128-bit lane L holding group
 * g + L, its low nibbles (w + 8 of columns 0..15) and its high nibbles
 * (columns 16..31) one AND and one shift each. x's 128 bytes of the same
 * four groups are split into those two orders once a step and row (two
 * vshufi64x2), shared by the tile's columns; vpdpbusd of the nibbles
 * (unsigned) and x leaves each group's (w + 8) . x in the four dwords of
 * its lane. Four steps (a block of 16 groups) are added across lanes into
 * one vector of 16 group sums; minus 8 times the groups' sums of x
 * (once a product for each row: eight_sums), each is w . x exactly, and
 * one conversion and one FMA with the 16 groups' scales (permuted to the
 * sums' order) apply them: a block of a column takes 8 vpdpbusd, 12
 * instructions to unpack W and 13 to sum and scale.
 * measurements: docs/performance.md#int4-few-rows */
enum { STEP_GROUPS = 4, BLOCK_GROUPS = 16, CHUNK_BLOCKS = 32, SMALL_ROWS = 4 };

/* What the tiles of one product share: x, W and its scales, and for
 * rows [r0, r0 + SMALL_ROWS) and the chunk of blocks [b0, b1) 8 times
 * the groups' sums of x, in the order of block_sums. */
typedef struct i4_small {
    const int8_t *x;
    const uint8_t *W;
    const float *w_scale;
    const int32_t *eight_sums;  /* (SMALL_ROWS, b1 - b0, 16) */
    size_t row_bytes;
    int ldx, groups, r0, b0, b1;  /* eight_sums: rows [r0, r0 + SMALL_ROWS), blocks [b0, b1) */
} i4_small;

static inline uint64_t byte_mask(int bytes)
{
    return bytes >= 64 ? ~0ull : bytes <= 0 ? 0ull : (1ull << bytes) - 1;
}

/* The step of groups [g, g + 4) of a row of x (only `valid` of them
 * read when not `full`): lo holds their bytes 0..15, hi 16..31. */
TED_VNNI static inline __attribute__((always_inline)) void x_step(__m512i *lo, __m512i *hi,
                                                                   const int8_t *x, int valid,
                                                                   bool full)
{
    __m512i a = full ? _mm512_loadu_si512(x)
                     : _mm512_maskz_loadu_epi8(byte_mask(32 * valid), x);
    __m512i b = full ? _mm512_loadu_si512(x + 64)
                     : _mm512_maskz_loadu_epi8(byte_mask(32 * (valid - 2)), x + 64);
    *lo = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    *hi = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 1, 3, 1));
}

/* The same groups of a row of W: the low and the high nibbles (w + 8). */
TED_VNNI static inline __attribute__((always_inline)) void w_step(__m512i *lo, __m512i *hi,
                                                                   const uint8_t *w, int valid,
                                                                   bool full)
{
    const __m512i low = _mm512_set1_epi8(15);
    __m512i p = full ? _mm512_loadu_si512(w)
                     : _mm512_maskz_loadu_epi8(byte_mask(16 * valid), w);
    *lo = _mm512_and_si512(p, low);
    *hi = _mm512_and_si512(_mm512_srli_epi16(p, 4), low);
}

/* Lane by lane (128 bits), the dwords of a and b summed in pairs: [a0 +
 * a2, b0 + b2, a1 + a3, b1 + b3]. */
TED_VNNI static inline __m512i pair_sums(__m512i a, __m512i b)
{
    return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}

/* The 16 group sums of a block from its steps' dwords (pair_sums of
 * steps 0, 1 and of 2, 3): dword 4L + d holds group 4d + L. */
TED_VNNI static inline __m512i block_sums(__m512i t01, __m512i t23)
{
    return _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
}

/* The scales of a block's `valid` groups in the order of block_sums. */
TED_VNNI static inline __attribute__((always_inline)) __m512 block_scales(const float *s,
                                                                           int valid, bool full)
{
    const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    __m512 v = full ? _mm512_loadu_ps(s)
                    : _mm512_maskz_loadu_ps((__mmask16)((1u << valid) - 1), s);
    return _mm512_permutexvar_ps(order, v);
}

/* 8 times the sums of x's groups, block by block, for rows [r0, r0 + n)
 * and the chunk's blocks, into eight_sums. */
TED_VNNI static void x_eight_sums(int32_t *eight_sums, const i4_small *m, int n)
{
    const __m512i eights = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
    for (int i = 0; i < n; i++)
        for (int bk = m->b0; bk < m->b1; bk++) {
            __m512i t[2];
#pragma GCC unroll 4
            for (int h = 0; h < 2; h++) {
                __m512i d[2];
#pragma GCC unroll 4
                for (int s = 0; s < 2; s++) {
                    int g = bk * BLOCK_GROUPS + (2 * h + s) * STEP_GROUPS;
                    __m512i lo, hi;
                    x_step(&lo, &hi, m->x + (size_t)(m->r0 + i) * m->ldx + (size_t)g * TED_I4_GROUP,
                           m->groups - g, false);
                    d[s] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, eights, lo), eights, hi);
                }
                t[h] = pair_sums(d[0], d[1]);
            }
            _mm512_storeu_si512(eight_sums + ((size_t)i * (m->b1 - m->b0) + (bk - m->b0)) * 16,
                                block_sums(t[0], t[1]));
        }
}

/* acc[i][c] += block bk of rows [i0, i0 + ROWS) and columns [j0, j0 +
 * COLUMNS): each group's w . x times its scale, 16 groups a vector. */
TED_VNNI static inline __attribute__((always_inline)) void block_tile(
    __m512 acc[2][4], const i4_small *m, int i0, int j0, int bk, bool full, const int ROWS,
    const int COLUMNS)
{
    const __m512i zero = _mm512_setzero_si512();
    __m512i t[2][2][4];
#pragma GCC unroll 4
    for (int h = 0; h < 2; h++) {
        __m512i d[2][2][4];
#pragma GCC unroll 4
        for (int s = 0; s < 2; s++) {
            int g = bk * BLOCK_GROUPS + (2 * h + s) * STEP_GROUPS, valid = m->groups - g;
            __m512i xlo[2], xhi[2];
#pragma GCC unroll 4
            for (int i = 0; i < ROWS; i++)
                x_step(&xlo[i], &xhi[i],
                       m->x + (size_t)(i0 + i) * m->ldx + (size_t)g * TED_I4_GROUP, valid, full);
#pragma GCC unroll 4
            for (int c = 0; c < COLUMNS; c++) {
                const uint8_t *w = m->W + (size_t)(j0 + c) * m->row_bytes + (size_t)g * 16;
                _mm_prefetch((const char *)w + PREFETCH_BYTES, _MM_HINT_T0);
                __m512i wlo, whi;
                w_step(&wlo, &whi, w, valid, full);
#pragma GCC unroll 4
                for (int i = 0; i < ROWS; i++)
                    d[s][i][c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(zero, wlo, xlo[i]),
                                                     whi, xhi[i]);
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
            for (int c = 0; c < COLUMNS; c++)
                t[h][i][c] = pair_sums(d[0][i][c], d[1][i][c]);
    }
    int g = bk * BLOCK_GROUPS, valid = m->groups - g;
#pragma GCC unroll 4
    for (int c = 0; c < COLUMNS; c++) {
        const float *scale = m->w_scale + (size_t)(j0 + c) * m->groups + g;
        _mm_prefetch((const char *)scale + PREFETCH_BYTES / 4, _MM_HINT_T0);
        __m512 s = block_scales(scale, valid, full);
#pragma GCC unroll 4
        for (int i = 0; i < ROWS; i++) {
            size_t row = (size_t)(i0 + i - m->r0);
            const int32_t *e = m->eight_sums + (row * (m->b1 - m->b0) + (bk - m->b0)) * 16;
            __m512i sums = _mm512_sub_epi32(block_sums(t[0][i][c], t[1][i][c]),
                                            _mm512_loadu_si512(e));
            acc[i][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), s, acc[i][c]);
        }
    }
}

/* y[i][j] for rows [i0, i0 + ROWS) and columns [j0, j0 + COLUMNS), the
 * chunk's blocks: added to y's partial sums when `add`, finished with x's
 * scale and the bias when `done`. */
TED_VNNI static inline __attribute__((always_inline)) void small_tile(
    float *y, int ldy, const float *x_scale, const float *b, const i4_small *m, int i0, int j0,
    bool add, bool done, const int ROWS, const int COLUMNS)
{
    __m512 acc[2][4];
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
        for (int c = 0; c < COLUMNS; c++)
            acc[i][c] = _mm512_setzero_ps();
    int full = m->groups / BLOCK_GROUPS < m->b1 ? m->groups / BLOCK_GROUPS : m->b1;
    for (int bk = m->b0; bk < full; bk++)
        block_tile(acc, m, i0, j0, bk, true, ROWS, COLUMNS);
    if (full < m->b1)
        block_tile(acc, m, i0, j0, full, false, ROWS, COLUMNS);
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
        for (int c = 0; c < COLUMNS; c++) {
            float *out = y + (size_t)(i0 + i) * ldy + j0 + c;
            float v = _mm512_reduce_add_ps(acc[i][c]) + (add ? *out : 0.0f);
            *out = done ? finish(v, x_scale[i0 + i], b, j0 + c) : v;
        }
}

/* Rows [r0, r0 + n) (n at most SMALL_ROWS) and columns [first, last):
 * tiles of 2 rows and 2 columns, a row left in tiles of 4 columns. */
TED_VNNI static void small_rows(float *y, int ldy, const float *x_scale, const float *b,
                                const i4_small *m, int n, int first, int last, bool add,
                                bool done)
{
    int i = m->r0, end = m->r0 + n;
    for (; i + 2 <= end; i += 2) {
        int j = first;
        for (; j + 2 <= last; j += 2)
            small_tile(y, ldy, x_scale, b, m, i, j, add, done, 2, 2);
        for (; j < last; j++)
            small_tile(y, ldy, x_scale, b, m, i, j, add, done, 2, 1);
    }
    if (i < end) {
        int j = first;
        for (; j + 4 <= last; j += 4)
            small_tile(y, ldy, x_scale, b, m, i, j, add, done, 1, 4);
        for (; j < last; j++)
            small_tile(y, ldy, x_scale, b, m, i, j, add, done, 1, 1);
    }
}

/* Columns [first, last) of y for every row, SMALL_ROWS rows at a time,
 * the groups in chunks of CHUNK_BLOCKS blocks (one chunk up to K = 16384),
 * each chunk's partial sums kept in y. */
TED_VNNI static void columns_small(float *y, int ldy, const int8_t *x, const float *x_scale,
                                   int ldx, const uint8_t *W, const float *w_scale,
                                   const float *b, int rows, int groups, int first, int last)
{
    _Alignas(64) int32_t eight_sums[SMALL_ROWS * CHUNK_BLOCKS * BLOCK_GROUPS];  /* 8 KiB */
    int blocks = (groups + BLOCK_GROUPS - 1) / BLOCK_GROUPS;
    i4_small m = {x, W, w_scale, eight_sums, (size_t)groups * (TED_I4_GROUP / 2), ldx, groups,
                  0, 0, 0};
    for (m.r0 = 0; m.r0 < rows; m.r0 += SMALL_ROWS) {
        int n = rows - m.r0 < SMALL_ROWS ? rows - m.r0 : SMALL_ROWS;
        for (m.b0 = 0;; m.b0 = m.b1) {
            m.b1 = blocks - m.b0 < CHUNK_BLOCKS ? blocks : m.b0 + CHUNK_BLOCKS;
            x_eight_sums(eight_sums, &m, n);
            small_rows(y, ldy, x_scale, b, &m, n, first, last, m.b0 > 0, m.b1 == blocks);
            if (m.b1 == blocks)
                break;
        }
    }
}

/* Products of many rows (PANEL_MIN_ROWS and more): PANEL_COLUMNS columns of
 * W at a time, PANEL_GROUPS groups of them unpacked once into a panel of
 * signed bytes laid out for vpdpbusd (4 bytes of k of each column a dword,
 * the 16 columns a 64-byte vector), then every row of x against it: x + 128
 * (x xor 0x80, copied PANEL_ROWS rows at a time) is the unsigned operand,
 * the panel the signed one, and each group's int32 sums start from
 * -128 * the sum of the column's group, so they hold w . x exactly; one
 * float FMA a group applies the 16 columns' scales. The groups' sums go
 * into y chunk by chunk, and x's scale and the bias at the end.
 * measurements: docs/performance.md#int4-panels */

typedef struct i4_panel {
    int32_t w[PANEL_K / 4][PANEL_COLUMNS];        /* 4 signed bytes of k a column */
    int32_t excess[PANEL_GROUPS][PANEL_COLUMNS];  /* -128 * the group's sum of w */
    float scale[PANEL_GROUPS][PANEL_COLUMNS];
} i4_panel;

/* r[c] holds the 8 dwords of column c in its low half and of column c + 8
 * in its high half; on return r[e] holds dword e of the 16 columns. */
TED_VNNI static inline void transpose_dwords(__m512i r[8])
{
    __m512i t[8], u[8];
    for (int c = 0; c < 8; c += 2) {
        t[c] = _mm512_unpacklo_epi32(r[c], r[c + 1]);
        t[c + 1] = _mm512_unpackhi_epi32(r[c], r[c + 1]);
    }
    for (int c = 0; c < 8; c += 4) {
        u[c] = _mm512_unpacklo_epi64(t[c], t[c + 2]);
        u[c + 1] = _mm512_unpackhi_epi64(t[c], t[c + 2]);
        u[c + 2] = _mm512_unpacklo_epi64(t[c + 1], t[c + 3]);
        u[c + 3] = _mm512_unpackhi_epi64(t[c + 1], t[c + 3]);
    }
    const __m512i low = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    const __m512i high = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    for (int e = 0; e < 4; e++) {
        r[e] = _mm512_permutex2var_epi64(u[e], low, u[e + 4]);
        r[e + 4] = _mm512_permutex2var_epi64(u[e], high, u[e + 4]);
    }
}

/* Groups [g0, g0 + count) of columns [j0, j0 + PANEL_COLUMNS) into p. */
TED_VNNI static void unpack_panel(i4_panel *p, const uint8_t *W, const float *w_scale, int j0,
                                  int groups, int g0, int count)
{
    size_t row_bytes = (size_t)groups * (TED_I4_GROUP / 2);
    const uint8_t *w = W + (size_t)j0 * row_bytes + (size_t)g0 * (TED_I4_GROUP / 2);
    const float *s = w_scale + (size_t)j0 * groups + g0;
    const __m512i ones = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
    const __m512i columns = _mm512_mullo_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
        _mm512_set1_epi32(groups));
    for (int g = 0; g < count; g++) {
        __m512i r[8];
        for (int c = 0; c < 8; c++) {
            const uint8_t *wc = w + (size_t)c * row_bytes + (size_t)g * (TED_I4_GROUP / 2);
            r[c] = _mm512_inserti64x4(_mm512_castsi256_si512(unpack_group(wc)),
                                      unpack_group(wc + 8 * row_bytes), 1);
        }
        transpose_dwords(r);
        __m512i sum = zero;
        for (int e = 0; e < 8; e++) {
            _mm512_store_si512(p->w[g * 8 + e], r[e]);
            sum = _mm512_dpbusd_epi32(sum, ones, r[e]);
        }
        _mm512_store_si512(p->excess[g], _mm512_sub_epi32(zero, _mm512_slli_epi32(sum, 7)));
        _mm512_store_ps(p->scale[g], _mm512_i32gather_ps(columns, s + g, 4));
    }
}

/* y[i][0..15] (+)= the panel's `count` groups against ROWS rows of xu (x +
 * 128, rows PANEL_K bytes apart); `add`: add to y, else store. */
TED_VNNI static inline __attribute__((always_inline)) void panel_rows(
    float *y, int ldy, const uint8_t *xu, const i4_panel *p, int count, bool add, const int ROWS)
{
    __m512 acc[PANEL_ROWS];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++)
        acc[i] = _mm512_setzero_ps();
    for (int g = 0; g < count; g++) {
        __m512i w[8];
#pragma GCC unroll 8
        for (int e = 0; e < 8; e++)
            w[e] = _mm512_load_si512(p->w[g * 8 + e]);
        __m512i excess = _mm512_load_si512(p->excess[g]);
        __m512 s = _mm512_load_ps(p->scale[g]);
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; i++) {
            const int32_t *xi = (const int32_t *)(xu + (size_t)i * PANEL_K) + g * 8;
            __m512i d = excess;
#pragma GCC unroll 8
            for (int e = 0; e < 8; e++)
                d = _mm512_dpbusd_epi32(d, _mm512_set1_epi32(xi[e]), w[e]);
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, acc[i]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) {
        float *yi = y + (size_t)i * ldy;
        _mm512_storeu_ps(yi, add ? _mm512_add_ps(_mm512_loadu_ps(yi), acc[i]) : acc[i]);
    }
}

/* Columns [j0, j0 + PANEL_COLUMNS) of y for every row, in chunks of
 * PANEL_GROUPS groups; then x's scale and the bias. */
TED_VNNI static void panel_columns(float *y, int ldy, const int8_t *x, const float *x_scale,
                                   int ldx, const uint8_t *W, const float *w_scale,
                                   const float *b, int rows, int groups, int j0)
{
    _Alignas(64) i4_panel panel;  /* 20 KiB and 8 KiB of stack */
    _Alignas(64) uint8_t xu[PANEL_ROWS * PANEL_K];
    for (int g0 = 0; g0 < groups; g0 += PANEL_GROUPS) {
        int count = groups - g0 < PANEL_GROUPS ? groups - g0 : PANEL_GROUPS;
        bool add = g0 > 0;
        unpack_panel(&panel, W, w_scale, j0, groups, g0, count);
        for (int i0 = 0; i0 < rows; i0 += PANEL_ROWS) {
            int n = rows - i0 < PANEL_ROWS ? rows - i0 : PANEL_ROWS;
            copy_rows(xu, x, ldx, i0, n, g0, count);
            float *yi = y + (size_t)i0 * ldy + j0;
            if (n == PANEL_ROWS)
                panel_rows(yi, ldy, xu, &panel, count, add, PANEL_ROWS);
            else
                for (int i = 0; i < n; i++)
                    panel_rows(yi + (size_t)i * ldy, ldy, xu + (size_t)i * PANEL_K, &panel,
                               count, add, 1);
        }
    }
    __m512 bias = b ? _mm512_loadu_ps(b + j0) : _mm512_setzero_ps();
    for (int i = 0; i < rows; i++) {
        float *yi = y + (size_t)i * ldy + j0;
        _mm512_storeu_ps(yi, _mm512_fmadd_ps(_mm512_loadu_ps(yi), _mm512_set1_ps(x_scale[i]), bias));
    }
}

/* The panels from PANEL_MIN_ROWS rows, then the few-row tiles for the
 * rest. */
TED_VNNI static void columns_vnni(float *y, int ldy, const int8_t *x, const float *x_scale,
                                  int ldx, const uint8_t *W, const float *w_scale,
                                  const float *b, int rows, int K, int first, int last)
{
    int groups = (K + TED_I4_GROUP - 1) / TED_I4_GROUP, j = first;
    if (rows >= PANEL_MIN_ROWS)
        for (; j + PANEL_COLUMNS <= last; j += PANEL_COLUMNS)
            panel_columns(y, ldy, x, x_scale, ldx, W, w_scale, b, rows, groups, j);
    if (j < last)
        columns_small(y, ldy, x, x_scale, ldx, W, w_scale, b, rows, groups, j, last);
}
#endif

#if !defined(__AVX2__)
static void columns_portable(float *y, int ldy, const int8_t *x, const float *x_scale, int ldx,
                             const uint8_t *W, const float *w_scale, const float *b, int rows,
                             int K, int first, int last)
{
    int groups = (K + TED_I4_GROUP - 1) / TED_I4_GROUP;
    size_t row_bytes = (size_t)groups * (TED_I4_GROUP / 2);
    for (int i = 0; i < rows; i++)
        for (int j = first; j < last; j++) {
            const int8_t *xi = x + (size_t)i * ldx;
            const uint8_t *w = W + (size_t)j * row_bytes;
            float sum = 0.0f;
            for (int g = 0; g < groups; g++)
                sum += (float)dot_group(xi + (size_t)g * TED_I4_GROUP,
                                        w + (size_t)g * (TED_I4_GROUP / 2)) *
                       w_scale[(size_t)j * groups + g];
            y[(size_t)i * ldy + j] = finish(sum, x_scale[i], b, j);
        }
}
#endif

void TED_VARIANT_NAME(ted_matmul_i4_columns)(float *y, int ldy, const int8_t *x,
                                             const float *x_scale, int ldx, const uint8_t *W,
                                             const float *w_scale, const float *b, int rows,
                                             int K, int first, int last)
{
#if defined(__AVX512F__)
    if (__builtin_cpu_supports("avx512vnni")) {
        columns_vnni(y, ldy, x, x_scale, ldx, W, w_scale, b, rows, K, first, last);
        return;
    }
#endif
#if defined(__AVX2__)
    product_avx2_all(y, ldy, x, x_scale, ldx, W, w_scale, b, rows, K, first, last);
#else
    columns_portable(y, ldy, x, x_scale, ldx, W, w_scale, b, rows, K, first, last);
#endif
}
