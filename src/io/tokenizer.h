/* Text -> token ids -> text, as the config's tokenizer section says. */
#ifndef TED_IO_TOKENIZER_H
#define TED_IO_TOKENIZER_H

#include <stddef.h>

#include "io/vocab.h"
#include "ted/ted.h"

/* Splits `text` (whitespace: on spaces, tabs, CR and LF; char: on UTF-8
 * characters, spaces kept as tokens), lowercases ASCII and UTF-8 Latin
 * letters when `config->lowercase`, maps each piece to its id (unknown ->
 * unk_id, counted in `*unknown`), and wraps the ids in BOS ... EOS when
 * `config->source_bos_eos`. Invalid UTF-8 or a NUL byte is an error.
 * `*ids` is malloc'ed; `*count` is its length. */
ted_status ted_tokenize(const ted_config *config, const ted_vocab *vocab, const char *text,
                        size_t length, int **ids, int *count, int *unknown, ted_error *err);

/* Joins the tokens of `ids` with single spaces (whitespace tokenizer) or
 * nothing (char tokenizer), stopping at eos_id and skipping bos_id and
 * pad_id. Returns a malloc'ed string, or NULL when out of memory. */
char *ted_detokenize(const ted_config *config, const ted_vocab *vocab, const int *ids,
                     int count);

#endif
