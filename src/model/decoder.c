/* The decoder (model/decoder.h), one position at a time.
 *
 * Step t feeds one token per row. Its K and V join the self-attention
 * cache, and its query attends to positions 0..t only: the mask of "masked
 * self-attention" (causal) admits no later position, and none exists yet. */
#include "model/decoder.h"

#include <stddef.h>

#include "layers/embedding.h"
#include "layers/output.h"
#include "layers/positional_encoding.h"

void ted_decoder_cache_memory(const ted_model *m, const float *memory, int batch, int seq,
                              ted_decoder_cache *caches, float *projected)
{
    const ted_config *c = &m->config;
    ted_attention_shape shape = {batch, seq, c->heads, c->d_model / c->heads};
    for (int l = 0; l < c->decoder_layers; l++) {
        caches[l].cross.length = 0;
        ted_attention_cache_kv(caches[l].cross, memory, &m->weights.decoder[l].cross_attention,
                               shape, projected);
        caches[l].cross.length = seq;
    }
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
    ted_attention_mask causal = {NULL, true};
    ted_attention_mask source_padding = {source_lengths, false};

    const float *in = ted_add_norm_input(x, a->normed, &w->norm1, pre, rows, d, eps);
    ted_multi_head_attention(a->sublayer, in, TED_KV_FROM_X, &w->self_attention, cache->self,
                             causal, shape, &a->attention, kept.self);
    cache->self.length += shape.seq;
    ted_add_norm_output(x, a->sublayer, &w->norm1, pre, rows, d, eps);

    in = ted_add_norm_input(x, a->normed, &w->norm2, pre, rows, d, eps);
    ted_multi_head_attention(a->sublayer, in, TED_KV_FROM_CACHE, &w->cross_attention,
                             cache->cross, source_padding, shape, &a->attention, kept.cross);
    ted_add_norm_output(x, a->sublayer, &w->norm2, pre, rows, d, eps);

    in = ted_add_norm_input(x, a->normed, &w->norm3, pre, rows, d, eps);
    ted_feed_forward(a->sublayer, a->hidden, in, &w->feed_forward, c->activation, rows, d,
                     c->d_ff);
    ted_add_norm_output(x, a->sublayer, &w->norm3, pre, rows, d, eps);
}

void ted_decoder_step(const ted_model *m, const int *tokens, int batch, const float *positions,
                      const int *source_lengths, ted_decoder_cache *caches, ted_activations *a,
                      ted_step_attention kept, float *logits)
{
    const ted_config *c = &m->config;
    int d = c->d_model, position = caches[0].self.length;
    float *x = a->x;

    ted_embed(x, m->weights.tgt_embedding, tokens, batch, d, m->embedding_scale);
    for (int b = 0; b < batch; b++)
        ted_add_positional_encoding(x + (size_t)b * d, positions, position, 1, d);

    ted_attention_shape shape = {batch, 1, c->heads, d / c->heads};
    for (int l = 0; l < c->decoder_layers; l++)
        decoder_layer(x, &m->weights.decoder[l], c, shape, source_lengths, &caches[l], a,
                      layer_attention(kept, l, batch, c->heads, &caches[l]));
    if (c->decoder_final_norm)
        ted_layer_norm(x, x, &m->weights.decoder_norm, batch, d, c->layer_norm_eps);
    ted_output_logits(logits, x, &m->weights.generator, batch, d, c->tgt_vocab_size);
}
