/* The rules of rows that decode on their own (model/rows.h), which
 * ted_decode's greedy decoding and sampling and ted serve's batch share,
 * worked out by hand on a sentence of three samples: the first step's one
 * row draws every sample, a target prefix is forced position by position,
 * a sample ends at EOS or at max_length, and the rows that go on are
 * listed in order. The decodes themselves are checked against PyTorch in
 * tests/parity and tests/unit/test_decoding.c. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "model/rows.h"

enum { EOS = 2, SAMPLES = 3 };

typedef struct fixture {
    ted_hypothesis found[SAMPLES];
    int room[SAMPLES];
    ted_row_sentence s;
    int keep[SAMPLES], sample[SAMPLES], tokens[SAMPLES];
} fixture;

static const int prefix[] = {7, 8};
static const ted_sampling_params params = {.temperature = 1.0f, .top_p = 1.0f};

/* A sampled sentence of SAMPLES samples, max_length 4, the prefix above. */
static void start(fixture *f)
{
    *f = (fixture){0};
    f->s = (ted_row_sentence){.max_length = 4, .prefix_ids = prefix, .prefix_length = 2,
                              .scored = true, .found = f->found, .room = f->room,
                              .samples = SAMPLES, .eos = EOS, .first = true,
                              .sampling = &params};
}

/* Takes `tokens` (the choice's draws) as the choice of `row` for `sample`;
 * returns how many samples go on. */
static int take(fixture *f, int sample, int row, const int *tokens)
{
    int chosen[SAMPLES];
    float log_probs[SAMPLES];
    ted_choice ch = ted_row_plan(&f->s, sample, row, chosen, log_probs);
    for (int k = 0; k < ch.draws; k++) {
        chosen[k] = tokens[k];
        log_probs[k] = -0.5f * (float)(k + 1);
    }
    int kept = 0;
    ted_error err = {0};
    ted_rows_next next = {f->keep, f->sample, f->tokens};
    cr_assert_eq(ted_row_take(&f->s, sample, &ch, next, &kept, &err), TED_OK, "%s",
                 err.message);
    return kept;
}

static void free_fixture(fixture *f)
{
    ted_hypotheses_free(f->found, SAMPLES);
}

Test(rows, the_first_row_draws_every_sample_and_a_prefix_is_forced)
{
    fixture f;
    start(&f);
    int chosen[SAMPLES];
    float log_probs[SAMPLES];
    ted_choice ch = ted_row_plan(&f.s, 0, 5, chosen, log_probs);
    cr_assert_eq(ch.row, 5);
    cr_assert_eq(ch.draws, SAMPLES, "the first step's row draws every sample");
    cr_assert_eq(ch.forced, 7, "the prefix's first token");
    cr_assert_eq(ch.sampling, &params);
    cr_assert_eq(ch.rng, &f.s.rng);
    cr_assert_eq(ch.log_probs, log_probs);
    cr_assert_eq(take(&f, 0, 5, (const int[]){7, 7, 7}), SAMPLES);
    for (int k = 0; k < SAMPLES; k++) {
        cr_assert_eq(f.keep[k], 5, "sample %d repeats row 5", k);
        cr_assert_eq(f.sample[k], k);
        cr_assert_eq(f.tokens[k], 7);
        cr_assert_eq(f.found[k].length, 1);
        cr_assert_float_eq(f.found[k].log_probs[0], -0.5f * (float)(k + 1), 0.0f);
    }
    cr_assert_not(f.s.first);
    ch = ted_row_plan(&f.s, 2, 0, chosen, log_probs);
    cr_assert_eq(ch.draws, 1, "after the first step a row draws its own sample");
    cr_assert_eq(ch.forced, 8, "the prefix's second token");
    take(&f, 2, 0, (const int[]){8});
    ch = ted_row_plan(&f.s, 2, 0, chosen, log_probs);
    cr_assert_eq(ch.forced, -1, "past the prefix nothing is forced");
    ch = ted_row_plan(&f.s, 1, 0, chosen, log_probs);
    cr_assert_eq(ch.forced, 8, "sample 1 is still within the prefix");
    free_fixture(&f);
}

Test(rows, a_sample_ends_at_eos_or_at_max_length)
{
    fixture f;
    start(&f);
    f.s.prefix_ids = NULL;
    f.s.prefix_length = 0;
    /* the first step: sample 1 draws EOS and ends, 0 and 2 go on in order */
    cr_assert_eq(take(&f, 0, 0, (const int[]){4, EOS, 6}), 2);
    cr_assert_eq(f.sample[0], 0);
    cr_assert_eq(f.sample[1], 2);
    cr_assert_eq(f.tokens[1], 6);
    cr_assert_eq(f.found[1].length, 1, "EOS is appended");
    cr_assert_eq(f.found[1].ids[0], EOS);
    /* sample 2 on row 1 reaches max_length 4 at its fourth token */
    cr_assert_eq(take(&f, 2, 1, (const int[]){9}), 1);
    cr_assert_eq(f.keep[0], 1);
    cr_assert_eq(take(&f, 2, 1, (const int[]){9}), 1);
    cr_assert_eq(take(&f, 2, 1, (const int[]){9}), 0, "max_length tokens: it ends");
    cr_assert_eq(f.found[2].length, 4);
    free_fixture(&f);
}

Test(rows, greedy_rows_are_unscored_when_no_score_is_wanted)
{
    fixture f;
    start(&f);
    f.s.scored = false;
    f.s.sampling = NULL;
    int chosen[1];
    float log_probs[1];
    ted_choice ch = ted_row_plan(&f.s, 0, 0, chosen, log_probs);
    cr_assert_null(ch.log_probs);
    cr_assert_null(ch.sampling, "no sampling parameters: the best allowed token");
    free_fixture(&f);
}

Test(rows, every_row_kept_in_order_needs_no_select)
{
    cr_assert(ted_rows_keep_all((const int[]){0, 1, 2}, 3, 3));
    cr_assert_not(ted_rows_keep_all((const int[]){0, 1}, 2, 3), "a row ended");
    cr_assert_not(ted_rows_keep_all((const int[]){0, 0, 1}, 3, 3), "a row repeated");
    cr_assert_not(ted_rows_keep_all((const int[]){1, 0, 2}, 3, 3), "rows moved");
}

Test(rows, samples_are_n_best_only_when_sampling)
{
    ted_decode_options o = {.strategy = TED_DECODE_SAMPLE, .n_best = 5};
    cr_assert_eq(ted_row_samples(&o), 5);
    o.strategy = TED_DECODE_BEAM;
    cr_assert_eq(ted_row_samples(&o), 1);
    o.strategy = TED_DECODE_GREEDY;
    o.n_best = 1;
    cr_assert_eq(ted_row_samples(&o), 1);
}
