/* Sentences with ICU (document/sentences.h). */
#include "document/sentences.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/ubrk.h>
#include <unicode/uchar.h>
#include <unicode/uloc.h>
#include <unicode/utext.h>
#include <unicode/utf8.h>

#include "ted/util.h"

/* Titles that precede a name, which ICU's English suppressions lack: a
 * break after one of them, as a word of its own, is not a sentence end. */
static const char *const titles[] = {"Dr.",  "Drs.", "St.",  "Mt.",   "Mx.",
                                     "Gen.", "Gov.", "Sen.", "Supt.", "Fr."};

int document_space_at(const char *s, size_t available, int *length)
{
    int32_t i = 0;
    UChar32 c;
    U8_NEXT((const uint8_t *)s, i, (int32_t)(available < 8 ? available : 8), c);
    *length = i;
    return c >= 0 && u_isUWhiteSpace(c);
}

/* Whether the last character before text[end] is white space; its start in *start. */
static int space_before(const char *text, size_t end, size_t *start)
{
    int32_t i = (int32_t)(end > 8 ? 8 : end);
    const uint8_t *base = (const uint8_t *)text + end - i;
    UChar32 c;
    U8_PREV(base, 0, i, c);
    *start = end - (size_t)(end > 8 ? 8 : end) + (size_t)i;
    return c >= 0 && u_isUWhiteSpace(c);
}

void document_trim(const char *text, size_t *start, size_t *end)
{
    int length;
    while (*start < *end && document_space_at(text + *start, *end - *start, &length))
        *start += (size_t)length;
    size_t before;
    while (*end > *start && space_before(text, *end, &before))
        *end = before;
}

/* Whether the sentence text[start, end) ends with a title (a word of its own). */
static int ends_with_title(const char *text, size_t start, size_t end)
{
    for (size_t t = 0; t < sizeof titles / sizeof titles[0]; t++) {
        size_t n = strlen(titles[t]);
        if (end - start < n || memcmp(text + end - n, titles[t], n))
            continue;
        size_t before;
        if (end - start == n || space_before(text, end - n, &before) ||
            strchr("(\"'[", text[end - n - 1]))
            return 1;
    }
    return 0;
}

ted_status document_check_text(const char *text, size_t length, ted_error *err)
{
    if (length > INT32_MAX)
        return ted_fail(err, TED_ERR_INPUT, "the text is over %d bytes", INT32_MAX);
    for (size_t i = 0; i < length;) {
        const char *problem = NULL;
        int n = ted_utf8_char((const unsigned char *)text + i, length - i, &problem);
        if (n <= 0)
            return ted_fail(err, TED_ERR_INPUT, "byte %zu: %s", i,
                            problem ? problem : "invalid UTF-8 (a character cut short)");
        if (text[i] == '\0')
            return ted_fail(err, TED_ERR_INPUT, "byte %zu: a NUL byte", i);
        i += (size_t)n;
    }
    return TED_OK;
}

#define CODE_CHARACTERS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

struct document_splitter {
    UBreakIterator *bi;
    UText *text;  /* reused from text to text */
};

ted_status document_splitter_open(const char *language, document_splitter **out,
                                  ted_error *err)
{
    *out = NULL;
    document_splitter *sp = ted_alloc(1, sizeof *sp, "sentence splitter", err);
    if (!sp)
        return TED_ERR_NOMEM;
    char code[17] = "en", given[64], locale[64];
    size_t n = 0;  /* the code's letters, digits, '_' and '-': no ICU keyword of the caller's */
    while (language && n < 16 && language[n] && strchr(CODE_CHARACTERS, language[n]))
        n++;
    if (n > 0)
        snprintf(code, sizeof code, "%.*s", (int)n, language);
    snprintf(given, sizeof given, "%s@ss=standard", code);
    UErrorCode status = U_ZERO_ERROR;
    uloc_canonicalize(given, locale, sizeof locale, &status);  /* "eng_Latn" -> "en_Latn" */
    sp->bi = U_SUCCESS(status) ? ubrk_open(UBRK_SENTENCE, locale, NULL, 0, &status) : NULL;
    if (U_FAILURE(status)) {
        document_splitter_close(sp);
        return ted_fail(err, status == U_MEMORY_ALLOCATION_ERROR ? TED_ERR_NOMEM : TED_ERR_INPUT,
                        "ICU's sentence break iterator (%s): %s", locale, u_errorName(status));
    }
    *out = sp;
    return TED_OK;
}

void document_splitter_close(document_splitter *sp)
{
    if (!sp)
        return;
    ubrk_close(sp->bi);
    utext_close(sp->text);
    free(sp);
}

typedef struct span_list {
    document_span *spans;
    int count, capacity;
} span_list;

static ted_status add_span(span_list *l, size_t start, size_t end, ted_error *err)
{
    if (l->count == l->capacity) {
        int grown = l->capacity ? 2 * l->capacity : 16;
        document_span *spans = ted_alloc((size_t)grown, sizeof *spans, "sentences", err);
        if (!spans)
            return TED_ERR_NOMEM;
        if (l->count)
            memcpy(spans, l->spans, (size_t)l->count * sizeof *spans);
        free(l->spans);
        l->spans = spans;
        l->capacity = grown;
    }
    l->spans[l->count++] = (document_span){start, end};
    return TED_OK;
}

/* ICU's boundaries of text[0, length), as sentences in *l. */
static ted_status collect(UBreakIterator *bi, const char *text, size_t length, span_list *l,
                          ted_error *err)
{
    ted_status s = TED_OK;
    size_t open = SIZE_MAX;  /* the start of a sentence that goes on past a title */
    int32_t start = ubrk_first(bi), end;
    while (!s && (end = ubrk_next(bi)) != UBRK_DONE) {
        size_t a = open != SIZE_MAX ? open : (size_t)start, b = (size_t)end;
        document_trim(text, &a, &b);
        start = end;
        open = SIZE_MAX;
        if (a == b)
            continue;
        if (ends_with_title(text, a, b) && (size_t)end < length &&
            !memchr(text + b, '\n', (size_t)end - b) && !memchr(text + b, '\r', (size_t)end - b))
            open = a;
        else
            s = add_span(l, a, b, err);
    }
    return s;
}

ted_status document_splitter_split(document_splitter *sp, const char *text, size_t length,
                                   document_span **spans, int *count, ted_error *err)
{
    *spans = NULL;
    *count = 0;
    ted_status s = document_check_text(text, length, err);
    if (s || length == 0)
        return s;
    UErrorCode status = U_ZERO_ERROR;
    sp->text = utext_openUTF8(sp->text, text, (int64_t)length, &status);
    if (U_SUCCESS(status))
        ubrk_setUText(sp->bi, sp->text, &status);
    if (U_FAILURE(status))
        return ted_fail(err, status == U_MEMORY_ALLOCATION_ERROR ? TED_ERR_NOMEM : TED_ERR_INPUT,
                        "ICU's sentence break iterator: %s", u_errorName(status));
    span_list l = {0};
    if ((s = collect(sp->bi, text, length, &l, err))) {
        free(l.spans);
        return s;
    }
    *spans = l.spans;
    *count = l.count;
    return TED_OK;
}

ted_status document_split_sentences(const char *text, size_t length, const char *language,
                                    document_span **spans, int *count, ted_error *err)
{
    *spans = NULL;
    *count = 0;
    document_splitter *sp;
    ted_status s = document_check_text(text, length, err);
    if (s || length == 0 || (s = document_splitter_open(language, &sp, err)))
        return s;
    s = document_splitter_split(sp, text, length, spans, count, err);
    document_splitter_close(sp);
    return s;
}
