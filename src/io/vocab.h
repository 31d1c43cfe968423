/* Vocabularies: one token per line, line number (from 0) = id. */
#ifndef TED_IO_VOCAB_H
#define TED_IO_VOCAB_H

#include <stddef.h>

#include "ted/ted.h"

typedef struct ted_vocab {
    char **tokens;      /* tokens[id], NUL-terminated, all in one buffer that
                           starts at tokens[0] */
    int size;
    int *slots;         /* open-addressing hash table of ids, -1 = empty */
    size_t slot_count;  /* a power of two, at least twice `size` */
} ted_vocab;

/* The one spelling a vocabulary may repeat: its later lines are rows of the
 * model that have no token (the ids transformers' Marian tokenizer reads
 * as <unk> because vocab.json lacks them); looking it up finds its first
 * line, which ted_vocab_check_specials requires to be unk_id. */
#define TED_VOCAB_NO_TOKEN "<unk>"

/* Reads a vocabulary file. An empty file, an empty line (a single final
 * newline is fine), a duplicate token other than TED_VOCAB_NO_TOKEN (both
 * lines named), a NUL byte, more than 16777216 lines or more than 256 MiB
 * is a TED_ERR_VOCAB error naming the file and line; a file that cannot be read is TED_ERR_IO. A trailing CR
 * (CRLF files) is removed. On failure `*vocab` is left empty: nothing to free. */
ted_status ted_vocab_load(const char *path, ted_vocab *vocab, ted_error *err);

/* The same from memory; `name` stands for the file in messages. */
ted_status ted_vocab_parse(const char *text, size_t length, const char *name, ted_vocab *vocab,
                           ted_error *err);

/* Special tokens are known by their ids (config->unk_id, pad_id, bos_id,
 * eos_id), whatever their spelling. When the vocabulary holds one of the
 * spellings "<unk>", "<pad>", "<bos>" or "<eos>" (PyTorch's translation
 * tutorial's, which tools/export_torch.py keeps), that token must be at the
 * id the config gives its role; otherwise the vocabulary and the config
 * disagree, and the error (TED_ERR_VOCAB) names `name`, the line and the
 * key. */
ted_status ted_vocab_check_specials(const ted_vocab *vocab, const ted_config *config,
                                    const char *name, ted_error *err);

/* The id of the `length` bytes at `token` (which need not be NUL-terminated),
 * or -1. */
int ted_vocab_lookup(const ted_vocab *vocab, const char *token, size_t length);

/* The token of `id`, or NULL when out of range. */
const char *ted_vocab_token(const ted_vocab *vocab, int id);

/* Frees and zeroes `vocab`; safe on a zeroed or already freed vocabulary. */
void ted_vocab_free(ted_vocab *vocab);

#endif
