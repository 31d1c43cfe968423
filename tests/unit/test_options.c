/* The decoding options' table (src/model/options.c), one test per rule,
 * through ted_translate_options_check_given on the toy model (a target
 * vocabulary of 849): each refusal is TED_ERR_ARGUMENT, names the option
 * in ted_error.option and says it by its key, with the values and bounds
 * worked out by hand from the rules of ted.h. Then the words (config.yaml's,
 * docs/model-format.md) and the front ends' spellings of the keys. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ted/ted.h"

#define MODEL_DIR "models/toy-en-fr"
#define BIT(option) (1u << (option))

static ted_model *model;

static void load_model(void)
{
    ted_error err = {0};
    cr_assert_eq(ted_model_load(MODEL_DIR, &model, &err), TED_OK, "%s", err.message);
}

static void free_model(void)
{
    ted_model_free(model);
}

TestSuite(options, .init = load_model, .fini = free_model);

static ted_translate_options greedy(void)
{
    return ted_translate_default_options();
}

static ted_translate_options beam(int size)
{
    ted_translate_options o = ted_translate_default_options();
    o.decode.strategy = TED_DECODE_BEAM;
    o.decode.beam.beam_size = size;
    return o;
}

static ted_translate_options sampling(void)
{
    ted_translate_options o = ted_translate_default_options();
    o.decode.strategy = TED_DECODE_SAMPLE;
    return o;
}

/* The check refuses `o` naming `option`, with `says` in its message. */
static void refused(ted_translate_options o, unsigned given, ted_option option, const char *says)
{
    ted_error err = {0};
    cr_assert_eq(ted_translate_options_check_given(model, &o, given, &err), TED_ERR_ARGUMENT,
                 "not refused: %s", says);
    cr_assert_eq(err.option, option, "option %d, not %d: %s", err.option, option, err.message);
    cr_assert(strstr(err.message, says), "\"%s\" does not say \"%s\"", err.message, says);
}

static void taken(ted_translate_options o, unsigned given)
{
    ted_error err = {0};
    cr_assert_eq(ted_translate_options_check_given(model, &o, given, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(err.option, TED_OPTION_NONE);
}

Test(options, beam_size_is_a_whole_number_from_1_to_1024)
{
    refused(beam(0), BIT(TED_OPTION_BEAM_SIZE), TED_OPTION_BEAM_SIZE,
            "beam_size: 0 is not a whole number from 1 to 1024");
    refused(beam(1025), BIT(TED_OPTION_BEAM_SIZE), TED_OPTION_BEAM_SIZE,
            "beam_size: 1025 is not a whole number from 1 to 1024");
    taken(beam(1), BIT(TED_OPTION_BEAM_SIZE));
}

Test(options, the_beam_is_narrower_than_the_target_vocabulary)
{
    refused(beam(849), BIT(TED_OPTION_BEAM_SIZE), TED_OPTION_BEAM_SIZE,
            "beam_size 849: the beam must be smaller than the target vocabulary (849 tokens)");
    taken(beam(848), BIT(TED_OPTION_BEAM_SIZE));
}

Test(options, beam_size_and_sample_exclude_each_other)
{
    refused(beam(2), BIT(TED_OPTION_BEAM_SIZE) | BIT(TED_OPTION_SAMPLE), TED_OPTION_BEAM_SIZE,
            "beam_size and sample exclude each other");
}

Test(options, n_best_is_a_whole_number_from_1_to_1024)
{
    ted_translate_options o = sampling();
    o.decode.n_best = 0;
    refused(o, 0, TED_OPTION_N_BEST, "n_best: 0 is not a whole number from 1 to 1024");
    o.decode.n_best = 1025;
    refused(o, BIT(TED_OPTION_N_BEST), TED_OPTION_N_BEST, "n_best: 1025 is not");
    o.decode.n_best = 1024;
    taken(o, BIT(TED_OPTION_N_BEST) | BIT(TED_OPTION_SAMPLE));
}

Test(options, n_best_needs_beam_search_or_sampling)
{
    ted_translate_options o = greedy();
    o.decode.n_best = 2;
    refused(o, BIT(TED_OPTION_N_BEST), TED_OPTION_N_BEST,
            "n_best 2 needs beam search (beam_size 2 or more) or sample");
}

Test(options, n_best_is_at_most_the_beam)
{
    ted_translate_options o = beam(4);
    o.decode.n_best = 5;
    refused(o, BIT(TED_OPTION_N_BEST), TED_OPTION_N_BEST, "n_best 5 is more than the beam size 4");
    o.decode.n_best = 4;
    taken(o, BIT(TED_OPTION_N_BEST));
}

Test(options, max_length_is_a_whole_number_from_1_when_given)
{
    ted_translate_options o = greedy();
    o.max_length = 0;
    refused(o, BIT(TED_OPTION_MAX_LENGTH), TED_OPTION_MAX_LENGTH,
            "max_length: 0 is not a whole number from 1 to 1048576");
    taken(o, 0); /* not given: 0 is the model's bound */
    o.max_length = (1 << 20) + 1;
    refused(o, BIT(TED_OPTION_MAX_LENGTH), TED_OPTION_MAX_LENGTH, "max_length: 1048577 is not");
}

Test(options, the_largest_whole_numbers_cap_what_a_user_gives)
{
    /* a program may draw more samples than a user may ask for */
    ted_translate_options o = sampling();
    o.decode.n_best = 40000;
    taken(o, 0);
    refused(o, BIT(TED_OPTION_N_BEST), TED_OPTION_N_BEST,
            "n_best: 40000 is not a whole number from 1 to 1024");
}

Test(options, length_penalty_is_a_number_at_least_0)
{
    ted_translate_options o = beam(2);
    o.decode.beam.length_penalty = -1.0f;
    refused(o, BIT(TED_OPTION_LENGTH_PENALTY), TED_OPTION_LENGTH_PENALTY,
            "length_penalty: -1 is not a number >= 0");
    o.decode.beam.length_penalty = INFINITY;
    refused(o, 0, TED_OPTION_LENGTH_PENALTY, "length_penalty: inf is not a number >= 0");
    o.decode.beam.length_penalty = 0.0f;
    taken(o, BIT(TED_OPTION_LENGTH_PENALTY));
}

Test(options, length_normalization_is_one_of_its_words)
{
    ted_translate_options o = beam(2);
    o.decode.beam.length_normalization = (ted_length_normalization)2;
    refused(o, 0, TED_OPTION_LENGTH_NORMALIZATION,
            "length_normalization: 2 is none of gnmt or power");
}

Test(options, early_stopping_is_one_of_its_words)
{
    ted_translate_options o = beam(2);
    o.decode.beam.early_stopping = (ted_early_stopping)4;
    refused(o, 0, TED_OPTION_EARLY_STOPPING,
            "early_stopping: 4 is none of false, true, never or marian");
}

Test(options, temperature_is_a_number_above_0)
{
    ted_translate_options o = sampling();
    o.decode.sampling.temperature = 0.0f;
    refused(o, BIT(TED_OPTION_TEMPERATURE), TED_OPTION_TEMPERATURE,
            "temperature: 0 is not a number > 0");
    o.decode.sampling.temperature = NAN;
    refused(o, 0, TED_OPTION_TEMPERATURE, "temperature: nan is not a number > 0");
}

Test(options, top_k_is_a_whole_number_from_0)
{
    ted_translate_options o = sampling();
    o.decode.sampling.top_k = -1;
    refused(o, BIT(TED_OPTION_TOP_K), TED_OPTION_TOP_K,
            "top_k: -1 is not a whole number from 0 to 16777216");
}

Test(options, top_p_is_a_number_above_0_and_at_most_1)
{
    ted_translate_options o = sampling();
    o.decode.sampling.top_p = 0.0f;
    refused(o, BIT(TED_OPTION_TOP_P), TED_OPTION_TOP_P, "top_p: 0 is not a number > 0 and <= 1");
    o.decode.sampling.top_p = 1.5f;
    refused(o, 0, TED_OPTION_TOP_P, "top_p: 1.5 is not a number > 0 and <= 1");
    o.decode.sampling.top_p = 1.0f;
    taken(o, BIT(TED_OPTION_TOP_P));
}

Test(options, a_sampling_option_applies_to_sampling)
{
    const ted_option each[] = {TED_OPTION_TEMPERATURE, TED_OPTION_TOP_K, TED_OPTION_TOP_P,
                               TED_OPTION_SEED};
    char says[128];
    for (size_t i = 0; i < sizeof each / sizeof *each; i++) {
        snprintf(says, sizeof says, "%s applies to sampling; add sample",
                 ted_option_key(each[i]));
        refused(greedy(), BIT(each[i]), each[i], says);
        refused(beam(2), BIT(each[i]), each[i], says);
        taken(sampling(), BIT(each[i]));
    }
}

Test(options, a_beam_search_option_applies_to_beam_search)
{
    const ted_option each[] = {TED_OPTION_LENGTH_PENALTY, TED_OPTION_LENGTH_NORMALIZATION,
                               TED_OPTION_EARLY_STOPPING};
    char says[128];
    for (size_t i = 0; i < sizeof each / sizeof *each; i++) {
        snprintf(says, sizeof says, "%s applies to beam search; add beam_size N",
                 ted_option_key(each[i]));
        refused(greedy(), BIT(each[i]), each[i], says);
        refused(sampling(), BIT(each[i]), each[i], says);
        taken(beam(2), BIT(each[i]));
    }
}

Test(options, a_failure_about_no_option_names_none)
{
    ted_translate_options o = beam(0);
    ted_error err = {0};
    cr_assert_eq(ted_translate_options_check_given(model, &o, 0, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(err.option, TED_OPTION_BEAM_SIZE);
    o = greedy();
    o.workers = 0; /* not a decoding option */
    cr_assert_eq(ted_translate_options_check_given(model, &o, 0, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(err.option, TED_OPTION_NONE, "%s", err.message);
    cr_assert(strstr(err.message, "workers"), "%s", err.message);
    /* ted_translate_options_check is the same check with nothing given */
    o = beam(849);
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(err.option, TED_OPTION_BEAM_SIZE, "%s", err.message);
}

Test(options, the_option_is_added_at_the_end_of_ted_error)
{
    cr_assert_eq(offsetof(ted_error, status), 0);
    cr_assert_eq(offsetof(ted_error, message), sizeof(ted_status));
    cr_assert_geq(offsetof(ted_error, option), offsetof(ted_error, message) +
                                                   TED_ERROR_MESSAGE_SIZE);
}

/* ---- the table's words and keys ---------------------------------------------------- */

Test(options, the_words_are_config_yamls)
{
    /* docs/model-format.md: decoding.length_normalization gnmt | power,
     * decoding.early_stopping false | true | never | marian */
    cr_assert_str_eq(ted_option_word(TED_OPTION_LENGTH_NORMALIZATION, TED_LENGTH_GNMT), "gnmt");
    cr_assert_str_eq(ted_option_word(TED_OPTION_LENGTH_NORMALIZATION, TED_LENGTH_POWER), "power");
    cr_assert_null(ted_option_word(TED_OPTION_LENGTH_NORMALIZATION, 2));
    cr_assert_str_eq(ted_option_word(TED_OPTION_EARLY_STOPPING, TED_EARLY_STOPPING_NEVER),
                     "never");
    cr_assert_null(ted_option_word(TED_OPTION_BEAM_SIZE, 0));
    char text[64];
    cr_assert_eq(ted_option_words_text(TED_OPTION_EARLY_STOPPING, "\"", text, sizeof text),
                 strlen("\"false\", \"true\", \"never\" or \"marian\""));
    cr_assert_str_eq(text, "\"false\", \"true\", \"never\" or \"marian\"");
}

Test(options, keys_and_bounds)
{
    cr_assert_null(ted_option_key(TED_OPTION_NONE));
    cr_assert_null(ted_option_key(TED_OPTION_COUNT));
    cr_assert_str_eq(ted_option_key(TED_OPTION_TOP_P), "top_p");
    double min, max;
    bool included;
    cr_assert(ted_option_bounds(TED_OPTION_TOP_P, &min, &max, &included));
    cr_assert(min == 0.0 && max == 1.0 && !included);
    cr_assert(ted_option_bounds(TED_OPTION_BEAM_SIZE, &min, &max, &included));
    cr_assert(min == 1.0 && max == TED_BEAM_SIZE_MAX && included);
    cr_assert_not(ted_option_bounds(TED_OPTION_EARLY_STOPPING, &min, &max, &included));
}

Test(options, a_front_end_spells_the_keys_its_way)
{
    const char *spelling[TED_OPTION_COUNT] = {[TED_OPTION_BEAM_SIZE] = "--beam",
                                              [TED_OPTION_N_BEST] = "--n-best",
                                              [TED_OPTION_SAMPLE] = "--sample"};
    ted_error err = {0};
    ted_translate_options o = greedy();
    o.decode.n_best = 3;
    cr_assert_eq(ted_translate_options_check_given(model, &o, 0, &err), TED_ERR_ARGUMENT);
    ted_error_spell_options(&err, spelling);
    cr_assert_str_eq(err.message, "--n-best 3 needs beam search (--beam 3 or more) or --sample");
    /* whole words only; a key without a spelling stays */
    strcpy(err.message, "beam_sizes n_best_x top_k sample:sampled");
    ted_error_spell_options(&err, spelling);
    cr_assert_str_eq(err.message, "beam_sizes n_best_x top_k --sample:sampled");
}
