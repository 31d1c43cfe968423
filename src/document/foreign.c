/* svg and math content (document/foreign.h): a stack of the open svg and
 * math elements and integration points, as the tree builder opens and
 * closes them. */
#include "document/foreign.h"

#include <string.h>
#include <strings.h>

enum { SVG, MATH, POINT };

/* The start tags that end svg and math content (font: with color, face
 * or size only). */
static const char *const breakouts[] = {
    "b",  "big",  "blockquote", "body", "br",   "center", "code",    "dd",    "div", "dl",
    "dt", "em",   "embed",      "h1",   "h2",   "h3",     "h4",      "h5",    "h6",  "head",
    "hr", "i",    "img",        "li",   "listing", "menu", "meta",   "nobr",  "ol",  "p",
    "pre", "ruby", "s",         "small", "span", "strong", "strike", "sub",   "sup", "table",
    "tt", "u",    "ul",         "var"};
static const char *const svg_points[] = {"foreignobject", "desc", "title"};
static const char *const math_points[] = {"mi", "mo", "mn", "ms", "mtext"};

static bool named(const char *name, size_t n, const char *as)
{
    return strlen(as) == n && !strncasecmp(name, as, n);
}

static bool one_of(const char *name, size_t n, const char *const *list, size_t count)
{
    for (size_t k = 0; k < count; k++)
        if (named(name, n, list[k]))
            return true;
    return false;
}

#define ONE_OF(name, n, list) one_of(name, n, list, sizeof list / sizeof *list)

bool foreign_content(const foreign_state *f)
{
    return f->depth > 0 && f->frames[f->depth - 1].kind != POINT;
}

/* Whether tag[0, length) names an attribute color, face or size. */
static bool font_breaks_out(const char *tag, size_t length)
{
    static const char *const names[] = {"color", "face", "size"};
    for (size_t i = 1; i < length; i++)
        for (size_t k = 0; k < 3; k++) {
            size_t n = strlen(names[k]);
            if (strchr(" \t\n\f\r\"'/", tag[i - 1]) && i + n < length &&
                !strncasecmp(tag + i, names[k], n) && strchr(" \t\n\f\r=/>", tag[i + n]))
                return true;
        }
    return false;
}

/* Back to the content of the last integration point, or HTML's. */
static void leave_foreign(foreign_state *f)
{
    while (foreign_content(f))
        f->depth--;
}

static void push(foreign_state *f, int kind, const char *name, size_t n)
{
    if (f->depth == FOREIGN_DEPTH)
        return;
    foreign_frame *frame = &f->frames[f->depth++];
    frame->kind = (unsigned char)kind;
    for (size_t i = 0; i < FOREIGN_NAME; i++)
        frame->name[i] = i < n && i + 1 < FOREIGN_NAME ? (char)(name[i] | 0x20) : '\0';
}

bool foreign_open(foreign_state *f, const char *name, size_t n, const char *tag, size_t length,
                  bool self_closing)
{
    if (foreign_content(f) && (ONE_OF(name, n, breakouts) ||
                               (named(name, n, "font") && font_breaks_out(tag, length))))
        leave_foreign(f);
    bool html = !foreign_content(f);
    int kind = named(name, n, "svg") ? SVG : named(name, n, "math") ? MATH : -1;
    if (!html && f->frames[f->depth - 1].kind == SVG && ONE_OF(name, n, svg_points))
        kind = POINT;
    if (!html && f->frames[f->depth - 1].kind == MATH && ONE_OF(name, n, math_points))
        kind = POINT;
    if (kind >= 0 && !self_closing)
        push(f, kind, name, n);
    return html && kind < 0;
}

void foreign_close(foreign_state *f, const char *name, size_t n)
{
    for (int k = f->depth - 1; k >= 0; k--) {
        if (named(name, n, f->frames[k].name)) {
            f->depth = k;
            return;
        }
        if (f->frames[k].kind == POINT)
            return;
    }
}
