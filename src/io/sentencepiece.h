/* SentencePiece segmentation (Kudo and Richardson, 2018) through the
 * sentencepiece library: text -> pieces, pieces -> text. The only C++ of
 * ted is behind this header (sentencepiece.cc). */
#ifndef TED_IO_SENTENCEPIECE_H
#define TED_IO_SENTENCEPIECE_H

#include <stddef.h>

#include "ted/ted.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ted_spm ted_spm;

/* Loads a SentencePiece model file (.spm / .model). A file that is not a
 * regular file, larger than 64 MiB or not a SentencePiece model is
 * TED_ERR_VOCAB naming `path`. */
ted_status ted_spm_load(const char *path, ted_spm **spm, ted_error *err);

/* The same from `length` bytes in memory, `name` standing for the file in
 * messages. Before the library sees them, the normalization tables
 * (normalizer_spec and denormalizer_spec's precompiled_charsmap) are checked
 * against everything the library indexes in them: a table whose trie or
 * strings point outside it is "not a usable SentencePiece model". */
ted_status ted_spm_load_bytes(const char *name, const char *bytes, size_t length, ted_spm **spm,
                              ted_error *err);

void ted_spm_free(ted_spm *spm);

/* Segments `length` bytes of valid UTF-8 into pieces: `*pieces` is one
 * malloc'ed block of `*count` NUL-terminated pieces, back to back. */
ted_status ted_spm_encode(const ted_spm *spm, const char *text, size_t length, char **pieces,
                          int *count, ted_error *err);

/* The text of `count` pieces (U+2581 becomes a space, the leading one
 * dropped), malloc'ed; NULL when out of memory. */
char *ted_spm_decode(const ted_spm *spm, const char *const *pieces, int count);

/* The model's pieces in the order of their ids, one a line: a vocabulary
 * whose ids are the model's own (Marian's vocab.spm), malloc'ed into
 * *text (`*length` bytes, NUL-terminated). `name` names the file in
 * messages. */
ted_status ted_spm_vocab_text(const ted_spm *spm, const char *name, char **text,
                              size_t *length, ted_error *err);

#ifdef __cplusplus
}
#endif

#endif
