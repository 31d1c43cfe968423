/* The encoder (model/encoder.h): embeddings, then each layer in turn. */
#include "model/encoder.h"

#include <stddef.h>

#include "layers/embedding.h"
#include "layers/positional_encoding.h"

/* One encoder layer, in place on x (batch, seq, d_model):
 * self-attention, Add & Norm, feed-forward, Add & Norm. */
static void encoder_layer(float *x, const ted_encoder_layer *w, const ted_config *c,
                          ted_attention_shape shape, ted_attention_mask padding,
                          ted_kv_cache self_cache, ted_activations *a, float *kept_weights)
{
    int rows = shape.batch * shape.seq, d = c->d_model;
    bool pre = c->norm_first;
    float eps = c->layer_norm_eps;

    const float *in = ted_add_norm_input(x, a->normed, &w->norm1, pre, rows, d, eps);
    ted_multi_head_attention(a->sublayer, in, TED_KV_FROM_X, &w->self_attention, self_cache,
                             padding, shape, &a->attention, kept_weights);
    ted_add_norm_output(x, a->sublayer, &w->norm1, pre, rows, d, eps);

    in = ted_add_norm_input(x, a->normed, &w->norm2, pre, rows, d, eps);
    ted_feed_forward(a->sublayer, a->hidden, in, &w->feed_forward, c->activation, rows, d,
                     c->d_ff);
    ted_add_norm_output(x, a->sublayer, &w->norm2, pre, rows, d, eps);
}

void ted_encoder_forward(const ted_model *m, const int *source_ids, const int *source_lengths,
                         int batch, int seq, const float *positions, ted_activations *a,
                         ted_kv_cache self_cache, float *kept_attention)
{
    const ted_config *c = &m->config;
    int d = c->d_model, rows = batch * seq;
    float *x = a->x;

    ted_embed(x, m->weights.src_embedding, source_ids, rows, d, m->embedding_scale);
    for (int b = 0; b < batch; b++)
        ted_add_positional_encoding(x + (size_t)b * seq * d, positions, 0, seq, d);

    ted_attention_shape shape = {batch, seq, c->heads, d / c->heads};
    ted_attention_mask padding = {source_lengths, false};
    size_t weights_per_layer = (size_t)batch * c->heads * seq * seq;
    for (int l = 0; l < c->encoder_layers; l++) {
        float *kept = kept_attention ? kept_attention + l * weights_per_layer : NULL;
        self_cache.length = 0;  /* each layer attends over its own K and V */
        encoder_layer(x, &m->weights.encoder[l], c, shape, padding, self_cache, a, kept);
    }
    if (c->encoder_final_norm)
        ted_layer_norm(x, x, &m->weights.encoder_norm, rows, d, c->layer_norm_eps);
}
