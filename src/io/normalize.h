/* Moses' punctuation normalization of source text (tokenizer.normalize: moses). */
#ifndef TED_IO_NORMALIZE_H
#define TED_IO_NORMALIZE_H

#include <stddef.h>

#include "ted/ted.h"

/* Normalizes `length` bytes of UTF-8 `text` exactly as sacremoses 0.1.1's
 * MosesPunctNormalizer(language).normalize does with its default options
 * (Penn Treebank quotes, quote/comma and number rules; no replacement of
 * CJK punctuation, no removal of control characters), which is what Hugging
 * Face's MarianTokenizer.normalize() returns for its source_lang:
 *   - CR removed; a space put before "(" and after ")", spaces inside
 *     parentheses, between ")" and . ! : ? ; , before ':' and ';' and
 *     between a digit and '%' removed; runs of spaces made one;
 *   - curly and low quotes, dashes, the ellipsis, guillemets and the
 *     no-break spaces of French typography made ASCII;
 *   - `language` "en": '"' before commas and full stops moves after them;
 *     "de", "es", "fr": ',"' becomes '",' and full stops before '"' move
 *     after it when a character other than '<' follows the '"'; other
 *     languages or NULL: neither;
 *   - a no-break space between two digits becomes ',' for "de", "es", "cs",
 *     "cz" and "fr", '.' otherwise;
 *   - white space (Python's str.isspace()) stripped from both ends.
 * Character classes work on code points: a digit is any Unicode decimal
 * digit (Python's \d), white space any of Python's \s. NUL is a character
 * like any other; bytes that are not valid UTF-8 are kept, each read as one
 * character that is neither. `*out` is malloc'ed and NUL-terminated, `*out_length` bytes
 * long, at most 2 * length; on failure it is NULL. Fails only when out of
 * memory or when the normalization could not fit in memory. */
ted_status ted_normalize_moses(const char *text, size_t length, const char *language,
                               char **out, size_t *out_length, ted_error *err);

#endif
