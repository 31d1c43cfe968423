/* The buffers one pass through a layer stack works in, for `rows`
 * positions (batch * source_len in the encoder, batch in a decoder step).
 * The session owns them and hands each stack its own. */
#ifndef TED_MODEL_ACTIVATIONS_H
#define TED_MODEL_ACTIVATIONS_H

#include "layers/attention.h"

typedef struct ted_activations {
    float *x;         /* (rows, d_model): the residual stream */
    float *normed;    /* (rows, d_model): LayerNorm(x), pre-norm only */
    float *sublayer;  /* (rows, d_model): the output of a sub-layer */
    float *hidden;    /* (rows, d_ff): inside the feed-forward network */
    ted_attention_scratch attention;
} ted_activations;

#endif
