/*
 * Byte-level BPE, as GPT-2's tokenizer (and BART's, which is GPT-2's):
 * the text is cut into parts by GPT-2's pattern, each byte of a part
 * becomes one of 256 printable characters (bytes_to_unicode: the printable
 * Latin-1 bytes stand for themselves, the 68 others for U+0100 on), and
 * adjacent symbols are merged, lowest rank first, while a merge applies.
 * Each pass merges every occurrence of the best pair, left to right; the
 * rank of each adjacent pair is kept and only looked up again where a
 * merge changed a symbol, so a part of n bytes costs O(n^2) integer steps
 * and O(n) lookups.
 */
#include "io/bpe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <unicode/uchar.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "core/limits.h"

/* ---- The merges file ---------------------------------------------------- */

/* Every line is two symbols and one space between them. */
static ted_status check_merges(const ted_bpe *bpe, const char *name, ted_error *err)
{
    for (int i = 0; i < bpe->ranks.size; i++) {
        const char *line = bpe->ranks.tokens[i];
        const char *space = strchr(line, ' ');
        if (!space || space == line || !space[1] || strchr(space + 1, ' '))
            return ted_fail(err, TED_ERR_VOCAB,
                            "%s:%d: \"%s\" is no merge; expected two symbols and one space "
                            "between them",
                            name, i + 1, line);
        if (ted_vocab_lookup(&bpe->ranks, line, strlen(line)) != i)
            return ted_fail(err, TED_ERR_VOCAB, "%s:%d: the merge \"%s\" is given twice", name,
                            i + 1, line);
    }
    return TED_OK;
}

ted_status ted_bpe_parse(const char *text, size_t length, const char *name, ted_bpe *bpe,
                         ted_error *err)
{
    if (!text || !name || !bpe)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_bpe_parse: text, name and bpe are required");
    memset(bpe, 0, sizeof *bpe);
    ted_status s = ted_vocab_parse(text, length, name, &bpe->ranks, err);
    if (!s && (s = check_merges(bpe, name, err)))
        ted_bpe_free(bpe);
    return s;
}

static ted_status parse_merges(const char *text, size_t length, const char *name, void *bpe,
                               ted_error *err)
{
    return ted_bpe_parse(text, length, name, bpe, err);
}

ted_status ted_bpe_load(const char *path, ted_bpe *bpe, ted_error *err)
{
    if (!path || !bpe)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_bpe_load: path and bpe are required");
    memset(bpe, 0, sizeof *bpe);
    return ted_parse_file(path, VOCAB_MAX_BYTES, TED_ERR_VOCAB, "a merges file", parse_merges,
                          bpe, err);
}

void ted_bpe_free(ted_bpe *bpe)
{
    if (bpe)
        ted_vocab_free(&bpe->ranks);
}

/* ---- Bytes and their characters ------------------------------------------ */

/* The bytes that stand for themselves: '!'..'~', 0xA1..0xAC, 0xAE..0xFF. */
static bool printable_byte(unsigned b)
{
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

/* GPT-2's character for byte `b`: itself when printable, else U+0100 plus
 * the count of non-printable bytes below it. */
static uint32_t byte_char(unsigned b)
{
    if (printable_byte(b))
        return b;
    if (b <= 0x20)
        return 0x100 + b;
    if (b <= 0xA0)
        return 0x100 + 33 + (b - 0x7F);
    return 0x100 + 67;  /* 0xAD */
}

/* The byte GPT-2's character `c` stands for, or -1. */
static int char_byte(uint32_t c)
{
    if (c < 0x100)
        return printable_byte(c) ? (int)c : -1;
    if (c < 0x100 + 33)
        return (int)(c - 0x100);
    if (c < 0x100 + 67)
        return (int)(0x7F + c - 0x100 - 33);
    return c == 0x100 + 67 ? 0xAD : -1;
}

/* The code point of the valid UTF-8 character at `s`, its length in `*n`. */
static uint32_t decode_char(const unsigned char *s, size_t *n)
{
    if (s[0] < 0x80) {
        *n = 1;
        return s[0];
    }
    if (s[0] < 0xE0) {
        *n = 2;
        return (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    }
    if (s[0] < 0xF0) {
        *n = 3;
        return (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    }
    *n = 4;
    return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
           (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
}

size_t ted_bpe_token_bytes(const char *token, char *out)
{
    const unsigned char *s = (const unsigned char *)token;
    size_t used = 0, n = 1;
    for (size_t i = 0; s[i]; i += n) {
        int b = -1;
        if (s[i] < 0x80 || (s[i] >= 0xC2 && s[i] < 0xE0 && (s[i + 1] & 0xC0) == 0x80))
            b = char_byte(decode_char(s + i, &n));
        else
            n = 1;
        if (b >= 0) {
            out[used++] = (char)b;
        } else {
            memcpy(out + used, s + i, n);
            used += n;
        }
    }
    return used;
}

/* Writes `c` (below U+0800) as UTF-8 at `out`; returns its length. */
static size_t encode_char(uint32_t c, char *out)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    out[0] = (char)(0xC0 | c >> 6);
    out[1] = (char)(0x80 | (c & 0x3F));
    return 2;
}

/* ---- GPT-2's pattern ---------------------------------------------------- */

enum { CLASS_LETTER, CLASS_NUMBER, CLASS_SPACE, CLASS_OTHER };

/* \p{L}, \p{N}, \s (Unicode's White_Space, as Python's regex module has
 * it) or none of them. */
static int char_class(uint32_t c)
{
    if ((c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
        (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
        c == 0x205F || c == 0x3000)
        return CLASS_SPACE;
    switch (u_charType((UChar32)c)) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
        return CLASS_LETTER;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER:
        return CLASS_NUMBER;
    default:
        return CLASS_OTHER;
    }
}

/* The class of the character at text[i], its length in `*n`. */
static int class_at(const char *text, size_t i, size_t *n)
{
    return char_class(decode_char((const unsigned char *)text + i, n));
}

/* The end of the run of characters of class `cls` from `i`; `*last`, the
 * start of its last character. */
static size_t run_end(const char *text, size_t length, size_t i, int cls, size_t *last)
{
    size_t n = 0;
    *last = i;
    while (i < length && class_at(text, i, &n) == cls) {
        *last = i;
        i += n;
    }
    return i;
}

/* The length of the contraction ('s 't 're 've 'm 'll 'd) at text[i], or 0. */
static size_t contraction(const char *text, size_t length, size_t i)
{
    if (text[i] != '\'' || i + 1 >= length)
        return 0;
    if (strchr("stmd", text[i + 1]) && text[i + 1])
        return 2;
    static const char *const two[] = {"re", "ve", "ll"};
    for (int k = 0; k < 3; k++)
        if (i + 2 < length && memcmp(text + i + 1, two[k], 2) == 0)
            return 3;
    return 0;
}

/* The end of the part that starts at text[i] (i < length). */
static size_t part_end(const char *text, size_t length, size_t i)
{
    size_t n, last, c = contraction(text, length, i);
    if (c)
        return i + c;
    size_t j = text[i] == ' ' && i + 1 < length ? i + 1 : i;
    int cls = class_at(text, j, &n);
    if (cls != CLASS_SPACE)
        return run_end(text, length, j, cls, &last);
    /* \s+(?!\S), else \s+: a run of white space but the last character
     * when something follows it */
    size_t end = run_end(text, length, i, CLASS_SPACE, &last);
    return end == length || last == i ? end : last;
}

/* ---- Merging ------------------------------------------------------------- */

/* One part being merged: its byte characters in `chars`, and the symbols,
 * each a range of `chars`; rank[i] is the rank of symbols i and i + 1, -1
 * when no merge joins them. */
typedef struct word {
    char chars[2 * BPE_MAX_WORD_BYTES];
    int start[BPE_MAX_WORD_BYTES + 1];
    int rank[BPE_MAX_WORD_BYTES];
    bool changed[BPE_MAX_WORD_BYTES];
    char key[4 * BPE_MAX_WORD_BYTES + 1];
    int count;  /* symbols; symbol i is chars[start[i], start[i + 1]) */
} word;

static int pair_rank(const ted_bpe *bpe, word *w, int i)
{
    size_t left = (size_t)(w->start[i + 1] - w->start[i]);
    size_t right = (size_t)(w->start[i + 2] - w->start[i + 1]);
    memcpy(w->key, w->chars + w->start[i], left);
    w->key[left] = ' ';
    memcpy(w->key + left + 1, w->chars + w->start[i + 1], right);
    return ted_vocab_lookup(&bpe->ranks, w->key, left + 1 + right);
}

/* Every pair of rank `best` merged, left to right; the ranks of the pairs
 * a merge touched looked up again. */
static void merge_pass(const ted_bpe *bpe, word *w, int best)
{
    int kept = 0;
    for (int i = 0; i < w->count; kept++) {
        bool merge = i + 1 < w->count && w->rank[i] == best;
        w->start[kept] = w->start[i];
        w->changed[kept] = merge;
        /* the rank of the pair after an unchanged symbol, for now */
        w->rank[kept] = merge ? -1 : (i + 1 < w->count ? w->rank[i] : -1);
        i += merge ? 2 : 1;
    }
    w->start[kept] = w->start[w->count];
    w->count = kept;
    for (int i = 0; i + 1 < w->count; i++)
        if (w->changed[i] || w->changed[i + 1])
            w->rank[i] = pair_rank(bpe, w, i);
}

/* Merges the symbols of `w` while a merge applies. */
static void merge_word(const ted_bpe *bpe, word *w)
{
    for (int i = 0; i + 1 < w->count; i++)
        w->rank[i] = pair_rank(bpe, w, i);
    for (;;) {
        int best = -1;
        for (int i = 0; i + 1 < w->count; i++)
            if (w->rank[i] >= 0 && (best < 0 || w->rank[i] < best))
                best = w->rank[i];
        if (best < 0)
            return;
        merge_pass(bpe, w, best);
    }
}

/* The part's bytes as byte characters, each its own symbol. */
static void start_word(word *w, const char *part, size_t length)
{
    int used = 0;
    for (size_t i = 0; i < length; i++) {
        w->start[i] = used;
        used += (int)encode_char(byte_char((unsigned char)part[i]), w->chars + used);
    }
    w->start[length] = used;
    w->count = (int)length;
}

/* Appends the symbols of `w`, each NUL-terminated, at `out`; returns the
 * bytes written. */
static size_t write_symbols(const word *w, char *out)
{
    size_t used = 0;
    for (int i = 0; i < w->count; i++) {
        size_t n = (size_t)(w->start[i + 1] - w->start[i]);
        memcpy(out + used, w->chars + w->start[i], n);
        out[used + n] = '\0';
        used += n + 1;
    }
    return used;
}

/* The text with a space before it when `add_prefix_space` asks for one
 * (GPT-2 adds none before empty text or text that starts with white
 * space), malloc'ed. */
static char *prefixed_text(const char *text, size_t *length, bool add_prefix_space,
                           ted_error *err)
{
    size_t n = 0;
    uint32_t first = *length > 0 ? decode_char((const unsigned char *)text, &n) : ' ';
    /* Python's str.isspace(): White_Space and U+001C..U+001F */
    bool space = char_class(first) == CLASS_SPACE || (first >= 0x1C && first <= 0x1F);
    bool prefix = add_prefix_space && !space;
    char *copy = ted_alloc(*length + 2, 1, "input text", err);
    if (!copy)
        return NULL;
    if (prefix)
        copy[0] = ' ';
    memcpy(copy + prefix, text, *length);
    *length += prefix;
    copy[*length] = '\0';
    return copy;
}

/* Splits `text` (NUL-terminated, valid) into parts and merges each;
 * `out` has room for 3 bytes a text byte. */
static ted_status split_and_merge(const ted_bpe *bpe, const char *text, size_t length,
                                  char *out, int *count, ted_error *err)
{
    word *w = ted_alloc(1, sizeof *w, "a word's symbols", err);
    if (!w)
        return TED_ERR_NOMEM;
    size_t used = 0;
    for (size_t i = 0; i < length;) {
        size_t end = part_end(text, length, i);
        if (end - i > BPE_MAX_WORD_BYTES) {
            free(w);
            return ted_fail(err, TED_ERR_INPUT,
                            "input byte offset %zu: a word of %zu bytes, more than the %d "
                            "the bpe tokenizer takes",
                            i, end - i, BPE_MAX_WORD_BYTES);
        }
        start_word(w, text + i, end - i);
        merge_word(bpe, w);
        used += write_symbols(w, out + used);
        *count += w->count;
        i = end;
    }
    free(w);
    return TED_OK;
}

ted_status ted_bpe_encode(const ted_bpe *bpe, const char *text, size_t length,
                          bool add_prefix_space, char **pieces, int *count, ted_error *err)
{
    *pieces = NULL;
    *count = 0;
    if (length > BPE_MAX_TEXT_BYTES)
        return ted_fail(err, TED_ERR_INPUT,
                        "%zu bytes, more than the %d the bpe tokenizer takes", length,
                        BPE_MAX_TEXT_BYTES);
    char *copy = prefixed_text(text, &length, add_prefix_space, err);
    if (!copy)
        return TED_ERR_NOMEM;
    char *out = ted_alloc(3 * length + 1, 1, "pieces", err);
    ted_status s = out ? split_and_merge(bpe, copy, length, out, count, err) : TED_ERR_NOMEM;
    free(copy);
    if (s) {
        free(out);
        *count = 0;
        return s;
    }
    *pieces = out;
    return TED_OK;
}

/* ---- Bytes back to text ----------------------------------------------------- */

/* The bytes a valid UTF-8 character led by `b` needs after it, and the
 * range its second byte must be in; 0 when `b` leads none. */
static int continuation(unsigned char b, unsigned char *low, unsigned char *high)
{
    *low = 0x80;
    *high = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)
        return 1;
    if (b >= 0xE0 && b <= 0xEF) {
        *low = b == 0xE0 ? 0xA0 : 0x80;
        *high = b == 0xED ? 0x9F : 0xBF;
        return 2;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        *low = b == 0xF0 ? 0x90 : 0x80;
        *high = b == 0xF4 ? 0x8F : 0xBF;
        return 3;
    }
    return 0;
}

/* The length of the valid character at s[0] (`available` bytes), or minus
 * the length of the maximal invalid subsequence there. */
static long sequence_at(const unsigned char *s, size_t available)
{
    if (s[0] < 0x80)
        return 1;
    unsigned char low, high;
    int need = continuation(s[0], &low, &high);
    if (need == 0)
        return -1;
    long k = 1;
    for (; k <= need && (size_t)k < available; k++) {
        if (s[k] < low || s[k] > high)
            break;
        low = 0x80;
        high = 0xBF;
    }
    return k == need + 1 ? k : -k;
}

char *ted_utf8_replace_invalid(const char *text, size_t length)
{
    char *out = malloc(3 * length + 1);
    if (!out)
        return NULL;
    size_t used = 0;
    for (size_t i = 0; i < length;) {
        long n = sequence_at((const unsigned char *)text + i, length - i);
        if (n > 0) {
            memcpy(out + used, text + i, (size_t)n);
            used += (size_t)n;
        } else {
            memcpy(out + used, "\xEF\xBF\xBD", 3);
            used += 3;
            n = -n;
        }
        i += (size_t)n;
    }
    out[used] = '\0';
    return out;
}
