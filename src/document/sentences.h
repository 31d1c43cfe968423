/* A text cut into sentences with ICU's sentence BreakIterator (UAX #29
 * sentence boundaries, with the abbreviations of ICU's "ss=standard"
 * suppressions for the language and a few titles its English list lacks:
 * "Dr. Smith" stays one sentence). Sentences are byte ranges of the text
 * with no white space at either end; what lies between them (spaces, tabs,
 * line breaks, any Unicode White_Space) belongs to no sentence, so that
 * the text is rebuilt byte for byte from its sentences and the gaps. A
 * line break ends a sentence (UAX #29's hard breaks: LF, CR, CR LF, NEL,
 * U+2028, U+2029). */
#ifndef TED_DOCUMENT_SENTENCES_H
#define TED_DOCUMENT_SENTENCES_H

#include <stddef.h>

#include "ted/ted.h"

/* Sentence i of a text: its bytes [start, end). */
typedef struct document_span {
    size_t start, end;
} document_span;

/* The sentences of text[0, length), in order, in *spans (malloc'ed, NULL
 * when there are none) and *count: none for an empty text or one of white
 * space only. `language`: a language code choosing ICU's rules and
 * abbreviations ("en", "fr", "deu", "eng_Latn": ICU canonicalizes it; its
 * part up to a character other than a letter, digit, '_' or '-'); NULL or
 * empty: "en". TED_ERR_INPUT names the
 * byte offset of a text that is not UTF-8 or holds a NUL byte. */
ted_status document_split_sentences(const char *text, size_t length, const char *language,
                                    document_span **spans, int *count, ted_error *err);

/* TED_ERR_INPUT naming the byte offset when text[0, length) is not
 * UTF-8 or holds a NUL byte, or is over 2^31 - 1 bytes (ICU's limit). */
ted_status document_check_text(const char *text, size_t length, ted_error *err);

/* ICU's sentence iterator for one language, opened once and used on many
 * texts (the blocks of a page). */
typedef struct document_splitter document_splitter;

/* `language` as document_split_sentences takes it; TED_ERR_NOMEM, or
 * TED_ERR_INPUT when ICU has no iterator for it. */
ted_status document_splitter_open(const char *language, document_splitter **splitter,
                                  ted_error *err);

/* document_split_sentences with the splitter's language. */
ted_status document_splitter_split(document_splitter *splitter, const char *text, size_t length,
                                   document_span **spans, int *count, ted_error *err);

void document_splitter_close(document_splitter *splitter);

/* Whether the character at `s` (`available` bytes to the end; valid
 * UTF-8) is Unicode White_Space; its length in *length. */
int document_space_at(const char *s, size_t available, int *length);

/* Moves *start forward and *end back past the white space at either end
 * of text[*start, *end). */
void document_trim(const char *text, size_t *start, size_t *end);

#endif
