/* The rules on the scores (ted_apply_logits_rules, ted_logits_rules),
 * worked out by hand on the toy model (decoder start token 2, EOS 3) and a
 * row of scores that holds each token's id as its score (negative where the
 * id is odd); transformers' logits processors themselves are compared in
 * tests/parity/test_rules.py. And their options in the option table. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/decoding.h"
#include "ted/learn.h"
#include "ted/ted.h"

#define TOY_DIR "models/toy-en-fr"
enum { START = 2, EOS = 3, ROW = 40 };

static ted_model *model;
static float *scores;

static void load(void)
{
    ted_error err = {0};
    cr_assert_eq(ted_model_load(TOY_DIR, &model, &err), TED_OK, "%s", err.message);
    ted_config_view view = ted_config_get_view(ted_model_config(model));
    cr_assert_eq(view.tokens.decoder_start_id, START);
    cr_assert_eq(view.tokens.eos_id, EOS);
    int vocab = view.model.tgt_vocab_size;
    scores = calloc((size_t)vocab, sizeof *scores);
    for (int i = 0; i < vocab; i++)
        scores[i] = i % 2 ? -(float)i : (float)i;
}

static void unload(void)
{
    free(scores);
    ted_model_free(model);
}

TestSuite(rules, .init = load, .fini = unload);

Test(rules, the_penalty_divides_positive_scores_and_multiplies_negative_ones_once)
{
    ted_logits_rules r = {.repetition_penalty = 2.0f};
    const int ids[] = {10, 7, 10, 10};
    ted_apply_logits_rules(model, &r, ids, 4, scores);
    cr_assert_float_eq(scores[10], 5.0f, 0.0f);   /* three times in the history, once */
    cr_assert_float_eq(scores[7], -14.0f, 0.0f);
    cr_assert_float_eq(scores[START], 1.0f, 0.0f);  /* the start token is in the history */
    cr_assert_float_eq(scores[8], 8.0f, 0.0f);
    cr_assert_float_eq(scores[EOS], -3.0f, 0.0f);
}

Test(rules, a_penalty_of_one_or_zero_changes_nothing)
{
    const int ids[] = {10, 7};
    for (int k = 0; k < 2; k++) {
        ted_logits_rules r = {.repetition_penalty = k ? 1.0f : 0.0f};
        ted_apply_logits_rules(model, &r, ids, 2, scores);
        cr_assert_float_eq(scores[10], 10.0f, 0.0f);
        cr_assert_float_eq(scores[7], -7.0f, 0.0f);
    }
}

Test(rules, a_bigram_already_generated_is_banned_after_its_first_token)
{
    /* history: 2 10 7 10 -> after 10 came 7 before; 10 never followed 2 again */
    ted_logits_rules r = {.no_repeat_ngram_size = 2};
    const int ids[] = {10, 7, 10};
    ted_apply_logits_rules(model, &r, ids, 3, scores);
    cr_assert(isinf(scores[7]) && scores[7] < 0);
    for (int i = 0; i < ROW; i++)
        if (i != 7)
            cr_assert(isfinite(scores[i]), "token %d banned", i);
}

Test(rules, size_one_bans_every_token_of_the_history_the_start_token_too)
{
    ted_logits_rules r = {.no_repeat_ngram_size = 1};
    const int ids[] = {10, 7};
    ted_apply_logits_rules(model, &r, ids, 2, scores);
    for (int i = 0; i < ROW; i++)
        cr_assert_eq(isinf(scores[i]) != 0, i == START || i == 10 || i == 7, "token %d", i);
}

Test(rules, a_trigram_needs_its_two_tokens_in_order)
{
    ted_logits_rules r = {.no_repeat_ngram_size = 3};
    const int ids[] = {10, 7, 12, 7, 10, 7};  /* 2 10 7 12 7 10 7: after "10 7" came 12 */
    ted_apply_logits_rules(model, &r, ids, 6, scores);
    for (int i = 0; i < ROW; i++)
        cr_assert_eq(isinf(scores[i]) != 0, i == 12, "token %d", i);
}

/* Asserts that rules `r` ban EOS after the first `banned` tokens of `ids`
 * and leave its score after the first `kept`. */
static void expect_eos_banned_then_kept(const ted_logits_rules *r, const int *ids, int banned,
                                        int kept)
{
    ted_apply_logits_rules(model, r, ids, banned, scores);
    cr_assert(isinf(scores[EOS]), "EOS kept after %d tokens", banned);
    scores[EOS] = -3.0f;
    ted_apply_logits_rules(model, r, ids, kept, scores);
    cr_assert_float_eq(scores[EOS], -3.0f, 0.0f, "EOS changed after %d tokens", kept);
}

Test(rules, eos_is_banned_until_the_least_length_eos_counted)
{
    ted_logits_rules r = {.min_length = 4};
    const int ids[] = {10, 7, 12};
    /* EOS would be token 3, then token 4 */
    expect_eos_banned_then_kept(&r, ids, 2, 3);
}

Test(rules, the_options_are_checked_by_the_table)
{
    ted_translate_options o = ted_translate_model_options(model);
    ted_error err = {0};
    o.decode.rules.min_length = -1;
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(err.option, TED_OPTION_MIN_LENGTH);
    cr_assert_str_eq(err.message, "min_length: -1 is not a whole number from 0 to 1048576");
    o.decode.rules = (ted_logits_rules){.repetition_penalty = -0.5f};
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(err.option, TED_OPTION_REPETITION_PENALTY);
    o.decode.rules = (ted_logits_rules){.no_repeat_ngram_size = -2};
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(err.option, TED_OPTION_NO_REPEAT_NGRAM_SIZE);
    cr_assert_str_eq(ted_option_key(TED_OPTION_NO_REPEAT_NGRAM_SIZE), "no_repeat_ngram_size");
    o.decode.rules = (ted_logits_rules){.repetition_penalty = 1.3f, .min_length = 5};
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_OK, "%s", err.message);
}

Test(rules, the_defaults_leave_every_rule_off)
{
    ted_decode_options d = ted_translate_model_options(model).decode;
    cr_assert_float_eq(d.rules.repetition_penalty, 1.0f, 0.0f);
    cr_assert_eq(d.rules.no_repeat_ngram_size, 0);
    cr_assert_eq(d.rules.min_length, 0);
}

Test(rules, a_bad_word_bans_its_last_token_after_the_others_and_eos_alone_is_kept)
{
    /* [5], [2 7] (the decoder start then 7), [7 9 11], [3] (EOS alone) */
    ted_logits_rules r = {.bad_words = {5, -1, START, 7, -1, 7, 9, 11, -1, EOS, -1},
                          .bad_words_length = 11};
    /* the history [2]: [2 7] is longer, and transformers skips it then */
    ted_apply_logits_rules(model, &r, NULL, 0, scores);
    cr_assert(isinf(scores[5]));
    cr_assert_float_eq(scores[7], -7.0f, 0.0f);
    cr_assert_float_eq(scores[11], -11.0f, 0.0f);
    cr_assert_float_eq(scores[EOS], -3.0f, 0.0f);
    const int ids[] = {7, 9};
    ted_apply_logits_rules(model, &r, ids, 2, scores);  /* [2 7 9] */
    cr_assert(isinf(scores[11]));
    cr_assert_float_eq(scores[7], -7.0f, 0.0f);
    scores[11] = -11.0f;
    const int again[] = {START};
    ted_apply_logits_rules(model, &r, again, 1, scores);  /* [2 2]: 7 after 2 */
    cr_assert(isinf(scores[7]));
    cr_assert_float_eq(scores[11], -11.0f, 0.0f);
}

Test(rules, min_new_tokens_bans_eos_until_that_many_tokens_without_it)
{
    ted_logits_rules r = {.min_new_tokens = 2};
    const int ids[] = {10, 12};
    /* EOS would be token 2, then token 3 */
    expect_eos_banned_then_kept(&r, ids, 1, 2);
}

Test(rules, bad_words_are_checked_against_the_target_vocabulary)
{
    ted_translate_options o = ted_translate_model_options(model);
    ted_error err = {0};
    int vocab = ted_config_get_view(ted_model_config(model)).model.tgt_vocab_size;
    o.decode.rules = (ted_logits_rules){.bad_words = {5, -1, vocab, -1}, .bad_words_length = 4};
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(err.option, TED_OPTION_BAD_WORDS_IDS);
    cr_assert(strstr(err.message, "bad_words_ids: ") && strstr(err.message, "target token"),
              "%s", err.message);
    o.decode.rules = (ted_logits_rules){.bad_words = {5, -1, -1}, .bad_words_length = 3};
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert_str_eq(err.message, "bad_words_ids: an empty sequence");
    o.decode.rules = (ted_logits_rules){.bad_words = {5, 6}, .bad_words_length = 2};
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    o.decode.rules = (ted_logits_rules){.min_new_tokens = -1};
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(err.option, TED_OPTION_MIN_NEW_TOKENS);
    o.decode.rules = (ted_logits_rules){.bad_words = {5, 6, -1}, .bad_words_length = 3,
                                        .min_new_tokens = 4};
    cr_assert_eq(ted_translate_options_check(model, &o, &err), TED_OK, "%s", err.message);
}

Test(rules, the_source_ngrams_ban_what_followed_the_history_end_in_the_source)
{
    ted_logits_rules r = {.encoder_no_repeat_ngram_size = 2};
    const int source_ids[] = {9, 7, 11, 7, 13, EOS};
    ted_rules_source source = {source_ids, 6};
    const int ids[] = {5, 7};
    ted_apply_logits_rules_source(model, &r, &source, ids, 2, scores);  /* [2 5 7] */
    cr_assert(isinf(scores[11]) && isinf(scores[13]));
    cr_assert_float_eq(scores[7], -7.0f, 0.0f);
    cr_assert_float_eq(scores[9], -9.0f, 0.0f);
    scores[11] = -11.0f;
    ted_apply_logits_rules(model, &r, ids, 2, scores);  /* no source: the rule is off */
    cr_assert_float_eq(scores[11], -11.0f, 0.0f);
    cr_assert_str_eq(ted_option_key(TED_OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE),
                     "encoder_no_repeat_ngram_size");
}

Test(rules, the_record_names_the_rule_that_changed_each_token_and_where_it_found_why)
{
    /* history 2 10 7 12 7 10: the penalty touches 2 (position 0), 10 (1),
     * 7 (2) and 12 (3); after 10 came 7 at positions 1..2, so the 2-gram
     * "10 7" bans 7, found at 1; EOS is banned: 7 tokens < min_length 9;
     * the source 5 10 11 bans 11 after "10", found at source position 1. */
    ted_logits_rules r = {.repetition_penalty = 2, .no_repeat_ngram_size = 2,
                          .encoder_no_repeat_ngram_size = 2, .min_length = 9};
    const int ids[] = {10, 7, 12, 7, 10}, source_ids[] = {5, 10, 11};
    const ted_rules_source source = {source_ids, 3};
    int vocab = ted_config_get_view(ted_model_config(model)).model.tgt_vocab_size;
    ted_learn_change *marks = calloc((size_t)vocab, sizeof *marks);
    cr_assert(marks);
    ted_apply_logits_rules_marked(model, &r, &source, ids, 5, scores, marks);
    const struct {
        int token;
        ted_learn_rule rule;
        int at;
    } want[] = {{START, TED_LEARN_RULE_REPETITION, 0}, {10, TED_LEARN_RULE_REPETITION, 1},
                {7, TED_LEARN_RULE_NGRAM, 1}, {12, TED_LEARN_RULE_REPETITION, 3},
                {11, TED_LEARN_RULE_SOURCE_NGRAM, 1}, {EOS, TED_LEARN_RULE_MIN_LENGTH, 0}};
    int changed = 0;
    for (int i = 0; i < vocab; i++)
        changed += marks[i].rule != TED_LEARN_RULE_NONE;
    cr_assert_eq(changed, 6, "%d tokens marked", changed);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const ted_learn_change *m = &marks[want[k].token];
        cr_assert_eq(m->rule, want[k].rule, "token %d: rule %d", want[k].token, m->rule);
        cr_assert_eq(m->at, want[k].at, "token %d: at %d", want[k].token, m->at);
    }
    free(marks);
}

Test(rules, the_record_names_the_bad_words_sequence_and_the_least_new_tokens)
{
    /* bad words {9} {10 12}: 9 always, 12 after a history ending in 10
     * (found at index 2 of bad_words); 2 tokens < min_new_tokens 4 */
    ted_logits_rules r = {.bad_words = {9, -1, 10, 12, -1}, .bad_words_length = 5,
                          .min_new_tokens = 4};
    const int ids[] = {7, 10};
    int vocab = ted_config_get_view(ted_model_config(model)).model.tgt_vocab_size;
    ted_learn_change *marks = calloc((size_t)vocab, sizeof *marks);
    cr_assert(marks);
    ted_apply_logits_rules_marked(model, &r, NULL, ids, 2, scores, marks);
    cr_assert_eq(marks[9].rule, TED_LEARN_RULE_BAD_WORDS);
    cr_assert_eq(marks[9].at, 0);
    cr_assert_eq(marks[12].rule, TED_LEARN_RULE_BAD_WORDS);
    cr_assert_eq(marks[12].at, 2);
    cr_assert_eq(marks[EOS].rule, TED_LEARN_RULE_MIN_NEW_TOKENS);
    int changed = 0;
    for (int i = 0; i < vocab; i++)
        changed += marks[i].rule != TED_LEARN_RULE_NONE;
    cr_assert_eq(changed, 3, "%d tokens marked", changed);
    free(marks);
}
