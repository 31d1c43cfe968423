/* Marian's own float arithmetic, operation for operation, where a Marian
 * model's int8 products need it: the value an int8 quantization rounds
 * is the one Marian rounds only when every float operation before it is
 * Marian's (docs/marian.md#int8-as-marian-multiplies). Each follows
 * marian-dev's CPU code as pymarian's build runs it (AVX: 8 lanes, no
 * fused multiply-add):
 *   ted_marian_exp        src/3rd_party/avx_mathfun.h exp256_ps (Cephes)
 *   ted_marian_sigmoid    functional/operators.h, Ops<float32x8>::sigmoid
 *   ted_marian_softmax    tensors/cpu/tensor_operators.cpp Softmax
 *   ted_marian_layer_norm_kind   LayerNormalizationImpl
 * and attention's two float products, which Marian hands to MKL's sgemm,
 * as MKL's AVX2 code path sums them (ted_marian_attention). */
#ifndef TED_LAYERS_MARIAN_OPS_H
#define TED_LAYERS_MARIAN_OPS_H

#include "layers/attention.h"
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

/* Marian's attention arithmetic: Q . K^T and the weights times V summed in
 * the order MKL's AVX2 sgemm sums each element, which depends on the
 * product's shape and the element's place in it (ted_product_place): for
 * one query, 8 lanes of pairs of each 16 products (x_i and x_{i+8}, the
 * second fused in), the lanes added (0+1 + 4+5) + (2+3 + 6+7); for 2 or 3
 * queries, 16 fused (even rows) or 8 rounded (odd rows) lanes of every 16th
 * or 8th product, halved pairwise (lane l + lane l + w/2) down to one; for
 * more, row blocks of 6 (a last block of 4 or 5 among them) sum each
 * element in one fused chain, but for the last (n mod 16 <= 8) columns
 * beyond the last multiple of 16, two fused chains of the even and the odd
 * products, and a last block of 1 or 2 (3) rows two rounded (fused) chains;
 * the weights times V alike with one chain for one query, two fused chains
 * for 2 or 3. The scale multiplies the sum; then Marian's softmax. Query
 * sizes not a multiple of 16 sum in one chain. */
extern const ted_attention_arithmetic ted_marian_attention;

#endif
