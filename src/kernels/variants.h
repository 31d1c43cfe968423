/* The kernels compiled once per instruction set.
 *
 * The sources of src/kernels/variant/ are compiled several times (the
 * Makefile's KERNEL_VARIANTS), each time with the flags of one instruction
 * set and -DTED_VARIANT=NAME. TED_VARIANT_NAME suffixes every name they
 * define (TED_VARIANT_NAME(ted_scaled_dots) is ted_scaled_dots_avx2), so
 * the copies link side by side, and each copy fills one ted_kernel_table.
 * src/kernels/dispatch.c picks one table at run time; the kernels.h
 * functions call through it, one indirect call per kernel call.
 *
 * A new kernel is a field of ted_kernel_table, its declaration below, its
 * function in a file of variant/ (compiled for every set) and its entry in
 * variant/table.c. Only functions of variant/ may use the variant's
 * instructions: the rest of ted runs before the choice, on any CPU. */
#ifndef TED_KERNELS_VARIANTS_H
#define TED_KERNELS_VARIANTS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* Panels [first, last) of y (rows, ldy) = x (rows, K) W^T + b, W (out, K)
 * in panels (kernels.h, ted_pack_panels); the last panel's columns past
 * `out` are not written. Any number of rows. k runs in blocks of k_block,
 * each over every tile of rows before the next. */
typedef void ted_matmul_panels_fn(float *y, int ldy, const float *x, const float *panels,
                                  const float *b, int rows, int K, int out, int first,
                                  int last, int k_block);

/* Output columns [first, last) of y (rows, ldy) = dequantized int8 product
 * of x (rows, K; rows ldx bytes apart, zero from K to ldx; x_sum[i] the sum
 * of row i) and W (out, K), each row of x times x_scale[i], each row of W
 * times w_scale[j], + b. */
typedef void ted_matmul_i8_columns_fn(float *y, int ldy, const int8_t *x, const float *x_scale,
                                      const int32_t *x_sum, int ldx, const int8_t *W,
                                      const float *w_scale, const float *b, int rows, int K,
                                      int first, int last);

/* W (out, K) int8 packed for AVX512_VNNI's vpdpbusd: groups of 16 output
 * columns (rows of W), group g at packed + g * K4 * 64, K4 = (K + 3) / 4;
 * within a group, step s holds the 16 columns' bytes 4s .. 4s + 3 as one
 * 64-byte vector, packed[(g * K4 + s) * 64 + 4 * j + e] =
 * W[16g + j][4s + e] + 128 (xor 0x80: the unsigned operand), and 128 (a
 * zero weight) past `out` and past K. Packs groups [first, last) and
 * returns 1, or returns 0 and writes nothing when the set's kernel does
 * not read packed weights (no VNNI). packed is 64-byte aligned. */
typedef int ted_pack_i8_fn(uint8_t *packed, const int8_t *W, int K, int out, int first,
                           int last);

/* Groups [first, last) (16 output columns each; the columns past `out` not
 * written) of y (rows, ldy) = the int8 product of x (as for
 * ted_matmul_i8_columns_fn) and W packed by ted_pack_i8_fn. Every set has
 * one (a mapped file holds W packed whatever the CPU): vpdpbusd with
 * AVX512_VNNI, plain C elsewhere, the same floats. */
typedef void ted_matmul_i8_packed_fn(float *y, int ldy, const int8_t *x, const float *x_scale,
                                     const int32_t *x_sum, int ldx, const uint8_t *packed,
                                     const float *w_scale, const float *b, int rows, int K,
                                     int out, int first, int last);

/* Output columns [first, last) of y (rows, ldy) = the int4 product of x
 * (rows, K, quantized as for ted_matmul_i8_columns_fn; rows ldx bytes
 * apart, zero from K to ldx, ldx at least the groups' columns) and W (out,
 * K) int4 (kernels.h) with its group scales w_scale (out, groups): the
 * group sums of each column times their scales, summed, times x_scale[i],
 * + b. */
typedef void ted_matmul_i4_columns_fn(float *y, int ldy, const int8_t *x, const float *x_scale,
                                      int ldx, const uint8_t *W, const float *w_scale,
                                      const float *b, int rows, int K, int first, int last);

/* Each row of x (rows, K) quantized to int8: scale[i] = max |x[i]| / 127,
 * q[i][k] = x[i][k] * (127 / max |x[i]|) rounded to the nearest integer,
 * ties to even; rows ldq bytes apart (a multiple of 64), zero from K to
 * ldq; sum[i] the sum of q[i]. */
typedef void ted_quantize_rows_fn(int8_t *q, float *scale, int32_t *sum, const float *x,
                                  int rows, int K, int ldq);

/* x (rows, K) quantized to int8 with one multiplier: q[i][k] = x[i][k] *
 * factor rounded to the nearest integer, ties to even, clipped to [-127,
 * 127]; rows ldq bytes apart (a multiple of 64), zero from K to ldq; sum[i]
 * the sum of q[i]. */
typedef void ted_quantize_rows_with_fn(int8_t *q, int32_t *sum, const float *x, int rows,
                                       int K, int ldq, float factor);

/* The largest |x| of x (n); NaN when x holds a NaN. */
typedef float ted_max_magnitude_fn(const float *x, size_t n);

/* Output columns [first, last) of y (rows, ldy) = x (rows, K) W^T + b, W
 * (out, K) bfloat16. `parts` (or NULL): x as ted_split_bf16_rows_fn wrote
 * it, which the kernel then reads instead of x. */
typedef void ted_matmul_bf16_columns_fn(float *y, int ldy, const float *x,
                                        const uint16_t *parts, int ldp, const uint16_t *W,
                                        const float *b, int rows, int K, int first, int last);

/* Writes x (rows, K) as the bf16 parts the set's bf16 kernel reads, when it
 * reads parts: row i's part p at parts[(i * TED_BF16_PARTS + p) * ldp], ldp
 * a multiple of 32, zero from K to ldp. Returns TED_BF16_PARTS, or 0 (and
 * writes nothing) when the kernel reads x as floats. */
typedef int ted_split_bf16_rows_fn(uint16_t *parts, const float *x, int rows, int K, int ldp);

/* Panels [first, last) of y (rows, ldy) = x (rows, K) W^T + b, W (out, K)
 * in bf16 panels (kernels.h, ted_pack_bf16_panels), with x also as the
 * parts ted_split_bf16_rows_fn wrote. Only a set whose split writes parts
 * computes it; the others' does nothing. */
typedef void ted_matmul_bf16_panels_fn(float *y, int ldy, const float *x,
                                       const uint16_t *parts, int ldp, const uint16_t *panels,
                                       const float *b, int rows, int K, int out, int first,
                                       int last);

typedef struct ted_kernel_table {
    const char *name;   /* "avx512", "avx2", "portable": the value of TED_CPU */
    ted_matmul_panels_fn *matmul_panels;
    int tile_panels;    /* panels a tile of matmul_panels takes at once */
    ted_matmul_i8_columns_fn *matmul_i8_columns;
    ted_quantize_rows_fn *quantize_rows;
    ted_quantize_rows_with_fn *quantize_rows_with;
    ted_max_magnitude_fn *max_magnitude;
    ted_pack_i8_fn *pack_i8;
    ted_matmul_i8_packed_fn *matmul_i8_packed;
    ted_matmul_i4_columns_fn *matmul_i4_columns;
    ted_matmul_bf16_columns_fn *matmul_bf16_columns;
    ted_split_bf16_rows_fn *split_bf16_rows;
    ted_matmul_bf16_panels_fn *matmul_bf16_panels;
    __typeof__(ted_scaled_dots) *scaled_dots;
    __typeof__(ted_weighted_sum) *weighted_sum;
    __typeof__(ted_max) *max;
    __typeof__(ted_index_of_max) *index_of_max;
    __typeof__(ted_exp_shifted) *exp_shifted;
    __typeof__(ted_sum_exp_shifted) *sum_exp_shifted;
    __typeof__(ted_sum_exp_shifted_at) *sum_exp_shifted_at;
    __typeof__(ted_scale) *scale;
    __typeof__(ted_zero_negatives) *zero_negatives;
    __typeof__(ted_times_sigmoid) *times_sigmoid;
    __typeof__(ted_times_normal_cdf) *times_normal_cdf;
    __typeof__(ted_times_normal_cdf_tanh) *times_normal_cdf_tanh;
    __typeof__(ted_all_finite) *all_finite;
    __typeof__(ted_normalize_rows) *normalize_rows;
} ted_kernel_table;

/* The table that runs (chosen at the first call, see ted_kernels_init). */
const ted_kernel_table *ted_kernels(void);

extern const ted_kernel_table ted_kernels_portable;
#if defined(__x86_64__)
extern const ted_kernel_table ted_kernels_avx2, ted_kernels_avx512;
#endif

/* ---- inside src/kernels/variant/ ----------------------------------------- */
#ifdef TED_VARIANT
#define TED_VARIANT_PASTE(name, variant) name##_##variant
#define TED_VARIANT_EXPAND(name, variant) TED_VARIANT_PASTE(name, variant)
#define TED_VARIANT_NAME(name) TED_VARIANT_EXPAND(name, TED_VARIANT)

ted_matmul_panels_fn TED_VARIANT_NAME(ted_matmul_panels);

/* Rows and panels of a tile of matmul_panels, within the registers of each
 * set: AVX-512 8 x 3 (24 accumulators of 32 registers), AVX2 6 x 1 (12 of
 * 16), SSE 3 x 1 (12 of 16); the tiles compared and how they were chosen:
 * docs/performance.md#tiles. */
#if defined(__AVX512F__)
#define TED_TILE_ROWS 8
#define TED_TILE_PANELS 3
#elif defined(__AVX__)
#define TED_TILE_ROWS 6
#define TED_TILE_PANELS 1
#else
#define TED_TILE_ROWS 3
#define TED_TILE_PANELS 1
#endif
ted_matmul_i8_columns_fn TED_VARIANT_NAME(ted_matmul_i8_columns);
ted_quantize_rows_fn TED_VARIANT_NAME(ted_quantize_rows);
ted_quantize_rows_with_fn TED_VARIANT_NAME(ted_quantize_rows_with);
ted_max_magnitude_fn TED_VARIANT_NAME(ted_max_magnitude);
ted_pack_i8_fn TED_VARIANT_NAME(ted_pack_i8);
ted_matmul_i8_packed_fn TED_VARIANT_NAME(ted_matmul_i8_packed);
ted_matmul_i4_columns_fn TED_VARIANT_NAME(ted_matmul_i4_columns);
ted_matmul_bf16_columns_fn TED_VARIANT_NAME(ted_matmul_bf16_columns);
ted_split_bf16_rows_fn TED_VARIANT_NAME(ted_split_bf16_rows);
ted_matmul_bf16_panels_fn TED_VARIANT_NAME(ted_matmul_bf16_panels);
__typeof__(ted_scaled_dots) TED_VARIANT_NAME(ted_scaled_dots);
__typeof__(ted_weighted_sum) TED_VARIANT_NAME(ted_weighted_sum);
__typeof__(ted_max) TED_VARIANT_NAME(ted_max);
__typeof__(ted_index_of_max) TED_VARIANT_NAME(ted_index_of_max);
__typeof__(ted_exp_shifted) TED_VARIANT_NAME(ted_exp_shifted);
__typeof__(ted_sum_exp_shifted) TED_VARIANT_NAME(ted_sum_exp_shifted);
__typeof__(ted_sum_exp_shifted_at) TED_VARIANT_NAME(ted_sum_exp_shifted_at);
__typeof__(ted_scale) TED_VARIANT_NAME(ted_scale);
__typeof__(ted_zero_negatives) TED_VARIANT_NAME(ted_zero_negatives);
__typeof__(ted_times_sigmoid) TED_VARIANT_NAME(ted_times_sigmoid);
__typeof__(ted_times_normal_cdf) TED_VARIANT_NAME(ted_times_normal_cdf);
__typeof__(ted_times_normal_cdf_tanh) TED_VARIANT_NAME(ted_times_normal_cdf_tanh);
__typeof__(ted_all_finite) TED_VARIANT_NAME(ted_all_finite);
__typeof__(ted_normalize_rows) TED_VARIANT_NAME(ted_normalize_rows);
#endif

#endif
