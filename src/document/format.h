/* How a document is read: its format and whether its text is cut into
 * sentences. What the documents' interface (document/document.h) and its
 * HTML parser (document/html.h) both take. */
#ifndef TED_DOCUMENT_FORMAT_H
#define TED_DOCUMENT_FORMAT_H

#include <stdbool.h>

typedef enum document_format { DOCUMENT_TEXT, DOCUMENT_HTML } document_format;

typedef struct document_options {
    document_format format;
    bool split_sentences;  /* cut text into sentences (ICU); else a block is one */
    const char *language;  /* the text's language for ICU (document/sentences.h); NULL: "en" */
} document_options;

#endif
