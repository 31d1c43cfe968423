/* The decoder (model/decoder.h), one position at a time.
 *
 * A step feeds one token per row, row b at its own position t = steps[b]
 * (the rows of a batch are at the same position unless some joined
 * later). Its K and V join the row's self-attention cache at t, and its
 * query attends to the row's positions 0..t only: the mask of "masked
 * self-attention" (causal) admits no later position, and none exists yet. */
#include "model/decoder.h"

#include <stddef.h>

#include "layers/embedding.h"
#include "layers/output.h"
#include "layers/positional_encoding.h"

void ted_decoder_cache_joining_memory(const ted_model *m, const float *memory, int first,
                                      int count, int seq, ted_decoder_cache *caches,
                                      float *projected)
{
    const ted_config *c = &m->config;
    ted_attention_shape shape = {count, seq, c->heads, c->d_model / c->heads};
    for (int l = 0; l < c->decoder_layers; l++) {
        ted_kv_cache rows = caches[l].cross;
        size_t skipped = (size_t)first * c->heads * rows.capacity * shape.query_size;
        rows.k += skipped;
        rows.v += skipped;
        rows.length = 0;
        ted_attention_cache_kv(rows, memory, &m->weights.decoder[l].cross_attention, shape,
                               projected);
    }
}

void ted_decoder_cache_memory(const ted_model *m, const float *memory, int batch, int seq,
                              ted_decoder_cache *caches, float *projected)
{
    ted_decoder_cache_joining_memory(m, memory, 0, batch, seq, caches, projected);
    for (int l = 0; l < m->config.decoder_layers; l++)
        caches[l].cross.length = seq;
}

/* The kept weights of one layer: (batch, heads, capacity) of each. */
static ted_step_attention layer_attention(ted_step_attention kept, int layer, int batch,
                                          int heads, const ted_decoder_cache *cache)
{
    if (!kept.self)
        return kept;
    size_t rows = (size_t)layer * batch * heads;
    return (ted_step_attention){kept.self + rows * cache->self.capacity,
                                kept.cross + rows * cache->cross.capacity};
}

/* One decoder layer, in place on x (batch, 1, d_model): masked
 * self-attention, Add & Norm, encoder-decoder attention, Add & Norm,
 * feed-forward, Add & Norm. */
static void decoder_layer(float *x, const ted_decoder_layer *w, const ted_config *c,
                          ted_attention_shape shape, const int *source_lengths,
                          ted_decoder_cache *cache, ted_activations *a, ted_step_attention kept)
{
    int rows = shape.batch, d = c->d_model;
    bool pre = c->norm_first;
    float eps = c->layer_norm_eps;
    ted_attention_keys self = {TED_KV_FROM_X, cache->self, {NULL, true}};
    ted_attention_keys cross = {TED_KV_FROM_CACHE, cache->cross, {source_lengths, false}};

    const float *in = ted_add_norm_input(x, a->normed, &w->norm1, pre, rows, d, eps);
    ted_multi_head_attention(a->sublayer, in, &w->self_attention, self, shape, &a->attention,
                             kept.self);
    ted_add_norm_output(x, a->sublayer, &w->norm1, pre, rows, d, eps);

    in = ted_add_norm_input(x, a->normed, &w->norm2, pre, rows, d, eps);
    ted_multi_head_attention(a->sublayer, in, &w->cross_attention, cross, shape, &a->attention,
                             kept.cross);
    ted_add_norm_output(x, a->sublayer, &w->norm2, pre, rows, d, eps);

    in = ted_add_norm_input(x, a->normed, &w->norm3, pre, rows, d, eps);
    ted_feed_forward(a->sublayer, a->hidden, in, &w->feed_forward, c->activation,
                     (ted_feed_forward_shape){rows, d, c->d_ff});
    ted_add_norm_output(x, a->sublayer, &w->norm3, pre, rows, d, eps);
}

void ted_decoder_step(const ted_model *m, const int *tokens, int batch, const float *positions,
                      int *steps, const int *source_lengths, ted_decoder_cache *caches,
                      ted_activations *a, ted_step_attention kept, float *logits)
{
    const ted_config *c = &m->config;
    int d = c->d_model, longest = 0;
    float *x = a->x;

    ted_embed(x, m->weights.tgt_embedding, tokens, batch, d, m->embedding_scale);
    for (int b = 0; b < batch; b++) {
        ted_add_positional_encoding(x + (size_t)b * d, positions, steps[b], 1, d);
        longest = steps[b] > longest ? steps[b] : longest;
    }

    ted_attention_shape shape = {batch, 1, c->heads, d / c->heads};
    for (int l = 0; l < c->decoder_layers; l++) {
        caches[l].self.lengths = steps;
        caches[l].self.length = longest;
        decoder_layer(x, &m->weights.decoder[l], c, shape, source_lengths, &caches[l], a,
                      layer_attention(kept, l, batch, c->heads, &caches[l]));
    }
    for (int b = 0; b < batch; b++)
        steps[b]++;
    for (int l = 0; l < c->decoder_layers; l++)
        caches[l].self.length = longest + 1;
    if (c->decoder_final_norm)
        ted_layer_norm(x, x, &m->weights.decoder_norm, batch, d, c->layer_norm_eps);
    ted_output_logits(logits, x, &m->weights.generator, batch, d, c->tgt_vocab_size);
}
