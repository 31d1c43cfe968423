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

/* The final Linear restricted to some target tokens (a vocabulary
 * shortlist): their rows of the weight and bias, gathered once per batch. */
typedef struct ted_output_subset {
    const int *ids;            /* (count): the target ids kept, increasing */
    int count;
    ted_output_weights rows;   /* weight (count, d_model), bias (count) or NULL */
    float *scores;             /* (rows of a step, count): scratch, the kept logits */
} ted_output_subset;

/* Bytes ted_output_gather needs in `storage` for `count` rows. */
size_t ted_output_gather_bytes(const ted_output_weights *out, int count, int d_model);

/* subset->rows = the rows subset->ids of `out`, written into `storage`
 * (ted_output_gather_bytes, aligned for floats): int8 rows and their
 * scales as they are, float rows in panels (kernels.h). */
void ted_output_gather(ted_output_subset *subset, const ted_output_weights *out, int d_model,
                       void *storage);

/* x (rows, d_model) -> subset->scores (rows, subset->count): the
 * subset's logits, the rest of the vocabulary untouched. */
void ted_output_logits_subset(const float *x, const ted_output_subset *subset, int rows,
                              int d_model);

/* subset->scores (rows, subset->count) -> logits (rows, tgt_vocab): each
 * score at its id, -infinity at every other id, so that a softmax over
 * the row is the softmax over the subset. */
void ted_output_spread_subset(float *logits, const ted_output_subset *subset, int rows,
                              int tgt_vocab);

#endif
