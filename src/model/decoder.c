/* The decoder, one position at a time: Output Embedding + Positional
 * Encoding, then N identical layers of (masked multi-head self-attention,
 * Add & Norm, encoder-decoder attention, Add & Norm, feed-forward,
 * Add & Norm), the optional final LayerNorm, and the final Linear.
 *
 * Step t feeds one token per row. Its K and V join the self-attention
 * cache, and its query attends to positions 0..t only: the mask of "masked
 * self-attention" holds by construction, since later positions do not
 * exist yet. */
#include <stddef.h>

#include "layers/embedding.h"
#include "layers/output.h"
#include "layers/positional_encoding.h"
#include "model/session.h"

static ted_attention_shape attention_shape(const ted_session *s)
{
    const ted_config *c = &s->model->config;
    return (ted_attention_shape){s->batch, c->heads, c->d_model / c->heads};
}

void ted_decoder_attend_source(ted_session *s)
{
    const ted_config *c = &s->model->config;
    int d = c->d_model, seq = s->source_len, rows = s->batch * seq;
    float *kv = s->encoder.qkv;  /* the encoder is done with it: (rows, 2 * d_model) */
    for (int l = 0; l < c->decoder_layers; l++) {
        ted_attention_project_kv(kv, s->encoder.x, &s->model->weights.decoder[l].cross_attention,
                                 rows, d);
        ted_attention_store_kv(s->cross_k[l], s->cross_v[l], kv, kv + d, 2 * d,
                               attention_shape(s), seq, 0, seq);
    }
}

/* in (batch, d_model) -> s->decoder.sublayer (batch, d_model) */
static void masked_self_attention(ted_session *s, int layer, const float *in)
{
    const ted_attention_weights *w = &s->model->weights.decoder[layer].self_attention;
    ted_activations *a = &s->decoder;
    int d = s->model->config.d_model;
    ted_attention_shape shape = attention_shape(s);
    float *weights = s->keep_attention
                         ? s->self_attention + (size_t)layer * s->batch * shape.heads * s->max_steps
                         : NULL;

    ted_attention_project_qkv(a->qkv, in, w, s->batch, d);
    ted_attention_store_kv(s->self_k[layer], s->self_v[layer], a->qkv + d, a->qkv + 2 * d, 3 * d,
                           shape, 1, s->position, s->max_steps);
    ted_attention_scaled_dot_product(a->merged, weights, s->max_steps, a->scores, a->qkv, 3 * d,
                                     s->self_k[layer], s->self_v[layer], s->max_steps,
                                     s->step_key_counts, shape, 1, false, s->position);
    ted_attention_project_out(a->sublayer, a->merged, w, s->batch, d);
}

/* Q from the decoder, K and V from the memory: in (batch, d_model) ->
 * s->decoder.sublayer (batch, d_model) */
static void encoder_decoder_attention(ted_session *s, int layer, const float *in)
{
    const ted_attention_weights *w = &s->model->weights.decoder[layer].cross_attention;
    ted_activations *a = &s->decoder;
    int d = s->model->config.d_model;
    ted_attention_shape shape = attention_shape(s);
    float *weights = s->keep_attention ? s->cross_attention + (size_t)layer * s->batch *
                                                                  shape.heads * s->source_len
                                       : NULL;

    ted_attention_project_q(a->qkv, in, w, s->batch, d);
    ted_attention_scaled_dot_product(a->merged, weights, s->source_len, a->scores, a->qkv, d,
                                     s->cross_k[layer], s->cross_v[layer], s->source_len,
                                     s->source_lengths, shape, 1, false, 0);
    ted_attention_project_out(a->sublayer, a->merged, w, s->batch, d);
}

static void decoder_layer(ted_session *s, int layer)
{
    const ted_config *c = &s->model->config;
    const ted_decoder_layer *w = &s->model->weights.decoder[layer];
    ted_activations *a = &s->decoder;
    int d = c->d_model, rows = s->batch;
    bool pre = c->norm_first;
    float eps = c->layer_norm_eps;

    const float *in = ted_add_norm_input(a->x, a->normed, &w->norm1, pre, rows, d, eps);
    masked_self_attention(s, layer, in);
    ted_add_norm_output(a->x, a->sublayer, &w->norm1, pre, rows, d, eps);

    in = ted_add_norm_input(a->x, a->normed, &w->norm2, pre, rows, d, eps);
    encoder_decoder_attention(s, layer, in);
    ted_add_norm_output(a->x, a->sublayer, &w->norm2, pre, rows, d, eps);

    in = ted_add_norm_input(a->x, a->normed, &w->norm3, pre, rows, d, eps);
    ted_feed_forward(a->sublayer, a->hidden, in, &w->feed_forward, c->activation, rows, d,
                     c->d_ff);
    ted_add_norm_output(a->x, a->sublayer, &w->norm3, pre, rows, d, eps);
}

void ted_decoder_step(ted_session *s, const int *tokens)
{
    const ted_model *m = s->model;
    const ted_config *c = &m->config;
    int d = c->d_model;
    float *x = s->decoder.x;

    ted_embed(x, m->weights.tgt_embedding, tokens, s->batch, d, m->embedding_scale);
    for (int b = 0; b < s->batch; b++) {
        ted_add_positional_encoding(x + (size_t)b * d, m->positional_encoding, s->position, 1, d);
        s->step_key_counts[b] = s->position + 1;
    }
    for (int l = 0; l < c->decoder_layers; l++)
        decoder_layer(s, l);
    if (c->decoder_final_norm)
        ted_layer_norm(x, x, &m->weights.decoder_norm, s->batch, d, c->layer_norm_eps);
    ted_output_logits(s->logits, x, &m->weights.generator, s->batch, d, c->tgt_vocab_size);
}
