/* The simpler simple recurrent unit (SSRU, Kim et al. 2019), the decoder's
 * first sublayer in Marian's transformer-decoder-autoreg: rnn with dec-cell:
 * ssru, as Firefox Translations' student models have it. At each step t:
 *   f_t = sigmoid(x_t W_f + b_f)          the forget gate
 *   c_t = f_t * c_{t-1} + (1 - f_t) * (x_t W)
 *   h_t = ReLU(c_t)
 * c_{-1} = 0. Only c is carried from step to step: one vector per row,
 * where self-attention keeps every earlier position's keys and values.
 * The sigmoid is Marian's (layers/marian_ops.h): the SSRU is a layer of
 * Marian's models alone. */
#ifndef TED_LAYERS_SSRU_H
#define TED_LAYERS_SSRU_H

#include "kernels/kernels.h"

typedef struct ted_ssru_weights {
    ted_matrix weight;         /* W as a Linear's (d_model, d_model): (out, in) */
    ted_matrix forget_weight;  /* W_f, likewise */
    const float *forget_bias;  /* b_f (d_model) */
} ted_ssru_weights;

/* One step of `rows` rows: x (rows, d_model) in; cell (rows, d_model)
 * holds c_{t-1} and receives c_t; h (rows, d_model) receives ReLU(c_t);
 * scratch (2, rows, d_model), whose second half holds the forget gate f_t
 * (rows, d_model) on return. */
void ted_ssru_step(float *h, float *cell, const float *x, const ted_ssru_weights *w,
                   int rows, int d_model, float *scratch);

#endif
