/* ted_prepare_source: the ids, the unknown count and the blank rule as
 * the config's BOS and EOS say, and the one max_positions message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_dir.h"
#include "ted/ted.h"

/* `words` copies of "s0", separated by spaces; malloc'ed. */
static char *repeated_word(int words)
{
    char *text = calloc((size_t)words * 3 + 1, 1);
    cr_assert_not_null(text);
    for (int i = 0; i < words; i++)
        strcat(text, i ? " s0" : "s0");
    return text;
}

Test(source, wraps_in_bos_eos_and_counts_unknown_tokens)
{
    ted_model *model = load(TINY_DIR);
    ted_source s;
    ted_error err = {0};
    cr_assert_eq(ted_prepare_source(model, "s0 s1 zebra", NULL, &s, &err), TED_OK, "%s", err.message);
    int expected[] = {2, 4, 5, 0, 3};  /* BOS s0 s1 <unk> EOS */
    cr_assert_eq(s.count, 5);
    cr_assert_arr_eq(s.ids, expected, sizeof expected);
    cr_assert_eq(s.unknown, 1);
    cr_assert_not(s.blank);
    ted_source_free(&s);
    cr_assert_null(s.ids);
    cr_assert_eq(s.count, 0);
    ted_source_free(&s);  /* zeroed: nothing to do */
    ted_source_free(NULL);
    ted_model_free(model);
}

Test(source, bos_eos_alone_is_blank)
{
    ted_model *model = load(TINY_DIR);
    const char *texts[] = {"", "   ", "\t"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        ted_source s;
        ted_error err = {0};
        cr_assert_eq(ted_prepare_source(model, texts[i], NULL, &s, &err), TED_OK, "%s", err.message);
        cr_assert_eq(s.count, 2, "'%s': %d tokens", texts[i], s.count);
        cr_assert(s.blank, "'%s' is not blank", texts[i]);
        ted_source_free(&s);
    }
    ted_model_free(model);
}

/* The blank rule follows the config: without BOS, EOS alone is blank and
 * one word is not; without either, no tokens is blank. */
Test(source, blank_rule_follows_the_config)
{
    static const struct {
        const char *edit, *text;
        int count;
        bool blank;
    } cases[] = {
        {"source_bos: false\n  source_eos: true", "", 1, true},
        {"source_bos: false\n  source_eos: true", "s0", 2, false},
        {"source_bos: false\n  source_eos: false", "", 0, true},
        {"source_bos: false\n  source_eos: false", "s0", 1, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        temp_dir dir = make_model_dir("source_bos: true\n  source_eos: true", cases[i].edit,
                                      true);
        ted_model *model = load(dir.path);
        ted_source s;
        ted_error err = {0};
        cr_assert_eq(ted_prepare_source(model, cases[i].text, NULL, &s, &err), TED_OK, "%s",
                     err.message);
        cr_assert_eq(s.count, cases[i].count, "case %zu: %d tokens", i, s.count);
        cr_assert_eq(s.blank, cases[i].blank, "case %zu", i);
        ted_source_free(&s);
        ted_model_free(model);
        remove_model_dir(&dir);
    }
}

/* max_positions (64) counts BOS and EOS: 62 words fit, 63 do not. */
Test(source, more_tokens_than_max_positions_is_refused)
{
    ted_model *model = load(TINY_DIR);
    ted_source s;
    ted_error err = {0};
    char *fits = repeated_word(62), *over = repeated_word(63);
    cr_assert_eq(ted_prepare_source(model, fits, NULL, &s, &err), TED_OK, "%s", err.message);
    cr_assert_eq(s.count, 64);
    ted_source_free(&s);
    cr_assert_eq(ted_prepare_source(model, over, NULL, &s, &err), TED_ERR_INPUT);
    cr_assert_str_eq(err.message, "65 tokens, more than the model's max_positions (64)");
    cr_assert_null(s.ids);
    cr_assert_eq(s.count, 0);
    free(fits);
    free(over);
    ted_model_free(model);
}

Test(source, tokenizer_errors_leave_no_ids)
{
    ted_model *model = load(TINY_DIR);
    ted_source s;
    ted_error err = {0};
    cr_assert_eq(ted_prepare_source(model, "s0 \377", NULL, &s, &err), TED_ERR_INPUT);
    cr_assert(strstr(err.message, "invalid UTF-8"), "%s", err.message);
    cr_assert_null(s.ids);
    cr_assert_eq(s.count, 0);
    cr_assert_eq(ted_prepare_source(model, "s0 \377", NULL, &s, NULL), TED_ERR_INPUT);
    ted_model_free(model);
}
