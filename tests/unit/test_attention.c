/* Multi-head attention (ted_multi_head_attention: project Q/K/V, split
 * heads, scaled dot-product, merge heads, W^O) against PyTorch's
 * nn.MultiheadAttention (sequence-first, float64) with 1, 2 and 4 heads:
 *   self-attention over a padded batch (key_padding_mask),
 *   causal self-attention (attn_mask = the causal mask), whole and in chunks,
 *   encoder-decoder attention (query length 3, memory length 5, padded).
 * The attention weights are checked too: PyTorch's per-head weights
 * (average_attn_weights=False), exact zeros where a key is masked, and rows
 * summing to 1. Reference values: tests/unit/layer_fixtures.h.
 * Tolerances: TOL_COMPOSED (1e-4) for outputs and weights of the composed
 * layer, TOL_OP (1e-5) for a row's sum and for single projections.
 * Buffers start as NaN, so a read of anything never written shows up. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_check.h"
#include "layer_fixtures.h"
#include "layers/attention.h"

enum { D = ATT_D, B = ATT_BATCH };

/* PyTorch's packed in_proj_weight, as the model loader binds it. */
static const ted_attention_weights W = {
    {.f32 = att_in_proj_weight},             att_in_proj_bias,
    {.f32 = att_in_proj_weight + D * D},     att_in_proj_bias + D,
    {.f32 = att_in_proj_weight + 2 * D * D}, att_in_proj_bias + 2 * D,
    {.f32 = att_out_proj_weight},            att_out_proj_bias};

static float *filled(size_t n, float value)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = value;
    return p;
}

static float *nans(size_t n)
{
    return filled(n, NAN);
}

/* Scratch for `rows` query rows and a cache of `capacity` positions, NaN
 * so that a read of anything never written shows up. */
static ted_attention_scratch new_scratch(int rows, int heads, int capacity)
{
    return (ted_attention_scratch){nans((size_t)rows * 3 * D), nans((size_t)rows * D),
                                   nans((size_t)rows * D), nans((size_t)rows * D),
                                   nans((size_t)B * heads * capacity)};
}

static void free_scratch(ted_attention_scratch s)
{
    free(s.projected), free(s.queries), free(s.context), free(s.merged), free(s.scores);
}

/* Output rows [first_row, first_row + count) of batch row b, of a
 * (batch, seq, D) result laid out with `seq` rows per batch row, against the
 * expected (batch, expected_seq, D). Returns the max abs diff. */
static double out_rows_diff(const float *out, int seq, const float *expected, int expected_seq,
                            int b, int first_row, int count)
{
    float_diff d = max_abs_diff(out + ((size_t)b * seq) * D,
                                expected + ((size_t)b * expected_seq + first_row) * D,
                                (size_t)count * D);
    return d.max;
}

typedef struct weight_check {
    int heads;
    int seq_q;           /* queries in `weights` */
    int stride;          /* floats between query rows of `weights` */
    int keys;            /* keys in the expected weights */
    int expected_seq_q;  /* queries in the expected weights */
    int first_query;     /* expected query row of weights' query 0 */
    const int *key_counts;  /* real keys of each batch row */
    bool causal;
    const int *compared_queries;  /* per batch row: queries compared with PyTorch (NULL: all) */
} weight_check;

/* weights (B, heads, seq_q, stride) against expected (B, heads,
 * expected_seq_q, keys): PyTorch's values within TOL_COMPOSED, every row
 * summing to 1 within TOL_OP, and exactly 0 on every key a query may not
 * see (padding, the future, and the stride's tail). */
static void check_weights(const float *weights, const float *expected, const weight_check *c,
                          const char *what)
{
    double worst = 0.0, worst_sum = 0.0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < c->heads; h++)
            for (int i = 0; i < c->seq_q; i++) {
                const float *row = weights + (((size_t)b * c->heads + h) * c->seq_q + i) * c->stride;
                int query = c->first_query + i;
                const float *want =
                    expected + (((size_t)b * c->heads + h) * c->expected_seq_q + query) * c->keys;
                int visible = c->key_counts[b];
                if (c->causal && query + 1 < visible)
                    visible = query + 1;
                double sum = 0.0;
                for (int j = 0; j < c->stride; j++) {
                    if (j >= visible)
                        cr_assert(row[j] == 0.0f,
                                  "%s: batch %d head %d query %d key %d is masked but has "
                                  "weight %g",
                                  what, b, h, query, j, (double)row[j]);
                    sum += row[j];
                }
                if (fabs(sum - 1.0) > worst_sum)
                    worst_sum = fabs(sum - 1.0);
                cr_assert(fabs(sum - 1.0) <= TOL_OP,
                          "%s: batch %d head %d query %d: weights sum to %.9g", what, b, h,
                          query, sum);
                if (c->compared_queries && query >= c->compared_queries[b])
                    continue;
                float_diff d = max_abs_diff(row, want, (size_t)c->keys);
                if (d.max > worst)
                    worst = d.max;
                cr_assert(d.max <= TOL_COMPOSED,
                          "%s: batch %d head %d query %d: max abs diff %.3g > %.0e at key %zu "
                          "(got %.9g, expected %.9g)",
                          what, b, h, query, d.max, TOL_COMPOSED, d.index,
                          (double)row[d.index], (double)want[d.index]);
            }
    cr_log_info("%s: weights max abs diff %.3g, |row sum - 1| <= %.3g", what, worst, worst_sum);
}

/* ---- (a) self-attention over a padded batch --------------------------- */

static void self_attention_padded(int heads, const float *expected_out,
                                  const float *expected_weights)
{
    enum { S = ATT_SEQ, CAP = ATT_SEQ + 2 };
    ted_attention_shape shape = {B, S, heads, D / heads, D};
    ted_attention_mask padding = {att_lengths, false};
    char what[48];
    snprintf(what, sizeof what, "self-attention, %d heads", heads);

    ted_kv_cache cache = {nans((size_t)B * CAP * D), nans((size_t)B * CAP * D), CAP, 0, NULL};
    ted_attention_scratch scratch = new_scratch(B * S, heads, CAP);
    float *weights = filled((size_t)B * heads * S * CAP, 123.0f);
    float *out = nans((size_t)B * S * D);

    ted_attention_keys keys = {TED_KV_FROM_X, cache, padding, NULL, 0.0f, NULL};
    ted_multi_head_attention(out, att_x, &W, keys, shape, &scratch, weights);

    double worst = 0.0;
    for (int b = 0; b < B; b++) {  /* padded query rows are not compared */
        double d = out_rows_diff(out, S, expected_out, S, b, 0, att_lengths[b]);
        if (d > worst)
            worst = d;
        cr_assert(d <= TOL_COMPOSED, "%s: batch %d: max abs diff %.3g > %.0e", what, b, d,
                  TOL_COMPOSED);
    }
    cr_log_info("%s: output max abs diff %.3g", what, worst);
    weight_check c = {heads, S, CAP, S, S, 0, att_lengths, false, att_lengths};
    check_weights(weights, expected_weights, &c, what);

    /* Without a weights buffer (the scores scratch instead): the same output. */
    float *out2 = nans((size_t)B * S * D);
    ted_multi_head_attention(out2, att_x, &W, keys, shape, &scratch, NULL);
    ASSERT_CLOSE(out2, out, (size_t)B * S * D, 0.0, "weights NULL vs weights kept");

    free(cache.k), free(cache.v), free(weights), free(out), free(out2);
    free_scratch(scratch);
}

Test(attention, self_padded_1_head)
{
    self_attention_padded(1, att_self_out_h1, att_self_weights_h1);
}

Test(attention, self_padded_2_heads)
{
    self_attention_padded(2, att_self_out_h2, att_self_weights_h2);
}

Test(attention, self_padded_4_heads)
{
    self_attention_padded(4, att_self_out_h4, att_self_weights_h4);
}

/* ---- (b) causal self-attention ---------------------------------------- */

/* The sequence fed in chunks of chunk_sizes[] positions (one chunk of all
 * positions: the whole sequence at once), each chunk's K and V appended to
 * the cache, with the causal mask. With `causal` false each chunk must be
 * one position and the mask is the key count (position + 1) instead. */
static void causal_attention(int heads, const int *chunk_sizes, int chunks, bool causal,
                             const float *expected_out, const float *expected_weights)
{
    enum { S = ATT_CAUSAL_SEQ, CAP = ATT_CAUSAL_SEQ + 3 };
    char what[80];
    snprintf(what, sizeof what, "causal self-attention, %d heads, %d chunk(s)%s", heads, chunks,
             causal ? "" : ", by key count");

    ted_kv_cache cache = {nans((size_t)B * CAP * D), nans((size_t)B * CAP * D), CAP, 0, NULL};
    ted_attention_scratch scratch = new_scratch(B * S, heads, CAP);
    double worst = 0.0;
    for (int c = 0; c < chunks; c++) {
        int n = chunk_sizes[c], position = cache.length;
        cr_assert(causal || n == 1);
        float *x = nans((size_t)B * n * D), *out = nans((size_t)B * n * D);
        float *weights = filled((size_t)B * heads * n * CAP, 123.0f);
        for (int b = 0; b < B; b++)
            memcpy(x + (size_t)b * n * D, att_xc + ((size_t)b * S + position) * D,
                   sizeof(float) * n * D);
        int counts[B];
        for (int b = 0; b < B; b++)
            counts[b] = position + n;
        ted_attention_shape shape = {B, n, heads, D / heads, D};
        ted_attention_mask mask = {causal ? NULL : counts, causal};

        ted_attention_keys keys = {TED_KV_FROM_X, cache, mask, NULL, 0.0f, NULL};
        ted_multi_head_attention(out, x, &W, keys, shape, &scratch, weights);
        cache.length += n;

        for (int b = 0; b < B; b++) {
            double d = out_rows_diff(out, n, expected_out, S, b, position, n);
            if (d > worst)
                worst = d;
            cr_assert(d <= TOL_COMPOSED, "%s: batch %d, positions %d..%d: max abs diff %.3g",
                      what, b, position, position + n - 1, d);
        }
        weight_check wc = {heads, n, CAP, S, S, position, counts, true, NULL};
        check_weights(weights, expected_weights, &wc, what);
        free(x), free(out), free(weights);
    }
    cr_assert_eq(cache.length, S);
    cr_log_info("%s: output max abs diff %.3g", what, worst);
    free(cache.k), free(cache.v);
    free_scratch(scratch);
}

static const int whole[] = {ATT_CAUSAL_SEQ};
static const int in_chunks[] = {1, 2, 1};
static const int by_steps[] = {1, 1, 1, 1};

Test(attention, causal_whole_sequence_1_head)
{
    causal_attention(1, whole, 1, true, att_causal_out_h1, att_causal_weights_h1);
}

Test(attention, causal_whole_sequence_2_heads)
{
    causal_attention(2, whole, 1, true, att_causal_out_h2, att_causal_weights_h2);
}

Test(attention, causal_whole_sequence_4_heads)
{
    causal_attention(4, whole, 1, true, att_causal_out_h4, att_causal_weights_h4);
}

Test(attention, causal_in_chunks_with_first_position)
{
    causal_attention(1, in_chunks, 3, true, att_causal_out_h1, att_causal_weights_h1);
    causal_attention(2, in_chunks, 3, true, att_causal_out_h2, att_causal_weights_h2);
    causal_attention(4, in_chunks, 3, true, att_causal_out_h4, att_causal_weights_h4);
}

Test(attention, causal_one_step_at_a_time_by_key_count)
{
    causal_attention(2, by_steps, 4, false, att_causal_out_h2, att_causal_weights_h2);
    causal_attention(4, by_steps, 4, true, att_causal_out_h4, att_causal_weights_h4);
}

/* ---- (c) encoder-decoder attention ------------------------------------ */

/* K and V computed from the memory once (ted_attention_cache_kv), then the
 * queries attend over the cache. */
static void cross_attention(int heads, const float *expected_out, const float *expected_weights)
{
    enum { Q = ATT_Q_LEN, K = ATT_K_LEN };
    char what[48];
    snprintf(what, sizeof what, "encoder-decoder attention, %d heads", heads);

    ted_kv_cache cache = {nans((size_t)B * K * D), nans((size_t)B * K * D), K, 0, NULL};
    ted_attention_scratch scratch = new_scratch(B * K, heads, K);
    float *weights = filled((size_t)B * heads * Q * K, 123.0f);
    float *out = nans((size_t)B * Q * D);

    ted_attention_cache_kv(cache, att_memory, &W, (ted_attention_shape){B, K, heads, D / heads, D},
                           scratch.projected);
    cache.length = K;
    ted_attention_mask padding = {att_k_lengths, false};
    ted_attention_keys keys = {TED_KV_FROM_CACHE, cache, padding, NULL, 0.0f, NULL};
    ted_attention_shape shape = {B, Q, heads, D / heads, D};
    ted_multi_head_attention(out, att_query, &W, keys, shape, &scratch, weights);

    ASSERT_CLOSE(out, expected_out, (size_t)B * Q * D, TOL_COMPOSED, what);
    weight_check c = {heads, Q, K, K, Q, 0, att_k_lengths, false, NULL};
    check_weights(weights, expected_weights, &c, what);
    free(cache.k), free(cache.v), free(weights), free(out);
    free_scratch(scratch);
}

Test(attention, cross_1_head)
{
    cross_attention(1, att_cross_out_h1, att_cross_weights_h1);
}

Test(attention, cross_2_heads)
{
    cross_attention(2, att_cross_out_h2, att_cross_weights_h2);
}

Test(attention, cross_4_heads)
{
    cross_attention(4, att_cross_out_h4, att_cross_weights_h4);
}

/* ---- split and merge heads -------------------------------------------- */

Test(attention, separate_weights_give_what_packed_weights_give)
{
    enum { S = ATT_SEQ, HEADS = 2 };
    /* the same W^Q, W^K, W^V and biases in three buffers of their own */
    float *q = malloc(sizeof(float) * D * D), *k = malloc(sizeof(float) * D * D),
          *v = malloc(sizeof(float) * D * D);
    float *bias = malloc(sizeof(float) * 3 * D);
    cr_assert(q && k && v && bias);
    memcpy(q, W.q_weight.f32, sizeof(float) * D * D);
    memcpy(k, W.k_weight.f32, sizeof(float) * D * D);
    memcpy(v, W.v_weight.f32, sizeof(float) * D * D);
    /* biases out of order in memory, so they are not stacked either */
    memcpy(bias + 2 * D, W.q_bias, sizeof(float) * D);
    memcpy(bias, W.k_bias, sizeof(float) * D);
    memcpy(bias + D, W.v_bias, sizeof(float) * D);
    ted_attention_weights separate = {ted_matrix_float(q), bias + 2 * D,
                                      ted_matrix_float(k), bias,
                                      ted_matrix_float(v), bias + D,
                                      W.out_weight,        W.out_bias};
    ted_attention_shape shape = {B, S, HEADS, D / HEADS, D};
    ted_attention_mask padding = {att_lengths, false};
    ted_kv_cache cache = {nans((size_t)B * S * D), nans((size_t)B * S * D), S, 0, NULL};
    ted_attention_scratch scratch = new_scratch(B * S, HEADS, S);
    float *packed_out = nans((size_t)B * S * D), *separate_out = nans((size_t)B * S * D);

    ted_attention_keys keys = {TED_KV_FROM_X, cache, padding, NULL, 0.0f, NULL};
    ted_multi_head_attention(packed_out, att_x, &W, keys, shape, &scratch, NULL);
    ted_multi_head_attention(separate_out, att_x, &separate, keys, shape, &scratch, NULL);
    for (int b = 0; b < B; b++) {
        double d = out_rows_diff(separate_out, S, att_self_out_h2, S, b, 0, att_lengths[b]);
        cr_assert(d <= TOL_COMPOSED, "separate Q/K/V, batch %d: max abs diff %.3g vs PyTorch",
                  b, d);
    }
    ASSERT_CLOSE(separate_out, packed_out, (size_t)B * S * D, TOL_OP,
                 "separate vs packed Q/K/V weights");
    free(q), free(k), free(v), free(bias), free(cache.k), free(cache.v);
    free(packed_out), free(separate_out);
    free_scratch(scratch);
}

Test(attention, split_heads_is_the_logical_split_into_the_cache_layout)
{
    enum { S = 3, HEADS = 4, QS = D / HEADS, CAP = 6, FIRST = 2 };
    ted_attention_shape shape = {B, S, HEADS, QS, HEADS * QS};
    float k[B * S * 3 * D], cache_k[B * HEADS * CAP * QS];
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        k[i] = (float)i;
    for (size_t i = 0; i < sizeof cache_k / sizeof cache_k[0]; i++)
        cache_k[i] = -1.0f;
    /* rows of 3 * D floats, K at column D, as in a packed QKV product */
    ted_split_heads(cache_k, k + D, 3 * D, shape, CAP, FIRST);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HEADS; h++)
            for (int p = 0; p < CAP; p++)
                for (int i = 0; i < QS; i++) {
                    size_t at = (((size_t)b * HEADS + h) * CAP + p) * QS + i;
                    float want = -1.0f;
                    if (p >= FIRST && p < FIRST + S)
                        want = k[((size_t)b * S + (p - FIRST)) * 3 * D + D + h * QS + i];
                    cr_assert(cache_k[at] == want,
                              "batch %d head %d position %d [%d]: %g, expected %g", b, h, p, i,
                              (double)cache_k[at], (double)want);
                }
}

Test(attention, merge_heads_puts_the_heads_side_by_side)
{
    enum { S = 3, HEADS = 4, QS = D / HEADS };
    ted_attention_shape shape = {B, S, HEADS, QS, HEADS * QS};
    float heads[B * HEADS * S * QS], merged[B * S * D];
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        heads[i] = (float)i;
    ted_merge_heads(merged, heads, shape);
    /* (batch, heads, seq, query_size) -> (batch, seq, heads * query_size) */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < S; t++)
            for (int h = 0; h < HEADS; h++)
                for (int i = 0; i < QS; i++) {
                    float got = merged[((size_t)b * S + t) * D + h * QS + i];
                    float want = heads[(((size_t)b * HEADS + h) * S + t) * QS + i];
                    cr_assert(got == want, "batch %d position %d head %d [%d]: %g, expected %g",
                              b, t, h, i, (double)got, (double)want);
                }
}
