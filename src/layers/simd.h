/* Vectors of floats through GCC/Clang vector extensions: the compiler maps
 * them onto AVX-512, AVX2 or SSE, whichever -march allows, with no
 * intrinsics. Loads may be unaligned. */
#ifndef TED_LAYERS_SIMD_H
#define TED_LAYERS_SIMD_H

#if defined(__AVX512F__)
#define TED_VEC_FLOATS 16
#else
#define TED_VEC_FLOATS 8
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
