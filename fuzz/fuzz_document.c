/* libFuzzer harness: src/document. The first byte picks the format (bit 0:
 * HTML) and sentence splitting (bit 1), the rest is the text. Parsing must
 * succeed or refuse the input (TED_ERR_INPUT, a message); a text parsed
 * rebuilds from its own sentences byte for byte; a page rebuilt around
 * translations full of markup holds no '<' or '>' more than it came with
 * (translations are written as text, never as markup), and parses again. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "document/document.h"
#include "fuzz.h"

static size_t count(const char *text, size_t length, char c)
{
    size_t n = 0;
    for (size_t i = 0; i < length; i++)
        n += text[i] == c;
    return n;
}

static void check_page(const char *text, size_t length, const document_options *o, document *d)
{
    int n = document_sentence_count(d);
    const char **hostile = calloc(n > 0 ? (size_t)n : 1, sizeof *hostile);
    REQUIRE(hostile);
    for (int i = 0; i < n; i++)
        hostile[i] = "<b>&amp;</b>";
    char *out;
    size_t out_length;
    ted_error err = {0};
    REQUIRE(document_render(d, hostile, &out, &out_length, &err) == TED_OK);
    REQUIRE(count(out, out_length, '<') <= count(text, length, '<'));
    REQUIRE(count(out, out_length, '>') <= count(text, length, '>'));
    document *again;
    ted_status s = document_parse(out, out_length, o, &again, &err);
    REQUIRE(s == TED_OK || s == TED_ERR_NOMEM);
    document_free(again);
    free(out);
    free(hostile);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    document_options o = {.format = data[0] & 1 ? DOCUMENT_HTML : DOCUMENT_TEXT,
                          .split_sentences = (data[0] & 2) != 0};
    const char *text = (const char *)data + 1;
    size_t length = size - 1;
    document *d;
    ted_error err = {0};
    ted_status s = document_parse(text, length, &o, &d, &err);
    REQUIRE(s == TED_OK || s == TED_ERR_INPUT || s == TED_ERR_NOMEM);
    REQUIRE(s == TED_OK || err.message[0] != '\0');
    if (s)
        return 0;
    if (o.format == DOCUMENT_HTML) {
        check_page(text, length, &o, d);
    } else {
        char *out;
        size_t out_length;
        REQUIRE(document_render(d, document_sentences(d), &out, &out_length, &err) == TED_OK);
        REQUIRE(out_length == length && !memcmp(out, text, length));
        free(out);
    }
    document_free(d);
    return 0;
}
