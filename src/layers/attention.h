/* Multi-head attention, one module for its three uses:
 *   encoder self-attention          Q, K, V from the source
 *   decoder masked self-attention   Q, K, V from the target prefix (causal)
 *   encoder-decoder attention       Q from the decoder, K and V from the
 *                                   encoder output (the "memory")
 *
 * Q, K and V come from one Linear layer of 3 * d_model outputs (PyTorch's
 * packed in_proj_weight: rows [0, d) are W^Q, [d, 2d) W^K, [2d, 3d) W^V).
 * The heads are a logical split of each: head h owns columns
 * [h * query_size, (h + 1) * query_size), query_size = d_model / heads.
 * Q is read in place through that split. K and V are stored split,
 * (batch, heads, positions, query_size), so that each head's keys are
 * contiguous: this is also the layout of the decoder's caches. Each head's
 * output is written straight into its columns of the merged
 * (batch, seq, heads * query_size) matrix, so merging the heads costs
 * nothing before the output projection W^O. */
#ifndef TED_LAYERS_ATTENTION_H
#define TED_LAYERS_ATTENTION_H

#include <stdbool.h>

typedef struct ted_attention_weights {
    const float *in_proj_weight;   /* (3 * d_model, d_model): W^Q, W^K, W^V */
    const float *in_proj_bias;     /* (3 * d_model) */
    const float *out_proj_weight;  /* (d_model, d_model): W^O */
    const float *out_proj_bias;    /* (d_model) */
} ted_attention_weights;

typedef struct ted_attention_shape {
    int batch;
    int heads;        /* Number of Heads */
    int query_size;   /* Query Size = d_model / heads */
} ted_attention_shape;

/* Q, K and V in one product: x (rows, d_model) -> qkv (rows, 3 * d_model). */
void ted_attention_project_qkv(float *qkv, const float *x, const ted_attention_weights *w,
                               int rows, int d_model);

/* Q alone (encoder-decoder attention): x (rows, d_model) -> q (rows, d_model). */
void ted_attention_project_q(float *q, const float *x, const ted_attention_weights *w, int rows,
                             int d_model);

/* K and V alone, in one product: memory (rows, d_model) -> kv (rows, 2 * d_model). */
void ted_attention_project_kv(float *kv, const float *memory, const ted_attention_weights *w,
                              int rows, int d_model);

/* Logical split of K and V into the cache layout.
 * k, v: (batch, seq, heads * query_size), rows `row_stride` floats apart
 *   (3 * d_model when they point into a qkv product)
 * -> k_cache, v_cache: (batch, heads, capacity, query_size), positions
 *   [first_position, first_position + seq). */
void ted_attention_store_kv(float *k_cache, float *v_cache, const float *k, const float *v,
                            int row_stride, ted_attention_shape shape, int seq,
                            int first_position, int capacity);

/* Scaled dot-product attention of every head, softmax(Q K^T / sqrt(query_size)) V.
 * q: (batch, seq_q, heads * query_size), rows `q_stride` floats apart
 * k_cache, v_cache: (batch, heads, capacity, query_size)
 * key_counts[b]: keys [0, key_counts[b]) of row b are real; the rest is
 *   padding and gets no weight.
 * causal: query i is at position first_position + i and sees only keys at
 *   positions <= its own (decoder self-attention over a whole prefix).
 * out: (batch, seq_q, heads * query_size), the heads merged.
 * weights: NULL, or (batch, heads, seq_q, weights_stride) receiving the
 *   attention weights; keys a query may not see get 0.
 * scores: scratch of (batch, heads, capacity) floats, so that heads can be
 *   computed in parallel. */
void ted_attention_scaled_dot_product(float *out, float *weights, int weights_stride,
                                      float *scores, const float *q, int q_stride,
                                      const float *k_cache, const float *v_cache, int capacity,
                                      const int *key_counts, ted_attention_shape shape,
                                      int seq_q, bool causal, int first_position);

/* W^O over the merged heads: merged (rows, d_model) -> out (rows, d_model). */
void ted_attention_project_out(float *out, const float *merged, const ted_attention_weights *w,
                               int rows, int d_model);

#endif
