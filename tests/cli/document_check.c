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

#include "../lib/records.h"
#include "document/document.h"

#define TRANSLATION "<ted-injected ted-attribute=1>&amp;</ted-injected>"

static void field(const char *text, size_t length)
{
    fwrite(text, 1, length, stdout);
    fputc('\0', stdout);
}

/* The answer for page[0, length); 1 (after a message) when memory runs out. */
static int answer(const char *page, size_t length, size_t at, void *context)
{
    (void)context;
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
    if (!status)
        fprintf(stderr, "document-check: page at byte %zu: out of memory\n", at);
    return status ? 0 : 1;
}

int main(int argc, char **argv)
{
    (void)argv;
    int status = argc > 1 ? -1 : for_each_record(answer, NULL);
    if (status < 0) {
        fprintf(stderr, "usage: document-check < NUL-terminated pages\n");
        return 1;
    }
    return status == 0 && fflush(stdout) == 0 ? 0 : 1;
}
