/* The feed-forward network's activations (declared in kernels/kernels.h),
 * compiled once per instruction set (kernels/variants.h), in place over
 * (rows, d_ff) by vectors. The last n % TED_VEC_FLOATS values go through
 * the same vector code in a padded vector, so a value's result does not
 * depend on where it stands.
 *
 * Accuracy, against the formulas in double (libm's exp and erfc): within
 * 1e-6 of the result, relative, plus 1e-7 of |x|. The second term is the
 * rounding of the argument of exp in float (an error of 6e-8 |y| in y is
 * one of 6e-8 |y| in exp(y), relative), which shows only where the result
 * is far smaller than x: x far below 0, where GELU and SiLU are x times a
 * tiny factor (and where PyTorch's float 0.5 x (1 + tanh u) has an error
 * of 6e-8 |x| from the cancellation in 1 + tanh u). Where exp underflows
 * (results below 1.2e-38 |x|) the result is 0 of x's sign. NaN gives NaN,
 * -0 gives -0, +inf +inf, and -inf NaN as the formulas in libm give
 * (-inf times 0). tests/unit/test_kernels.c checks these bounds on every
 * set; the measured errors: docs/performance.md#activations. */
#include <stddef.h>
#include <string.h>

#include "kernels/simd.h"
#include "kernels/variants.h"

/* x[i] = f(x[i]) for every i, vector by vector, the tail padded. */
static inline __attribute__((always_inline)) void map_in_place(float *x, size_t n,
                                                               ted_vec (*f)(ted_vec))
{
    size_t i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS)
        ted_vec_store(x + i, f(ted_vec_load(x + i)));
    if (i < n) {
        float tail[TED_VEC_FLOATS] = {0};
        memcpy(tail, x + i, (n - i) * sizeof(float));
        ted_vec_store(tail, f(ted_vec_load(tail)));
        memcpy(x + i, tail, (n - i) * sizeof(float));
    }
}

/* The feed-forward network's ReLU: a select per vector, where a scalar
 * comparison would branch on every sign. NaN and -0 become +0. */
static inline ted_vec relu(ted_vec v)
{
    const ted_vec zero = {0};
    return ted_vec_select(v > zero, v, zero);
}

void TED_VARIANT_NAME(ted_zero_negatives)(float *x, size_t n)
{
    map_in_place(x, n, relu);
}

/* SiLU: x / (1 + exp(-x)). Below -88, exp(-x) is +inf and the result -0
 * (x / (1 + expf(-x)) gives -0 from -88.7 on, a value under 1e-36 in
 * between). */
static inline ted_vec silu(ted_vec v)
{
    return v / (1.0f + ted_vec_exp(-v));
}

void TED_VARIANT_NAME(ted_times_sigmoid)(float *x, size_t n)
{
    map_in_place(x, n, silu);
}

/* GELU's tanh approximation, 0.5 x (1 + tanh u) with u = sqrt(2 / pi) (x +
 * 0.044715 x^3), as x / (1 + exp(-2u)): 1 + tanh u = 2 / (1 + exp(-2u)),
 * the same function with no cancellation where tanh u nears -1. -2u is
 * -2 sqrt(2 / pi) x (1 + 0.044715 x^2); past |x| = 1.8e19 x^2 is +inf and
 * exp(-2u) 0 or +inf: x itself or -0. */
static inline ted_vec gelu_tanh(ted_vec v)
{
    ted_vec y = (v * -1.5957691216057308f) * (1.0f + 0.044715f * (v * v));
    return v / (1.0f + ted_vec_exp(y));
}

void TED_VARIANT_NAME(ted_times_normal_cdf_tanh)(float *x, size_t n)
{
    map_in_place(x, n, gelu_tanh);
}

/* GELU, x Phi(x), Phi the normal distribution's CDF: Phi(x) = erfc(z) / 2
 * for x < 0 and 1 - erfc(z) / 2 for x >= 0, z = |x| / sqrt 2, so that
 * erfc's relative error stays one in the result on both sides. erfc(z) =
 * t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), P of degree 9: the Chebyshev
 * fit of Numerical Recipes in C (2nd ed., 6.2, erfcc), relative error
 * below 1.2e-7 for every z >= 0. -z^2 = -x^2 / 2 is exact as two floats
 * (x^2 and its rounding error, by FMA where the set has it: the portable
 * set's low part is 0), which ted_vec_exp_sum adds to the reduced
 * argument. Past |x| = 14, exp underflows and the low part is left out
 * (x^2 may be +inf). */
static inline ted_vec gelu_erf(ted_vec v)
{
    const ted_vec zero = {0};
    ted_ivec negative = v < zero;
    ted_vec magnitude = ted_vec_select(negative, -v, v);
    ted_vec z = magnitude * 0.70710678118654752f;
    ted_vec t = 1.0f / (1.0f + 0.5f * z);
    ted_vec p = zero + 0.17087277f;
    p = p * t + -0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t + -1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t + -0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t + -1.26551223f;
    ted_vec square = v * v;
    ted_vec square_error = ted_vec_fma(v, v, -square);
    square_error = ted_vec_select(magnitude < 14.0f, square_error, zero);
    ted_vec half_erfc = 0.5f * t * ted_vec_exp_sum(-0.5f * square, p - 0.5f * square_error);
    return v * ted_vec_select(negative, half_erfc, 1.0f - half_erfc);
}

void TED_VARIANT_NAME(ted_times_normal_cdf)(float *x, size_t n)
{
    map_in_place(x, n, gelu_erf);
}
