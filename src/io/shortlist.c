/* Reading a vocabulary shortlist file (io/shortlist.h). */
#include "io/shortlist.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "core/limits.h"
#include "io/shortlist_bin.h"

typedef struct reader {
    const char *at, *end;   /* the rest of the text */
    const char *line_start, *line_end;  /* the current line */
    int line;               /* its number, 1-based */
    const char *name;
    ted_error *err;
} reader;

/* Moves to the next line that is neither blank nor a '#' comment; false at
 * the end of the text. */
static bool next_line(reader *r)
{
    while (r->at < r->end) {
        const char *start = r->at;
        const char *nl = memchr(start, '\n', (size_t)(r->end - start));
        const char *stop = nl ? nl : r->end;
        r->at = nl ? nl + 1 : r->end;
        r->line++;
        while (stop > start && (stop[-1] == '\r' || stop[-1] == ' ' || stop[-1] == '\t'))
            stop--;
        while (start < stop && (*start == ' ' || *start == '\t'))
            start++;
        if (start == stop || *start == '#')
            continue;
        r->line_start = start;
        r->line_end = stop;
        return true;
    }
    return false;
}

static ted_status line_error(reader *r, const char *what)
{
    return ted_fail(r->err, TED_ERR_FORMAT, "%s:%d: %s", r->name, r->line ? r->line : 1, what);
}

/* The word at the start of the line, which must be `word` followed by a
 * space or the line's end; moves past it. */
static bool take_word(reader *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->line_end - r->line_start) < n || memcmp(r->line_start, word, n) != 0)
        return false;
    const char *after = r->line_start + n;
    if (after < r->line_end && *after != ' ' && *after != '\t')
        return false;
    r->line_start = after;
    return true;
}

/* The next id of the line into *id, below `limit`: 1 read, 0 at the line's
 * end, -1 on a bad id (the error filled). */
static int take_id(reader *r, int limit, const char *side, int *id)
{
    const char *p = r->line_start;
    while (p < r->line_end && (*p == ' ' || *p == '\t'))
        p++;
    r->line_start = p;
    if (p == r->line_end)
        return 0;
    long value = 0;
    for (; p < r->line_end && *p >= '0' && *p <= '9'; p++)
        value = value > limit ? value : value * 10 + (*p - '0');
    if (p == r->line_start || (p < r->line_end && *p != ' ' && *p != '\t')) {
        line_error(r, "expected a token id (a decimal integer)");
        return -1;
    }
    if (value >= limit) {
        ted_fail(r->err, TED_ERR_FORMAT, "%s:%d: id %.*s is outside the %s vocabulary (0..%d)",
                 r->name, r->line, (int)(p - r->line_start), r->line_start, side, limit - 1);
        return -1;
    }
    r->line_start = p;
    *id = (int)value;
    return 1;
}

static ted_status read_header(reader *r, int src_vocab, int tgt_vocab)
{
    if (!next_line(r) || !take_word(r, "ted-shortlist"))
        return line_error(r, "not a ted shortlist (the first line is not \"ted-shortlist 1\")");
    int version = 0, sizes[2] = {0, 0};
    if (take_id(r, 1000, "version", &version) != 1 || version != 1 ||
        r->line_start != r->line_end)
        return line_error(r, "version is not 1 (\"ted-shortlist 1\")");
    if (!next_line(r) || !take_word(r, "vocab"))
        return line_error(r, "expected \"vocab SRC_VOCAB TGT_VOCAB\"");
    for (int i = 0; i < 2; i++)
        if (take_id(r, 1 << 30, "size", &sizes[i]) != 1)
            return line_error(r, "expected \"vocab SRC_VOCAB TGT_VOCAB\"");
    if (r->line_start != r->line_end)
        return line_error(r, "expected \"vocab SRC_VOCAB TGT_VOCAB\"");
    if (sizes[0] != src_vocab || sizes[1] != tgt_vocab)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s:%d: made for vocabularies of %d and %d tokens, but the model's "
                        "have %d and %d (src_vocab_size, tgt_vocab_size)",
                        r->name, r->line, sizes[0], sizes[1], src_vocab, tgt_vocab);
    return TED_OK;
}

/* The target ids of the rest of the line, appended to out->targets. */
static ted_status read_targets(reader *r, ted_shortlist *out, int *count)
{
    int id, got;
    while ((got = take_id(r, out->tgt_vocab, "target", &id)) == 1)
        out->targets[(*count)++] = id;
    return got < 0 ? r->err->status : TED_OK;
}

static ted_status read_entries(reader *r, ted_shortlist *out)
{
    int count = 0, next_source = 0, source;
    if (!next_line(r) || !take_word(r, "frequent"))
        return line_error(r, "expected \"frequent\" and the target ids every batch keeps");
    ted_status s = read_targets(r, out, &count);
    out->frequent = out->targets;
    out->frequent_count = count;
    while (!s && next_line(r)) {
        int got = take_id(r, out->src_vocab, "source", &source);
        if (got < 0)
            return r->err->status;
        if (source < next_source)
            return line_error(r, "source ids must increase from line to line");
        while (next_source <= source)
            out->offsets[next_source++] = count;
        s = read_targets(r, out, &count);
    }
    while (next_source <= out->src_vocab)
        out->offsets[next_source++] = count;
    return s;
}

ted_status ted_shortlist_parse(const char *text, size_t length, const char *name,
                               int src_vocab, int tgt_vocab, ted_shortlist *out,
                               ted_error *err)
{
    ted_error scratch;
    if (!err)
        err = &scratch;
    memset(out, 0, sizeof *out);
    if (ted_shortlist_bin_is(text, length))
        return ted_shortlist_bin_parse(text, length, name, src_vocab, tgt_vocab, out, err);
    reader r = {text, text + length, text, text, 0, name, err};
    ted_status s = read_header(&r, src_vocab, tgt_vocab);
    if (s)
        return s;
    out->src_vocab = src_vocab;
    out->tgt_vocab = tgt_vocab;
    /* every id takes a digit and a separator: length / 2 + 1 bounds them */
    out->offsets = ted_alloc((size_t)src_vocab + 1, sizeof(int), name, err);
    out->targets = ted_alloc(length / 2 + 1, sizeof(int), name, err);
    s = out->offsets && out->targets ? read_entries(&r, out) : TED_ERR_NOMEM;
    if (s)
        ted_shortlist_free(out);
    return s;
}

typedef struct parse_into {
    int src_vocab, tgt_vocab;
    ted_shortlist *out;
} parse_into;

static ted_status parse_shortlist(const char *text, size_t length, const char *name,
                                  void *into, ted_error *err)
{
    parse_into *p = into;
    return ted_shortlist_parse(text, length, name, p->src_vocab, p->tgt_vocab, p->out, err);
}

ted_status ted_shortlist_load(const char *path, int src_vocab, int tgt_vocab,
                              ted_shortlist *out, ted_error *err)
{
    if (!path || !out)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_shortlist_load: path and out are required");
    memset(out, 0, sizeof *out);
    parse_into into = {src_vocab, tgt_vocab, out};
    return ted_parse_file(path, SHORTLIST_MAX_BYTES, TED_ERR_FORMAT, "a shortlist",
                          parse_shortlist, &into, err);
}

void ted_shortlist_free(ted_shortlist *shortlist)
{
    if (!shortlist)
        return;
    free(shortlist->offsets);
    free(shortlist->targets);
    memset(shortlist, 0, sizeof *shortlist);
}
