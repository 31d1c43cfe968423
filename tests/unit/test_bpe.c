/* Byte-level BPE (io/bpe.h): GPT-2's pattern and merges, bytes back from
 * their characters, invalid UTF-8 replaced as Python does, and what the
 * merges file and the text may not be. The expected pieces are those
 * transformers' BartTokenizer.tokenize gives with the same merges. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "io/bpe.h"

/* The merges, by rank: Ġt, he, Ġthe, ll, ell, hell, oo, ooo, Ã© */
static const char merges_text[] = "\xc4\xa0 t\nh e\n\xc4\xa0t he\nl l\ne ll\nh ell\no o\n"
                                  "oo o\n\xc3\x83 \xc2\xa9\n";

static ted_bpe bpe;

static void load_merges(void)
{
    ted_error err = {0};
    cr_assert_eq(ted_bpe_parse(merges_text, strlen(merges_text), "merges.txt", &bpe, &err),
                 TED_OK, "%s", err.message);
}

static void free_merges(void)
{
    ted_bpe_free(&bpe);
}

/* The pieces of `text`, joined by '|'. */
static char *pieces_of(const char *text, bool add_prefix_space)
{
    char *pieces = NULL;
    int count = 0;
    ted_error err = {0};
    cr_assert_eq(ted_bpe_encode(&bpe, text, strlen(text), add_prefix_space, &pieces, &count,
                                &err),
                 TED_OK, "%s", err.message);
    size_t total = 0;
    for (int i = 0; i < count; i++)
        total += strlen(pieces + total) + 1;
    char *joined = calloc(total + 1, 1);
    cr_assert_not_null(joined);
    memcpy(joined, pieces, total);
    for (size_t i = 0; total > 0 && i + 1 < total; i++)
        if (joined[i] == '\0')
            joined[i] = '|';
    free(pieces);
    return joined;
}

static void expect_pieces(const char *text, bool add_prefix_space, const char *expected)
{
    char *got = pieces_of(text, add_prefix_space);
    cr_assert_str_eq(got, expected, "pieces of \"%s\"", text);
    free(got);
}

TestSuite(bpe, .init = load_merges, .fini = free_merges);

Test(bpe, merges_apply_by_rank_each_over_the_whole_word)
{
    expect_pieces("hello the world", false,
                  "he|ll|o|\xc4\xa0the|\xc4\xa0|w|o|r|l|d");
    expect_pieces("the  hell\tooooo", false,
                  "t|he|\xc4\xa0|\xc4\xa0|he|ll|\xc4\x89|oo|ooo");
}

Test(bpe, the_pattern_splits_contractions_numbers_punctuation_and_white_space)
{
    expect_pieces("it's 12ab, \xc3\xa9!  ", false,
                  "i|t|'|s|\xc4\xa0|1|2|a|b|,|\xc4\xa0|\xc3\x83\xc2\xa9|!|\xc4\xa0|\xc4\xa0");
    expect_pieces(" x  ", false, "\xc4\xa0|x|\xc4\xa0|\xc4\xa0");
}

Test(bpe, every_byte_of_a_character_is_a_symbol)
{
    /* Hello, U+1F600, U+3000 (white space), U+4E2D */
    expect_pieces("Hello\xf0\x9f\x98\x80\xe3\x80\x80\xe4\xb8\xad", false,
                  "H|ell|o|\xc3\xb0|\xc5\x81|\xc4\xba|\xc4\xa2|\xc3\xa3|\xc4\xa2|\xc4\xa2|"
                  "\xc3\xa4|\xc2\xb8|\xc5\x83");
}

Test(bpe, add_prefix_space_puts_a_space_before_text_not_starting_with_one)
{
    expect_pieces("the", true, "\xc4\xa0the");
    expect_pieces(" the", true, "\xc4\xa0the");
    expect_pieces("\x1cthe", true, "\xc4\x9c|t|he");  /* U+001C: Python's isspace() */
    expect_pieces("", true, "");
}

Test(bpe, token_bytes_undo_the_byte_characters)
{
    char out[16];
    size_t n = ted_bpe_token_bytes("\xc4\xa0the\xc3\x83\xc2\xa9\xc4\x80", out);
    cr_assert_eq(n, 7);
    cr_assert_eq(memcmp(out, " the\xc3\xa9\0", 7), 0);
    n = ted_bpe_token_bytes("<s>\xe4\xb8\xad", out);  /* no byte characters: as it is */
    cr_assert_eq(n, 6);
    cr_assert_eq(memcmp(out, "<s>\xe4\xb8\xad", 6), 0);
}

static void expect_replaced(const char *bytes, size_t n, const char *expected)
{
    char *got = ted_utf8_replace_invalid(bytes, n);
    cr_assert_not_null(got);
    cr_assert_str_eq(got, expected);
    free(got);
}

/* Python's bytes.decode("utf-8", "replace") of each, encoded back */
Test(bpe, invalid_utf8_becomes_replacement_characters_as_python_makes_them)
{
#define FFFD "\xef\xbf\xbd"
    expect_replaced("\xe2\x82", 2, FFFD);
    expect_replaced("\xf0\x80", 2, FFFD FFFD);
    expect_replaced("\xed\xa0\x80", 3, FFFD FFFD FFFD);
    expect_replaced("a\xc3", 2, "a" FFFD);
    expect_replaced("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD);
    expect_replaced("\xe0\x80\xaf", 3, FFFD FFFD FFFD);
    expect_replaced("\xf0\x9f\x98", 3, FFFD);
    expect_replaced("\xf0\x9f\x98\x80\xc3\xa9", 6, "\xf0\x9f\x98\x80\xc3\xa9");
#undef FFFD
}

static void expect_merges_error(const char *text, const char *message)
{
    ted_bpe bad;
    ted_error err = {0};
    cr_assert_eq(ted_bpe_parse(text, strlen(text), "m.txt", &bad, &err), TED_ERR_VOCAB);
    cr_assert_str_eq(err.message, message);
}

Test(bpe, a_merges_file_is_pairs_each_given_once)
{
    expect_merges_error("a b\nab\n",
                        "m.txt:2: \"ab\" is no merge; expected two symbols and one space "
                        "between them");
    expect_merges_error("a b c\n",
                        "m.txt:1: \"a b c\" is no merge; expected two symbols and one space "
                        "between them");
    expect_merges_error(" b\n",
                        "m.txt:1: \" b\" is no merge; expected two symbols and one space "
                        "between them");
}

Test(bpe, text_and_words_past_their_bounds_are_refused)
{
    size_t n = (size_t)BPE_MAX_WORD_BYTES + 1;
    char *text = malloc(BPE_MAX_TEXT_BYTES + 2);
    cr_assert_not_null(text);
    memset(text, 'a', BPE_MAX_TEXT_BYTES + 1);
    text[0] = ' ';
    char *pieces = NULL;
    int count = 0;
    ted_error err = {0};
    cr_assert_eq(ted_bpe_encode(&bpe, text, n + 1, false, &pieces, &count, &err),
                 TED_ERR_INPUT);
    cr_assert_str_eq(err.message, "input byte offset 0: a word of 1026 bytes, more than the "
                                  "1024 the bpe tokenizer takes");
    cr_assert_null(pieces);
    cr_assert_eq(ted_bpe_encode(&bpe, text, BPE_MAX_TEXT_BYTES + 1, false, &pieces, &count,
                                &err),
                 TED_ERR_INPUT);
    cr_assert_str_eq(err.message, "65537 bytes, more than the 65536 the bpe tokenizer takes");
    /* a word at the bound merges: "oo" 512 times, then "ooo" where it can */
    memset(text, 'o', BPE_MAX_WORD_BYTES);
    cr_assert_eq(ted_bpe_encode(&bpe, text, BPE_MAX_WORD_BYTES, false, &pieces, &count, &err),
                 TED_OK, "%s", err.message);
    cr_assert_gt(count, 0);
    free(pieces);
    free(text);
}
