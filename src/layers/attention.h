/* Multi-head attention: one module for its three uses in the Transformer,
 *   encoder self-attention          Q, K, V from the source
 *   decoder masked self-attention   Q, K, V from the target prefix; a query
 *                                   sees no later position
 *   encoder-decoder attention       Q from the decoder, K and V from the
 *                                   encoder's output (the "memory")
 * in the steps of "Attention Is All You Need", each a function of
 * attention.c:
 *
 *   project_qkv      Q = x W^Q, K = x W^K, V = x W^V      (batch, seq, heads * query_size)
 *   ted_split_heads  the logical split into heads          -> (batch, heads, seq, query_size)
 *   scores           Q K^T / sqrt(query_size), masked, softmax -> (batch, heads, seq, keys)
 *   weigh            the scores times V                    -> (batch, heads, seq, query_size)
 *   ted_merge_heads  the heads side by side again          -> (batch, seq, heads * query_size)
 *   project_out      W^O, the output projection            -> (batch, seq, d_model)
 *
 * Number of Heads * Query Size is Embedding Size d_model, or another width
 * between the projections (T5). The K and V of
 * every head stay in a cache, (batch, heads, capacity, query_size), which
 * is where ted_split_heads writes them: the decoder's cache grows by one
 * position a step, encoder-decoder attention computes its cache once per
 * source. */
#ifndef TED_LAYERS_ATTENTION_H
#define TED_LAYERS_ATTENTION_H

#include <stdbool.h>

#include "kernels/kernels.h"
#include "layers/relative_position.h"

/* W^Q, W^K, W^V (inner, d_model) and their biases (inner) or none, and W^O
 * (d_model, inner), where inner = heads * query_size (d_model but in T5).
 * Models store the three projections packed as one (3 * d_model, d_model)
 * matrix (PyTorch's in_proj_weight: rows [0, d) W^Q, [d, 2d) W^K,
 * [2d, 3d) W^V) or as three separate matrices; the pointers below are the
 * same either way, and a packed layout is multiplied in one product. The
 * matrices are float or int8 (kernels.h's ted_matrix). */
typedef struct ted_attention_weights {
    ted_matrix q_weight;
    const float *q_bias;
    ted_matrix k_weight;
    const float *k_bias;
    ted_matrix v_weight;
    const float *v_bias;
    ted_matrix out_weight;  /* W^O (d_model, inner) */
    const float *out_bias;  /* (d_model), or NULL */
} ted_attention_weights;

/* The sizes of one call, in the words of docs/learning.md: Batch Size, the
 * query positions (Seq), Number of Heads and Query Size = Embedding Size /
 * Number of Heads. */
typedef struct ted_attention_shape {
    int batch;
    int seq;
    int heads;
    int query_size;
    int d_model;  /* the width of x and out; 0: heads * query_size (T5's may differ) */
} ted_attention_shape;

/* The width of x and out: shape.d_model, or heads * query_size. */
int ted_attention_width(ted_attention_shape shape);

/* The keys and values of every head: k, v (batch, heads, capacity,
 * query_size). `length` positions are filled; a call that projects new K
 * and V writes them at [length, length + seq), and its query i is at
 * position length + i. With `lengths`, every batch row has its own:
 * row b holds lengths[b] positions, takes its new K and V at
 * [lengths[b], lengths[b] + seq) and its query i is at lengths[b] + i (the
 * decoder's rows at different steps); `length` is then the largest. */
typedef struct ted_kv_cache {
    float *k;
    float *v;
    int capacity;
    int length;
    const int *lengths;  /* (batch), or NULL: every row holds `length` */
} ted_kv_cache;

/* Which keys a query may see. visible_keys[b] (or every key, when NULL):
 * keys past a sentence's own length are padding. causal: query i, at
 * position length + i of the cache, also sees no later position (the
 * decoder's masked self-attention). */
typedef struct ted_attention_mask {
    const int *visible_keys;
    bool causal;
} ted_attention_mask;

/* Where K and V come from. */
typedef enum ted_kv_source {
    TED_KV_FROM_X,     /* self-attention: projected from x, split into heads and
                        * appended to the cache */
    TED_KV_FROM_CACHE, /* already in the cache: encoder-decoder attention, whose
                        * K and V ted_attention_cache_kv computed from the memory */
    TED_KV_WRITTEN,    /* self-attention whose caller wrote the K and V of x's
                        * positions into the cache, where TED_KV_FROM_X appends them
                        * (the decoder's, when it projects every position again) */
} ted_kv_source;

/* The keys and values one call attends over: where they come from, the
 * cache that holds them, and which of them each query may see. */
/* Where a query's row of attention's two products lies: query `row` of the
 * `rows` queries of this call, against the `columns` keys of the longest
 * batch row (its scores are columns 0 .. count - 1 of that product). */
typedef struct ted_product_place {
    int row, rows, columns;
} ted_product_place;

/* A model's own attention arithmetic (Marian's, layers/marian_ops.h) in
 * place of ted's kernels: a query's scores q . k_j * scale of `count`
 * keys (count, size), their softmax, and the weights times the values
 * (count, size) -> out (size). */
typedef struct ted_attention_arithmetic {
    void (*dots)(float *scores, const float *q, const float *keys, int count, int size,
                 float scale, ted_product_place at);
    void (*softmax)(float *x, int n);
    void (*weigh)(float *out, const float *weights, const float *values, int count, int size,
                  ted_product_place at);
} ted_attention_arithmetic;

typedef struct ted_attention_keys {
    ted_kv_source source;
    ted_kv_cache cache;
    ted_attention_mask mask;
    const ted_position_bias *bias;  /* added to the scores (T5), or NULL */
    float scale;                    /* the factor of q . k; 0: 1 / sqrt(query_size) */
    const ted_attention_arithmetic *arithmetic;  /* NULL: ted's kernels */
} ted_attention_keys;

/* Buffers one call works in, sized for rows = batch * seq. */
typedef struct ted_attention_scratch {
    float *projected;  /* (rows, 3 * inner): the projections' output */
    float *queries;    /* (batch, heads, seq, query_size): Q split into heads */
    float *context;    /* (batch, heads, seq, query_size): each head's output */
    float *merged;     /* (batch, seq, inner): the heads merged */
    float *scores;     /* (batch, heads, capacity): one query's scores per head */
} ted_attention_scratch;

/* Multi-head attention of x (batch, seq, d_model) -> out (batch, seq,
 * d_model), over the keys and values of keys.cache (with x's own appended
 * first, for TED_KV_FROM_X), each query seeing those keys.mask lets it.
 * kept_weights: NULL, or (batch, heads, seq, capacity) receiving the
 *   attention weights; keys a query may not see get 0. */
void ted_multi_head_attention(float *out, const float *x, const ted_attention_weights *w,
                              ted_attention_keys keys, ted_attention_shape shape,
                              const ted_attention_scratch *scratch, float *kept_weights);

/* K and V of memory (batch, seq, d_model), projected and split into heads
 * into cache positions [cache.length, cache.length + seq). `projected`:
 * scratch of (batch * seq, 2 * inner). */
void ted_attention_cache_kv(ted_kv_cache cache, const float *memory,
                            const ted_attention_weights *w, ted_attention_shape shape,
                            float *projected);

/* The logical split: x (batch, seq, heads * query_size), rows `row_stride`
 * floats apart -> heads (batch, heads, capacity, query_size) at positions
 * [first_position, first_position + seq). */
void ted_split_heads(float *heads, const float *x, int row_stride, ted_attention_shape shape,
                     int capacity, int first_position);

/* The heads side by side again: heads (batch, heads, seq, query_size) ->
 * x (batch, seq, heads * query_size). */
void ted_merge_heads(float *x, const float *heads, ted_attention_shape shape);

#endif
