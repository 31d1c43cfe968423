/* Vectors of floats through GCC/Clang vector extensions: the compiler maps
 * them onto AVX-512, AVX or SSE (NEON elsewhere), whichever the flags of
 * the file allow, with no intrinsics but ted_vec_fma's. Included by the
 * kernels of src/kernels/variant/, compiled once per instruction set: one
 * vector is one register of that set. Loads may be unaligned. */
#ifndef TED_KERNELS_SIMD_H
#define TED_KERNELS_SIMD_H

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define TED_VEC_FLOATS 16
#elif defined(__AVX__)
#define TED_VEC_FLOATS 8
#else
#define TED_VEC_FLOATS 4
#endif

typedef float ted_vec __attribute__((vector_size(TED_VEC_FLOATS * sizeof(float))));
typedef float ted_vec_unaligned
    __attribute__((vector_size(TED_VEC_FLOATS * sizeof(float)), aligned(sizeof(float))));
typedef float ted_vec4 __attribute__((vector_size(4 * sizeof(float))));

static inline ted_vec ted_vec_load(const float *p)
{
    return *(const ted_vec_unaligned *)p;
}

static inline void ted_vec_store(float *p, ted_vec v)
{
    *(ted_vec_unaligned *)p = v;
}

/* The sum of a vector's lanes as a tree of halvings: log2(lanes) vector
 * additions instead of a chain of lanes - 1 dependent scalar ones. */
static inline float ted_vec_sum(ted_vec v)
{
    union {
        ted_vec whole;
        ted_vec4 quarter[TED_VEC_FLOATS / 4];
    } u = {v};
    ted_vec4 q = u.quarter[0];
    for (int i = 1; i < TED_VEC_FLOATS / 4; i++)
        q += u.quarter[i];
    return (q[0] + q[2]) + (q[1] + q[3]);
}

typedef int ted_ivec __attribute__((vector_size(TED_VEC_FLOATS * sizeof(int))));

/* Lanes of `a` where `mask` is set (all ones), else of `b`. */
static inline ted_vec ted_vec_select(ted_ivec mask, ted_vec a, ted_vec b)
{
    return (ted_vec)(((ted_ivec)a & mask) | ((ted_ivec)b & ~mask));
}

/* a * b + c with one rounding where the set has FMA (AVX2, AVX-512); two
 * roundings elsewhere. */
static inline ted_vec ted_vec_fma(ted_vec a, ted_vec b, ted_vec c)
{
#if defined(__AVX512F__)
    return (ted_vec)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__)
    return (ted_vec)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    return a * b + c;
#endif
}

/* exp(hi + lo) of every lane, Cephes' expf (S. L. Moshier): hi + lo = n ln
 * 2 + r with |r| <= ln 2 / 2, r = hi - n ln 2 + lo with ln 2 in two parts
 * (the first with 9 significant bits, so n times it is exact), exp(r) =
 * 1 + r + r^2 P(r), P of degree 5 (relative error 1.1e-9 in exact
 * arithmetic; float's roundings add about one ulp, measured in
 * docs/performance.md#activations), times 2^n built in the exponent bits.
 * lo carries what the float hi cannot hold of an argument (the low part of
 * an exact square): its digits then reach r instead of being rounded away
 * in hi + lo, whose absolute error becomes a relative error of exp. Lanes
 * below -87.3 (exp underflows, e.g. the -inf of a masked score) give 0;
 * lanes above 88 give +inf (exp(88) is within a factor 2 of the largest
 * float; softmax only passes values <= 0); NaN gives NaN. */
static inline ted_vec ted_vec_exp_sum(ted_vec hi, ted_vec lo)
{
    const ted_vec zero = {0};
    ted_vec x = hi + lo;
    ted_ivec underflow = x < -87.3f;
    ted_ivec overflow = x > 88.0f;
    ted_ivec outside = underflow | overflow;
    hi = ted_vec_select(outside, zero, hi);
    lo = ted_vec_select(outside, zero, lo);
    ted_vec scaled = (hi + lo) * 1.44269504088896341f;  /* x / ln 2 */
    ted_ivec n = __builtin_convertvector(scaled + ted_vec_select(scaled < 0, zero - 0.5f,
                                                                 zero + 0.5f),
                                         ted_ivec);
    ted_vec nf = __builtin_convertvector(n, ted_vec);
    ted_vec r = ((hi - nf * 0.693359375f) - nf * -2.12194440e-4f) + lo;
    ted_vec p = zero + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = ted_vec_fma(p, r * r, r) + 1.0f;
    ted_vec result = p * (ted_vec)((n + 127) << 23);
    result = ted_vec_select(underflow, zero, result);
    return ted_vec_select(overflow, zero + __builtin_inff(), result);
}

/* exp of every lane (ted_vec_exp_sum with no low part: adding -0 changes
 * nothing and is folded away). */
static inline ted_vec ted_vec_exp(ted_vec x)
{
    return ted_vec_exp_sum(x, -(ted_vec){0});
}

/* a . b over n floats. */
static inline float ted_dot(const float *a, const float *b, int n)
{
    ted_vec acc = {0};
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS)
        acc += ted_vec_load(a + i) * ted_vec_load(b + i);
    float s = ted_vec_sum(acc);
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* y += a * x over n floats. */
static inline void ted_axpy(float *y, float a, const float *x, int n)
{
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS)
        ted_vec_store(y + i, ted_vec_load(y + i) + a * ted_vec_load(x + i));
    for (; i < n; i++)
        y[i] += a * x[i];
}

#endif
