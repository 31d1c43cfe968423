/* The matrix product of every Linear layer, y = x W^T + b.
 *
 * A model's float weights are repacked into panels at load (kernels.h),
 * and the kernel of variant/matmul_panels.c computes the product for any
 * number of rows: one sentence's decoder step, a batch, an encoder pass.
 * A W as PyTorch stores it, (out, in) row-major, that was not packed at
 * load (weights built by hand) is packed into the calling thread's scratch
 * on each call (ted_matmul). int8 weights have their own kernels
 * (variant/matmul_i8.c): a model's are packed for vpdpbusd at load where
 * the set reads them so, others are read as stored, or packed once per
 * product at many rows. Each product splits its output columns over the
 * thread pool, and a product of many rows (an encoder pass) its rows as
 * well. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "kernels/variants.h"

/* Scratch of the calling thread, reused across calls and freed when the
 * thread ends: slot SCRATCH_X holds the packed W of ted_matmul or the
 * quantized x of an int8 product, slot SCRATCH_W an int8 product's packed
 * W (both in use at once). */
enum { SCRATCH_X, SCRATCH_W, SCRATCH_SLOTS };

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

typedef struct scratch {
    float *data[SCRATCH_SLOTS];
    size_t size[SCRATCH_SLOTS];
} scratch;

static void free_scratch(void *p)
{
    scratch *s = p;
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        free(s->data[i]);
    free(s);
}

static void create_scratch_key(void)
{
    pthread_key_create(&scratch_key, free_scratch);
}

static void *thread_scratch(int slot, size_t floats)
{
    pthread_once(&scratch_once, create_scratch_key);
    scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        if (!(s = calloc(1, sizeof *s)))
            return NULL;
        pthread_setspecific(scratch_key, s);
    }
    if (s->size[slot] < floats) {
        /* 64-byte aligned: a vector load that straddles two cache lines
         * costs two */
        size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
        float *grown = bytes / sizeof(float) >= floats ? aligned_alloc(64, bytes) : NULL;
        if (!grown)
            return NULL;
        free(s->data[slot]);
        s->data[slot] = grown;
        s->size[slot] = floats;
    }
    return s->data[slot];
}

/* ---- splitting the columns over the pool -------------------------------- */

/* Output columns per task: a few tasks per thread, so a thread that falls
 * behind is helped; a multiple of 16, and at least 64. */
static int columns_per_task(int out_features)
{
    int tasks = ted_parallel_threads() * 4;
    int per_task = (out_features + tasks - 1) / tasks;
    per_task = (per_task + 15) / 16 * 16;
    return per_task < 64 ? 64 : per_task;
}

/* The columns [*first, *last) of task `index`. */
static void task_columns(int index, int per_task, int out_features, int *first, int *last)
{
    *first = index * per_task;
    *last = *first + per_task < out_features ? *first + per_task : out_features;
}

/* ---- W in panels --------------------------------------------------------- */

size_t ted_panels_floats(int rows, int cols)
{
    size_t panels = ((size_t)rows + TED_PANEL_COLUMNS - 1) / TED_PANEL_COLUMNS;
    return ted_mul_size(ted_mul_size(panels, TED_PANEL_COLUMNS), (size_t)cols);
}

void ted_pack_panels(float *panels, const float *W, int rows, int cols)
{
    const int P = TED_PANEL_COLUMNS;
    for (int first = 0; first < rows; first += P, panels += (size_t)P * cols) {
        int count = rows - first < P ? rows - first : P;
        const float *panel_rows = W + (size_t)first * cols;
        for (int c = 0; c < cols; c++) {
            float *out = panels + (size_t)c * P;
            for (int j = 0; j < count; j++)
                out[j] = panel_rows[(size_t)j * cols + c];
            for (int j = count; j < P; j++)
                out[j] = 0.0f;
        }
    }
}

/* The panels go to 16 tasks per thread, in whole tiles (the kernel set's
 * tile_panels) and as evenly as whole tiles allow, so that no thread is
 * left with much more work than another. A product of more than
 * PANEL_BLOCK_ROWS rows (an encoder pass) is split along its rows as well:
 * a task takes a block of rows, whose x stays in the second-level cache
 * while its panels pass, by a range of tiles (measurements:
 * docs/performance.md#threads-and-tasks). PANEL_ROW_STEP: a block is a
 * multiple of every set's tile of rows (8, 6, 3).
 *
 * The kernel runs k in blocks, each over every tile of rows. A product of
 * one block of rows (a decoder step) streams W from memory once: short
 * blocks (PANEL_K_BLOCK), whose weights the tiles after the first find in
 * the first-level cache. A product split by rows reads W once a block of
 * rows, from the caches after the first: long runs of k
 * (PANEL_K_BLOCK_SPLIT), fewer restarts of a tile's accumulators and of
 * its rows of x (measurements: docs/performance.md#tiles). */
enum {
    PANEL_BLOCK_ROWS = 96,
    PANEL_ROW_STEP = 24,
    PANEL_K_BLOCK = 128,
    PANEL_K_BLOCK_SPLIT = 1024,
};

typedef struct panels_job {
    const ted_kernel_table *kernels;
    float *y;
    const float *x, *panels, *b;
    int rows, in_features, out_features;
    int panel_count, tiles, tasks;   /* tasks per block of rows */
    int rows_per_block, k_block;
} panels_job;

static void panels_task(void *context, int index)
{
    const panels_job *j = context;
    int tile = j->kernels->tile_panels;
    int block = index / j->tasks * j->rows_per_block;
    int rows = j->rows - block < j->rows_per_block ? j->rows - block : j->rows_per_block;
    index %= j->tasks;
    int first = (int)((long long)index * j->tiles / j->tasks) * tile;
    int last = (int)((long long)(index + 1) * j->tiles / j->tasks) * tile;
    j->kernels->matmul_panels(j->y + (size_t)block * j->out_features, j->out_features,
                              j->x + (size_t)block * j->in_features, j->panels, j->b, rows,
                              j->in_features, j->out_features, first,
                              last < j->panel_count ? last : j->panel_count, j->k_block);
}

static void matmul_panels(float *y, const float *x, const float *panels, const float *b,
                          int rows, int in_features, int out_features)
{
    const ted_kernel_table *kernels = ted_kernels();
    int panel_count = (out_features + TED_PANEL_COLUMNS - 1) / TED_PANEL_COLUMNS;
    int tiles = (panel_count + kernels->tile_panels - 1) / kernels->tile_panels;
    int blocks = (rows + PANEL_BLOCK_ROWS - 1) / PANEL_BLOCK_ROWS;
    int per_block = (rows + blocks - 1) / blocks;
    per_block = (per_block + PANEL_ROW_STEP - 1) / PANEL_ROW_STEP * PANEL_ROW_STEP;
    blocks = (rows + per_block - 1) / per_block;
    int tasks = (ted_parallel_threads() * 16 + blocks - 1) / blocks;
    panels_job job = {kernels, y, x, panels, b, rows, in_features, out_features,
                      panel_count, tiles, tasks < tiles ? tasks : tiles, per_block,
                      blocks > 1 ? PANEL_K_BLOCK_SPLIT : PANEL_K_BLOCK};
    ted_parallel_for(blocks * job.tasks, panels_task, &job);
}

/* ---- W as stored ------------------------------------------------------------ */

/* Without memory for the panels: the same sums, one dot product at a time. */
static void matmul_unpacked(float *y, const float *x, const float *W, const float *b,
                            int rows, int K, int out)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < out; j++) {
            float sum = b ? b[j] : 0.0f;
            for (int k = 0; k < K; k++)
                sum += x[(size_t)i * K + k] * W[(size_t)j * K + k];
            y[(size_t)i * out + j] = sum;
        }
}

void ted_matmul(float *y, const float *x, const float *W, const float *b, int rows,
                int in_features, int out_features)
{
    size_t floats = ted_panels_floats(out_features, in_features);
    float *panels = floats != SIZE_MAX ? thread_scratch(SCRATCH_X, floats) : NULL;
    if (!panels) {
        matmul_unpacked(y, x, W, b, rows, in_features, out_features);
        return;
    }
    ted_pack_panels(panels, W, out_features, in_features);
    matmul_panels(y, x, panels, b, rows, in_features, out_features);
}

/* ---- int8 weights ------------------------------------------------------------
 * The rows of x are quantized once per product (a sliver of the work:
 * rows * in against rows * in * out), in tasks over the pool, into a
 * scratch of the calling thread with rows padded to a multiple of 64
 * bytes; the kernel of variant/matmul_i8.c then splits the output columns
 * over the pool as above, or reads W packed (below). */

typedef struct i8_job {
    const ted_kernel_table *kernels;
    float *y;
    const int8_t *x, *W;
    const float *x_scale, *w_scale, *b;
    const int32_t *x_sum;
    int rows, ldx, in_features, out_features, columns_per_task;
} i8_job;

static void i8_task(void *context, int index)
{
    const i8_job *j = context;
    int first, last;
    task_columns(index, j->columns_per_task, j->out_features, &first, &last);
    j->kernels->matmul_i8_columns(j->y, j->out_features, j->x, j->x_scale, j->x_sum, j->ldx,
                                  j->W, j->w_scale, j->b, j->rows, j->in_features, first, last);
}

/* ---- int8 weights packed for vpdpbusd ------------------------------------------
 * With the VNNI kernel a model's int8 weights are packed at load
 * (ted_pack_i8, variants.h's layout), and every product reads them so, a
 * lone row's included: in tasks of a block of rows by a block of up to
 * I8_BLOCK_GROUPS groups, fewer where there would be fewer tasks than
 * threads (a 512-wide product has 8 blocks of 4 groups). The tasks go
 * block of W by block of W, every block of rows of one before the next:
 * the pool's threads each take a run of tasks (kernels/parallel.c), so
 * each reads its own part of W, and reads it from its own cache for the
 * blocks of rows after the first. A W as stored (built
 * by hand) is packed the same way once per product from I8_PACKED_ROWS
 * rows on (an encoder pass, a batch's step), into the calling thread's
 * scratch, groups of 16 columns over the pool; one of more than
 * I8_PACKED_BYTES (an output layer's) is then read as stored: packed, it
 * would leave the last-level cache between the packing and the product
 * (measurements: docs/performance.md#the-encoder). */
enum {
    I8_PACKED_ROWS = 64,
    I8_PACKED_BYTES = 4 << 20,
    I8_BLOCK_GROUPS = 4,
    I8_BLOCK_ROWS = 192,
    I8_PACK_GROUPS = 8,
};

typedef struct i8_packed_job {
    const ted_kernel_table *kernels;
    float *y;
    const int8_t *x, *W;
    const uint8_t *packed;  /* W packed, which the product reads */
    uint8_t *scratch;       /* where the pack tasks write it, when W is packed per product */
    const float *x_scale, *w_scale, *b;
    const int32_t *x_sum;
    int rows, ldx, in_features, out_features;
    int groups, block_groups, row_blocks, rows_per_block;
} i8_packed_job;

static void i8_pack_task(void *context, int index)
{
    const i8_packed_job *j = context;
    int first = index * I8_PACK_GROUPS;
    int last = first + I8_PACK_GROUPS < j->groups ? first + I8_PACK_GROUPS : j->groups;
    j->kernels->pack_i8(j->scratch, j->W, j->in_features, j->out_features, first, last);
}

static void i8_packed_task(void *context, int index)
{
    const i8_packed_job *j = context;
    int block = index % j->row_blocks * j->rows_per_block;
    int rows = j->rows - block < j->rows_per_block ? j->rows - block : j->rows_per_block;
    int first = index / j->row_blocks * j->block_groups;
    int last = first + j->block_groups < j->groups ? first + j->block_groups : j->groups;
    j->kernels->matmul_i8_packed(j->y + (size_t)block * j->out_features, j->out_features,
                                 j->x + (size_t)block * j->ldx, j->x_scale + block,
                                 j->x_sum + block, j->ldx, j->packed, j->w_scale, j->b, rows,
                                 j->in_features, j->out_features, first, last);
}

/* The product from W packed (job.packed): in tasks of a block of rows by a
 * block of groups. x is quantized. */
static void run_i8_packed(i8_packed_job job)
{
    job.groups = (job.out_features + TED_I8_GROUP_ROWS - 1) / TED_I8_GROUP_ROWS;
    job.row_blocks = (job.rows + I8_BLOCK_ROWS - 1) / I8_BLOCK_ROWS;
    job.rows_per_block = (job.rows + job.row_blocks - 1) / job.row_blocks;
    int threads = ted_parallel_threads();
    job.block_groups = I8_BLOCK_GROUPS;
    while (job.block_groups > 1 &&
           job.row_blocks * ((job.groups + job.block_groups - 1) / job.block_groups) < threads)
        job.block_groups /= 2;
    int column_blocks = (job.groups + job.block_groups - 1) / job.block_groups;
    ted_parallel_for(job.row_blocks * column_blocks, i8_packed_task, &job);
}

/* The product from W packed into the scratch, when the set reads packed
 * weights, the rows repay the packing and the scratch has room; false
 * (nothing done) otherwise. x is quantized. */
static bool matmul_i8_packed(const i8_packed_job *from)
{
    i8_packed_job job = *from;
    if (job.rows < I8_PACKED_ROWS || !ted_i8_packs())
        return false;
    job.groups = (job.out_features + TED_I8_GROUP_ROWS - 1) / TED_I8_GROUP_ROWS;
    size_t bytes = ted_i8_packed_bytes(job.out_features, job.in_features);
    job.scratch =
        bytes <= I8_PACKED_BYTES ? thread_scratch(SCRATCH_W, bytes / sizeof(float)) : NULL;
    job.packed = job.scratch;
    if (!job.scratch)
        return false;
    ted_parallel_for((job.groups + I8_PACK_GROUPS - 1) / I8_PACK_GROUPS, i8_pack_task, &job);
    run_i8_packed(job);
    return true;
}

void ted_pack_i8_plain(uint8_t *packed, const int8_t *W, int rows, int cols)
{
    const int G = TED_I8_GROUP_ROWS;
    size_t K4 = ((size_t)cols + 3) / 4;
    for (int g = 0; g * G < rows; g++, packed += K4 * 64)
        for (size_t s = 0; s < K4; s++)
            for (int j = 0; j < G; j++)
                for (int e = 0; e < 4; e++) {
                    size_t k = 4 * s + (size_t)e;
                    int r = g * G + j;
                    int8_t w = r < rows && k < (size_t)cols ? W[(size_t)r * cols + k] : 0;
                    packed[s * 64 + 4 * (size_t)j + (size_t)e] = (uint8_t)(w ^ 0x80);
                }
}

size_t ted_i8_packed_bytes(int rows, int cols)
{
    size_t groups = ((size_t)rows + TED_I8_GROUP_ROWS - 1) / TED_I8_GROUP_ROWS;
    return ted_mul_size(groups, ((size_t)cols + 3) / 4 * 64);
}

bool ted_i8_packs(void)
{
    return ted_kernels()->pack_i8(NULL, NULL, 0, 0, 0, 0);
}

void ted_pack_i8(uint8_t *packed, const int8_t *W, int rows, int cols)
{
    int groups = (rows + TED_I8_GROUP_ROWS - 1) / TED_I8_GROUP_ROWS;
    ted_kernels()->pack_i8(packed, W, cols, rows, 0, groups);
}

/* Element (row, c) of an int8 W, from its packed groups when it has them. */
static inline int8_t i8_element(ted_matrix W, int row, int c, int cols)
{
    if (!W.i8_packed)
        return W.i8[(size_t)row * cols + c];
    const uint8_t *group = W.i8_packed + (size_t)(row / TED_I8_GROUP_ROWS) *
                                             ((size_t)(cols + 3) / 4 * 64);
    return (int8_t)(group[(size_t)(c / 4) * 64 + 4 * (row % TED_I8_GROUP_ROWS) + c % 4] ^ 0x80);
}

float ted_max_magnitude(const float *x, size_t n)
{
    return ted_kernels()->max_magnitude(x, n);
}

float ted_i8_whole_mult(float max_magnitude)
{
    float m = max_magnitude;
    return m > 0.0f ? 127.0f / m : m == 0.0f ? FLT_MIN : m;
}

/* Marian's multiplier of all of x (n): 127 / max |x|; FLT_MIN when x is all
 * zeros, NaN when x holds a NaN or an infinity. */
static float whole_factor(const float *x, size_t n)
{
    return ted_i8_whole_mult(ted_max_magnitude(x, n));
}

/* The factor of every dot of a product whose x is quantized with `factor`
 * and W with Marian's w_mult: 1 / (factor * w_mult), in that order, as
 * Marian's intgemm computes it; 0 where that overflows (an x of zeros). */
static float marian_unquant(float factor, float w_mult)
{
    float unquant = 1.0f / (factor * w_mult);
    return isinf(unquant) ? 0.0f : unquant;
}

/* Without memory for the quantized x: the same numbers, one row of x at a
 * time through a quantized copy on the stack, in pieces of 4096 columns
 * whose partial dot products are exact. */
static void matmul_i8_in_pieces(float *y, const float *x, ted_matrix W, const float *b,
                                int rows, int K, int out)
{
    enum { PIECE = 4096 };
    int8_t q[PIECE];
    for (int i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * K;
        float m = 0.0f;
        for (int k = 0; k < K; k++)
            m = fabsf(xi[k]) > m ? fabsf(xi[k]) : m;
        float factor = m > 0.0f ? 127.0f / m : 0.0f, x_scale = m / 127.0f;
        bool marian = W.x_mult != 0.0f && W.w_mult > 0.0f;
        if (W.x_mult != 0.0f) {  /* one multiplier for all of x */
            factor = W.x_mult > 0.0f ? W.x_mult : whole_factor(x, (size_t)rows * K);
            x_scale = marian ? marian_unquant(factor, W.w_mult)
                             : factor > 0.0f ? 1.0f / factor : factor;
        }
        for (int j = 0; j < out; j++) {
            int32_t dot = 0;
            for (int k0 = 0; k0 < K; k0 += PIECE) {
                int n = K - k0 < PIECE ? K - k0 : PIECE;
                for (int k = 0; k < n; k++) {
                    float v = rintf(xi[k0 + k] * factor);
                    q[k] = v >= 127.0f ? 127 : v <= -127.0f ? -127 : v == v ? (int8_t)v : 0;
                }
                for (int k = 0; k < n; k++)
                    dot += q[k] * i8_element(W, j, k0 + k, K);
            }
            float v = (float)dot * (marian ? x_scale : x_scale * W.scale[j]);
            y[(size_t)i * out + j] = b ? v + b[j] : v;
        }
    }
}

/* x (rows, K) quantized into q (rows, ldq), scale and sum
 * (ted_quantize_rows_fn), in tasks of QUANTIZE_ROWS rows over the pool. */
enum { QUANTIZE_ROWS = 32 };

typedef struct quantize_job {
    const ted_kernel_table *kernels;
    int8_t *q;
    float *scale;
    int32_t *sum;
    const float *x;
    int rows, K, ldq;
    float factor;  /* 0: each row its own scale; else the one multiplier of x */
} quantize_job;

static void quantize_task(void *context, int index)
{
    const quantize_job *j = context;
    int first = index * QUANTIZE_ROWS;
    int rows = j->rows - first < QUANTIZE_ROWS ? j->rows - first : QUANTIZE_ROWS;
    if (j->factor != 0.0f) {
        j->kernels->quantize_rows_with(j->q + (size_t)first * j->ldq, j->sum + first,
                                       j->x + (size_t)first * j->K, rows, j->K, j->ldq,
                                       j->factor);
        for (int i = 0; i < rows; i++)
            j->scale[first + i] = j->factor > 0.0f ? 1.0f / j->factor : j->factor;
        return;
    }
    j->kernels->quantize_rows(j->q + (size_t)first * j->ldq, j->scale + first, j->sum + first,
                              j->x + (size_t)first * j->K, rows, j->K, j->ldq);
}

/* x quantized for a product with W (out_features rows): its rows
 * (ldx bytes apart), their scales and sums, and the scales of W's rows
 * that the dots are multiplied by. */
typedef struct quantized_x {
    int8_t *q;
    float *scale;
    int32_t *sum;
    int ldx;
    const float *w_scale;
} quantized_x;

/* x (rows, in_features) quantized to int8 in this thread's scratch (its
 * rows ldx bytes apart, ldx in_features rounded up to 64), with each row's
 * scale and sum: per row when W.x_mult is 0, else with x_mult or
 * (TED_I8_WHOLE) 127 / max |x| for all rows (ted_matrix.x_mult); the
 * kernels' own quantization, rows in parallel. With Marian's W.w_mult,
 * every row's scale is 1 / (qm_A * qm_B) and W's row scales are ones (in
 * the scratch too). False when the scratch cannot be had. */
static bool quantize_rows(const ted_kernel_table *k, const float *x, int rows, int in_features,
                          ted_matrix W, int out_features, quantized_x *out)
{
    bool marian = W.x_mult != 0.0f && W.w_mult > 0.0f;
    out->ldx = (in_features + 63) / 64 * 64;
    /* floats: the quantized rows (bytes), the scales, the sums, then the ones */
    size_t at = (size_t)rows * out->ldx / sizeof(float);
    float *buffer = thread_scratch(SCRATCH_X, at + 2 * (size_t)rows +
                                                   (marian ? (size_t)out_features : 0));
    if (!buffer)
        return false;
    out->q = (int8_t *)buffer;
    out->scale = buffer + at;
    out->sum = (int32_t *)(out->scale + rows);
    out->w_scale = W.scale;
    float factor = W.x_mult > 0.0f ? W.x_mult
                   : W.x_mult != 0.0f ? whole_factor(x, (size_t)rows * in_features) : 0.0f;
    quantize_job quantize = {k, out->q, out->scale, out->sum, x, rows, in_features, out->ldx,
                             factor};
    ted_parallel_for((rows + QUANTIZE_ROWS - 1) / QUANTIZE_ROWS, quantize_task, &quantize);
    if (marian) {
        float *ones = buffer + at + 2 * (size_t)rows, unquant = marian_unquant(factor, W.w_mult);
        for (int i = 0; i < rows; i++)
            out->scale[i] = unquant;
        for (int j = 0; j < out_features; j++)
            ones[j] = 1.0f;
        out->w_scale = ones;
    }
    return true;
}

/* ted_matmul_i8, reading W from `packed` (ted_pack_i8) when it is set. */
static void matmul_i8(float *y, const float *x, ted_matrix W8, const float *b, int rows,
                      int in_features, int out_features)
{
    const int8_t *W = W8.i8;
    const uint8_t *packed = W8.i8_packed;
    quantized_x qx;
    if (!quantize_rows(ted_kernels(), x, rows, in_features, W8, out_features, &qx)) {
        ted_matrix matrix = {.i8 = W, .i8_packed = packed, .scale = W8.scale,
                             .x_mult = W8.x_mult, .w_mult = W8.w_mult};
        matmul_i8_in_pieces(y, x, matrix, b, rows, in_features, out_features);
        return;
    }
    int8_t *xq = qx.q;
    float *x_scale = qx.scale;
    int32_t *x_sum = qx.sum;
    int ldx = qx.ldx;
    const float *w_scale = qx.w_scale;
    i8_job job = {ted_kernels(), y, xq, W, x_scale, w_scale, b, x_sum, rows, ldx, in_features,
                  out_features, 0};
    i8_packed_job packed_job = {job.kernels, y, xq, W, packed, NULL, x_scale, w_scale, b,
                                x_sum, rows, ldx, in_features, out_features, 0, 0, 0, 0};
    if (packed) {
        run_i8_packed(packed_job);
        return;
    }
    if (matmul_i8_packed(&packed_job))
        return;
    int per_task = job.columns_per_task = columns_per_task(out_features);
    ted_parallel_for((out_features + per_task - 1) / per_task, i8_task, &job);
}

void ted_matmul_i8(float *y, const float *x, const int8_t *W, const float *w_scale,
                   const float *b, int rows, int in_features, int out_features)
{
    matmul_i8(y, x, (ted_matrix){.i8 = W, .scale = w_scale}, b, rows, in_features,
              out_features);
}

void ted_matmul_i8_whole(float *y, const float *x, float x_mult, const int8_t *W,
                         const float *w_scale, const float *b, int rows, int in_features,
                         int out_features)
{
    matmul_i8(y, x, (ted_matrix){.i8 = W, .scale = w_scale, .x_mult = x_mult}, b, rows,
              in_features, out_features);
}

/* ---- int4 weights -------------------------------------------------------------
 * x is quantized as for an int8 product; the kernel of variant/matmul_i4.c
 * splits the output columns over the pool. */

typedef struct i4_job {
    const ted_kernel_table *kernels;
    float *y;
    const int8_t *x;
    const uint8_t *W;
    const float *x_scale, *w_scale, *b;
    int rows, ldx, in_features, out_features, columns_per_task;
} i4_job;

static void i4_task(void *context, int index)
{
    const i4_job *j = context;
    int first, last;
    task_columns(index, j->columns_per_task, j->out_features, &first, &last);
    j->kernels->matmul_i4_columns(j->y, j->out_features, j->x, j->x_scale, j->ldx, j->W,
                                  j->w_scale, j->b, j->rows, j->in_features, first, last);
}

/* Without memory for the quantized x: x as floats against W dequantized. */
static void matmul_i4_float(float *y, const float *x, const uint8_t *W, const float *w_scale,
                            const float *b, int rows, int K, int out)
{
    int groups = ted_i4_groups(K), half = TED_I4_GROUP / 2;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < out; j++) {
            const uint8_t *w = W + (size_t)j * groups * half;
            float sum = 0.0f;
            for (int k = 0; k < K; k++) {
                int g = k / TED_I4_GROUP, c = k % TED_I4_GROUP;
                uint8_t byte = w[g * half + c % half];
                int q = (c < half ? byte & 15 : byte >> 4) - 8;
                sum += x[(size_t)i * K + k] * (q * w_scale[(size_t)j * groups + g]);
            }
            y[(size_t)i * out + j] = b ? sum + b[j] : sum;
        }
}

void ted_matmul_i4(float *y, const float *x, const uint8_t *W, const float *w_scale,
                   const float *b, int rows, int in_features, int out_features)
{
    quantized_x qx;
    if (!quantize_rows(ted_kernels(), x, rows, in_features, (ted_matrix){.scale = w_scale},
                       out_features, &qx)) {
        matmul_i4_float(y, x, W, w_scale, b, rows, in_features, out_features);
        return;
    }
    i4_job job = {ted_kernels(), y, qx.q, W, qx.scale, w_scale, b, rows, qx.ldx, in_features,
                  out_features, columns_per_task(out_features)};
    int per_task = job.columns_per_task;
    ted_parallel_for((out_features + per_task - 1) / per_task, i4_task, &job);
}

/* ---- bfloat16 weights ----------------------------------------------------------
 * x is split into bf16 parts once, on the calling thread, when the set's
 * kernel reads parts (AVX512_BF16) and the product needs them (a lone row,
 * or W as stored); the kernels of variant/matmul_bf16.c split the output
 * columns over the pool as above. */

typedef struct bf16_job {
    const ted_kernel_table *kernels;
    float *y;
    const float *x, *b;
    const uint16_t *parts, *W, *panels;
    int ldp, rows, in_features, out_features, columns_per_task;
    int panel_count, groups, tasks;  /* with panels */
} bf16_job;

static void bf16_task(void *context, int index)
{
    const bf16_job *j = context;
    int first, last;
    task_columns(index, j->columns_per_task, j->out_features, &first, &last);
    j->kernels->matmul_bf16_columns(j->y, j->out_features, j->x, j->parts, j->ldp, j->W, j->b,
                                    j->rows, j->in_features, first, last);
}

/* Panels in groups of 4 (a lone row's tile; two of a widened tile's),
 * spread as matmul_panels's. */
static void bf16_panels_task(void *context, int index)
{
    const bf16_job *j = context;
    int first = (int)((long long)index * j->groups / j->tasks) * 4;
    int last = (int)((long long)(index + 1) * j->groups / j->tasks) * 4;
    j->kernels->matmul_bf16_panels(j->y, j->out_features, j->x, j->parts, j->ldp, j->panels, j->b,
                                   j->rows, j->in_features, j->out_features, first,
                                   last < j->panel_count ? last : j->panel_count);
}

/* y = x W^T + b for a bf16 W: from its panels when it has them, else row
 * by row. */
static void matmul_bf16(float *y, const float *x, const uint16_t *W, const uint16_t *panels,
                        const float *b, int rows, int in_features, int out_features)
{
    bf16_job job = {ted_kernels(), y, x, b, NULL, W, panels, (in_features + 31) / 32 * 32, rows,
                    in_features, out_features, columns_per_task(out_features), 0, 0, 0};
    size_t halves = ted_mul_size(ted_mul_size((size_t)rows, TED_BF16_PARTS), (size_t)job.ldp);
    /* parts for a lone row, or W as stored (several rows in panels widen W) */
    bool split = rows == 1 || !panels;
    uint16_t *parts = split && halves != SIZE_MAX ? thread_scratch(SCRATCH_X, (halves + 1) / 2)
                                                  : NULL;
    /* without memory for the parts, every set's kernel widens W instead */
    if (parts && job.kernels->split_bf16_rows(parts, x, rows, in_features, job.ldp))
        job.parts = parts;
    if (panels) {
        job.panel_count = (out_features + TED_PANEL_COLUMNS - 1) / TED_PANEL_COLUMNS;
        job.groups = (job.panel_count + 3) / 4;
        int tasks = ted_parallel_threads() * 16;
        job.tasks = tasks < job.groups ? tasks : job.groups;
        ted_parallel_for(job.tasks, bf16_panels_task, &job);
        return;
    }
    int per_task = job.columns_per_task;
    ted_parallel_for((out_features + per_task - 1) / per_task, bf16_task, &job);
}

void ted_matmul_bf16(float *y, const float *x, const uint16_t *W, const float *b, int rows,
                     int in_features, int out_features)
{
    matmul_bf16(y, x, W, NULL, b, rows, in_features, out_features);
}

size_t ted_bf16_panels_halves(int rows, int cols)
{
    size_t panels = ((size_t)rows + TED_PANEL_COLUMNS - 1) / TED_PANEL_COLUMNS;
    size_t even = ((size_t)cols + 1) / 2 * 2;
    return ted_mul_size(ted_mul_size(panels, TED_PANEL_COLUMNS), even);
}

void ted_pack_bf16_panels(uint16_t *panels, const uint16_t *W, int rows, int cols)
{
    const int P = TED_PANEL_COLUMNS;
    size_t pairs = ((size_t)cols + 1) / 2;
    for (int first = 0; first < rows; first += P, panels += pairs * 2 * P)
        for (size_t c = 0; c < pairs; c++)
            for (int j = 0; j < P; j++)
                for (int e = 0; e < 2; e++) {
                    size_t k = 2 * c + (size_t)e;
                    bool inside = first + j < rows && k < (size_t)cols;
                    panels[(c * P + (size_t)j) * 2 + (size_t)e] =
                        inside ? W[(size_t)(first + j) * cols + k] : 0;
                }
}

void ted_linear(float *y, const float *x, ted_matrix W, const float *b, int rows,
                int in_features, int out_features)
{
    if (W.panels)
        matmul_panels(y, x, W.panels, b, rows, in_features, out_features);
    else if (W.i8 || W.i8_packed)
        matmul_i8(y, x, W, b, rows, in_features, out_features);
    else if (W.i4)
        ted_matmul_i4(y, x, W.i4, W.scale, b, rows, in_features, out_features);
    else if (W.bf16)
        matmul_bf16(y, x, W.bf16, W.bf16_panels, b, rows, in_features, out_features);
    else
        ted_matmul(y, x, W.f32, b, rows, in_features, out_features);
}

void ted_matrix_i8_row(int8_t *out, ted_matrix W, int row, int cols)
{
    for (int c = 0; c < cols; c++)
        out[c] = i8_element(W, row, c, cols);
}

void ted_matrix_row(float *out, ted_matrix W, int row, int cols, float factor)
{
    if (W.i4) {
        int groups = ted_i4_groups(cols), half = TED_I4_GROUP / 2;
        const uint8_t *w = W.i4 + (size_t)row * groups * half;
        for (int c = 0; c < cols; c++) {
            int g = c / TED_I4_GROUP, k = c % TED_I4_GROUP;
            uint8_t byte = w[g * half + k % half];
            int q = (k < half ? byte & 15 : byte >> 4) - 8;
            out[c] = (q * W.scale[(size_t)row * groups + g]) * factor;
        }
        return;
    }
    if (W.i8 || W.i8_packed) {
        for (int c = 0; c < cols; c++)
            out[c] = (i8_element(W, row, c, cols) * W.scale[row]) * factor;
        return;
    }
    if (W.bf16) {
        const uint16_t *h = W.bf16 + (size_t)row * cols;
        for (int c = 0; c < cols; c++)
            out[c] = ted_bf16_to_float(h[c]) * factor;
        return;
    }
    if (W.panels) {
        const int P = TED_PANEL_COLUMNS;
        const float *w = W.panels + (size_t)(row / P) * P * cols + row % P;
        for (int c = 0; c < cols; c++)
            out[c] = w[(size_t)c * P] * factor;
        return;
    }
    const float *w = W.f32 + (size_t)row * cols;
    for (int c = 0; c < cols; c++)
        out[c] = w[c] * factor;
}
