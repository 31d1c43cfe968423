/* The decoder's final Linear + Softmax: hidden states -> scores over the
 * target vocabulary. */
#ifndef TED_LAYERS_OUTPUT_H
#define TED_LAYERS_OUTPUT_H

#include "kernels/kernels.h"

typedef struct ted_output_weights {
    ted_matrix weight;  /* (tgt_vocab, d_model): PyTorch's generator.weight */
    const float *bias;  /* (tgt_vocab) */
} ted_output_weights;

/* x (rows, d_model) -> logits (rows, tgt_vocab). The softmax is left to the
 * decoding strategy: greedy needs only the argmax, beam search the log; what
 * they choose from (banned tokens, argmax, top-k) is src/model/decoding.c. */
void ted_output_logits(float *logits, const float *x, const ted_output_weights *out, int rows,
                       int d_model, int tgt_vocab);

#endif
