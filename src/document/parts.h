/* A document as its parts, in order: bytes of the source kept as they
 * are, sentences (their translations go there), and text of its own. What
 * the parsers (document.c, html.c) build and document_render writes out. */
#ifndef TED_DOCUMENT_PARTS_H
#define TED_DOCUMENT_PARTS_H

#include <stdbool.h>
#include <stddef.h>

#include "ted/ted.h"

/* document/document.h's opaque document, whose struct is laid out here:
 * the parts do not include the documents' interface (document.c, which
 * uses the parts, does). */
typedef struct document document;

typedef enum part_kind {
    PART_SOURCE,    /* source[start, start + length) */
    PART_SENTENCE,  /* the translation of sentence `sentence` */
    PART_TEXT,      /* text (malloc'ed), written as it is */
} part_kind;

typedef struct document_part {
    part_kind kind;
    size_t start, length;
    int sentence;
    char *text;
} document_part;

struct document {
    char *source;   /* a copy of the text parsed, NUL-terminated */
    size_t length;
    bool html;      /* translations are escaped as HTML text */
    document_part *parts;
    int part_count, part_capacity;
    char **sentences;  /* (count), malloc'ed */
    int count, capacity;
};

/* A document of `length` bytes of `text` (copied), no parts yet. */
ted_status document_new(const char *text, size_t length, bool html, document **d,
                        ted_error *err);

/* Appends source[start, end) (joined to the part before when it ends at start). */
ted_status document_add_source(document *d, size_t start, size_t end, ted_error *err);

/* Appends a sentence, text[0, length) copied, and its place. */
ted_status document_add_sentence(document *d, const char *text, size_t length, ted_error *err);

/* Appends text[0, length) of its own, escaped as HTML text when d->html. */
ted_status document_add_text(document *d, const char *text, size_t length, ted_error *err);

#endif
