/* The kernel of the int4 product (src/kernels/matmul.c): output columns of
 * y = x W^T + b with W in groups of 32 4-bit values (kernels.h,
 * TED_I4_GROUP) and x quantized to int8 per row, compiled once per
 * instruction set (kernels/variants.h). Each group's dot product is exact
 * in int32; it is multiplied by the group's scale and summed in float,
 * and the row's sum by x's scale.
 *
 *   avx512    with AVX512_VNNI (when the CPU has it), from PANEL_MIN_ROWS
 *             rows: panels of 16 columns unpacked once into int8 (below);
 *             under that, and for the columns left: two groups a step,
 *             64 bytes: vpdpbusd of w + 8 (unsigned, the nibbles as
 *             stored) and x, started from -8 * x's sums, in tiles of 4
 *             rows and 4 columns; without VNNI the avx2 code below.
 *   avx2      from PANEL_MIN_ROWS rows: panels of 8 columns (below);
 *             under that, and for the columns left: the nibbles of a
 *             group widened to 32 bytes (w - 8 in
 *             [-8, 7]), vpmaddubsw + vpmaddwd with the sign trick of
 *             variant/matmul_i8.c: each pair of products is at most
 *             2 * 8 * 127, so the int16 sums cannot saturate.
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

/* Rows of x a tile takes at once, against one column of W. */
enum { I4_TILE_ROWS = 4 };

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

/* y[i][j] for ROWS rows of x and one column j of W (row `w`, scales
 * `scale`); PRODUCT sums a group's products in fours. */
#define I4_TILE(NAME, ATTRIBUTE, PRODUCT)                                                       \
    ATTRIBUTE static inline __attribute__((always_inline)) void NAME(                          \
        float *y, int ldy, const int8_t *x, const float *x_scale, int ldx, const uint8_t *w,  \
        const float *scale, const float *b, int j, int groups, const int ROWS)               \
    {                                                                                          \
        __m256 acc[I4_TILE_ROWS];                                                              \
        for (int i = 0; i < ROWS; i++)                                                         \
            acc[i] = _mm256_setzero_ps();                                                      \
        for (int g = 0; g < groups; g++) {                                                     \
            __m256i wv = unpack_group(w + (size_t)g * (TED_I4_GROUP / 2));                     \
            __m256i magnitude = _mm256_abs_epi8(wv);                                           \
            __m256 s = _mm256_set1_ps(scale[g]);                                               \
            for (int i = 0; i < ROWS; i++) {                                                   \
                __m256i xv = _mm256_loadu_si256(                                               \
                    (const __m256i *)(x + (size_t)i * ldx + (size_t)g * TED_I4_GROUP));       \
                __m256i dots = PRODUCT(magnitude, _mm256_sign_epi8(xv, wv));                   \
                acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), s, acc[i]);                 \
            }                                                                                  \
        }                                                                                      \
        for (int i = 0; i < ROWS; i++)                                                         \
            y[(size_t)i * ldy + j] = finish(sum_lanes_ps(acc[i]), x_scale[i], b, j);          \
    }

static inline __m256i product_avx2(__m256i u, __m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}
I4_TILE(tile_avx2, , product_avx2)

/* Every tile of `rows` rows and columns [first, last). */
#define I4_COLUMNS(NAME, ATTRIBUTE, TILE)                                                      \
    ATTRIBUTE static void NAME(float *y, int ldy, const int8_t *x, const float *x_scale,      \
                               int ldx, const uint8_t *W, const float *w_scale, const float *b, \
                               int rows, int K, int first, int last)                          \
    {                                                                                          \
        int groups = (K + TED_I4_GROUP - 1) / TED_I4_GROUP;                                    \
        size_t row_bytes = (size_t)groups * (TED_I4_GROUP / 2);                                \
        for (int j = first; j < last; j++) {                                                   \
            const uint8_t *w = W + (size_t)j * row_bytes;                                      \
            const float *s = w_scale + (size_t)j * groups;                                     \
            int i = 0;                                                                         \
            for (; i + I4_TILE_ROWS <= rows; i += I4_TILE_ROWS)                                \
                TILE(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, x_scale + i, ldx, w, s, b, \
                     j, groups, I4_TILE_ROWS);                                                 \
            for (; i < rows; i++)                                                              \
                TILE(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, x_scale + i, ldx, w, s, b, \
                     j, groups, 1);                                                            \
        }                                                                                      \
    }
I4_COLUMNS(columns_avx2, , tile_avx2)

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
enum { VNNI_ROWS = 4, VNNI_COLUMNS = 4 };

/* Groups g and g + 1 of a row of W (`two`; else g alone, the second group
 * zeros) as 64 unsigned bytes w + 8 in [0, 15], in the order of x. */
TED_VNNI static inline __m512i unpack_pair(const uint8_t *w, bool two)
{
    __m256i p = two ? _mm256_loadu_si256((const __m256i *)w)
                    : _mm256_inserti128_si256(_mm256_setzero_si256(),
                                              _mm_loadu_si128((const __m128i *)w), 0);
    const __m256i low = _mm256_set1_epi8(15);
    __m256i lo = _mm256_and_si256(p, low), hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), low);
    __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);  /* lo0 lo1 hi0 hi1 */
    return _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0));         /* lo0 hi0 lo1 hi1 */
}

/* The scales of groups g and g + 1 (0 for a second group there is not),
 * each over the 8 lanes of its group's sums. */
TED_VNNI static inline __m512 pair_scales(const float *scale, bool two)
{
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(scale[0])),
                              _mm256_set1_ps(two ? scale[1] : 0.0f), 1);
}

/* y[i][j0 + c] for ROWS rows of x and COLUMNS columns of W, two groups a
 * step: vpdpbusd of the unsigned w + 8 and x, started from -8 * the sums
 * of x's bytes (vpdpbusd of 8 and x), gives (w + 8 - 8) . x in each lane.
 * x is read 64 bytes at a time: a lone last group reads the zeros past K. */
TED_VNNI static inline __attribute__((always_inline)) void tile_vnni(
    float *y, int ldy, const int8_t *x, const float *x_scale, int ldx, const uint8_t *W,
    const float *w_scale, const float *b, int j0, int groups, const int ROWS, const int COLUMNS)
{
    size_t row_bytes = (size_t)groups * (TED_I4_GROUP / 2);
    const __m512i eights = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
    __m512 acc[VNNI_ROWS][VNNI_COLUMNS];
    for (int i = 0; i < ROWS; i++)
        for (int c = 0; c < COLUMNS; c++)
            acc[i][c] = _mm512_setzero_ps();
    for (int g = 0; g < groups; g += 2) {
        bool two = g + 1 < groups;
        __m512i u[VNNI_COLUMNS];
        __m512 s[VNNI_COLUMNS];
        for (int c = 0; c < COLUMNS; c++) {
            u[c] = unpack_pair(W + (size_t)(j0 + c) * row_bytes + (size_t)g * 16, two);
            s[c] = pair_scales(w_scale + (size_t)(j0 + c) * groups + g, two);
        }
        for (int i = 0; i < ROWS; i++) {
            __m512i xv = _mm512_loadu_si512(x + (size_t)i * ldx + (size_t)g * TED_I4_GROUP);
            __m512i start = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, eights, xv));
            for (int c = 0; c < COLUMNS; c++)
                acc[i][c] = _mm512_fmadd_ps(
                    _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start, u[c], xv)), s[c], acc[i][c]);
        }
    }
    for (int i = 0; i < ROWS; i++)
        for (int c = 0; c < COLUMNS; c++)
            y[(size_t)i * ldy + j0 + c] =
                finish(_mm512_reduce_add_ps(acc[i][c]), x_scale[i], b, j0 + c);
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

/* Tiles of 4 rows and 4 columns, then the rows and columns left one by
 * one. */
TED_VNNI static void columns_vnni(float *y, int ldy, const int8_t *x, const float *x_scale,
                                  int ldx, const uint8_t *W, const float *w_scale,
                                  const float *b, int rows, int K, int first, int last)
{
    int groups = (K + TED_I4_GROUP - 1) / TED_I4_GROUP, j = first;
    if (rows >= PANEL_MIN_ROWS)
        for (; j + PANEL_COLUMNS <= last; j += PANEL_COLUMNS)
            panel_columns(y, ldy, x, x_scale, ldx, W, w_scale, b, rows, groups, j);
    for (; j + VNNI_COLUMNS <= last; j += VNNI_COLUMNS) {
        int i = 0;
        for (; i + VNNI_ROWS <= rows; i += VNNI_ROWS)
            tile_vnni(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, x_scale + i, ldx, W,
                      w_scale, b, j, groups, VNNI_ROWS, VNNI_COLUMNS);
        for (; i < rows; i++)
            tile_vnni(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, x_scale + i, ldx, W,
                      w_scale, b, j, groups, 1, VNNI_COLUMNS);
    }
    for (; j < last; j++) {
        int i = 0;
        for (; i + VNNI_ROWS <= rows; i += VNNI_ROWS)
            tile_vnni(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, x_scale + i, ldx, W,
                      w_scale, b, j, groups, VNNI_ROWS, 1);
        for (; i < rows; i++)
            tile_vnni(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, x_scale + i, ldx, W,
                      w_scale, b, j, groups, 1, 1);
    }
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
