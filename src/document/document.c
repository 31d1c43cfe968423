/* Documents (document/document.h): plain text cut into sentences, HTML
 * through document/html.h, and the translation of either through a
 * caller's translator. */
#include "document/document.h"

#include <stdlib.h>
#include <string.h>

#include "document/html.h"
#include "document/parts.h"
#include "document/sentences.h"
#include "ted/util.h"

bool document_format_from_name(const char *name, document_format *format)
{
    static const struct {
        const char *name;
        document_format format;
    } names[] = {{"text", DOCUMENT_TEXT}, {"html", DOCUMENT_HTML}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) {
            *format = names[i].format;
            return true;
        }
    return false;
}

/* Plain text: each sentence between the bytes of the gaps, as they are. */
static ted_status parse_text(document *d, const document_options *o, ted_error *err)
{
    document_span *spans = NULL, whole = {0, d->length};
    int count = 0;
    ted_status s = TED_OK;
    if (o->split_sentences) {
        s = document_split_sentences(d->source, d->length, o->language, &spans, &count, err);
    } else {
        document_trim(d->source, &whole.start, &whole.end);
        count = whole.start < whole.end;
    }
    const document_span *list = spans ? spans : &whole;
    size_t at = 0;
    for (int i = 0; !s && i < count; i++) {
        s = document_add_source(d, at, list[i].start, err);
        if (!s)
            s = document_add_sentence(d, d->source + list[i].start,
                                      list[i].end - list[i].start, err);
        at = list[i].end;
    }
    if (!s)
        s = document_add_source(d, at, d->length, err);
    free(spans);
    return s;
}

ted_status document_parse(const char *text, size_t length, const document_options *options,
                          document **out, ted_error *err)
{
    document *d;
    ted_status s = document_new(text, length, options->format == DOCUMENT_HTML, &d, err);
    if (s)
        return s;
    s = document_check_text(d->source, d->length, err);
    s = s ? s : options->format == DOCUMENT_HTML ? document_parse_html(d, options, err)
                                                 : parse_text(d, options, err);
    if (s) {
        document_free(d);
        d = NULL;
    }
    *out = d;
    return s;
}

ted_status document_translate(const char *text, size_t length, const document_options *options,
                              document_translator *translate, void *data, char **out,
                              ted_error *err)
{
    *out = NULL;
    document *d;
    ted_status s = document_parse(text, length, options, &d, err);
    if (s)
        return s;
    int count = document_sentence_count(d);
    char **translations = ted_alloc(count > 0 ? (size_t)count : 1, sizeof *translations,
                                    "translations", err);
    s = translations ? TED_OK : TED_ERR_NOMEM;
    if (!s && count > 0)
        s = translate(data, document_sentences(d), count, translations, err);
    if (!s)
        s = document_render(d, (const char *const *)translations, out, NULL, err);
    for (int i = 0; translations && i < count; i++)
        free(translations[i]);
    free(translations);
    document_free(d);
    return s;
}
