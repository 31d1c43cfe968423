/* The bfloat16 product (ted_matmul_bf16, src/kernels/kernels.h) of every
 * instruction set the CPU offers, against a double-precision reference
 * computed here with each bf16 weight widened by hand (its 16 bits over 16
 * zero bits: exact), for 1 to 33 rows, in and out feature counts that are
 * multiples of no vector width, with and without a bias, on 1 and 2
 * threads, W as stored and in bf16 panels (ted_linear; the layout checked
 * against kernels.h's formula); a float x that needs all 24 bits, multiplied exactly; the
 * rounding of ted_bf16_from_float against bit patterns worked out by hand
 * (nearest, ties to even, as torch's .bfloat16()); and a bf16 row read by
 * ted_matrix_row. A set the CPU lacks is skipped.
 *
 * Tolerance: a sum of K products is within TOL_RELATIVE * sqrt(K) of the
 * reference, relative to the sum of the magnitudes of its terms. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define TOL_RELATIVE 1e-5

static unsigned next_seed(unsigned seed)
{
    return seed * 1664525u + 1013904223u;
}

/* Uniform in [-1, 1). */
static void fill_random(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = next_seed(seed);
        x[i] = (float)((seed >> 8) / 8388608.0 - 1.0);
    }
}

/* Random bf16 bit patterns of finite values in about [-2, 2]: a sign, an
 * exponent of 2^-8 .. 2^0 and 7 bits of mantissa. */
static void fill_bf16(uint16_t *h, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = next_seed(seed);
        unsigned sign = (seed >> 31) & 1u, exponent = 119u + ((seed >> 20) % 9u);
        h[i] = (uint16_t)(sign << 15 | exponent << 7 | ((seed >> 8) & 0x7fu));
    }
}

/* A bf16 value widened by hand. */
static double widened(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void use_variant(const char *name)
{
    if (!ted_kernels_supported(name))
        cr_skip_test("this CPU does not offer the %s kernels", name);
    ted_error err = {0};
    cr_assert_eq(ted_kernels_select(name, &err), TED_OK, "select %s: %s", name, err.message);
}

typedef struct product {
    int rows, in, out;
    float *x, *b, *y;
    uint16_t *W;
} product;

/* panels: W in bf16 panels (ted_linear, every set), or
 * NULL (ted_matmul_bf16, row by row). */
static void check_product(const char *variant, const product *p, const uint16_t *panels,
                          bool bias, int threads)
{
    for (int i = 0; i < p->rows * p->out; i++)
        p->y[i] = NAN;
    if (panels) {
        ted_matrix m = {0};
        m.bf16 = p->W, m.bf16_panels = panels;
        ted_linear(p->y, p->x, m, bias ? p->b : NULL, p->rows, p->in, p->out);
    } else {
        ted_matmul_bf16(p->y, p->x, p->W, bias ? p->b : NULL, p->rows, p->in, p->out);
    }
    for (int i = 0; i < p->rows; i++)
        for (int j = 0; j < p->out; j++) {
            double sum = bias ? p->b[j] : 0.0, magnitude = bias ? fabs(p->b[j]) : 0.0;
            for (int k = 0; k < p->in; k++) {
                double term = p->x[(size_t)i * p->in + k] * widened(p->W[(size_t)j * p->in + k]);
                sum += term;
                magnitude += fabs(term);
            }
            double got = p->y[(size_t)i * p->out + j];
            cr_assert(fabs(got - sum) <= TOL_RELATIVE * sqrt(p->in) * magnitude + 1e-30,
                      "%s matmul_bf16%s rows %d in %d out %d%s, %d threads [%d][%d]: got %.9g, "
                      "reference %.9g", variant, panels ? " (panels)" : "", p->rows, p->in,
                      p->out, bias ? " bias" : "", threads, i, j, got, sum);
        }
}

static const int row_counts[] = {1, 2, 3, 4, 5, 7, 16, 17, 33};
static const int shapes[][2] = {{1, 1},   {31, 5},  {32, 4},   {100, 17},
                                 {130, 67}, {515, 9}, {64, 100}, {33, 49}};

static void check_matmul_bf16(const char *variant)
{
    use_variant(variant);
    for (int threads = 1; threads <= 2; threads++) {
        ted_parallel_set_threads(threads);
        for (size_t r = 0; r < COUNT(row_counts); r++)
            for (size_t s = 0; s < COUNT(shapes); s++) {
                int rows = row_counts[r], in = shapes[s][0], out = shapes[s][1];
                product p = {rows, in, out, malloc(sizeof(float) * rows * in),
                             malloc(sizeof(float) * out), malloc(sizeof(float) * rows * out),
                             malloc(sizeof(uint16_t) * out * in)};
                cr_assert(p.x && p.b && p.y && p.W);
                fill_random(p.x, (size_t)rows * in, 3u + rows + in);
                fill_random(p.b, (size_t)out, 4u + out);
                fill_bf16(p.W, (size_t)out * in, 5u + out + in);
                uint16_t *panels = malloc(sizeof(uint16_t) * ted_bf16_panels_halves(out, in));
                cr_assert(panels);
                ted_pack_bf16_panels(panels, p.W, out, in);
                for (int bias = 0; bias < 2; bias++) {
                    check_product(variant, &p, NULL, bias, threads);
                    check_product(variant, &p, panels, bias, threads);
                }
                free(p.x), free(p.b), free(p.y), free(p.W), free(panels);
            }
    }
    ted_parallel_set_threads(1);
}

/* x = 1 + 2^-23 and x = -(1 + 2^-9 + 2^-18 + 2^-23) times bf16 ones: the
 * products keep every bit of x (bf16 x alone would give 1). */
static void check_full_precision(const char *variant)
{
    use_variant(variant);
    enum { K = 40 };
    float x[2 * K] = {0}, y[2];
    uint16_t W[K] = {0};
    x[7] = 1.0f + 0x1p-23f;
    x[K + 33] = -(1.0f + 0x1p-9f + 0x1p-18f + 0x1p-23f);
    W[7] = W[33] = 0x3f80;  /* 1.0 */
    ted_matmul_bf16(y, x, W, NULL, 2, K, 1);
    cr_assert(y[0] == x[7], "%s: got %.9g, expected %.9g", variant, (double)y[0], (double)x[7]);
    cr_assert(y[1] == x[K + 33], "%s: got %.9g, expected %.9g", variant, (double)y[1],
              (double)x[K + 33]);
}

#define BF16_TESTS(name)                     \
    Test(bf16, matmul_##name)                \
    {                                        \
        check_matmul_bf16(#name);            \
    }                                        \
    Test(bf16, full_precision_##name)        \
    {                                        \
        check_full_precision(#name);         \
    }

BF16_TESTS(portable)
BF16_TESTS(avx2)
BF16_TESTS(avx512)

static float from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

Test(bf16, rounding_nearest_ties_to_even)
{
    static const struct {
        uint32_t f32;
        uint16_t bf16;
    } cases[] = {
        {0x3f800000, 0x3f80},  /* 1 */
        {0x3f808000, 0x3f80},  /* 1 + 2^-8: a tie, the even 1 */
        {0x3f818000, 0x3f82},  /* 1 + 3 * 2^-8: a tie, the even 1 + 2^-6 */
        {0x3f808001, 0x3f81},  /* just past the tie: up */
        {0x3f807fff, 0x3f80},  /* just below: down */
        {0xbf80c000, 0xbf81},  /* -(1 + 2^-8 + 2^-9): up in magnitude */
        {0x80000000, 0x8000},  /* -0 */
        {0x00000001, 0x0000},  /* the smallest subnormal: 0 */
        {0x7f7fffff, 0x7f80},  /* the largest float: past the largest bf16, infinity */
        {0x7f800000, 0x7f80},  /* infinity */
        {0xff800000, 0xff80},  /* -infinity */
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        uint16_t got = ted_bf16_from_float(from_bits(cases[i].f32));
        cr_assert_eq(got, cases[i].bf16, "0x%08x: got 0x%04x, expected 0x%04x",
                     (unsigned)cases[i].f32, (unsigned)got, (unsigned)cases[i].bf16);
        cr_assert(ted_bf16_to_float(cases[i].bf16) == (float)widened(cases[i].bf16));
    }
    float nan = ted_bf16_to_float(ted_bf16_from_float(from_bits(0x7f800001)));
    cr_assert(isnan(nan), "a NaN whose payload is in the low bits stays a NaN");
}

Test(bf16, panels_layout)
{
    enum { ROWS = 19, COLS = 5 };  /* two panels, the second of 3 rows; an odd column count */
    uint16_t W[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        W[i] = (uint16_t)(i + 1);
    cr_assert_eq(ted_bf16_panels_halves(ROWS, COLS), 2 * 16 * 6);
    uint16_t panels[2 * 16 * 6];
    memset(panels, 0xff, sizeof panels);
    ted_pack_bf16_panels(panels, W, ROWS, COLS);
    for (int p = 0; p < 2; p++)
        for (int c = 0; c < 3; c++)
            for (int j = 0; j < 16; j++)
                for (int e = 0; e < 2; e++) {
                    int r = 16 * p + j, k = 2 * c + e;
                    uint16_t want = r < ROWS && k < COLS ? W[r * COLS + k] : 0;
                    uint16_t got = panels[((p * 3 + c) * 16 + j) * 2 + e];
                    cr_assert_eq(got, want, "panel %d pair %d column %d [%d]: %u, expected %u",
                                 p, c, j, e, got, want);
                }
}

Test(bf16, matrix_row_widens)
{
    uint16_t W[2 * 3] = {0x3f80, 0xc000, 0x3e80, 0x4040, 0x0000, 0xbf00};
    ted_matrix m = {0};
    m.bf16 = W;
    float row[3];
    ted_matrix_row(row, m, 1, 3, 2.0f);
    cr_assert(row[0] == 6.0f && row[1] == 0.0f && row[2] == -1.0f, "row 1: %g %g %g",
              (double)row[0], (double)row[1], (double)row[2]);
    ted_matrix rest = ted_matrix_rows(m, 1, 3);
    cr_assert(rest.bf16 == W + 3 && !rest.f32 && !rest.i8 && !rest.panels);
}
