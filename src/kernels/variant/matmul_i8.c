/* The kernel of ted_matmul_i8 (src/kernels/matmul.c): output columns of
 * y = x W^T + b with int8 W and x, compiled once per instruction set
 * (kernels/variants.h). The integer dot products are exact in int32; one
 * float multiply per output applies both scales.
 *
 *   avx512    vpdpbusd (AVX512_VNNI, when the CPU has it): 64 unsigned x
 *             signed byte products summed into 16 int32 lanes, without
 *             saturation. W + 128 (W xor 0x80) is the unsigned operand, x
 *             the signed one; the excess, 128 * sum(x row), is subtracted
 *             at the end (the sums come with the quantized x). Without
 *             VNNI, the avx2 code below.
 *   avx2      vpmaddubsw + vpmaddwd on 32 bytes: |W| is the unsigned
 *             operand and x takes W's sign (vpsignb), so each pair of
 *             products is at most 2 * 128 * 127 = 32512 and the int16 sums
 *             cannot saturate (x in [-127, 127], W in [-128, 127]: a -128
 *             from another quantizer is exact too);
 *   portable  plain C, widened to int32.
 *
 * x comes quantized (ted_quantize_rows below), rows `ldx` bytes apart,
 * zero past column K. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/simd.h"
#include "kernels/variants.h"

/* How far ahead of the tile being computed W is fetched, in bytes, and
 * into which cache: the second level (__builtin_prefetch locality 2,
 * prefetcht1). A tile reads 4 rows of W at once, 4 short streams that the
 * hardware prefetcher of some CPUs does not follow (measurements:
 * docs/performance.md#prefetch). */
enum { PREFETCH_BYTES = 8192, PREFETCH_LOCALITY = 2 };

#if defined(__AVX2__)
#include <immintrin.h>
#endif

/* x . w over n bytes, in int32. */
static inline int32_t dot_i8(const int8_t *x, const int8_t *w, int n)
{
    int32_t s = 0;
    for (int k = 0; k < n; k++)
        s += (int32_t)x[k] * w[k];
    return s;
}

static inline float dequantize(int32_t dot, float x_scale, float w_scale, const float *b)
{
    float v = (float)dot * (x_scale * w_scale);
    /* rounded before the bias is added, as in the vector kernels: the sets
     * compile with -ffp-contract=fast, which would fuse the two here */
#if defined(__x86_64__) || defined(__i386__)
    __asm__("" : "+x"(v));
#elif defined(__aarch64__)
    __asm__("" : "+w"(v));
#endif
    return b ? v + *b : v;
}

/* Groups [first, last) of W packed for vpdpbusd (kernels.h's ted_pack_i8
 * layout: 16 rows a group, 4 bytes of k of each row a dword, W + 128) in
 * plain C, each byte widened to int32: the dots are exact, as vpdpbusd's,
 * and y the same floats. The bytes past K are 128 (W = 0), so x's padding
 * adds nothing. */
static void packed_plain(float *y, int ldy, const int8_t *x, const float *x_scale, int ldx,
                         const uint8_t *packed, const float *w_scale, const float *b, int rows,
                         int K, int out, int first, int last)
{
    enum { ROWS = 16 };
    int K4 = (K + 3) / 4;
    for (int g = first; g < last; g++) {
        const uint8_t *group = packed + (size_t)g * K4 * 64;
        int columns = out - g * ROWS < ROWS ? out - g * ROWS : ROWS;
        for (int i = 0; i < rows; i++) {
            const int8_t *xi = x + (size_t)i * ldx;
            int32_t dot[ROWS] = {0};
            for (int k4 = 0; k4 < K4; k4++) {
                const uint8_t *v = group + (size_t)k4 * 64;
                const int8_t *xk = xi + 4 * k4;
                for (int j = 0; j < ROWS; j++)
                    for (int e = 0; e < 4; e++)
                        dot[j] += ((int32_t)v[4 * j + e] - 128) * xk[e];
            }
            for (int j = 0; j < columns; j++) {
                int c = g * ROWS + j;
                y[(size_t)i * ldy + c] =
                    dequantize(dot[j], x_scale[i], w_scale[c], b ? b + c : NULL);
            }
        }
    }
}

/* ---- avx2 (and avx512 without VNNI): 2 rows x 4 columns per tile ---------- */
#if defined(__AVX2__)

static inline int32_t sum_lanes_256(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* The sums of the lanes of acc[0], acc[1], acc[2] and acc[3], in order. */
static inline __m128i sum_lanes_4x256(const __m256i acc[4])
{
    __m256i pairs01 = _mm256_hadd_epi32(acc[0], acc[1]);
    __m256i pairs23 = _mm256_hadd_epi32(acc[2], acc[3]);
    __m256i halves = _mm256_hadd_epi32(pairs01, pairs23);  /* 0 1 2 3 | 0 1 2 3 */
    return _mm_add_epi32(_mm256_castsi256_si128(halves), _mm256_extracti128_si256(halves, 1));
}

/* y[0 .. 4) = dequantize() of four columns' dots, w_scales their scales
 * and b (or NULL) their biases. */
static inline void dequantize_four(float *y, __m128i dots, float x_scale, __m128 w_scales,
                                   const float *b)
{
    __m128 v = _mm_mul_ps(_mm_cvtepi32_ps(dots), _mm_mul_ps(_mm_set1_ps(x_scale), w_scales));
    _mm_storeu_ps(y, b ? _mm_add_ps(v, _mm_loadu_ps(b)) : v);
}

/* y[i][j] for ROWS rows of x and 4 rows of W; `next` (or NULL): 4 rows of
 * W PREFETCH_BYTES further on, fetched into cache meanwhile. */
static inline __attribute__((always_inline)) void tile_avx2(
    float *y, int ldy, const int8_t *x, const float *x_scale, int ldx, const int8_t *W,
    const int8_t *next, const float *w_scale, const float *b, int K, const int ROWS)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[2][4];
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[i][j] = _mm256_setzero_si256();
    int k = 0;
    for (; k + 32 <= K; k += 32) {
        /* one column's weights at a time: the 8 sums, 2 rows of x, w, |w|
         * and the ones take 13 of the 16 registers, so no sum spills to the
         * stack (docs/performance.md#int8-kernels) */
        __m256i xv[2];
#pragma GCC unroll 2
        for (int i = 0; i < ROWS; i++)
            xv[i] = _mm256_loadu_si256((const __m256i *)(x + (size_t)i * ldx + k));
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(W + (size_t)j * K + k));
            __m256i magnitude = _mm256_abs_epi8(w);  /* -128 gives 0x80: 128 unsigned */
            if (next && (k & 63) == 0)
                __builtin_prefetch(next + (size_t)j * K + k, 0, PREFETCH_LOCALITY);
#pragma GCC unroll 2
            for (int i = 0; i < ROWS; i++) {
                __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(xv[i], w));
                acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(pairs, ones));
            }
        }
    }
    const __m128 w_scales = _mm_loadu_ps(w_scale);
#pragma GCC unroll 2
    for (int i = 0; i < ROWS; i++) {
        __m128i dots = sum_lanes_4x256(acc[i]);
        if (k < K) {
            int32_t tails[4];
            for (int j = 0; j < 4; j++)
                tails[j] = dot_i8(x + (size_t)i * ldx + k, W + (size_t)j * K + k, K - k);
            dots = _mm_add_epi32(dots, _mm_loadu_si128((const __m128i *)tails));
        }
        dequantize_four(y + (size_t)i * ldy, dots, x_scale[i], w_scales, b);
    }
}

static void columns_avx2(float *y, int ldy, const int8_t *x, const float *x_scale,
                         const int32_t *x_sum, int ldx, const int8_t *W, const int8_t *next,
                         const float *w_scale, const float *b, int rows, int K)
{
    (void)x_sum;  /* the sign trick needs no correction */
    int i = 0;
    for (; i + 2 <= rows; i += 2)
        tile_avx2(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, x_scale + i, ldx, W,
                  i == 0 ? next : NULL, w_scale, b, K, 2);
    if (i < rows)
        tile_avx2(y + (size_t)i * ldy, ldy, x + (size_t)i * ldx, x_scale + i, ldx, W,
                  i == 0 ? next : NULL, w_scale, b, K, 1);
}
#define FOUR_COLUMNS columns_avx2
#endif

/* ---- avx512 with VNNI: 6 rows x 4 columns per tile ------------------------- */
#if defined(__AVX512F__)
#define TED_VNNI __attribute__((target("avx512vnni,avx512bw,avx512f")))
enum { TILE_ROWS = 6 };

/* acc + the 64 products of u (unsigned) and s (signed) bytes, summed in
 * fours (vpdpbusd). In assembly: the intrinsic, in a loop of several
 * accumulators, made GCC copy every accumulator to another register and
 * back around each instruction (docs/performance.md#the-encoder). */
TED_VNNI static inline __m512i dpbusd(__m512i acc, __m512i u, __m512i s)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
    return acc;
}

/* acc[i][j] += the products of 64 bytes (those of mask m) of row i of x and
 * row j of W, from k on; with FETCH, 4 rows of W further on (`next`) are
 * fetched into cache meanwhile. */
TED_VNNI static inline __attribute__((always_inline)) void step_vnni(
    __m512i acc[][4], const int8_t *x, int ldx, const int8_t *W, const int8_t *next, int K,
    int k, __mmask64 m, const int ROWS, const bool FETCH)
{
    const __m512i shift = _mm512_set1_epi8((char)0x80);
    __m512i w[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        w[j] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, W + (size_t)j * K + k), shift);
        if (FETCH)
            __builtin_prefetch(next + (size_t)j * K + k, 0, PREFETCH_LOCALITY);
    }
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) {
        __m512i xi = _mm512_maskz_loadu_epi8(m, x + (size_t)i * ldx + k);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[i][j] = dpbusd(acc[i][j], w[j], xi);
    }
}

/* y[i][j] for ROWS (up to TILE_ROWS) rows of x and 4 rows of W, in one
 * masked loop; `next` (or NULL): 4 rows of W PREFETCH_BYTES further on,
 * fetched into cache while this tile is computed, so that later columns do
 * not wait on memory. */
TED_VNNI static inline __attribute__((always_inline)) void tile_vnni(
    float *y, int ldy, const int8_t *x, const float *x_scale, const int32_t *x_sum, int ldx,
    const int8_t *W, const int8_t *next, const float *w_scale, const float *b, int K,
    const int ROWS)
{
    __m512i acc[TILE_ROWS][4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; i++)
            acc[i][j] = _mm512_setzero_si512();
    for (int k = 0; k < K; k += 64) {
        /* The last vector loads only the columns left: no byte past a row
         * (W + 128 is then 128 against an x of 0). */
        __mmask64 m = K - k >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (K - k)) - 1;
        step_vnni(acc, x, ldx, W, next, K, k, m, ROWS, next != NULL);
    }
    const __m128 w_scales = _mm_loadu_ps(w_scale);
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) {
        __m256i halves[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            halves[j] = _mm256_add_epi32(_mm512_castsi512_si256(acc[i][j]),
                                         _mm512_extracti64x4_epi64(acc[i][j], 1));
        /* Wraps modulo 2^32 like the sums: the difference is exact. */
        __m128i excess = _mm_set1_epi32((int32_t)((uint32_t)x_sum[i] << 7));
        __m128i dots = _mm_sub_epi32(sum_lanes_4x256(halves), excess);
        dequantize_four(y + (size_t)i * ldy, dots, x_scale[i], w_scales, b);
    }
}

/* The sums of the lanes of a[0], a[1], a[2] and a[3], in order: pairs of
 * unpacks and adds within each 128-bit lane, then the four lanes added. */
TED_VNNI static inline __m128i sum_lanes_4x512(const __m512i a[4])
{
    __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]),
                                  _mm512_unpackhi_epi32(a[0], a[1]));
    __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]),
                                  _mm512_unpackhi_epi32(a[2], a[3]));
    __m512i abcd = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
    __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(abcd),
                                    _mm512_extracti64x4_epi64(abcd, 1));
    return _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
}

/* tile_vnni's product for TILE_ROWS rows, the tile of a batch's rows: the
 * whole vectors in a loop without masks, then the masked last one; the
 * sums of the lanes by unpacks (faster here, slower for a lone row's tile
 * in a decoder step: docs/performance.md#int8-kernels). */
TED_VNNI static inline __attribute__((always_inline)) void full_tile_vnni(
    float *y, int ldy, const int8_t *x, const float *x_scale, const int32_t *x_sum, int ldx,
    const int8_t *W, const int8_t *next, const float *w_scale, const float *b, int K,
    const bool FETCH)
{
    const int ROWS = TILE_ROWS;
    __m512i acc[TILE_ROWS][4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; i++)
            acc[i][j] = _mm512_setzero_si512();
    int k = 0;
    for (; k + 64 <= K; k += 64)
        step_vnni(acc, x, ldx, W, next, K, k, ~(__mmask64)0, ROWS, FETCH);
    if (k < K)
        step_vnni(acc, x, ldx, W, next, K, k, ((__mmask64)1 << (K - k)) - 1, ROWS, FETCH);
    const __m128 w_scales = _mm_loadu_ps(w_scale);
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) {
        /* Wraps modulo 2^32 like the sums: the difference is exact. */
        __m128i excess = _mm_set1_epi32((int32_t)((uint32_t)x_sum[i] << 7));
        __m128i dots = _mm_sub_epi32(sum_lanes_4x512(acc[i]), excess);
        dequantize_four(y + (size_t)i * ldy, dots, x_scale[i], w_scales, b);
    }
}

/* The first tile of rows fetches W ahead. */
TED_VNNI static void columns_vnni(float *y, int ldy, const int8_t *x, const float *x_scale,
                                  const int32_t *x_sum, int ldx, const int8_t *W,
                                  const int8_t *next, const float *w_scale, const float *b,
                                  int rows, int K)
{
    int i = 0;
    for (; i + TILE_ROWS <= rows; i += TILE_ROWS) {
        float *yi = y + (size_t)i * ldy;
        const int8_t *xi = x + (size_t)i * ldx;
        if (i == 0 && next)
            full_tile_vnni(yi, ldy, xi, x_scale, x_sum, ldx, W, next, w_scale, b, K, true);
        else
            full_tile_vnni(yi, ldy, xi, x_scale + i, x_sum + i, ldx, W, NULL, w_scale, b, K,
                           false);
    }
    float *yi = y + (size_t)i * ldy;
    const int8_t *xi = x + (size_t)i * ldx;
    const int8_t *n = i == 0 ? next : NULL;
    switch (rows - i) {
    case 5: tile_vnni(yi, ldy, xi, x_scale + i, x_sum + i, ldx, W, n, w_scale, b, K, 5); break;
    case 4: tile_vnni(yi, ldy, xi, x_scale + i, x_sum + i, ldx, W, n, w_scale, b, K, 4); break;
    case 3: tile_vnni(yi, ldy, xi, x_scale + i, x_sum + i, ldx, W, n, w_scale, b, K, 3); break;
    case 2: tile_vnni(yi, ldy, xi, x_scale + i, x_sum + i, ldx, W, n, w_scale, b, K, 2); break;
    case 1: tile_vnni(yi, ldy, xi, x_scale + i, x_sum + i, ldx, W, n, w_scale, b, K, 1); break;
    }
}

static void columns_avx512(float *y, int ldy, const int8_t *x, const float *x_scale,
                           const int32_t *x_sum, int ldx, const int8_t *W, const int8_t *next,
                           const float *w_scale, const float *b, int rows, int K)
{
    if (__builtin_cpu_supports("avx512vnni"))
        columns_vnni(y, ldy, x, x_scale, x_sum, ldx, W, next, w_scale, b, rows, K);
    else
        columns_avx2(y, ldy, x, x_scale, x_sum, ldx, W, next, w_scale, b, rows, K);
}
#undef FOUR_COLUMNS
#define FOUR_COLUMNS columns_avx512
#endif

/* ---- avx512 with VNNI: W packed for vpdpbusd ------------------------------
 * ted_pack_i8's layout (variants.h): group g of 16 output columns holds,
 * for each 4 bytes of k, the 16 columns' 4 weights in one 64-byte vector,
 * already W + 128. A step of k loads each group's vector once and
 * multiplies it by each row's 4 bytes of x, broadcast: the 16 lanes of an
 * accumulator are 16 outputs, so a tile ends without lane sums. */
#if defined(__AVX512F__)
enum { GROUP = 16, PACKED_TILE_GROUPS = 4 };

/* y[i][0 .. columns) for ROWS (up to TILE_ROWS) rows of x and GROUPS
 * groups of the packed W (group_bytes apart), K4 steps of 4 bytes of k. */
TED_VNNI static inline __attribute__((always_inline)) void packed_tile(
    float *y, int ldy, const int8_t *x, const float *x_scale, const int32_t *x_sum, int ldx,
    const uint8_t *W, size_t group_bytes, const float *w_scale, const float *b, int K4,
    int columns, const int ROWS, const int GROUPS)
{
    __m512i acc[TILE_ROWS][PACKED_TILE_GROUPS];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++)
#pragma GCC unroll 4
        for (int g = 0; g < GROUPS; g++)
            acc[i][g] = _mm512_setzero_si512();
    for (int k4 = 0; k4 < K4; k4++) {
        __m512i w[PACKED_TILE_GROUPS];
#pragma GCC unroll 4
        for (int g = 0; g < GROUPS; g++)
            w[g] = _mm512_load_si512((const void *)(W + g * group_bytes + (size_t)k4 * 64));
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; i++) {
            int32_t four;
            __builtin_memcpy(&four, x + (size_t)i * ldx + 4 * (size_t)k4, 4);
            __m512i xi = _mm512_set1_epi32(four);
#pragma GCC unroll 4
            for (int g = 0; g < GROUPS; g++)
                acc[i][g] = dpbusd(acc[i][g], w[g], xi);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) {
        /* Wraps modulo 2^32 like the sums: the difference is exact. */
        __m512i excess = _mm512_set1_epi32((int32_t)((uint32_t)x_sum[i] << 7));
        __m512 xs = _mm512_set1_ps(x_scale[i]);
#pragma GCC unroll 4
        for (int g = 0; g < GROUPS; g++) {
            int left = columns - g * GROUP;
            __mmask16 m = left >= GROUP ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
            __m512 scales = _mm512_mul_ps(xs, _mm512_maskz_loadu_ps(m, w_scale + g * GROUP));
            __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][g], excess)),
                                     scales);
            /* rounded before the bias is added, as by the kernel of W as
             * stored: a row's outputs do not depend on the rows beside it */
            __asm__("" : "+v"(v));
            if (b)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + g * GROUP));
            _mm512_mask_storeu_ps(y + (size_t)i * ldy + g * GROUP, m, v);
        }
    }
}

#define PACKED_CASE(R, G)                                                                      \
    case (R) * 8 + (G):                                                                         \
        packed_tile(y, ldy, x, x_scale, x_sum, ldx, W, group_bytes, w_scale, b, K4, columns,  \
                    R, G);                                                                      \
        break;

TED_VNNI static void any_packed_tile(float *y, int ldy, const int8_t *x, const float *x_scale,
                                     const int32_t *x_sum, int ldx, const uint8_t *W,
                                     size_t group_bytes, const float *w_scale, const float *b,
                                     int K4, int columns, int rows, int groups)
{
    switch (rows * 8 + groups) {
        PACKED_CASE(1, 1) PACKED_CASE(2, 1) PACKED_CASE(3, 1)
        PACKED_CASE(4, 1) PACKED_CASE(5, 1) PACKED_CASE(6, 1)
        PACKED_CASE(1, 2) PACKED_CASE(2, 2) PACKED_CASE(3, 2)
        PACKED_CASE(4, 2) PACKED_CASE(5, 2) PACKED_CASE(6, 2)
        PACKED_CASE(1, 3) PACKED_CASE(2, 3) PACKED_CASE(3, 3)
        PACKED_CASE(4, 3) PACKED_CASE(5, 3) PACKED_CASE(6, 3)
        PACKED_CASE(1, 4) PACKED_CASE(2, 4) PACKED_CASE(3, 4)
        PACKED_CASE(4, 4) PACKED_CASE(5, 4) PACKED_CASE(6, 4)
    }
}
#undef PACKED_CASE

/* r[0 .. 16), 16 rows of 16 dwords, transposed in place: r[s] becomes
 * dword s of every row, row j in lane j (unpacks within 128-bit lanes,
 * then the 4 x 4 transpose of the lanes). */
TED_VNNI static inline void transpose_dwords(__m512i r[16])
{
    __m512i t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    /* r[4q + e], lane l: rows 4q .. 4q + 3 at dword 4l + e */
#pragma GCC unroll 4
    for (int q = 0; q < 16; q += 4) {
        r[q] = _mm512_unpacklo_epi64(t[q], t[q + 2]);
        r[q + 1] = _mm512_unpackhi_epi64(t[q], t[q + 2]);
        r[q + 2] = _mm512_unpacklo_epi64(t[q + 1], t[q + 3]);
        r[q + 3] = _mm512_unpackhi_epi64(t[q + 1], t[q + 3]);
    }
#pragma GCC unroll 4
    for (int e = 0; e < 4; e++) {
        __m512i v0 = _mm512_shuffle_i32x4(r[e], r[4 + e], 0x44);
        __m512i v1 = _mm512_shuffle_i32x4(r[e], r[4 + e], 0xee);
        __m512i v2 = _mm512_shuffle_i32x4(r[8 + e], r[12 + e], 0x44);
        __m512i v3 = _mm512_shuffle_i32x4(r[8 + e], r[12 + e], 0xee);
        t[e] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        t[4 + e] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
        t[8 + e] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        t[12 + e] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

/* Group g of W (out, K) packed into `packed` (K4 * 64 bytes): 64 bytes of
 * k of its 16 rows at a time, transposed as dwords and flipped by 0x80;
 * the rows past `out` and the bytes past K are W = 0 (0x80). The next
 * group's rows follow in memory, fetched into cache one group ahead. */
TED_VNNI static void pack_group(uint8_t *packed, const int8_t *W, int K, int out, int g)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    int n = out - g * GROUP < GROUP ? out - g * GROUP : GROUP;
    int next = out - (g + 1) * GROUP;  /* rows of the next group, if positive */
    int K4 = (K + 3) / 4;
    const int8_t *first = W + (size_t)g * GROUP * K;
    for (int k = 0; k < K; k += 64) {
        __mmask64 m = K - k >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (K - k)) - 1;
        __m512i r[GROUP];
        /* 16 short streams, which the hardware prefetcher does not follow:
         * the same bytes of the next group's rows are fetched meanwhile */
#pragma GCC unroll 16
        for (int j = 0; j < GROUP; j++) {
            const int8_t *row = first + (size_t)(j < n ? j : 0) * K;
            r[j] = _mm512_maskz_loadu_epi8(j < n ? m : 0, row + k);
            if (j < next)
                __builtin_prefetch(row + (size_t)GROUP * K + k, 0, 3);
        }
        transpose_dwords(r);
        int steps = K4 - k / 4 < GROUP ? K4 - k / 4 : GROUP;
#pragma GCC unroll 16
        for (int s = 0; s < steps; s++)
            _mm512_store_si512((void *)(packed + (size_t)(k / 4 + s) * 64),
                               _mm512_xor_si512(r[s], flip));
    }
}

int TED_VARIANT_NAME(ted_pack_i8)(uint8_t *packed, const int8_t *W, int K, int out, int first,
                                  int last)
{
    if (!__builtin_cpu_supports("avx512vnni"))
        return 0;
    size_t group_bytes = (size_t)(K + 3) / 4 * 64;
    for (int g = first; g < last; g++)
        pack_group(packed + (size_t)g * group_bytes, W, K, out, g);
    return 1;
}

TED_VNNI static void packed_vnni(float *y, int ldy, const int8_t *x, const float *x_scale,
                                 const int32_t *x_sum, int ldx, const uint8_t *packed,
                                 const float *w_scale, const float *b, int rows, int K, int out,
                                 int first, int last)
{
    int K4 = (K + 3) / 4;
    size_t group_bytes = (size_t)K4 * 64;
    for (int g = first; g < last; g += PACKED_TILE_GROUPS) {
        int groups = last - g < PACKED_TILE_GROUPS ? last - g : PACKED_TILE_GROUPS;
        int column = g * GROUP;
        int columns = out - column < groups * GROUP ? out - column : groups * GROUP;
        for (int i = 0; i < rows; i += TILE_ROWS)
            any_packed_tile(y + (size_t)i * ldy + column, ldy, x + (size_t)i * ldx,
                            x_scale + i, x_sum + i, ldx, packed + (size_t)g * group_bytes,
                            group_bytes, w_scale + column, b ? b + column : NULL, K4, columns,
                            rows - i < TILE_ROWS ? rows - i : TILE_ROWS, groups);
    }
}
/* A mapped file's groups meet a CPU without VNNI too: plain C then. */
void TED_VARIANT_NAME(ted_matmul_i8_packed)(float *y, int ldy, const int8_t *x,
                                            const float *x_scale, const int32_t *x_sum,
                                            int ldx, const uint8_t *packed,
                                            const float *w_scale, const float *b, int rows,
                                            int K, int out, int first, int last)
{
    if (__builtin_cpu_supports("avx512vnni"))
        packed_vnni(y, ldy, x, x_scale, x_sum, ldx, packed, w_scale, b, rows, K, out, first,
                    last);
    else
        packed_plain(y, ldy, x, x_scale, ldx, packed, w_scale, b, rows, K, out, first, last);
}
#else
/* Without AVX-512 the sets read W as stored (ted_matmul_i8_columns). */
int TED_VARIANT_NAME(ted_pack_i8)(uint8_t *packed, const int8_t *W, int K, int out, int first,
                                  int last)
{
    (void)packed, (void)W, (void)K, (void)out, (void)first, (void)last;
    return 0;
}

/* The sets without VNNI meet packed groups only in a mapped file. */
void TED_VARIANT_NAME(ted_matmul_i8_packed)(float *y, int ldy, const int8_t *x,
                                            const float *x_scale, const int32_t *x_sum,
                                            int ldx, const uint8_t *packed,
                                            const float *w_scale, const float *b, int rows,
                                            int K, int out, int first, int last)
{
    (void)x_sum;
    packed_plain(y, ldy, x, x_scale, ldx, packed, w_scale, b, rows, K, out, first, last);
}
#endif

/* ---- portable: 4 columns at a time ------------------------------------------ */
#if !defined(FOUR_COLUMNS)
static void columns_portable(float *y, int ldy, const int8_t *x, const float *x_scale,
                             const int32_t *x_sum, int ldx, const int8_t *W, const int8_t *next,
                             const float *w_scale, const float *b, int rows, int K)
{
    (void)x_sum;
    (void)next;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < 4; j++)
            y[(size_t)i * ldy + j] =
                dequantize(dot_i8(x + (size_t)i * ldx, W + (size_t)j * K, K), x_scale[i],
                           w_scale[j], b ? b + j : NULL);
}
#define FOUR_COLUMNS columns_portable
#endif

/* Rows of x taken together: a block stays in the first-level cache while
 * every column of W passes (e.g. 32 rows of 512 bytes: 16 KiB). */
enum { ROW_BLOCK = 32 };

static void row_block(float *y, int ldy, const int8_t *x, const float *x_scale,
                      const int32_t *x_sum, int ldx, const int8_t *W, const float *w_scale,
                      const float *b, int rows, int K, int first, int last)
{
    int ahead = PREFETCH_BYTES / K / 4 * 4;
    ahead = ahead < 4 ? 4 : ahead;
    int n = first;
    for (; n + 4 <= last; n += 4)
        FOUR_COLUMNS(y + n, ldy, x, x_scale, x_sum, ldx, W + (size_t)n * K,
                     n + ahead + 4 <= last ? W + (size_t)(n + ahead) * K : NULL, w_scale + n,
                     b ? b + n : NULL, rows, K);
    for (; n < last; n++)
        for (int i = 0; i < rows; i++)
            y[(size_t)i * ldy + n] =
                dequantize(dot_i8(x + (size_t)i * ldx, W + (size_t)n * K, K), x_scale[i],
                           w_scale[n], b ? b + n : NULL);
}

void TED_VARIANT_NAME(ted_matmul_i8_columns)(float *y, int ldy, const int8_t *x,
                                             const float *x_scale, const int32_t *x_sum,
                                             int ldx, const int8_t *W, const float *w_scale,
                                             const float *b, int rows, int K, int first,
                                             int last)
{
    for (int r = 0; r < rows; r += ROW_BLOCK)
        row_block(y + (size_t)r * ldy, ldy, x + (size_t)r * ldx, x_scale + r, x_sum + r, ldx, W,
                  w_scale, b, rows - r < ROW_BLOCK ? rows - r : ROW_BLOCK, K, first, last);
}

/* ---- quantizing the activations --------------------------------------------- */

/* max |x[k]| over n floats; *poison: 0, or NaN when x holds a NaN or an
 * infinity (the sum of x[k] * 0). Four vectors at a time, each into its
 * own maximum and sum: one chain of compare and select would bound the
 * loop by its latency. */
static float max_magnitude(const float *x, int n, float *poison)
{
    enum { CHAINS = 4 };
    const ted_ivec magnitude_bits = (ted_ivec){0} + 0x7fffffff;
    ted_vec best[CHAINS] = {{0}}, nonfinite[CHAINS] = {{0}};
    int k = 0;
    for (; k + CHAINS * TED_VEC_FLOATS <= n; k += CHAINS * TED_VEC_FLOATS)
#pragma GCC unroll 4
        for (int c = 0; c < CHAINS; c++) {
            ted_vec v = ted_vec_load(x + k + c * TED_VEC_FLOATS);
            ted_vec a = (ted_vec)((ted_ivec)v & magnitude_bits);
            best[c] = ted_vec_select(a > best[c], a, best[c]);
            nonfinite[c] += v * 0.0f;
        }
    for (; k + TED_VEC_FLOATS <= n; k += TED_VEC_FLOATS) {
        ted_vec v = ted_vec_load(x + k);
        ted_vec a = (ted_vec)((ted_ivec)v & magnitude_bits);
        best[0] = ted_vec_select(a > best[0], a, best[0]);
        nonfinite[0] += v * 0.0f;
    }
    float m = 0.0f, p = 0.0f;
    for (int c = 0; c < CHAINS; c++)
        for (int lane = 0; lane < TED_VEC_FLOATS; lane++) {
            m = best[c][lane] > m ? best[c][lane] : m;
            p += nonfinite[c][lane];
        }
    for (; k < n; k++) {
        m = fabsf(x[k]) > m ? fabsf(x[k]) : m;
        p += x[k] * 0.0f;
    }
    *poison = p;
    return m;
}

/* The sum of n bytes, n a multiple of 64. */
static int32_t sum_bytes(const int8_t *q, int n)
{
#if defined(__AVX2__)
    const __m256i one_bytes = _mm256_set1_epi8(1), one_pairs = _mm256_set1_epi16(1);
    __m256i sums = _mm256_setzero_si256();
    for (int k = 0; k < n; k += 32) {
        __m256i bytes = _mm256_loadu_si256((const __m256i *)(q + k));
        sums = _mm256_add_epi32(sums,
                                _mm256_madd_epi16(_mm256_maddubs_epi16(one_bytes, bytes), one_pairs));
    }
    return sum_lanes_256(sums);
#else
    int32_t s = 0;
    for (int k = 0; k < n; k++)
        s += q[k];
    return s;
#endif
}

/* x * factor rounded to the nearest integer (ties to even), in [-127, 127]
 * (NaN gives 0). */
static inline int8_t quantize_one(float x, float factor)
{
    float v = rintf(x * factor);
    return v >= 127.0f ? 127 : v <= -127.0f ? -127 : v == v ? (int8_t)v : 0;
}

/* q (n) = x (n) * factor, rounded as quantize_one. */
static void quantize_row(int8_t *q, const float *x, int n, float factor)
{
    int k = 0;
#if defined(__AVX512F__)
    const __m512 f = _mm512_set1_ps(factor);
    for (; k + 16 <= n; k += 16) {
        __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + k), f));
        _mm_storeu_si128((__m128i *)(q + k), _mm512_cvtsepi32_epi8(v));
    }
#elif defined(__AVX2__)
    const __m256 f = _mm256_set1_ps(factor);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (; k + 32 <= n; k += 32) {
        __m256i v[4];
        for (int p = 0; p < 4; p++)
            v[p] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8 * p), f));
        __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]),
                                           _mm256_packs_epi32(v[2], v[3]));
        _mm256_storeu_si256((__m256i *)(q + k), _mm256_permutevar8x32_epi32(bytes, order));
    }
#endif
    for (; k < n; k++)
        q[k] = quantize_one(x[k], factor);
}

void TED_VARIANT_NAME(ted_quantize_rows)(int8_t *q, float *scale, int32_t *sum,
                                         const float *x, int rows, int K, int ldq)
{
    for (int i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * K;
        int8_t *qi = q + (size_t)i * ldq;
        /* a NaN or an infinity in the row makes its products NaN, as in
         * float32, instead of a finite number from whatever it quantized to */
        float poison;
        float m = max_magnitude(xi, K, &poison);
        scale[i] = m / 127.0f + poison;
        quantize_row(qi, xi, K, m > 0.0f ? 127.0f / m : 0.0f);
        for (int k = K; k < ldq; k++)
            qi[k] = 0;
        sum[i] = sum_bytes(qi, ldq);
    }
}

float TED_VARIANT_NAME(ted_max_magnitude)(const float *x, size_t n)
{
    enum { CHUNK = 1 << 28 };
    float m = 0.0f, poison = 0.0f;
    for (size_t k = 0; k < n; k += CHUNK) {
        float p, c = max_magnitude(x + k, n - k < CHUNK ? (int)(n - k) : CHUNK, &p);
        m = c > m ? c : m;
        poison += p;
    }
    return m + poison;
}

void TED_VARIANT_NAME(ted_quantize_rows_with)(int8_t *q, int32_t *sum, const float *x,
                                              int rows, int K, int ldq, float factor)
{
    for (int i = 0; i < rows; i++) {
        int8_t *qi = q + (size_t)i * ldq;
        quantize_row(qi, x + (size_t)i * K, K, factor);
        /* the vector conversions saturate to -128; Marian's intgemm clips to -127 */
        for (int k = 0; k < K; k++)
            qi[k] = qi[k] < -127 ? -127 : qi[k];
        for (int k = K; k < ldq; k++)
            qi[k] = 0;
        sum[i] = sum_bytes(qi, ldq);
    }
}
