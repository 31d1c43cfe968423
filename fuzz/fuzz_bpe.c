/* libFuzzer harness: the byte-level BPE tokenizer (io/bpe.h). The input is
 * a merges file, a NUL byte, then a text. A merges file that is refused
 * must say so naming the file; with one that loads, a text of valid UTF-8
 * is split both without and with add_prefix_space, and the bytes of the
 * pieces, back from their characters, must be the text again (a space
 * before it where one was added). Every input is also made valid UTF-8 as
 * Python's decode(errors="replace") makes it, and the result must be. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "fuzz.h"
#include "io/bpe.h"

/* Whether the `n` bytes at `s` are valid UTF-8 without a NUL byte. */
static bool valid_text(const char *s, size_t n)
{
    const char *problem = NULL;
    for (size_t i = 0; i < n;) {
        if (s[i] == '\0')
            return false;
        int k = ted_utf8_char((const unsigned char *)s + i, n - i, &problem);
        if (k <= 0)
            return false;
        i += (size_t)k;
    }
    return true;
}

/* Splits `text` and checks that its pieces' bytes give it back. */
static void split(const ted_bpe *bpe, const char *text, size_t n, bool add_prefix_space)
{
    char *pieces = NULL;
    int count = 0;
    ted_error err = {0};
    if (ted_bpe_encode(bpe, text, n, add_prefix_space, &pieces, &count, &err) != TED_OK) {
        REQUIRE(pieces == NULL && count == 0 && err.message[0]);
        return;
    }
    char *bytes = malloc(2 * n + 2);
    REQUIRE(bytes);
    size_t used = 0;
    const char *at = pieces;
    for (int i = 0; i < count; i++) {
        REQUIRE(at[0] != '\0');
        used += ted_bpe_token_bytes(at, bytes + used);
        REQUIRE(used <= n + 1);
        at += strlen(at) + 1;
    }
    size_t start = used == n + 1 ? 1 : 0;  /* the space add_prefix_space put there */
    REQUIRE(used == n + start && (!start || (add_prefix_space && bytes[0] == ' ')));
    REQUIRE(memcmp(bytes + start, text, n) == 0);
    free(bytes);
    free(pieces);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *input = (const char *)data;
    char *replaced = ted_utf8_replace_invalid(input, size);
    REQUIRE(replaced);
    for (size_t i = 0; i < strlen(replaced);) {
        const char *problem = NULL;
        int k = ted_utf8_char((const unsigned char *)replaced + i, strlen(replaced) - i,
                              &problem);
        REQUIRE(k > 0);
        i += (size_t)k;
    }
    free(replaced);
    const char *nul = memchr(input, '\0', size);
    size_t merges = nul ? (size_t)(nul - input) : size;
    ted_bpe bpe;
    ted_error err = {0};
    if (ted_bpe_parse(input, merges, "fuzz.merges", &bpe, &err) != TED_OK) {
        REQUIRE(strncmp(err.message, "fuzz.merges", 11) == 0);
        return 0;
    }
    const char *text = nul ? nul + 1 : input + size;
    size_t n = size - (size_t)(text - input);
    if (valid_text(text, n)) {
        split(&bpe, text, n, false);
        split(&bpe, text, n, true);
    }
    ted_bpe_free(&bpe);
    return 0;
}
