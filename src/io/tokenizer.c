/*
 * Source text -> ids, target ids -> text.
 *
 * The text is checked as UTF-8 once, up front, so the splitting code can
 * trust every lead byte. Lowercasing never changes a byte count (A-Z and
 * U+00C0-U+00DE are each one byte away from their lowercase forms), so it is
 * done on one copy of the text before splitting.
 */
#include "io/tokenizer.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

/* The length of the UTF-8 sequence at `s` (`available` bytes left), or 0
 * with `*problem` set when it is not a valid character (RFC 3629). */
static size_t utf8_sequence(const unsigned char *s, size_t available, const char **problem)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char low = 0x80, high = 0xBF;  /* allowed range of the second byte */
    if (c == 0) {
        *problem = "NUL byte";
        return 0;
    }
    if (c < 0x80)
        return 1;
    if (c < 0xC0) {
        *problem = "invalid UTF-8 (unexpected continuation byte)";
        return 0;
    }
    if (c < 0xC2) {
        *problem = "invalid UTF-8 (overlong encoding)";
        return 0;
    }
    if (c < 0xE0) {
        n = 2;
    } else if (c < 0xF0) {
        n = 3;
        if (c == 0xE0)
            low = 0xA0;   /* below: overlong */
        if (c == 0xED)
            high = 0x9F;  /* above: UTF-16 surrogates */
    } else if (c < 0xF5) {
        n = 4;
        if (c == 0xF0)
            low = 0x90;   /* below: overlong */
        if (c == 0xF4)
            high = 0x8F;  /* above: beyond U+10FFFF */
    } else {
        *problem = "invalid UTF-8 (code point beyond U+10FFFF)";
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (i >= available || s[i] < 0x80 || s[i] > 0xBF) {
            *problem = "invalid UTF-8 (truncated sequence)";
            return 0;
        }
    }
    if (s[1] < low) {
        *problem = "invalid UTF-8 (overlong encoding)";
        return 0;
    }
    if (s[1] > high) {
        *problem = c == 0xED ? "invalid UTF-8 (UTF-16 surrogate)"
                             : "invalid UTF-8 (code point beyond U+10FFFF)";
        return 0;
    }
    return n;
}

/* Checks the whole text and counts its characters. */
static ted_status check_utf8(const char *text, size_t length, size_t *characters, ted_error *err)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t count = 0;
    for (size_t i = 0; i < length; count++) {
        const char *problem = NULL;
        size_t n = utf8_sequence(s + i, length - i, &problem);
        if (n == 0)
            return ted_fail(err, TED_ERR_INPUT, "input byte offset %zu: %s", i,
                            problem);
        i += n;
    }
    *characters = count;
    return TED_OK;
}

/* A-Z and the Latin-1 capitals U+00C0-U+00DE (but U+00D7, the multiplication
 * sign) encoded C3 80-C3 9E, all lowercased by adding 0x20 to the last byte. */
static void lowercase(char *text, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 'A' && c <= 'Z') {
            text[i] = (char)(c + 0x20);
        } else if (c == 0xC3 && i + 1 < length) {
            unsigned char next = (unsigned char)text[i + 1];
            if (next >= 0x80 && next <= 0x9E && next != 0x97)
                text[i + 1] = (char)(next + 0x20);
            i++;
        }
    }
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

typedef struct id_list {
    int *ids;
    int count;
    int unknown;
} id_list;

static void append(id_list *list, const ted_vocab *vocab, const ted_config *config,
                   const char *token, size_t n)
{
    int id = ted_vocab_lookup(vocab, token, n);
    if (id < 0) {
        id = config->unk_id;
        list->unknown++;
    }
    list->ids[list->count++] = id;
}

static void split_words(id_list *list, const ted_vocab *vocab, const ted_config *config,
                        const char *text, size_t length)
{
    size_t i = 0;
    while (i < length) {
        while (i < length && is_space(text[i]))
            i++;
        size_t start = i;
        while (i < length && !is_space(text[i]))
            i++;
        if (i > start)
            append(list, vocab, config, text + start, i - start);
    }
}

static void split_characters(id_list *list, const ted_vocab *vocab, const ted_config *config,
                             const char *text, size_t length)
{
    const char *problem = NULL;
    for (size_t i = 0; i < length;) {
        size_t n = utf8_sequence((const unsigned char *)text + i, length - i, &problem);
        if (text[i] != '\r' && text[i] != '\n')
            append(list, vocab, config, text + i, n);
        i += n;
    }
}

ted_status ted_tokenize(const ted_config *config, const ted_vocab *vocab, const char *text,
                        size_t length, int **ids, int *count, int *unknown, ted_error *err)
{
    if (!config || !vocab || !ids || !count || (!text && length > 0))
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_tokenize: config, vocab, text, ids and count are required");
    *ids = NULL;
    *count = 0;
    if (unknown)
        *unknown = 0;
    size_t characters = 0;
    ted_status status = check_utf8(text, length, &characters, err);
    if (status != TED_OK)
        return status;
    /* Every token holds at least one character, so this bounds the ids. */
    if (characters > (size_t)INT_MAX - 2)
        return ted_fail(err, TED_ERR_INPUT, "input of %zu characters is too long", characters);
    id_list list = {0};
    list.ids = ted_alloc(characters + 2, sizeof *list.ids, "token ids", err);
    if (!list.ids)
        return TED_ERR_NOMEM;
    char *lowered = NULL;
    if (config->lowercase && length > 0) {
        lowered = ted_alloc(length, 1, "lowercased input", err);
        if (!lowered) {
            free(list.ids);
            return TED_ERR_NOMEM;
        }
        memcpy(lowered, text, length);
        lowercase(lowered, length);
        text = lowered;
    }
    if (config->source_bos_eos)
        list.ids[list.count++] = config->bos_id;
    if (config->tokenizer == TED_TOKENIZER_CHAR)
        split_characters(&list, vocab, config, text, length);
    else
        split_words(&list, vocab, config, text, length);
    if (config->source_bos_eos)
        list.ids[list.count++] = config->eos_id;
    free(lowered);
    *ids = list.ids;
    *count = list.count;
    if (unknown)
        *unknown = list.unknown;
    return TED_OK;
}

/* The token of `id` when it belongs in the output, else NULL. */
static const char *output_token(const ted_config *config, const ted_vocab *vocab, int id)
{
    if (id == config->bos_id || id == config->pad_id)
        return NULL;
    return ted_vocab_token(vocab, id);
}

char *ted_detokenize(const ted_config *config, const ted_vocab *vocab, const int *ids,
                     int count)
{
    if (!config || !vocab || (!ids && count > 0))
        return NULL;
    const char *separator = config->tokenizer == TED_TOKENIZER_CHAR ? "" : " ";
    size_t separator_length = strlen(separator);
    int end = 0;
    size_t bytes = 1;
    while (end < count && ids[end] != config->eos_id) {
        const char *token = output_token(config, vocab, ids[end++]);
        if (!token)
            continue;
        size_t n = strlen(token) + separator_length;
        if (n > SIZE_MAX - bytes)
            return NULL;
        bytes += n;
    }
    char *out = malloc(bytes);
    if (!out)
        return NULL;
    size_t used = 0;
    for (int i = 0; i < end; i++) {
        const char *token = output_token(config, vocab, ids[i]);
        if (!token)
            continue;
        if (used > 0) {
            memcpy(out + used, separator, separator_length);
            used += separator_length;
        }
        size_t n = strlen(token);
        memcpy(out + used, token, n);
        used += n;
    }
    out[used] = '\0';
    return out;
}
