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
#include "io/sentencepiece.h"

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
    int capacity;
    int unknown;
} id_list;

/* Room for `more` ids after those there are, and for an EOS after them. */
static ted_status reserve_ids(id_list *list, int more, ted_error *err)
{
    if (more > INT_MAX - 1 - list->count)
        return ted_fail(err, TED_ERR_INPUT, "input of %d tokens is too long", more);
    if (list->count + more + 1 <= list->capacity)
        return TED_OK;
    int *grown = realloc(list->ids, sizeof *grown * ((size_t)list->count + more + 1));
    if (!grown)
        return ted_fail(err, TED_ERR_NOMEM, "out of memory for %d token ids", more);
    list->ids = grown;
    list->capacity = list->count + more + 1;
    return TED_OK;
}

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

/* A leading language code, ">>fr<<", as multilingual Marian models take
 * it: the bytes from ">>" to the first "<<", one token. Returns its length,
 * 0 when the text does not start with one. */
static size_t language_code(const char *text, size_t length)
{
    if (length < 4 || text[0] != '>' || text[1] != '>')
        return 0;
    for (size_t i = 2; i + 1 < length; i++)
        if (text[i] == '<' && text[i + 1] == '<')
            return i + 2;
    return 0;
}

/* The language code (if any), then SentencePiece's pieces of the rest. */
static ted_status split_pieces(id_list *list, const ted_vocab *vocab, const ted_spm *spm,
                               const ted_config *config, const char *text, size_t length,
                               ted_error *err)
{
    size_t code = language_code(text, length);
    if (code)
        append(list, vocab, config, text, code);
    char *pieces = NULL;
    int count = 0;
    ted_status s = ted_spm_encode(spm, text + code, length - code, &pieces, &count, err);
    if (!s && (s = reserve_ids(list, count, err)))
        free(pieces);
    if (s)
        return s;
    const char *piece = pieces;
    for (int i = 0; i < count; i++) {
        size_t n = strlen(piece);
        append(list, vocab, config, piece, n);
        piece += n + 1;
    }
    free(pieces);
    return TED_OK;
}

static ted_status split(id_list *list, const ted_vocab *vocab, const ted_spm *spm,
                        const ted_config *config, const char *text, size_t length,
                        ted_error *err)
{
    switch (config->tokenizer) {
    case TED_TOKENIZER_CHAR:
        split_characters(list, vocab, config, text, length);
        return TED_OK;
    case TED_TOKENIZER_SENTENCEPIECE:
        if (!spm)
            return ted_fail(err, TED_ERR_ARGUMENT, "ted_tokenize: no SentencePiece model");
        return split_pieces(list, vocab, spm, config, text, length, err);
    default:
        split_words(list, vocab, config, text, length);
        return TED_OK;
    }
}

ted_status ted_tokenize(const ted_config *config, const ted_vocab *vocab, const ted_spm *spm,
                        const char *text, size_t length, int **ids, int *count, int *unknown,
                        ted_error *err)
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
    list.capacity = (int)characters + 2;
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
    if (config->source_bos)
        list.ids[list.count++] = config->bos_id;
    status = split(&list, vocab, spm, config, text, length, err);
    if (config->source_eos)
        list.ids[list.count++] = config->eos_id;
    free(lowered);
    if (status) {
        free(list.ids);
        return status;
    }
    *ids = list.ids;
    *count = list.count;
    if (unknown)
        *unknown = list.unknown;
    return TED_OK;
}

/* The token of `id` when it belongs in the output, else NULL. Unknown
 * words are dropped from SentencePiece output, as Hugging Face's
 * tokenizers drop every special token. */
static const char *output_token(const ted_config *config, const ted_vocab *vocab, int id)
{
    if (id == config->bos_id || id == config->pad_id)
        return NULL;
    if (config->tokenizer == TED_TOKENIZER_SENTENCEPIECE && id == config->unk_id)
        return NULL;
    return ted_vocab_token(vocab, id);
}

/* The output tokens of ids, up to the first EOS: `*count` pointers into
 * the vocabulary, malloc'ed. */
static const char **output_tokens(const ted_config *config, const ted_vocab *vocab,
                                  const int *ids, int count, int *kept)
{
    const char **tokens = malloc(sizeof *tokens * (count > 0 ? count : 1));
    *kept = 0;
    for (int i = 0; tokens && i < count && ids[i] != config->eos_id; i++) {
        const char *token = output_token(config, vocab, ids[i]);
        if (token)
            tokens[(*kept)++] = token;
    }
    return tokens;
}

/* Python's str.isspace() for the character at s (n bytes). */
static bool is_unicode_space(const unsigned char *s, size_t n)
{
    uint32_t c = s[0];
    if (n == 2)
        c = (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    else if (n == 3)
        c = (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    else if (n == 4)
        return false;
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* U+2581 (the pieces' word boundary) -> space, then leading and trailing
 * white space removed, in place, as Hugging Face's Marian tokenizer does. */
static void finish_pieces_text(char *text)
{
    size_t n = strlen(text), used = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 2 < n && memcmp(text + i, "\xE2\x96\x81", 3) == 0) {
            text[used++] = ' ';
            i += 2;
        } else {
            text[used++] = text[i];
        }
    }
    text[used] = '\0';
    const char *problem = NULL;
    size_t start = used, end = 0;
    for (size_t i = 0; i < used;) {
        size_t len = utf8_sequence((const unsigned char *)text + i, used - i, &problem);
        if (len == 0)
            len = 1;
        if (!is_unicode_space((const unsigned char *)text + i, len)) {
            if (start == used)
                start = i;
            end = i + len;
        }
        i += len;
    }
    if (start == used)
        start = end = 0;
    memmove(text, text + start, end - start);
    text[end - start] = '\0';
}

static char *detokenize_pieces(const ted_config *config, const ted_vocab *vocab,
                               const ted_spm *spm, const int *ids, int count)
{
    int kept = 0;
    const char **tokens = output_tokens(config, vocab, ids, count, &kept);
    if (!tokens)
        return NULL;
    char *text = ted_spm_decode(spm, tokens, kept);
    free(tokens);
    if (text)
        finish_pieces_text(text);
    return text;
}

char *ted_detokenize(const ted_config *config, const ted_vocab *vocab, const ted_spm *spm,
                     const int *ids, int count)
{
    if (!config || !vocab || (!ids && count > 0))
        return NULL;
    if (config->tokenizer == TED_TOKENIZER_SENTENCEPIECE)
        return spm ? detokenize_pieces(config, vocab, spm, ids, count) : NULL;
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
