/* Whether a browser is in svg or math content at a tag of an HTML page
 * (WHATWG HTML, "The rules for parsing tokens in foreign content"), for
 * document/inert.c: there "<![CDATA[" runs to "]]>", and title, style,
 * script and textarea are elements like any other, their text markup. It
 * follows the open svg and math elements and the integration points in
 * them (svg's foreignObject, desc and title; math's mi, mo, mn, ms and
 * mtext), where the content is HTML again, and the start tags that end
 * svg and math content (b, div, p, table, ... and font with color, face
 * or size). The end tags p and br, which end them too in browsers of
 * today, do not here (nor in html5lib, the tests' judge), and elements of
 * HTML are not followed: an end tag that closes an svg from outside it
 * (</div> of <div><svg>) leaves it open here. Content read as svg where a
 * browser reads HTML is the safe way round: inert.c then finds no script
 * or style, whose text libxml2 keeps as it is anyway. */
#ifndef TED_DOCUMENT_FOREIGN_H
#define TED_DOCUMENT_FOREIGN_H

#include <stdbool.h>
#include <stddef.h>

enum { FOREIGN_DEPTH = 64, FOREIGN_NAME = 16 };

typedef struct foreign_frame {
    unsigned char kind;          /* svg, math, or an integration point */
    char name[FOREIGN_NAME];     /* the element's name, in lower case */
} foreign_frame;

typedef struct foreign_state {
    foreign_frame frames[FOREIGN_DEPTH];  /* (depth): the open elements followed */
    int depth;
} foreign_state;

/* Whether the content where the tokenizer is is svg or math. */
bool foreign_content(const foreign_state *f);

/* The start tag of `name` (n bytes), its bytes tag[0, length), whether it
 * closes itself: updates f; true when the element is an HTML element. */
bool foreign_open(foreign_state *f, const char *name, size_t n, const char *tag, size_t length,
                  bool self_closing);

/* The end tag of `name` (n bytes): updates f. */
void foreign_close(foreign_state *f, const char *name, size_t n);

#endif
