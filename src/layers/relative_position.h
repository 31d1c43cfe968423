/* T5's relative position bias: no position is added to the embeddings;
 * instead every attention score q_i . k_j gets a learned bias of its head
 * and of the bucket of the distance j - i (key position minus query
 * position):
 *   distances below max_exact = buckets / 2 (per direction) have a bucket
 *   each; longer ones share log-spaced buckets up to max_distance, and all
 *   from max_distance on share the last one.
 * Bidirectional (the encoder): half the buckets for keys after the query,
 * half for the others; unidirectional (the decoder's self-attention): keys
 * after the query are never seen, and every bucket is for distances back.
 * A stack has one table, in its first layer, that all its layers use. */
#ifndef TED_LAYERS_RELATIVE_POSITION_H
#define TED_LAYERS_RELATIVE_POSITION_H

#include <stdbool.h>

/* What the bucket rule reads: the config's relative_buckets and
 * relative_max_distance, and the direction. */
typedef struct ted_bucket_rule {
    int buckets;
    int max_distance;
    bool bidirectional;
} ted_bucket_rule;

/* The bucket of the distance `relative` = key - query, in [0, buckets):
 * Hugging Face's T5Attention._relative_position_bucket, in its float
 * arithmetic. */
int ted_relative_bucket(int relative, ted_bucket_rule rule);

/* The distances beyond which the bucket no longer changes: a table of
 * 2 * ted_bucket_reach(rule) + 1 buckets covers every distance. */
int ted_bucket_reach(ted_bucket_rule rule);

/* buckets (2 * reach + 1): the bucket of distance r at [r + reach], for
 * r in [-reach, reach]. */
void ted_fill_buckets(int *buckets, int reach, ted_bucket_rule rule);

/* A stack's bias, as attention reads it. */
typedef struct ted_position_bias {
    const float *table;  /* (buckets, heads): the bias of each bucket for each head
                          * (relative_attention_bias.weight) */
    const int *buckets;  /* (2 * reach + 1): ted_fill_buckets' */
    int reach;
    int heads;
} ted_position_bias;

/* scores[j] += the bias of head h for key j (j < count) of the query at
 * position `query`. scores (count). */
void ted_add_position_bias(float *scores, const ted_position_bias *bias, int head, int query,
                           int count);

#endif
