/* The bytes of an HTML page that a browser never makes text, found with
 * the HTML5 tokenizer's rules (WHATWG HTML, "Tokenization") before
 * libxml2 parses the page: comments ("<!--" to "-->", "--!>", or the
 * abrupt "<!-->" and "<!--->"), bogus comments ("<!" and "<?" anything,
 * "</" and a character that is not a letter: each to the first '>'),
 * doctypes anywhere in the page, "<![CDATA[" (to the first '>' in HTML
 * content, its "]]>" inert too; to "]]>" in svg and math), the text of
 * script (to its end tag, through its escapes) and style, and all that
 * follows a frameset. libxml2's own rules differ (it hands a mid-page
 * doctype, a "<![CDATA[" or a "<!x" to its caller as text, and ends a
 * script at the first "</" and a letter), so it parses a copy of the page
 * in which each of those constructs is overwritten, at the same length,
 * with markup it reads as such: "<?x", spaces and '>' (a processing
 * instruction) for a construct of 4 bytes or more, spaces for the 3-byte
 * "<!>", "<?>" and "</>" (html.c ends a text run at them), spaces for the
 * text of script and style and for the attributes of an end tag, and a
 * space for a control character (which libxml2 leaves out of its text).
 *
 * Tags are read as a browser reads them, a quoted attribute value holding
 * '>'. The constructs are looked for where a browser's tokenizer is in
 * its data state, and in the text of title, textarea, xmp, iframe,
 * noembed, noframes, noscript and plaintext too (libxml2 reads tags there;
 * a browser may too, where it ignores those elements, in a select or a
 * frameset: a comment in that text is inert to its end, past the
 * element's end tag if it runs on). The script, style and title of svg
 * and math are markup to a browser (document/foreign.h follows svg and
 * math content), script and style raw text to libxml2: both readings are
 * inert. */
#ifndef TED_DOCUMENT_INERT_H
#define TED_DOCUMENT_INERT_H

#include <stddef.h>

#include "ted/ted.h"

/* What a byte of the page is to a browser, in rising order (where two
 * overlap, the higher holds). */
typedef enum html_byte {
    HTML_TEXT,   /* text, or what the tokenizer reads as it reads text */
    HTML_TAG,    /* a start or end tag, attributes included */
    HTML_BLANK,  /* the text of script and style, an end tag's attributes */
    HTML_INERT,  /* a construct above, or a tag that the page ends in */
} html_byte;

/* *masked (malloc'ed, length + 1 bytes, NUL-terminated): page[0, length)
 * with every construct above overwritten, and BLANK bytes spaces; *map
 * (malloc'ed, length + 1): each byte's html_byte. Text that libxml2 finds
 * in TAG or BLANK bytes is text only to libxml2. TED_ERR_NOMEM. */
ted_status html_mask_inert(const char *page, size_t length, char **masked, unsigned char **map,
                           ted_error *err);

#endif
