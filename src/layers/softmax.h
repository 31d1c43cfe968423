/* Softmax and its logarithm, shifted by the maximum so exp never overflows. */
#ifndef TED_LAYERS_SOFTMAX_H
#define TED_LAYERS_SOFTMAX_H

#include "ted/ted.h"

/* x (n) -> softmax(x), in place; n >= 1. */
void ted_softmax(float *x, int n);

/* x (n) -> log softmax(x), in place: x - max - log(sum(exp(x - max))). */
void ted_log_softmax(float *x, int n);

/* Choosing the next token from a row of them (ted_argmax, ted_top_k, the
 * banned tokens) is the decoding's: ted/ted.h, src/model/decoding.c. */

#endif
