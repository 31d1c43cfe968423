/* The single layers against PyTorch: Linear (one, three and five rows; many
 * rows and columns against a naive product), LayerNorm, RMSNorm, ReLU and GELU, the
 * feed-forward network, softmax / log-softmax / argmax, the positional
 * encoding table and the embedding lookup. Reference values: tests/unit/layer_fixtures.h
 * (tools/make_layer_fixtures.py). Tolerance: TOL_OP (1e-5 absolute) for a
 * single operation, TOL_COMPOSED (1e-4) for the feed-forward network. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float_check.h"
#include "layer_fixtures.h"
#include "layers/add_norm.h"
#include "layers/embedding.h"
#include "layers/feed_forward.h"
#include "layers/norm.h"
#include "kernels/kernels.h"
#include "layers/output.h"
#include "layers/positional_encoding.h"
#include "layers/relative_position.h"
#include "layers/softmax.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Linear -------------------------------------------------------------- */

static void check_linear(const float *x, int rows, bool bias, const float *expected,
                         const char *what)
{
    float y[5 * LINEAR_OUT];
    for (size_t i = 0; i < COUNT(y); i++)
        y[i] = NAN;  /* without a bias the output must be overwritten, not added to */
    ted_matmul(y, x, linear_W, bias ? linear_b : NULL, rows, LINEAR_IN, LINEAR_OUT);
    ASSERT_CLOSE(y, expected, (size_t)rows * LINEAR_OUT, TOL_OP, what);
}

Test(layers, linear_one_row_with_bias)
{
    check_linear(linear_x1, 1, true, linear_y1_bias, "linear rows 1, bias");
}

Test(layers, linear_one_row_without_bias)
{
    check_linear(linear_x1, 1, false, linear_y1_nobias, "linear rows 1, no bias");
}

Test(layers, linear_three_rows_with_bias)
{
    check_linear(linear_x3, 3, true, linear_y3_bias, "linear rows 3, bias");
}

Test(layers, linear_three_rows_without_bias)
{
    check_linear(linear_x3, 3, false, linear_y3_nobias, "linear rows 3, no bias");
}

Test(layers, linear_five_rows_with_and_without_bias)
{
    check_linear(linear_x5, 5, true, linear_y5_bias, "linear rows 5, bias");
    check_linear(linear_x5, 5, false, linear_y5_nobias, "linear rows 5, no bias");
}

/* Larger shapes than the fixtures hold: deterministic pseudo-random inputs
 * against a naive double-precision product. Covers every path of
 * ted_linear (1-7 rows, 8-128 rows, more than 128 rows for BLAS), partial
 * vectors and tiles, and more output columns than one task of the thread
 * pool takes, with one thread and with two. */
static float pseudo_random(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;  /* [-1, 1) */
}

static void check_linear_naive(int rows, int in, int out, bool bias)
{
    unsigned state = (unsigned)(rows * 1000003 + in * 1009 + out);
    size_t nx = (size_t)rows * in, nw = (size_t)out * in, ny = (size_t)rows * out;
    float *x = malloc(sizeof(float) * nx), *W = malloc(sizeof(float) * nw);
    float *b = malloc(sizeof(float) * out), *y = malloc(sizeof(float) * ny);
    float *want = malloc(sizeof(float) * ny);
    cr_assert(x && W && b && y && want);
    for (size_t i = 0; i < nx; i++)
        x[i] = pseudo_random(&state);
    for (size_t i = 0; i < nw; i++)
        W[i] = pseudo_random(&state) * 0.25f;
    for (int i = 0; i < out; i++)
        b[i] = pseudo_random(&state);
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double s = bias ? b[o] : 0.0;
            for (int k = 0; k < in; k++)
                s += (double)x[(size_t)r * in + k] * W[(size_t)o * in + k];
            want[(size_t)r * out + o] = (float)s;
            y[(size_t)r * out + o] = NAN;
        }
    ted_matmul(y, x, W, bias ? b : NULL, rows, in, out);
    char what[64];
    snprintf(what, sizeof what, "linear %d x %d -> %d%s (naive reference)", rows, in, out,
             bias ? ", bias" : "");
    ASSERT_CLOSE(y, want, ny, TOL_OP, what);
    free(x), free(W), free(b), free(y), free(want);
}

Test(layers, linear_many_rows_and_columns_vs_naive)
{
    static const int shapes[][3] = {
        {1, 37, 300}, {2, 64, 257}, {7, 33, 130},  {8, 32, 64},   {16, 64, 72},
        {17, 40, 300}, {23, 16, 70}, {64, 48, 67}, {100, 19, 13}, {128, 24, 40},
        {129, 24, 40}, {200, 70, 90},
    };
    for (int threads = 1; threads <= 2; threads++) {
        ted_set_threads(threads);
        for (size_t i = 0; i < COUNT(shapes); i++) {
            check_linear_naive(shapes[i][0], shapes[i][1], shapes[i][2], true);
            check_linear_naive(shapes[i][0], shapes[i][1], shapes[i][2], false);
        }
    }
    ted_set_threads(1);
}

Test(layers, output_logits_is_the_final_linear)
{
    float y[3 * LINEAR_OUT];
    ted_output_weights out = {ted_matrix_float(linear_W), linear_b};
    ted_output_logits(y, linear_x3, &out, 3, LINEAR_IN, LINEAR_OUT);
    ASSERT_CLOSE(y, linear_y3_bias, COUNT(y), TOL_OP, "output logits");
}

/* ---- LayerNorm ----------------------------------------------------------- */

static const ted_norm_weights layer_norm_weights = {layer_norm_gamma, layer_norm_beta};

static void check_layer_norm_row(const float *y, const float *expected, int row, float eps)
{
    char what[64];
    snprintf(what, sizeof what, "layer norm eps %g, row %d", (double)eps, row);
    ASSERT_CLOSE(y + row * LAYER_NORM_D, expected + row * LAYER_NORM_D, LAYER_NORM_D, TOL_OP,
                 what);
}

static void check_layer_norm(float eps, const float *expected)
{
    float y[LAYER_NORM_ROWS * LAYER_NORM_D];
    ted_layer_norm(y, layer_norm_x, &layer_norm_weights, LAYER_NORM_ROWS, LAYER_NORM_D, eps);
    for (int r = 0; r < LAYER_NORM_ROWS; r++)
        check_layer_norm_row(y, expected, r, eps);
}

Test(layers, layer_norm_eps_1e5)
{
    check_layer_norm(1e-5f, layer_norm_y_eps1e5);
}

Test(layers, layer_norm_eps_1e6)
{
    check_layer_norm(1e-6f, layer_norm_y_eps1e6);
}

Test(layers, layer_norm_in_place)
{
    float x[LAYER_NORM_ROWS * LAYER_NORM_D];
    memcpy(x, layer_norm_x, sizeof x);
    ted_layer_norm(x, x, &layer_norm_weights, LAYER_NORM_ROWS, LAYER_NORM_D, 1e-5f);
    ASSERT_CLOSE(x, layer_norm_y_eps1e5, COUNT(x), TOL_OP, "layer norm in place");
}

Test(layers, add_norm_post_norm_normalizes_the_sum)
{
    /* x + 0 normalized is LayerNorm(x); pre-norm hands LayerNorm(x) to the
     * sub-layer and leaves the sum unnormalized. */
    enum { N = LAYER_NORM_ROWS * LAYER_NORM_D };
    float x[N], zero[N] = {0}, scratch[N];
    memcpy(x, layer_norm_x, sizeof x);
    const ted_norm post = {&ted_layer_norm_kind, 1e-5f, false};
    const ted_norm pre = {&ted_layer_norm_kind, 1e-5f, true};
    const float *in = ted_add_norm_input(x, scratch, &layer_norm_weights, &post,
                                         LAYER_NORM_ROWS, LAYER_NORM_D);
    cr_assert_eq(in, x, "post-norm: the sub-layer reads x itself");
    ted_add_norm_output(x, zero, &layer_norm_weights, &post, LAYER_NORM_ROWS, LAYER_NORM_D);
    ASSERT_CLOSE(x, layer_norm_y_eps1e5, N, TOL_OP, "post-norm add & norm");

    memcpy(x, layer_norm_x, sizeof x);
    in = ted_add_norm_input(x, scratch, &layer_norm_weights, &pre, LAYER_NORM_ROWS,
                            LAYER_NORM_D);
    cr_assert_eq(in, scratch, "pre-norm: the sub-layer reads the normalized scratch");
    ASSERT_CLOSE(scratch, layer_norm_y_eps1e5, N, TOL_OP, "pre-norm sub-layer input");
    ted_add_norm_output(x, zero, &layer_norm_weights, &pre, LAYER_NORM_ROWS, LAYER_NORM_D);
    ASSERT_CLOSE(x, layer_norm_x, N, 0.0, "pre-norm residual x + 0");
}

/* ---- RMSNorm ------------------------------------------------------------ */

static void check_rms_norm(float eps, const float *expected)
{
    float y[RMS_NORM_ROWS * LAYER_NORM_D];
    const ted_norm_weights gamma = {layer_norm_gamma, NULL};
    ted_rms_norm(y, rms_norm_x, &gamma, RMS_NORM_ROWS, LAYER_NORM_D, eps);
    for (int r = 0; r < RMS_NORM_ROWS; r++) {
        char what[64];
        snprintf(what, sizeof what, "rms norm eps %g, row %d", (double)eps, r);
        ASSERT_CLOSE(y + r * LAYER_NORM_D, expected + r * LAYER_NORM_D, LAYER_NORM_D, TOL_OP,
                     what);
    }
}

Test(layers, rms_norm_eps_1e5)
{
    check_rms_norm(1e-5f, rms_norm_y_eps1e5);
}

Test(layers, rms_norm_eps_1e6)
{
    check_rms_norm(1e-6f, rms_norm_y_eps1e6);
}

/* The kind a model chooses at load: pre-norm hands RMSNorm(x) to the
 * sub-layer, in place of LayerNorm(x), and reads no bias. */
Test(layers, add_norm_takes_the_rms_norm_kind)
{
    enum { N = RMS_NORM_ROWS * LAYER_NORM_D };
    float x[N], scratch[N];
    memcpy(x, rms_norm_x, sizeof x);
    const ted_norm_weights gamma = {layer_norm_gamma, NULL};
    const ted_norm pre = {&ted_rms_norm_kind, 1e-6f, true};
    const float *in = ted_add_norm_input(x, scratch, &gamma, &pre, RMS_NORM_ROWS, LAYER_NORM_D);
    cr_assert_eq(in, scratch, "pre-norm: the sub-layer reads the normalized scratch");
    ASSERT_CLOSE(scratch, rms_norm_y_eps1e6, N, TOL_OP, "RMSNorm kind, pre-norm input");

    const ted_norm post = {&ted_rms_norm_kind, 1e-5f, false};
    float zero[N] = {0};
    ted_add_norm_output(x, zero, &gamma, &post, RMS_NORM_ROWS, LAYER_NORM_D);
    ASSERT_CLOSE(x, rms_norm_y_eps1e5, N, TOL_OP, "RMSNorm kind, post-norm x + 0");
}

/* ---- activations ------------------------------------------------------- */

Test(layers, relu)
{
    float x[ACTIVATION_N];
    memcpy(x, activation_x, sizeof x);
    ted_relu(x, ACTIVATION_N);
    ASSERT_CLOSE(x, relu_y, ACTIVATION_N, TOL_OP, "relu");
}

Test(layers, gelu_exact_erf)
{
    float x[ACTIVATION_N];
    memcpy(x, activation_x, sizeof x);
    ted_gelu(x, ACTIVATION_N);
    ASSERT_CLOSE(x, gelu_y, ACTIVATION_N, TOL_OP, "gelu");
}

Test(layers, silu)
{
    float x[ACTIVATION_N];
    memcpy(x, activation_x, sizeof x);
    ted_silu(x, ACTIVATION_N);
    ASSERT_CLOSE(x, silu_y, ACTIVATION_N, TOL_OP, "silu");
}

/* ---- feed-forward ------------------------------------------------------ */

static void check_feed_forward(const ted_feed_forward_kind *kind, const float *expected,
                               const char *what)
{
    float out[FF_ROWS * FF_D], hidden[FF_ROWS * FF_DFF];
    ted_feed_forward_weights w = {.linear1_weight = ted_matrix_float(ff_W1), .linear1_bias = ff_b1,
                                  .linear2_weight = ted_matrix_float(ff_W2), .linear2_bias = ff_b2};
    ted_feed_forward(out, hidden, ff_x, &w, kind,
                     (ted_feed_forward_shape){FF_ROWS, FF_D, FF_DFF});
    ASSERT_CLOSE(out, expected, COUNT(out), TOL_COMPOSED, what);
}

Test(layers, feed_forward_relu)
{
    check_feed_forward(&ted_relu_feed_forward, ff_y_relu, "feed-forward relu");
}

Test(layers, feed_forward_gelu)
{
    check_feed_forward(&ted_gelu_feed_forward, ff_y_gelu, "feed-forward gelu");
}

Test(layers, feed_forward_silu)
{
    check_feed_forward(&ted_silu_feed_forward, ff_y_silu, "feed-forward silu");
}

/* ---- softmax ----------------------------------------------------------- */

Test(layers, softmax)
{
    for (size_t c = 0; c < COUNT(softmax_cases); c++) {
        const softmax_case *k = &softmax_cases[c];
        float x[64];
        cr_assert_leq(k->n, 64);
        memcpy(x, k->x, sizeof(float) * k->n);
        ted_softmax(x, k->n);
        char what[32];
        snprintf(what, sizeof what, "softmax case %zu", c);
        ASSERT_CLOSE(x, k->softmax, (size_t)k->n, TOL_OP, what);
    }
}

Test(layers, log_softmax)
{
    for (size_t c = 0; c < COUNT(softmax_cases); c++) {
        const softmax_case *k = &softmax_cases[c];
        float x[64];
        cr_assert_leq(k->n, 64);
        memcpy(x, k->x, sizeof(float) * k->n);
        ted_log_softmax(x, k->n);
        char what[32];
        snprintf(what, sizeof what, "log softmax case %zu", c);
        ASSERT_CLOSE(x, k->log_softmax, (size_t)k->n, TOL_OP, what);
    }
}

Test(layers, argmax_first_of_ties)
{
    for (size_t c = 0; c < COUNT(softmax_cases); c++) {
        const softmax_case *k = &softmax_cases[c];
        int got = ted_argmax(k->x, k->n);
        cr_assert_eq(got, k->argmax, "argmax case %zu: %d, torch says %d", c, got, k->argmax);
    }
}

/* ---- positional encoding ----------------------------------------------- */

Test(layers, positional_encoding_interleaved_matches_the_tutorial)
{
    static float table[PE_POSITIONS * PE_D];
    ted_interleaved_positions.fill(table, PE_POSITIONS, PE_D);
    for (int r = 0; r < PE_ROW_COUNT; r++) {
        char what[48];
        snprintf(what, sizeof what, "interleaved position %d", pe_rows[r]);
        ASSERT_CLOSE(table + (size_t)pe_rows[r] * PE_D, pe_interleaved + (size_t)r * PE_D, PE_D,
                     TOL_OP, what);
    }
}

/* Positions up to the tutorial's 5000 (a table built incrementally must
 * not drift), in both layouts, against float64 values computed by hand. */
static void check_exact_positions(const ted_position_kind *kind, const float *expected)
{
    float *table = malloc(sizeof(float) * PE_EXACT_POSITIONS * PE_EXACT_D);
    cr_assert_not_null(table);
    kind->fill(table, PE_EXACT_POSITIONS, PE_EXACT_D);
    for (int r = 0; r < PE_EXACT_ROW_COUNT; r++) {
        char what[64];
        snprintf(what, sizeof what, "%s position %d", kind->name, pe_exact_rows[r]);
        ASSERT_CLOSE(table + (size_t)pe_exact_rows[r] * PE_EXACT_D,
                     expected + (size_t)r * PE_EXACT_D, PE_EXACT_D, TOL_OP, what);
    }
    free(table);
}

Test(layers, positional_encoding_concatenated)
{
    check_exact_positions(&ted_concatenated_positions, pe_exact_concatenated);
}

Test(layers, positional_encoding_interleaved_to_5000_positions)
{
    check_exact_positions(&ted_interleaved_positions, pe_exact_interleaved);
}

Test(layers, add_positional_encoding_from_an_offset)
{
    enum { FIRST = 63, COUNT_ROWS = 3 };  /* rows 63..65 */
    float *table = malloc(sizeof(float) * PE_EXACT_POSITIONS * PE_EXACT_D);
    cr_assert_not_null(table);
    ted_interleaved_positions.fill(table, PE_EXACT_POSITIONS, PE_EXACT_D);
    float x[COUNT_ROWS * PE_EXACT_D], expected[COUNT_ROWS * PE_EXACT_D];
    for (size_t i = 0; i < COUNT(x); i++) {
        x[i] = (float)i * 0.25f;
        expected[i] = x[i] + table[FIRST * PE_EXACT_D + i];
    }
    const int ids[COUNT_ROWS] = {1, 1, 1};  /* padding, which this kind gives positions */
    ted_interleaved_positions.add(x, table, FIRST, COUNT_ROWS, PE_EXACT_D,
                                  (ted_padding_position){ids, 1});
    ASSERT_CLOSE(x, expected, COUNT(x), 0.0, "x + PE rows 63..65");
    free(table);
}

Test(layers, positional_encoding_fairseq)
{
    check_exact_positions(&ted_fairseq_positions, pe_exact_fairseq);
}

/* fairseq's padding tokens take the padding position, a zero row. */
Test(layers, add_positional_encoding_skips_padding_tokens)
{
    enum { COUNT_ROWS = 3 };
    float *table = malloc(sizeof(float) * PE_EXACT_POSITIONS * PE_EXACT_D);
    cr_assert_not_null(table);
    ted_fairseq_positions.fill(table, PE_EXACT_POSITIONS, PE_EXACT_D);
    const int ids[COUNT_ROWS] = {7, 1, 9};
    float x[COUNT_ROWS * PE_EXACT_D], expected[COUNT_ROWS * PE_EXACT_D];
    for (size_t i = 0; i < COUNT(x); i++) {
        x[i] = (float)i * 0.5f;
        bool padding = i / PE_EXACT_D == 1;
        expected[i] = x[i] + (padding ? 0.0f : table[2 * PE_EXACT_D + i]);
    }
    ted_fairseq_positions.add(x, table, 2, COUNT_ROWS, PE_EXACT_D,
                              (ted_padding_position){ids, 1});
    ASSERT_CLOSE(x, expected, COUNT(x), 0.0, "x + PE rows 2, 4, none for the padding token");
    free(table);
}

/* ---- embedding --------------------------------------------------------- */

Test(layers, embed_scaled_by_sqrt_d)
{
    float x[EMBED_COUNT * EMBED_D];
    ted_embed(x, ted_matrix_float(embed_table), embed_ids, EMBED_COUNT, EMBED_D,
              sqrtf((float)EMBED_D));
    ASSERT_CLOSE(x, embed_y, COUNT(x), TOL_OP, "embed * sqrt(d)");
}

Test(layers, embed_unscaled)
{
    float x[EMBED_COUNT * EMBED_D];
    ted_embed(x, ted_matrix_float(embed_table), embed_ids, EMBED_COUNT, EMBED_D, 1.0f);
    for (int t = 0; t < EMBED_COUNT; t++)
        ASSERT_CLOSE(x + t * EMBED_D, embed_table + embed_ids[t] * EMBED_D, EMBED_D, 0.0,
                     "embed, scale 1");
}

/* Longer than any vector, with the maximum tied, in the vector part and in
 * the tail, and with NaN and -inf around: the first index of the maximum,
 * as a scalar scan with '>' finds it. */
Test(layers, argmax_first_of_ties_skipping_nan)
{
    enum { N = 1003 };
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)((i * 37) % 101) - 50.0f;
    x[17] = NAN;
    x[400] = 90.0f;
    x[650] = 90.0f;
    x[1001] = 90.0f;
    cr_assert_eq(ted_argmax(x, N), 400);
    x[400] = NAN;
    cr_assert_eq(ted_argmax(x, N), 650);
    x[1002] = 91.0f;
    cr_assert_eq(ted_argmax(x, N), 1002, "the maximum in the scalar tail");
    x[0] = NAN;
    cr_assert_eq(ted_argmax(x, 1), 0, "nothing larger than -inf: index 0");
    for (int i = 0; i < 40; i++)
        x[i] = -INFINITY;
    cr_assert_eq(ted_argmax(x, 40), 0);
    x[39] = -1e30f;
    cr_assert_eq(ted_argmax(x, 40), 39);
}


/* The buckets of key - query distances against transformers 4.40's
 * T5Attention._relative_position_bucket on the same distances. */
Test(layers, relative_buckets_are_t5s)
{
    static const int distances[] = {-500, -200, -128, -127, -100, -64, -63, -32, -31, -16,
                                    -15, -9, -8, -7, -1, 0, 1, 7, 8, 9, 15, 16, 31, 32, 63,
                                    64, 100, 127, 128, 500};
    static const int encoder[] = {15, 15, 15, 15, 15, 14, 13, 12, 11, 10, 9, 8, 8, 7, 1,
                                  0, 17, 23, 24, 24, 25, 26, 27, 28, 29, 30, 31, 31, 31, 31};
    static const int decoder[] = {31, 31, 31, 31, 30, 26, 26, 21, 21, 16, 15, 9, 8, 7, 1,
                                  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    static const int small[] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1,
                                0, 5, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
    ted_bucket_rule rules[] = {{32, 128, true}, {32, 128, false}, {8, 20, true}};
    const int *want[] = {encoder, decoder, small};
    for (int r = 0; r < 3; r++) {
        int reach = ted_bucket_reach(rules[r]);
        int *table = malloc(sizeof(int) * (2 * reach + 1));
        cr_assert_not_null(table);
        ted_fill_buckets(table, reach, rules[r]);
        for (size_t i = 0; i < sizeof distances / sizeof *distances; i++) {
            int d = distances[i], clamped = d < -reach ? -reach : d > reach ? reach : d;
            cr_assert_eq(ted_relative_bucket(d, rules[r]), want[r][i], "rule %d, distance %d",
                         r, d);
            cr_assert_eq(table[clamped + reach], want[r][i], "rule %d, table at %d", r, d);
        }
        free(table);
    }
}
