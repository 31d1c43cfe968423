/* The run state of a decoding session: every buffer and cache one decode
 * needs, sized by ted_session_encode() and reused across calls. The model
 * it reads is shared and never written. */
#ifndef TED_MODEL_SESSION_H
#define TED_MODEL_SESSION_H

#include "model/model.h"

/* The activations of one pass through a layer stack, for `rows` positions
 * (batch * source_len in the encoder, batch in a decoder step). */
typedef struct ted_activations {
    float *x;         /* (rows, d_model): the residual stream */
    float *normed;    /* (rows, d_model): LayerNorm(x), pre-norm only */
    float *qkv;       /* (rows, 3 * d_model): Q, K, V before the logical split */
    float *merged;    /* (rows, heads * query_size): attention with heads merged */
    float *sublayer;  /* (rows, d_model): the output of a sub-layer */
    float *hidden;    /* (rows, d_ff): inside the feed-forward network */
    float *scores;    /* (batch, heads, keys): attention scores, scratch */
} ted_activations;

struct ted_session {
    const ted_model *model;
    bool attention_requested;  /* set by ted_session_keep_attention() */
    bool keep_attention;       /* in effect since the last encode */

    int batch;             /* active rows */
    int source_len;        /* the longest source of the batch; shorter ones are padded */
    int max_steps;         /* self-attention cache capacity */
    int position;          /* next decoder position */
    int *source_lengths;   /* (batch) */
    int *step_key_counts;  /* (batch): position + 1, keys a decoder step sees */
    int *source_ids;       /* (batch, source_len), padded with pad_id */

    ted_activations encoder;  /* rows = batch * source_len; encoder.x ends as the memory */
    float *encoder_k;         /* (batch, heads, source_len, query_size) */
    float *encoder_v;

    ted_activations decoder;  /* rows = batch */
    float **self_k;           /* per decoder layer: (batch, heads, max_steps, query_size) */
    float **self_v;
    float **cross_k;          /* per decoder layer: (batch, heads, source_len, query_size) */
    float **cross_v;
    float *logits;            /* (batch, tgt_vocab_size) */

    /* Kept attention weights, when keep_attention. */
    float *encoder_attention; /* (encoder_layers, batch, heads, source_len, source_len) */
    float *self_attention;    /* (decoder_layers, batch, heads, max_steps): last step */
    float *cross_attention;   /* (decoder_layers, batch, heads, source_len): last step */

    float *gather;            /* scratch for ted_session_select() */
    size_t gather_size;
};

/* The encoder stack: s->source_ids (batch, source_len) -> the memory in
 * s->encoder.x (batch, source_len, d_model). */
void ted_encoder_forward(ted_session *s);

/* K and V of every decoder layer's encoder-decoder attention, computed from
 * the memory once per source: -> s->cross_k, s->cross_v. */
void ted_decoder_attend_source(ted_session *s);

/* One decoder step: tokens (batch) at s->position -> s->logits
 * (batch, tgt_vocab_size); appends K and V to the self-attention caches. */
void ted_decoder_step(ted_session *s, const int *tokens);

#endif
