#include "layers/attention.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/parallel.h"
#include "layers/linear.h"
#include "layers/simd.h"
#include "layers/softmax.h"

void ted_attention_project_qkv(float *qkv, const float *x, const ted_attention_weights *w,
                               int rows, int d_model)
{
    ted_linear(qkv, x, w->in_proj_weight, w->in_proj_bias, rows, d_model, 3 * d_model);
}

void ted_attention_project_q(float *q, const float *x, const ted_attention_weights *w, int rows,
                             int d_model)
{
    ted_linear(q, x, w->in_proj_weight, w->in_proj_bias, rows, d_model, d_model);
}

void ted_attention_project_kv(float *kv, const float *memory, const ted_attention_weights *w,
                              int rows, int d_model)
{
    const float *w_kv = w->in_proj_weight + (size_t)d_model * d_model;
    const float *b_kv = w->in_proj_bias + d_model;
    ted_linear(kv, memory, w_kv, b_kv, rows, d_model, 2 * d_model);
}

void ted_attention_store_kv(float *k_cache, float *v_cache, const float *k, const float *v,
                            int row_stride, ted_attention_shape shape, int seq,
                            int first_position, int capacity)
{
    size_t head_bytes = sizeof(float) * shape.query_size;
    for (int b = 0; b < shape.batch; b++)
        for (int t = 0; t < seq; t++) {
            size_t src_row = ((size_t)b * seq + t) * row_stride;
            for (int h = 0; h < shape.heads; h++) {
                size_t dst = (((size_t)b * shape.heads + h) * capacity + first_position + t) *
                             shape.query_size;
                size_t src = src_row + (size_t)h * shape.query_size;
                memcpy(k_cache + dst, k + src, head_bytes);
                memcpy(v_cache + dst, v + src, head_bytes);
            }
        }
}

/* One head, one query: out (query_size) = sum_j softmax_j(q . k_j * scale) v_j. */
static void attend(float *out, float *probs, const float *q, const float *keys,
                   const float *values, int key_count, int query_size, float scale)
{
    for (int j = 0; j < key_count; j++)
        probs[j] = ted_dot(q, keys + (size_t)j * query_size, query_size) * scale;
    ted_softmax(probs, key_count);
    memset(out, 0, sizeof(float) * query_size);
    for (int j = 0; j < key_count; j++)
        ted_axpy(out, probs[j], values + (size_t)j * query_size, query_size);
}

typedef struct attention_job {
    float *out, *weights, *scores;
    int weights_stride;
    const float *q, *k_cache, *v_cache;
    int q_stride, capacity;
    const int *key_counts;
    ted_attention_shape shape;
    int seq_q;
    bool causal;
    int first_position;
} attention_job;

/* Every query of one (batch row, head) pair. */
static void attend_head(void *context, int index)
{
    const attention_job *j = context;
    ted_attention_shape shape = j->shape;
    int b = index / shape.heads, h = index % shape.heads;
    int d_model = shape.heads * shape.query_size;
    float scale = 1.0f / sqrtf((float)shape.query_size);
    size_t head = (size_t)index * j->capacity * shape.query_size;
    for (int i = 0; i < j->seq_q; i++) {
        int visible = j->key_counts[b];
        if (j->causal && j->first_position + i + 1 < visible)
            visible = j->first_position + i + 1;
        float *probs = j->scores + (size_t)index * j->capacity;
        if (j->weights) {
            probs = j->weights + ((size_t)index * j->seq_q + i) * j->weights_stride;
            memset(probs, 0, sizeof(float) * j->weights_stride);
        }
        const float *qi = j->q + ((size_t)b * j->seq_q + i) * j->q_stride +
                          (size_t)h * shape.query_size;
        float *oi = j->out + ((size_t)b * j->seq_q + i) * d_model + (size_t)h * shape.query_size;
        attend(oi, probs, qi, j->k_cache + head, j->v_cache + head, visible, shape.query_size,
               scale);
    }
}

/* Below this many multiply-adds, handing heads to other threads costs more
 * than it saves. */
enum { PARALLEL_MIN_WORK = 1 << 16 };

void ted_attention_scaled_dot_product(float *out, float *weights, int weights_stride,
                                      float *scores, const float *q, int q_stride,
                                      const float *k_cache, const float *v_cache, int capacity,
                                      const int *key_counts, ted_attention_shape shape,
                                      int seq_q, bool causal, int first_position)
{
    attention_job job = {out, weights, scores, weights_stride, q, k_cache, v_cache, q_stride,
                         capacity, key_counts, shape, seq_q, causal, first_position};
    int pairs = shape.batch * shape.heads;
    long work = 2L * pairs * seq_q * capacity * shape.query_size;
    if (work < PARALLEL_MIN_WORK) {
        for (int index = 0; index < pairs; index++)
            attend_head(&job, index);
        return;
    }
    ted_parallel_for(pairs, attend_head, &job);
}

void ted_attention_project_out(float *out, const float *merged, const ted_attention_weights *w,
                               int rows, int d_model)
{
    ted_linear(out, merged, w->out_proj_weight, w->out_proj_bias, rows, d_model, d_model);
}
