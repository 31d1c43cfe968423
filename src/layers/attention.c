#include "layers/attention.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/kernels.h"
#include "layers/softmax.h"

/* ---- project -------------------------------------------------------------- */

/* Q, K, V as the Linear layers give them: (rows, inner) each, rows
 * `stride` floats apart. */
typedef struct projections {
    const float *q, *k, *v;
    int stride;
} projections;

/* `count` (at most 3) Linear layers of the same input: W[i] (inner,
 * d_model) and b[i] (inner) or NULL. */
typedef struct linears {
    ted_matrix W[3];
    const float *b[3];
    int count;
} linears;

/* True when the matrices W[i] (d, in) and biases b[i] follow one another in
 * memory, as in a packed in_proj_weight (and so do their panels, which
 * needs d to be a whole number of panels). */
static bool stacked(const linears *l, int in, int d)
{
    for (int i = 1; i < l->count; i++) {
        bool bias_follows = l->b[0] ? l->b[i] == l->b[0] + (size_t)i * d : l->b[i] == NULL;
        ted_matrix expected = ted_matrix_rows(l->W[0], (size_t)i * d, in);
        if (l->W[i].f32 != expected.f32 || l->W[i].i8 != expected.i8 ||
            l->W[i].scale != expected.scale || l->W[i].i8_packed != expected.i8_packed ||
            l->W[i].panels != expected.panels ||
            l->W[i].bf16 != expected.bf16 || l->W[i].i4 != expected.i4 ||
            !bias_follows)
            return false;
    }
    return true;
}

/* x (rows, in) through the projections l -> out[i] (rows, d), in `y`: one
 * product of count * d outputs when the weights are stacked (rows count * d
 * floats apart), else one product each. Returns the row stride. */
static int project(float *y, const float **out, const float *x, const linears *l, int rows,
                   int in, int d)
{
    if (stacked(l, in, d)) {
        ted_linear(y, x, l->W[0], l->b[0], rows, in, l->count * d);
        for (int i = 0; i < l->count; i++)
            out[i] = y + (size_t)i * d;
        return l->count * d;
    }
    for (int i = 0; i < l->count; i++) {
        float *block = y + (size_t)i * rows * d;
        ted_linear(block, x, l->W[i], l->b[i], rows, in, d);
        out[i] = block;
    }
    return d;
}

/* Q from x (rows, in), and K and V too when they are projected (in the same
 * product as Q when the weights are packed), into y (rows, 3 * d). */
static projections project_qkv(float *y, const float *x, ted_kv_source kv,
                               const ted_attention_weights *w, int rows, int in, int d)
{
    linears l = {{w->q_weight, w->k_weight, w->v_weight},
                 {w->q_bias, w->k_bias, w->v_bias},
                 kv == TED_KV_FROM_X ? 3 : 1};
    const float *out[3] = {NULL, NULL, NULL};
    int stride = project(y, out, x, &l, rows, in, d);
    return (projections){out[0], out[1], out[2], stride};
}

int ted_attention_width(ted_attention_shape shape)
{
    return shape.d_model ? shape.d_model : shape.heads * shape.query_size;
}

/* ---- split_heads and merge_heads ------------------------------------------ */

/* As ted_split_heads, batch row b at its own first position
 * first_positions[b] (NULL: every row at first_position). */
static void split_heads_at(float *heads, const float *x, int row_stride,
                           ted_attention_shape shape, int capacity, const int *first_positions,
                           int first_position)
{
    size_t head_bytes = sizeof(float) * shape.query_size;
    for (int b = 0; b < shape.batch; b++)
        for (int t = 0; t < shape.seq; t++) {
            const float *row = x + ((size_t)b * shape.seq + t) * row_stride;
            int position = (first_positions ? first_positions[b] : first_position) + t;
            for (int h = 0; h < shape.heads; h++) {
                size_t at = ((size_t)b * shape.heads + h) * capacity + position;
                memcpy(heads + at * shape.query_size, row + (size_t)h * shape.query_size,
                       head_bytes);
            }
        }
}

void ted_split_heads(float *heads, const float *x, int row_stride, ted_attention_shape shape,
                     int capacity, int first_position)
{
    split_heads_at(heads, x, row_stride, shape, capacity, NULL, first_position);
}

void ted_merge_heads(float *x, const float *heads, ted_attention_shape shape)
{
    size_t head_bytes = sizeof(float) * shape.query_size;
    int d_model = shape.heads * shape.query_size;
    for (int b = 0; b < shape.batch; b++)
        for (int h = 0; h < shape.heads; h++)
            for (int t = 0; t < shape.seq; t++) {
                size_t from = (((size_t)b * shape.heads + h) * shape.seq + t) * shape.query_size;
                size_t to = ((size_t)b * shape.seq + t) * d_model + (size_t)h * shape.query_size;
                memcpy(x + to, heads + from, head_bytes);
            }
}

/* ---- scaled dot-product attention, one head at a time --------------------- */

typedef struct heads_job {
    const float *queries;  /* (batch, heads, seq, query_size) */
    float *context;        /* (batch, heads, seq, query_size) */
    float *scores;         /* (batch, heads, capacity) scratch */
    float *kept_weights;   /* NULL or (batch, heads, seq, capacity) */
    ted_kv_cache cache;    /* the lengths before this call */
    int appended;          /* the keys this call added to each row: seq, or 0 */
    ted_attention_mask mask;
    const ted_position_bias *bias;  /* or NULL */
    float scale;           /* of q . k */
    const ted_attention_arithmetic *arithmetic;  /* or NULL: ted's kernels */
    ted_attention_shape shape;
} heads_job;

/* Where one query is: its head, its position in the keys' sequence (for
 * the position bias), and its place in the call's products. */
typedef struct query_place {
    int head;
    int position;
    ted_product_place product;
} query_place;

/* One query's scores: q (query_size) against the first `visible` keys
 * (visible, query_size), scaled by j->scale (1 / sqrt(query_size), or 1),
 * plus j->bias (or none) for the query's head and position, then softmax
 * -> weights (visible). The mask is `visible`: later keys get no score. */
static inline void scores(float *weights, const float *q, const float *keys, int visible,
                          const heads_job *j, query_place at)
{
    int size = j->shape.query_size;
    if (j->arithmetic)
        j->arithmetic->dots(weights, q, keys, visible, size, j->scale, at.product);
    else
        ted_scaled_dots(weights, q, keys, visible, size, j->scale);
    if (j->bias)
        ted_add_position_bias(weights, j->bias, at.head, at.position, visible);
    if (j->arithmetic)
        j->arithmetic->softmax(weights, visible);
    else
        ted_softmax(weights, visible);
}

/* One query's context: the weights (visible) times the values (visible,
 * query_size) -> context (query_size). */
static inline void weigh(float *context, const float *weights, const float *values,
                         int visible, const heads_job *j, query_place at)
{
    if (j->arithmetic)
        j->arithmetic->weigh(context, weights, values, visible, j->shape.query_size,
                             at.product);
    else
        ted_weighted_sum(context, weights, values, visible, j->shape.query_size);
}

/* The position of batch row b's query 0: the keys the row held before. */
static int first_position(const heads_job *j, int b)
{
    return j->cache.lengths ? j->cache.lengths[b] : j->cache.length;
}

/* The keys query i of batch row b may see: [0, visible). */
static int visible_keys(const heads_job *j, int b, int i)
{
    int first = first_position(j, b);
    int visible = first + j->appended;
    if (j->mask.visible_keys && j->mask.visible_keys[b] < visible)
        visible = j->mask.visible_keys[b];
    if (j->mask.causal && first + i + 1 < visible)
        visible = first + i + 1;
    return visible;
}

/* Every query of one (batch row, head) pair:
 * context_i = softmax(q_i K^T * scale + bias) V over the visible keys. */
static void attend_head(void *context, int index)
{
    const heads_job *j = context;
    ted_attention_shape shape = j->shape;
    int b = index / shape.heads, capacity = j->cache.capacity, size = shape.query_size;
    int head = index % shape.heads, columns = j->cache.length + j->appended;
    const float *keys = j->cache.k + (size_t)index * capacity * size;
    const float *values = j->cache.v + (size_t)index * capacity * size;
    for (int i = 0; i < shape.seq; i++) {
        size_t query = (size_t)index * shape.seq + i;
        int visible = visible_keys(j, b, i);
        float *weights = j->scores + (size_t)index * capacity;
        if (j->kept_weights) {
            weights = j->kept_weights + query * capacity;
            memset(weights, 0, sizeof(float) * capacity);
        }
        query_place at = {head, first_position(j, b) + i, {i, shape.seq, columns}};
        scores(weights, j->queries + query * size, keys, visible, j, at);
        weigh(j->context + query * size, weights, values, visible, j, at);
    }
}

/* Below this many multiply-adds, handing heads to other threads costs more
 * than it saves. */
enum { PARALLEL_MIN_WORK = 1 << 16 };

static void attend_every_head(const heads_job *job)
{
    ted_attention_shape shape = job->shape;
    int pairs = shape.batch * shape.heads;
    long keys = job->cache.length + job->appended;  /* the longest row's */
    long work = 2L * pairs * shape.seq * keys * shape.query_size;
    if (work < PARALLEL_MIN_WORK) {
        for (int index = 0; index < pairs; index++)
            attend_head((void *)job, index);
        return;
    }
    ted_parallel_for(pairs, attend_head, (void *)job);
}

/* ---- the whole module ------------------------------------------------------ */

/* W^O: the merged heads (rows, inner) -> out (rows, d_model). */
static void project_out(float *out, const float *merged, const ted_attention_weights *w,
                        int rows, int inner, int d_model)
{
    ted_linear(out, merged, w->out_weight, w->out_bias, rows, inner, d_model);
}

void ted_multi_head_attention(float *out, const float *x, const ted_attention_weights *w,
                              ted_attention_keys keys, ted_attention_shape shape,
                              const ted_attention_scratch *scratch, float *kept_weights)
{
    int inner = shape.heads * shape.query_size, rows = shape.batch * shape.seq;
    int d_model = ted_attention_width(shape);
    projections p = project_qkv(scratch->projected, x, keys.source, w, rows, d_model, inner);
    ted_kv_cache cache = keys.cache;

    ted_split_heads(scratch->queries, p.q, p.stride, shape, shape.seq, 0);
    if (keys.source == TED_KV_FROM_X) {
        split_heads_at(cache.k, p.k, p.stride, shape, cache.capacity, cache.lengths,
                       cache.length);
        split_heads_at(cache.v, p.v, p.stride, shape, cache.capacity, cache.lengths,
                       cache.length);
    }
    int appended = keys.source == TED_KV_FROM_CACHE ? 0 : shape.seq;

    float scale = keys.scale ? keys.scale : 1.0f / sqrtf((float)shape.query_size);
    heads_job job = {scratch->queries, scratch->context, scratch->scores, kept_weights,
                     cache, appended, keys.mask, keys.bias, scale, keys.arithmetic, shape};
    attend_every_head(&job);

    ted_merge_heads(scratch->merged, scratch->context, shape);
    project_out(out, scratch->merged, w, rows, inner, d_model);
}

void ted_attention_cache_kv(ted_kv_cache cache, const float *memory,
                            const ted_attention_weights *w, ted_attention_shape shape,
                            float *projected)
{
    int inner = shape.heads * shape.query_size, rows = shape.batch * shape.seq;
    linears l = {{w->k_weight, w->v_weight}, {w->k_bias, w->v_bias}, 2};
    const float *kv[2];
    int stride = project(projected, kv, memory, &l, rows, ted_attention_width(shape), inner);
    ted_split_heads(cache.k, kv[0], stride, shape, cache.capacity, cache.length);
    ted_split_heads(cache.v, kv[1], stride, shape, cache.capacity, cache.length);
}
