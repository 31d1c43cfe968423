/* Byte-level BPE (GPT-2's, BART's): text -> pieces of a vocabulary, and
 * pieces -> text. */
#ifndef TED_IO_BPE_H
#define TED_IO_BPE_H

#include <stdbool.h>
#include <stddef.h>

#include "io/vocab.h"
#include "ted/ted.h"

/* The merges: line r of the merges file, "LEFT RIGHT", is the merge of
 * rank r (the lower, the earlier it applies). */
typedef struct ted_bpe {
    ted_vocab ranks;  /* "LEFT RIGHT" -> rank */
} ted_bpe;

/* Reads a merges file: one merge a line, two symbols of byte-level
 * characters separated by one space. A line that is not that, a merge
 * given twice, or what ted_vocab_load refuses, is TED_ERR_VOCAB naming the
 * file and line; a file that cannot be read is TED_ERR_IO. */
ted_status ted_bpe_load(const char *path, ted_bpe *bpe, ted_error *err);

/* The same from memory; `name` stands for the file in messages. */
ted_status ted_bpe_parse(const char *text, size_t length, const char *name, ted_bpe *bpe,
                         ted_error *err);

void ted_bpe_free(ted_bpe *bpe);

/* Splits `length` bytes of valid UTF-8 `text` as GPT-2's tokenizer does:
 * with `add_prefix_space`, a space goes before the text; the text is cut
 * by the pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
 * ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (letters, numbers and white space as
 * Unicode classes them); each part's bytes become GPT-2's byte characters
 * and are merged by rank. `*pieces` (malloc'ed) holds `*count` NUL-terminated
 * pieces, one after another. More than BPE_MAX_TEXT_BYTES of text, or a
 * part longer than BPE_MAX_WORD_BYTES, is TED_ERR_INPUT naming its byte
 * offset. */
ted_status ted_bpe_encode(const ted_bpe *bpe, const char *text, size_t length,
                          bool add_prefix_space, char **pieces, int *count, ted_error *err);

/* Appends the bytes the byte characters of `token` stand for to `out`
 * (room for strlen(token) bytes); a character that stands for no byte is
 * copied as it is. Returns the bytes written. */
size_t ted_bpe_token_bytes(const char *token, char *out);

/* Makes `length` bytes of `text` valid UTF-8 as Python's decode(errors=
 * "replace") does: each maximal invalid subsequence becomes U+FFFD.
 * Returns a malloc'ed, NUL-terminated string, or NULL when out of memory. */
char *ted_utf8_replace_invalid(const char *text, size_t length);

#endif
