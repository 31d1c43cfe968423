/* Text -> ids -> text with both tokenizers, lowercasing, unknown words and
 * every kind of invalid UTF-8 the tokenizer must refuse. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "io/config.h"
#include "io/tokenizer.h"

/* ids by line: <unk> 0, <pad> 1, <s> 2, </s> 3, hello 4, world 5, été 6,
 * a 7, " " 8, b 9, é 10, × 11, ß 12, þ 13, \t 14, Ġ 15 */
static const char vocab_text[] = "<unk>\n<pad>\n<s>\n</s>\nhello\nworld\n\xc3\xa9t\xc3\xa9\n"
                                 "a\n \nb\n\xc3\xa9\n\xc3\x97\n\xc3\x9f\n\xc3\xbe\n\t\n\xc4\xa0\n";

static ted_vocab vocab;

static void load_vocab(void)
{
    ted_error err = {0};
    cr_assert_eq(ted_vocab_parse(vocab_text, strlen(vocab_text), "vocab", &vocab, &err), TED_OK,
                 "%s", err.message);
}

static void free_vocab(void)
{
    ted_vocab_free(&vocab);
}

static ted_config make_config(ted_tokenizer_kind kind, bool lowercase, bool wrap)
{
    ted_config config;
    memset(&config, 0, sizeof config);
    config.tokenizer = kind;
    config.lowercase = lowercase;
    config.source_bos = config.source_eos = wrap;
    config.unk_id = 0;
    config.pad_id = 1;
    config.bos_id = 2;
    config.eos_id = 3;
    return config;
}

/* The source side's tokenizer of `config` over the test vocabulary:
 * source_bos and source_eos apply. */
static ted_tokenizer tokenizer_of(const ted_config *config)
{
    return (ted_tokenizer){config, &vocab, NULL, true, NULL};
}

/* Tokenizes `text` and compares with the `n` ids of `expected`. */
static void expect_ids(const ted_config *config, const char *text, const int *expected, int n,
                       int expected_unknown)
{
    ted_tokenizer t = tokenizer_of(config);
    ted_token_ids out = {NULL, -1, -1};
    ted_error err = {0};
    cr_assert_eq(ted_tokenize(&t, text, strlen(text), &out, &err), TED_OK, "%s", err.message);
    cr_assert_eq(out.count, n, "\"%s\": %d ids, expected %d", text, out.count, n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(out.ids[i], expected[i], "\"%s\": id %d is %d, expected %d", text, i,
                     out.ids[i], expected[i]);
    cr_assert_eq(out.unknown, expected_unknown, "\"%s\": %d unknown", text, out.unknown);
    free(out.ids);
}

static void expect_input_error(const char *text, size_t length, const char *message)
{
    ted_config config = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    ted_tokenizer t = tokenizer_of(&config);
    ted_token_ids out = {(int *)&config, -1, -1};
    ted_error err = {0};
    cr_assert_eq(ted_tokenize(&t, text, length, &out, &err), TED_ERR_INPUT);
    cr_assert_str_eq(err.message, message);
    cr_assert_null(out.ids);
    cr_assert_eq(out.count, 0);
    cr_assert_eq(out.unknown, 0);
}

TestSuite(tokenizer, .init = load_vocab, .fini = free_vocab);

Test(tokenizer, words_are_wrapped_in_bos_and_eos)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    expect_ids(&c, "hello world", (int[]){2, 4, 5, 3}, 4, 0);
}

Test(tokenizer, wrapping_can_be_turned_off)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, false);
    expect_ids(&c, "hello world", (int[]){4, 5}, 2, 0);
}

Test(tokenizer, the_target_side_is_never_wrapped)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    ted_tokenizer target = {&c, &vocab, NULL, false, NULL};
    ted_token_ids out;
    ted_error err = {0};
    cr_assert_eq(ted_tokenize(&target, "hello world", 11, &out, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(out.count, 2);
    cr_assert_eq(out.ids[0], 4);
    cr_assert_eq(out.ids[1], 5);
    free(out.ids);
}

Test(tokenizer, every_ascii_space_separates_words)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, false);
    expect_ids(&c, " \t hello\r\nworld\va\fb \n", (int[]){4, 5, 7, 9}, 4, 0);
}

Test(tokenizer, unknown_words_map_to_unk_and_are_counted)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    expect_ids(&c, "hello there big world", (int[]){2, 4, 0, 0, 5, 3}, 6, 2);
    /* without lowercasing, case matters */
    expect_ids(&c, "Hello", (int[]){2, 0, 3}, 3, 1);
}

Test(tokenizer, empty_text_is_only_the_wrapping)
{
    ted_config wrapped = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    expect_ids(&wrapped, "", (int[]){2, 3}, 2, 0);
    expect_ids(&wrapped, " \t\r\n ", (int[]){2, 3}, 2, 0);
    ted_config bare = make_config(TED_TOKENIZER_WHITESPACE, false, false);
    ted_tokenizer t = tokenizer_of(&bare);
    ted_token_ids out = {NULL, -1, -1};
    ted_error err = {0};
    cr_assert_eq(ted_tokenize(&t, NULL, 0, &out, &err), TED_OK);
    cr_assert_eq(out.count, 0);
    free(out.ids);
}

Test(tokenizer, lowercasing_covers_ascii_and_latin1_capitals)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, true, false);
    /* HELLO, WoRLD, ÉTÉ (C3 89 T C3 89) */
    expect_ids(&c, "HELLO WoRLD \xc3\x89T\xc3\x89", (int[]){4, 5, 6}, 3, 0);
    /* Þ U+00DE is the last capital: -> þ */
    expect_ids(&c, "\xc3\x9e", (int[]){13}, 1, 0);
    /* × U+00D7 is a sign, not a letter, and ß U+00DF has no capital here */
    expect_ids(&c, "\xc3\x97 \xc3\x9f", (int[]){11, 12}, 2, 0);
}

Test(tokenizer, lowercasing_leaves_other_characters_alone)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, true, false);
    /* Ā U+0100 (C4 80) plus 0x20 would be Ġ U+0120, which is in the vocab;
     * the Latin-1 rule must not reach it */
    expect_ids(&c, "\xc4\x80 \xe2\x82\xac", (int[]){0, 0}, 2, 2);
}

Test(tokenizer, lowercasing_does_not_change_the_callers_text)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, true, false);
    ted_tokenizer t = tokenizer_of(&c);
    char text[] = "HELLO";
    ted_token_ids out;
    ted_error err = {0};
    cr_assert_eq(ted_tokenize(&t, text, 5, &out, &err), TED_OK);
    cr_assert_str_eq(text, "HELLO");
    cr_assert_eq(out.ids[0], 4);
    free(out.ids);
}

Test(tokenizer, char_tokenizer_keeps_spaces_and_drops_line_ends)
{
    ted_config c = make_config(TED_TOKENIZER_CHAR, false, true);
    expect_ids(&c, "a b\r\n\xc3\xa9\tz", (int[]){2, 7, 8, 9, 10, 14, 0, 3}, 8, 1);
}

Test(tokenizer, char_tokenizer_lowercases)
{
    ted_config c = make_config(TED_TOKENIZER_CHAR, true, false);
    expect_ids(&c, "A\xc3\x89", (int[]){7, 10}, 2, 0);
}

Test(tokenizer, four_byte_characters_are_one_token)
{
    ted_config c = make_config(TED_TOKENIZER_CHAR, false, false);
    /* U+1F600 and U+10FFFF, both unknown */
    expect_ids(&c, "\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", (int[]){0, 0}, 2, 2);
}

Test(tokenizer, invalid_utf8_is_refused_with_its_offset)
{
    expect_input_error("ab\xc0\xaf", 4, "input byte offset 2: invalid UTF-8 (overlong encoding)");
    expect_input_error("\xe0\x80\xaf", 3, "input byte offset 0: invalid UTF-8 (overlong encoding)");
    expect_input_error("x \xf0\x8f\xbf\xbf", 6,
                       "input byte offset 2: invalid UTF-8 (overlong encoding)");
    expect_input_error("a\xed\xa0\x80", 4, "input byte offset 1: invalid UTF-8 (UTF-16 surrogate)");
    expect_input_error("hello \xe2\x82", 8,
                       "input byte offset 6: invalid UTF-8 (truncated sequence)");
    expect_input_error("\xe2\x82z", 3, "input byte offset 0: invalid UTF-8 (truncated sequence)");
    expect_input_error("\xf4\x90\x80\x80", 4,
                       "input byte offset 0: invalid UTF-8 (code point beyond U+10FFFF)");
    expect_input_error("\xf5\x80\x80\x80", 4,
                       "input byte offset 0: invalid UTF-8 (code point beyond U+10FFFF)");
    expect_input_error("a\x80", 2,
                       "input byte offset 1: invalid UTF-8 (unexpected continuation byte)");
    expect_input_error("\xff", 1,
                       "input byte offset 0: invalid UTF-8 (code point beyond U+10FFFF)");
}

Test(tokenizer, nul_bytes_are_refused)
{
    expect_input_error("hello\0world", 11, "input byte offset 5: NUL byte");
}

Test(tokenizer, a_hundred_thousand_words_on_one_line)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    int words = 100000;
    char *text = malloc((size_t)words * 6 + 1);
    cr_assert_not_null(text);
    size_t length = 0;
    for (int i = 0; i < words; i++) {
        const char *word = i % 3 == 0 ? "hello " : i % 3 == 1 ? "world " : "zzzzz ";
        memcpy(text + length, word, 6);
        length += 6;
    }
    ted_tokenizer t = tokenizer_of(&c);
    ted_token_ids out;
    ted_error err = {0};
    cr_assert_eq(ted_tokenize(&t, text, length, &out, &err), TED_OK);
    int *ids = out.ids;
    cr_assert_eq(out.count, words + 2);
    cr_assert_eq(out.unknown, 33333);
    cr_assert_eq(ids[0], 2);
    cr_assert_eq(ids[1], 4);
    cr_assert_eq(ids[2], 5);
    cr_assert_eq(ids[3], 0);
    cr_assert_eq(ids[words], 4);  /* word 99999: 99999 % 3 == 0 */
    cr_assert_eq(ids[words + 1], 3);
    free(ids);
    free(text);
}

Test(tokenizer, missing_arguments_are_refused)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    ted_tokenizer t = tokenizer_of(&c);
    ted_tokenizer no_config = {NULL, &vocab, NULL, true, NULL};
    ted_tokenizer no_vocab = {&c, NULL, NULL, true, NULL};
    ted_token_ids out;
    ted_error err = {0};
    cr_assert_eq(ted_tokenize(&t, NULL, 3, &out, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_tokenize(NULL, "a", 1, &out, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_tokenize(&no_config, "a", 1, &out, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_tokenize(&no_vocab, "a", 1, &out, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_tokenize(&t, "a", 1, NULL, &err), TED_ERR_ARGUMENT);
}

static void expect_text(const ted_config *config, const int *ids, int count, const char *expected)
{
    char *text = ted_detokenize(config, &vocab, NULL, ids, count);
    cr_assert_not_null(text);
    cr_assert_str_eq(text, expected);
    free(text);
}

Test(tokenizer, detokenize_joins_words_with_spaces)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    expect_text(&c, (int[]){4, 5, 6}, 3, "hello world \xc3\xa9t\xc3\xa9");
}

Test(tokenizer, detokenize_stops_at_eos_and_skips_bos_and_pad)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    expect_text(&c, (int[]){2, 4, 1, 5, 3, 7, 9}, 7, "hello world");
    expect_text(&c, (int[]){3, 4}, 2, "");
    /* unk is a real token of the output */
    expect_text(&c, (int[]){0, 4}, 2, "<unk> hello");
}

Test(tokenizer, detokenize_skips_ids_out_of_range)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    expect_text(&c, (int[]){-1, 4, 16, 2147483647, 5, -2147483647 - 1}, 6, "hello world");
}

Test(tokenizer, detokenize_of_nothing_is_empty)
{
    ted_config c = make_config(TED_TOKENIZER_WHITESPACE, false, true);
    expect_text(&c, NULL, 0, "");
    expect_text(&c, (int[]){4}, 0, "");
}

Test(tokenizer, detokenize_char_tokens_join_with_nothing)
{
    ted_config c = make_config(TED_TOKENIZER_CHAR, false, true);
    expect_text(&c, (int[]){2, 7, 8, 9, 10, 3, 7}, 7, "a b\xc3\xa9");
}

Test(tokenizer, tokenize_then_detokenize_round_trips)
{
    ted_config c = make_config(TED_TOKENIZER_CHAR, false, true);
    ted_tokenizer t = tokenizer_of(&c);
    const char *text = "a b\xc3\xa9";
    ted_token_ids out;
    ted_error err = {0};
    cr_assert_eq(ted_tokenize(&t, text, strlen(text), &out, &err), TED_OK);
    expect_text(&c, out.ids, out.count, text);
    free(out.ids);
}
