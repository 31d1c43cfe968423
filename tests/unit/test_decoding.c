/* Decoding beyond greedy: ted_session_select() growing past the encoded
 * batch, the PCG32 generator, single draws against their distribution
 * (temperature, top-k, top-p), sampled decodes (top-k 1 is greedy, a seed
 * repeats, the batch does not matter, first-token frequencies follow the
 * softmax), top-k and banned tokens, and beam search (beam 1 without
 * length penalty is greedy, n-best lists are ordered, bad parameters are
 * refused, and on a model whose logits never change, the scores and
 * stopping of both length normalizations worked out by hand).
 *
 * Frequency checks are Pearson chi-square tests of N seeded draws against
 * the exact probabilities, at significance 0.001 (critical values below).
 * The seeds are fixed, so the results do not change from run to run; each
 * check also shows that the statistic is far above the critical value for
 * a distribution that is slightly wrong, so the test can fail. Against
 * PyTorch: tests/parity/test_beam.py. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "float_check.h"
#include "io/config.h"
#include "layer_fixtures.h"
#include "model/choose.h"
#include "model/decoding.h"
#include "model/session_hooks.h"
#include "model_dir.h"
#include "ted/ted.h"

#define TOY_DIR "models/toy-en-fr"
#define TOY_TEST "models/toy-en-fr/test.en"

static ted_session *new_session(const ted_model *model)
{
    ted_session *session = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_session_new(model, &session, &err), TED_OK, "%s", err.message);
    return session;
}

/* ---- chi-square ------------------------------------------------------------ */

/* chi-square quantiles at 0.999, for 1..13 degrees of freedom */
static const double chi2_critical[14] = {0,      10.828, 13.816, 16.266, 18.467,
                                         20.515, 22.458, 24.322, 26.124, 27.877,
                                         29.588, 31.264, 32.909, 34.528};

/* Pearson's statistic of `counts` (n) against probabilities `p` (n) over
 * `total` draws; a category of probability 0 must be empty (else INFINITY).
 * `*df` receives the categories with p > 0, minus one. */
static double chi_square(const long *counts, const double *p, int n, long total, int *df)
{
    double x2 = 0.0;
    *df = -1;
    for (int i = 0; i < n; i++) {
        if (p[i] == 0.0) {
            if (counts[i] > 0)
                return INFINITY;
            continue;
        }
        double expected = p[i] * (double)total;
        x2 += (counts[i] - expected) * (counts[i] - expected) / expected;
        (*df)++;
    }
    return x2;
}

/* softmax(logits / t) in double */
static void softmax_t(const float *logits, int n, double t, double *p)
{
    double max = -INFINITY, sum = 0.0;
    for (int i = 0; i < n; i++)
        max = logits[i] > max ? logits[i] : max;
    for (int i = 0; i < n; i++)
        sum += p[i] = exp((logits[i] - max) / t);
    for (int i = 0; i < n; i++)
        p[i] /= sum;
}

/* ---- select grows past the encoded batch --------------------------------- */

static const int *const tiny_sources[2] = {tiny_src0, tiny_src1};
static const int tiny_source_lengths[2] = {TINY_SRC0_LEN, TINY_SRC1_LEN};
static const int *const tiny_targets[2] = {tiny_tgt0, tiny_tgt1};
static const float *const tiny_logits[2] = {tiny_logits0, tiny_logits1};

static const float *teacher_step(ted_session *s, const int *sentence_of, int batch)
{
    int tokens[16];
    int t = ted_session_position(s);
    for (int b = 0; b < batch; b++)
        tokens[b] = tiny_targets[sentence_of[b]][t];
    const float *logits = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_session_step(s, tokens, &logits, &err), TED_OK, "step %d: %s", t,
                 err.message);
    return logits;
}

static void check_rows(const float *logits, const int *sentence_of, int batch, int t,
                       const char *what)
{
    for (int b = 0; b < batch; b++) {
        const float *want = tiny_logits[sentence_of[b]] + (size_t)t * TINY_TGT_VOCAB;
        float_diff d = max_abs_diff(logits + (size_t)b * TINY_TGT_VOCAB, want, TINY_TGT_VOCAB);
        cr_assert(d.max <= TOL_COMPOSED, "%s: row %d (sentence %d), step %d: max abs diff %.3g",
                  what, b, sentence_of[b], t, d.max);
    }
}

static void select_rows(ted_session *s, const int *rows, int count)
{
    ted_error err = {0};
    cr_assert_eq(ted_session_select(s, rows, count, &err), TED_OK, "select %d rows: %s", count,
                 err.message);
    cr_assert_eq(ted_session_batch(s), count);
}

Test(decoding, select_grows_past_the_encoded_batch)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    ted_error err = {0};
    for (int keep = 0; keep < 2; keep++) {
        ted_session_keep_attention(s, keep == 1);
        static const int both[2] = {0, 1};
        cr_assert_eq(ted_session_encode(s, tiny_sources, tiny_source_lengths, 2, TINY_STEPS,
                                        &err),
                     TED_OK, "%s", err.message);
        for (int t = 0; t < 2; t++)
            check_rows(teacher_step(s, both, 2), both, 2, t, "before growing");

        ted_attention_view before;
        if (keep)
            cr_assert_eq(ted_session_attention(s, TED_CROSS_ATTENTION, 1, 1, &before, &err),
                         TED_OK, "%s", err.message);
        float saved[64];
        if (keep) {
            cr_assert_leq((size_t)before.heads * before.stride, sizeof saved / sizeof *saved);
            memcpy(saved, before.weights, sizeof(float) * before.heads * before.stride);
        }
        /* 2 rows -> 6 (more than any batch encoded), then 3, then 9 */
        static const int grown[6] = {1, 0, 1, 0, 0, 1};
        select_rows(s, grown, 6);
        cr_assert_eq(ted_session_position(s), 2);
        for (int b = 0; b < 6; b++)
            cr_assert_eq(ted_session_source_length(s, b), tiny_source_lengths[grown[b]]);
        if (keep) {
            ted_attention_view after;
            cr_assert_eq(ted_session_attention(s, TED_CROSS_ATTENTION, 1, 0, &after, &err),
                         TED_OK, "%s", err.message);
            ASSERT_CLOSE(after.weights, saved, (size_t)after.heads * after.stride, 0.0,
                         "cross attention of a repeated row");
        }
        check_rows(teacher_step(s, grown, 6), grown, 6, 2, "grown to 6");
        static const int three[3] = {5, 1, 2}, sentence_of_three[3] = {1, 0, 1};
        select_rows(s, three, 3);
        check_rows(teacher_step(s, sentence_of_three, 3), sentence_of_three, 3, 3, "down to 3");
        static const int nine[9] = {0, 1, 2, 2, 1, 0, 0, 1, 2};
        int sentence_of_nine[9];
        for (int b = 0; b < 9; b++)
            sentence_of_nine[b] = sentence_of_three[nine[b]];
        select_rows(s, nine, 9);
        check_rows(teacher_step(s, sentence_of_nine, 9), sentence_of_nine, 9, 4, "grown to 9");

        /* a later, smaller batch decodes in the grown buffers */
        static const int second[1] = {1};
        cr_assert_eq(ted_session_encode(s, &tiny_sources[1], &tiny_source_lengths[1], 1,
                                        TINY_STEPS, &err),
                     TED_OK, "%s", err.message);
        for (int t = 0; t < TINY_STEPS; t++)
            check_rows(teacher_step(s, second, 1), second, 1, t, "next encode");
    }
    ted_session_free(s);
    ted_model_free(model);
}

/* ---- the generator ----------------------------------------------------------- */

Test(decoding, pcg32_gives_the_reference_sequence)
{
    /* pcg32-global-demo / pcg32_srandom_r(&rng, 42, 54) of the PCG C library */
    static const uint32_t want[6] = {0xa15c02b7, 0x7b47f409, 0xba1d3330,
                                     0x83d2f293, 0xbfa4784b, 0xcbed606e};
    ted_rng rng = ted_rng_seed(42, 54);
    for (int i = 0; i < 6; i++) {
        uint32_t got = ted_rng_next(&rng);
        cr_assert_eq(got, want[i], "output %d: 0x%08x, PCG says 0x%08x", i, got, want[i]);
    }
    ted_rng a = ted_rng_seed(1, 0), b = ted_rng_seed(1, 1), c = ted_rng_seed(2, 0);
    uint32_t xa = ted_rng_next(&a), xb = ted_rng_next(&b), xc = ted_rng_next(&c);
    cr_assert(xa != xb && xa != xc, "streams and seeds give different sequences");
    double low = 1.0, high = 0.0, sum = 0.0;
    for (int i = 0; i < 100000; i++) {
        double u = ted_rng_uniform(&a);
        cr_assert(u >= 0.0 && u < 1.0, "uniform %.17g outside [0, 1)", u);
        low = u < low ? u : low;
        high = u > high ? u : high;
        sum += u;
    }
    cr_assert(low < 1e-3 && high > 1.0 - 1e-3 && fabs(sum / 100000 - 0.5) < 0.005,
              "uniform: min %g, max %g, mean %g", low, high, sum / 100000);
}

/* ---- one draw -------------------------------------------------------------- */

enum { DRAWS = 40000 };

/* `DRAWS` draws with `params` from `logits` (n <= 16), counted per token. */
static void draw_counts(const float *logits, int n, ted_sampling_params params, uint64_t seed,
                        long *counts)
{
    int ids[16];
    double weights[16];
    ted_draw_scratch scratch = {ids, weights};
    ted_rng rng = ted_rng_seed(seed, 0);
    memset(counts, 0, sizeof(long) * n);
    for (int i = 0; i < DRAWS; i++) {
        int id = ted_sample_token(logits, n, &params, &rng, &scratch);
        cr_assert(id >= 0 && id < n);
        counts[id]++;
    }
}

static void expect_fit(const long *counts, const double *p, int n, const char *what)
{
    int df;
    double x2 = chi_square(counts, p, n, DRAWS, &df);
    cr_assert(df >= 1 && df <= 13);
    cr_assert(x2 <= chi2_critical[df], "%s: chi-square %.2f > %.2f (%d degrees of freedom)",
              what, x2, chi2_critical[df], df);
    cr_log_info("%s: chi-square %.2f, critical %.2f (df %d)", what, x2, chi2_critical[df], df);
}

static void expect_misfit(const long *counts, const double *p, int n, const char *what)
{
    int df;
    double x2 = chi_square(counts, p, n, DRAWS, &df);
    cr_assert(df >= 1 && df <= 13);
    cr_assert(x2 > 3 * chi2_critical[df], "%s: chi-square %.2f does not tell them apart", what,
              x2);
}

/* probabilities 0.4 0.25 0.15 0.1 0.06 0.04, shuffled by id */
static const int shuffled[6] = {3, 0, 5, 1, 4, 2};
static const double probs[6] = {0.4, 0.25, 0.15, 0.1, 0.06, 0.04};

static void make_logits(float *logits, double *p)
{
    for (int r = 0; r < 6; r++) {
        logits[shuffled[r]] = (float)log(probs[r]) + 3.0f;  /* any shift */
        p[shuffled[r]] = probs[r];
    }
}

Test(decoding, draws_follow_the_softmax)
{
    float logits[6];
    double p[6];
    make_logits(logits, p);
    softmax_t(logits, 6, 1.0, p);  /* the float logits' own probabilities */
    long counts[6];
    draw_counts(logits, 6, ted_sampling_default_params(), 11, counts);
    expect_fit(counts, p, 6, "temperature 1");
    double off[6];
    memcpy(off, p, sizeof off);
    off[shuffled[0]] -= 0.02;
    off[shuffled[5]] += 0.02;
    expect_misfit(counts, off, 6, "probabilities 0.02 off");
}

Test(decoding, temperature_scales_the_logits)
{
    float logits[6];
    double p[6], p1[6];
    make_logits(logits, p1);
    softmax_t(logits, 6, 1.0, p1);
    for (int k = 0; k < 2; k++) {
        double t = k == 0 ? 2.0 : 0.5;
        ted_sampling_params params = ted_sampling_default_params();
        params.temperature = (float)t;
        long counts[6];
        draw_counts(logits, 6, params, 12 + k, counts);
        softmax_t(logits, 6, t, p);
        expect_fit(counts, p, 6, k == 0 ? "temperature 2" : "temperature 0.5");
        expect_misfit(counts, p1, 6, "tempered draws against temperature 1");
    }
    /* a tiny temperature is the argmax */
    ted_sampling_params cold = ted_sampling_default_params();
    cold.temperature = 1e-4f;
    long counts[6];
    draw_counts(logits, 6, cold, 14, counts);
    cr_assert_eq(counts[shuffled[0]], DRAWS);
}

Test(decoding, top_k_keeps_the_k_most_likely)
{
    float logits[6];
    double p[6];
    make_logits(logits, p);
    for (int k = 1; k <= 6; k++) {
        ted_sampling_params params = ted_sampling_default_params();
        params.top_k = k;
        params.temperature = 1.5f;
        long counts[6];
        draw_counts(logits, 6, params, 20 + k, counts);
        softmax_t(logits, 6, 1.5, p);
        double kept = 0.0;
        for (int r = 0; r < 6; r++)
            kept += r < k ? p[shuffled[r]] : 0.0;
        for (int r = 0; r < 6; r++)
            p[shuffled[r]] = r < k ? p[shuffled[r]] / kept : 0.0;
        if (k == 1) {
            cr_assert_eq(counts[shuffled[0]], DRAWS, "top-k 1 always takes the argmax");
            continue;
        }
        char what[32];
        snprintf(what, sizeof what, "top-k %d", k);
        expect_fit(counts, p, 6, what);
    }
    /* equal logits: top-k 1 takes the lower id, as ted_argmax does */
    const float flat[4] = {0.5f, 2.0f, 2.0f, 1.0f};
    ted_sampling_params one = ted_sampling_default_params();
    one.top_k = 1;
    long counts[4];
    draw_counts(flat, 4, one, 30, counts);
    cr_assert_eq(counts[1], DRAWS);
}

Test(decoding, top_p_keeps_the_nucleus)
{
    float logits[6];
    double p[6];
    make_logits(logits, p);
    /* cumulative 0.4 0.65 0.8 0.9 0.96 1: p 0.7 keeps 3 tokens, 0.3 one, 0.95 five */
    static const float top_ps[3] = {0.7f, 0.3f, 0.95f};
    static const int nucleus[3] = {3, 1, 5};
    for (int c = 0; c < 3; c++) {
        ted_sampling_params params = ted_sampling_default_params();
        params.top_p = top_ps[c];
        long counts[6];
        draw_counts(logits, 6, params, 40 + c, counts);
        softmax_t(logits, 6, 1.0, p);
        double kept = 0.0;
        for (int r = 0; r < nucleus[c]; r++)
            kept += p[shuffled[r]];
        for (int r = 0; r < 6; r++)
            p[shuffled[r]] = r < nucleus[c] ? p[shuffled[r]] / kept : 0.0;
        if (nucleus[c] == 1) {
            cr_assert_eq(counts[shuffled[0]], DRAWS);
            continue;
        }
        char what[32];
        snprintf(what, sizeof what, "top-p %.2f", (double)top_ps[c]);
        expect_fit(counts, p, 6, what);
    }
    /* top-k first, then top-p over what is left: k 4 renormalizes to
     * 0.444 0.278 0.167 0.111; p 0.75 then keeps 3 */
    ted_sampling_params both = ted_sampling_default_params();
    both.top_k = 4;
    both.top_p = 0.75f;
    long counts[6];
    draw_counts(logits, 6, both, 50, counts);
    softmax_t(logits, 6, 1.0, p);
    double kept = p[shuffled[0]] + p[shuffled[1]] + p[shuffled[2]];
    for (int r = 0; r < 6; r++)
        p[shuffled[r]] = r < 3 ? p[shuffled[r]] / kept : 0.0;
    expect_fit(counts, p, 6, "top-k 4 then top-p 0.75");
}

/* ---- sampled decodes ------------------------------------------------------ */

/* The first `n` lines of the toy test set. */
static char **read_lines(const char *path, int n)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char **lines = calloc(n, sizeof *lines);
    cr_assert_not_null(lines);
    char buffer[1024];
    for (int i = 0; i < n; i++) {
        cr_assert_not_null(fgets(buffer, sizeof buffer, f), "%s has fewer than %d lines", path,
                           n);
        buffer[strcspn(buffer, "\n")] = '\0';
        lines[i] = strdup(buffer);
        cr_assert_not_null(lines[i]);
    }
    fclose(f);
    return lines;
}

static void free_lines(char **lines, int n)
{
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

static ted_translation *translate(const ted_model *model, char **lines, int n,
                                  const ted_translate_options *o)
{
    ted_translation *out = calloc((size_t)n * o->decode.n_best, sizeof *out);
    cr_assert_not_null(out);
    ted_error err = {0};
    cr_assert_eq(ted_translate_n_best(model, (const char *const *)lines, n, o, out, NULL, &err),
                 TED_OK, "translate: %s", err.message);
    return out;
}

/* What translate() returned: `count` translations, and the array. */
static void free_translations(ted_translation *t, int count)
{
    ted_translations_free(t, count);
    free(t);
}

static bool same_hypothesis(const ted_hypothesis *a, const ted_hypothesis *b)
{
    return a->length == b->length && !memcmp(a->ids, b->ids, sizeof(int) * a->length) &&
           !memcmp(a->log_probs, b->log_probs, sizeof(float) * a->length);
}

/* The same ids, and log-probs within TOL_COMPOSED: batches of other sizes
 * round the logits differently (by 1e-5 at most here). */
static int count_different(const ted_translation *a, const ted_translation *b, int n)
{
    int different = 0;
    for (int i = 0; i < n; i++) {
        const ted_hypothesis *x = &a[i].hypothesis, *y = &b[i].hypothesis;
        bool same = x->length == y->length && !memcmp(x->ids, y->ids, sizeof(int) * x->length);
        for (int k = 0; same && k < x->length; k++)
            same = fabsf(x->log_probs[k] - y->log_probs[k]) <= TOL_COMPOSED;
        different += !same;
    }
    return different;
}

enum { TOY_SENTENCES = 100 };

Test(decoding, top_k_1_sampling_is_greedy, .timeout = 120)
{
    ted_model *model = load(TOY_DIR);
    char **lines = read_lines(TOY_TEST, TOY_SENTENCES);
    ted_translate_options greedy = ted_translate_default_options();
    ted_translation *want = translate(model, lines, TOY_SENTENCES, &greedy);
    ted_translate_options o = ted_translate_default_options();
    o.decode.strategy = TED_DECODE_SAMPLE;
    o.decode.sampling.top_k = 1;
    for (int t = 0; t < 2; t++) {
        o.decode.sampling.temperature = t == 0 ? 1.0f : 5.0f;
        o.decode.sampling.seed = 99 + t;
        ted_translation *got = translate(model, lines, TOY_SENTENCES, &o);
        for (int i = 0; i < TOY_SENTENCES; i++) {
            cr_assert(same_hypothesis(&got[i].hypothesis, &want[i].hypothesis),
                      "sentence %d: top-k 1 gave \"%s\", greedy \"%s\"", i + 1, got[i].text,
                      want[i].text);
            cr_assert_float_eq(got[i].hypothesis.log_prob, want[i].hypothesis.log_prob, 0.0);
        }
        free_translations(got, TOY_SENTENCES);
    }
    /* greedy's log-probs add up, and are log-softmax values (<= 0) */
    for (int i = 0; i < TOY_SENTENCES; i++) {
        const ted_hypothesis *h = &want[i].hypothesis;
        double sum = 0.0;
        for (int k = 0; k < h->length; k++) {
            cr_assert_leq(h->log_probs[k], 0.0f);
            sum += h->log_probs[k];
        }
        cr_assert_float_eq(h->log_prob, sum, 1e-9);
        cr_assert_float_eq(h->score, h->log_prob, 0.0);
    }
    free_translations(want, TOY_SENTENCES);
    free_lines(lines, TOY_SENTENCES);
    ted_model_free(model);
}

/* tokens_only: greedy's tokens, no log-probabilities; sampling's n-best
 * keeps them, to rank its samples. */
Test(decoding, tokens_only_gives_the_same_tokens_without_scores, .timeout = 120)
{
    ted_model *model = load(TOY_DIR);
    char **lines = read_lines(TOY_TEST, TOY_SENTENCES);
    ted_translate_options scored = ted_translate_default_options();
    ted_translation *want = translate(model, lines, TOY_SENTENCES, &scored);
    ted_translate_options o = ted_translate_default_options();
    o.decode.tokens_only = true;
    ted_translation *got = translate(model, lines, TOY_SENTENCES, &o);
    int nonzero = 0;
    for (int i = 0; i < TOY_SENTENCES; i++) {
        const ted_hypothesis *g = &got[i].hypothesis, *w = &want[i].hypothesis;
        cr_assert(g->length == w->length && !memcmp(g->ids, w->ids, sizeof(int) * g->length),
                  "sentence %d: tokens only gave \"%s\", greedy \"%s\"", i + 1, got[i].text,
                  want[i].text);
        cr_assert_str_eq(got[i].text, want[i].text);
        for (int k = 0; k < g->length; k++)
            cr_assert_float_eq(g->log_probs[k], 0.0f, 0.0);
        cr_assert_float_eq(g->score, 0.0, 0.0);
        nonzero += w->log_prob < 0.0;
    }
    cr_assert_gt(nonzero, 0, "greedy with scores reported none");
    free_translations(got, TOY_SENTENCES);

    o.decode.strategy = TED_DECODE_SAMPLE;
    o.decode.n_best = 3;
    o.decode.sampling.seed = 7;
    o.decode.sampling.temperature = 3.0f;
    ted_translation *samples = translate(model, lines, TOY_SENTENCES, &o);
    o.decode.tokens_only = false;
    ted_translation *scored_samples = translate(model, lines, TOY_SENTENCES, &o);
    for (int k = 0; k < 3 * TOY_SENTENCES; k++)
        cr_assert(same_hypothesis(&samples[k].hypothesis, &scored_samples[k].hypothesis),
                  "sample %d: \"%s\" against \"%s\" with scores", k, samples[k].text,
                  scored_samples[k].text);
    free_translations(samples, 3 * TOY_SENTENCES);
    free_translations(scored_samples, 3 * TOY_SENTENCES);
    free_translations(want, TOY_SENTENCES);
    free_lines(lines, TOY_SENTENCES);
    ted_model_free(model);
}

Test(decoding, a_seed_repeats_whatever_the_batch, .timeout = 120)
{
    ted_model *model = load(TOY_DIR);
    char **lines = read_lines(TOY_TEST, TOY_SENTENCES);
    ted_translate_options o = ted_translate_default_options();
    o.decode.strategy = TED_DECODE_SAMPLE;
    o.decode.sampling.temperature = 2.0f;  /* so that samples differ from greedy */
    o.decode.sampling.seed = 1234;
    ted_translation *a = translate(model, lines, TOY_SENTENCES, &o);
    ted_translation *b = translate(model, lines, TOY_SENTENCES, &o);
    cr_assert_eq(count_different(a, b, TOY_SENTENCES), 0, "the same seed gave other samples");

    o.batch_size = 1;
    ted_translation *one = translate(model, lines, TOY_SENTENCES, &o);
    cr_assert_eq(count_different(a, one, TOY_SENTENCES), 0, "batch size 1 gave other samples");

    /* sentences 40..99 alone, told where they are in the whole input */
    o.batch_size = 7;
    o.first_index = 40;
    ted_translation *tail = translate(model, lines + 40, TOY_SENTENCES - 40, &o);
    cr_assert_eq(count_different(a + 40, tail, TOY_SENTENCES - 40), 0,
                 "a slice of the input gave other samples");

    o.first_index = 0;
    o.batch_size = 32;
    o.decode.sampling.seed = 1235;
    ted_translation *other = translate(model, lines, TOY_SENTENCES, &o);
    int different = count_different(a, other, TOY_SENTENCES);
    cr_assert_gt(different, TOY_SENTENCES / 4, "another seed changed only %d sentences",
                 different);
    cr_log_info("seeds 1234 and 1235 differ on %d of %d sentences", different, TOY_SENTENCES);

    ted_translation *all[5] = {a, b, one, tail, other};
    int counts[5] = {TOY_SENTENCES, TOY_SENTENCES, TOY_SENTENCES, TOY_SENTENCES - 40,
                     TOY_SENTENCES};
    for (int k = 0; k < 5; k++) {
        free_translations(all[k], counts[k]);
    }
    free_lines(lines, TOY_SENTENCES);
    ted_model_free(model);
}

/* The first token of many samples of one sentence (tiny model, flat
 * distribution) against softmax(first-step logits / temperature). */
Test(decoding, sampled_first_tokens_follow_the_softmax, .timeout = 120)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    ted_error err = {0};
    const int n = TINY_TGT_VOCAB;
    for (int k = 0; k < 3; k++) {
        ted_sampling_params params = ted_sampling_default_params();
        params.temperature = k == 1 ? 0.7f : 1.0f;
        params.top_k = k == 2 ? 5 : 0;
        params.seed = 500 + k;
        int max_length = 1;
        ted_hypothesis *h = calloc(DRAWS, sizeof *h);
        cr_assert_not_null(h);
        cr_assert_eq(decode_sampling(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &params, DRAWS, h, &err),
                     TED_OK, "%s", err.message);
        long counts[TINY_TGT_VOCAB] = {0};
        for (int i = 0; i < DRAWS; i++) {
            cr_assert_eq(h[i].length, 1);
            counts[h[i].ids[0]]++;
            if (i > 0)
                cr_assert_geq(h[i - 1].log_prob, h[i].log_prob, "samples are sorted");
        }
        ted_hypotheses_free(h, DRAWS);
        free(h);

        double p[TINY_TGT_VOCAB];
        softmax_t(tiny_logits0, n, params.temperature, p);  /* step 0 fed BOS */
        if (params.top_k) {
            int order[TINY_TGT_VOCAB];
            for (int i = 0; i < n; i++)
                order[i] = i;
            for (int i = 0; i < n; i++)  /* by probability, descending */
                for (int j = i + 1; j < n; j++)
                    if (p[order[j]] > p[order[i]]) {
                        int t = order[i];
                        order[i] = order[j];
                        order[j] = t;
                    }
            double kept = 0.0;
            for (int i = 0; i < params.top_k; i++)
                kept += p[order[i]];
            for (int i = 0; i < n; i++)
                p[order[i]] = i < params.top_k ? p[order[i]] / kept : 0.0;
        }
        static const char *const names[3] = {"decode, temperature 1", "decode, temperature 0.7",
                                              "decode, top-k 5"};
        expect_fit(counts, p, n, names[k]);
    }
    ted_session_free(s);
    ted_model_free(model);
}

Test(decoding, bad_sampling_parameters_are_refused)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    int max_length = 4;
    ted_hypothesis h[2];
    ted_error err = {0};
    ted_sampling_params p = ted_sampling_default_params();
    p.temperature = 0.0f;
    cr_assert_eq(decode_sampling(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &p, 1, h, &err),
                 TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "temperature"), "%s", err.message);
    p = ted_sampling_default_params();
    p.top_p = 1.5f;
    cr_assert_eq(decode_sampling(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &p, 1, h, &err),
                 TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "top_p"), "%s", err.message);
    p = ted_sampling_default_params();
    p.top_k = -1;
    cr_assert_eq(decode_sampling(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &p, 1, h, &err),
                 TED_ERR_ARGUMENT);
    p = ted_sampling_default_params();
    cr_assert_eq(decode_sampling(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &p, 0, h, &err),
                 TED_ERR_ARGUMENT);
    max_length = 0;
    cr_assert_eq(decode_sampling(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &p, 1, h, &err),
                 TED_ERR_ARGUMENT);
    ted_session_free(s);
    ted_model_free(model);
}

/* ---- beam search --------------------------------------------------------- */

Test(decoding, beam_1_without_length_penalty_is_greedy, .timeout = 120)
{
    ted_model *model = load(TOY_DIR);
    char **lines = read_lines(TOY_TEST, TOY_SENTENCES);
    ted_translate_options o = ted_translate_default_options();
    ted_translation *want = translate(model, lines, TOY_SENTENCES, &o);
    o.decode.strategy = TED_DECODE_BEAM;
    o.decode.beam.beam_size = 1;
    o.decode.beam.length_penalty = 0.0f;
    ted_translation *got = translate(model, lines, TOY_SENTENCES, &o);
    for (int i = 0; i < TOY_SENTENCES; i++) {
        cr_assert(same_hypothesis(&got[i].hypothesis, &want[i].hypothesis),
                  "sentence %d: beam 1 gave \"%s\", greedy \"%s\"", i + 1, got[i].text,
                  want[i].text);
        cr_assert_float_eq(got[i].hypothesis.score, want[i].hypothesis.log_prob, 1e-9);
    }
    free_translations(got, TOY_SENTENCES);
    free_translations(want, TOY_SENTENCES);
    free_lines(lines, TOY_SENTENCES);

    /* the tiny model's greedy decodes (which run to the length limit) */
    ted_model *tiny = load(TINY_DIR);
    ted_session *s = new_session(tiny);
    int max_lengths[2] = {TINY_GREEDY0_LEN, TINY_GREEDY1_LEN};
    static const int *const greedy[2] = {tiny_greedy0, tiny_greedy1};
    ted_beam_params params = {.beam_size = 1, .length_penalty = 0.0f};
    ted_hypothesis h[2];
    ted_error err = {0};
    cr_assert_eq(decode_beam(s, BATCH(tiny_sources, tiny_source_lengths, max_lengths, 2), &params, 1, NULL, h, &err),
                 TED_OK, "%s", err.message);
    for (int b = 0; b < 2; b++) {
        cr_assert_eq(h[b].length, max_lengths[b]);
        cr_assert_arr_eq(h[b].ids, greedy[b], sizeof(int) * max_lengths[b]);
    }
    ted_hypotheses_free(h, 2);
    ted_session_free(s);
    ted_model_free(tiny);
    ted_model_free(model);
}

Test(decoding, n_best_lists_are_ordered_and_distinct, .timeout = 120)
{
    ted_model *model = load(TOY_DIR);
    enum { N = 40, BEST = 4 };
    char **lines = read_lines(TOY_TEST, N);
    ted_translate_options o = ted_translate_default_options();
    o.decode.strategy = TED_DECODE_BEAM;
    o.decode.beam.beam_size = 5;
    o.decode.n_best = BEST;
    ted_translation *t = translate(model, lines, N, &o);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < BEST; k++) {
            const ted_hypothesis *h = &t[i * BEST + k].hypothesis;
            cr_assert_gt(h->length, 0);
            double sum = 0.0;
            for (int j = 0; j < h->length; j++)
                sum += h->log_probs[j];
            cr_assert_float_eq(h->log_prob, sum, 1e-6);
            double penalty = pow((5.0 + h->length) / 6.0, o.decode.beam.length_penalty);
            cr_assert_float_eq(h->score, h->log_prob / penalty, 1e-9);
            if (k > 0) {
                const ted_hypothesis *prev = &t[i * BEST + k - 1].hypothesis;
                cr_assert_geq(prev->score, h->score, "sentence %d: hypothesis %d ranks above %d",
                              i + 1, k + 1, k);
                cr_assert(!same_hypothesis(prev, h), "sentence %d: hypothesis %d twice", i + 1,
                          k);
            }
        }
    }
    free_translations(t, N * BEST);
    free_lines(lines, N);
    ted_model_free(model);
}

Test(decoding, bad_beam_parameters_are_refused)
{
    ted_model *model = load(TINY_DIR);
    ted_session *s = new_session(model);
    int max_length = 4;
    ted_hypothesis h[TINY_TGT_VOCAB];
    ted_error err = {0};
    struct {
        ted_beam_params params;
        int n_best;
        const char *says;
    } bad[] = {
        {{0, 0.6f, TED_LENGTH_GNMT, TED_EARLY_STOPPING_FALSE}, 1, "beam_size: 0 is not"},
        {{TINY_TGT_VOCAB, 0.6f, TED_LENGTH_GNMT, TED_EARLY_STOPPING_FALSE}, 1, "beam_size 14: the beam must be smaller than the target vocabulary (14 tokens)"},
        {{2, -1.0f, TED_LENGTH_GNMT, TED_EARLY_STOPPING_FALSE}, 1, "length_penalty: -1"},
        {{2, 0.6f, TED_LENGTH_GNMT, TED_EARLY_STOPPING_FALSE}, 3, "n_best 3 is more than the beam size 2"},
        {{2, 0.6f, TED_LENGTH_GNMT, TED_EARLY_STOPPING_FALSE}, 0, "n_best: 0"},
        {{2, 0.6f, (ted_length_normalization)2, TED_EARLY_STOPPING_FALSE}, 1, "length_normalization: 2 is none of"},
        {{2, 0.6f, TED_LENGTH_GNMT, (ted_early_stopping)4}, 1, "early_stopping: 4 is none of"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(decode_beam(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &bad[k].params, bad[k].n_best, NULL, h, &err),
                     TED_ERR_ARGUMENT);
        cr_assert(strstr(err.message, bad[k].says), "\"%s\" does not say \"%s\"", err.message,
                  bad[k].says);
    }
    /* the largest beam works */
    ted_beam_params widest = {TINY_TGT_VOCAB - 1, 0.6f, TED_LENGTH_POWER, TED_EARLY_STOPPING_FALSE};
    cr_assert_eq(decode_beam(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &widest, TINY_TGT_VOCAB - 1, NULL, h, &err),
                 TED_OK, "%s", err.message);
    ted_hypotheses_free(h, TINY_TGT_VOCAB - 1);
    ted_session_free(s);
    ted_model_free(model);
}

Test(decoding, translate_options_are_checked)
{
    ted_model *model = load(TINY_DIR);
    const char *source = "s1 s2";
    char *out = NULL;
    ted_error err = {0};
    ted_translate_options o = ted_translate_default_options();
    o.decode.n_best = 2;
    cr_assert_eq(ted_translate(model, &source, 1, &o, &out, NULL, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "n_best 2 needs beam search"), "%s", err.message);
    o = ted_translate_default_options();
    o.decode.strategy = (ted_decoding_strategy)7;
    cr_assert_eq(ted_translate(model, &source, 1, &o, &out, NULL, &err), TED_ERR_ARGUMENT);

    /* the tiny model's config names no strategy: greedy, the documented defaults */
    o = ted_translate_model_options(model);
    cr_assert_eq(o.decode.strategy, TED_DECODE_GREEDY);
    cr_assert_eq(o.decode.n_best, 1);
    cr_assert_eq(o.batch_size, 32);
    cr_assert_float_eq(o.decode.beam.length_penalty, 0.6f, 0.0);
    cr_assert_float_eq(o.decode.sampling.temperature, 1.0f, 0.0);
    cr_assert_eq(o.decode.sampling.top_k, 0);
    cr_assert_float_eq(o.decode.sampling.top_p, 1.0f, 0.0);
    cr_assert_eq(o.decode.beam.early_stopping, TED_EARLY_STOPPING_NEVER);  /* its config's */
    ted_beam_params b = ted_beam_default_params();
    cr_assert(b.beam_size == 4 && b.length_penalty == 0.6f);
    cr_assert_eq(b.early_stopping, TED_EARLY_STOPPING_FALSE);
    ted_model_free(model);
}

/* ---- the final Softmax's choices ------------------------------------------ */

Test(decoding, top_k_takes_the_largest_first_and_the_lower_id_on_ties)
{
    const float scores[7] = {0.5f, 2.0f, -1.0f, 2.0f, 3.0f, -INFINITY, 0.5f};
    int ids[7];
    float values[7];
    cr_assert_eq(ted_top_k(scores, 7, 4, ids, values), 4);
    const int want[4] = {4, 1, 3, 0};
    const float want_values[4] = {3.0f, 2.0f, 2.0f, 0.5f};
    cr_assert_arr_eq(ids, want, sizeof want);
    cr_assert_arr_eq(values, want_values, sizeof want_values);
    /* k above n: every score, -infinity last */
    cr_assert_eq(ted_top_k(scores, 7, 20, ids, NULL), 7);
    const int all[7] = {4, 1, 3, 0, 6, 2, 5};
    cr_assert_arr_eq(ids, all, sizeof all);
    cr_assert_eq(ted_top_k(scores, 7, 1, ids, NULL), 1);
    cr_assert_eq(ids[0], ted_argmax(scores, 7));
    cr_assert_eq(ted_top_k(scores, 7, 0, ids, NULL), 0);
}

Test(decoding, a_banned_logit_is_never_drawn)
{
    float logits[6];
    double p[6];
    make_logits(logits, p);
    logits[shuffled[0]] = -INFINITY;  /* the most likely token, banned */
    softmax_t(logits, 6, 1.0, p);
    long counts[6];
    ted_sampling_params params = ted_sampling_default_params();
    draw_counts(logits, 6, params, 60, counts);
    cr_assert_eq(counts[shuffled[0]], 0);
    expect_fit(counts, p, 6, "the others, renormalized");
    params.top_k = 6;
    params.top_p = 0.999f;
    draw_counts(logits, 6, params, 61, counts);
    cr_assert_eq(counts[shuffled[0]], 0, "sorted candidates: the banned one comes last");
}

/* ---- beam search by hand ---------------------------------------------------
 * A copy of the tiny model whose every weight is 0 but the final Linear's
 * bias, log p: the decoder's output is 0 (every LayerNorm scales by 0), so
 * every step's logits are log p whatever the source and the prefix. With
 * p(A) = 0.5, p(EOS) = 0.25, p(B) = 0.15 and 0.1 / 11 for each other
 * token, every beam search below can be followed by hand. */

enum { EOS = 3, A = 4, B = 5 };

static temp_dir make_constant_model(const char *config_tail)
{
    char tail[256];
    snprintf(tail, sizeof tail, "max_length_offset: 4\n%s", config_tail);
    temp_dir dir = make_model_dir("max_length_offset: 4", tail, false);
    size_t size;
    char *file = read_file(TINY_DIR "/model.safetensors", &size);
    uint64_t length = 0;
    for (int i = 0; i < 8; i++)
        length |= (uint64_t)(unsigned char)file[i] << (8 * i);
    cJSON *header = cJSON_ParseWithLength(file + 8, (size_t)length);
    cJSON *bias = cJSON_GetObjectItemCaseSensitive(header, "generator.bias");
    cr_assert_not_null(bias);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(bias, "dtype")->valuestring, "F32");
    size_t begin = (size_t)cJSON_GetArrayItem(
                       cJSON_GetObjectItemCaseSensitive(bias, "data_offsets"), 0)->valuedouble;
    char *data = file + 8 + length;
    memset(data, 0, size - 8 - (size_t)length);
    for (int v = 0; v < TINY_TGT_VOCAB; v++) {
        double p = v == A ? 0.5 : v == EOS ? 0.25 : v == B ? 0.15 : 0.1 / 11;
        float logit = (float)log(p);
        memcpy(data + begin + sizeof(float) * v, &logit, sizeof logit);
    }
    write_file(&dir, "model.safetensors", file, size);
    cJSON_Delete(header);
    free(file);
    return dir;
}

/* Beam search of tiny source 0 on the constant model in `dir`. */
static void beam_by_hand(const char *dir, ted_beam_params params, int max_length, int n_best,
                         ted_hypothesis *h)
{
    ted_model *model = load(dir);
    ted_session *s = new_session(model);
    ted_error err = {0};
    cr_assert_eq(decode_beam(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &params, n_best, NULL, h, &err),
                 TED_OK, "%s", err.message);
    ted_session_free(s);
    ted_model_free(model);
}

static void expect_hypothesis(const ted_hypothesis *h, const int *ids, int length,
                              double log_prob, double score, const char *what)
{
    cr_assert_eq(h->length, length, "%s: %d tokens, expected %d", what, h->length, length);
    cr_assert_arr_eq(h->ids, ids, sizeof(int) * length, "%s: other tokens", what);
    cr_assert(fabs(h->log_prob - log_prob) < 1e-5, "%s: log-prob %.7f, by hand %.7f", what,
              h->log_prob, log_prob);
    cr_assert(fabs(h->score - score) < 1e-5, "%s: score %.7f, by hand %.7f", what, h->score,
              score);
}

Test(decoding, length_penalties_by_hand)
{
    cr_assert_float_eq(ted_length_penalty(TED_LENGTH_GNMT, 1.0, 7), 2.0, 1e-12);
    cr_assert_float_eq(ted_length_penalty(TED_LENGTH_GNMT, 2.0, 13), 9.0, 1e-12);
    cr_assert_float_eq(ted_length_penalty(TED_LENGTH_GNMT, 0.6, 1), 1.0, 1e-12);
    cr_assert_float_eq(ted_length_penalty(TED_LENGTH_POWER, 1.0, 7), 7.0, 1e-12);
    cr_assert_float_eq(ted_length_penalty(TED_LENGTH_POWER, 0.5, 9), 3.0, 1e-12);
    cr_assert_float_eq(ted_length_penalty(TED_LENGTH_POWER, 2.0, 3), 9.0, 1e-12);
    cr_assert_float_eq(ted_length_penalty(TED_LENGTH_POWER, 0.0, 5), 1.0, 0.0);
    cr_assert_float_eq(ted_length_penalty(TED_LENGTH_GNMT, 0.0, 5), 1.0, 0.0);
}

/* Power, alpha 1, beam 2, early stopping true. Step 1: A (log .5) stays
 * open, EOS (log .25, second) finishes with score log .25 / 1, B stays
 * open. Step 2: A A stays open, A EOS (second) finishes with (log .5 +
 * log .25) / 2: two finished, so the search stops, as transformers'
 * early_stopping=True does, though longer hypotheses (A A EOS: (2 log .5 +
 * log .25) / 3) would score better. */
Test(decoding, early_stopping_true_stops_at_beam_size_finished)
{
    temp_dir dir = make_constant_model("");
    ted_beam_params params = {2, 1.0f, TED_LENGTH_POWER, TED_EARLY_STOPPING_TRUE};
    ted_hypothesis h[2];
    beam_by_hand(dir.path, params, 6, 2, h);
    double a = log(0.5), eos = log(0.25);
    expect_hypothesis(&h[0], (const int[]){A, EOS}, 2, a + eos, (a + eos) / 2, "best");
    expect_hypothesis(&h[1], (const int[]){EOS}, 1, eos, eos, "second");
    cr_assert_gt((2 * a + eos) / 3, h[0].score, "a longer one would have won");
    ted_hypotheses_free(h, 2);
    remove_model_dir(&dir);
}

/* GNMT, alpha 1, beam 2, length limit 6, early stopping never: lp = (5 +
 * length) / 6. EOS at step 1 scores log .25; A EOS at step 2 (log .5 +
 * log .25) / (7/6), A A EOS (2 log .5 + log .25) / (8/6), ... lower and
 * lower. The best candidate after step k is A x k, whose best possible
 * score is k log .5 / (11/6): above the second best's after step 4, not
 * after step 5, where the search stops. */
Test(decoding, early_stopping_never_stops_when_no_open_hypothesis_can_win)
{
    temp_dir dir = make_constant_model("");
    ted_beam_params params = {2, 1.0f, TED_LENGTH_GNMT, TED_EARLY_STOPPING_NEVER};
    ted_hypothesis h[2];
    beam_by_hand(dir.path, params, 6, 2, h);
    double a = log(0.5), eos = log(0.25);
    expect_hypothesis(&h[0], (const int[]){EOS}, 1, eos, eos, "best");
    expect_hypothesis(&h[1], (const int[]){A, EOS}, 2, a + eos, (a + eos) / (7.0 / 6.0),
                      "second");
    cr_assert_leq(5 * a / (11.0 / 6.0), h[1].score, "A x 5 cannot win");
    cr_assert_gt(4 * a / (11.0 / 6.0), h[1].score, "A x 4 could have");
    ted_hypotheses_free(h, 2);
    remove_model_dir(&dir);
}

/* Power, alpha 1, beam 2, length limit 6, early stopping false. After
 * step k (k >= 2) the two best finished are A x (k - 1) EOS and A x (k - 2)
 * EOS, scored ((k - 1) log .5 + log .25) / k and below; the best candidate,
 * A x k, bounds what can still finish at k log .5 / k = log .5, above
 * them: the search goes on to the limit, where A x 5 EOS finishes, the
 * heuristic still finds A x 6 could win, and the open A x 6 and A x 5 B
 * finish too (transformers' finalize): A x 6 (score log .5) wins. With
 * forced_eos the hypotheses cut at the limit count the EOS that follows
 * them: A x 6 scores 6 log .5 / 7, A x 5 B (5 log .5 + log .15) / 7, above
 * A x 5 EOS. */
Test(decoding, early_stopping_false_compares_with_the_best_candidate)
{
    ted_beam_params params = {2, 1.0f, TED_LENGTH_POWER, TED_EARLY_STOPPING_FALSE};
    ted_hypothesis h[2];
    double a = log(0.5), eos = log(0.25), b = log(0.15);
    const int a6[] = {A, A, A, A, A, A}, a5_eos[] = {A, A, A, A, A, EOS};
    const int a5_b[] = {A, A, A, A, A, B};
    temp_dir dir = make_constant_model("");
    beam_by_hand(dir.path, params, 6, 2, h);
    expect_hypothesis(&h[0], a6, 6, 6 * a, a, "best");
    expect_hypothesis(&h[1], a5_eos, 6, 5 * a + eos, (5 * a + eos) / 6, "second");
    ted_hypotheses_free(h, 2);
    remove_model_dir(&dir);
    dir = make_constant_model("  forced_eos: true\n");
    beam_by_hand(dir.path, params, 6, 2, h);
    expect_hypothesis(&h[0], a6, 6, 6 * a, 6 * a / 7, "best, forced EOS");
    expect_hypothesis(&h[1], a5_b, 6, 5 * a + b, (5 * a + b) / 7, "second, forced EOS");
    ted_hypotheses_free(h, 2);
    remove_model_dir(&dir);
}

/* At the length limit (2 tokens) the EOS candidates among the best
 * beam_size finish (A EOS), and then, the search not being done, the best
 * beam_size others: A A (2 log .5), A B; EOS from step 1 ranks last. */
Test(decoding, the_length_limit_finishes_the_best_candidates)
{
    temp_dir dir = make_constant_model("");
    ted_beam_params params = {3, 1.0f, TED_LENGTH_POWER, TED_EARLY_STOPPING_TRUE};
    ted_hypothesis h[3];
    beam_by_hand(dir.path, params, 2, 3, h);
    double a = log(0.5), eos = log(0.25), b = log(0.15);
    expect_hypothesis(&h[0], (const int[]){A, A}, 2, 2 * a, a, "best");
    expect_hypothesis(&h[1], (const int[]){A, EOS}, 2, a + eos, (a + eos) / 2, "second");
    expect_hypothesis(&h[2], (const int[]){A, B}, 2, a + b, (a + b) / 2, "third");
    ted_hypotheses_free(h, 3);
    remove_model_dir(&dir);
}

/* banned_ids: [4] (A) in the config: beam 2, power, alpha 1, early
 * stopping true. Step 1: EOS
 * finishes first (log .25), B and another token stay open; step 2: B EOS
 * finishes, (log .15 + log .25) / 2: two finished. The log-probs stay the
 * model's (log .25, not log(.25 / .5)), as transformers reports them. */
Test(decoding, a_banned_token_is_never_in_a_beam)
{
    temp_dir dir = make_constant_model("  banned_ids: [4]\n");
    ted_beam_params params = {2, 1.0f, TED_LENGTH_POWER, TED_EARLY_STOPPING_TRUE};
    ted_hypothesis h[2];
    beam_by_hand(dir.path, params, 6, 2, h);
    double eos = log(0.25), b = log(0.15);
    expect_hypothesis(&h[0], (const int[]){EOS}, 1, eos, eos, "best");
    expect_hypothesis(&h[1], (const int[]){B, EOS}, 2, b + eos, (b + eos) / 2, "second");
    ted_hypotheses_free(h, 2);
    remove_model_dir(&dir);
}

/* ---- the trace of beam search ------------------------------------------- */

typedef struct traced_steps {
    int count;
    ted_beam_step steps[4];
    ted_beam_candidate candidates[4][8];
} traced_steps;

static void record_traced_step(void *data, const ted_beam_step *step)
{
    traced_steps *t = data;
    cr_assert_lt(t->count, 4, "more steps than the search can take");
    cr_assert_leq(step->count, 8);
    t->steps[t->count] = *step;
    memcpy(t->candidates[t->count], step->candidates, sizeof *step->candidates * step->count);
    t->count++;
}

static void expect_candidate(const ted_beam_candidate *c, int parent, int token, double log_prob,
                             double score, ted_beam_fate fate, const char *what)
{
    cr_assert_eq(c->parent, parent, "%s: parent %d, by hand %d", what, c->parent, parent);
    cr_assert_eq(c->token, token, "%s: token %d, by hand %d", what, c->token, token);
    cr_assert(fabs(c->log_prob - log_prob) < 1e-5, "%s: log-prob %.7f, by hand %.7f", what,
              c->log_prob, log_prob);
    cr_assert(fabs(c->score - score) < 1e-5, "%s: score %.7f, by hand %.7f", what, c->score,
              score);
    cr_assert_eq(c->fate, fate, "%s: fate %d, by hand %d", what, c->fate, fate);
}

/* The search of early_stopping_true_stops_at_beam_size_finished, step by
 * step. Step 1 ranks A, EOS, B (the best beam_size + 1 of the one open
 * hypothesis): A and B stay open, EOS finishes. Step 2 ranks A A, A EOS,
 * A B, then B A (as likely as A B: the earlier hypothesis first), B EOS,
 * B B: A A and A B stay open, A EOS finishes, the rest is pruned, and with
 * two finished the search stops. The hypotheses are those of the search
 * without a trace. */
Test(decoding, the_beam_trace_reports_every_candidate_by_hand)
{
    temp_dir dir = make_constant_model("");
    ted_model *model = load(dir.path);
    ted_session *s = new_session(model);
    ted_beam_params params = {2, 1.0f, TED_LENGTH_POWER, TED_EARLY_STOPPING_TRUE};
    traced_steps t = {0};
    ted_beam_trace trace = {record_traced_step, &t};
    ted_hypothesis h[2], untraced[2];
    ted_error err = {0};
    int max_length = 6;
    cr_assert_eq(decode_beam(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &params, 2, &trace, h, &err),
                 TED_OK, "%s", err.message);
    double a = log(0.5), eos = log(0.25), b = log(0.15);
    cr_assert_eq(t.count, 2, "%d steps traced", t.count);
    cr_assert(t.steps[0].length == 1 && t.steps[0].count == 3 && !t.steps[0].stops);
    expect_candidate(&t.candidates[0][0], 0, A, a, a, TED_BEAM_OPEN, "step 1, A");
    expect_candidate(&t.candidates[0][1], 0, EOS, eos, eos, TED_BEAM_FINISHED, "step 1, EOS");
    expect_candidate(&t.candidates[0][2], 0, B, b, b, TED_BEAM_OPEN, "step 1, B");
    cr_assert(t.steps[1].length == 2 && t.steps[1].count == 6 && t.steps[1].stops);
    expect_candidate(&t.candidates[1][0], 0, A, 2 * a, 2 * a, TED_BEAM_OPEN, "A A");
    expect_candidate(&t.candidates[1][1], 0, EOS, a + eos, (a + eos) / 2, TED_BEAM_FINISHED,
                     "A EOS");
    expect_candidate(&t.candidates[1][2], 0, B, a + b, a + b, TED_BEAM_OPEN, "A B");
    expect_candidate(&t.candidates[1][3], 1, A, b + a, b + a, TED_BEAM_PRUNED, "B A");
    expect_candidate(&t.candidates[1][4], 1, EOS, b + eos, b + eos, TED_BEAM_PRUNED, "B EOS");
    expect_candidate(&t.candidates[1][5], 1, B, 2 * b, 2 * b, TED_BEAM_PRUNED, "B B");
    cr_assert_eq(decode_beam(s, BATCH(tiny_sources, tiny_source_lengths, &max_length, 1), &params, 2, NULL, untraced, &err),
                 TED_OK, "%s", err.message);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(h[k].length, untraced[k].length);
        cr_assert_arr_eq(h[k].ids, untraced[k].ids, sizeof(int) * h[k].length);
        cr_assert_eq(h[k].score, untraced[k].score, "the trace changes nothing");
    }
    ted_hypotheses_free(h, 2);
    ted_hypotheses_free(untraced, 2);
    ted_session_free(s);
    ted_model_free(model);
    remove_model_dir(&dir);
}

/* ---- the chooser --------------------------------------------------------------- */

enum { CHOICE_ROWS = 9 };

/* Rows of the toy model's vocabulary, row r largest at a place of its own. */
static float *choice_logits(int vocab)
{
    float *x = malloc(sizeof(float) * CHOICE_ROWS * vocab);
    cr_assert(x);
    for (int r = 0; r < CHOICE_ROWS; r++) {
        for (int i = 0; i < vocab; i++)
            x[r * vocab + i] = (float)((i * 13 + r * 7) % 29) * 0.25f;
        x[r * vocab + (57 * r + 5) % vocab] = 10.0f + (float)r;
    }
    return x;
}

static void choose_all(const ted_model *model, const float *logits, ted_rng *rngs,
                       const ted_sampling_params *sampling, int *tokens)
{
    ted_chooser c;
    ted_error err = {0};
    cr_assert_eq(ted_chooser_init(&c, model, sampling != NULL, &err), TED_OK, "%s",
                 err.message);
    ted_choice choices[CHOICE_ROWS];
    for (int r = 0; r < CHOICE_ROWS; r++)  /* rows 0-2 share a generator, 3-8 another */
        choices[r] = (ted_choice){.row = r, .draws = 1, .forced = -1, .sampling = sampling,
                                  .rng = &rngs[r < 3 ? 0 : 1], .tokens = &tokens[r]};
    ted_choose(&c, logits, choices, CHOICE_ROWS);
    ted_chooser_free(&c);
}

/* Greedy choices spread over two threads are each row's largest logit;
 * draws that share a generator are made in row order, so a thread count
 * changes no draw. */
Test(decoding, choices_over_the_pool_are_each_rows_own)
{
    ted_model *model = load(TOY_DIR);
    int vocab = ted_model_config(model)->tgt_vocab_size;
    float *logits = choice_logits(vocab);
    int best[CHOICE_ROWS], drawn[2][CHOICE_ROWS];
    ted_sampling_params hot = ted_sampling_default_params();
    hot.temperature = 8.0f;
    for (int threads = 1; threads <= 2; threads++) {
        ted_set_threads(threads);
        ted_rng rngs[2] = {ted_rng_seed(7, 0), ted_rng_seed(7, 1)};
        choose_all(model, logits, rngs, NULL, best);
        for (int r = 0; r < CHOICE_ROWS; r++)
            cr_assert_eq(best[r], (57 * r + 5) % vocab, "%d threads, row %d: %d", threads, r,
                         best[r]);
        choose_all(model, logits, rngs, &hot, drawn[threads - 1]);
    }
    ted_set_threads(1);
    /* the rows of one generator draw in order: as one thread drawing them */
    ted_rng rngs[2] = {ted_rng_seed(7, 0), ted_rng_seed(7, 1)};
    ted_draw_scratch draw = {malloc(sizeof(int) * vocab), malloc(sizeof(double) * vocab)};
    for (int r = 0; r < CHOICE_ROWS; r++) {
        float allowed[vocab];
        memcpy(allowed, logits + r * vocab, sizeof allowed);
        ted_ban_tokens(model, allowed);
        int want = ted_sample_token(allowed, vocab, &hot, &rngs[r < 3 ? 0 : 1], &draw);
        for (int t = 0; t < 2; t++)
            cr_assert_eq(drawn[t][r], want, "%d threads, row %d: drew %d, in order %d", t + 1,
                         r, drawn[t][r], want);
    }
    free(draw.ids);
    free(draw.weights);
    free(logits);
    ted_model_free(model);
}

/* ---- target prefixes ------------------------------------------------------------ */

/* Greedy decoding step by step through the session API, feeding `first`
 * after BOS: the reference a forced prefix must give. */
static int greedy_after(ted_session *s, const ted_model *model, const int *source, int length,
                        int first, int max_length, int *ids)
{
    const ted_config *c = ted_model_config(model);
    ted_error err = {0};
    cr_assert_eq(ted_session_encode(s, &source, &length, 1, max_length, &err), TED_OK, "%s",
                 err.message);
    int token = c->bos_id, n = 0;
    while (n < max_length) {
        const float *logits;
        cr_assert_eq(ted_session_step(s, &token, &logits, &err), TED_OK, "%s", err.message);
        token = n == 0 ? first : ted_argmax(logits, c->tgt_vocab_size);
        ids[n++] = token;
        if (token == c->eos_id)
            break;
    }
    return n;
}

Test(decoding, a_target_prefix_is_forced_then_decoding_goes_on, .timeout = 60)
{
    ted_model *model = load(TOY_DIR);
    ted_session *s = new_session(model);
    ted_error err = {0};
    int *source = NULL, length = 0;
    cr_assert_eq(ted_encode_source(model, "the small cat sees the black dog .", &source, &length,
                                   NULL, &err),
                 TED_OK, "%s", err.message);
    int max_length = ted_max_target_length(model, length, 0);
    int forced = ted_target_id(model, "un");
    cr_assert_geq(forced, 0);
    int want[max_length];
    int n = greedy_after(s, model, source, length, forced, max_length, want);

    const int *sources[1] = {source}, *prefixes[1] = {&forced};
    int one = 1;
    ted_batch batch = {.source_ids = sources, .source_lengths = &length,
                       .max_lengths = &max_length, .prefix_ids = prefixes,
                       .prefix_lengths = &one, .count = 1};
    ted_hypothesis h[4];
    cr_assert_eq(decode_greedy(s, &batch, h, &err), TED_OK, "%s", err.message);
    cr_assert_eq(h[0].length, n, "greedy after the prefix: %d tokens, step by step %d",
                 h[0].length, n);
    for (int t = 0; t < n; t++)
        cr_assert_eq(h[0].ids[t], want[t], "token %d: %d, step by step %d", t, h[0].ids[t],
                     want[t]);
    /* forced: log-prob 0, as transformers' ForcedBOSTokenLogitsProcessor scores it */
    cr_assert_eq(h[0].log_probs[0], 0.0f, "greedy: the forced token's log-prob %g",
                 h[0].log_probs[0]);
    ted_hypotheses_free(h, 1);

    ted_beam_params beam = ted_beam_default_params();
    cr_assert_eq(decode_beam(s, &batch, &beam, 4, NULL, h, &err), TED_OK, "%s", err.message);
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(h[k].ids[0], forced, "beam hypothesis %d starts with %d", k, h[k].ids[0]);
        cr_assert_eq(h[k].log_probs[0], 0.0f, "beam hypothesis %d: forced log-prob %g", k,
                     h[k].log_probs[0]);
    }
    ted_hypotheses_free(h, 4);

    ted_sampling_params hot = ted_sampling_default_params();
    hot.temperature = 3.0f;
    cr_assert_eq(decode_sampling(s, &batch, &hot, 4, h, &err), TED_OK, "%s", err.message);
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(h[k].ids[0], forced, "sample %d starts with %d", k, h[k].ids[0]);
        cr_assert_eq(h[k].log_probs[0], 0.0f, "sample %d: forced log-prob %g", k,
                     h[k].log_probs[0]);
    }
    ted_hypotheses_free(h, 4);

    int outside = ted_model_config(model)->tgt_vocab_size, *bad[1] = {&outside};
    batch.prefix_ids = (const int *const *)bad;
    cr_assert_eq(decode_greedy(s, &batch, h, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "prefix token"), "%s", err.message);
    batch.prefix_ids = prefixes;
    int too_long = max_length + 1;
    batch.prefix_lengths = &too_long;
    cr_assert_eq(decode_greedy(s, &batch, h, &err), TED_ERR_ARGUMENT);
    free(source);
    ted_session_free(s);
    ted_model_free(model);
}
