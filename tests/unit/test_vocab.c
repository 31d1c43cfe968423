/* Vocabulary files: ids by line, lookups both ways, and every malformed
 * file refused with the line at fault and nothing leaked. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/config.h"
#include "io/vocab.h"

#define NAME "vocab.txt"

static ted_vocab parse_ok(const char *text, size_t length)
{
    ted_vocab vocab;
    ted_error err = {0};
    cr_assert_eq(ted_vocab_parse(text, length, NAME, &vocab, &err), TED_OK, "%s", err.message);
    return vocab;
}

/* Parsing must fail with TED_ERR_VOCAB and `message`, leaving the struct
 * empty (ASan reports anything the failure leaked). */
static void expect_error(const char *text, size_t length, const char *message)
{
    ted_vocab vocab;
    ted_error err = {0};
    cr_assert_eq(ted_vocab_parse(text, length, NAME, &vocab, &err), TED_ERR_VOCAB, "%s",
                 err.message);
    cr_assert_eq(err.status, TED_ERR_VOCAB);
    cr_assert_str_eq(err.message, message);
    cr_assert_null(vocab.tokens);
    cr_assert_null(vocab.slots);
    cr_assert_eq(vocab.size, 0);
    ted_vocab_free(&vocab);
}

static int lookup(const ted_vocab *vocab, const char *token)
{
    return ted_vocab_lookup(vocab, token, strlen(token));
}

Test(vocab, line_index_is_the_id)
{
    const char *text = "<unk>\n<pad>\nhello\nworld\n";
    ted_vocab v = parse_ok(text, strlen(text));
    cr_assert_eq(v.size, 4);
    cr_assert_str_eq(ted_vocab_token(&v, 0), "<unk>");
    cr_assert_str_eq(ted_vocab_token(&v, 3), "world");
    cr_assert_eq(lookup(&v, "<unk>"), 0);
    cr_assert_eq(lookup(&v, "<pad>"), 1);
    cr_assert_eq(lookup(&v, "hello"), 2);
    cr_assert_eq(lookup(&v, "world"), 3);
    ted_vocab_free(&v);
}

Test(vocab, last_line_needs_no_newline)
{
    const char *text = "a\nb";
    ted_vocab v = parse_ok(text, strlen(text));
    cr_assert_eq(v.size, 2);
    cr_assert_str_eq(ted_vocab_token(&v, 1), "b");
    cr_assert_eq(lookup(&v, "b"), 1);
    ted_vocab_free(&v);
}

Test(vocab, crlf_line_ends_are_stripped)
{
    const char *text = "a\r\nb c\r\nd\r";
    ted_vocab v = parse_ok(text, strlen(text));
    cr_assert_eq(v.size, 3);
    cr_assert_str_eq(ted_vocab_token(&v, 0), "a");
    cr_assert_str_eq(ted_vocab_token(&v, 1), "b c");
    cr_assert_str_eq(ted_vocab_token(&v, 2), "d");
    cr_assert_eq(lookup(&v, "d"), 2);
    cr_assert_eq(lookup(&v, "d\r"), -1);
    ted_vocab_free(&v);
}

Test(vocab, spaces_and_utf8_are_ordinary_token_bytes)
{
    const char *text = " \n\xc3\xa9t\xc3\xa9\n\t\n";
    ted_vocab v = parse_ok(text, strlen(text));
    cr_assert_eq(v.size, 3);
    cr_assert_eq(lookup(&v, " "), 0);
    cr_assert_eq(lookup(&v, "\xc3\xa9t\xc3\xa9"), 1);
    cr_assert_eq(lookup(&v, "\t"), 2);
    ted_vocab_free(&v);
}

Test(vocab, lookup_compares_exact_lengths)
{
    const char *text = "ab\nabc\na\n";
    ted_vocab v = parse_ok(text, strlen(text));
    cr_assert_eq(ted_vocab_lookup(&v, "abcd", 1), 2);
    cr_assert_eq(ted_vocab_lookup(&v, "abcd", 2), 0);
    cr_assert_eq(ted_vocab_lookup(&v, "abcd", 3), 1);
    cr_assert_eq(ted_vocab_lookup(&v, "abcd", 4), -1);
    cr_assert_eq(ted_vocab_lookup(&v, "abcd", 0), -1);
    /* a NUL inside the query never matches a token that stops there */
    cr_assert_eq(ted_vocab_lookup(&v, "ab\0c", 4), -1);
    cr_assert_eq(ted_vocab_lookup(&v, "a\0", 2), -1);
    ted_vocab_free(&v);
}

Test(vocab, ids_out_of_range_have_no_token)
{
    const char *text = "a\nb\n";
    ted_vocab v = parse_ok(text, strlen(text));
    cr_assert_null(ted_vocab_token(&v, -1));
    cr_assert_null(ted_vocab_token(&v, 2));
    cr_assert_null(ted_vocab_token(&v, 2147483647));
    ted_vocab_free(&v);
}

Test(vocab, a_hundred_thousand_tokens_all_found)
{
    int count = 100000;
    char *text = malloc((size_t)count * 8);
    cr_assert_not_null(text);
    size_t length = 0;
    for (int i = 0; i < count; i++)
        length += (size_t)sprintf(text + length, "t%d\n", i);
    ted_vocab v = parse_ok(text, length);
    cr_assert_eq(v.size, count);
    char token[16];
    for (int i = 0; i < count; i++) {
        sprintf(token, "t%d", i);
        cr_assert_eq(lookup(&v, token), i, "token %s", token);
    }
    cr_assert_eq(lookup(&v, "t100000"), -1);
    cr_assert_eq(v.slot_count & (v.slot_count - 1), 0, "slot_count is a power of two");
    cr_assert_geq(v.slot_count, 2 * (size_t)count);
    ted_vocab_free(&v);
    free(text);
}

Test(vocab, empty_file_is_refused)
{
    expect_error("", 0, "vocab.txt: empty file");
}

Test(vocab, empty_lines_are_refused)
{
    expect_error("\n", 1, "vocab.txt:1: empty line");
    expect_error("a\n\nb\n", 5, "vocab.txt:2: empty line");
    expect_error("a\nb\n\n", 5, "vocab.txt:3: empty line");
    expect_error("a\r\n\r\n", 5, "vocab.txt:2: empty line");
}

Test(vocab, duplicates_name_both_lines)
{
    expect_error("a\nb\nc\nb\n", 8, "vocab.txt:4: duplicate token \"b\" (first at line 2)");
    /* CRLF and LF spellings of a token are the same token */
    expect_error("x\r\nx\n", 5, "vocab.txt:2: duplicate token \"x\" (first at line 1)");
}

/* Rows without a token (a vocab.json shorter than the model's vocabulary):
 * "<unk>" repeated; its lookup is its first line, and every row keeps its
 * id. Any other spelling given twice is still refused. */
Test(vocab, unk_may_repeat_for_rows_without_a_token)
{
    const char text[] = "</s>\n<unk>\nb\n<unk>\n<unk>\n<pad>\n";
    ted_vocab vocab = parse_ok(text, sizeof text - 1);
    cr_assert_eq(vocab.size, 6);
    cr_assert_eq(lookup(&vocab, "<unk>"), 1);
    cr_assert_eq(lookup(&vocab, "<pad>"), 5);
    cr_assert_str_eq(ted_vocab_token(&vocab, 3), "<unk>");
    cr_assert_str_eq(ted_vocab_token(&vocab, 4), "<unk>");
    ted_vocab_free(&vocab);
    expect_error("<unk>\n<pad>\n<unk>\n<pad>\n", 24,
                 "vocab.txt:4: duplicate token \"<pad>\" (first at line 2)");
}

Test(vocab, nul_bytes_are_refused)
{
    expect_error("a\nb\0c\n", 6, "vocab.txt:2: NUL byte in token");
    expect_error("a\n\0", 3, "vocab.txt:2: NUL byte in token");
}

Test(vocab, free_is_safe_on_zeroed_and_freed_structs)
{
    ted_vocab v;
    memset(&v, 0, sizeof v);
    ted_vocab_free(&v);
    ted_vocab_free(NULL);
    cr_assert_eq(ted_vocab_lookup(&v, "a", 1), -1);
    cr_assert_null(ted_vocab_token(&v, 0));
    v = parse_ok("a\n", 2);
    ted_vocab_free(&v);
    ted_vocab_free(&v);
    cr_assert_null(v.tokens);
    cr_assert_eq(v.size, 0);
}

#define TEMP_FILE_NAME "vocab.src"
#include "temp_file.h"

Test(vocab, load_reads_a_file, .init = make_temp_dir, .fini = remove_temp_dir)
{
    write_temp_file("<unk>\nle\nchat\n", 14);
    ted_vocab v;
    ted_error err = {0};
    cr_assert_eq(ted_vocab_load(temp_path, &v, &err), TED_OK, "%s", err.message);
    cr_assert_eq(v.size, 3);
    cr_assert_eq(lookup(&v, "chat"), 2);
    ted_vocab_free(&v);
}

Test(vocab, load_names_the_file_and_line, .init = make_temp_dir, .fini = remove_temp_dir)
{
    write_temp_file("a\na\n", 4);
    ted_vocab v;
    ted_error err = {0};
    cr_assert_eq(ted_vocab_load(temp_path, &v, &err), TED_ERR_VOCAB);
    char expected[256];
    snprintf(expected, sizeof expected, "%s:2: duplicate token \"a\" (first at line 1)",
             temp_path);
    cr_assert_str_eq(err.message, expected);
    cr_assert_null(v.tokens);
}

Test(vocab, load_refuses_missing_files_and_directories, .init = make_temp_dir,
     .fini = remove_temp_dir)
{
    ted_vocab v;
    ted_error err = {0};
    char expected[256];
    cr_assert_eq(ted_vocab_load(temp_path, &v, &err), TED_ERR_IO);
    snprintf(expected, sizeof expected, "%s: cannot open: No such file or directory", temp_path);
    cr_assert_str_eq(err.message, expected);
    cr_assert_eq(ted_vocab_load(temp_dir, &v, &err), TED_ERR_IO);
    snprintf(expected, sizeof expected, "%s: not a regular file", temp_dir);
    cr_assert_str_eq(err.message, expected);
    cr_assert_null(v.tokens);
}

Test(vocab, load_refuses_files_over_256_mib, .init = make_temp_dir, .fini = remove_temp_dir)
{
    write_temp_file("", 0);
    /* sparse: nothing is written, and nothing may be read */
    cr_assert_eq(truncate(temp_path, 256L * 1024 * 1024 + 1), 0);
    ted_vocab v;
    ted_error err = {0};
    cr_assert_eq(ted_vocab_load(temp_path, &v, &err), TED_ERR_VOCAB);
    char expected[256];
    snprintf(expected, sizeof expected, "%s: 268435457 bytes is larger than 256 MiB; not a vocabulary",
             temp_path);
    cr_assert_str_eq(err.message, expected);
}

/* ---- special tokens ---------------------------------------------------- */

static ted_status check_specials(const char *text, int unk, int pad, int bos, int eos,
                                 ted_error *err)
{
    ted_vocab v = parse_ok(text, strlen(text));
    ted_config config = {.unk_id = unk, .pad_id = pad, .bos_id = bos, .eos_id = eos};
    ted_status status = ted_vocab_check_specials(&v, &config, NAME, err);
    ted_vocab_free(&v);
    return status;
}

Test(vocab, specials_where_the_config_says_pass)
{
    ted_error err = {0};
    cr_assert_eq(check_specials("<unk>\n<pad>\n<bos>\n<eos>\nle\n", 0, 1, 2, 3, &err), TED_OK,
                 "%s", err.message);
    cr_assert_eq(check_specials("le\n<eos>\n<pad>\n<unk>\n<bos>\n", 3, 2, 4, 1, &err), TED_OK,
                 "%s", err.message);
}

/* Specials are known by id: other spellings, or none at all, are fine. */
Test(vocab, specials_of_other_spellings_pass)
{
    ted_error err = {0};
    cr_assert_eq(check_specials("<s>\n<pad>\n</s>\n<unk>\nle\n", 3, 1, 0, 2, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(check_specials("[UNK]\n[PAD]\n[CLS]\n[SEP]\n", 0, 1, 2, 3, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(check_specials("le\nchat\nnoir\nmange\n", 0, 1, 2, 3, &err), TED_OK, "%s",
                 err.message);
    /* spelled differently: not the tutorial's token */
    cr_assert_eq(check_specials("x\n<EOS>\n<unk >\neos\n", 0, 1, 2, 3, &err), TED_OK, "%s",
                 err.message);
}

Test(vocab, specials_elsewhere_than_the_config_says_are_refused)
{
    ted_error err = {0};
    cr_assert_eq(check_specials("<unk>\n<pad>\n<bos>\nle\n<eos>\n", 0, 1, 2, 3, &err),
                 TED_ERR_VOCAB);
    cr_assert_str_eq(err.message, "vocab.txt:5: \"<eos>\" is id 4, but tokenizer.eos_id is 3: "
                                  "the vocabulary and config.yaml disagree");
    /* a line added at the top shifts every id */
    cr_assert_eq(check_specials("#vocab\n<unk>\n<pad>\n<bos>\n<eos>\n", 0, 1, 2, 3, &err),
                 TED_ERR_VOCAB);
    cr_assert_str_eq(err.message, "vocab.txt:2: \"<unk>\" is id 1, but tokenizer.unk_id is 0: "
                                  "the vocabulary and config.yaml disagree");
    cr_assert_eq(check_specials("<unk>\n<bos>\n<pad>\n<eos>\n", 0, 1, 2, 3, &err), TED_ERR_VOCAB);
    cr_assert(strstr(err.message, "vocab.txt:3: \"<pad>\" is id 2, but tokenizer.pad_id is 1"),
              "%s", err.message);
}
