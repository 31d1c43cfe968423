/* Moses' punctuation normalization, rule by rule, with the expected text
 * worked out by hand from sacremoses' MosesPunctNormalizer; then the
 * tokenizer with tokenizer.normalize: moses. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "io/config.h"
#include "io/normalize.h"
#include "io/tokenizer.h"

static void expect_bytes(const char *language, const char *text, size_t length,
                         const char *expected, size_t expected_length)
{
    char *out = NULL;
    size_t out_length = 12345;
    ted_error err = {0};
    cr_assert_eq(ted_normalize_moses(text, length, language, &out, &out_length, &err), TED_OK,
                 "%s", err.message);
    cr_assert_eq(out_length, expected_length, "\"%s\" (%s): %zu bytes \"%s\", expected \"%s\"",
                 text, language ? language : "no language", out_length, out, expected);
    cr_assert(memcmp(out, expected, expected_length) == 0, "\"%s\" (%s): \"%s\", expected \"%s\"",
              text, language ? language : "no language", out, expected);
    cr_assert_eq(out[out_length], '\0');
    free(out);
}

static void expect(const char *language, const char *text, const char *expected)
{
    expect_bytes(language, text, strlen(text), expected, strlen(expected));
}

Test(normalize, carriage_returns_are_removed)
{
    expect("en", "a\rb\r\n", "ab");
}

Test(normalize, parentheses_get_outer_spaces_and_lose_inner_ones)
{
    expect("en", "f(x)y", "f (x) y");
    expect("en", "a ( b ) c", "a (b) c");
    expect("en", "(a) . (b) ! (c) , (d) x", "(a). (b)! (c), (d) x");
}

Test(normalize, runs_of_spaces_become_one_but_tabs_stay)
{
    expect("en", "a    b\t\tc \t d", "a b\t\tc \t d");
}

Test(normalize, space_between_a_digit_and_percent_goes)
{
    expect("en", "50 % x %", "50% x %");
    expect("en", "\xd9\xa5 %", "\xd9\xa5%");              /* Arabic-Indic 5 */
    expect("en", "\xef\xbc\x97 %", "\xef\xbc\x97%");      /* fullwidth 7 */
    expect("en", "\xc2\xb2 %", "\xc2\xb2 %");             /* superscript 2: not a decimal digit */
}

Test(normalize, space_before_colon_and_semicolon_goes)
{
    expect("en", "a : b ; c", "a: b; c");
}

Test(normalize, penn_treebank_quotes_become_plain)
{
    expect("en", "``a''", "\" a \"");
    expect("en", "x`y", "x'y");
}

Test(normalize, curly_and_low_quotes_become_straight)
{
    expect("en", "\xe2\x80\x9e" "a" "\xe2\x80\x9c" " " "\xe2\x80\x9c" "b" "\xe2\x80\x9d",
           "\"a\" \"b\"");
    expect("en", "it\xe2\x80\x99s \xe2\x80\x98q\xe2\x80\x99 \xe2\x80\x9aw\xc2\xb4",
           "it's 'q' 'w'");
    expect("en", "\xe2\x80\x99\xe2\x80\x99", "\"");
}

Test(normalize, dashes_and_the_ellipsis_become_ascii)
{
    expect("en", "1\xe2\x80\x93" "2", "1-2");
    expect("en", "a\xe2\x80\x94" "b", "a - b");
    expect("en", "a \xe2\x80\x94 b", "a - b");
    expect("en", "wait\xe2\x80\xa6", "wait...");
}

Test(normalize, guillemets_and_their_no_break_spaces_become_quotes)
{
    expect("fr", "\xc2\xab\xc2\xa0oui\xc2\xa0\xc2\xbb", "\"oui\"");
    expect("fr", "x\xc2\xa0\xc2\xab\xc2\xa0y\xc2\xa0\xc2\xbb\xc2\xa0z", "x\"y\"z");
    expect("fr", "\xc2\xabnon\xc2\xbb", "\"non\"");
}

Test(normalize, no_break_spaces_of_french_typography)
{
    expect("fr", "5\xc2\xa0%", "5%");
    expect("fr", "n\xc2\xba\xc2\xa0" "3", "n\xc2\xba 3");
    expect("fr", "a\xc2\xa0: b\xc2\xa0? c\xc2\xa0! d\xc2\xa0;", "a: b? c! d;");
    expect("fr", "20\xc2\xa0\xc2\xba" "C 5\xc2\xa0" "cm", "20 \xc2\xba" "C 5 cm");
    expect("fr", "a,\xc2\xa0" "b", "a, b");
    expect("fr", "a\xc2\xa0" "b", "a\xc2\xa0" "b");
}

Test(normalize, english_moves_commas_and_stops_inside_quotes)
{
    expect("en", "he said \"yes\". \"no\",.", "he said \"yes.\" \"no,.\"");
    expect("en", "a,\"", "a,\"");
    expect("fr", "he said \"yes\".", "he said \"yes\".");
}

Test(normalize, german_spanish_french_move_commas_and_stops_outside_quotes)
{
    for (const char *const *l = (const char *const[]){"de", "es", "fr", NULL}; *l; l++) {
        expect(*l, "\"a,\" b", "\"a\", b");
        expect(*l, "\"a.\" b", "\"a\". b");
        expect(*l, "\"a...\"x", "\"a\"...x");
        expect(*l, "\"a.\"<b>", "\"a.\"<b>");   /* '<' right after the quote */
        expect(*l, "\"a.\" <b>", "\"a\". <b>");
        expect(*l, "\"a.\"", "\"a.\"");       /* nothing after the quote */
    }
    expect("cs", "\"a,\" \"b.\" c", "\"a,\" \"b.\" c");
    expect(NULL, "\"a.\" b", "\"a.\" b");
}

Test(normalize, no_break_space_between_digits_by_language)
{
    /* matches do not overlap: "1 2" is taken, so " 3" has no digit before it */
    const char *text = "1\xc2\xa0" "2\xc2\xa0" "3 \xd9\xa3\xc2\xa0\xd9\xa4 1\xc2\xa0x";
    for (const char *const *l = (const char *const[]){"de", "es", "cs", "cz", "fr", NULL}; *l;
         l++)
        expect(*l, text, "1,2\xc2\xa0" "3 \xd9\xa3,\xd9\xa4 1\xc2\xa0x");
    expect("en", text, "1.2\xc2\xa0" "3 \xd9\xa3.\xd9\xa4 1\xc2\xa0x");
    expect("ro", text, "1.2\xc2\xa0" "3 \xd9\xa3.\xd9\xa4 1\xc2\xa0x");
    expect(NULL, text, "1.2\xc2\xa0" "3 \xd9\xa3.\xd9\xa4 1\xc2\xa0x");
    expect("FR", text, "1.2\xc2\xa0" "3 \xd9\xa3.\xd9\xa4 1\xc2\xa0x");
}

Test(normalize, unicode_white_space_is_stripped_at_both_ends)
{
    expect("en", "\xe3\x80\x80\t a b\n\xe2\x80\xa8\xc2\x85", "a b");
    expect("en", "\xe2\x80\x8b" "a", "\xe2\x80\x8b" "a");  /* zero-width space is not white space */
    expect("en", " \t\n", "");
    expect("en", "", "");
}

Test(normalize, nul_and_invalid_utf8_bytes_are_kept)
{
    expect_bytes("en", "a\0(b", 4, "a\0 (b", 5);
    expect("en", "\xff(\xc3", "\xff (\xc3");
    expect("en", "a\xc0\xa0", "a\xc0\xa0");                 /* an overlong space is not one */
    expect("en", "1\xc2\xa0\xe2\x80" "2", "1\xc2\xa0\xe2\x80" "2");
}

Test(normalize, a_long_text_that_grows)
{
    size_t pairs = 50000;
    char *text = malloc(2 * pairs + 1), *expected = malloc(3 * pairs + 1);
    cr_assert(text && expected);
    for (size_t i = 0; i < pairs; i++) {
        memcpy(text + 2 * i, "(x", 2);
        memcpy(expected + 3 * i, " (x", 3);
    }
    text[2 * pairs] = '\0';
    expected[3 * pairs] = '\0';
    expect("en", text, expected + 1);
    free(text);
    free(expected);
}

/* No match of (\.+)"(\s*[^<]) starts in a run of full stops that is not
 * followed by '"' and a character other than '<': the run is passed over
 * once, not once per position (which would not finish in time). */
Test(normalize, a_million_full_stops_take_linear_time, .timeout = 10)
{
    size_t stops = 1000000;
    char *text = malloc(stops + 3);
    cr_assert(text);
    memset(text, '.', stops);
    memcpy(text + stops, "\"<", 3);
    char *out = NULL;
    size_t n = 0;
    ted_error err = {0};
    cr_assert_eq(ted_normalize_moses(text, stops + 2, "fr", &out, &n, &err), TED_OK, "%s",
                 err.message);
    cr_assert(n == stops + 2 && memcmp(out, text, n) == 0, "the text must be unchanged");
    text[stops + 1] = 'x';
    free(out);
    cr_assert_eq(ted_normalize_moses(text, stops + 2, "fr", &out, &n, &err), TED_OK);
    cr_assert(n == stops + 2 && out[0] == '"' && out[1] == '.' && out[stops] == '.' &&
              out[stops + 1] == 'x', "the quote must move before the full stops");
    free(out);
    free(text);
}

Test(normalize, missing_arguments_are_refused)
{
    char *out = NULL;
    size_t n = 0;
    ted_error err = {0};
    cr_assert_eq(ted_normalize_moses(NULL, 3, "en", &out, &n, &err), TED_ERR_ARGUMENT);
    cr_assert(strstr(err.message, "normalize"), "%s", err.message);
    cr_assert_eq(ted_normalize_moses("a", 1, "en", NULL, &n, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_normalize_moses(NULL, 0, "en", &out, &n, &err), TED_OK, "%s", err.message);
    cr_assert_str_eq(out, "");
    free(out);
}

/* ---- the tokenizer with tokenizer.normalize: moses ---- */

/* ids by line: <unk> 0, <pad> 1, <s> 2, </s> 3, (hello) 4, "world" 5, ( 6,
 * a 7, " " 8, "x..." 9 */
static const char vocab_text[] = "<unk>\n<pad>\n<s>\n</s>\n(hello)\n\"world\"\n(\na\n \n\"x...\"\n";

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

static ted_config moses_config(ted_tokenizer_kind kind, bool lowercase)
{
    ted_config config;
    memset(&config, 0, sizeof config);
    config.tokenizer = kind;
    config.lowercase = lowercase;
    config.normalize = TED_NORMALIZE_MOSES;
    config.unk_id = 0;
    config.pad_id = 1;
    config.bos_id = 2;
    config.eos_id = 3;
    return config;
}

static ted_status tokenize(const ted_config *config, const char *text, size_t length, int **ids,
                           int *count, ted_error *err)
{
    ted_tokenizer t = {config, &vocab, NULL, true, NULL};
    ted_token_ids out = {(int *)config, -1, -1};  /* each written, whatever the outcome */
    ted_status status = ted_tokenize(&t, text, length, &out, err);
    *ids = out.ids;
    *count = out.count;
    return status;
}

static void expect_ids(const ted_config *config, const char *text, const int *expected, int n)
{
    int *ids, count;
    ted_error err = {0};
    cr_assert_eq(tokenize(config, text, strlen(text), &ids, &count, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(count, n, "\"%s\": %d ids, expected %d", text, count, n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(ids[i], expected[i], "\"%s\": id %d is %d, expected %d", text, i, ids[i],
                     expected[i]);
    free(ids);
}

TestSuite(normalized_tokenizer, .init = load_vocab, .fini = free_vocab);

Test(normalized_tokenizer, text_is_normalized_before_lowercasing_and_splitting)
{
    ted_config c = moses_config(TED_TOKENIZER_WHITESPACE, true);
    expect_ids(&c, "  ( HELLO )  \xe2\x80\x9cworld\xe2\x80\x9d \xe2\x80\x9cX\xe2\x80\xa6\xe2\x80\x9d ",
               (int[]){4, 5, 9}, 3);
    c.normalize = TED_NORMALIZE_NONE;
    expect_ids(&c, "( hello )", (int[]){6, 0, 0}, 3);
}

Test(normalized_tokenizer, characters_added_by_normalizing_get_ids)
{
    ted_config c = moses_config(TED_TOKENIZER_CHAR, false);
    expect_ids(&c, "(a(a(a", (int[]){6, 7, 8, 6, 7, 8, 6, 7}, 8);
}

Test(normalized_tokenizer, invalid_text_is_refused_at_its_own_offset)
{
    ted_config c = moses_config(TED_TOKENIZER_WHITESPACE, false);
    const char *cases[][2] = {
        {"(a) \xe2\x82", "input byte offset 4: invalid UTF-8 (truncated sequence)"},
        {"((\0", "input byte offset 2: NUL byte"},
    };
    size_t lengths[] = {6, 3};
    for (int k = 0; k < 2; k++) {
        int *ids, count;
        ted_error err = {0};
        cr_assert_eq(tokenize(&c, cases[k][0], lengths[k], &ids, &count, &err), TED_ERR_INPUT);
        cr_assert_str_eq(err.message, cases[k][1]);
        cr_assert_null(ids);
    }
}
