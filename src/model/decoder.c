/* The decoder (model/decoder.h), one position at a time.
 *
 * A step feeds one token per row, row b at its own position t = steps[b]
 * (the rows of a batch are at the same position unless some joined
 * later). Its K and V join the row's self-attention cache at t, and its
 * query attends to the row's positions 0..t only: the mask of "masked
 * self-attention" (causal) admits no later position, and none exists yet. */
#include "model/decoder.h"

#include <stddef.h>
#include <string.h>

#include "kernels/kernels.h"
#include "layers/embedding.h"
#include "layers/output.h"
#include "layers/positional_encoding.h"

void ted_decoder_cache_memory(const ted_model *m, const float *memory, int batch, int seq,
                              ted_decoder_cache *caches, float *projected)
{
    const ted_config *c = &m->config;
    ted_attention_shape shape = {batch, seq, c->heads, c->query_size, c->d_model};
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

/* Encoder-decoder attention, Add & Norm, feed-forward, Add & Norm: what
 * follows the first sublayer in every kind of decoder layer. */
static void cross_and_feed_forward(const ted_model *m, const ted_decoder_layer *w,
                                   ted_attention_shape shape, ted_decoder_state *st,
                                   const ted_decoder_cache *cache, float *kept_cross)
{
    const ted_layer_kinds *k = &m->kinds;
    const ted_norm *norm = &k->norm;
    ted_activations *a = &st->activations;
    float *x = a->x;
    int rows = shape.batch, d = m->config.d_model;
    ted_attention_keys cross = {TED_KV_FROM_CACHE, cache->cross, {st->source_lengths, false},
                                NULL, m->attention_scale, m->attention_arithmetic};

    const float *in = ted_add_norm_input(x, a->normed, &w->norm2, norm, rows, d);
    ted_multi_head_attention(a->sublayer, in, &w->cross_attention, cross, shape, &a->attention,
                             kept_cross);
    ted_add_norm_output(x, a->sublayer, &w->norm2, norm, rows, d);

    in = ted_add_norm_input(x, a->normed, &w->norm3, norm, rows, d);
    ted_feed_forward(a->sublayer, a->hidden, in, &w->feed_forward, k->feed_forward,
                     (ted_feed_forward_shape){rows, d, m->config.d_ff});
    ted_add_norm_output(x, a->sublayer, &w->norm3, norm, rows, d);
}

/* The input of the first sublayer: st->activations.x, normalized by norm1
 * where the norm comes first. */
static const float *first_sublayer_input(const ted_model *m, const ted_decoder_layer *w,
                                         ted_attention_shape shape, ted_decoder_state *st)
{
    ted_activations *a = &st->activations;
    return ted_add_norm_input(a->x, a->normed, &w->norm1, &m->kinds.norm, shape.batch,
                              m->config.d_model);
}

/* The first sublayer's Add & Norm, then the rest of the layer. */
static void after_first_sublayer(const ted_model *m, const ted_decoder_layer *w,
                                 ted_attention_shape shape, ted_decoder_state *st,
                                 const ted_decoder_cache *cache, ted_step_attention kept)
{
    ted_activations *a = &st->activations;
    ted_add_norm_output(a->x, a->sublayer, &w->norm1, &m->kinds.norm, shape.batch,
                        m->config.d_model);
    cross_and_feed_forward(m, w, shape, st, cache, kept.cross);
}

/* Marian's int8 self-attention keys and values (ted_model.reprojects_self_kv):
 * the layer's input `in` (batch, d_model) joins row b's inputs at its
 * position steps[b]; then the K and V of positions 0..steps[b] of every row
 * are projected again into the self cache, their x quantized with one
 * multiplier, 127 / max |x| over all of them, as Marian's products over its
 * decoder state (the inputs of every position so far of every hypothesis
 * of the batch, one matrix) quantize it. */
static void reproject_self_kv(const ted_model *m, const ted_attention_weights *w,
                              ted_attention_shape shape, const ted_decoder_state *st,
                              const ted_decoder_cache *cache, const float *in)
{
    int d = m->config.d_model, inner = shape.heads * shape.query_size;
    int capacity = cache->self.capacity;
    size_t row = (size_t)capacity * d, heads = (size_t)shape.heads * capacity * shape.query_size;
    float most = 0.0f;
    for (int b = 0; b < shape.batch; b++) {
        float *inputs = cache->inputs + b * row;
        memcpy(inputs + (size_t)st->steps[b] * d, in + (size_t)b * d, sizeof(float) * d);
        float here = ted_max_magnitude(inputs, (size_t)(st->steps[b] + 1) * d);
        most = here > most || here != here ? here : most;
    }
    ted_matrix k = w->k_weight, v = w->v_weight;
    k.x_mult = v.x_mult = ted_i8_whole_mult(most);
    for (int b = 0; b < shape.batch; b++) {
        int n = st->steps[b] + 1;
        const float *x = cache->inputs + b * row;
        float *keys = st->prefix_kv, *values = st->prefix_kv + (size_t)n * inner;
        ted_linear(keys, x, k, w->k_bias, n, d, inner);
        ted_linear(values, x, v, w->v_bias, n, d, inner);
        ted_attention_shape one = {1, n, shape.heads, shape.query_size, d};
        ted_split_heads(cache->self.k + b * heads, keys, inner, one, capacity, 0);
        ted_split_heads(cache->self.v + b * heads, values, inner, one, capacity, 0);
    }
}

/* One decoder layer, in place on st->activations.x (batch, 1, d_model):
 * masked self-attention, Add & Norm, encoder-decoder attention, Add & Norm,
 * feed-forward, Add & Norm. */
static void self_attention_layer(const ted_model *m, const ted_decoder_layer *w,
                                 ted_attention_shape shape, ted_decoder_state *st,
                                 const ted_decoder_cache *cache, ted_step_attention kept)
{
    ted_activations *a = &st->activations;
    const ted_position_bias *bias = m->weights.decoder_bias.table ? &m->weights.decoder_bias
                                                                  : NULL;
    ted_attention_keys self = {TED_KV_FROM_X, cache->self, {NULL, true}, bias,
                               m->attention_scale, m->attention_arithmetic};

    const float *in = first_sublayer_input(m, w, shape, st);
    if (cache->inputs) {
        reproject_self_kv(m, &w->self_attention, shape, st, cache, in);
        self.source = TED_KV_WRITTEN;
    }
    ted_multi_head_attention(a->sublayer, in, &w->self_attention, self, shape, &a->attention,
                             kept.self);
    after_first_sublayer(m, w, shape, st, cache, kept);
}

/* The slot of head h of row b at `position` in a cache of (batch, heads,
 * capacity, query_size). */
static float *cache_slot(float *cache, int capacity, ted_attention_shape shape, int b, int h,
                         int position)
{
    size_t at = (((size_t)b * shape.heads + h) * capacity + position) * shape.query_size;
    return cache + at;
}

/* Row b's (d_model) values to or from the first position of its self
 * cache's keys (`load`: from), where the SSRU keeps its state c. */
static void move_cell(const ted_kv_cache *self, ted_attention_shape shape, int b, float *cell,
                      bool load)
{
    size_t q = (size_t)shape.query_size;
    for (int h = 0; h < shape.heads; h++) {
        float *slot = cache_slot(self->k, self->capacity, shape, b, h, 0);
        for (size_t i = 0; i < q; i++) {
            if (load)
                cell[h * q + i] = slot[i];
            else
                slot[i] = cell[h * q + i];
        }
    }
}

/* What the cell of row b, at position t, still holds of each position j
 * <= t's input: c_t = sum_j (1 - f_j) (prod_{k=j+1..t} f_k) (x_j W), its
 * weights averaged over each head's dimensions, into kept (heads,
 * capacity), where self-attention keeps its weights. The forget gates of
 * positions 0..t are in the row's self cache's values. */
static void keep_shares(const ted_kv_cache *self, ted_attention_shape shape, int b, int t,
                        float *kept)
{
    int q = shape.query_size;
    for (int h = 0; h < shape.heads; h++) {
        float *row = kept + ((size_t)b * shape.heads + h) * self->capacity;
        for (int j = 0; j <= t; j++)
            row[j] = 0.0f;
        for (int i = 0; i < q; i++) {
            float still = 1.0f;  /* prod of the gates after position j */
            for (int j = t; j >= 0; j--) {
                float f = cache_slot(self->v, self->capacity, shape, b, h, j)[i];
                row[j] += (1.0f - f) * still / (float)q;
                still *= f;
            }
        }
    }
}

/* Row b's forget gate (d_model) into its self cache's values at position t. */
static void keep_gate(const ted_kv_cache *self, ted_attention_shape shape, int b, int t,
                      const float *gate)
{
    size_t q = (size_t)shape.query_size;
    for (int h = 0; h < shape.heads; h++) {
        float *slot = cache_slot(self->v, self->capacity, shape, b, h, t);
        for (size_t i = 0; i < q; i++)
            slot[i] = gate[h * q + i];
    }
}

/* Marian's RNN layer: the SSRU, Add & Norm, then as the paper's layer. */
static void ssru_layer(const ted_model *m, const ted_decoder_layer *w,
                       ted_attention_shape shape, ted_decoder_state *st,
                       const ted_decoder_cache *cache, ted_step_attention kept)
{
    ted_activations *a = &st->activations;
    int rows = shape.batch, d = m->config.d_model;
    float *scratch = a->attention.projected;  /* (rows, 3 * d_model) */
    float *gate = scratch + (size_t)rows * d, *cell = scratch + 2 * (size_t)rows * d;
    for (int b = 0; b < rows; b++) {
        if (st->steps[b] == 0)
            for (int i = 0; i < d; i++)
                cell[(size_t)b * d + i] = 0.0f;
        else
            move_cell(&cache->self, shape, b, cell + (size_t)b * d, true);
    }
    const float *in = first_sublayer_input(m, w, shape, st);
    ted_ssru_step(a->sublayer, cell, in, &w->ssru, rows, d, scratch);
    for (int b = 0; b < rows; b++) {
        move_cell(&cache->self, shape, b, cell + (size_t)b * d, false);
        keep_gate(&cache->self, shape, b, st->steps[b], gate + (size_t)b * d);
        if (kept.self)
            keep_shares(&cache->self, shape, b, st->steps[b], kept.self);
    }
    after_first_sublayer(m, w, shape, st, cache, kept);
}

const ted_decoder_layer_kind ted_ssru_decoder_layer = {"ssru", ssru_layer};

const ted_decoder_layer_kind ted_self_attention_decoder_layer = {"self-attention",
                                                                 self_attention_layer};

void ted_decoder_step(const ted_model *m, const int *tokens, int batch, ted_decoder_state *st,
                      float *logits)
{
    const ted_config *c = &m->config;
    const ted_layer_kinds *k = &m->kinds;
    int d = c->d_model, longest = 0, *steps = st->steps;
    ted_decoder_cache *caches = st->caches;
    float *x = st->activations.x;

    ted_embed(x, m->weights.tgt_embedding, tokens, batch, d, m->embedding_scale);
    for (int b = 0; b < batch; b++) {
        if (c->zero_start_embedding && steps[b] == 0)
            for (int i = 0; i < d; i++)
                x[(size_t)b * d + i] = 0.0f;
        ted_padding_position padding = {tokens + b, c->pad_id};
        k->positions->add(x + (size_t)b * d, st->positions, steps[b], 1, d, padding);
        longest = steps[b] > longest ? steps[b] : longest;
    }
    if (c->embedding_norm)
        ted_normalize(x, x, &m->weights.decoder_embedding_norm, &k->norm, batch, d);

    ted_attention_shape shape = {batch, 1, c->heads, c->query_size, d};
    for (int l = 0; l < c->decoder_layers; l++) {
        caches[l].self.lengths = steps;
        caches[l].self.length = longest;
        k->decoder_layer->step(m, &m->weights.decoder[l], shape, st, &caches[l],
                               layer_attention(st->kept, l, batch, c->heads, &caches[l]));
    }
    for (int b = 0; b < batch; b++)
        steps[b]++;
    for (int l = 0; l < c->decoder_layers; l++)
        caches[l].self.length = longest + 1;
    if (c->decoder_final_norm)
        ted_normalize(x, x, &m->weights.decoder_norm, &k->norm, batch, d);
    if (m->output_scale != 1.0f)
        for (size_t i = 0; i < (size_t)batch * d; i++)
            x[i] *= m->output_scale;
    if (st->subset)
        ted_output_logits_subset(x, st->subset, batch, d);
    else
        ted_output_logits(logits, x, &m->weights.generator, batch, d, c->tgt_vocab_size);
}
