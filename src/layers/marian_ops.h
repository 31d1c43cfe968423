/* Marian's own float arithmetic, operation for operation, where a Marian
 * model's int8 products need it: the value an int8 quantization rounds
 * is the one Marian rounds only when every float operation before it is
 * Marian's (docs/marian.md#int8-as-marian-multiplies). Each follows
 * marian-dev's CPU code as pymarian's build runs it (AVX: 8 lanes, no
 * fused multiply-add):
 *   ted_marian_exp        src/3rd_party/avx_mathfun.h exp256_ps (Cephes)
 *   ted_marian_sigmoid    functional/operators.h, Ops<float32x8>::sigmoid
 *   ted_marian_softmax    tensors/cpu/tensor_operators.cpp Softmax
 *   ted_marian_layer_norm_kind   LayerNormalizationImpl */
#ifndef TED_LAYERS_MARIAN_OPS_H
#define TED_LAYERS_MARIAN_OPS_H

#include "layers/norm.h"

/* e^x as Marian's vector code computes it: Cephes' polynomial, x clamped
 * to +-88.376. */
float ted_marian_exp(float x);

/* x (n) -> sigmoid(x) in place, as Marian's element-wise operations over
 * rows of n computes it: e^x / (1 + e^x) with ted_marian_exp when n is a
 * multiple of 4 (its vector code), else its scalar form, 1 / (1 + e^-x)
 * or e^x / (1 + e^x) with the C library's expf. */
void ted_marian_sigmoid(float *x, int n);

/* x (n) -> softmax(x) in place, as Marian's CPU Softmax: with n a multiple
 * of 8 (or 4), lane k of 8 (4) sums e^(x[i] - max) of i = k mod 8 by
 * ted_marian_exp, the lanes are added in order; otherwise the C library's
 * expf summed in order; then each divided by the sum. */
void ted_marian_softmax(float *x, int n);

/* LayerNorm as Marian's LayerNormalizationImpl: the sum of x and of
 * (x - mean)^2 each in 8 lanes (lane k adds elements k, k + 8, ...),
 * combined as ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)), the n mod 8 last
 * added one by one, times 1 / n; y = (x - mean) * (gamma * (1 / sigma)) +
 * beta, sigma = sqrt(var + eps). */
extern const ted_norm_kind ted_marian_layer_norm_kind;

#endif
