/* Vocabularies: one token per line, line number (from 0) = id. */
#ifndef TED_IO_VOCAB_H
#define TED_IO_VOCAB_H

#include <stddef.h>

#include "ted/ted.h"

typedef struct ted_vocab {
    char **tokens;      /* tokens[id], NUL-terminated */
    int size;
    int *slots;         /* open-addressing hash table of ids, -1 = empty */
    size_t slot_count;  /* a power of two */
} ted_vocab;

/* Reads a vocabulary file. An empty file, an empty line, a duplicate token
 * or a line with a NUL byte is an error naming the file and line; a trailing
 * CR (CRLF files) is removed. */
ted_status ted_vocab_load(const char *path, ted_vocab *vocab, ted_error *err);

/* The same from memory; `name` stands for the file in messages. */
ted_status ted_vocab_parse(const char *text, size_t length, const char *name, ted_vocab *vocab,
                           ted_error *err);

/* The id of the `length` bytes at `token`, or -1. */
int ted_vocab_lookup(const ted_vocab *vocab, const char *token, size_t length);

/* The token of `id`, or NULL when out of range. */
const char *ted_vocab_token(const ted_vocab *vocab, int id);

void ted_vocab_free(ted_vocab *vocab);

#endif
