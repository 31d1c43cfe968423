/* The bytes of an HTML page that a browser never makes text, found with
 * the HTML5 tokenizer's rules (WHATWG HTML, "Tokenization") before
 * libxml2 parses the page: comments ("<!--" to "-->", "--!>", or the
 * abrupt "<!-->"), bogus comments ("<!" and "<?" anything, "</" and a
 * character that is not a letter: each to the first '>'), doctypes
 * anywhere in the page, CDATA sections of svg and math, and the text of
 * script and style (to their appropriate end tags, script's escapes
 * included). libxml2's own rules differ (it hands a mid-page doctype, a
 * "<![CDATA[" or a "<!x" to its caller as text, and ends a script at the
 * first "</" and a letter), so it parses a copy of the page in which each
 * of those constructs is overwritten, at the same length, with markup it
 * reads as such: "<?x", spaces and '>' (a processing instruction) for a
 * construct of 4 bytes or more, three spaces for the 3-byte "<!>", "<?>"
 * and "</>", spaces for the text of script and style. The constructs are
 * looked for where a browser's tokenizer is in its data state, inside
 * title, textarea, xmp, iframe, noembed, noframes and noscript too (where
 * each ends at the element's end tag), never inside a tag or script and
 * style. In svg and math content, where a browser reads "<![CDATA[" to
 * "]]>" and title, style and script are not raw text, a stack of the open
 * svg, math and integration point elements (foreignObject, desc, title;
 * mi, mo, mn, ms, mtext) follows the tree builder's rules, breakout tags
 * included. */
#ifndef TED_DOCUMENT_INERT_H
#define TED_DOCUMENT_INERT_H

#include <stddef.h>

#include "ted/ted.h"

/* *masked (malloc'ed, length + 1 bytes, NUL-terminated): page[0, length)
 * with every construct above overwritten. TED_ERR_NOMEM. */
ted_status html_mask_inert(const char *page, size_t length, char **masked, ted_error *err);

#endif
