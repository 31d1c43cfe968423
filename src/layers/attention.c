#include "layers/attention.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "layers/linear.h"
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

static float dot(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* One head, one query: out (query_size) = sum_j softmax_j(q . k_j * scale) v_j. */
static void attend(float *out, float *probs, const float *q, const float *keys,
                   const float *values, int key_count, int query_size, float scale)
{
    for (int j = 0; j < key_count; j++)
        probs[j] = dot(q, keys + (size_t)j * query_size, query_size) * scale;
    ted_softmax(probs, key_count);
    memset(out, 0, sizeof(float) * query_size);
    for (int j = 0; j < key_count; j++) {
        const float *vj = values + (size_t)j * query_size;
        float p = probs[j];
        for (int i = 0; i < query_size; i++)
            out[i] += p * vj[i];
    }
}

void ted_attention_scaled_dot_product(float *out, float *weights, int weights_stride,
                                      float *scores, const float *q, int q_stride,
                                      const float *k_cache, const float *v_cache, int capacity,
                                      const int *key_counts, ted_attention_shape shape,
                                      int seq_q, bool causal, int first_position)
{
    int d_model = shape.heads * shape.query_size;
    float scale = 1.0f / sqrtf((float)shape.query_size);
    for (int b = 0; b < shape.batch; b++)
        for (int h = 0; h < shape.heads; h++) {
            size_t head = ((size_t)b * shape.heads + h) * capacity * shape.query_size;
            for (int i = 0; i < seq_q; i++) {
                int visible = key_counts[b];
                if (causal && first_position + i + 1 < visible)
                    visible = first_position + i + 1;
                float *probs = scores;
                if (weights) {
                    probs = weights + (((size_t)b * shape.heads + h) * seq_q + i) * weights_stride;
                    memset(probs, 0, sizeof(float) * weights_stride);
                }
                const float *qi =
                    q + ((size_t)b * seq_q + i) * q_stride + (size_t)h * shape.query_size;
                float *oi = out + ((size_t)b * seq_q + i) * d_model + (size_t)h * shape.query_size;
                attend(oi, probs, qi, k_cache + head, v_cache + head, visible, shape.query_size,
                       scale);
            }
        }
}

void ted_attention_project_out(float *out, const float *merged, const ted_attention_weights *w,
                               int rows, int d_model)
{
    ted_linear(out, merged, w->out_proj_weight, w->out_proj_bias, rows, d_model, d_model);
}
