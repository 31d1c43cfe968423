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
#include "core/limits.h"
#include "core/utf8.h"
#include "io/config.h"
#include "io/normalize.h"
#include "io/sentencepiece.h"

/* The length of the UTF-8 character at `s` (`available` bytes left), or 0
 * with `*problem` set when it is not a valid one (a NUL byte is not). */
static size_t utf8_sequence(const unsigned char *s, size_t available, const char **problem)
{
    if (s[0] == 0) {
        *problem = "NUL byte";
        return 0;
    }
    int n = ted_utf8_char(s, available, problem);
    return n > 0 ? (size_t)n : 0;
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

static void append(id_list *list, const ted_tokenizer *t, const char *token, size_t n)
{
    int id = ted_vocab_lookup(t->vocab, token, n);
    if (id < 0) {
        id = t->config->unk_id;
        list->unknown++;
    }
    list->ids[list->count++] = id;
}

static void split_words(id_list *list, const ted_tokenizer *t, const char *text, size_t length)
{
    size_t i = 0;
    while (i < length) {
        while (i < length && is_space(text[i]))
            i++;
        size_t start = i;
        while (i < length && !is_space(text[i]))
            i++;
        if (i > start)
            append(list, t, text + start, i - start);
    }
}

static void split_characters(id_list *list, const ted_tokenizer *t, const char *text,
                             size_t length)
{
    const char *problem = NULL;
    for (size_t i = 0; i < length;) {
        size_t n = utf8_sequence((const unsigned char *)text + i, length - i, &problem);
        if (text[i] != '\r' && text[i] != '\n')
            append(list, t, text + i, n);
        i += n;
    }
}

/* ---- SentencePiece, as Hugging Face's MarianTokenizer splits text ---------- */

/* The spellings of the special tokens unk, eos and pad (the source or
 * target vocabulary's tokens at their ids). They cut the text into chunks
 * before anything else, each becoming its id, as transformers' split on
 * added tokens does ("a</s>b": "a", "</s>", "b"). */
typedef struct special_tokens {
    const char *text[3];
    size_t length[3];
    int id[3];
} special_tokens;

static special_tokens special_spellings(const ted_tokenizer *t)
{
    special_tokens s;
    const int ids[3] = {t->config->unk_id, t->config->eos_id, t->config->pad_id};
    for (int i = 0; i < 3; i++) {
        const char *token = ted_vocab_token(t->vocab, ids[i]);
        s.text[i] = token;
        s.length[i] = token ? strlen(token) : 0;
        s.id[i] = ids[i];
    }
    return s;
}

/* The special token spelled at `text` (`length` bytes left), the longest
 * when several are: its index in `s`, or -1. */
static int special_at(const special_tokens *s, const char *text, size_t length)
{
    int found = -1;
    for (int i = 0; i < 3; i++)
        if (s->length[i] > 0 && s->length[i] <= length &&
            memcmp(text, s->text[i], s->length[i]) == 0 &&
            (found < 0 || s->length[i] > s->length[found]))
            found = i;
    return found;
}

/* The language code of a line, as transformers' Marian tokenizer finds
 * them with the regular expression ">>.+<<" (greedy; "." is anything but a
 * newline): from the line's first ">>" to its last "<<", at least one
 * character between. Returns false when the `length` bytes at `line` (one
 * line) hold none; else sets the code's byte range [*begin, *end). */
static bool language_code(const char *line, size_t length, size_t *begin, size_t *end)
{
    const char *open = NULL;
    for (size_t i = 0; !open && i + 1 < length; i++)
        if (line[i] == '>' && line[i + 1] == '>')
            open = line + i;
    size_t close = length;
    while (close >= 2 && !(line[close - 1] == '<' && line[close - 2] == '<'))
        close--;
    if (!open || close < 2 || close < (size_t)(open - line) + 5)
        return false;
    *begin = (size_t)(open - line);
    *end = close;
    return true;
}

/* The chunk without its language codes (transformers removes every match,
 * wherever it is), in `out` (room for `length` bytes); returns the length
 * kept. `*leading` is the length of the code at the very start (the one
 * that becomes a token), 0 when the chunk does not start with one. */
static size_t remove_language_codes(const char *text, size_t length, char *out,
                                    size_t *leading)
{
    size_t used = 0, begin, end;
    *leading = 0;
    for (size_t start = 0; start < length;) {
        const char *newline = memchr(text + start, '\n', length - start);
        size_t line = newline ? (size_t)(newline - (text + start)) + 1 : length - start;
        if (!language_code(text + start, line, &begin, &end))
            begin = end = line;
        else if (start == 0 && begin == 0)
            *leading = end;
        memcpy(out + used, text + start, begin);
        memcpy(out + used + begin, text + start + end, line - end);
        used += begin + line - end;
        start += line;
    }
    return used;
}

/* Appends the id of each of `count` NUL-separated `pieces` (a tokenizer's
 * output, freed here). */
static ted_status append_each(id_list *list, const ted_tokenizer *t, char *pieces, int count,
                              ted_error *err)
{
    ted_status s = reserve_ids(list, count, err);
    const char *piece = pieces;
    for (int i = 0; !s && i < count; i++) {
        size_t n = strlen(piece);
        append(list, t, piece, n);
        piece += n + 1;
    }
    free(pieces);
    return s;
}

static ted_status append_pieces(id_list *list, const ted_tokenizer *t, const char *text,
                                size_t length, ted_error *err)
{
    char *pieces = NULL;
    int count = 0;
    ted_status s = ted_spm_encode(t->spm, text, length, &pieces, &count, err);
    return s ? s : append_each(list, t, pieces, count, err);
}

/* A chunk between special tokens: its leading language code as one token,
 * then SentencePiece's pieces of the rest, codes removed. */
static ted_status split_chunk(id_list *list, const ted_tokenizer *t, const char *text,
                              size_t length, ted_error *err)
{
    char *rest = ted_alloc(length, 1, "input text", err);
    if (!rest)
        return TED_ERR_NOMEM;
    size_t code = 0;
    size_t kept = remove_language_codes(text, length, rest, &code);
    ted_status s = code ? reserve_ids(list, 1, err) : TED_OK;
    if (!s && code)
        append(list, t, text, code);
    if (!s)
        s = append_pieces(list, t, rest, kept, err);
    free(rest);
    return s;
}

static ted_status split_pieces(id_list *list, const ted_tokenizer *t, const char *text,
                               size_t length, ted_error *err)
{
    if (length > SPM_MAX_TEXT_BYTES)
        return ted_fail(err, TED_ERR_INPUT,
                        "%zu bytes, more than the %d the SentencePiece tokenizer takes", length,
                        SPM_MAX_TEXT_BYTES);
    special_tokens specials = special_spellings(t);
    size_t start = 0;
    for (size_t i = 0; i <= length;) {
        int k = i < length ? special_at(&specials, text + i, length - i) : -1;
        if (i < length && k < 0) {
            i++;
            continue;
        }
        ted_status s = TED_OK;
        if (i > start)
            s = split_chunk(list, t, text + start, i - start, err);
        if (!s && k >= 0 && !(s = reserve_ids(list, 1, err)))
            list->ids[list->count++] = specials.id[k];
        if (s || k < 0)
            return s;
        i += specials.length[k];
        start = i;
    }
    return TED_OK;
}

/* ---- Byte-level BPE, as Hugging Face's BartTokenizer ------------------------ */

static ted_status split_bpe(id_list *list, const ted_tokenizer *t, const char *text,
                            size_t length, ted_error *err)
{
    char *pieces = NULL;
    int count = 0;
    ted_status s = ted_bpe_encode(t->bpe, text, length, t->config->add_prefix_space, &pieces,
                                  &count, err);
    return s ? s : append_each(list, t, pieces, count, err);
}

static ted_status split(id_list *list, const ted_tokenizer *t, const char *text, size_t length,
                        ted_error *err)
{
    switch (t->config->tokenizer) {
    case TED_TOKENIZER_CHAR:
        split_characters(list, t, text, length);
        return TED_OK;
    case TED_TOKENIZER_SENTENCEPIECE:
        if (!t->spm)
            return ted_fail(err, TED_ERR_ARGUMENT, "ted_tokenize: no SentencePiece model");
        return split_pieces(list, t, text, length, err);
    case TED_TOKENIZER_BPE:
        if (!t->bpe)
            return ted_fail(err, TED_ERR_ARGUMENT, "ted_tokenize: no BPE merges");
        return split_bpe(list, t, text, length, err);
    default:
        split_words(list, t, text, length);
        return TED_OK;
    }
}

/* With t->config->lowercase, `*text` lowercased in a copy of its own,
 * `*lowered` (the caller frees it); without, or for empty text, `*text` is
 * left as it is and `*lowered` is NULL. */
static ted_status lowercase_copy(const ted_tokenizer *t, const char **text, size_t length,
                                 char **lowered, ted_error *err)
{
    *lowered = NULL;
    if (!t->config->lowercase || length == 0)
        return TED_OK;
    *lowered = ted_alloc(length, 1, "lowercased input", err);
    if (!*lowered)
        return TED_ERR_NOMEM;
    memcpy(*lowered, *text, length);
    lowercase(*lowered, length);
    *text = *lowered;
    return TED_OK;
}

/* ted_tokenize after normalization: `text` (`length` bytes) is checked,
 * lowercased, split and wrapped. */
static ted_status tokenize_text(const ted_tokenizer *t, const char *text, size_t length,
                                ted_token_ids *out, ted_error *err)
{
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
    if (lowercase_copy(t, &text, length, &lowered, err) != TED_OK) {
        free(list.ids);
        return TED_ERR_NOMEM;
    }
    const ted_config *c = t->config;
    if (t->wrap && c->source_bos)
        list.ids[list.count++] = c->bos_id;
    status = split(&list, t, text, length, err);
    if (t->wrap && c->source_eos)
        list.ids[list.count++] = c->eos_id;
    free(lowered);
    if (status) {
        free(list.ids);
        return status;
    }
    *out = (ted_token_ids){list.ids, list.count, list.unknown};
    return TED_OK;
}

/* The language code sacremoses takes for tokenizer.source_language. */
static const char *moses_language(ted_language language)
{
    static const char *const codes[] = {
        [TED_LANGUAGE_NONE] = NULL, [TED_LANGUAGE_EN] = "en", [TED_LANGUAGE_DE] = "de",
        [TED_LANGUAGE_ES] = "es",   [TED_LANGUAGE_FR] = "fr", [TED_LANGUAGE_CS] = "cs",
        [TED_LANGUAGE_CZ] = "cz",
    };
    return codes[language];
}

/* With tokenizer.normalize: moses, the text is checked (errors name offsets
 * in the text as given), then normalized as sacremoses does for the
 * config's source_language (src/io/normalize.h), then tokenized. */
ted_status ted_tokenize(const ted_tokenizer *t, const char *text, size_t length,
                        ted_token_ids *out, ted_error *err)
{
    if (!t || !t->config || !t->vocab || !out || (!text && length > 0))
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_tokenize: tokenizer, its config and vocab, text and out are "
                        "required");
    *out = (ted_token_ids){NULL, 0, 0};
    if (t->config->normalize != TED_NORMALIZE_MOSES || !text)
        return tokenize_text(t, text, length, out, err);
    size_t characters;
    char *normalized = NULL;
    ted_status status = check_utf8(text, length, &characters, err);
    if (status == TED_OK)
        status = ted_normalize_moses(text, length, moses_language(t->config->source_language),
                                     &normalized, &length, err);
    if (status == TED_OK)
        status = tokenize_text(t, normalized, length, out, err);
    free(normalized);
    return status;
}

/* The token of `id` when it belongs in the output, else NULL. Unknown
 * words are dropped from SentencePiece output, as Hugging Face's
 * tokenizers drop every special token. */
static const char *output_token(const ted_config *config, const ted_vocab *vocab, int id)
{
    if (id == config->bos_id || id == config->pad_id)
        return NULL;
    if (config->tokenizer != TED_TOKENIZER_WHITESPACE &&
        config->tokenizer != TED_TOKENIZER_CHAR && id == config->unk_id)
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

/* Every `from` in `text` replaced by `to`, no longer, left to right, in place. */
static void replace_all(char *text, const char *from, const char *to)
{
    size_t from_length = strlen(from), to_length = strlen(to), used = 0;
    for (size_t i = 0; text[i];) {
        if (strncmp(text + i, from, from_length) == 0) {
            memcpy(text + used, to, to_length);
            used += to_length;
            i += from_length;
        } else {
            text[used++] = text[i++];
        }
    }
    text[used] = '\0';
}

/* transformers' clean_up_tokenization, which its decode() applies by
 * default: no space before . ? ! , and a few English contractions, each
 * replacement over the whole text in turn. */
static void clean_up_tokenization(char *text)
{
    static const char *const replacements[][2] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (size_t i = 0; i < sizeof replacements / sizeof replacements[0]; i++)
        replace_all(text, replacements[i][0], replacements[i][1]);
}

/* Appends `piece` (n bytes) to the malloc'ed text (*used bytes, NUL
 * after); false when out of memory, the text then freed. */
static bool append_text(char **text, size_t *used, const char *piece, size_t n)
{
    char *grown = realloc(*text, *used + n + 1);
    if (!grown) {
        free(*text);
        *text = NULL;
        return false;
    }
    memcpy(grown + *used, piece, n);
    *used += n;
    grown[*used] = '\0';
    *text = grown;
    return true;
}

/* SentencePiece's text of the pieces, as transformers' Marian tokenizer
 * makes it (convert_tokens_to_string): the runs between special tokens
 * decoded one by one, each special token written as it is and a space.
 * The only special token output_tokens leaves is a row without a token
 * (TED_VOCAB_NO_TOKEN at an id other than unk_id), which transformers
 * reads as <unk>. */
static char *decode_pieces(const ted_spm *spm, const char *const *tokens, int count)
{
    size_t used = 0;
    char *text = NULL;
    int start = 0;
    for (int i = 0; i <= count; i++) {
        bool special = i < count && strcmp(tokens[i], TED_VOCAB_NO_TOKEN) == 0;
        if (i < count && !special)
            continue;
        char *run = ted_spm_decode(spm, tokens + start, i - start);
        if (!text && i == count)
            return run;  /* no special token: the text is SentencePiece's */
        bool ok = run && append_text(&text, &used, run, strlen(run)) &&
                  (!special || append_text(&text, &used, TED_VOCAB_NO_TOKEN " ",
                                           strlen(TED_VOCAB_NO_TOKEN " ")));
        free(run);
        if (!ok) {
            free(text);
            return NULL;
        }
        start = i + 1;
    }
    return text;
}

static char *detokenize_pieces(const ted_config *config, const ted_vocab *vocab,
                               const ted_spm *spm, const int *ids, int count)
{
    int kept = 0;
    const char **tokens = output_tokens(config, vocab, ids, count, &kept);
    if (!tokens)
        return NULL;
    char *text = decode_pieces(spm, tokens, kept);
    free(tokens);
    if (text && config->clean_up_text) {
        finish_pieces_text(text);
        clean_up_tokenization(text);
    }
    return text;
}

/* One line of text: CR and LF become spaces, NUL bytes are dropped, in
 * place; returns the bytes kept. */
static size_t one_line(char *text, size_t length)
{
    size_t used = 0;
    for (size_t i = 0; i < length; i++)
        if (text[i] != '\0')
            text[used++] = text[i] == '\n' || text[i] == '\r' ? ' ' : text[i];
    return used;
}

/* The bytes of the output tokens' byte characters, made one line, valid
 * UTF-8 as Python's decode(errors="replace") makes it, and cleaned up as
 * transformers' decode() does. */
static char *detokenize_bytes(const ted_config *config, const ted_vocab *vocab, const int *ids,
                              int count)
{
    int kept = 0;
    const char **tokens = output_tokens(config, vocab, ids, count, &kept);
    size_t bytes = 1;
    for (int i = 0; tokens && i < kept; i++)
        bytes += strlen(tokens[i]);
    char *raw = tokens ? malloc(bytes) : NULL;
    size_t used = 0;
    for (int i = 0; raw && i < kept; i++)
        used += ted_bpe_token_bytes(tokens[i], raw + used);
    free(tokens);
    char *text = raw ? ted_utf8_replace_invalid(raw, one_line(raw, used)) : NULL;
    free(raw);
    if (text)
        clean_up_tokenization(text);
    return text;
}

char *ted_detokenize(const ted_config *config, const ted_vocab *vocab, const ted_spm *spm,
                     const int *ids, int count)
{
    if (!config || !vocab || (!ids && count > 0))
        return NULL;
    if (config->tokenizer == TED_TOKENIZER_SENTENCEPIECE)
        return spm ? detokenize_pieces(config, vocab, spm, ids, count) : NULL;
    if (config->tokenizer == TED_TOKENIZER_BPE)
        return detokenize_bytes(config, vocab, ids, count);
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
