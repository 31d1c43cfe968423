/* The constructs of an HTML page that a browser never makes text
 * (document/inert.h), found in one pass over its bytes as the HTML5
 * tokenizer reads them into a map of the page (html_byte), from which the
 * copy that libxml2 parses is written one maximal stretch at a time, so
 * that constructs that overlap become one. */
#include "document/inert.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "document/foreign.h"
#include "ted/util.h"

enum { PLAIN = HTML_TEXT, TAG = HTML_TAG, RAW = HTML_BLANK, INERT = HTML_INERT };

/* Elements whose text a browser reads to their end tag, and what it is
 * here: RAW (script, with its escapes, and style: libxml2 keeps them raw
 * too), or text in which the constructs are inert up to the end tag
 * (libxml2 parses it as markup). */
enum { DATA, SCRIPT, STYLE, TEXT };
static const struct {
    const char *name;
    int state;
} raw_elements[] = {{"script", SCRIPT},  {"style", STYLE},    {"title", TEXT},
                    {"textarea", TEXT},  {"xmp", TEXT},       {"iframe", TEXT},
                    {"noembed", TEXT},   {"noframes", TEXT},  {"noscript", TEXT},
                    {"plaintext", TEXT}};

typedef struct scan {
    const char *page;
    size_t length;
    unsigned char *map;  /* (length): each byte's html_byte */
    size_t cdata_from, cdata_end;  /* the first "]]>" from cdata_from ends at cdata_end */
    size_t dashes_from, dashes_end;  /* the first "-->" or "--!>" from dashes_from ends there */
    size_t raw_to;       /* the end of the text marked RAW last from a start tag */
    size_t inert_from, inert_to;  /* the stretch marked INERT last */
    size_t text_name, text_name_length;  /* text_end's last element name, in the page */
    size_t text_from, text_close; /* and where from, and where its text ended */
    foreign_state foreign;
} scan;

typedef struct tag_token {
    size_t name, name_length;  /* the tag's name in the page */
    size_t end;                /* after its '>', or where the text it is in ends */
    bool ended, closing, self_closing;  /* ended: by its '>' */
} tag_token;

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Marks page[a, b) `what`, where they are not marked higher; an INERT
 * stretch inside the one marked last is marked already. */
static void mark(scan *s, size_t a, size_t b, unsigned char what)
{
    if (what == INERT && a >= s->inert_from && b <= s->inert_to)
        return;
    for (size_t i = a; i < b && i < s->length; i++)
        if (s->map[i] < what)
            s->map[i] = what;
    if (what == INERT && b > s->inert_to) {
        s->inert_from = a;
        s->inert_to = b;
    }
}

/* Marks the text of an element, page[a, b), RAW: one whose end is that of
 * the text marked last lies inside it (the scan goes forward). */
static void mark_raw(scan *s, size_t a, size_t b)
{
    if (b != s->raw_to)
        mark(s, a, b, RAW);
    s->raw_to = b;
}

/* Where the first "]]>" at or after `from` ends (0: none), found once
 * for every "<![CDATA[" before it. */
static size_t cdata_end(scan *s, size_t from)
{
    if (from >= s->cdata_from && (!s->cdata_end || from + 3 <= s->cdata_end))
        return s->cdata_end;
    s->cdata_from = from;
    s->cdata_end = 0;
    for (size_t i = from; i + 3 <= s->length; i++)
        if (!memcmp(s->page + i, "]]>", 3)) {
            s->cdata_end = i + 3;
            break;
        }
    return s->cdata_end;
}

/* After the first '>' at or after `from` (end: none before end). */
static size_t after_gt(const scan *s, size_t from, size_t end)
{
    const char *gt = from < end ? memchr(s->page + from, '>', end - from) : NULL;
    return gt ? (size_t)(gt - s->page) + 1 : end;
}

/* Where the first "-->" or "--!>" at or after `from` ends (length:
 * none), found once for every comment that opens before it. */
static size_t dashes_end(scan *s, size_t from)
{
    const char *p = s->page;
    if (from >= s->dashes_from && from + 4 <= s->dashes_end)
        return s->dashes_end;
    s->dashes_from = from;
    s->dashes_end = s->length;
    for (size_t at = from; at + 2 < s->length; at++)
        if (p[at] == '-' && p[at + 1] == '-' &&
            (p[at + 2] == '>' || (at + 3 < s->length && p[at + 2] == '!' && p[at + 3] == '>'))) {
            s->dashes_end = at + (p[at + 2] == '>' ? 3 : 4);
            break;
        }
    return s->dashes_end;
}

/* The end of the comment that "<!--" at i opens: "-->", "--!>", or the
 * abrupt "<!-->" and "<!--->". */
static size_t comment_end(scan *s, size_t i)
{
    const char *p = s->page;
    size_t at = i + 4;
    if (at < s->length && p[at] == '>')
        return at + 1;
    if (at + 1 < s->length && p[at] == '-' && p[at + 1] == '>')
        return at + 2;
    return dashes_end(s, at);
}

static void hidden_raw_text(scan *s, size_t from, size_t to);

/* "<!" at i: a comment, or a bogus comment to the first '>' (a doctype
 * too). "<![CDATA[" runs to "]]>" in svg and math; in HTML content it
 * ends at the first '>', and the "]]>" after it is inert too, so that
 * where svg content goes on unseen (document/foreign.h) the section ends
 * where it ended; in svg content the script, style and the like that HTML
 * content would read in it are raw text (hidden_raw_text). Returns where
 * the scan goes on. */
static size_t declaration(scan *s, size_t i, size_t end)
{
    size_t to;
    if (end - i >= 4 && !memcmp(s->page + i, "<!--", 4)) {
        to = comment_end(s, i);
    } else if (end - i >= 9 && !memcmp(s->page + i, "<![CDATA[", 9)) {
        size_t close = cdata_end(s, i + 9), gt = after_gt(s, i + 2, end);
        bool svg = foreign_content(&s->foreign);
        to = svg ? (close ? close : end) : gt;
        if (close > to)
            mark(s, close - 3, close, INERT);
        if (svg && gt < to)
            hidden_raw_text(s, gt, to);
    } else {
        to = after_gt(s, i + 2, end);
    }
    mark(s, i, to, INERT);
    return to;
}

/* Where a tag's attributes from `at` end: after its '>' (0: none before
 * end), as the tokenizer's attribute states read them (a quoted value
 * holds '>'). */
enum { BEFORE_NAME, NAME, AFTER_NAME, BEFORE_VALUE, UNQUOTED };
static size_t attributes_end(const char *p, size_t at, size_t end)
{
    int state = BEFORE_NAME;
    for (; at < end; at++) {
        char c = p[at];
        if (c == '>')
            return at + 1;
        if (state == BEFORE_VALUE && (c == '"' || c == '\'')) {
            const char *quote = memchr(p + at + 1, c, end - at - 1);
            if (!quote)
                return 0;
            at = (size_t)(quote - p);
            state = BEFORE_NAME;
        } else if (is_space(c)) {
            state = state == NAME ? AFTER_NAME : state == UNQUOTED ? BEFORE_NAME : state;
        } else if (c == '/' && state != BEFORE_VALUE && state != UNQUOTED) {
            state = BEFORE_NAME;
        } else if (c == '=' && (state == NAME || state == AFTER_NAME)) {
            state = BEFORE_VALUE;
        } else if (state != UNQUOTED) {
            state = state == BEFORE_VALUE ? UNQUOTED : NAME;
        }
    }
    return 0;
}

/* The tag that "<" and a letter, or "</" and a letter, open at i, read
 * no further than `end`. */
static tag_token read_tag(const scan *s, size_t i, size_t end)
{
    const char *p = s->page;
    tag_token t = {.closing = p[i + 1] == '/'};
    t.name = i + 1 + t.closing;
    size_t at = t.name;
    while (at < end && !is_space(p[at]) && p[at] != '/' && p[at] != '>')
        at++;
    t.name_length = at - t.name;
    t.end = attributes_end(p, at, end);
    t.ended = t.end != 0;
    t.end = t.ended ? t.end : end;
    t.self_closing = t.ended && t.end - 2 >= at && p[t.end - 2] == '/';
    return t;
}

/* Whether page[i] opens a tag named page[name, name + n) ("</" when
 * `closing`), the name followed by white space, '/' or '>'. */
static bool tag_at(const scan *s, size_t i, size_t name, size_t n, bool closing)
{
    const char *p = s->page;
    size_t at = i + 1 + closing;
    if (at + n >= s->length || p[i] != '<' || (closing && p[i + 1] != '/'))
        return false;
    char c = p[at + n];
    return !strncasecmp(p + at, p + name, n) && (is_space(c) || c == '/' || c == '>');
}

/* Where the text of element t ends: at its end tag (length: none); the
 * answer for an element of the same name whose text begins before it is
 * the same. */
static size_t text_end(scan *s, const tag_token *t)
{
    if (s->text_name_length == t->name_length && t->end >= s->text_from &&
        t->end <= s->text_close &&
        !strncasecmp(s->page + s->text_name, s->page + t->name, t->name_length))
        return s->text_close;
    size_t close = s->length;
    for (const char *lt = memchr(s->page + t->end, '<', s->length - t->end); lt;
         lt = memchr(lt + 1, '<', (size_t)(s->page + s->length - lt - 1)))
        if (tag_at(s, (size_t)(lt - s->page), t->name, t->name_length, true)) {
            close = (size_t)(lt - s->page);
            break;
        }
    s->text_name = t->name;
    s->text_name_length = t->name_length;
    s->text_from = t->end;
    s->text_close = close;
    return close;
}

/* Where the text of script t ends, through the escapes of the script data
 * states: "<!--" escapes the text, "<script" in it escapes it twice (where
 * "</script" takes it back to once), "-->" ends the escape. */
static size_t script_end(const scan *s, const tag_token *t)
{
    const char *p = s->page;
    int escaped = 0, dashes = 0;
    for (size_t i = t->end; i < s->length; i++) {
        if (p[i] == '-') {
            dashes++;
            continue;
        }
        if (p[i] == '>' && dashes >= 2)
            escaped = 0;
        dashes = 0;
        if (p[i] != '<')
            continue;
        if (!escaped && i + 4 <= s->length && !memcmp(p + i, "<!--", 4)) {
            escaped = 1;
            dashes = 2;
            i += 3;
        } else if (tag_at(s, i, t->name, t->name_length, true)) {
            if (escaped < 2)
                return i;
            escaped = 1;
        } else if (escaped == 1 && tag_at(s, i, t->name, t->name_length, false)) {
            escaped = 2;
        }
    }
    return s->length;
}

static int text_state(const scan *s, const tag_token *t)
{
    for (size_t k = 0; k < sizeof raw_elements / sizeof *raw_elements; k++)
        if (strlen(raw_elements[k].name) == t->name_length &&
            !strncasecmp(s->page + t->name, raw_elements[k].name, t->name_length))
            return raw_elements[k].state;
    return DATA;
}

static size_t data(scan *s, size_t from, size_t end, bool top);

/* The start tags of script, style, title and the like in page[from, to),
 * text of a CDATA section in svg content and tags in HTML content (where
 * an end tag of HTML closed the svg unseen: document/foreign.h): their
 * text, to their end tags, is raw to libxml2 either way. */
static void hidden_raw_text(scan *s, size_t from, size_t to)
{
    for (const char *lt = memchr(s->page + from, '<', to - from); lt;
         lt = memchr(lt + 1, '<', (size_t)(s->page + to - lt - 1))) {
        size_t i = (size_t)(lt - s->page);
        if (i + 1 >= to || !is_letter(s->page[i + 1]))
            continue;
        tag_token t = read_tag(s, i, s->length);
        if (t.ended && text_state(s, &t) != DATA)
            mark_raw(s, t.end, text_end(s, &t));
    }
}

/* Tag t at i: TAG, but for what follows an end tag's name (BLANK: a
 * browser ignores it, and libxml2 ends the tag at the first '>' where a
 * browser reads quoted values); INERT when the page, or the text it is
 * in, ends in it (a browser drops it, or reads it as text). */
static void mark_tag(scan *s, size_t i, const tag_token *t)
{
    if (!t->ended) {
        mark(s, i, t->end, INERT);
        return;
    }
    mark(s, i, t->end, TAG);
    if (t->closing)
        mark(s, t->name + t->name_length, t->end - 1, RAW);
}

/* The end tag at `close` that ends the text of an element: read, marked
 * and not followed (it closes the element whose text ends). It stays a
 * tag to libxml2 where a comment that a browser may read runs past it (in
 * a select it would): the element ends where it ends, and the comment is
 * inert on both sides. Returns where the scan goes on. */
static size_t end_tag(scan *s, size_t close)
{
    if (close >= s->length)
        return s->length;
    tag_token t = read_tag(s, close, s->length);
    if (t.ended)
        memset(s->map + close, PLAIN, t.end - close);
    mark_tag(s, close, &t);
    return t.end;
}

/* Start tag t in the text of an element read to its end tag at `end`: a
 * script or style there is raw text to libxml2 (which would end it at
 * the first "</" and a letter), to `end`. The scan goes on after t. */
static size_t inner_tag(scan *s, const tag_token *t, int state, size_t end)
{
    if (state == SCRIPT || state == STYLE)
        mark_raw(s, t->end, end);
    return t->end;
}

/* The text of element t that a browser reads as HTML (state: how): script
 * to its end tag through its escapes, style, title and the like to their
 * end tags. That text is also read as the data state would read it (but
 * script's), for a browser ignores title, style and the like where it is
 * in a select or a frameset: a comment that would run past the end tag is
 * inert to its own end. Returns where the scan goes on: after the end tag. */
static size_t html_text(scan *s, const tag_token *t, int state)
{
    size_t close = state == SCRIPT ? script_end(s, t) : text_end(s, t);
    if (state != TEXT)
        mark_raw(s, t->end, close);
    if (state != SCRIPT)
        data(s, t->end, close, false);
    return end_tag(s, close);
}

/* The tag at i, in the text of an element read to its end tag at `end`
 * (the tag is text to a browser, markup to libxml2: inner_tag) or, when
 * `top`, in the page, svg and math content followed: the script and style
 * of svg and math are raw text to libxml2 only, their text markup to a
 * browser. Returns where the scan goes on. */
static size_t tag(scan *s, size_t i, size_t end, bool top)
{
    tag_token t = read_tag(s, i, end);
    mark_tag(s, i, &t);
    const char *name = s->page + t.name;
    if (t.closing) {
        if (top)
            foreign_close(&s->foreign, name, t.name_length);
        return t.end;
    }
    int state = text_state(s, &t);
    if (!top)
        return inner_tag(s, &t, state, end);
    bool html = foreign_open(&s->foreign, name, t.name_length, s->page + i, t.end - i,
                             t.self_closing);
    if (html && t.name_length == 8 && !strncasecmp(name, "frameset", 8)) {
        mark(s, t.end, s->length, INERT);  /* a browser shows no text of the page */
        return s->length;
    }
    if (state == DATA || t.end >= s->length)
        return t.end;
    if (html)
        return html_text(s, &t, state);
    if (state != TEXT)
        mark_raw(s, t.end, text_end(s, &t));
    return t.end;
}

/* The construct that '<' at i opens: a declaration, a bogus comment, a
 * tag (read no further than `end`), or text. Returns where the data state
 * goes on. */
static size_t construct(scan *s, size_t i, size_t end, bool top)
{
    size_t far = top ? end : s->length;  /* where a comment may run to */
    char c = i + 1 < far ? s->page[i + 1] : '\0';
    char d = i + 2 < far ? s->page[i + 2] : '\0';
    if (c == '!')
        return declaration(s, i, far);
    if (c == '?' || (c == '/' && d && !is_letter(d))) {
        size_t to = after_gt(s, i + 2, far);
        mark(s, i, to, INERT);
        return to;
    }
    if (i + 1 < end && (is_letter(c) || (c == '/' && is_letter(d))))
        return tag(s, i, end, top);
    return i + 1;
}

/* The data state over page[from, end): the page when `top`, else the
 * text of an element read to its end tag at `end`. Returns where the last
 * construct ends, or end. */
static size_t data(scan *s, size_t from, size_t end, bool top)
{
    size_t i = from;
    while (i < end) {
        const char *lt = memchr(s->page + i, '<', end - i);
        if (!lt)
            return end;
        i = construct(s, (size_t)(lt - s->page), end, top);
    }
    return i > end ? i : end;
}

/* out[0, length) written from the map: each INERT stretch a processing
 * instruction (spaces under 4 bytes), each BLANK one spaces; a control
 * character (but tab and line ends), which libxml2 leaves out of the text
 * it reports, a space. */
static void write_masks(const scan *s, char *out)
{
    for (size_t i = 0; i < s->length; i++)
        if (((unsigned char)out[i] < 0x20 && !strchr("\t\n\r", out[i])) || out[i] == 0x7f)
            out[i] = ' ';
    size_t j;
    for (size_t i = 0; i < s->length; i = j) {
        for (j = i + 1; j < s->length && s->map[j] == s->map[i];)
            j++;
        if (s->map[i] == RAW || (s->map[i] == INERT && j - i < 4)) {
            memset(out + i, ' ', j - i);
        } else if (s->map[i] == INERT) {
            memcpy(out + i, "<?x", 3);
            memset(out + i + 3, ' ', j - i - 4);
            out[j - 1] = '>';
        }
    }
}

ted_status html_mask_inert(const char *page, size_t length, char **masked, unsigned char **map,
                           ted_error *err)
{
    *masked = NULL;
    *map = NULL;
    scan s = {.page = page, .length = length, .cdata_from = SIZE_MAX, .dashes_from = SIZE_MAX};
    char *out = ted_alloc(length + 1, 1, "html page", err);
    s.map = out ? ted_alloc(length + 1, 1, "html page", err) : NULL;
    if (!s.map) {
        free(out);
        return TED_ERR_NOMEM;
    }
    memcpy(out, page, length);
    data(&s, 0, length, true);
    write_masks(&s, out);
    *map = s.map;
    *masked = out;
    return TED_OK;
}
