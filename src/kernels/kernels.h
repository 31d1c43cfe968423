/* The kernels: the arithmetic every layer is made of, behind one narrow
 * interface. src/layers says what the model computes (project, split into
 * heads, scores, softmax, merge heads, Add & Norm, ...) and calls these;
 * how each one is computed (vector width, tiling, threads) is
 * decided here and nowhere else. */
#ifndef TED_KERNELS_KERNELS_H
#define TED_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "ted/ted.h"

/* ---- which kernels run ------------------------------------------------------
 * The kernels are compiled once per instruction set (src/kernels/variants.h)
 * and one set is chosen per process, from what the CPU and the OS offer:
 *   "avx512"    AVX-512 F, BW, VL and DQ (16 floats per vector); its int8
 *               product uses AVX512_VNNI and its bfloat16 product
 *               AVX512_BF16 when the CPU has them;
 *   "avx2"      AVX2 and FMA (8 floats per vector);
 *   "portable"  the baseline instruction set, SSE2 on x86-64 (4 floats per
 *               vector); the only set on other architectures.
 * TED_CPU=NAME in the environment forces one. Everything else in ted is
 * compiled for the baseline, so one binary runs on any CPU of its
 * architecture. */

/* Chooses the kernels, once per process: TED_CPU's set if it names one the
 * CPU offers, else the best the CPU offers. Later calls choose nothing and
 * report the same. Fails (TED_ERR_ARGUMENT) when TED_CPU names no set of this
 * build or one the CPU lacks; the best set runs even then. The first kernel
 * call chooses likewise, when nothing has called this before. */
ted_status ted_kernels_init(ted_error *err);

/* Runs the named set from now on, in every thread (for tests and tools that
 * compare the sets in one process). Fails (TED_ERR_ARGUMENT) when NAME is no
 * set of this build or one the CPU lacks, and keeps the current set. */
ted_status ted_kernels_select(const char *name, ted_error *err);

/* Whether NAME is a set of this build that the CPU can run. */
bool ted_kernels_supported(const char *name);

/* The name of the set that runs ("avx512", "avx2" or "portable"). */
const char *ted_kernels_name(void);

/* ---- the matrix product of every Linear layer ----------------------------
 * y (rows, out_features) = x (rows, in_features) W^T + b, with W as
 * PyTorch's nn.Linear stores it: (out_features, in_features), row-major.
 * b is (out_features) or NULL. Any number of rows; spread over the pool.
 * W is packed into panels (below) on every call, in a scratch of the
 * calling thread: for weights built by hand; a model's are packed once, at
 * load. */
void ted_matmul(float *y, const float *x, const float *W, const float *b, int rows,
                int in_features, int out_features);

/* ---- weights in panels --------------------------------------------------------
 * A float W (rows, cols) repacked for the product: panel p holds rows
 * 16p .. 16p + 15 as (cols, 16), panels[(p * cols + c) * 16 + j] =
 * W[16p + j][c], zero past the last row. One k gives 16 output columns'
 * weights in a row, which the kernels load as whole vectors (measurements:
 * docs/performance.md#panels). The layout is the same for every kernel
 * set. */
#define TED_PANEL_COLUMNS 16

/* Floats of W (rows, cols) in panels; SIZE_MAX when the count overflows. */
size_t ted_panels_floats(int rows, int cols);

/* panels (ted_panels_floats(rows, cols)) = W (rows, cols) in panels. */
void ted_pack_panels(float *panels, const float *W, int rows, int cols);

/* ---- int8 weights ------------------------------------------------------------
 * A weight matrix (rows, cols), row-major: float, or int8 with one float
 * scale per row, symmetric: W[r][c] ~ q[r][c] * scale[r], q in [-127, 127]
 * (scale = max |W[r]| / 127), or bfloat16 (the top 16 bits of a float).
 * Linear layers and embedding tables are one. */
typedef struct ted_matrix {
    const float *f32;     /* (rows, cols), or NULL when quantized */
    const int8_t *i8;     /* (rows, cols), or NULL when float */
    const float *scale;   /* (rows), with i8 */
    const uint8_t *i8_packed; /* i8 packed for vpdpbusd (ted_pack_i8), or NULL: read
                                 instead of i8 when set; alone (i8 NULL) when a mapped
                                 file holds W so (model-format.md#the-mapped-layout) */
    const float *panels;  /* f32 in panels, or NULL: the products use it when set */
    const uint16_t *bf16; /* (rows, cols) bfloat16, or NULL */
    const uint16_t *bf16_panels; /* bf16 in bf16 panels, or NULL: used when the set can */
    const uint8_t *i4;    /* (rows, groups * TED_I4_GROUP / 2) int4, or NULL; its group
                             scales (rows, groups) in `scale` */
    float x_mult;         /* with i8, how x is quantized (ted_linear): 0, each row with
                             its own scale (ted's int8); > 0, all of x times x_mult
                             (Marian's precomputed multipliers); TED_I8_WHOLE, all of x
                             times 127 / max |x| over the whole matrix (Marian's intgemm) */
    float w_mult;         /* with i8 and x_mult != 0: 0, or Marian's multiplier qm_B of
                             W, and every dot is scaled by 1 / (qm_A * qm_B) as
                             Marian's intgemm scales it (not by 1 / qm_A * scale[j],
                             which can differ in the last bit) */
} ted_matrix;

/* ted_matrix.x_mult of an int8 W whose x is quantized with one multiplier
 * for the whole matrix, 127 / max |x|. */
#define TED_I8_WHOLE (-1.0f)

/* The multiplier TED_I8_WHOLE stands for, of an x whose largest |x| is
 * `max_magnitude` (ted_max_magnitude): 127 / max_magnitude, as Marian's
 * intgemm computes it; FLT_MIN for an x of zeros (whose q are zeros
 * whatever the multiplier). */
float ted_i8_whole_mult(float max_magnitude);

/* max |x[i]| over x (n). */
float ted_max_magnitude(const float *x, size_t n);

/* ---- int4 weights ------------------------------------------------------------
 * Each row of W (rows, cols) in groups of TED_I4_GROUP columns (the last
 * one padded with zeros), each group with its own float scale, symmetric:
 * W[r][c] ~ q * scale[r][c / TED_I4_GROUP], q in [-7, 7] (scale = max |W
 * over the group| / 7), stored as q + 8, two to a byte: byte k of a group
 * holds column k in its low nibble and column k + TED_I4_GROUP / 2 in its
 * high one. A row is groups * TED_I4_GROUP / 2 bytes, groups = cols
 * rounded up to a multiple of TED_I4_GROUP, over TED_I4_GROUP. */
#define TED_I4_GROUP 32

/* Groups of a row of `cols` columns. */
static inline int ted_i4_groups(int cols)
{
    return (cols + TED_I4_GROUP - 1) / TED_I4_GROUP;
}

/* y (rows, out_features) = x (rows, in_features) W^T + b for an int4 W (out,
 * in) with its group scales w_scale (out, groups): each row of x quantized
 * as for ted_matmul_i8, each group's dot product exact in int32, times the
 * group's scale, summed in float, times x's scale. in_features at most
 * TED_I8_MAX_IN_FEATURES. Any number of rows; spread over the pool. */
void ted_matmul_i4(float *y, const float *x, const uint8_t *W, const float *w_scale,
                   const float *b, int rows, int in_features, int out_features);

/* The largest in_features of an int8 product: 127 * 127 * K must fit int32. */
#define TED_I8_MAX_IN_FEATURES 131072

/* int8 weights packed for vpdpbusd come in groups of this many rows. */
#define TED_I8_GROUP_ROWS 16

/* Bytes of an int8 W (rows, cols) packed by ted_pack_i8; SIZE_MAX when the
 * count overflows. */
size_t ted_i8_packed_bytes(int rows, int cols);

/* Whether the kernel set reads int8 weights packed (AVX512_VNNI): then a
 * model's int8 Linear weights are packed at load, by ted_pack_i8. */
bool ted_i8_packs(void);

/* packed (ted_i8_packed_bytes(rows, cols), 64-byte aligned) = W (rows,
 * cols) int8 in the operand order of vpdpbusd: groups of
 * TED_I8_GROUP_ROWS rows, group g holding 4 bytes of k of its 16 rows a
 * 64-byte vector, each byte W + 128. Only when ted_i8_packs(). */
void ted_pack_i8(uint8_t *packed, const int8_t *W, int rows, int cols);

/* The same bytes in plain C, on any CPU: for the writer of a mapped file
 * (ted quantize --layout mapped), whose groups every set reads
 * (ted_linear). */
void ted_pack_i8_plain(uint8_t *packed, const int8_t *W, int rows, int cols);

static inline ted_matrix ted_matrix_float(const float *W)
{
    return (ted_matrix){.f32 = W};
}

/* Rows [first, rows) of W, whose rows have `cols` columns; in panels too
 * when `first` starts a panel (or a packed group of int8 rows). */
static inline ted_matrix ted_matrix_rows(ted_matrix W, size_t first, int cols)
{
    if (W.i4) {
        size_t groups = (size_t)ted_i4_groups(cols);
        return (ted_matrix){.i4 = W.i4 + first * groups * (TED_I4_GROUP / 2),
                            .scale = W.scale + first * groups};
    }
    if (W.i8 || W.i8_packed) {  /* a mapped file's int8 W is packed only */
        bool whole = W.i8_packed && first % TED_I8_GROUP_ROWS == 0;
        size_t group_bytes = ((size_t)cols + 3) / 4 * 64;
        return (ted_matrix){.i8 = W.i8 ? W.i8 + first * cols : NULL, .scale = W.scale + first,
                            .x_mult = W.x_mult, .w_mult = W.w_mult,
                            .i8_packed = whole ? W.i8_packed + first / TED_I8_GROUP_ROWS *
                                                                   group_bytes
                                               : NULL};
    }
    if (W.bf16) {
        bool whole = W.bf16_panels && first % TED_PANEL_COLUMNS == 0;
        size_t even = ((size_t)cols + 1) / 2 * 2;
        return (ted_matrix){.bf16 = W.bf16 + first * cols,
                            .bf16_panels = whole ? W.bf16_panels + first * even : NULL};
    }
    bool whole_panels = W.panels && first % TED_PANEL_COLUMNS == 0;
    return (ted_matrix){.f32 = W.f32 + first * cols,
                        .panels = whole_panels ? W.panels + first * cols : NULL};
}

/* y = x W^T + b for every kind of W: in panels, int8 (ted_matmul_i8),
 * int4 (ted_matmul_i4), bfloat16 (ted_matmul_bf16) or as stored (ted_matmul). */
void ted_linear(float *y, const float *x, ted_matrix W, const float *b, int rows,
                int in_features, int out_features);

/* y (rows, out_features) = x (rows, in_features) W^T + b for an int8 W (out,
 * in) with w_scale (out): each row of x is quantized at run time
 * (x_scale = max |x[i]| / 127, x[i][k] / x_scale rounded to the nearest
 * integer, ties to even), the dot products are computed exactly in int32
 * and y[i][j] = dot * (x_scale * w_scale[j]) + b[j]. in_features at most
 * TED_I8_MAX_IN_FEATURES. Any number of rows; spread over the pool. */
void ted_matmul_i8(float *y, const float *x, const int8_t *W, const float *w_scale,
                   const float *b, int rows, int in_features, int out_features);

/* The same product with all of x quantized with one multiplier, as Marian's
 * intgemm does: x_mult > 0 the multiplier, TED_I8_WHOLE 127 / max |x| over
 * the whole matrix; q = x * x_mult rounded to the nearest integer (ties to
 * even), clipped to [-127, 127], y[i][j] = dot * (1 / x_mult * w_scale[j])
 * + b[j]. */
void ted_matmul_i8_whole(float *y, const float *x, float x_mult, const int8_t *W,
                         const float *w_scale, const float *b, int rows, int in_features,
                         int out_features);

/* ---- bfloat16 weights ----------------------------------------------------------
 * y (rows, out_features) = x (rows, in_features) W^T + b for a bfloat16 W
 * (out, in), row-major: float x, float sums. With AVX512_BF16 (vdpbf16ps)
 * x is split into TED_BF16_PARTS bf16 parts whose sum is x to a float's
 * precision; elsewhere each weight is widened to float. Any number of rows;
 * spread over the pool. A model's bf16 weights are in bf16 panels
 * (ted_linear), which every set multiplies. */
void ted_matmul_bf16(float *y, const float *x, const uint16_t *W, const float *b, int rows,
                     int in_features, int out_features);

/* bf16 panels: W (rows, cols) bfloat16 repacked for vdpbf16ps and for
 * widening a vector at a time (every set). Panel p holds rows 16p .. 16p +
 * 15 as (cols2 / 2, 16, 2), cols2 = cols rounded up to even: panels[((p * cols2 / 2 + c) * 16 + j) * 2 + e] =
 * W[16p + j][2c + e], zero past the last row and column. */
size_t ted_bf16_panels_halves(int rows, int cols);  /* SIZE_MAX on overflow */
void ted_pack_bf16_panels(uint16_t *panels, const uint16_t *W, int rows, int cols);

/* The bf16 parts of x that vdpbf16ps multiplies: x = hi + mid + lo, each
 * part the bf16 rounding of what the ones before leave (8 significant bits
 * each, 24 together). */
#define TED_BF16_PARTS 3

/* A bfloat16 value as a float: its 16 bits over 16 zero bits (exact). */
static inline float ted_bf16_to_float(uint16_t h)
{
    union {
        uint32_t bits;
        float f;
    } u = {(uint32_t)h << 16};
    return u.f;
}

/* A float as bfloat16, rounded to the nearest, ties to even (torch's
 * .bfloat16()); a NaN stays a NaN, a value past the largest bf16 becomes
 * an infinity. */
static inline uint16_t ted_bf16_from_float(float f)
{
    union {
        float f;
        uint32_t bits;
    } u = {f};
    if ((u.bits & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u.bits >> 16) | 0x40);
    return (uint16_t)((u.bits + 0x7fffu + ((u.bits >> 16) & 1u)) >> 16);
}

/* out (cols) = W[row] * factor, dequantized when W is int8 or int4, widened when
 * bf16, from the panels (or the packed int8 groups) when W has them. */
void ted_matrix_row(float *out, ted_matrix W, int row, int cols, float factor);

/* out (cols) = row `row` of an int8 W, as stored: from its packed groups
 * when it has them. */
void ted_matrix_i8_row(int8_t *out, ted_matrix W, int row, int cols);

/* ---- vectors -------------------------------------------------------------- */

/* scores (count) = scale * (keys[j] . q), keys (count, size): one query
 * against a head's keys. */
void ted_scaled_dots(float *scores, const float *q, const float *keys, int count, int size,
                     float scale);

/* out (size) = sum_j weights[j] * values[j], values (count, size). */
void ted_weighted_sum(float *out, const float *weights, const float *values, int count,
                      int size);

/* The largest of x (n), -inf when n is 0 or every value is NaN. */
float ted_max(const float *x, int n);

/* The first index of the largest value of x (n); NaN is never the largest;
 * 0 when nothing is larger than -inf. */
int ted_index_of_max(const float *x, int n);

/* x[i] = exp(x[i] - shift) in place; returns the sum of the results. */
double ted_exp_shifted(float *x, int n, float shift);

/* The sum of exp(x[i] - shift), x unchanged. */
double ted_sum_exp_shifted(const float *x, int n, float shift);

/* ted_sum_exp_shifted over a row x (n) that holds values (count) at ids
 * (count, increasing, each below n) and -infinity elsewhere, without the
 * row, and to the bit: a vocabulary shortlist's log-softmax is the whole
 * row's. */
double ted_sum_exp_shifted_at(const float *values, const int *ids, int count, int n,
                              float shift);

/* x[i] *= factor. */
void ted_scale(float *x, int n, float factor);

/* x[i] = max(x[i], 0) in place (ReLU); NaN becomes 0. This, the three
 * activations below and ted_all_finite spread long vectors (32768 floats
 * and more) over the pool. */
void ted_zero_negatives(float *x, size_t n);

/* The activations, in place over x (n), within 1e-6 of the result,
 * relative, plus 1e-7 of |x| (variant/activation.c says why and what
 * NaN, infinities and -0 give):
 *   ted_times_sigmoid          SiLU, x / (1 + exp(-x));
 *   ted_times_normal_cdf       GELU, x Phi(x) = 0.5 x (1 + erf(x / sqrt 2));
 *   ted_times_normal_cdf_tanh  GELU's tanh approximation, 0.5 x (1 +
 *                              tanh(sqrt(2 / pi) (x + 0.044715 x^3))). */
void ted_times_sigmoid(float *x, size_t n);
void ted_times_normal_cdf(float *x, size_t n);
void ted_times_normal_cdf_tanh(float *x, size_t n);

/* Whether every x[i] is finite (neither NaN nor infinite). */
bool ted_all_finite(const float *x, size_t n);

/* Layer normalization of each row of x (rows, n) into y (y may equal x):
 * y = (x - mean) / sqrt(variance + eps) * gamma + beta, the mean and the
 * variance summed in double, in two passes. Sets with FMA fuse the
 * multiply-adds: their results may differ from the portable set's in the
 * last bit. */
void ted_normalize_rows(float *y, const float *x, const float *gamma, const float *beta,
                        int rows, int n, float eps);

/* ---- the thread pools -------------------------------------------------------
 * The process's pool (ted_set_threads), and the pools callers make
 * (ted_threads, ted/ted.h). Every product and every layer that splits its
 * work runs its tasks on the pool of the calling thread: the process's,
 * unless the thread is bound to another (ted_parallel_use), as each model
 * of ted serve binds its decoding and encoding threads to pools of its
 * own. */

/* How many threads run the process pool's tasks (the caller counts as one);
 * 1 runs everything on the calling thread. */
void ted_parallel_set_threads(int threads);

/* A pool of `threads` threads (the caller counts as one; fewer when one
 * cannot start), or NULL out of memory. */
ted_threads *ted_parallel_pool_new(int threads);

/* Stops its workers and frees it; no thread may be bound to it any more. */
void ted_parallel_pool_free(ted_threads *pool);

/* Binds the calling thread to `pool` (NULL: the process's); returns the
 * pool it was bound to (NULL: the process's). */
ted_threads *ted_parallel_use(ted_threads *pool);

/* The pool the calling thread is bound to (NULL: the process's). */
ted_threads *ted_parallel_bound(void);

/* The threads of `pool` (NULL: the process's), and of the calling
 * thread's pool. */
int ted_parallel_pool_threads(const ted_threads *pool);
int ted_parallel_threads(void);

/* Runs task(context, i) for every i in [0, count), spread over the calling
 * thread's pool, and returns when all are done. When another thread is
 * already using that pool, runs them all on the calling thread, so
 * concurrent sessions stay correct. */
void ted_parallel_for(int count, void (*task)(void *context, int index), void *context);

#endif
