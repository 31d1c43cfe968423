/* HTML pages through src/document (document/document.h), for
 * tests/cli/html_markup.py:
 *
 *     document-check < pages > answers
 *
 * Every page ends with a NUL byte. For each page the answer is, each field
 * followed by a NUL byte: "ok" or "error: MESSAGE", then (when ok) the
 * number of sentences, the sentences (the text the model would get), and
 * the page rebuilt with every translation the markup-laden TRANSLATION
 * below (the page as a browser would get it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "document/document.h"

#define TRANSLATION "<ted-injected ted-attribute=1>&amp;</ted-injected>"

/* All of standard input, malloc'ed, in *text and *length. */
static int read_all(char **text, size_t *length)
{
    size_t capacity = 1 << 16, used = 0, got;
    char *buffer = malloc(capacity);
    while (buffer && (got = fread(buffer + used, 1, capacity - used, stdin)) > 0) {
        used += got;
        if (used == capacity) {
            char *grown = realloc(buffer, capacity *= 2);
            if (!grown)
                free(buffer);
            buffer = grown;
        }
    }
    *text = buffer;
    *length = used;
    return buffer && !ferror(stdin) ? 0 : -1;
}

static void field(const char *text, size_t length)
{
    fwrite(text, 1, length, stdout);
    fputc('\0', stdout);
}

/* The answer for page[0, length). */
static int answer(const char *page, size_t length)
{
    document_options o = {.format = DOCUMENT_HTML, .split_sentences = true};
    document *d;
    ted_error err = {0};
    if (document_parse(page, length, &o, &d, &err)) {
        printf("error: %s", err.message);
        fputc('\0', stdout);
        return 0;
    }
    int count = document_sentence_count(d);
    char number[32];
    field("ok", 2);
    field(number, (size_t)snprintf(number, sizeof number, "%d", count));
    const char **translations = calloc(count > 0 ? (size_t)count : 1, sizeof *translations);
    for (int i = 0; translations && i < count; i++) {
        field(document_sentences(d)[i], strlen(document_sentences(d)[i]));
        translations[i] = TRANSLATION;
    }
    char *out = NULL;
    size_t out_length;
    int status = translations && !document_render(d, translations, &out, &out_length, &err);
    if (status)
        field(out, out_length);
    free(out);
    free(translations);
    document_free(d);
    return status ? 0 : -1;
}

int main(int argc, char **argv)
{
    (void)argv;
    char *input;
    size_t length;
    if (argc > 1 || read_all(&input, &length) != 0) {
        fprintf(stderr, "usage: document-check < NUL-terminated pages\n");
        return 1;
    }
    for (size_t at = 0; at < length;) {
        const char *end = memchr(input + at, '\0', length - at);
        size_t n = end ? (size_t)(end - (input + at)) : length - at;
        if (answer(input + at, n) != 0) {
            fprintf(stderr, "document-check: page at byte %zu: out of memory\n", at);
            return 1;
        }
        at += n + 1;
    }
    free(input);
    return fflush(stdout) == 0 ? 0 : 1;
}
