/* The encoder (model/encoder.h): embeddings, then each layer in turn. */
#include "model/encoder.h"

#include <stddef.h>
#include <string.h>

#include "layers/embedding.h"
#include "layers/positional_encoding.h"

/* The feed-forward network over the rows of x (batch, seq, d_model) that
 * hold tokens, into out (batch, seq, d_model); the padding rows of out are
 * 0. A batch of sentences of different lengths is padded to the longest:
 * the network works on each position alone, so the padding rows need not
 * be computed. The token rows go through `packed` and `packed_out` (rows,
 * d_model each; the attention's buffers, free by now). */
static void feed_forward_tokens(float *out, const float *x, const ted_encoder_layer *w,
                                const ted_model *m, ted_attention_shape shape,
                                const int *lengths, ted_activations *a)
{
    const ted_config *c = &m->config;
    const ted_feed_forward_kind *kind = m->kinds.feed_forward;
    int rows = shape.batch * shape.seq, d = c->d_model, tokens = 0;
    for (int b = 0; lengths && b < shape.batch; b++)
        tokens += lengths[b];
    if (!lengths || tokens == rows) {
        ted_feed_forward(out, a->hidden, x, &w->feed_forward, kind,
                         (ted_feed_forward_shape){rows, d, c->d_ff});
        return;
    }
    float *packed = a->attention.queries, *packed_out = a->attention.context;
    size_t row_bytes = sizeof(float) * (size_t)d;
    for (int b = 0, at = 0; b < shape.batch; at += lengths[b++])
        memcpy(packed + (size_t)at * d, x + (size_t)b * shape.seq * d, row_bytes * lengths[b]);
    ted_feed_forward(packed_out, a->hidden, packed, &w->feed_forward, kind,
                     (ted_feed_forward_shape){tokens, d, c->d_ff});
    memset(out, 0, row_bytes * rows);
    for (int b = 0, at = 0; b < shape.batch; at += lengths[b++])
        memcpy(out + (size_t)b * shape.seq * d, packed_out + (size_t)at * d,
               row_bytes * lengths[b]);
}

/* One encoder layer, in place on st->activations.x (batch, seq, d_model):
 * self-attention, Add & Norm, feed-forward, Add & Norm. kept_weights: NULL,
 * or (batch, heads, seq, seq). */
static void encoder_layer(const ted_model *m, const ted_encoder_layer *w,
                          ted_attention_shape shape, ted_encoder_state *st, float *kept_weights)
{
    const ted_norm *norm = &m->kinds.norm;
    ted_activations *a = &st->activations;
    float *x = a->x;
    int rows = shape.batch * shape.seq, d = m->config.d_model;
    ted_attention_mask padding = {st->source_lengths, false};
    ted_attention_keys self = {TED_KV_FROM_X, st->layer_kv, padding, m->weights.encoder_bias.table
                               ? &m->weights.encoder_bias : NULL, m->attention_scale,
                               m->attention_arithmetic};
    self.cache.length = 0;  /* each layer attends over its own K and V */

    const float *in = ted_add_norm_input(x, a->normed, &w->norm1, norm, rows, d);
    ted_multi_head_attention(a->sublayer, in, &w->self_attention, self, shape, &a->attention,
                             kept_weights);
    ted_add_norm_output(x, a->sublayer, &w->norm1, norm, rows, d);

    in = ted_add_norm_input(x, a->normed, &w->norm2, norm, rows, d);
    feed_forward_tokens(a->sublayer, in, w, m, shape, st->source_lengths, a);
    ted_add_norm_output(x, a->sublayer, &w->norm2, norm, rows, d);
}

void ted_encoder_forward(const ted_model *m, const int *source_ids, int batch, int seq,
                         ted_encoder_state *st)
{
    const ted_config *c = &m->config;
    const ted_layer_kinds *k = &m->kinds;
    int d = c->d_model, rows = batch * seq;
    float *x = st->activations.x;

    ted_embed(x, m->weights.src_embedding, source_ids, rows, d, m->embedding_scale);
    for (int b = 0; b < batch; b++) {
        ted_padding_position padding = {source_ids + (size_t)b * seq, c->pad_id};
        k->positions->add(x + (size_t)b * seq * d, st->positions, 0, seq, d, padding);
    }
    if (c->embedding_norm)
        ted_normalize(x, x, &m->weights.encoder_embedding_norm, &k->norm, rows, d);

    ted_attention_shape shape = {batch, seq, c->heads, c->query_size, d};
    size_t weights_per_layer = (size_t)batch * c->heads * seq * seq;
    for (int l = 0; l < c->encoder_layers; l++) {
        float *kept = st->kept_attention ? st->kept_attention + l * weights_per_layer : NULL;
        encoder_layer(m, &m->weights.encoder[l], shape, st, kept);
    }
    if (c->encoder_final_norm)
        ted_normalize(x, x, &m->weights.encoder_norm, &k->norm, rows, d);
}
