/* libFuzzer harness: src/document. The first byte picks the format (bit 0:
 * HTML) and sentence splitting (bit 1), the rest is the text. Parsing must
 * succeed or refuse the input (TED_ERR_INPUT, a message); a text parsed
 * rebuilds from its own sentences byte for byte; a page rebuilt around
 * translations full of markup holds no '<' or '>' more than it came with
 * (translations are written as text, never as markup) and opens no tag
 * that the page did not open ("<img", "</div": what a construct that a
 * browser reads as a comment hid stays hidden), and parses again. The tags
 * are read as the HTML5 tokenizer reads a page, comments, bogus comments
 * and the text of script, style and textarea skipped; a quoted attribute
 * value holds '>', and "<![CDATA[" in svg or math runs to "]]>". That
 * reading is not the browser's in title and the like, in a select or a
 * frameset and in script's escapes, where it may see a tag that a browser
 * does not: only tag names are compared, since a tag seen there may run on
 * into a translation (which then holds no quote: the tag is longer, never
 * a new one). Nor is it in svg and math content, which HTML end tags may
 * end unseen: a page with svg or math is not held to it (the tests'
 * html5lib judge, tests/cli/html_markup.py, is). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "document/document.h"
#include "fuzz.h"

static size_t count(const char *text, size_t length, char c)
{
    size_t n = 0;
    for (size_t i = 0; i < length; i++)
        n += text[i] == c;
    return n;
}

/* ---- tags as the HTML5 tokenizer's data state reads them -------------------- */

typedef struct tags {
    const char **at;  /* (count): each tag's '<' */
    size_t *length;   /* (count): its bytes to the end of its name */
    size_t count;
} tags;

static bool letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* After the first '>' in p[from, n), or n. */
static size_t past(const char *p, size_t from, size_t n, const char *end)
{
    size_t k = strlen(end);
    for (size_t i = from; i + k <= n; i++)
        if (!memcmp(p + i, end, k))
            return i + k;
    return n;
}

/* After the comment whose text begins at p[from]: "-->", "--!>", or the
 * abrupt "<!-->" and "<!--->"; n: none. */
static size_t comment_end(const char *p, size_t from, size_t n)
{
    if (from < n && p[from] == '>')
        return from + 1;
    if (from + 1 < n && p[from] == '-' && p[from + 1] == '>')
        return from + 2;
    for (size_t i = from; i + 2 < n; i++)
        if (p[i] == '-' && p[i + 1] == '-' &&
            (p[i + 2] == '>' || (i + 3 < n && p[i + 2] == '!' && p[i + 3] == '>')))
            return i + (p[i + 2] == '>' ? 3 : 4);
    return n;
}

/* After the tag at p[i], through the tokenizer's tag and attribute states
 * (a quoted value holds '>'), or n. */
static size_t tag_end(const char *p, size_t i, size_t n)
{
    enum { TAG, BEFORE, NAME, AFTER, EQUALS, BARE } state = TAG;
    for (i += p[i + 1] == '/' ? 2 : 1; i < n; i++) {
        char c = p[i];
        bool space = strchr(" \t\n\f\r", c) != NULL;
        if (c == '>')
            return i + 1;
        if (state == EQUALS && (c == '"' || c == '\'')) {
            const char *quote = memchr(p + i + 1, c, n - i - 1);
            if (!quote)
                return n;
            i = (size_t)(quote - p);
            state = BEFORE;
        } else if (state == TAG || state == BEFORE) {
            state = space || c == '/' ? BEFORE : state == TAG ? TAG : NAME;
        } else if (state == NAME || state == AFTER) {
            state = c == '=' ? EQUALS : c == '/' ? BEFORE : space ? AFTER : NAME;
        } else {
            state = state == EQUALS ? (space ? EQUALS : BARE) : (space ? BEFORE : BARE);
        }
    }
    return n;
}

/* Where the text of the element that the start tag p[i, name) opens
 * ends when a page keeps it as it is (script, style, textarea: at
 * "</NAME"), or `after` (the tag's end) for any other. The text of title
 * and the like, raw to a browser, is read as libxml2 reads it, tags and
 * all, and translated so. */
static size_t raw_text_end(const char *p, size_t i, size_t name, size_t after, size_t n)
{
    static const char *const raw[] = {"script", "style", "textarea"};
    size_t k = name - i - 1;
    for (size_t r = 0; r < sizeof raw / sizeof *raw; r++)
        if (strlen(raw[r]) == k && !strncasecmp(p + i + 1, raw[r], k)) {
            for (size_t at = after; at + 2 + k <= n; at++)
                if (p[at] == '<' && p[at + 1] == '/' && !strncasecmp(p + at + 2, raw[r], k))
                    return at;
            return n;
        }
    return after;
}

/* The svg and math elements open after a tag named name[0, k) (closing:
 * an end tag; empty: "/>"), `depth` before it: the start tags that end
 * svg and math content (WHATWG HTML, "in foreign content") close them. */
static int foreign_depth(const char *name, size_t k, bool closing, bool empty, int depth)
{
    static const char *const breakouts[] = {
        "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em",
        "embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing",
        "menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong",
        "strike", "sub", "sup", "table", "tt", "u", "ul", "var"};
    bool foreign = (k == 3 && !strncasecmp(name, "svg", 3)) ||
                   (k == 4 && !strncasecmp(name, "math", 4));
    if (foreign && !empty)
        return closing ? (depth > 0 ? depth - 1 : 0) : depth + 1;
    for (size_t r = 0; !closing && r < sizeof breakouts / sizeof *breakouts; r++)
        if (strlen(breakouts[r]) == k && !strncasecmp(name, breakouts[r], k))
            return 0;
    return depth;
}

/* The tags of p[0, n), comments, bogus comments, doctypes and the text of
 * script, style, title and the like skipped. */
static tags read_tags(const char *p, size_t n)
{
    tags t = {calloc(n + 1, sizeof *t.at), calloc(n + 1, sizeof *t.length), 0};
    REQUIRE(t.at && t.length);
    int svg = 0;  /* svg and math elements open: "<![CDATA[" runs to "]]>" */
    for (size_t i = 0; i < n;) {
        char c = i + 1 < n ? p[i + 1] : 0, d = i + 2 < n ? p[i + 2] : 0;
        size_t next = i + 1;
        if (p[i] == '<' && c == '!' && d == '-' && i + 3 < n && p[i + 3] == '-')
            next = comment_end(p, i + 4, n);
        else if (svg && p[i] == '<' && n - i >= 9 && !memcmp(p + i, "<![CDATA[", 9))
            next = past(p, i + 9, n, "]]>");
        else if (p[i] == '<' && (c == '!' || c == '?' || (c == '/' && d && !letter(d))))
            next = past(p, i + 2, n, ">");
        else if (p[i] == '<' && (letter(c) || (c == '/' && letter(d)))) {
            size_t name = i + 1 + (c == '/');
            while (name < n && !strchr(" \t\n\f\r/>", p[name]))
                name++;
            next = tag_end(p, i, n);
            svg = foreign_depth(p + name - (name - i - 1 - (c == '/')),
                                name - i - 1 - (c == '/'), c == '/', p[next - 2] == '/', svg);
            if (c != '/')
                next = raw_text_end(p, i, name, next, n);
            t.at[t.count] = p + i;
            t.length[t.count++] = name - i;
        }
        i = next;
    }
    return t;
}

/* Whether every tag of `out` opens as one of `in`'s, each used once. */
static bool tags_from(const tags *out, const tags *in)
{
    bool *used = calloc(in->count + 1, 1);
    REQUIRE(used);
    bool all = true;
    for (size_t i = 0; all && i < out->count; i++) {
        size_t k = 0;
        while (k < in->count && (used[k] || in->length[k] != out->length[i] ||
                                 memcmp(in->at[k], out->at[i], out->length[i])))
            k++;
        all = k < in->count;
        if (all)
            used[k] = true;
    }
    free(used);
    return all;
}

/* Whether text[0, n) holds `what`, in any case. */
static bool holds(const char *text, size_t n, const char *what)
{
    size_t k = strlen(what);
    for (size_t i = 0; i + k <= n; i++)
        if (!strncasecmp(text + i, what, k))
            return true;
    return false;
}

static void free_tags(tags *t)
{
    free(t->at);
    free(t->length);
}

static void check_page(const char *text, size_t length, const document_options *o, document *d)
{
    int n = document_sentence_count(d);
    const char **hostile = calloc(n > 0 ? (size_t)n : 1, sizeof *hostile);
    REQUIRE(hostile);
    for (int i = 0; i < n; i++)
        hostile[i] = "<b>&amp;</b>";
    char *out;
    size_t out_length;
    ted_error err = {0};
    REQUIRE(document_render(d, hostile, &out, &out_length, &err) == TED_OK);
    REQUIRE(count(out, out_length, '<') <= count(text, length, '<'));
    REQUIRE(count(out, out_length, '>') <= count(text, length, '>'));
    if (!holds(text, length, "<svg") && !holds(text, length, "<math")) {
        tags in = read_tags(text, length), made = read_tags(out, out_length);
        REQUIRE(tags_from(&made, &in));
        free_tags(&in);
        free_tags(&made);
    }
    document *again;
    ted_status s = document_parse(out, out_length, o, &again, &err);
    REQUIRE(s == TED_OK || s == TED_ERR_NOMEM);
    document_free(again);
    free(out);
    free(hostile);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    document_options o = {.format = data[0] & 1 ? DOCUMENT_HTML : DOCUMENT_TEXT,
                          .split_sentences = (data[0] & 2) != 0};
    const char *text = (const char *)data + 1;
    size_t length = size - 1;
    document *d;
    ted_error err = {0};
    ted_status s = document_parse(text, length, &o, &d, &err);
    REQUIRE(s == TED_OK || s == TED_ERR_INPUT || s == TED_ERR_NOMEM);
    REQUIRE(s == TED_OK || err.message[0] != '\0');
    if (s)
        return 0;
    if (o.format == DOCUMENT_HTML) {
        check_page(text, length, &o, d);
    } else {
        char *out;
        size_t out_length;
        REQUIRE(document_render(d, document_sentences(d), &out, &out_length, &err) == TED_OK);
        REQUIRE(out_length == length && !memcmp(out, text, length));
        free(out);
    }
    document_free(d);
    return 0;
}
