/* Softmax and its logarithm, shifted by the maximum so exp never overflows. */
#ifndef TED_LAYERS_SOFTMAX_H
#define TED_LAYERS_SOFTMAX_H

#include "ted/ted.h"

/* x (n) -> softmax(x), in place; n >= 1. */
void ted_softmax(float *x, int n);

/* x (n) -> log softmax(x), in place: x - max - log(sum(exp(x - max))). */
void ted_log_softmax(float *x, int n);

/* The terms of the log softmax of a row (n) that holds values (count) at
 * ids (count, increasing) and -infinity elsewhere, count >= 1: its
 * element ids[j] is values[j] - *max - *log_sum, to the bit what
 * ted_log_softmax writes for the whole row. */
void ted_log_softmax_terms_at(const float *values, const int *ids, int count, int n,
                              float *max, float *log_sum);

/* Choosing the next token from a row of them (ted_argmax, ted_top_k, the
 * banned tokens) is the decoding's: ted/ted.h, src/model/decoding.c. */

#endif
