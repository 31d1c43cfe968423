/* The encoder: Input Embedding + Positional Encoding, then N identical
 * layers of (multi-head self-attention, Add & Norm, feed-forward,
 * Add & Norm), then the optional final LayerNorm. */
#include <stddef.h>

#include "layers/embedding.h"
#include "layers/positional_encoding.h"
#include "model/session.h"

/* Self-attention over the whole source: in (batch, source_len, d_model) ->
 * s->encoder.sublayer (batch, source_len, d_model). Padding keys get no weight. */
static void self_attention(ted_session *s, const ted_attention_weights *w, const float *in,
                           float *weights)
{
    const ted_config *c = &s->model->config;
    ted_activations *a = &s->encoder;
    int d = c->d_model, seq = s->source_len, rows = s->batch * seq;
    ted_attention_shape shape = {s->batch, c->heads, d / c->heads};

    ted_attention_project_qkv(a->qkv, in, w, rows, d);
    ted_attention_store_kv(s->encoder_k, s->encoder_v, a->qkv + d, a->qkv + 2 * d, 3 * d, shape,
                           seq, 0, seq);
    ted_attention_scaled_dot_product(a->merged, weights, seq, a->scores, a->qkv, 3 * d,
                                     s->encoder_k, s->encoder_v, seq, s->source_lengths, shape,
                                     seq, false, 0);
    ted_attention_project_out(a->sublayer, a->merged, w, rows, d);
}

static void encoder_layer(ted_session *s, const ted_encoder_layer *w, float *weights)
{
    const ted_config *c = &s->model->config;
    ted_activations *a = &s->encoder;
    int d = c->d_model, rows = s->batch * s->source_len;
    bool pre = c->norm_first;
    float eps = c->layer_norm_eps;

    const float *in = ted_add_norm_input(a->x, a->normed, &w->norm1, pre, rows, d, eps);
    self_attention(s, &w->self_attention, in, weights);
    ted_add_norm_output(a->x, a->sublayer, &w->norm1, pre, rows, d, eps);

    in = ted_add_norm_input(a->x, a->normed, &w->norm2, pre, rows, d, eps);
    ted_feed_forward(a->sublayer, a->hidden, in, &w->feed_forward, c->activation, rows, d,
                     c->d_ff);
    ted_add_norm_output(a->x, a->sublayer, &w->norm2, pre, rows, d, eps);
}

void ted_encoder_forward(ted_session *s)
{
    const ted_model *m = s->model;
    const ted_config *c = &m->config;
    int d = c->d_model, seq = s->source_len, rows = s->batch * seq;
    float *x = s->encoder.x;

    ted_embed(x, m->weights.src_embedding, s->source_ids, rows, d, m->embedding_scale);
    for (int b = 0; b < s->batch; b++)
        ted_add_positional_encoding(x + (size_t)b * seq * d, m->positional_encoding, 0, seq, d);

    size_t weights_per_layer = (size_t)s->batch * c->heads * seq * seq;
    for (int l = 0; l < c->encoder_layers; l++) {
        float *weights = s->keep_attention ? s->encoder_attention + l * weights_per_layer : NULL;
        encoder_layer(s, &m->weights.encoder[l], weights);
    }
    if (c->encoder_final_norm)
        ted_layer_norm(x, x, &m->weights.encoder_norm, rows, d, c->layer_norm_eps);
}
