/* Language codes (tokenizer.languages): where ted_prepare_source puts a
 * code token (before the text, after EOS, at the start of the source, or
 * as the forced first target token), what ted_model_languages names, and
 * the errors for a missing or unknown code. The ids expected are those of
 * tests/data/tiny-model's vocabularies: source <unk> <pad> <bos> <eos>
 * s0..s7 (ids 0..11), target <unk> <pad> <bos> <eos> t0..t9 (ids 0..13). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_dir.h"
#include "ted/ted.h"

#define TOKENIZER_END "  source_eos: true\n"

/* tests/data/tiny-model with `lines` added to its tokenizer section. */
static temp_dir model_with(const char *lines)
{
    char edit[512];
    snprintf(edit, sizeof edit, "%s%s", TOKENIZER_END, lines);
    return make_model_dir(TOKENIZER_END, edit, true);
}

/* The source of `text` with `languages`; the test fails unless it is made. */
static ted_source prepared(const ted_model *model, const char *text, const char *source,
                           const char *target)
{
    ted_languages languages = {source, target};
    ted_source s;
    ted_error err = {0};
    cr_assert_eq(ted_prepare_source(model, text, &languages, &s, &err), TED_OK, "%s",
                 err.message);
    return s;
}

static void expect_refused(const ted_model *model, const char *source, const char *target,
                           const char *message)
{
    ted_languages languages = {source, target};
    ted_source s;
    ted_error err = {0};
    cr_assert_eq(ted_prepare_source(model, "s0", &languages, &s, &err), TED_ERR_INPUT);
    cr_assert_str_eq(err.message, message);
    cr_assert_null(s.ids);
    cr_assert_null(s.prefix_ids);
}

Test(languages, the_source_code_goes_before_the_text_or_after_eos)
{
    static const struct {
        const char *place;
        int ids[5];
    } cases[] = {
        {"first", {11, 2, 4, 5, 3}},  /* s7 BOS s0 s1 EOS */
        {"last", {2, 4, 5, 3, 11}},   /* BOS s0 s1 EOS s7 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char lines[128];
        snprintf(lines, sizeof lines, "  languages: [s6, s7]\n  source_language_token: %s\n",
                 cases[i].place);
        temp_dir dir = model_with(lines);
        ted_model *model = load(dir.path);
        ted_source s = prepared(model, "s0 s1", "s7", NULL);
        cr_assert_eq(s.count, 5, "%s: %d ids", cases[i].place, s.count);
        cr_assert_arr_eq(s.ids, cases[i].ids, sizeof cases[i].ids, "%s", cases[i].place);
        cr_assert_eq(s.prefix_count, 0);
        cr_assert_null(s.prefix_ids);
        cr_assert_not(s.blank);
        ted_source_free(&s);
        s = prepared(model, "", "s6", NULL);  /* the code alone is no text */
        cr_assert_eq(s.count, 3);
        cr_assert(s.blank);
        ted_source_free(&s);
        ted_model_free(model);
        remove_model_dir(&dir);
    }
}

Test(languages, a_forced_target_code_is_the_prefix)
{
    temp_dir dir = model_with("  languages: [t8, t9]\n  target_language_token: forced\n");
    ted_model *model = load(dir.path);
    ted_source s = prepared(model, "s0 s1", NULL, "t9");
    int ids[] = {2, 4, 5, 3};
    cr_assert_eq(s.count, 4);
    cr_assert_arr_eq(s.ids, ids, sizeof ids);
    cr_assert_eq(s.prefix_count, 1);
    cr_assert_eq(s.prefix_ids[0], 13);
    ted_source_free(&s);
    cr_assert_null(s.prefix_ids);
    cr_assert_eq(s.prefix_count, 0);
    expect_refused(model, NULL, NULL,
                   "no target language given, and the model translates into 2 languages: "
                   "t8, t9");
    expect_refused(model, NULL, "t7", "unknown target language \"t7\"; the model's: t8, t9");
    expect_refused(model, "en", "t8",
                   "unknown source language \"en\": the model names no source languages");
    ted_model_free(model);
    remove_model_dir(&dir);
}

/* tokenizer.default_target_lang (a generation config's forced_bos_token_id):
 * the target when none is given; a given one still chooses. */
Test(languages, the_default_target_language_is_forced_when_none_is_given)
{
    temp_dir dir = model_with("  languages: [t8, t9]\n  target_language_token: forced\n"
                              "  default_target_lang: t9\n");
    ted_model *model = load(dir.path);
    ted_source s = prepared(model, "s0 s1", NULL, NULL);
    cr_assert_eq(s.prefix_count, 1);
    cr_assert_eq(s.prefix_ids[0], 13);
    ted_source_free(&s);
    s = prepared(model, "s0 s1", NULL, "t8");
    cr_assert_eq(s.prefix_count, 1);
    cr_assert_eq(s.prefix_ids[0], 12);
    ted_source_free(&s);
    expect_refused(model, NULL, "t7", "unknown target language \"t7\"; the model's: t8, t9");
    ted_model_free(model);
    remove_model_dir(&dir);
}

/* Marian's multi-target models: ">>s7<<" goes at the start of the source
 * and is given as "s7". */
Test(languages, a_target_code_in_the_source_is_spelled_without_its_marks)
{
    temp_dir dir = model_with("  languages: [\">>s6<<\", \">>s7<<\"]\n"
                              "  target_language_token: source\n  source_lang: en\n");
    static const char vocab[] = "<unk>\n<pad>\n<bos>\n<eos>\ns0\ns1\ns2\ns3\ns4\ns5\n>>s6<<\n"
                                ">>s7<<\n";
    write_file(&dir, "vocab.src", vocab, sizeof vocab - 1);
    ted_model *model = load(dir.path);
    const char *const *codes = NULL;
    cr_assert_eq(ted_model_languages(model, TED_SIDE_TARGET, &codes), 2);
    cr_assert_str_eq(codes[0], "s6");
    cr_assert_str_eq(codes[1], "s7");
    cr_assert_eq(ted_model_languages(model, TED_SIDE_SOURCE, &codes), 1);
    cr_assert_str_eq(codes[0], "en");
    ted_source s = prepared(model, "s0", "en", "s7");
    int ids[] = {11, 2, 4, 3};  /* >>s7<< BOS s0 EOS */
    cr_assert_eq(s.count, 4);
    cr_assert_arr_eq(s.ids, ids, sizeof ids);
    cr_assert_eq(s.prefix_count, 0);
    ted_source_free(&s);
    s = prepared(model, ">>s6<< s0", NULL, NULL);  /* optional: the text may name its own */
    int own[] = {2, 10, 4, 3};
    cr_assert_eq(s.count, 4);
    cr_assert_arr_eq(s.ids, own, sizeof own);
    ted_source_free(&s);
    const char *code = NULL;  /* the token's spelling names the language too */
    ted_error err = {0};
    cr_assert_eq(ted_model_find_language(model, TED_SIDE_TARGET, ">>s7<<", &code, &err), TED_OK,
                 "%s", err.message);
    cr_assert_str_eq(code, "s7");
    expect_refused(model, NULL, ">>s8<<",
                   "unknown target language \">>s8<<\"; the model's: s6, s7");
    ted_model_free(model);
    remove_model_dir(&dir);
}

Test(languages, a_bilingual_model_names_its_plain_codes)
{
    temp_dir dir = model_with("  source_lang: en\n  target_lang: fr\n");
    ted_model *model = load(dir.path);
    const char *const *codes = NULL;
    cr_assert_eq(ted_model_languages(model, TED_SIDE_SOURCE, &codes), 1);
    cr_assert_str_eq(codes[0], "en");
    cr_assert_eq(ted_model_languages(model, TED_SIDE_TARGET, NULL), 1);
    ted_source plain = prepared(model, "s0", NULL, NULL), named = prepared(model, "s0", "en", "fr");
    cr_assert_eq(plain.count, named.count);
    cr_assert_arr_eq(plain.ids, named.ids, sizeof(int) * (size_t)plain.count);
    cr_assert_eq(named.prefix_count, 0);
    ted_source_free(&plain);
    ted_source_free(&named);
    expect_refused(model, NULL, "de", "unknown target language \"de\"; the model's: fr");
    ted_model_free(model);
    remove_model_dir(&dir);
    model = load(TINY_DIR);
    cr_assert_eq(ted_model_languages(model, TED_SIDE_SOURCE, &codes), 0);
    cr_assert_null(codes);
    cr_assert_eq(ted_model_languages(model, (ted_side)7, &codes), 0);
    cr_assert_eq(ted_model_languages(NULL, TED_SIDE_TARGET, &codes), 0);
    ted_model_free(model);
}

Test(languages, a_code_that_is_no_token_of_its_vocabulary_is_refused)
{
    /* t8 is a target token, but a source code goes into the source */
    temp_dir dir = model_with("  languages: [s6, t8]\n  source_language_token: first\n");
    ted_model *model = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_model_load(dir.path, &model, &err), TED_ERR_VOCAB);
    cr_assert_str_eq(err.message,
                     "config.yaml: tokenizer.languages: \"t8\" is not a token of vocab.src");
    cr_assert_null(model);
    remove_model_dir(&dir);
}

/* The forced code is the first token of every hypothesis, scored by the
 * model, and no word of the text. */
Test(languages, translation_forces_the_code_and_leaves_it_out_of_the_text)
{
    temp_dir dir = model_with("  languages: [t8, t9]\n  target_language_token: forced\n");
    ted_model *model = load(dir.path);
    ted_translate_options o = ted_translate_default_options();
    o.languages.target = "t8";
    const char *sources[] = {"s0 s1 s2", ""};
    ted_translation out[2];
    ted_error err = {0};
    cr_assert_eq(ted_translate_n_best(model, sources, 2, &o, out, NULL, &err), TED_OK, "%s",
                 err.message);
    cr_assert_geq(out[0].hypothesis.length, 1);
    cr_assert_eq(out[0].hypothesis.ids[0], 12);
    cr_assert_leq(out[0].hypothesis.log_probs[0], 0.0f);
    cr_assert_null(strstr(out[0].text, "t8"), "%s", out[0].text);
    char *rest = ted_decode_target(model, out[0].hypothesis.ids + 1,
                                   out[0].hypothesis.length - 1);
    cr_assert_str_eq(out[0].text, rest);
    free(rest);
    cr_assert_str_eq(out[1].text, "");  /* blank: no decode, no code */
    cr_assert_eq(out[1].hypothesis.length, 0);
    ted_translations_free(out, 2);
    o.languages.target = NULL;
    cr_assert_eq(ted_translate_n_best(model, sources, 1, &o, out, NULL, &err), TED_ERR_INPUT);
    cr_assert(strstr(err.message, "no target language given"), "%s", err.message);
    ted_model_free(model);
    remove_model_dir(&dir);
}
