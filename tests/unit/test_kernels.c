/* The kernels of every instruction set the CPU offers (src/kernels/
 * kernels.h), each against a naive double-precision reference and against
 * the portable set: the float product with W in panels, packed by the test
 * (ted_linear) and by ted_matmul into its scratch, for 1 to 200 rows, with
 * in and out feature counts that are multiples of no vector width, with
 * and without a bias, on 1 and 2 threads; the int8 product (ted_matmul_i8) against an
 * exact integer reference; and each vector function on odd lengths. A set
 * the CPU lacks is skipped (not counted). Which sets the CPU offers is
 * checked against the flags Linux reports in /proc/cpuinfo.
 *
 * Tolerance: a sum of K products is within TOL_RELATIVE * sqrt(K) of the
 * reference, relative to the sum of the magnitudes of its terms; exp within
 * TOL_RELATIVE of the reference, relative (layer normalization too); the
 * activations (SiLU, GELU, GELU's tanh approximation) within the bound that
 * kernels.h states, over a sweep of the floats; max, argmax, scale, ReLU
 * (zero_negatives) and the finiteness check (all_finite) exact. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define TOL_RELATIVE 1e-5

/* Uniform in [-1, 1), the same sequence on every run. */
static void fill_random(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) / 8388608.0 - 1.0);
    }
}

static float *checked_floats(int n)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    cr_assert_not_null(x, "%d floats", n);
    return x;
}

static void select_or_fail(const char *name)
{
    ted_error err = {0};
    cr_assert_eq(ted_kernels_select(name, &err), TED_OK, "select %s: %s", name, err.message);
    cr_assert_str_eq(ted_kernels_name(), name);
}

/* Runs the named set, or skips the test when the CPU lacks it. */
static void use_variant(const char *name)
{
    if (!ted_kernels_supported(name))
        cr_skip_test("this CPU does not offer the %s kernels", name);
    select_or_fail(name);
}

/* |got - reference| <= TOL_RELATIVE * sqrt(terms) * magnitude, elementwise. */
static void assert_sums_close(const float *got, const double *reference,
                              const double *magnitude, size_t n, int terms, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double tolerance = TOL_RELATIVE * sqrt((double)terms) * magnitude[i];
        double diff = fabs((double)got[i] - reference[i]);
        cr_assert(diff <= tolerance, "%s [%zu]: got %.9g, expected %.9g (tolerance %.3g)", what,
                  i, (double)got[i], reference[i], tolerance);
    }
}

/* The same check against the portable set's result. */
static void assert_matches_portable(const float *got, const float *portable,
                                    const double *magnitude, size_t n, int terms,
                                    const char *what)
{
    double *as_double = malloc(sizeof(double) * n);
    cr_assert(as_double);
    for (size_t i = 0; i < n; i++)
        as_double[i] = portable[i];
    char label[192];
    snprintf(label, sizeof label, "%s vs portable", what);
    assert_sums_close(got, as_double, magnitude, n, terms, label);
    free(as_double);
}

/* ---- ted_matmul ------------------------------------------------------------ */

typedef struct product {
    int rows, in, out;
    bool bias;
    float *x, *W, *b;
    double *reference, *magnitude;  /* (rows, out): the sum, and the sum of |terms| */
} product;

static product make_product(int rows, int in, int out, bool bias)
{
    product p = {rows, in, out, bias, malloc(sizeof(float) * rows * in),
                 malloc(sizeof(float) * out * in), malloc(sizeof(float) * out),
                 malloc(sizeof(double) * rows * out), malloc(sizeof(double) * rows * out)};
    cr_assert(p.x && p.W && p.b && p.reference && p.magnitude);
    fill_random(p.x, (size_t)rows * in, 1u + rows);
    fill_random(p.W, (size_t)out * in, 2u + in);
    fill_random(p.b, (size_t)out, 3u + out);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < out; j++) {
            double sum = bias ? p.b[j] : 0.0, magnitude = bias ? fabs(p.b[j]) : 0.0;
            for (int k = 0; k < in; k++) {
                double term = (double)p.x[i * in + k] * p.W[j * in + k];
                sum += term;
                magnitude += fabs(term);
            }
            p.reference[i * out + j] = sum;
            p.magnitude[i * out + j] = magnitude;
        }
    return p;
}

static void free_product(product *p)
{
    free(p->x);
    free(p->W);
    free(p->b);
    free(p->reference);
    free(p->magnitude);
}

/* y by the named set; NaN first, so an output left unwritten fails. */
static void run_matmul(float *y, const product *p, const char *variant)
{
    select_or_fail(variant);
    for (int i = 0; i < p->rows * p->out; i++)
        y[i] = NAN;
    ted_matmul(y, p->x, p->W, p->bias ? p->b : NULL, p->rows, p->in, p->out);
}

/* The same product through ted_linear with W in panels (kernels.h). */
static void run_panels(float *y, const product *p, const float *panels, const char *variant)
{
    select_or_fail(variant);
    for (int i = 0; i < p->rows * p->out; i++)
        y[i] = NAN;
    ted_matrix W = {.f32 = p->W, .panels = panels};
    ted_linear(y, p->x, W, p->bias ? p->b : NULL, p->rows, p->in, p->out);
}

static void check_product(const char *variant, int rows, int in, int out, bool bias,
                          int threads)
{
    product p = make_product(rows, in, out, bias);
    size_t n = (size_t)rows * out;
    float *y = malloc(sizeof(float) * n), *portable = malloc(sizeof(float) * n);
    float *panels = malloc(sizeof(float) * ted_panels_floats(out, in));
    cr_assert(y && portable && panels);
    ted_pack_panels(panels, p.W, out, in);
    char what[160];
    for (int packed = 0; packed <= 1; packed++) {
        if (packed) {
            run_panels(portable, &p, panels, "portable");
            run_panels(y, &p, panels, variant);
        } else {
            run_matmul(portable, &p, "portable");
            run_matmul(y, &p, variant);
        }
        snprintf(what, sizeof what, "%s matmul%s rows %d in %d out %d%s, %d threads", variant,
                 packed ? " (panels)" : "", rows, in, out, bias ? " bias" : "", threads);
        assert_sums_close(y, p.reference, p.magnitude, n, in + bias, what);
        assert_matches_portable(y, portable, p.magnitude, n, in + bias, what);
    }
    free(panels);
    free(portable);
    free(y);
    free_product(&p);
}

/* Tiles of 8 (AVX-512), 6 (AVX2) or 3 rows (SSE) and the rows left over, at
 * every count; past 96 rows, blocks of rows as well (kernels/matmul.c). */
static const int row_counts[] = {1,  2,  3,  4,  5,  6,  7,   8,   9,   15,  16, 17,
                                 20, 31, 33, 40, 48, 57, 64, 80, 100, 128, 129, 200};
/* (in_features, out_features): no multiple of 4, 8 or 16 but 64; in panels
 * of 16 columns, tiles of 3 (AVX-512) whole and with a partial last panel
 * (out 33, 67, 130), two tiles of 3 (96), one of 3 and one of 2 (80), k in
 * one block or more (in 130, 300; past 96 rows, whose blocks of k are
 * longer, in 1 100). */
static const int shapes[][2] = {{1, 1},    {3, 5},    {17, 33},  {33, 17}, {130, 67},
                                {64, 130}, {40, 96},  {300, 80}, {1100, 19}};

static void check_matmul(const char *variant)
{
    use_variant(variant);
    for (int threads = 1; threads <= 2; threads++) {
        ted_parallel_set_threads(threads);
        for (size_t r = 0; r < COUNT(row_counts); r++)
            for (size_t s = 0; s < COUNT(shapes); s++)
                for (int bias = 0; bias <= 1; bias++)
                    check_product(variant, row_counts[r], shapes[s][0], shapes[s][1], bias,
                                  threads);
    }
    ted_parallel_set_threads(1);
}

/* ---- the vector functions -------------------------------------------------- */

static const int lengths[] = {1, 3, 5, 7, 15, 17, 31, 33, 63, 65, 130, 1001};
/* query sizes of attention heads: whole vectors of every set (held in
 * registers up to 8 vectors), and past that */
static const int head_sizes[] = {4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 256};

/* scores = scale * keys q, keys (count, size); checked against the
 * reference and against the portable set's scores. */
static void check_scaled_dots(const char *variant, int size)
{
    enum { KEYS = 7 };
    const float scale = 0.125f;
    float q[1001], keys[KEYS * 1001], scores[KEYS], portable[KEYS];
    double reference[KEYS], magnitude[KEYS];
    fill_random(q, size, 11u + size);
    fill_random(keys, (size_t)KEYS * size, 12u + size);
    for (int j = 0; j < KEYS; j++) {
        reference[j] = magnitude[j] = 0.0;
        for (int k = 0; k < size; k++) {
            double term = (double)q[k] * keys[j * size + k] * scale;
            reference[j] += term;
            magnitude[j] += fabs(term);
        }
    }
    select_or_fail("portable");
    ted_scaled_dots(portable, q, keys, KEYS, size, scale);
    select_or_fail(variant);
    ted_scaled_dots(scores, q, keys, KEYS, size, scale);
    char what[96];
    snprintf(what, sizeof what, "%s scaled_dots size %d", variant, size);
    assert_sums_close(scores, reference, magnitude, KEYS, size, what);
    assert_matches_portable(scores, portable, magnitude, KEYS, size, what);
}

/* out = sum_j weights[j] values[j], values (count, size). */
static void check_weighted_sum(const char *variant, int size)
{
    enum { VALUES = 9 };
    float weights[VALUES], values[VALUES * 1001], out[1001], portable[1001];
    double reference[1001], magnitude[1001];
    fill_random(weights, VALUES, 21u + size);
    fill_random(values, (size_t)VALUES * size, 22u + size);
    for (int i = 0; i < size; i++) {
        reference[i] = magnitude[i] = 0.0;
        for (int j = 0; j < VALUES; j++) {
            reference[i] += (double)weights[j] * values[j * size + i];
            magnitude[i] += fabs((double)weights[j] * values[j * size + i]);
        }
        out[i] = portable[i] = NAN;
    }
    select_or_fail("portable");
    ted_weighted_sum(portable, weights, values, VALUES, size);
    select_or_fail(variant);
    ted_weighted_sum(out, weights, values, VALUES, size);
    char what[96];
    snprintf(what, sizeof what, "%s weighted_sum size %d", variant, size);
    assert_sums_close(out, reference, magnitude, (size_t)size, VALUES, what);
    assert_matches_portable(out, portable, magnitude, (size_t)size, VALUES, what);
}

/* max and argmax: the largest value twice (the first index counts) and
 * NaN, which is never the largest, first (from 3 values on) and last (from
 * 5 on: then first and second lie between). */
static void check_max(const char *variant, int n)
{
    float x[1001];
    fill_random(x, n, 31u + n);
    int first = n / 3, second = n - 1 - n / 5;
    x[first] = x[second] = 2.0f;
    if (n >= 3)
        x[0] = NAN;
    if (n >= 5)
        x[n - 1] = NAN;
    cr_assert_eq(ted_max(x, n), 2.0f, "%s max n %d: %g", variant, n, (double)ted_max(x, n));
    int at = ted_index_of_max(x, n);
    cr_assert_eq(at, first < second ? first : second, "%s argmax n %d: %d", variant, n, at);
    if (n >= 64) {
        /* tied in one lane of every set (16 apart), and in a lower lane
         * later (14 further: lane 3, then lane 1 of a later vector) */
        int a = n / 2 - n / 2 % 16 + 3;
        x[a] = x[a + 16] = x[a + 14] = 3.0f;
        at = ted_index_of_max(x, n);
        cr_assert_eq(at, a, "%s argmax n %d: %d, expected %d", variant, n, at, a);
    }
    for (int i = 0; i < n; i++)  /* nothing above -inf: 0 */
        x[i] = i % 2 ? -INFINITY : NAN;
    at = ted_index_of_max(x, n);
    cr_assert_eq(at, 0, "%s argmax n %d of -inf and NaN: %d", variant, n, at);
}

/* exp(x - shift) of values from -88 to 0 and -inf; below -87.3 the kernels
 * give 0 (ted_vec_exp), within EXP_UNDERFLOW of exp. */
#define EXP_UNDERFLOW 1.3e-38
static void check_exp(const char *variant, int n)
{
    float x[1001], e[1001];
    fill_random(x, n, 41u + n);
    for (int i = 0; i < n; i++)
        x[i] = i % 11 == 3 ? -INFINITY : x[i] * 44.0f - 44.5f;
    const float shift = -0.5f;
    double reference_sum = 0.0;
    memcpy(e, x, sizeof(float) * n);
    double sum = ted_exp_shifted(e, n, shift), sum_only = ted_sum_exp_shifted(x, n, shift);
    for (int i = 0; i < n; i++) {
        double reference = exp((double)x[i] - shift);
        reference_sum += reference;
        cr_assert(fabs(e[i] - reference) <= TOL_RELATIVE * reference + EXP_UNDERFLOW,
                  "%s exp_shifted n %d [%d]: exp(%g) got %.9g, expected %.9g", variant, n, i,
                  (double)x[i] - shift, (double)e[i], reference);
    }
    cr_assert(fabs(sum - reference_sum) <= TOL_RELATIVE * reference_sum,
              "%s exp_shifted n %d: sum %.9g, expected %.9g", variant, n, sum, reference_sum);
    cr_assert(fabs(sum_only - reference_sum) <= TOL_RELATIVE * reference_sum,
              "%s sum_exp_shifted n %d: %.9g, expected %.9g", variant, n, sum_only,
              reference_sum);
}

/* The sum over some ids of a row (a vocabulary shortlist) is the sum over
 * the whole row with -inf at every other id, to the bit: every run of ids
 * (ids 16 to 47 whole, scattered ones, the last ones of a row that does
 * not fill its last vector). */
static void check_exp_at(const char *variant, int n)
{
    float x[1001], row[1001], values[1001];
    int ids[1001], count = 0;
    fill_random(x, n, 43u + n);
    for (int i = 0; i < n; i++) {
        bool kept = (i >= 16 && i < 48) || i % 7 == 2 || i == n - 1;
        row[i] = kept ? x[i] * 30.0f - 20.0f : -INFINITY;
        if (kept) {
            ids[count] = i;
            values[count++] = row[i];
        }
    }
    const float shift = 9.5f;
    double whole = ted_sum_exp_shifted(row, n, shift);
    double at = ted_sum_exp_shifted_at(values, ids, count, n, shift);
    cr_assert(at == whole, "%s sum_exp_shifted_at n %d (%d ids): %.17g, the row's %.17g",
              variant, n, count, at, whole);
}

static void check_scale(const char *variant, int n)
{
    float x[1001], scaled[1001];
    fill_random(x, n, 51u + n);
    memcpy(scaled, x, sizeof(float) * n);
    ted_scale(scaled, n, 0.37f);
    for (int i = 0; i < n; i++)  /* one rounding of an exact product: exact */
        cr_assert_eq(scaled[i], (float)((double)x[i] * 0.37f), "%s scale n %d [%d]", variant,
                     n, i);
}

/* ReLU: positive values kept, negative ones, -0 and NaN made +0, exactly. */
static void check_zero_negatives(const char *variant, int n)
{
    float *x = checked_floats(n), *out = checked_floats(n);
    fill_random(x, n, 61u + n);
    x[0] = NAN;
    if (n > 2)
        x[n - 2] = -0.0f;
    memcpy(out, x, sizeof(float) * n);
    ted_zero_negatives(out, (size_t)n);
    for (int i = 0; i < n; i++) {
        float expected = x[i] > 0.0f ? x[i] : 0.0f;
        cr_assert(out[i] == expected && !signbit(out[i]),
                  "%s zero_negatives n %d [%d]: %g gave %g", variant, n, i, (double)x[i],
                  (double)out[i]);
    }
    free(x);
    free(out);
}

/* Finite or not, against isfinite over every value: all finite, then one
 * NaN, +inf, -inf or FLT_MAX (finite) at the first, a middle and the last
 * position (the vector part and the tail). */
static void check_all_finite(const char *variant, int n)
{
    float *x = checked_floats(n);
    const float odd[] = {NAN, INFINITY, -INFINITY, FLT_MAX};
    fill_random(x, n, 71u + n);
    cr_assert(ted_all_finite(x, (size_t)n), "%s all_finite n %d: finite values", variant, n);
    int positions[] = {0, n / 2, n - 1};
    for (size_t p = 0; p < COUNT(positions) && n > 0; p++)
        for (size_t v = 0; v < COUNT(odd); v++) {
            float kept = x[positions[p]];
            x[positions[p]] = odd[v];
            bool expected = true;
            for (int i = 0; i < n; i++)
                expected = expected && isfinite(x[i]);
            cr_assert_eq(ted_all_finite(x, (size_t)n), expected,
                         "%s all_finite n %d: %g at %d", variant, n, (double)odd[v],
                         positions[p]);
            x[positions[p]] = kept;
        }
    free(x);
}

/* ---- the activations ------------------------------------------------------
 * Each against its formula in double (libm's exp and erfc) on the float
 * input: within ACT_RELATIVE of the result plus ACT_OF_INPUT of |x|, the
 * bound kernels.h states, plus half the smallest subnormal (ACT_ROUNDING:
 * a result below the normal range is rounded to a multiple of it). The
 * tanh approximation's reference is x / (1 + exp(-2u)), equal to 0.5 x (1
 * + tanh u) and free of its cancellation. A NaN reference (NaN in, or
 * -inf times 0) wants NaN; a zero one (x = +-0) wants x itself, sign
 * included; an infinite one the same infinity. */
#define ACT_RELATIVE 1e-6
#define ACT_OF_INPUT 1e-7
#define ACT_ROUNDING 0x1p-150

static double reference_silu(double x)
{
    return x / (1.0 + exp(-x));
}

static double reference_gelu(double x)
{
    return 0.5 * x * erfc(-x * 0.70710678118654752440);
}

static double reference_gelu_tanh(double x)
{
    double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

typedef struct activation {
    const char *name;
    void (*kernel)(float *x, size_t n);
    double (*reference)(double x);
} activation;

static const activation activations[] = {
    {"times_sigmoid", ted_times_sigmoid, reference_silu},
    {"times_normal_cdf", ted_times_normal_cdf, reference_gelu},
    {"times_normal_cdf_tanh", ted_times_normal_cdf_tanh, reference_gelu_tanh},
};

static void assert_activation(const char *variant, const activation *f, float x, float got,
                              int n, int i)
{
    double expected = f->reference(x);
    const char *what = f->name;
    if (isnan(expected))
        cr_assert(isnan(got), "%s %s n %d [%d]: %g gave %g, not NaN", variant, what, n, i,
                  (double)x, (double)got);
    else if (expected == 0.0 || isinf(expected))
        cr_assert(got == expected && !signbit(got) == !signbit(expected),
                  "%s %s n %d [%d]: %g gave %g, expected %g", variant, what, n, i, (double)x,
                  (double)got, expected);
    else
        cr_assert(fabs(got - expected) <=
                      ACT_RELATIVE * fabs(expected) + ACT_OF_INPUT * fabs(x) + ACT_ROUNDING,
                  "%s %s n %d [%d]: %.9g gave %.9g, expected %.9g", variant, what, n, i,
                  (double)x, (double)got, expected);
}

/* n values: uniform in [-12, 12), and from the fourth on every few an
 * edge: +-0, subnormals, the smallest normal, huge values, infinities,
 * NaN. */
static void fill_activation_inputs(float *x, int n, unsigned seed)
{
    static const float edges[] = {0.0f,     -0.0f,   1e-45f,    -1e-45f,  1e-40f,  -3e-39f,
                                  FLT_MIN,  -FLT_MIN, 1e-20f,   -1e-20f,  20.0f,   -20.0f,
                                  88.5f,    -88.5f,  200.0f,    -200.0f,  1e20f,   -1e20f,
                                  FLT_MAX,  -FLT_MAX, INFINITY, -INFINITY, NAN,    -NAN};
    fill_random(x, (size_t)n, seed);
    for (int i = 0; i < n; i++)
        x[i] = i >= 3 && i % 7 == 3 ? edges[(i / 7) % COUNT(edges)] : x[i] * 12.0f;
}

static void check_activations(const char *variant, int n)
{
    float *x = checked_floats(n), *out = checked_floats(n);
    fill_activation_inputs(x, n, 83u + n);
    for (size_t f = 0; f < COUNT(activations); f++) {
        memcpy(out, x, sizeof(float) * n);
        activations[f].kernel(out, (size_t)n);
        for (int i = 0; i < n; i++)
            assert_activation(variant, &activations[f], x[i], out[i], n, i);
    }
    free(x);
    free(out);
}

/* A sweep of the floats, both signs: 64 values per power of two from the
 * smallest subnormal to 2^100, the region where exp under- and overflows
 * (|x| 8 to 100) 4096 per unit. */
static void check_activation_sweep(const char *variant)
{
    enum { DENSE = 2 * 92 * 4096 };
    size_t n = 0, capacity = 2 * (250 * 64 + DENSE);
    float *x = malloc(sizeof(float) * capacity), *out = malloc(sizeof(float) * capacity);
    cr_assert(x && out);
    for (int e = -149; e < 100; e++)
        for (int m = 0; m < 64; m++) {
            x[n++] = ldexpf(1.0f + m / 64.0f, e);
            x[n++] = -ldexpf(1.0f + m / 64.0f, e);
        }
    for (int k = 0; k < DENSE; k++)
        x[n++] = (k % 2 ? -1.0f : 1.0f) * (8.0f + (float)(k / 2) / 4096.0f);
    for (size_t f = 0; f < COUNT(activations); f++) {
        memcpy(out, x, sizeof(float) * n);
        activations[f].kernel(out, n);
        for (size_t i = 0; i < n; i++)
            assert_activation(variant, &activations[f], x[i], out[i], (int)n, (int)i);
    }
    free(x);
    free(out);
}

/* Layer normalization of 3 rows of n against a double-precision reference
 * (two-pass mean and variance), out of place and in place: within
 * TOL_RELATIVE of the magnitudes of each output's terms. Rows with a large
 * mean (1000 + small values) check that the mean is taken out in double. */
static void check_normalize_rows(const char *variant, int n)
{
    enum { ROWS = 3 };
    static float x[ROWS * 1001], y[ROWS * 1001], gamma[1001], beta[1001];
    fill_random(x, (size_t)ROWS * n, 91u + n);
    fill_random(gamma, n, 92u + n);
    fill_random(beta, n, 93u + n);
    for (int i = 0; i < n; i++)
        x[2 * n + i] += 1000.0f;
    ted_normalize_rows(y, x, gamma, beta, ROWS, n, 1e-5f);
    for (int r = 0; r < ROWS; r++) {
        const float *xr = x + (size_t)r * n;
        double mean = 0.0, variance = 0.0;
        for (int i = 0; i < n; i++)
            mean += xr[i];
        mean /= n;
        for (int i = 0; i < n; i++)
            variance += (xr[i] - mean) * (xr[i] - mean);
        double inv_std = 1.0 / sqrt(variance / n + 1e-5);
        for (int i = 0; i < n; i++) {
            double scaled = (xr[i] - mean) * inv_std * gamma[i];
            double expected = scaled + beta[i];
            float got = y[(size_t)r * n + i];
            cr_assert(fabs(got - expected) <= TOL_RELATIVE * (fabs(scaled) + fabs(beta[i])) + 1e-7,
                      "%s normalize_rows n %d row %d [%d]: %.9g, expected %.9g", variant, n, r,
                      i, (double)got, expected);
        }
    }
    ted_normalize_rows(x, x, gamma, beta, ROWS, n, 1e-5f);  /* in place: the same values */
    for (int i = 0; i < ROWS * n; i++)
        cr_assert_eq(x[i], y[i], "%s normalize_rows n %d in place [%d]: %.9g, not %.9g", variant,
                     n, i, (double)x[i], (double)y[i]);
}

static void check_vectors(const char *variant)
{
    use_variant(variant);
    for (size_t i = 0; i < COUNT(lengths); i++) {
        check_scaled_dots(variant, lengths[i]);
        check_weighted_sum(variant, lengths[i]);
        check_max(variant, lengths[i]);
        check_exp(variant, lengths[i]);
        check_exp_at(variant, lengths[i]);
        check_scale(variant, lengths[i]);
        check_zero_negatives(variant, lengths[i]);
        check_all_finite(variant, lengths[i]);
        check_activations(variant, lengths[i]);
        check_normalize_rows(variant, lengths[i]);
    }
    for (size_t i = 0; i < COUNT(head_sizes); i++) {
        check_scaled_dots(variant, head_sizes[i]);
        check_weighted_sum(variant, head_sizes[i]);
    }
    /* Long enough to be split over the pool (kernels/dispatch.c: chunks of
     * 16384 floats from 32768 on), the last chunk partial. */
    ted_parallel_set_threads(2);
    check_zero_negatives(variant, 50007);
    check_all_finite(variant, 50007);
    check_activations(variant, 50007);
    ted_parallel_set_threads(1);
    check_activation_sweep(variant);
}

/* ---- ted_matmul_i8 ------------------------------------------------------------
 * Against a reference computed here from the documented scheme: each row of
 * x quantized (scale max|x| / 127, x * (127 / max) rounded to the nearest
 * integer, ties to even), the dot products with the int8 W summed exactly
 * in 64-bit integers, then dot * (x_scale * w_scale) + b. The integer part
 * is exact, so the only slack is the final float multiply-add (a fused
 * multiply-add rounds once where the reference rounds twice): I8_TOL_RELATIVE
 * of the magnitude. Then, with no reference to ted's own quantization, the
 * result against the float product with the dequantized W: the activation's
 * rounding error is at most x_scale / 2 per element, so the difference is
 * at most x_scale / 2 * sum_k |W[j][k] * w_scale[j]| (plus float slack). */
#define I8_TOL_RELATIVE 1e-6

typedef struct i8_product {
    int rows, in, out;
    float *x, *w_scale, *b;
    int8_t *W;
} i8_product;

/* Integers in [-127, 127], the same sequence on every run. */
static void fill_int8(int8_t *q, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        q[i] = (int8_t)((int)((seed >> 8) % 255u) - 127);
    }
}

static i8_product make_i8_product(int rows, int in, int out)
{
    i8_product p = {rows, in, out, malloc(sizeof(float) * rows * in), malloc(sizeof(float) * out),
                    malloc(sizeof(float) * out), malloc((size_t)out * in)};
    cr_assert(p.x && p.w_scale && p.b && p.W);
    fill_random(p.x, (size_t)rows * in, 5u + rows + in);
    fill_int8(p.W, (size_t)out * in, 6u + out);
    fill_random(p.w_scale, (size_t)out, 7u + in);
    for (int j = 0; j < out; j++)
        p.w_scale[j] = fabsf(p.w_scale[j]) * 0.01f;
    fill_random(p.b, (size_t)out, 8u);
    return p;
}

static void free_i8_product(i8_product *p)
{
    free(p->x);
    free(p->w_scale);
    free(p->b);
    free(p->W);
}

/* The documented quantization of one row of x. */
static float reference_quantize(int8_t *q, const float *x, int n)
{
    float m = 0.0f;
    for (int k = 0; k < n; k++)
        m = fmaxf(m, fabsf(x[k]));
    float factor = m > 0.0f ? 127.0f / m : 0.0f;
    for (int k = 0; k < n; k++)
        q[k] = (int8_t)nearbyintf(x[k] * factor);
    return m / 127.0f;
}

/* W packed as a model's int8 weights are at load (ted_pack_i8), or NULL
 * when the set reads them as stored. */
static uint8_t *packed_i8(const int8_t *W, int out, int in)
{
    if (!ted_i8_packs())
        return NULL;
    size_t bytes = (ted_i8_packed_bytes(out, in) + 63) / 64 * 64;
    uint8_t *packed = aligned_alloc(64, bytes);
    cr_assert(packed);
    ted_pack_i8(packed, W, out, in);
    return packed;
}

/* W in the same groups by ted_pack_i8_plain, as a mapped file holds it
 * (every set reads them); byte for byte ted_pack_i8's where the set packs. */
static uint8_t *groups_i8(const int8_t *W, int out, int in)
{
    size_t bytes = (ted_i8_packed_bytes(out, in) + 63) / 64 * 64;
    uint8_t *groups = aligned_alloc(64, bytes);
    cr_assert(groups);
    ted_pack_i8_plain(groups, W, out, in);
    uint8_t *packed = packed_i8(W, out, in);
    cr_assert(!packed || !memcmp(packed, groups, ted_i8_packed_bytes(out, in)),
              "ted_pack_i8_plain and ted_pack_i8 differ (%d x %d)", out, in);
    free(packed);
    return groups;
}

/* The product through ted_matmul_i8 (W as stored), or, with `packed`,
 * through ted_linear with W packed as at load, or with W in its groups
 * alone (`alone`: a mapped file's, no rows beside them). */
static void check_i8_product(const char *variant, const i8_product *p, bool bias, int threads,
                             const uint8_t *packed, bool alone)
{
    float *y = malloc(sizeof(float) * p->rows * p->out);
    int8_t *q = malloc((size_t)p->in);
    cr_assert(y && q);
    for (int i = 0; i < p->rows * p->out; i++)
        y[i] = NAN;
    if (packed)
        ted_linear(y, p->x,
                   (ted_matrix){.i8 = alone ? NULL : p->W, .scale = p->w_scale,
                                .i8_packed = packed},
                   bias ? p->b : NULL, p->rows, p->in, p->out);
    else
        ted_matmul_i8(y, p->x, p->W, p->w_scale, bias ? p->b : NULL, p->rows, p->in, p->out);
    for (int i = 0; i < p->rows; i++) {
        const float *xi = p->x + (size_t)i * p->in;
        float x_scale = reference_quantize(q, xi, p->in);
        for (int j = 0; j < p->out; j++) {
            const int8_t *w = p->W + (size_t)j * p->in;
            int64_t dot = 0;
            double exact = bias ? p->b[j] : 0.0, w_magnitude = 0.0;
            for (int k = 0; k < p->in; k++) {
                dot += (int64_t)q[k] * w[k];
                double dequantized = (double)((float)w[k] * p->w_scale[j]);
                exact += xi[k] * dequantized;
                w_magnitude += fabs(dequantized);
            }
            double scaled = (double)((float)dot * (x_scale * p->w_scale[j]));
            double expected = scaled + (bias ? p->b[j] : 0.0);
            double got = y[(size_t)i * p->out + j];
            double magnitude = fabs(scaled) + (bias ? fabs(p->b[j]) : 0.0);
            cr_assert(fabs(got - expected) <= I8_TOL_RELATIVE * magnitude + 1e-30,
                      "%s matmul_i8 rows %d in %d out %d%s%s, %d threads [%d][%d]: got %.9g, "
                      "integer reference %.9g", variant, p->rows, p->in, p->out,
                      bias ? " bias" : "",
                      alone ? " groups alone" : packed ? " packed at load" : "", threads, i, j,
                      got, expected);
            double bound = x_scale / 2.0 * w_magnitude + 1e-5 * (magnitude + 1e-30);
            cr_assert(fabs(got - exact) <= bound,
                      "%s matmul_i8 [%d][%d]: got %.9g, float product %.9g, beyond the "
                      "activation rounding bound %.3g", variant, i, j, got, exact, bound);
        }
    }
    free(q);
    free(y);
}

/* Rows 1 to 17, 25, 37 and 63 (the tiles of 2 and 6 rows and their
 * remainders, more than one block of 32 rows: 63 is 32 + 31), 64, 71 and
 * 200 (W packed for VNNI, kernels/matmul.c's I8_PACKED_ROWS; 200: two
 * blocks of rows), in features no multiple of 64 (the vector tails), out
 * features no multiple of 4 (the last columns one by one); 1 030 x 70: W
 * fetched ahead of the tiles (kernels/variant/matmul_i8.c's
 * PREFETCH_BYTES), whole vectors and a tail. Each with W as stored and,
 * where the set packs int8 weights, W packed as at load (every row count
 * reads it then; out features no multiple of 16: a group's last columns). */
static const int i8_row_counts[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 25, 37, 63, 64, 71, 200};
static const int i8_shapes[][2] = {{1, 1},    {31, 5},   {64, 4},  {100, 17},
                                   {130, 67}, {515, 9}, {1030, 70}};

static void check_matmul_i8(const char *variant)
{
    use_variant(variant);
    for (int threads = 1; threads <= 2; threads++) {
        ted_parallel_set_threads(threads);
        for (size_t r = 0; r < COUNT(i8_row_counts); r++)
            for (size_t s = 0; s < COUNT(i8_shapes); s++) {
                i8_product p = make_i8_product(i8_row_counts[r], i8_shapes[s][0],
                                               i8_shapes[s][1]);
                uint8_t *packed = packed_i8(p.W, p.out, p.in);
                uint8_t *groups = groups_i8(p.W, p.out, p.in);
                check_i8_product(variant, &p, false, threads, NULL, false);
                check_i8_product(variant, &p, true, threads, NULL, false);
                if (packed) {
                    check_i8_product(variant, &p, false, threads, packed, false);
                    check_i8_product(variant, &p, true, threads, packed, false);
                }
                check_i8_product(variant, &p, false, threads, groups, true);
                check_i8_product(variant, &p, true, threads, groups, true);
                free(groups);
                free(packed);
                free_i8_product(&p);
            }
    }
    ted_parallel_set_threads(1);
}

/* Every product at +-127 * +-127 and at +-127 * -128 (a weight ted's
 * quantizer never writes, but a file may hold), the largest pairs
 * vpmaddubsw sums (2 * 128 * 127 = 32512, under int16's 32767), and sums
 * far beyond int16: the result must be exact. */
static void check_i8_saturation(const char *variant)
{
    use_variant(variant);
    /* the three rows below, repeated to 66 rows: W packed as well */
    enum { KINDS_X = 3, ROWS = 22 * KINDS_X, IN = 1000, OUT = 8, KINDS = 4 };
    static float x[ROWS * IN], w_scale[OUT], y[ROWS * OUT];
    static int8_t W[OUT * IN];
    for (int i = 0; i < ROWS; i += KINDS_X)
        for (int k = 0; k < IN; k++) {
            x[i * IN + k] = 2.0f;                       /* every element quantizes to 127 */
            x[(i + 1) * IN + k] = k % 2 ? 3.0f : -3.0f; /* +-127, alternating */
            x[(i + 2) * IN + k] = -0.5f;                /* -127 */
        }
    for (int j = 0; j < OUT; j++) {
        w_scale[j] = 1.0f;
        for (int k = 0; k < IN; k++)
            W[j * IN + k] = (int8_t)(j % KINDS == 0   ? 127
                                     : j % KINDS == 1 ? -127
                                     : j % KINDS == 2 ? (k % 2 ? 127 : -127)
                                                      : -128);
    }
    ted_matmul_i8(y, x, W, w_scale, NULL, ROWS, IN, OUT);
    const float x_scale[KINDS_X] = {2.0f / 127.0f, 3.0f / 127.0f, 0.5f / 127.0f};
    /* dot / (127 * IN) for each kind of W row */
    const int dot[KINDS_X][KINDS] = {{127, -127, 0, -128}, {0, 0, 127, 0}, {-127, 127, 0, 128}};
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < OUT; j++) {
            int kind = i % KINDS_X;
            float expected = (float)(dot[kind][j % KINDS] * 127 * IN) * (x_scale[kind] * 1.0f);
            cr_assert(fabsf(y[i * OUT + j] - expected) <= 1e-6f * fabsf(expected),
                      "%s matmul_i8 at +-127 and -128: [%d][%d] got %.9g, expected %.9g",
                      variant, i, j, (double)y[i * OUT + j], (double)expected);
        }
}

/* Activations rounded to the nearest integer, ties to even, and clipped at
 * the row's largest magnitude: W = identity reads the quantized x back. */
static void check_i8_rounding(const char *variant)
{
    use_variant(variant);
    enum { N = 8 };
    const float x[N] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -126.5f, 3.49f};
    const float expected[N] = {127.0f, 0.0f, 2.0f, 2.0f, 0.0f, -2.0f, -126.0f, 3.0f};
    int8_t W[N * N] = {0};
    float w_scale[N], y[N];
    for (int j = 0; j < N; j++) {
        W[j * N + j] = 1;
        w_scale[j] = 1.0f;
    }
    ted_matmul_i8(y, x, W, w_scale, NULL, 1, N, N);
    for (int j = 0; j < N; j++)
        cr_assert(y[j] == expected[j], "%s quantized %g to %g, expected %g", variant,
                  (double)x[j], (double)y[j], (double)expected[j]);
}

/* A NaN in a row of x makes that row's products NaN, as in float32; the
 * other rows are untouched. 40 columns: the vector loops and the tail. */
static void check_i8_nan(const char *variant)
{
    use_variant(variant);
    enum { ROWS = 2, IN = 40, OUT = 4 };
    float x[ROWS * IN], w_scale[OUT], y[ROWS * OUT];
    int8_t W[OUT * IN];
    for (int k = 0; k < ROWS * IN; k++)
        x[k] = 1.0f;
    x[3] = NAN;  /* row 0, inside the first vector */
    for (int j = 0; j < OUT * IN; j++)
        W[j] = 1;
    for (int j = 0; j < OUT; j++)
        w_scale[j] = 1.0f;
    ted_matmul_i8(y, x, W, w_scale, NULL, ROWS, IN, OUT);
    for (int j = 0; j < OUT; j++) {
        cr_assert(isnan(y[j]), "%s: row with a NaN gave %g at column %d", variant,
                  (double)y[j], j);
        cr_assert(y[OUT + j] == (float)IN * (1.0f / 127.0f) * 127.0f,
                  "%s: the row without a NaN gave %g", variant, (double)y[OUT + j]);
    }
}

/* Rows of an int8 table, dequantized: q * scale * factor. */
Test(kernels, matrix_row_dequantizes)
{
    const int8_t q[6] = {-127, 0, 5, 127, -1, 64};
    const float scale[2] = {0.5f, 0.25f};
    ted_matrix table = {.i8 = q, .scale = scale};
    float row[3];
    ted_matrix_row(row, table, 1, 3, 2.0f);
    cr_assert(row[0] == 63.5f && row[1] == -0.5f && row[2] == 32.0f, "%g %g %g",
              (double)row[0], (double)row[1], (double)row[2]);
    ted_matrix second = ted_matrix_rows(table, 1, 3);
    ted_matrix_row(row, second, 0, 3, 1.0f);
    cr_assert(row[0] == 31.75f && row[1] == -0.25f && row[2] == 16.0f);
}

/* A row looked up in the panels is the row as stored. */
Test(kernels, matrix_row_from_panels)
{
    enum { ROWS = 37, COLS = 5 };
    float W[ROWS * COLS], panels[48 * COLS], row[COLS];
    fill_random(W, ROWS * COLS, 7u);
    ted_pack_panels(panels, W, ROWS, COLS);
    cr_assert_eq(ted_panels_floats(ROWS, COLS), 48 * COLS);
    ted_matrix table = {.f32 = W, .panels = panels};
    for (int r = 0; r < ROWS; r++) {
        ted_matrix_row(row, table, r, COLS, 2.0f);
        for (int c = 0; c < COLS; c++)
            cr_assert(row[c] == W[r * COLS + c] * 2.0f, "row %d column %d: %g, stored %g", r, c,
                      (double)row[c], (double)W[r * COLS + c]);
    }
    for (int c = 0; c < COLS; c++)
        cr_assert(panels[(2 * COLS + c) * 16 + 5] == 0.0f, "the rows past 37 are zero");
}

/* The int8 W of the row checks: 37 rows (groups of 16 and a partial one),
 * 70 columns (whole 4-byte steps and a part), each row with its scale. */
enum { I8_ROWS = 37, I8_COLS = 70 };

typedef struct i8_rows {
    int8_t W[I8_ROWS * I8_COLS];
    float scale[I8_ROWS];
} i8_rows;

/* Selects `variant` and fills W from `seed`, row r's scale 0.01 (r + 1). */
static void fill_i8_rows(i8_rows *w, const char *variant, unsigned seed)
{
    use_variant(variant);
    fill_int8(w->W, I8_ROWS * I8_COLS, seed);
    for (int r = 0; r < I8_ROWS; r++)
        w->scale[r] = 0.01f * (float)(r + 1);
}

/* Asserts that every row of `table` reads back as W stored, and
 * dequantized with its scale (times 2), and that row 20 of `from_16`, the
 * part of `table` from row 16, is row 36 of W. */
static void expect_i8_rows(ted_matrix table, ted_matrix from_16,
                           const int8_t W[I8_ROWS * I8_COLS], const float scale[I8_ROWS],
                           const char *variant)
{
    int8_t row[I8_COLS];
    float dequantized[I8_COLS];
    for (int r = 0; r < I8_ROWS; r++) {
        ted_matrix_i8_row(row, table, r, I8_COLS);
        ted_matrix_row(dequantized, table, r, I8_COLS, 2.0f);
        for (int c = 0; c < I8_COLS; c++)
            cr_assert(row[c] == W[r * I8_COLS + c] &&
                      dequantized[c] == (W[r * I8_COLS + c] * scale[r]) * 2.0f,
                      "%s row %d column %d: %d, stored %d", variant, r, c, row[c],
                      W[r * I8_COLS + c]);
    }
    ted_matrix_i8_row(row, from_16, 20, I8_COLS);
    cr_assert(!memcmp(row, W + 36 * I8_COLS, I8_COLS), "%s: row 20 of the part from row 16",
              variant);
}

/* A row of an int8 W packed as at load reads back as stored, alone and
 * from a part of W that starts a group; a part that starts inside a group
 * reads W as stored. */
static void check_i8_rows_packed(const char *variant)
{
    i8_rows w;
    fill_i8_rows(&w, variant, 11u);
    uint8_t *packed = packed_i8(w.W, I8_ROWS, I8_COLS);
    if (!packed)
        return;  /* this set reads W as stored */
    ted_matrix table = {.i8 = w.W, .scale = w.scale, .i8_packed = packed};
    ted_matrix from_16 = ted_matrix_rows(table, 16, I8_COLS);
    ted_matrix from_1 = ted_matrix_rows(table, 1, I8_COLS);
    cr_assert(from_16.i8_packed && !from_1.i8_packed, "%s: a part of W keeps its packing only "
              "from a group's first row", variant);
    expect_i8_rows(table, from_16, w.W, w.scale, variant);
    free(packed);
}

/* W in its groups alone (a mapped file's: no rows beside them) reads back
 * as stored, whole and from a part that starts a group. */
static void check_i8_rows_alone(const char *variant)
{
    i8_rows w;
    fill_i8_rows(&w, variant, 12u);
    uint8_t *groups = groups_i8(w.W, I8_ROWS, I8_COLS);
    ted_matrix table = {.scale = w.scale, .i8_packed = groups};
    ted_matrix from_16 = ted_matrix_rows(table, 16, I8_COLS);
    cr_assert(from_16.i8_packed && !from_16.i8 && from_16.scale == w.scale + 16);
    expect_i8_rows(table, from_16, w.W, w.scale, variant);
    free(groups);
}

/* ---- int8 with one multiplier for all of x (Marian's intgemm) ---------------
 * Against an exact integer reference of the documented scheme: factor =
 * x_mult, or 127 / max |x| over the whole matrix (TED_I8_WHOLE); q = x *
 * factor rounded to the nearest integer, ties to even, clipped to [-127,
 * 127]; dot summed in 64-bit integers; dot * (1 / factor * w_scale) + b.
 * Through ted_matmul_i8_whole, ted_linear with W as stored, packed as at
 * load where the set packs, and in its groups alone. A given multiplier of
 * 200 / max |x| pushes part of x past 127 (the clip); a row of x at
 * halves of the multiplier checks the ties. */
static int8_t reference_whole_q(float x, float factor)
{
    float v = nearbyintf(x * factor);
    return (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : v);
}

/* The multiplier of x of a whole-matrix product: x_mult, or 127 / max |x|. */
static float whole_factor(const i8_product *p, float x_mult)
{
    float m = 0.0f;
    for (int i = 0; i < p->rows * p->in; i++)
        m = fmaxf(m, fabsf(p->x[i]));
    return x_mult > 0.0f ? x_mult : 127.0f / m;
}

/* The exact integer dot of row i of x, quantized by factor, and row j of W. */
static int64_t whole_dot(const i8_product *p, float factor, int i, int j)
{
    int64_t dot = 0;
    for (int k = 0; k < p->in; k++)
        dot += (int64_t)reference_whole_q(p->x[(size_t)i * p->in + k], factor) *
               p->W[(size_t)j * p->in + k];
    return dot;
}

static void check_whole_result(const char *variant, const i8_product *p, float x_mult,
                               const float *y, const char *how)
{
    float factor = whole_factor(p, x_mult);
    for (int i = 0; i < p->rows; i++)
        for (int j = 0; j < p->out; j++) {
            int64_t dot = whole_dot(p, factor, i, j);
            double scaled = (double)((float)dot * (1.0f / factor * p->w_scale[j]));
            double expected = scaled + p->b[j], got = y[(size_t)i * p->out + j];
            cr_assert(fabs(got - expected) <= I8_TOL_RELATIVE * (fabs(scaled) + fabs(p->b[j])) +
                                                  1e-30,
                      "%s int8 whole-matrix x_mult %g rows %d in %d out %d (%s) [%d][%d]: "
                      "got %.9g, integer reference %.9g", variant, (double)x_mult, p->rows,
                      p->in, p->out, how, i, j, got, expected);
        }
}

static void check_whole_product(const char *variant, i8_product *p, float x_mult)
{
    float *y = malloc(sizeof(float) * p->rows * p->out);
    cr_assert(y);
    ted_matmul_i8_whole(y, p->x, x_mult, p->W, p->w_scale, p->b, p->rows, p->in, p->out);
    check_whole_result(variant, p, x_mult, y, "ted_matmul_i8_whole");
    ted_matrix W = {.i8 = p->W, .scale = p->w_scale, .x_mult = x_mult};
    ted_linear(y, p->x, W, p->b, p->rows, p->in, p->out);
    check_whole_result(variant, p, x_mult, y, "ted_linear, W as stored");
    uint8_t *packed = packed_i8(p->W, p->out, p->in), *groups = groups_i8(p->W, p->out, p->in);
    if (packed) {
        W.i8_packed = packed;
        ted_linear(y, p->x, W, p->b, p->rows, p->in, p->out);
        check_whole_result(variant, p, x_mult, y, "ted_linear, W packed at load");
    }
    W = (ted_matrix){.scale = p->w_scale, .i8_packed = groups, .x_mult = x_mult};
    ted_linear(y, p->x, W, p->b, p->rows, p->in, p->out);
    check_whole_result(variant, p, x_mult, y, "ted_linear, W's groups alone");
    free(packed);
    free(groups);
    free(y);
}

static void check_i8_whole(const char *variant)
{
    use_variant(variant);
    static const int rows[] = {1, 3, 17, 64, 71};
    static const int whole_shapes[][2] = {{31, 5}, {100, 17}, {515, 9}};
    for (size_t r = 0; r < COUNT(rows); r++)
        for (size_t s = 0; s < COUNT(whole_shapes); s++) {
            i8_product p = make_i8_product(rows[r], whole_shapes[s][0], whole_shapes[s][1]);
            for (int i = 0; i < p.rows * p.in; i++)  /* rows of unequal ranges */
                p.x[i] *= 1.0f + (float)(i / p.in % 5);
            for (int k = 0; k < p.in; k++)           /* row 0 at halves of 2.0 */
                p.x[k] = (float)(k % 9 - 4) * 0.5f + 0.25f;
            float m = 0.0f;
            for (int i = 0; i < p.rows * p.in; i++)
                m = fmaxf(m, fabsf(p.x[i]));
            check_whole_product(variant, &p, TED_I8_WHOLE);
            check_whole_product(variant, &p, 2.0f);
            check_whole_product(variant, &p, 200.0f / m);
            free_i8_product(&p);
        }
}

/* Marian's products (ted_matrix.w_mult: W's multiplier qm_B): every dot
 * times 1 / (qm_A * qm_B), computed as Marian's intgemm computes it, plus
 * b, to the bit, in every way W is read. Across the shapes the factor
 * differs in the last bit from (1 / qm_A) * (1 / qm_B) for some x, which
 * the reference counts: a product scaled the other way fails there. */
static int marian_result(const char *variant, const i8_product *p, float x_mult, float w_mult,
                         const float *y, const char *how)
{
    float factor = whole_factor(p, x_mult);
    float unquant = 1.0f / (factor * w_mult);
    for (int i = 0; i < p->rows; i++)
        for (int j = 0; j < p->out; j++) {
            int64_t dot = whole_dot(p, factor, i, j);
            float expected = (float)dot * unquant + p->b[j], got = y[(size_t)i * p->out + j];
            cr_assert(got == expected,
                      "%s Marian int8 x_mult %g w_mult %g rows %d in %d out %d (%s) [%d][%d]: "
                      "got %.9g, Marian's %.9g", variant, (double)x_mult, (double)w_mult,
                      p->rows, p->in, p->out, how, i, j, got, expected);
        }
    return unquant != 1.0f / factor * (1.0f / w_mult);
}

static int check_marian_product(const char *variant, const i8_product *p, float x_mult,
                                float w_mult)
{
    float *y = malloc(sizeof(float) * p->rows * p->out);
    cr_assert(y);
    ted_matrix W = {.i8 = p->W, .scale = p->w_scale, .x_mult = x_mult, .w_mult = w_mult};
    ted_linear(y, p->x, W, p->b, p->rows, p->in, p->out);
    int differs = marian_result(variant, p, x_mult, w_mult, y, "W as stored");
    uint8_t *packed = packed_i8(p->W, p->out, p->in), *groups = groups_i8(p->W, p->out, p->in);
    if (packed) {
        W.i8_packed = packed;
        ted_linear(y, p->x, W, p->b, p->rows, p->in, p->out);
        marian_result(variant, p, x_mult, w_mult, y, "W packed at load");
    }
    W = (ted_matrix){.scale = p->w_scale, .i8_packed = groups, .x_mult = x_mult,
                     .w_mult = w_mult};
    ted_linear(y, p->x, W, p->b, p->rows, p->in, p->out);
    marian_result(variant, p, x_mult, w_mult, y, "W's groups alone");
    free(packed);
    free(groups);
    free(y);
    return differs;
}

static void check_i8_marian(const char *variant)
{
    use_variant(variant);
    static const int rows[] = {1, 3, 17, 71};
    static const int marian_shapes[][2] = {{31, 5}, {100, 17}, {515, 9}};
    int differs = 0;
    for (size_t r = 0; r < COUNT(rows); r++)
        for (size_t s = 0; s < COUNT(marian_shapes); s++)
            for (int scaled = 0; scaled < 8; scaled++) {
                i8_product p = make_i8_product(rows[r], marian_shapes[s][0], marian_shapes[s][1]);
                float w_mult = 127.0f / (0.37f + 0.11f * (float)scaled);
                for (int j = 0; j < p.out; j++)
                    p.w_scale[j] = 1.0f / w_mult;
                for (int i = 0; i < p.rows * p.in; i++)
                    p.x[i] *= 1.0f + 0.3f * (float)scaled;
                differs += check_marian_product(variant, &p, TED_I8_WHOLE, w_mult);
                differs += check_marian_product(variant, &p, 2.0f + 0.1f * (float)scaled, w_mult);
                free_i8_product(&p);
            }
    cr_assert(differs > 0, "%s: no product where 1 / (qm_A * qm_B) differs from "
              "(1 / qm_A) * (1 / qm_B): the check cannot tell them apart", variant);
}

#define VARIANT_TESTS(name)                                                                   \
    Test(kernels, matmul_##name)                                                              \
    {                                                                                         \
        check_matmul(#name);                                                                  \
    }                                                                                         \
    Test(kernels, vectors_##name)                                                             \
    {                                                                                         \
        check_vectors(#name);                                                                 \
    }                                                                                         \
    Test(kernels, matmul_i8_##name)                                                           \
    {                                                                                         \
        check_matmul_i8(#name);                                                               \
        check_i8_rows_packed(#name);                                                          \
        check_i8_rows_alone(#name);                                                           \
    }                                                                                         \
    Test(kernels, matmul_i8_saturation_##name)                                                \
    {                                                                                         \
        check_i8_saturation(#name);                                                           \
        check_i8_rounding(#name);                                                             \
        check_i8_nan(#name);                                                                  \
    }                                                                                         \
    Test(kernels, matmul_i8_whole_##name)                                                     \
    {                                                                                         \
        check_i8_whole(#name);                                                                \
        check_i8_marian(#name);                                                               \
    }

VARIANT_TESTS(portable)
VARIANT_TESTS(avx2)
VARIANT_TESTS(avx512)

/* ---- which set runs --------------------------------------------------------- */

/* Whether /proc/cpuinfo's flags (what the CPU has and Linux enabled) hold
 * every one of `wanted`, a list separated by spaces. */
static bool cpuinfo_has(const char *wanted)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    cr_assert(f, "cannot read /proc/cpuinfo");
    char line[8192] = "";
    while (fgets(line, sizeof line, f) && strncmp(line, "flags", 5))
        ;
    fclose(f);
    char flags[8200], words[128];
    snprintf(flags, sizeof flags, " %s ", strchr(line, ':') ? strchr(line, ':') + 1 : line);
    flags[strcspn(flags, "\n")] = ' ';
    snprintf(words, sizeof words, "%s", wanted);
    for (char *w = strtok(words, " "); w; w = strtok(NULL, " ")) {
        char word[40];
        snprintf(word, sizeof word, " %s ", w);
        if (!strstr(flags, word))
            return false;
    }
    return true;
}

Test(kernels, sets_follow_the_cpu)
{
#if defined(__x86_64__) && defined(__linux__)
    bool avx2 = cpuinfo_has("avx2 fma");
    bool avx512 = avx2 && cpuinfo_has("avx512f avx512bw avx512vl avx512dq");
#else
    bool avx2 = false, avx512 = false;
#endif
    cr_assert_eq(ted_kernels_supported("avx512"), avx512);
    cr_assert_eq(ted_kernels_supported("avx2"), avx2);
    cr_assert(ted_kernels_supported("portable"));
    cr_assert(!ted_kernels_supported("avx9"));
    const char *forced = getenv("TED_CPU");
    const char *expected = forced && *forced ? forced
                           : avx512          ? "avx512"
                           : avx2            ? "avx2"
                                             : "portable";
    cr_assert_str_eq(ted_kernels_name(), expected);
}

Test(kernels, unknown_set_refused)
{
    const char *before = ted_kernels_name();
    ted_error err = {0};
    cr_assert_eq(ted_kernels_select("avx9", &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "unknown kernels 'avx9'") && strstr(err.message, "portable"),
              "%s", err.message);
    cr_assert_eq(ted_kernels_select(NULL, &err), TED_ERR_ARGUMENT);
    cr_assert_str_eq(ted_kernels_name(), before);
}

/* Each test runs in a process of its own, so TED_CPU set here is read at
 * the first choice. */
Test(kernels, environment_forces_a_set)
{
    setenv("TED_CPU", "portable", 1);
    ted_error err = {0};
    cr_assert_eq(ted_kernels_init(&err), TED_OK, "%s", err.message);
    cr_assert_str_eq(ted_kernels_name(), "portable");
}

Test(kernels, environment_unknown_set_refused)
{
    setenv("TED_CPU", "avx9", 1);
    ted_error err = {0};
    cr_assert_eq(ted_kernels_init(&err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "TED_CPU") && strstr(err.message, "'avx9'"), "%s",
              err.message);
    cr_assert_eq(ted_kernels_init(&err), TED_ERR_ARGUMENT, "refused on every call");
    cr_assert(ted_kernels_supported(ted_kernels_name()), "the best set runs instead");
}

/* ---- pools of their own ---------------------------------------------------------
 * While a job of this thread holds the process's pool (its tasks wait for
 * the side thread), a thread bound to a pool of its own still gets that
 * pool's threads: its two tasks run at once (each waits, up to 10 s, until
 * both have started). On the process's pool they would run one after the
 * other on the side thread alone, and neither would see the other start. */
static atomic_int main_started, side_started, side_met;
static atomic_bool side_done;

/* Whether *v reached `value` within 10 s. */
static bool reaches(atomic_int *v, int value)
{
    for (int ms = 0; ms < 10000; ms++) {
        if (atomic_load(v) >= value)
            return true;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return atomic_load(v) >= value;
}

static void main_task(void *context, int index)
{
    (void)context, (void)index;
    atomic_fetch_add(&main_started, 1);
    for (int ms = 0; ms < 10000 && !atomic_load(&side_done); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

static void side_task(void *context, int index)
{
    (void)context, (void)index;
    atomic_fetch_add(&side_started, 1);
    if (reaches(&side_started, 2))
        atomic_fetch_add(&side_met, 1);
}

static ted_threads *side_pool;

static void *side_thread(void *threads)
{
    cr_assert_null(ted_parallel_use(side_pool), "a new thread starts on the process's pool");
    *(int *)threads = ted_parallel_threads();
    if (reaches(&main_started, 1))
        ted_parallel_for(2, side_task, NULL);
    atomic_store(&side_done, true);
    return NULL;
}

Test(parallel, a_callers_pool_runs_beside_a_busy_process_pool, .timeout = 120)
{
    ted_parallel_set_threads(2);
    side_pool = ted_parallel_pool_new(2);
    cr_assert_not_null(side_pool);
    cr_assert_eq(ted_parallel_pool_threads(side_pool), 2);
    pthread_t side;
    int side_threads = 0;
    cr_assert_eq(pthread_create(&side, NULL, side_thread, &side_threads), 0);
    ted_parallel_for(2, main_task, NULL);
    pthread_join(side, NULL);
    cr_assert_eq(atomic_load(&main_started), 2, "the main pool's job ran");
    cr_assert_eq(side_threads, 2, "the side thread counts its pool's threads");
    cr_assert_eq(ted_parallel_threads(), 2, "this thread counts the process pool's");
    cr_assert_eq(atomic_load(&side_met), 2, "the side pool's two tasks ran at once");
    ted_parallel_pool_free(side_pool);
    ted_parallel_set_threads(1);
}

/* Two threads, each bound to a pool of its own, and the process's pool
 * resized meanwhile: each thread counts its own pool's threads, the binding
 * returns the one before, and ted_set_threads leaves a caller's pool as it
 * is. */
static void *count_on(void *pool)
{
    ted_parallel_use(pool);
    int threads = ted_parallel_threads();
    ted_parallel_use(NULL);
    return (void *)(intptr_t)threads;
}

Test(parallel, each_callers_pool_keeps_its_threads)
{
    int cpus = ted_usable_cpus();
    ted_threads *one = ted_parallel_pool_new(1), *two = ted_parallel_pool_new(2);
    cr_assert(one && two);
    ted_parallel_set_threads(cpus);
    pthread_t a, b;
    void *got_a, *got_b;
    cr_assert_eq(pthread_create(&a, NULL, count_on, one), 0);
    cr_assert_eq(pthread_create(&b, NULL, count_on, two), 0);
    pthread_join(a, &got_a);
    pthread_join(b, &got_b);
    cr_assert_eq((intptr_t)got_a, 1);
    cr_assert_eq((intptr_t)got_b, 2);
    cr_assert_eq(ted_parallel_threads(), cpus, "this thread: the process's pool");
    cr_assert_null(ted_parallel_use(two));
    ted_parallel_set_threads(1);
    cr_assert_eq(ted_parallel_threads(), 2, "ted_set_threads leaves a caller's pool as it is");
    cr_assert_eq(ted_parallel_use(NULL), two, "the binding before");
    cr_assert_eq(ted_parallel_threads(), 1);
    ted_parallel_pool_free(one);
    ted_parallel_pool_free(two);
}

/* Each task of a job counts its own run; the tasks of every third index
 * take longer, so that threads done with their own part take from others'. */
typedef struct counted_job {
    atomic_int *runs;
} counted_job;

static void counted_task(void *context, int index)
{
    const counted_job *job = context;
    atomic_fetch_add(&job->runs[index], 1);
    if (index % 3 == 0)
        for (volatile int spin = 0; spin < 2000; spin++)
            ;
}

Test(parallel, every_task_of_every_job_runs_once, .timeout = 120)
{
    enum { JOBS = 3000, MOST = 257 };
    static atomic_int runs[MOST];
    for (int threads = 2; threads <= 5; threads += 3) {
        ted_parallel_set_threads(threads);
        for (int job = 0; job < JOBS; job++) {
            int count = job % MOST;
            for (int i = 0; i < count; i++)
                atomic_store(&runs[i], 0);
            counted_job context = {runs};
            ted_parallel_for(count, counted_task, &context);
            for (int i = 0; i < count; i++)
                cr_assert_eq(atomic_load(&runs[i]), 1,
                             "%d threads, job %d of %d tasks: task %d ran %d times", threads,
                             job, count, i, atomic_load(&runs[i]));
        }
    }
    ted_parallel_set_threads(1);
}
