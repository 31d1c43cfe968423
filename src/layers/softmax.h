/* Softmax and its logarithm, shifted by the maximum so exp never overflows. */
#ifndef TED_LAYERS_SOFTMAX_H
#define TED_LAYERS_SOFTMAX_H

#include "ted/ted.h"

/* x (n) -> softmax(x), in place; n >= 1. */
void ted_softmax(float *x, int n);

/* x (n) -> log softmax(x), in place: x - max - log(sum(exp(x - max))). */
void ted_log_softmax(float *x, int n);

/* ted_argmax(), the index of the largest logit, is declared in ted/ted.h. */

#endif
