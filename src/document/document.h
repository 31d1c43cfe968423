/* Documents: a paragraph of plain text or an HTML page, made a list of
 * sentences to translate and rebuilt around their translations. The
 * translating itself is the caller's: ted translate, /v1/translate and the
 * LibreTranslate endpoint each decode the sentences their way, as one batch.
 *
 * Plain text (DOCUMENT_TEXT) is cut into sentences with ICU
 * (document/sentences.h); the rebuilt text is every translation in its
 * sentence's place, with the original bytes between them (spaces, tabs,
 * line breaks), so a paragraph keeps its spacing exactly.
 *
 * HTML (DOCUMENT_HTML, document/html.h) is parsed with libxml2's HTML
 * parser, which finds the text, after the constructs that a browser never
 * makes text (comments, bogus comments, doctypes, CDATA, script and style:
 * document/inert.h) are found as a browser's tokenizer finds them; the
 * page comes back byte for byte as it came, tags, attributes, comments,
 * entities, scripts and malformed markup included, with only the
 * translated text replaced:
 *   - Text runs that only inline elements separate (a, b, i, em, strong,
 *     span, ... the list in html.c) make one block; any other element, and
 *     a skipped one, ends the block. A block's text, its white space
 *     collapsed as a browser shows it, is cut into sentences.
 *   - A sentence's translation goes, escaped (&, <, > as entities: never
 *     markup), where the sentence's first text run begins; the rest of the
 *     sentence's text, in the runs of the inline elements that follow, is
 *     left out, the elements themselves staying in place, empty. The white
 *     space between sentences and at a block's edges stays as it was.
 *   - Left as they are: script, style, code, pre, kbd, samp, textarea, and
 *     every element with translate="no" (translate="yes" inside one turns
 *     translation back on) or with the class "notranslate".
 * Without sentence splitting, a block (text: the whole text, trimmed) is one
 * sentence. */
#ifndef TED_DOCUMENT_DOCUMENT_H
#define TED_DOCUMENT_DOCUMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "document/format.h"
#include "ted/ted.h"


/* The spelling of a format where users give it: "text" or "html". False
 * for another word. The one table of ted translate --format, /v1's
 * "format" and LibreTranslate's "format". */
bool document_format_from_name(const char *name, document_format *format);

typedef struct document document;

/* Parses text[0, length) (UTF-8; a copy is kept) into *document: the
 * sentences to translate, none for an empty or blank text. TED_ERR_INPUT
 * names the byte at fault (not UTF-8, a NUL byte); TED_ERR_NOMEM. */
ted_status document_parse(const char *text, size_t length, const document_options *options,
                          document **document, ted_error *err);

int document_sentence_count(const document *d);
/* The sentences, (count): white space collapsed in HTML; NUL-terminated. */
const char *const *document_sentences(const document *d);

/* The document rebuilt with translations[i] in sentence i's place
 * (count of them; each NUL-terminated). *out is malloc'ed and
 * NUL-terminated, *length its bytes (may be NULL). */
ted_status document_render(const document *d, const char *const *translations, char **out,
                           size_t *length, ted_error *err);

void document_free(document *d);

/* Translates sentences[0..count) into translations[0..count) (each
 * malloc'ed, freed by document_translate); a failure's message goes into err. */
typedef ted_status document_translator(void *data, const char *const *sentences, int count,
                                       char **translations, ted_error *err);

/* document_parse, translate (one call of `translate` with every sentence),
 * document_render. */
ted_status document_translate(const char *text, size_t length, const document_options *options,
                              document_translator *translate, void *data, char **out,
                              ted_error *err);

#endif
