/* The run state of a decoding session: every buffer and cache one decode
 * needs, sized by ted_session_encode() and reused across calls. The model
 * it reads is shared and never written. */
#ifndef TED_MODEL_SESSION_H
#define TED_MODEL_SESSION_H

#include "model/decoder.h"
#include "model/encoder.h"

struct ted_session {
    const ted_model *model;
    bool attention_requested;  /* set by ted_session_keep_attention() */
    bool keep_attention;       /* in effect since the last encode */

    int batch;             /* active rows */
    int source_len;        /* room per row for source positions: the longest source of
                            * the batch (more once rows were appended); shorter ones
                            * are padded */
    int max_steps;         /* self-attention cache capacity */
    int *source_lengths;   /* (batch) */
    int *source_ids;       /* (batch, source_len), padded with pad_id */
    int *steps;            /* (batch): the tokens step() has fed each row */
    float *positions;      /* (max(source_len, max_steps), d_model): the positional
                            * encoding of every position this decode reaches */

    ted_activations encoder;     /* rows = batch * source_len; encoder.x ends as the memory */
    ted_kv_cache encoder_cache;  /* one encoder layer's K and V */

    ted_activations decoder;     /* rows = batch */
    ted_decoder_cache *caches;   /* (decoder_layers): self.length is the largest of steps */
    float *logits;               /* (batch, tgt_vocab_size) */

    /* Kept attention weights, when keep_attention. */
    float *encoder_attention; /* (encoder_layers, batch, heads, source_len, source_len) */
    ted_step_attention step_attention;  /* of the last step: (decoder_layers, batch, heads,
                                         * max_steps) and (..., source_len) */

    float *gather;            /* scratch for ted_session_select() */
    size_t gather_size;
};

#endif
