/* HTML documents (document/html.h) with libxml2's HTML parser, through its
 * SAX interface: each event says where the parser is in the page
 * (xmlByteConsumed), which places every text run in the page's bytes. A
 * run begins where the markup before it ends: after the '>' of a start
 * tag (the parser reports a start tag at its '>'), at the position of any
 * other event that follows a '>' (an end tag, a comment, a doctype); an
 * element the parser implies (a </p> before a <div>) moves nothing. The
 * text of a run comes in chunks (entities one by one, long text in pieces
 * of about 1000 bytes); a chunk whose bytes are those of the page maps
 * byte for byte, an entity maps only at its edges. libxml2 parses a copy
 * of the page, of its length, in which what a browser never reads as text
 * is overwritten with markup that libxml2 reads as such (document/inert.h);
 * the parts of the document are the page's own bytes. Text that libxml2
 * finds where a browser reads markup stays as it is (inert_in). */
#include "document/html.h"

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "document/inert.h"
#include "document/sentences.h"
#include "ted/util.h"

/* Elements inside a sentence: they do not end a block. */
static const char *const inline_elements[] = {
    "a",    "abbr",  "b",      "bdi",    "bdo", "big", "cite", "data", "del",
    "dfn",  "em",    "font",   "i",      "ins", "q",   "s",    "mark", "small",
    "span", "label", "strike", "strong", "sub", "sup", "time", "tt",   "u"};
/* Elements whose text is left as it is. */
static const char *const kept_elements[] = {"script", "style", "code",    "pre",
                                            "kbd",    "samp",  "textarea"};

enum { TRANSLATE = 1, KEPT = 2 };  /* an open element's state */

typedef struct text_run {
    size_t raw_start, raw_end;  /* its bytes in the page */
    size_t from, to;            /* its decoded text in the block's text */
    bool unplaced;              /* markup lies in bytes that are not its text */
} text_run;

/* The text runs since the last block boundary. */
typedef struct block {
    char *text;    /* their decoded text, one after another */
    size_t *raw;   /* (length): the page offset of text byte i; SIZE_MAX: unknown */
    size_t length, capacity;
    text_run *runs;
    int count, run_capacity;
} block;

typedef struct parse_state {
    htmlParserCtxtPtr ctxt;
    document *d;
    const char *page;    /* (d->length): what libxml2 parses, document/inert.h */
    const unsigned char *map;  /* (d->length): each byte's html_byte */
    const document_options *options;
    size_t base;         /* page bytes before what the parser reads (a BOM) */
    size_t markup_end;   /* where a run that begins now begins */
    size_t emitted;      /* page bytes given to the document's parts so far */
    bool in_run;
    size_t chunk_start;  /* where the run's next chunk begins */
    block b;
    document_splitter *splitter;  /* opened at the first block cut into sentences */
    unsigned char *states;  /* (depth): each open element's TRANSLATE | KEPT */
    int depth, depth_capacity;
    ted_status status;
    ted_error *err;
} parse_state;

static bool listed(const char *const *names, size_t count, const xmlChar *name)
{
    for (size_t i = 0; i < count; i++)
        if (!strcmp(names[i], (const char *)name))
            return true;
    return false;
}

static unsigned current_state(const parse_state *p)
{
    return p->depth ? p->states[p->depth - 1] : TRANSLATE;
}

static bool translating(unsigned state)
{
    return state == TRANSLATE;
}

/* Where the parser is, in page bytes. */
static size_t position(const parse_state *p)
{
    long n = xmlByteConsumed(p->ctxt);
    size_t at = p->base + (n > 0 ? (size_t)n : 0);
    return at < p->d->length ? at : p->d->length;
}

static void fail(parse_state *p, ted_status status)
{
    if (!p->status)
        p->status = status;
}

/* ---- text runs --------------------------------------------------------------- */

static bool reserve_text(parse_state *p, size_t more)
{
    block *b = &p->b;
    if (b->length + more + 1 <= b->capacity)
        return true;
    size_t grown = 2 * (b->length + more + 1);
    char *text = ted_alloc(grown, 1, "html text", p->err);
    size_t *raw = text ? ted_alloc(grown, sizeof *raw, "html text", p->err) : NULL;
    if (!raw) {
        free(text);
        fail(p, TED_ERR_NOMEM);
        return false;
    }
    if (b->length) {
        memcpy(text, b->text, b->length);
        memcpy(raw, b->raw, b->length * sizeof *raw);
    }
    free(b->text);
    free(b->raw);
    b->text = text;
    b->raw = raw;
    b->capacity = grown;
    return true;
}

/* Whether a chunk's decoded bytes t[0, n), from r0 with the parser at r1,
 * are the page's own bytes (the parser may be a character behind them). */
static bool page_bytes(const parse_state *p, size_t r0, size_t r1, const char *t, size_t n)
{
    return r0 + n <= p->d->length && r0 + n >= r1 && r0 + n <= r1 + 4 &&
           !memcmp(p->page + r0, t, n);
}

/* Maps a chunk's decoded bytes t[0, n) to the page, from r0 (the parser
 * at r1); returns where the next chunk begins. */
static size_t map_chunk(const parse_state *p, size_t r0, size_t r1, const char *t, size_t n,
                        size_t *raw)
{
    const char *page = p->page;
    for (size_t k = 0; k < n; k++)
        raw[k] = SIZE_MAX;
    raw[0] = r0;
    if (page_bytes(p, r0, r1, t, n)) {
        for (size_t k = 0; k < n; k++)
            raw[k] = r0 + k;
        return r0 + n;
    }
    if (r1 <= r0)
        return r0;
    if (page[r0] == t[0])  /* text the parser left characters out of */
        for (size_t i = r0, k = 0; k < n && i < r1; i++)
            if (page[i] == t[k])
                raw[k++] = i;
    return r1;  /* an entity: known at its edges */
}

/* The run going on is over: the next begins no earlier than its end. */
static void end_run(parse_state *p)
{
    if (p->in_run)
        p->markup_end = p->b.runs[p->b.count - 1].raw_end;
    p->in_run = false;
}

static bool markup_at(const char *page, size_t i)
{
    return page[i] == '<' && page[i + 1] &&
           strchr("/!?abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", page[i + 1]);
}

/* Markup the parser dropped without an event (a second <html>, a stray end
 * tag) between the run's last chunk, or the last markup, and the parser at
 * r1: a run going on ends there, and the next begins after it. */
static void skip_dropped_markup(parse_state *p, size_t r1, const char *t, size_t n)
{
    const char *page = p->page;
    size_t r0 = p->in_run ? p->chunk_start : p->markup_end, last = SIZE_MAX;
    if (r1 <= r0 || page_bytes(p, r0, r1, t, n))
        return;
    for (size_t i = r0; i + 1 < r1; i++)
        if (markup_at(page, i))
            last = i;
    const char *close = last == SIZE_MAX ? NULL : memchr(page + last, '>', r1 - last);
    if (close) {
        end_run(p);
        p->markup_end = (size_t)(close - page) + 1;
    }
}

/* A run that begins where the last markup ends. */
static bool start_run(parse_state *p)
{
    block *b = &p->b;
    if (b->count == b->run_capacity) {
        int grown = b->run_capacity ? 2 * b->run_capacity : 16;
        text_run *runs = ted_alloc((size_t)grown, sizeof *runs, "html text", p->err);
        if (!runs) {
            fail(p, TED_ERR_NOMEM);
            return false;
        }
        if (b->count)
            memcpy(runs, b->runs, (size_t)b->count * sizeof *runs);
        free(b->runs);
        b->runs = runs;
        b->run_capacity = grown;
    }
    b->runs[b->count++] = (text_run){p->markup_end, p->markup_end, b->length, b->length, false};
    p->chunk_start = p->markup_end;
    p->in_run = true;
    return true;
}

/* Chunk t[0, n) of the text, the parser at r1 after it. */
static void add_chunk(parse_state *p, const char *t, size_t n, size_t r1)
{
    block *b = &p->b;
    if (!p->in_run && !start_run(p))
        return;
    memcpy(b->text + b->length, t, n);
    if (!page_bytes(p, p->chunk_start, r1, t, n))
        for (size_t i = p->chunk_start; i + 1 < r1; i++)
            b->runs[b->count - 1].unplaced |= markup_at(p->page, i) || p->map[i] >= HTML_TAG;
    p->chunk_start = map_chunk(p, p->chunk_start, r1, t, n, b->raw + b->length);
    b->length += n;
    b->runs[b->count - 1].raw_end = p->chunk_start;
    b->runs[b->count - 1].to = b->length;
}

/* The first of page[r0, r0 + n) that libxml2 reads as text where a
 * browser reads markup (a tag whose attributes libxml2 ends early, a
 * construct of 3 bytes that it reads as spaces, the text of a script that
 * it ends early, as after <script/>), or n. */
static size_t inert_in(const parse_state *p, size_t r0, size_t n)
{
    size_t k = 0;
    while (k < n && p->map[r0 + k] < HTML_TAG)
        k++;
    return k;
}

/* Whether page[a, b) holds bytes of what a browser reads as markup and
 * libxml2 may read as text (inert_in). */
static bool disputed(const parse_state *p, size_t a, size_t b)
{
    for (size_t i = a; i < b && i < p->d->length; i++)
        if (p->map[i] >= HTML_TAG)
            return true;
    return false;
}

/* Where a run whose first chunk is t[0, n), the parser at r1, begins:
 * where the last markup ends, or after the white space there that libxml2
 * leaves out (before the first element, or before an entity) and the
 * markup it reads as text (inert_in); never on such markup. */
static size_t run_start(const parse_state *p, size_t r1, const char *t, size_t n)
{
    size_t at = p->markup_end;
    bool masked = false;
    while (at < r1 && !page_bytes(p, at, r1, t, n) &&
           (p->map[at] >= HTML_TAG || strchr(" \t\n\r\f", p->page[at]))) {
        masked |= p->map[at] >= HTML_TAG;
        at++;
    }
    if (at < r1 && (masked || page_bytes(p, at, r1, t, n)))
        return at;
    for (at = p->markup_end; at < r1 && p->map[at] >= HTML_TAG;)
        at++;
    return at;
}

/* A chunk of text; the markup that libxml2 reads as text in it
 * (inert_in) is markup between runs. */
static void on_text(void *data, const xmlChar *text, int length)
{
    parse_state *p = data;
    if (p->status || length <= 0 || !translating(current_state(p)) ||
        !reserve_text(p, (size_t)length))
        return;
    const char *t = (const char *)text;
    size_t n = (size_t)length, r1 = position(p), k;
    skip_dropped_markup(p, r1, t, n);
    if (!p->in_run) {
        size_t at = run_start(p, r1, t, n);
        if (p->markup_end < r1 && at >= r1)
            return;  /* text to libxml2 in what is all markup to a browser */
        p->markup_end = at;
    }
    size_t r0 = p->in_run ? p->chunk_start : p->markup_end;
    while (n && page_bytes(p, r0, r1, t, n) && (k = inert_in(p, r0, n)) < n) {
        size_t m = k;
        while (m < n && p->map[r0 + m] >= HTML_TAG)
            m++;
        if (k)
            add_chunk(p, t, k, r0 + k);
        end_run(p);
        p->markup_end = r0 + m;
        t += m;
        n -= m;
        r0 += m;
    }
    if (n && !page_bytes(p, r0, r1, t, n) && disputed(p, r0, r1)) {
        end_run(p);  /* left as it is: libxml2's text, placed nowhere, in a browser's markup */
        p->markup_end = r1 > p->markup_end ? r1 : p->markup_end;
    } else if (n) {
        add_chunk(p, t, n, r1);
    }
}

/* ---- a block's sentences ------------------------------------------------------ */

/* A gap between sentences, text[g0, g1) of run r: the page's bytes when
 * both ends are known, else the decoded text, escaped. */
static ted_status emit_gap(parse_state *p, const text_run *r, size_t g0, size_t g1)
{
    if (g1 <= g0)
        return TED_OK;
    size_t a = g0 == r->from ? r->raw_start : p->b.raw[g0];
    size_t z = g1 == r->to ? r->raw_end : p->b.raw[g1];
    if (a != SIZE_MAX && z != SIZE_MAX && a <= z)
        return document_add_source(p->d, a, z, p->err);
    return document_add_text(p->d, p->b.text + g0, g1 - g0, p->err);
}

/* Sentence text[start, end), its white space collapsed to single spaces. */
static ted_status emit_sentence(parse_state *p, size_t start, size_t end)
{
    char *s = ted_alloc(end - start + 1, 1, "sentence", p->err);
    if (!s)
        return TED_ERR_NOMEM;
    size_t n = 0;
    int length;
    for (size_t i = start; i < end; i += (size_t)length) {
        if (document_space_at(p->b.text + i, end - i, &length)) {
            if (n == 0 || s[n - 1] != ' ')
                s[n++] = ' ';
        } else {
            memcpy(s + n, p->b.text + i, (size_t)length);
            n += (size_t)length;
        }
    }
    ted_status status = document_add_sentence(p->d, s, n, p->err);
    free(s);
    return status;
}

/* Run r's parts: its gaps as they are, the sentences that begin in it. */
static ted_status emit_run(parse_state *p, const text_run *r, const document_span *spans,
                           int count, int *next)
{
    size_t at = r->from;
    ted_status s = TED_OK;
    for (int k = *next; !s && k < count && spans[k].start < r->to; k++) {
        if (spans[k].end <= at)
            continue;
        if (spans[k].start > at)
            s = emit_gap(p, r, at, spans[k].start);
        if (!s && spans[k].start >= r->from)
            s = emit_sentence(p, spans[k].start, spans[k].end);
        at = spans[k].end < r->to ? spans[k].end : r->to;
    }
    while (*next < count && spans[*next].end <= r->to)
        ++*next;
    return s ? s : emit_gap(p, r, at, r->to);
}

/* Whether a browser reads page[a, b) as text only: no byte of a tag,
 * script or style (libxml2 and a browser end a malformed tag apart). */
static bool browser_text(const parse_state *p, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (p->map[i] == HTML_TAG || p->map[i] == HTML_BLANK)
            return false;
    return true;
}

/* A run out of order, or one whose bytes hold markup besides its text,
 * was not placed right: the page is refused rather than changed. */
static ted_status check_run(const parse_state *p, const text_run *r)
{
    if (!r->unplaced && r->raw_start >= p->emitted && r->raw_start <= r->raw_end &&
        r->raw_end <= p->d->length && browser_text(p, r->raw_start, r->raw_end))
        return TED_OK;
    bool tag = r->raw_end <= p->d->length && !browser_text(p, r->raw_start, r->raw_end);
    return ted_fail(p->err, TED_ERR_INPUT, "html: the text at byte %zu could not be placed%s",
                    r->raw_start, tag ? " (a browser reads it as part of a tag)" : "");
}

/* The block's sentences: its text cut with ICU (line breaks and tabs seen
 * as spaces, as a browser shows them), or the whole text trimmed. */
static ted_status block_sentences(parse_state *p, document_span **spans, int *count)
{
    block *b = &p->b;
    if (!p->options->split_sentences) {
        size_t start = 0, end = b->length;
        document_trim(b->text, &start, &end);
        *count = start < end;
        *spans = ted_alloc(1, sizeof **spans, "sentences", p->err);
        if (*spans)
            **spans = (document_span){start, end};
        return *spans ? TED_OK : TED_ERR_NOMEM;
    }
    char *seen = ted_alloc(b->length + 1, 1, "html text", p->err);
    if (!seen)
        return TED_ERR_NOMEM;
    for (size_t i = 0; i < b->length; i++)
        seen[i] = strchr("\t\n\r\f\v", b->text[i]) && b->text[i] ? ' ' : b->text[i];
    ted_status s = p->splitter ? TED_OK
                               : document_splitter_open(p->options->language, &p->splitter, p->err);
    if (!s)
        s = document_splitter_split(p->splitter, seen, b->length, spans, count, p->err);
    free(seen);
    return s;
}

static ted_status emit_block(parse_state *p)
{
    block *b = &p->b;
    ted_status s = TED_OK;
    for (int i = 0; !s && i < b->count; i++)
        s = check_run(p, &b->runs[i]);
    document_span *spans = NULL;
    int count = 0, next = 0;
    if (!s)
        s = block_sentences(p, &spans, &count);
    for (int i = 0; !s && i < b->count; i++) {
        s = document_add_source(p->d, p->emitted, b->runs[i].raw_start, p->err);
        if (!s)
            s = emit_run(p, &b->runs[i], spans, count, &next);
        p->emitted = b->runs[i].raw_end;
    }
    free(spans);
    return s;
}

/* A block boundary: the runs so far become parts. */
static void end_block(parse_state *p)
{
    end_run(p);
    if (!p->status && p->b.count > 0)
        fail(p, emit_block(p));
    p->b.length = 0;
    p->b.count = 0;
}

/* ---- the parser's events ------------------------------------------------------- */

/* Where the markup just reported ends: after a start tag's '>' or '/>',
 * or here after a '>'; an implied element leaves it where it was. */
static void markup_seen(parse_state *p, bool start_tag)
{
    const char *page = p->page;
    size_t at = position(p), n = p->d->length;
    if (start_tag && at < n && page[at] == '>')
        p->markup_end = at + 1;
    else if (start_tag && at + 1 < n && page[at] == '/' && page[at + 1] == '>')
        p->markup_end = at + 2;
    else if (!start_tag && at > p->markup_end && page[at - 1] == '>')
        p->markup_end = at;
}

/* Whether the class attribute `value` lists `name`. */
static bool has_class(const char *value, const char *name)
{
    size_t n = strlen(name);
    for (const char *at = strstr(value, name); at; at = strstr(at + 1, name))
        if ((at == value || strchr(" \t\n\r\f", at[-1])) && strchr(" \t\n\r\f", at[n]))
            return true;
    return false;
}

/* The state of an element opened in `parent` with these attributes. */
static unsigned element_state(unsigned parent, const xmlChar *name, const xmlChar **attrs)
{
    unsigned state = parent;
    if (listed(kept_elements, sizeof kept_elements / sizeof *kept_elements, name))
        state |= KEPT;
    for (int i = 0; attrs && attrs[i]; i += 2) {
        const char *key = (const char *)attrs[i], *value = (const char *)attrs[i + 1];
        if (!value)
            continue;
        if (!strcmp(key, "translate") && !strcasecmp(value, "no"))
            state &= ~(unsigned)TRANSLATE;
        else if (!strcmp(key, "translate") && !strcasecmp(value, "yes"))
            state |= TRANSLATE;
        else if (!strcmp(key, "class") && has_class(value, "notranslate"))
            state &= ~(unsigned)TRANSLATE;
    }
    return state;
}

static void on_start(void *data, const xmlChar *name, const xmlChar **attrs)
{
    parse_state *p = data;
    if (p->status)
        return;
    end_run(p);
    unsigned parent = current_state(p), state = element_state(parent, name, attrs);
    if (!listed(inline_elements, sizeof inline_elements / sizeof *inline_elements, name) ||
        state != parent)
        end_block(p);
    if (p->depth == p->depth_capacity) {
        int grown = p->depth_capacity ? 2 * p->depth_capacity : 64;
        unsigned char *states = ted_alloc((size_t)grown, 1, "html elements", p->err);
        if (!states) {
            fail(p, TED_ERR_NOMEM);
            return;
        }
        if (p->depth)
            memcpy(states, p->states, (size_t)p->depth);
        free(p->states);
        p->states = states;
        p->depth_capacity = grown;
    }
    p->states[p->depth++] = (unsigned char)state;
    markup_seen(p, true);
}

static void on_end(void *data, const xmlChar *name)
{
    parse_state *p = data;
    if (p->status)
        return;
    end_run(p);
    unsigned state = current_state(p);
    if (p->depth > 0)
        p->depth--;
    if (!listed(inline_elements, sizeof inline_elements / sizeof *inline_elements, name) ||
        state != current_state(p))
        end_block(p);
    markup_seen(p, false);
}

/* A comment, a processing instruction, the doctype, script or style text. */
static void on_markup(parse_state *p)
{
    if (!p->status) {
        end_run(p);
        markup_seen(p, false);
    }
}

static void on_comment(void *data, const xmlChar *text)
{
    (void)text;
    on_markup(data);
}

static void on_instruction(void *data, const xmlChar *target, const xmlChar *text)
{
    (void)target;
    (void)text;
    on_markup(data);
}

static void on_raw_text(void *data, const xmlChar *text, int n)
{
    (void)text;
    (void)n;
    on_markup(data);
}

static void on_doctype(void *data, const xmlChar *name, const xmlChar *public_id,
                       const xmlChar *system_id)
{
    (void)name;
    (void)public_id;
    (void)system_id;
    on_markup(data);
}

/* The parser's complaints: it goes on past malformed markup, as browsers do. */
static void on_complaint(void *data, const char *message, ...)
{
    (void)data;
    (void)message;
}

/* ---- the page ------------------------------------------------------------------ */

static pthread_once_t libxml2_ready = PTHREAD_ONCE_INIT;

static void start_libxml2(void)
{
    xmlInitParser();
}

static void run_parser(parse_state *p, const char *text, size_t length)
{
    htmlSAXHandler sax = {
        .startElement = on_start,       .endElement = on_end,
        .characters = on_text,          .ignorableWhitespace = on_text,
        .comment = on_comment,          .processingInstruction = on_instruction,
        .cdataBlock = on_raw_text,      .internalSubset = on_doctype,
        .warning = on_complaint,        .error = on_complaint,
        .fatalError = on_complaint,
    };
    htmlParserCtxtPtr ctxt = htmlCreateMemoryParserCtxt(text, (int)length);
    if (!ctxt) {
        fail(p, ted_fail(p->err, TED_ERR_NOMEM, "html: out of memory"));
        return;
    }
    htmlCtxtUseOptions(ctxt, HTML_PARSE_NOIMPLIED | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                 HTML_PARSE_NONET | HTML_PARSE_IGNORE_ENC);
    xmlSwitchEncoding(ctxt, XML_CHAR_ENCODING_UTF8);
    xmlFree(ctxt->sax);
    ctxt->sax = &sax;
    ctxt->userData = p;
    p->ctxt = ctxt;
    htmlParseDocument(ctxt);
    ctxt->sax = NULL;  /* not the parser's to free */
    htmlFreeParserCtxt(ctxt);
    p->ctxt = NULL;
}

ted_status document_parse_html(document *d, const document_options *options, ted_error *err)
{
    pthread_once(&libxml2_ready, start_libxml2);
    parse_state p = {.d = d, .options = options, .err = err};
    if (d->length >= 3 && !memcmp(d->source, "\xef\xbb\xbf", 3))
        p.base = p.markup_end = 3;  /* the BOM stays, as the page's first bytes */
    if (d->length - p.base > INT_MAX)
        return ted_fail(err, TED_ERR_INPUT, "html: the page is over %d bytes", INT_MAX);
    char *masked;
    unsigned char *map;
    if (html_mask_inert(d->source, d->length, &masked, &map, err))
        return TED_ERR_NOMEM;
    p.page = masked;
    p.map = map;
    if (d->length > p.base)
        run_parser(&p, masked + p.base, d->length - p.base);
    end_block(&p);
    if (!p.status)
        p.status = document_add_source(d, p.emitted, d->length, err);
    free(p.b.text);
    free(p.b.raw);
    free(p.b.runs);
    free(p.states);
    free(masked);
    free(map);
    document_splitter_close(p.splitter);
    return p.status;
}
