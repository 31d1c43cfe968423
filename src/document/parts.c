/* A document's parts (document/parts.h), and what document.h says of a
 * parsed document: its sentences, its rendering, freeing it. */
#include "document/parts.h"

#include <stdlib.h>
#include <string.h>

#include "ted/util.h"

ted_status document_new(const char *text, size_t length, bool html, document **out,
                        ted_error *err)
{
    *out = NULL;
    document *d = ted_alloc(1, sizeof *d, "document", err);
    if (!d)
        return TED_ERR_NOMEM;
    d->html = html;
    d->length = length;
    if (!(d->source = ted_alloc(length + 1, 1, "document", err))) {
        free(d);
        return TED_ERR_NOMEM;
    }
    memcpy(d->source, text, length);
    *out = d;
    return TED_OK;
}

/* Room for one more item in a growing array of `size`-byte items. */
static ted_status grow(void **items, int count, int *capacity, size_t size, ted_error *err)
{
    if (count < *capacity)
        return TED_OK;
    int grown = *capacity ? 2 * *capacity : 16;
    void *more = ted_alloc((size_t)grown, size, "document", err);
    if (!more)
        return TED_ERR_NOMEM;
    if (count)
        memcpy(more, *items, (size_t)count * size);
    free(*items);
    *items = more;
    *capacity = grown;
    return TED_OK;
}

static ted_status add_part(document *d, document_part part, ted_error *err)
{
    if (grow((void **)&d->parts, d->part_count, &d->part_capacity, sizeof part, err))
        return TED_ERR_NOMEM;
    d->parts[d->part_count++] = part;
    return TED_OK;
}

ted_status document_add_source(document *d, size_t start, size_t end, ted_error *err)
{
    if (end <= start)
        return TED_OK;
    document_part *last = d->part_count ? &d->parts[d->part_count - 1] : NULL;
    if (last && last->kind == PART_SOURCE && last->start + last->length == start) {
        last->length += end - start;
        return TED_OK;
    }
    return add_part(d, (document_part){.kind = PART_SOURCE, .start = start, .length = end - start},
                    err);
}

ted_status document_add_sentence(document *d, const char *text, size_t length, ted_error *err)
{
    if (grow((void **)&d->sentences, d->count, &d->capacity, sizeof *d->sentences, err))
        return TED_ERR_NOMEM;
    char *copy = ted_alloc(length + 1, 1, "sentence", err);
    if (!copy)
        return TED_ERR_NOMEM;
    memcpy(copy, text, length);
    d->sentences[d->count] = copy;
    ted_status s = add_part(d, (document_part){.kind = PART_SENTENCE, .sentence = d->count}, err);
    if (s)
        free(copy);
    else
        d->count++;
    return s;
}

/* The entity that stands for byte c in HTML text (& < >), else NULL. */
static const char *entity_of(bool html, char c)
{
    if (!html)
        return NULL;
    return c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : NULL;
}

/* text[0, n) written at `out` (NULL: only counted), escaped as HTML text
 * when `html`; its bytes. */
static size_t write_escaped(const char *text, size_t n, bool html, char *out)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const char *entity = entity_of(html, text[i]);
        size_t k = entity ? strlen(entity) : 1;
        if (out)
            memcpy(out + at, entity ? entity : text + i, k);
        at += k;
    }
    return at;
}

static char *escaped(const char *text, size_t n, bool html, size_t *length, ted_error *err)
{
    char *out = ted_alloc(write_escaped(text, n, html, NULL) + 1, 1, "document", err);
    if (out)
        *length = write_escaped(text, n, html, out);
    return out;
}

ted_status document_add_text(document *d, const char *text, size_t n, ted_error *err)
{
    size_t length;
    char *copy = escaped(text, n, d->html, &length, err);
    if (!copy)
        return TED_ERR_NOMEM;
    ted_status s = add_part(
        d, (document_part){.kind = PART_TEXT, .text = copy, .length = length}, err);
    if (s)
        free(copy);
    return s;
}

int document_sentence_count(const document *d)
{
    return d->count;
}

const char *const *document_sentences(const document *d)
{
    return (const char *const *)d->sentences;
}

/* Part i written at `out` (NULL: only counted); its bytes. */
static size_t write_part(const document *d, int i, const char *const *translations, char *out)
{
    const document_part *p = &d->parts[i];
    const char *from = p->kind == PART_SOURCE ? d->source + p->start : p->text;
    size_t n = p->length;
    if (p->kind != PART_SENTENCE) {
        if (out)
            memcpy(out, from, n);
        return n;
    }
    const char *t = translations[p->sentence];
    return write_escaped(t, strlen(t), d->html, out);
}

ted_status document_render(const document *d, const char *const *translations, char **out,
                           size_t *length, ted_error *err)
{
    *out = NULL;
    size_t bytes = 0;
    for (int i = 0; i < d->part_count; i++)
        bytes += write_part(d, i, translations, NULL);
    char *text = ted_alloc(bytes + 1, 1, "translation", err);
    if (!text)
        return TED_ERR_NOMEM;
    size_t at = 0;
    for (int i = 0; i < d->part_count; i++)
        at += write_part(d, i, translations, text + at);
    *out = text;
    if (length)
        *length = at;
    return TED_OK;
}

void document_free(document *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->part_count; i++)
        free(d->parts[i].text);
    for (int i = 0; i < d->count; i++)
        free(d->sentences[i]);
    free(d->parts);
    free(d->sentences);
    free(d->source);
    free(d);
}
