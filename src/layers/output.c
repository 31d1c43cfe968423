#include "layers/output.h"

#include "kernels/kernels.h"

void ted_output_logits(float *logits, const float *x, const ted_output_weights *out, int rows,
                       int d_model, int tgt_vocab)
{
    ted_linear(logits, x, out->weight, out->bias, rows, d_model, tgt_vocab);
}
