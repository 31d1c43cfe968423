/*
 * Vocabulary files. The text is copied once into a buffer where every line
 * end becomes a NUL, so tokens[id] points into it with no per-token
 * allocation; ids are found through an open-addressing table (a keyed hash,
 * core/hash.h, so that no file can make its tokens collide; linear probing,
 * at most half full).
 */
#include "io/vocab.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/limits.h"
#include "io/config.h"

/* Whether tokens[id] is exactly the `n` bytes at `s`. strnlen keeps the
 * comparison inside the token even when `s` holds a NUL. */
static bool token_equals(const ted_vocab *vocab, int id, const char *s, size_t n)
{
    const char *token = vocab->tokens[id];
    return strnlen(token, n + 1) == n && memcmp(token, s, n) == 0;
}

/* The slot holding `s`, or the empty slot where it would go. */
static size_t find_slot(const ted_vocab *vocab, const char *s, size_t n)
{
    size_t mask = vocab->slot_count - 1;
    size_t slot = (size_t)ted_hash(s, n) & mask;
    while (vocab->slots[slot] >= 0 && !token_equals(vocab, vocab->slots[slot], s, n))
        slot = (slot + 1) & mask;
    return slot;
}

int ted_vocab_lookup(const ted_vocab *vocab, const char *token, size_t length)
{
    if (!vocab || !vocab->slots || !token)
        return -1;
    return vocab->slots[find_slot(vocab, token, length)];
}

const char *ted_vocab_token(const ted_vocab *vocab, int id)
{
    if (!vocab || !vocab->tokens || id < 0 || id >= vocab->size)
        return NULL;
    return vocab->tokens[id];
}

void ted_vocab_free(ted_vocab *vocab)
{
    if (!vocab)
        return;
    if (vocab->tokens)
        free(vocab->tokens[0]);  /* the buffer every token points into */
    free(vocab->tokens);
    free(vocab->slots);
    memset(vocab, 0, sizeof *vocab);
}

/* Lines in `text`: a final newline ends the last line rather than
 * starting an empty one. */
static size_t count_lines(const char *text, size_t length)
{
    size_t lines = 0;
    for (const char *p = text; (p = memchr(p, '\n', length - (size_t)(p - text))); p++)
        lines++;
    return text[length - 1] == '\n' ? lines : lines + 1;
}

static ted_status allocate(ted_vocab *vocab, const char *text, size_t length, size_t lines,
                           const char *name, ted_error *err)
{
    char *buffer = ted_alloc(length + 1, 1, name, err);
    if (!buffer)
        return TED_ERR_NOMEM;
    memcpy(buffer, text, length);
    vocab->tokens = ted_alloc(lines, sizeof *vocab->tokens, name, err);
    if (!vocab->tokens) {
        free(buffer);
        return TED_ERR_NOMEM;
    }
    vocab->tokens[0] = buffer;
    size_t slots = 2;
    while (slots < 2 * lines)
        slots *= 2;
    vocab->slot_count = slots;
    vocab->slots = ted_alloc(slots, sizeof *vocab->slots, name, err);
    if (!vocab->slots)
        return TED_ERR_NOMEM;
    for (size_t i = 0; i < slots; i++)
        vocab->slots[i] = -1;
    return TED_OK;
}

/* Cuts the buffer into lines and enters each into the table. On return
 * vocab->size counts the tokens entered, so the caller can free on error. */
static ted_status split_lines(ted_vocab *vocab, size_t length, size_t lines, const char *name,
                              ted_error *err)
{
    char *buffer = vocab->tokens[0];
    size_t start = 0;
    for (size_t line = 0; line < lines; line++) {
        char *end = memchr(buffer + start, '\n', length - start);
        size_t n = end ? (size_t)(end - (buffer + start)) : length - start;
        char *token = buffer + start;
        start += n + 1;
        token[n] = '\0';
        if (memchr(token, '\0', n))
            return ted_fail(err, TED_ERR_VOCAB, "%s:%zu: NUL byte in token", name, line + 1);
        if (n > 0 && token[n - 1] == '\r')
            token[--n] = '\0';
        if (n == 0)
            return ted_fail(err, TED_ERR_VOCAB, "%s:%zu: empty line", name, line + 1);
        size_t slot = find_slot(vocab, token, n);
        if (vocab->slots[slot] >= 0 && strcmp(token, TED_VOCAB_NO_TOKEN) != 0)
            return ted_fail(err, TED_ERR_VOCAB,
                            "%s:%zu: duplicate token \"%.64s\" (first at line %d)", name,
                            line + 1, token, vocab->slots[slot] + 1);
        vocab->tokens[line] = token;
        if (vocab->slots[slot] < 0)
            vocab->slots[slot] = (int)line;  /* a repeated "<unk>" keeps its first id */
        vocab->size = (int)line + 1;
    }
    return TED_OK;
}

ted_status ted_vocab_parse(const char *text, size_t length, const char *name, ted_vocab *vocab,
                           ted_error *err)
{
    if (!vocab)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_vocab_parse: vocab is required");
    memset(vocab, 0, sizeof *vocab);
    if (!name || (!text && length > 0))
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_vocab_parse: text and name are required");
    if (length == 0)
        return ted_fail(err, TED_ERR_VOCAB, "%s: empty file", name);
    if (length > VOCAB_MAX_BYTES)
        return ted_fail(err, TED_ERR_VOCAB, "%s: %zu bytes is larger than 256 MiB", name, length);
    size_t lines = count_lines(text, length);
    if (lines > VOCAB_MAX_TOKENS)
        return ted_fail(err, TED_ERR_VOCAB, "%s: %zu lines is more than the %d tokens allowed",
                        name, lines, VOCAB_MAX_TOKENS);
    ted_status status = allocate(vocab, text, length, lines, name, err);
    if (status == TED_OK)
        status = split_lines(vocab, length, lines, name, err);
    if (status != TED_OK)
        ted_vocab_free(vocab);
    return status;
}

ted_status ted_vocab_check_specials(const ted_vocab *vocab, const ted_config *config,
                                    const char *name, ted_error *err)
{
    if (!vocab || !config || !name)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_vocab_check_specials: missing argument");
    const struct {
        const char *token, *key;
        int id;
    } specials[] = {
        {"<unk>", "unk_id", config->unk_id},
        {"<pad>", "pad_id", config->pad_id},
        {"<bos>", "bos_id", config->bos_id},
        {"<eos>", "eos_id", config->eos_id},
    };
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        int id = ted_vocab_lookup(vocab, specials[i].token, strlen(specials[i].token));
        if (id >= 0 && id != specials[i].id)
            return ted_fail(err, TED_ERR_VOCAB,
                            "%s:%d: \"%s\" is id %d, but tokenizer.%s is %d: the vocabulary "
                            "and config.yaml disagree",
                            name, id + 1, specials[i].token, id, specials[i].key,
                            specials[i].id);
    }
    return TED_OK;
}

static ted_status parse_vocab(const char *text, size_t length, const char *name, void *vocab,
                              ted_error *err)
{
    return ted_vocab_parse(text, length, name, vocab, err);
}

ted_status ted_vocab_load(const char *path, ted_vocab *vocab, ted_error *err)
{
    if (!path || !vocab)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_vocab_load: path and vocab are required");
    memset(vocab, 0, sizeof *vocab);
    return ted_parse_file(path, VOCAB_MAX_BYTES, TED_ERR_VOCAB, "a vocabulary", parse_vocab,
                          vocab, err);
}
