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

/* ---- ISO 639 codes and the languages a model was trained for ------------- */

/* The tiny model naming four NLLB codes on both sides (source first, target
 * forced): s4..s7 and t6..t9 renamed, ids 8..11 and 10..13; `top` is added
 * at the end of config.yaml (the top-level languages). */
static temp_dir nllb_model(const char *top)
{
    temp_dir dir = model_with("  languages: [eng_Latn, fra_Latn, zho_Hans, zho_Hant]\n"
                              "  source_language_token: first\n"
                              "  target_language_token: forced\n");
    static const char src[] = "<unk>\n<pad>\n<bos>\n<eos>\ns0\ns1\ns2\ns3\neng_Latn\nfra_Latn\n"
                              "zho_Hans\nzho_Hant\n";
    static const char tgt[] = "<unk>\n<pad>\n<bos>\n<eos>\nt0\nt1\nt2\nt3\nt4\nt5\neng_Latn\n"
                              "fra_Latn\nzho_Hans\nzho_Hant\n";
    write_file(&dir, "vocab.src", src, sizeof src - 1);
    write_file(&dir, "vocab.tgt", tgt, sizeof tgt - 1);
    char path[160];
    snprintf(path, sizeof path, "%s/config.yaml", dir.path);
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    fputs(top, f);
    cr_assert_eq(fclose(f), 0);
    return dir;
}

static void expect_found(const ted_model *model, ted_side side, const char *given,
                         const char *code)
{
    const char *found = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_model_find_language(model, side, given, &found, &err), TED_OK,
                 "%s: %s", given, err.message);
    cr_assert_str_eq(found, code, "%s", given);
}

static void expect_not_found(const ted_model *model, ted_side side, const char *given,
                             const char *message)
{
    const char *found = "unchanged";
    ted_error err = {0};
    cr_assert_eq(ted_model_find_language(model, side, given, &found, &err), TED_ERR_INPUT,
                 "%s", given);
    cr_assert_null(found);
    cr_assert_str_eq(err.message, message);
}

/* ISO 639-1, 639-3 and 639-2/B codes of French (ISO 639-2's table) name
 * fra_Latn; Chinese is two codes, told apart by the script. */
Test(languages, iso_codes_name_the_models_codes)
{
    temp_dir dir = nllb_model("");
    ted_model *model = load(dir.path);
    const char *given[] = {"fra_Latn", "fr", "fra", "fre", "FR", "fra-Latn", "fr_FR", "__fr__"};
    for (size_t i = 0; i < sizeof given / sizeof *given; i++)
        expect_found(model, TED_SIDE_TARGET, given[i], "fra_Latn");
    expect_found(model, TED_SIDE_SOURCE, "en", "eng_Latn");
    expect_found(model, TED_SIDE_TARGET, "zh-Hant", "zho_Hant");
    expect_found(model, TED_SIDE_TARGET, "chi_hans", "zho_Hans");
    expect_not_found(model, TED_SIDE_TARGET, "zh",
                     "target language \"zh\" is ambiguous: it may be zho_Hans, zho_Hant; give one");
    expect_not_found(model, TED_SIDE_SOURCE, "frn",
                     "unknown source language \"frn\" (nearest: fra_Latn); the model's: "
                     "eng_Latn, fra_Latn, zho_Hans, zho_Hant");
    expect_not_found(model, TED_SIDE_SOURCE, "de",
                     "unknown source language \"de\"; the model's: eng_Latn, fra_Latn, "
                     "zho_Hans, zho_Hant");
    /* what ted_prepare_source puts in: the same tokens as the model's own codes */
    ted_source a = prepared(model, "s0", "en", "fr"), b = prepared(model, "s0", "eng_Latn",
                                                                   "fra_Latn");
    cr_assert_eq(a.count, b.count);
    cr_assert_arr_eq(a.ids, b.ids, (size_t)a.count * sizeof *a.ids);
    cr_assert_eq(a.ids[0], 8);
    cr_assert_eq(a.prefix_ids[0], 11);
    ted_source_free(&a);
    ted_source_free(&b);
    ted_model_free(model);
    remove_model_dir(&dir);
}

Test(languages, iso_codes_and_names_of_language_codes)
{
    static const struct {
        const char *code, *iso, *name;
    } cases[] = {
        {"eng_Latn", "en", "English"},  {"__fr__", "fr", "French"},   {">>deu<<", "de", "German"},
        {"en_XX", "en", "English"},     {"arb_Arab", "ar", "Arabic"}, {"ger", "de", "German"},
        {"yue_Hant", "yue", "Yue Chinese"}, {"zho_Hant", "zh", "Chinese"},
        {"ace_Arab", "ace", "Achinese"}, {"xx_Yyyy", "xx", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char iso[TED_LANGUAGE_CODE_SIZE];
        cr_assert(ted_language_iso(cases[i].code, iso, sizeof iso), "%s", cases[i].code);
        cr_assert_str_eq(iso, cases[i].iso, "%s", cases[i].code);
        const char *name = ted_language_name(iso);
        if (cases[i].name)
            cr_assert_str_eq(name, cases[i].name, "%s", cases[i].code);
        else
            cr_assert_null(name, "%s", cases[i].code);
    }
    char small[2];
    cr_assert_not(ted_language_iso("eng_Latn", small, sizeof small));
    cr_assert_not(ted_language_iso("_Latn", small, sizeof small));
}

/* The top-level languages: English <-> French, and Simplified Chinese
 * alone (a code with no other plain code translates nothing). */
Test(languages, only_the_directions_the_config_names_are_translated)
{
    temp_dir dir = nllb_model("languages: [eng_Latn > fra_Latn, fra_Latn > eng_Latn, zho_Hans]\n");
    ted_model *model = load(dir.path);
    const char *const *codes;
    cr_assert_eq(ted_model_languages(model, TED_SIDE_SOURCE, &codes), 3);
    cr_assert_str_eq(codes[2], "zho_Hans");
    cr_assert_eq(ted_model_languages(model, TED_SIDE_TARGET, &codes), 3);
    cr_assert(ted_model_translates(model, "eng_Latn", "fra_Latn"));
    cr_assert(ted_model_translates(model, "fr", "en"));
    cr_assert_not(ted_model_translates(model, "eng_Latn", "zho_Hans"));
    cr_assert_not(ted_model_translates(model, "zho_Hans", "fra_Latn"));
    cr_assert_not(ted_model_translates(model, "eng_Latn", "zho_Hant"));
    cr_assert_not(ted_model_translates(model, "eng_Latn", "eng_Latn"));
    expect_refused(model, "eng_Latn", "zho_Hans",
                   "the model does not translate eng_Latn into zho_Hans; from eng_Latn it "
                   "translates into fra_Latn");
    expect_refused(model, "eng_Latn", "zh-Hant",
                   "target language \"zh-Hant\" (zho_Hant): the model was not trained to "
                   "translate into it; it translates into eng_Latn, fra_Latn, zho_Hans");
    expect_refused(model, "zho_Hant", "eng_Latn",
                   "source language \"zho_Hant\": the model was not trained to translate from "
                   "it; it translates from eng_Latn, fra_Latn, zho_Hans");
    expect_refused(model, "fra_Latn", NULL,
                   "no target language given, and the model translates into 3 languages: "
                   "eng_Latn, fra_Latn, zho_Hans");
    ted_source s = prepared(model, "s0", "fr", "en");
    cr_assert_eq(s.ids[0], 9);
    cr_assert_eq(s.prefix_ids[0], 10);
    ted_source_free(&s);
    ted_model_free(model);
    remove_model_dir(&dir);
}
