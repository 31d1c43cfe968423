/* libFuzzer harness: ted_normalize_moses, and ted_tokenize with
 * tokenizer.normalize: moses. The first byte picks the language, the rest
 * is the text. The normalized text must be NUL-terminated, at most twice as
 * long (only "(", ")" and "''" grow, by one byte each), keep every NUL byte,
 * hold no CR, no two spaces in a row, none of the characters the rules
 * replace, no ASCII white space at either end; languages that share rules
 * must agree; and tokenizing with normalization must fail exactly when
 * tokenizing without it does, with the same message. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/config.h"
#include "io/normalize.h"
#include "io/tokenizer.h"

/* Each language, and one with the same rules (itself when none has). */
static const char *const languages[][2] = {
    {"en", "en"}, {"de", "es"}, {"es", "fr"}, {"fr", "de"},
    {"cs", "cz"}, {"cz", "cs"}, {"ro", NULL}, {NULL, "it"},
};

/* What the rules replace wherever it is: CR, the grave accent, „ “ ” – —
 * ´ ‘ ‚ ’ … « » and two spaces. */
static const char *const never_left[] = {
    "\r", "`", "\xe2\x80\x9e", "\xe2\x80\x9c", "\xe2\x80\x9d", "\xe2\x80\x93", "\xe2\x80\x94",
    "\xc2\xb4", "\xe2\x80\x98", "\xe2\x80\x9a", "\xe2\x80\x99", "\xe2\x80\xa6", "\xc2\xab",
    "\xc2\xbb", "  ",
};

static bool contains(const char *text, size_t length, const char *part)
{
    size_t n = strlen(part);
    for (size_t i = 0; i + n <= length; i++)
        if (memcmp(text + i, part, n) == 0)
            return true;
    return false;
}

static size_t count_nul(const char *text, size_t length)
{
    size_t count = 0;
    for (size_t i = 0; i < length; i++)
        count += text[i] == '\0';
    return count;
}

static char *normalize(const char *text, size_t length, const char *language, size_t *n)
{
    char *out = NULL;
    ted_error err = {0};
    REQUIRE(ted_normalize_moses(text, length, language, &out, n, &err) == TED_OK);
    REQUIRE(out && out[*n] == '\0' && *n <= 2 * length);
    return out;
}

static bool is_ascii_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f';
}

static void check_normalized(const char *text, size_t length, const char *out, size_t n)
{
    REQUIRE(count_nul(out, n) == count_nul(text, length));
    for (size_t i = 0; i < sizeof never_left / sizeof never_left[0]; i++)
        REQUIRE(!contains(out, n, never_left[i]));
    REQUIRE(n == 0 || (!is_ascii_space(out[0]) && !is_ascii_space(out[n - 1])));
}

/* The char tokenizer's ids of valid text: one per character but LF. */
static int characters_but_lf(const char *text, size_t length)
{
    int count = 0;
    for (size_t i = 0; i < length; i++)
        count += ((unsigned char)text[i] & 0xC0) != 0x80 && text[i] != '\n';
    return count;
}

/* Tokenizing with and without normalization fails alike; with it, the
 * char tokenizer gives an id per character of the normalized text. */
static void check_tokenizer(const char *text, size_t length)
{
    static const char vocab_text[] = "<unk>\n<pad>\n<s>\n</s>\n(\n";
    static ted_vocab vocab;
    ted_error err = {0}, plain_err = {0};
    if (!vocab.tokens)
        REQUIRE(ted_vocab_parse(vocab_text, strlen(vocab_text), "vocab", &vocab, &err) == TED_OK);
    ted_config config = {.tokenizer = TED_TOKENIZER_CHAR, .unk_id = 0, .pad_id = 1,
                         .bos_id = 2, .eos_id = 3, .normalize = TED_NORMALIZE_MOSES};
    ted_tokenizer tokenizer = {&config, &vocab, NULL, true, NULL};
    ted_token_ids out, plain_out;
    ted_status status = ted_tokenize(&tokenizer, text, length, &out, &err);
    config.normalize = TED_NORMALIZE_NONE;
    ted_status plain = ted_tokenize(&tokenizer, text, length, &plain_out, &plain_err);
    int *ids = out.ids, *plain_ids = plain_out.ids, count = out.count;
    REQUIRE(status == plain);
    if (status == TED_OK) {
        size_t n;
        char *normalized = normalize(text, length, NULL, &n);
        REQUIRE(ids != NULL && count == characters_but_lf(normalized, n));
        free(normalized);
    } else {
        REQUIRE(ids == NULL && strcmp(err.message, plain_err.message) == 0);
    }
    free(ids);
    free(plain_ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *const *pair = languages[data[0] % 8];
    size_t length = size - 1;
    /* A buffer of the text's own size, so ASan sees any read past its end. */
    char *text = malloc(length ? length : 1);
    REQUIRE(text);
    memcpy(text, data + 1, length);
    size_t n, other_n;
    char *out = normalize(text, length, pair[0], &n);
    check_normalized(text, length, out, n);
    char *other = normalize(text, length, pair[1], &other_n);
    REQUIRE(other_n == n && memcmp(other, out, n) == 0);
    check_tokenizer(text, length);
    free(other);
    free(out);
    free(text);
    return 0;
}
