/* HTML documents with libxml2's HTML parser: the text runs that make the
 * sentences, found in the page's own bytes (document/document.h says what
 * is translated and how a translation is placed back). */
#ifndef TED_DOCUMENT_HTML_H
#define TED_DOCUMENT_HTML_H

#include "document/format.h"
#include "document/parts.h"

/* Parses d->source as HTML (UTF-8; a <meta> charset is not followed) into
 * d's parts and sentences. TED_ERR_INPUT when a text run cannot be located
 * in the source; TED_ERR_NOMEM. */
ted_status document_parse_html(document *d, const document_options *options, ted_error *err);

#endif
