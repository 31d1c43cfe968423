/*
 * Moses' punctuation normalization, as sacremoses' MosesPunctNormalizer runs
 * it: a list of regular-expression substitutions, each applied to the whole
 * text (Python's re.sub: left to right, matches never overlapping) before
 * the next, then white space stripped from both ends.
 *
 * Every substitution is hand-coded as a rule that, at a position of the
 * text, either matches and writes its replacement, or does not match; a
 * pass over the text tries the rule at each character in turn, as re.sub
 * does. Most rules are one pattern, "(before) literal (after)", where
 * before and after are optional single characters of a class, kept as they
 * are around the replacement of the literal.
 */
#include "io/normalize.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

typedef enum char_class {
    CLASS_NONE,         /* no character */
    CLASS_DIGIT,        /* \d: a Unicode decimal digit */
    CLASS_AFTER_PAREN,  /* [.!:?;,] */
} char_class;

typedef enum rule_kind {
    RULE_PATTERN,        /* (before)literal(after) -> (before)replacement(after) */
    RULE_SPACES,         /* " +" -> " " */
    RULE_QUOTE_STOPS,    /* "([,.]+) -> \1" */
    RULE_STOPS_QUOTE,    /* (\.+)"(\s*[^<]) -> "\1\2 */
} rule_kind;

typedef struct rule {
    rule_kind kind;
    char_class before, after;
    const char *literal, *replacement;
} rule;

#define LITERAL(from, to) {RULE_PATTERN, CLASS_NONE, CLASS_NONE, from, to}
#define PATTERN(before, from, to, after) {RULE_PATTERN, before, after, from, to}
#define SPACES {RULE_SPACES, CLASS_NONE, CLASS_NONE, " ", " "}

/* sacremoses' EXTRA_WHITESPACE, NORMALIZE_UNICODE_IF_NOT_PENN (on with its
 * default penn=True), NORMALIZE_UNICODE, FRENCH_QUOTES and
 * HANDLE_PSEUDO_SPACES, in its order. */
static const rule every_language[] = {
    LITERAL("\r", ""),
    LITERAL("(", " ("),
    LITERAL(")", ") "),
    SPACES,
    PATTERN(CLASS_NONE, ") ", ")", CLASS_AFTER_PAREN),
    LITERAL("( ", "("),
    LITERAL(" )", ")"),
    PATTERN(CLASS_DIGIT, " %", "%", CLASS_NONE),
    LITERAL(" :", ":"),
    LITERAL(" ;", ";"),
    LITERAL("`", "'"),
    LITERAL("''", " \" "),
    LITERAL(u8"\u201E", "\""),    /* „ */
    LITERAL(u8"\u201C", "\""),    /* “ */
    LITERAL(u8"\u201D", "\""),    /* ” */
    LITERAL(u8"\u2013", "-"),     /* – */
    LITERAL(u8"\u2014", " - "),   /* — */
    /* (sacremoses collapses runs of spaces here too: no rule before the
     * last one, which does it again, looks at spaces) */
    LITERAL(u8"\u00B4", "'"),     /* ´ */
    /* (sacremoses' ([a-zA-Z])‘([a-zA-Z]) and ([a-zA-Z])’([a-zA-Z]) -> \1'\2
     * would come here: the rules below turn every ‘ and ’ into ' anyway) */
    LITERAL(u8"\u2018", "'"),    /* ‘ */
    LITERAL(u8"\u201A", "'"),     /* ‚ */
    LITERAL(u8"\u2019", "'"),    /* ’ */
    LITERAL("''", "\""),
    /* (sacremoses' "´´" -> '"' would come here: no "´" is left to match) */
    LITERAL(u8"\u2026", "..."),   /* … */
    LITERAL(u8"\u00A0\u00AB\u00A0", "\""),  /* « between no-break spaces */
    LITERAL(u8"\u00AB\u00A0", "\""),
    LITERAL(u8"\u00AB", "\""),
    LITERAL(u8"\u00A0\u00BB\u00A0", "\""),  /* » */
    LITERAL(u8"\u00A0\u00BB", "\""),
    LITERAL(u8"\u00BB", "\""),
    LITERAL(u8"\u00A0%", "%"),
    LITERAL(u8"n\u00BA\u00A0", u8"n\u00BA "),  /* nº */
    LITERAL(u8"\u00A0:", ":"),
    LITERAL(u8"\u00A0\u00BAC", u8" \u00BAC"),  /* ºC */
    LITERAL(u8"\u00A0cm", " cm"),
    LITERAL(u8"\u00A0?", "?"),
    LITERAL(u8"\u00A0!", "!"),
    LITERAL(u8"\u00A0;", ";"),
    LITERAL(u8",\u00A0", ", "),
    SPACES,
};

/* EN_QUOTATION_FOLLOWED_BY_COMMA */
static const rule english_quotes[] = {
    {RULE_QUOTE_STOPS, CLASS_NONE, CLASS_NONE, "\"", "\""},
};

/* DE_ES_FR_QUOTATION_FOLLOWED_BY_COMMA */
static const rule german_spanish_french_quotes[] = {
    LITERAL(",\"", "\","),
    {RULE_STOPS_QUOTE, CLASS_NONE, CLASS_NONE, "\"", "\""},
};

/* DE_ES_CZ_CS_FR, and OTHER for every other language */
static const rule decimal_comma = PATTERN(CLASS_DIGIT, u8"\u00A0", ",", CLASS_DIGIT);
static const rule decimal_point = PATTERN(CLASS_DIGIT, u8"\u00A0", ".", CLASS_DIGIT);

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define MAX_RULES (COUNT(every_language) + COUNT(german_spanish_french_quotes) + 1)

typedef struct code_range {
    uint32_t first, last;
} code_range;

/* Python 3.11's str.isspace(), which is also what re's \s matches. */
static const code_range white_space[] = {
    {0x0009, 0x000D}, {0x001C, 0x0020}, {0x0085, 0x0085}, {0x00A0, 0x00A0},
    {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
    {0x205F, 0x205F}, {0x3000, 0x3000},
};

/* Python 3.11's str.isdecimal() (Unicode 14.0, category Nd), re's \d. */
static const code_range decimal_digits[] = {
    {0x0030, 0x0039}, {0x0660, 0x0669}, {0x06F0, 0x06F9}, {0x07C0, 0x07C9},
    {0x0966, 0x096F}, {0x09E6, 0x09EF}, {0x0A66, 0x0A6F}, {0x0AE6, 0x0AEF},
    {0x0B66, 0x0B6F}, {0x0BE6, 0x0BEF}, {0x0C66, 0x0C6F}, {0x0CE6, 0x0CEF},
    {0x0D66, 0x0D6F}, {0x0DE6, 0x0DEF}, {0x0E50, 0x0E59}, {0x0ED0, 0x0ED9},
    {0x0F20, 0x0F29}, {0x1040, 0x1049}, {0x1090, 0x1099}, {0x17E0, 0x17E9},
    {0x1810, 0x1819}, {0x1946, 0x194F}, {0x19D0, 0x19D9}, {0x1A80, 0x1A89},
    {0x1A90, 0x1A99}, {0x1B50, 0x1B59}, {0x1BB0, 0x1BB9}, {0x1C40, 0x1C49},
    {0x1C50, 0x1C59}, {0xA620, 0xA629}, {0xA8D0, 0xA8D9}, {0xA900, 0xA909},
    {0xA9D0, 0xA9D9}, {0xA9F0, 0xA9F9}, {0xAA50, 0xAA59}, {0xABF0, 0xABF9},
    {0xFF10, 0xFF19}, {0x104A0, 0x104A9}, {0x10D30, 0x10D39}, {0x11066, 0x1106F},
    {0x110F0, 0x110F9}, {0x11136, 0x1113F}, {0x111D0, 0x111D9}, {0x112F0, 0x112F9},
    {0x11450, 0x11459}, {0x114D0, 0x114D9}, {0x11650, 0x11659}, {0x116C0, 0x116C9},
    {0x11730, 0x11739}, {0x118E0, 0x118E9}, {0x11950, 0x11959}, {0x11C50, 0x11C59},
    {0x11D50, 0x11D59}, {0x11DA0, 0x11DA9}, {0x16A60, 0x16A69}, {0x16AC0, 0x16AC9},
    {0x16B50, 0x16B59}, {0x1D7CE, 0x1D7FF}, {0x1E140, 0x1E149}, {0x1E2F0, 0x1E2F9},
    {0x1E950, 0x1E959}, {0x1FBF0, 0x1FBF9},
};

#define NOT_A_CHARACTER 0xFFFFFFFFu

static bool in_ranges(uint32_t c, const code_range *ranges, size_t count)
{
    for (size_t i = 0; i < count && ranges[i].first <= c; i++)
        if (c <= ranges[i].last)
            return true;
    return false;
}

/* The character at s (n > 0 bytes left): its byte length, and its code
 * point in *c, or NOT_A_CHARACTER for a byte that does not start a valid
 * UTF-8 sequence (then the length is 1). */
static size_t decode(const unsigned char *s, size_t n, uint32_t *c)
{
    static const uint32_t smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t length = s[0] < 0x80 ? 1 : s[0] < 0xC0 ? 0 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3
                  : s[0] < 0xF8 ? 4 : 0;
    *c = NOT_A_CHARACTER;
    if (length == 0 || length > n)
        return 1;
    uint32_t code = length == 1 ? s[0] : s[0] & (0x7F >> length);
    for (size_t i = 1; i < length; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 1;
        code = code << 6 | (s[i] & 0x3F);
    }
    if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
        return 1;
    *c = code;
    return length;
}

static bool is_white_space(uint32_t c)
{
    return in_ranges(c, white_space, COUNT(white_space));
}

/* The byte length of the character at s[at] when it is of class `k`, else 0. */
static size_t class_length(char_class k, const unsigned char *s, size_t n, size_t at)
{
    if (k == CLASS_NONE || at >= n)
        return 0;
    uint32_t c;
    size_t length = decode(s + at, n - at, &c);
    switch (k) {
    case CLASS_DIGIT:
        return in_ranges(c, decimal_digits, COUNT(decimal_digits)) ? length : 0;
    default:  /* CLASS_AFTER_PAREN */
        return c < 0x80 && c && strchr(".!:?;,", (int)c) ? 1 : 0;
    }
}

typedef struct writer {
    char *bytes;
    size_t used;
} writer;

static void put(writer *w, const void *bytes, size_t n)
{
    memcpy(w->bytes + w->used, bytes, n);
    w->used += n;
}

static size_t run_of(const unsigned char *s, size_t n, size_t at, const char *set)
{
    size_t end = at;
    while (end < n && s[end] && strchr(set, s[end]))
        end++;
    return end - at;
}

/* (before)literal(after) at s[at]: the bytes matched, 0 when none. */
static size_t match_pattern(const rule *r, const unsigned char *s, size_t n, size_t at,
                            writer *w)
{
    size_t before = class_length(r->before, s, n, at);
    if (r->before != CLASS_NONE && before == 0)
        return 0;
    size_t literal = strlen(r->literal), start = at + before;
    if (n - start < literal || memcmp(s + start, r->literal, literal) != 0)
        return 0;
    size_t after = class_length(r->after, s, n, start + literal);
    if (r->after != CLASS_NONE && after == 0)
        return 0;
    put(w, s + at, before);
    put(w, r->replacement, strlen(r->replacement));
    put(w, s + start + literal, after);
    return before + literal + after;
}

/* The end of "(\s*[^<]) when it matches at s[quote], else 0. The \s* run
 * is greedy, then gives its last character back to [^<] when '<' or the
 * end of the text follows it. */
static size_t quote_tail_end(const unsigned char *s, size_t n, size_t quote)
{
    if (quote >= n || s[quote] != '"')
        return 0;
    size_t start = quote + 1, end = start, last = 0;
    uint32_t c = NOT_A_CHARACTER;
    while (end < n && (last = decode(s + end, n - end, &c), is_white_space(c)))
        end += last;
    if (end < n && c != '<')
        return end + last;
    return end > start ? end : 0;
}

/* (\.+)"(\s*[^<]) at s[at] -> "\1\2. When it does not match, it matches
 * nowhere inside the run of full stops either, which is then copied whole
 * (trying each of its positions would take quadratic time). */
static size_t match_stops_quote(const unsigned char *s, size_t n, size_t at, writer *w)
{
    size_t stops = run_of(s, n, at, ".");
    size_t end = stops > 0 ? quote_tail_end(s, n, at + stops) : 0;
    if (end == 0) {
        put(w, s + at, stops);
        return stops;
    }
    put(w, "\"", 1);
    put(w, s + at, stops);
    put(w, s + at + stops + 1, end - (at + stops + 1));
    return end - at;
}

/* Whether rule `r` matches at s[at]; if so, writes its replacement and
 * returns the bytes matched, else returns 0. */
static size_t match(const rule *r, const unsigned char *s, size_t n, size_t at, writer *w)
{
    size_t length;
    switch (r->kind) {
    case RULE_SPACES:
        length = run_of(s, n, at, " ");
        if (length)
            put(w, " ", 1);
        return length;
    case RULE_QUOTE_STOPS:
        length = s[at] == '"' ? run_of(s, n, at + 1, ",.") : 0;
        if (length) {
            put(w, s + at + 1, length);
            put(w, "\"", 1);
        }
        return length ? length + 1 : 0;
    case RULE_STOPS_QUOTE:
        return match_stops_quote(s, n, at, w);
    default:
        return match_pattern(r, s, n, at, w);
    }
}

/* One re.sub pass of `r` over n bytes of `in`; out has room for what
 * output_bound() gives. Returns the bytes written. */
static size_t apply(const rule *r, const char *in, size_t n, char *out)
{
    const unsigned char *s = (const unsigned char *)in;
    writer w = {out, 0};
    for (size_t at = 0; at < n;) {
        size_t matched = match(r, s, n, at, &w);
        if (matched == 0) {
            uint32_t c;
            matched = decode(s + at, n - at, &c);
            put(&w, s + at, matched);
        }
        at += matched;
    }
    return w.used;
}

/* The buffer a pass of `r` over n bytes needs, its terminating NUL
 * counted, or SIZE_MAX when that does not fit in size_t: each match takes
 * at least the literal's bytes and writes at most the replacement's more. */
static size_t output_bound(const rule *r, size_t n)
{
    size_t literal = strlen(r->literal), replacement = strlen(r->replacement);
    size_t growth = 0;
    if (replacement > literal)
        growth = ted_mul_size(n / literal, replacement - literal);
    return growth >= SIZE_MAX - n ? SIZE_MAX : n + growth + 1;
}

static bool is_one_of(const char *language, const char *const *codes)
{
    for (; language && *codes; codes++)
        if (strcmp(language, *codes) == 0)
            return true;
    return false;
}

/* The rules MosesPunctNormalizer(language) applies, in order. */
static size_t pick_rules(const char *language, const rule **rules)
{
    static const char *const quote_comma_codes[] = {"de", "es", "fr", NULL};
    static const char *const decimal_comma_codes[] = {"de", "es", "cz", "cs", "fr", NULL};
    static const char *const english[] = {"en", NULL};
    size_t count = 0;
    for (size_t i = 0; i < COUNT(every_language); i++)
        rules[count++] = &every_language[i];
    if (is_one_of(language, english))
        rules[count++] = &english_quotes[0];
    else if (is_one_of(language, quote_comma_codes))
        for (size_t i = 0; i < COUNT(german_spanish_french_quotes); i++)
            rules[count++] = &german_spanish_french_quotes[i];
    rules[count++] = is_one_of(language, decimal_comma_codes) ? &decimal_comma : &decimal_point;
    return count;
}

/* Python's str.strip(): white space off both ends of s[0..*n), in place. */
static void strip(char *s, size_t *n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t start = *n, end = 0;
    for (size_t at = 0; at < *n;) {
        uint32_t c;
        size_t length = decode(u + at, *n - at, &c);
        if (!is_white_space(c)) {
            if (start == *n)
                start = at;
            end = at + length;
        }
        at += length;
    }
    if (start == *n)
        start = end = 0;
    memmove(s, s + start, end - start);
    *n = end - start;
}

/* Makes `*buffer` hold at least `size` bytes. */
static ted_status reserve(char **buffer, size_t *capacity, size_t size, ted_error *err)
{
    if (size <= *capacity)
        return TED_OK;
    if (size == SIZE_MAX)
        return ted_fail(err, TED_ERR_INPUT, "normalize: input text is too long");
    char *grown = realloc(*buffer, size);
    if (!grown)
        return ted_fail(err, TED_ERR_NOMEM, "normalize: out of memory for %zu bytes", size);
    *buffer = grown;
    *capacity = size;
    return TED_OK;
}

ted_status ted_normalize_moses(const char *text, size_t length, const char *language,
                               char **out, size_t *out_length, ted_error *err)
{
    if (!out || !out_length || (!text && length > 0))
        return ted_fail(err, TED_ERR_ARGUMENT, "normalize: text, out and out_length are required");
    *out = NULL;
    const rule *rules[MAX_RULES];
    size_t count = pick_rules(language, rules);
    char *buffers[2] = {NULL, NULL};
    size_t capacities[2] = {0, 0};
    const char *in = text;
    size_t n = length;
    ted_status status = TED_OK;
    for (size_t i = 0; i < count && status == TED_OK; i++) {
        char **to = &buffers[i % 2];
        status = reserve(to, &capacities[i % 2], output_bound(rules[i], n), err);
        if (status == TED_OK) {
            n = apply(rules[i], in, n, *to);
            in = *to;
        }
    }
    char *result = buffers[(count - 1) % 2];
    free(buffers[count % 2]);
    if (status != TED_OK) {
        free(result);
        return status;
    }
    strip(result, &n);
    result[n] = '\0';
    *out = result;
    *out_length = n;
    return TED_OK;
}
