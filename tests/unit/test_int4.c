/* The int4 product (kernels.h's ted_matmul_i4 and ted_linear of an int4
 * ted_matrix) of every instruction set the CPU offers, against references
 * computed here from the documented scheme: W quantized by this file in
 * groups of 32 (scale max |group| / 7, q = W / scale rounded, stored q + 8,
 * byte k of a group holding columns k and k + 16), each row of x quantized
 * to int8 (scale max |x| / 127), each group's dot product exact in 64-bit
 * integers, times its scale, summed in double, times x's scale, + b. The
 * kernels sum the groups in float: the slack is I4_TOL_RELATIVE of the sum
 * of the terms' magnitudes. Then, with no reference to ted's quantization
 * of x, against the float product with the dequantized W: within x_scale /
 * 2 * sum |W| (the activation rounding) plus float slack. A set the CPU
 * lacks is skipped. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define I4_TOL_RELATIVE 1e-5
#define GROUP 32

static void fill_random(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) / 8388608.0 - 1.0);
    }
}

static void use_variant(const char *name)
{
    if (!ted_kernels_supported(name))
        cr_skip_test("this CPU does not offer the %s kernels", name);
    ted_error err = {0};
    cr_assert_eq(ted_kernels_select(name, &err), TED_OK, "select %s: %s", name, err.message);
}

typedef struct i4_product {
    int rows, in, out, groups;
    float *x, *b, *W;  /* W: the float weights the test quantizes */
    uint8_t *q;        /* (out, groups * 16) */
    float *scale;      /* (out, groups) */
    int8_t *values;    /* (out, groups * 32): q as integers, zero past `in` */
} i4_product;

/* W quantized as documented, into p->q, p->scale and p->values. */
static void quantize_w(i4_product *p)
{
    for (int j = 0; j < p->out; j++)
        for (int g = 0; g < p->groups; g++) {
            float m = 0.0f;
            for (int c = g * GROUP; c < (g + 1) * GROUP && c < p->in; c++)
                m = fmaxf(m, fabsf(p->W[(size_t)j * p->in + c]));
            float s = m / 7.0f;
            p->scale[(size_t)j * p->groups + g] = s;
            int8_t *v = p->values + ((size_t)j * p->groups + g) * GROUP;
            for (int k = 0; k < GROUP; k++) {
                int c = g * GROUP + k;
                float r = c < p->in && s > 0.0f ? nearbyintf(p->W[(size_t)j * p->in + c] / s)
                                                : 0.0f;
                v[k] = (int8_t)fmaxf(-7.0f, fminf(7.0f, r));
            }
            uint8_t *bytes = p->q + ((size_t)j * p->groups + g) * (GROUP / 2);
            for (int k = 0; k < GROUP / 2; k++)
                bytes[k] = (uint8_t)((v[k] + 8) | (v[k + GROUP / 2] + 8) << 4);
        }
}

static i4_product make_product(int rows, int in, int out)
{
    int groups = (in + GROUP - 1) / GROUP;
    i4_product p = {rows, in, out, groups, malloc(sizeof(float) * rows * in),
                    malloc(sizeof(float) * out), malloc(sizeof(float) * out * in),
                    malloc((size_t)out * groups * GROUP / 2),
                    malloc(sizeof(float) * out * groups), malloc((size_t)out * groups * GROUP)};
    cr_assert(p.x && p.b && p.W && p.q && p.scale && p.values);
    fill_random(p.x, (size_t)rows * in, 11u + rows + in);
    fill_random(p.W, (size_t)out * in, 12u + out);
    fill_random(p.b, (size_t)out, 13u);
    for (int j = 0; j < out; j++)  /* rows of different sizes: scales that differ */
        for (int c = 0; c < in; c++)
            p.W[(size_t)j * in + c] *= 0.01f * (1 + j % 5) * (1 + (c / GROUP) % 3);
    quantize_w(&p);
    return p;
}

static void free_product(i4_product *p)
{
    free(p->x), free(p->b), free(p->W), free(p->q), free(p->scale), free(p->values);
}

/* The documented quantization of one row of x. */
static float quantize_x(int8_t *q, const float *x, int n)
{
    float m = 0.0f;
    for (int k = 0; k < n; k++)
        m = fmaxf(m, fabsf(x[k]));
    float factor = m > 0.0f ? 127.0f / m : 0.0f;
    for (int k = 0; k < n; k++)
        q[k] = (int8_t)nearbyintf(x[k] * factor);
    return m / 127.0f;
}

/* y[i][j] against the integer reference and the float product. */
static void check_element(const char *what, const i4_product *p, const int8_t *xq, float x_scale,
                          int i, int j, bool bias, float got)
{
    const float *xi = p->x + (size_t)i * p->in;
    double sum = 0.0, magnitude = 0.0, exact = bias ? p->b[j] : 0.0, w_magnitude = 0.0;
    for (int g = 0; g < p->groups; g++) {
        const int8_t *v = p->values + ((size_t)j * p->groups + g) * GROUP;
        double s = p->scale[(size_t)j * p->groups + g];
        int64_t dot = 0, dot_magnitude = 0;
        for (int k = 0; k < GROUP && g * GROUP + k < p->in; k++) {
            dot += (int64_t)xq[g * GROUP + k] * v[k];
            dot_magnitude += llabs((int64_t)xq[g * GROUP + k] * v[k]);
            double w = (double)((float)v[k] * (float)s);
            exact += xi[g * GROUP + k] * w;
            w_magnitude += fabs(w);
        }
        sum += (double)dot * s;
        magnitude += (double)dot_magnitude * s;
    }
    double expected = sum * x_scale + (bias ? p->b[j] : 0.0);
    double slack = I4_TOL_RELATIVE * (magnitude * x_scale + (bias ? fabs(p->b[j]) : 0.0)) + 1e-30;
    cr_assert(fabs(got - expected) <= slack,
              "%s rows %d in %d out %d%s [%d][%d]: got %.9g, integer reference %.9g", what,
              p->rows, p->in, p->out, bias ? " bias" : "", i, j, got, expected);
    double bound = x_scale / 2.0 * w_magnitude + slack + 1e-6 * fabs(exact);
    cr_assert(fabs(got - exact) <= bound,
              "%s [%d][%d]: got %.9g, float product %.9g, beyond the activation rounding "
              "bound %.3g", what, i, j, got, exact, bound);
}

static void check_product(const char *what, const i4_product *p, bool bias, bool linear)
{
    float *y = malloc(sizeof(float) * p->rows * p->out);
    int8_t *xq = malloc((size_t)p->in + 1);
    cr_assert(y && xq);
    for (int i = 0; i < p->rows * p->out; i++)
        y[i] = NAN;
    if (linear)
        ted_linear(y, p->x, (ted_matrix){.i4 = p->q, .scale = p->scale}, bias ? p->b : NULL,
                   p->rows, p->in, p->out);
    else
        ted_matmul_i4(y, p->x, p->q, p->scale, bias ? p->b : NULL, p->rows, p->in, p->out);
    for (int i = 0; i < p->rows; i++) {
        float x_scale = quantize_x(xq, p->x + (size_t)i * p->in, p->in);
        for (int j = 0; j < p->out; j++)
            check_element(what, p, xq, x_scale, i, j, bias, y[(size_t)i * p->out + j]);
    }
    free(xq);
    free(y);
}

/* Rows 1 to 9 and 17 (the few-row tiles of 2 rows and of 1, in groups
 * of 4 rows; from 8 rows the panels of 16 columns, in tiles of 8 rows),
 * in features in and across groups of 32 (a partial last group; blocks of
 * 16 groups and their last one partial at 1, 2 or 3 groups of a step;
 * past 1024, the panels' chunks of 32 groups; past 16384, the few-row
 * chunks of 512 groups), out features split over 1 and 2 threads (past
 * 16, two panels and the columns left). */
static const int row_counts[] = {1, 2, 3, 4, 5, 7, 9, 17};
static const int shapes[][2] = {{1, 1},   {31, 5},   {32, 3},   {33, 7},    {80, 6},
                                {100, 17}, {512, 9}, {545, 4}, {1100, 37}, {16416, 3}};

static void check_matmul_i4(const char *variant)
{
    use_variant(variant);
    char what[64];
    for (int threads = 1; threads <= 2; threads++) {
        ted_parallel_set_threads(threads);
        snprintf(what, sizeof what, "%s matmul_i4, %d threads", variant, threads);
        for (size_t r = 0; r < COUNT(row_counts); r++)
            for (size_t s = 0; s < COUNT(shapes); s++) {
                i4_product p = make_product(row_counts[r], shapes[s][0], shapes[s][1]);
                check_product(what, &p, false, false);
                check_product(what, &p, true, true);
                free_product(&p);
            }
    }
    ted_parallel_set_threads(1);
}

/* The extremes of the format: every nibble 0 (-8, which the quantizer
 * never writes but the layout holds) or 15 (7) against x at +-max over
 * 4096 columns, in 1 row and in 8 (the panels; the odd rows negated), 18
 * output features (one panel and the columns left): no int16 sum
 * saturates, the result is exact. */
static void check_i4_extremes(const char *variant)
{
    use_variant(variant);
    enum { IN = 4096, OUT = 18, GROUPS = IN / GROUP, ROWS = 8, ROW_BYTES = GROUPS * GROUP / 2 };
    static float x[ROWS * IN], scale[OUT * GROUPS], y[ROWS * OUT];
    static uint8_t q[OUT * ROW_BYTES];
    for (int i = 0; i < ROWS; i++)
        for (int k = 0; k < IN; k++)
            x[i * IN + k] = (k % 3 ? -1.0f : 1.0f) * (i % 2 ? -1.0f : 1.0f);
    for (int i = 0; i < OUT * GROUPS; i++)
        scale[i] = 1.0f;
    for (size_t i = 0; i < sizeof q; i++) {
        int kind = (int)(i / ROW_BYTES) % 3;
        q[i] = kind == 0 ? 0x00 : kind == 1 ? 0xff : 0x0f;
    }
    double ones = 0.0;
    for (int k = 0; k < IN; k++)
        ones += x[k];
    double low_only = 0.0;  /* kind 2: low nibbles 7, high nibbles -8 */
    for (int k = 0; k < IN; k++)
        low_only += x[k] * (k % GROUP < GROUP / 2 ? 7.0 : -8.0);
    double expected[3] = {-8.0 * ones, 7.0 * ones, low_only};
    for (int rows = 1; rows <= ROWS; rows += ROWS - 1) {
        ted_matmul_i4(y, x, q, scale, NULL, rows, IN, OUT);
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < OUT; j++) {
                double e = expected[j % 3] * (i % 2 ? -1.0 : 1.0);
                cr_assert(fabs(y[i * OUT + j] - e) <= 1e-5 * fabs(e) + 1e-3,
                          "%s matmul_i4 extremes, %d rows [%d][%d]: got %.9g, expected %.9g",
                          variant, rows, i, j, y[i * OUT + j], e);
            }
    }
}

#define I4_TESTS(name)                                                                        \
    Test(int4, matmul_##name)                                                                 \
    {                                                                                         \
        check_matmul_i4(#name);                                                               \
    }                                                                                         \
    Test(int4, extremes_##name)                                                               \
    {                                                                                         \
        check_i4_extremes(#name);                                                             \
    }

I4_TESTS(portable)
I4_TESTS(avx2)
I4_TESTS(avx512)

/* ted_matrix_row of an int4 W is q * scale, and ted_matrix_rows keeps the
 * rows' bytes and scales together. */
Test(int4, matrix_row_dequantizes)
{
    i4_product p = make_product(1, 70, 6);
    float row[70];
    for (int r = 0; r < p.out; r++) {
        ted_matrix W = ted_matrix_rows((ted_matrix){.i4 = p.q, .scale = p.scale}, (size_t)r,
                                       p.in);
        ted_matrix_row(row, W, 0, p.in, 2.0f);
        for (int c = 0; c < p.in; c++) {
            float expected = (p.values[((size_t)r * p.groups + c / GROUP) * GROUP + c % GROUP] *
                              p.scale[(size_t)r * p.groups + c / GROUP]) * 2.0f;
            cr_assert_float_eq(row[c], expected, 0.0, "row %d [%d]: %.9g, expected %.9g", r,
                               c, row[c], expected);
            float w = p.W[(size_t)r * p.in + c];
            cr_assert(fabsf(row[c] / 2.0f - w) <= p.scale[(size_t)r * p.groups + c / GROUP] / 2 +
                                                      1e-7f,
                      "row %d [%d]: %.9g from %.9g, beyond half a step", r, c, row[c] / 2, w);
        }
    }
    free_product(&p);
}
