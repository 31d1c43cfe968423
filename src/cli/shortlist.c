/* ted shortlist: a vocabulary shortlist (io/shortlist.h) for a model, from
 * a parallel corpus, or from a source corpus and the model's own greedy
 * translations of it. A target t ranks for a source token s by
 * c(s,t) / sqrt(c(s) c(t)) over the sentence pairs (the cosine of their
 * occurrence vectors, Ochiai's coefficient): a rare inflected form that
 * turns up whenever s does ranks high, where Dice's 2 c(s,t) / (c(s) + c(t))
 * ranks it below the frequent forms (measurements:
 * docs/performance.md#vocabulary-shortlist). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted shortlist -m DIR --source FILE [--target FILE] [--top N]\n"
    "                     [--frequent M] -o FILE\n"
    "\n"
    "Writes a vocabulary shortlist for the model: for each source token, the N\n"
    "target tokens of highest score over the corpus's sentence pairs,\n"
    "c(s,t) / sqrt(c(s) c(t)), where c counts the pairs whose source holds s,\n"
    "whose target holds t, or both; ties go to the more frequent pair, then to\n"
    "the lower id. The M most frequent target tokens (by occurrences) are kept\n"
    "for every batch. `ted translate --shortlist FILE` (or the config's\n"
    "decoding.shortlist) then restricts the final Linear + Softmax to the union\n"
    "of these over each batch's source tokens (docs/decoding.md).\n"
    "\n"
    "options:\n"
    "  -m, --model DIR     the model directory\n"
    "  --source FILE       source sentences, one a line\n"
    "  --target FILE       their translations, line for line; without it the\n"
    "                      model translates the source (greedy) and the\n"
    "                      shortlist is built from its own translations\n"
    "  --top N             target tokens kept per source token (default 50)\n"
    "  --frequent M        most frequent target tokens kept always (default 50)\n"
    "  --source-lang CODE  the source language (`ted info` lists a model's)\n"
    "  --target-lang CODE  the target language, required when the model\n"
    "                      translates into several\n"
    "  --threads N         threads, when the model translates (default 1)\n"
    "  -o, --output FILE   where to write the shortlist (required): a new file,\n"
    "                      never the corpus nor a file of the model; written\n"
    "                      under a temporary name and renamed once whole\n"
    "  --force             replace FILE when it exists\n"
    "  -h, --help          show this help\n";

enum { CHUNK_LINES = 1024 };

/* Sentence-pair counts of the corpus. */
typedef struct counts {
    int src_vocab, tgt_vocab;
    uint32_t *src_pairs;     /* (src_vocab): pairs whose source holds s */
    uint32_t *tgt_pairs;     /* (tgt_vocab): pairs whose target holds t */
    uint64_t *tgt_tokens;    /* (tgt_vocab): occurrences of t */
    uint64_t *keys;          /* (capacity): s * tgt_vocab + t + 1, 0 empty */
    uint32_t *both;          /* (capacity): pairs holding s and t */
    size_t capacity, used;
    unsigned char *seen;     /* (src_vocab + tgt_vocab): marks within a pair */
    int *unique;             /* (src_vocab + tgt_vocab): the ids of a pair, once each */
} counts;

static void counts_free(counts *c)
{
    free(c->src_pairs);
    free(c->tgt_pairs);
    free(c->tgt_tokens);
    free(c->keys);
    free(c->both);
    free(c->seen);
    free(c->unique);
}

static int counts_init(counts *c, const ted_model *model)
{
    ted_config_architecture shape = ted_config_get_view(ted_model_config(model)).model;
    size_t n = (size_t)shape.src_vocab_size + (size_t)shape.tgt_vocab_size;
    *c = (counts){.src_vocab = shape.src_vocab_size, .tgt_vocab = shape.tgt_vocab_size};
    c->src_pairs = calloc((size_t)c->src_vocab, sizeof *c->src_pairs);
    c->tgt_pairs = calloc((size_t)c->tgt_vocab, sizeof *c->tgt_pairs);
    c->tgt_tokens = calloc((size_t)c->tgt_vocab, sizeof *c->tgt_tokens);
    c->capacity = 1 << 16;
    c->keys = calloc(c->capacity, sizeof *c->keys);
    c->both = calloc(c->capacity, sizeof *c->both);
    c->seen = calloc(n, 1);
    c->unique = malloc(n * sizeof *c->unique);
    if (c->src_pairs && c->tgt_pairs && c->tgt_tokens && c->keys && c->both && c->seen &&
        c->unique)
        return 0;
    return cli_error("shortlist: out of memory");
}

static size_t slot_of(uint64_t key, size_t capacity)
{
    return (size_t)((key * 0x9E3779B97F4A7C15u) >> 17) & (capacity - 1);
}

/* Doubles the pair table. */
static int grow(counts *c)
{
    size_t capacity = c->capacity * 2;
    uint64_t *keys = calloc(capacity, sizeof *keys);
    uint32_t *both = calloc(capacity, sizeof *both);
    if (!keys || !both) {
        free(keys);
        free(both);
        return cli_error("shortlist: out of memory for %zu token pairs", c->used);
    }
    for (size_t i = 0; i < c->capacity; i++) {
        if (!c->keys[i])
            continue;
        size_t at = slot_of(c->keys[i], capacity);
        while (keys[at])
            at = (at + 1) & (capacity - 1);
        keys[at] = c->keys[i];
        both[at] = c->both[i];
    }
    free(c->keys);
    free(c->both);
    c->keys = keys;
    c->both = both;
    c->capacity = capacity;
    return 0;
}

static int count_pair(counts *c, int s, int t)
{
    if (c->used * 2 >= c->capacity && grow(c))
        return 1;
    uint64_t key = (uint64_t)s * (uint64_t)c->tgt_vocab + (uint64_t)t + 1;
    size_t at = slot_of(key, c->capacity);
    while (c->keys[at] && c->keys[at] != key)
        at = (at + 1) & (c->capacity - 1);
    if (!c->keys[at]) {
        c->keys[at] = key;
        c->used++;
    }
    c->both[at]++;
    return 0;
}

/* The distinct ids of ids (n) into c->unique + at, marked in c->seen +
 * offset; returns how many. */
static int distinct(counts *c, const int *ids, int n, int offset, int at)
{
    int count = 0;
    for (int i = 0; i < n; i++)
        if (!c->seen[offset + ids[i]]) {
            c->seen[offset + ids[i]] = 1;
            c->unique[at + count++] = ids[i];
        }
    for (int i = 0; i < count; i++)
        c->seen[offset + c->unique[at + i]] = 0;
    return count;
}

/* One sentence pair: source ids (n), target ids (m). */
static int count_sentence(counts *c, const int *src, int n, const int *tgt, int m)
{
    int ns = distinct(c, src, n, 0, 0);
    int nt = distinct(c, tgt, m, c->src_vocab, ns);
    for (int j = 0; j < m; j++)
        c->tgt_tokens[tgt[j]]++;
    for (int i = 0; i < ns; i++)
        c->src_pairs[c->unique[i]]++;
    for (int j = 0; j < nt; j++)
        c->tgt_pairs[c->unique[ns + j]]++;
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < nt; j++)
            if (count_pair(c, c->unique[i], c->unique[ns + j]))
                return 1;
    return 0;
}

/* ---- the corpus, a chunk of lines at a time ------------------------------ */

typedef struct shortlist_args {
    const char *source, *target, *output;
    int top, frequent, threads;
    bool force;
    ted_languages languages;
} shortlist_args;

typedef struct chunk {
    ted_source sources[CHUNK_LINES];
    int *targets[CHUNK_LINES];
    int target_counts[CHUNK_LINES];
    ted_translation translations[CHUNK_LINES];
    int count;
    long first_line;
} chunk;

static void chunk_clear(chunk *k)
{
    for (int i = 0; i < k->count; i++) {
        ted_source_free(&k->sources[i]);
        free(k->targets[i]);
        k->targets[i] = NULL;
    }
    ted_translations_free(k->translations, k->count);
    k->count = 0;
}

/* The model's greedy translations of the chunk's sources, as targets. */
static int translate_chunk(const ted_model *model, const shortlist_args *o, chunk *k)
{
    const int *ids[CHUNK_LINES];
    int lengths[CHUNK_LINES];
    for (int i = 0; i < k->count; i++) {
        ids[i] = k->sources[i].ids;
        lengths[i] = k->sources[i].count;
    }
    ted_translate_options options = ted_translate_model_options(model);
    options.decode = (ted_decode_options){.strategy = TED_DECODE_GREEDY, .n_best = 1};
    options.languages = o->languages;
    ted_error err = {0};
    if (ted_translate_ids(model, ids, lengths, k->count, &options, k->translations, &err))
        return cli_error("shortlist: %s: lines %ld..%ld: %s", o->source, k->first_line,
                         k->first_line + k->count - 1, err.message);
    return 0;
}

static int count_chunk(counts *c, const ted_model *model, const shortlist_args *o, chunk *k)
{
    if (!o->target && translate_chunk(model, o, k))
        return 1;
    for (int i = 0; i < k->count; i++) {
        const ted_source *s = &k->sources[i];
        const ted_hypothesis *h = &k->translations[i].hypothesis;
        const int *tgt = o->target ? k->targets[i] : h->ids;
        int m = o->target ? k->target_counts[i] : h->length;
        if (!s->blank && count_sentence(c, s->ids, s->count, tgt, m))
            return 1;
    }
    return 0;
}

/* Line `number` of both files into the chunk's next pair. */
static int read_pair(const ted_model *model, const shortlist_args *o, chunk *k, long number,
                     const char *src_line, const char *tgt_line)
{
    ted_error err = {0};
    int i = k->count, unknown = 0;
    if (ted_prepare_source(model, src_line, &o->languages, &k->sources[i], &err))
        return cli_error("shortlist: %s:%ld: %s", o->source, number, err.message);
    k->count++;
    if (tgt_line && ted_encode_target(model, tgt_line, &k->targets[i], &k->target_counts[i],
                                      &unknown, &err))
        return cli_error("shortlist: %s:%ld: %s", o->target, number, err.message);
    return 0;
}

typedef struct corpus {
    FILE *src, *tgt;
    char *lines[2];
    size_t room[2], length[2];
} corpus;

/* Reads the next line of the source (and the target): 1 when read, 0 at
 * the end, -1 after an error. */
static int next_lines(corpus *in, const shortlist_args *o, long number)
{
    int got = cli_read_bounded_line(in->src, o->source, number, &in->lines[0], &in->room[0],
                                    &in->length[0]);
    if (got == CLI_LINE_ERROR || !in->tgt)
        return got == CLI_LINE_READ ? 1 : got == CLI_LINE_END ? 0 : -1;
    int other = cli_read_bounded_line(in->tgt, o->target, number, &in->lines[1], &in->room[1],
                                      &in->length[1]);
    if (other == CLI_LINE_ERROR)
        return -1;
    if ((got == CLI_LINE_READ) != (other == CLI_LINE_READ)) {
        cli_error("shortlist: %s has more lines than %s (line %ld)",
                  got == CLI_LINE_READ ? o->source : o->target,
                  got == CLI_LINE_READ ? o->target : o->source, number);
        return -1;
    }
    return got == CLI_LINE_READ ? 1 : 0;
}

static int count_corpus(counts *c, const ted_model *model, const shortlist_args *o,
                        corpus *in, chunk *k)
{
    long number = 0;
    int got = 0, status = 0;
    k->first_line = 1;
    while (!status && (got = next_lines(in, o, ++number)) == 1) {
        status = read_pair(model, o, k, number, in->lines[0], in->tgt ? in->lines[1] : NULL);
        if (!status && k->count == CHUNK_LINES) {
            status = count_chunk(c, model, o, k);
            chunk_clear(k);
            k->first_line = number + 1;
        }
    }
    if (!status && got == 0 && k->count > 0)
        status = count_chunk(c, model, o, k);
    chunk_clear(k);
    return status || got < 0 ? 1 : 0;
}

/* ---- writing --------------------------------------------------------------- */

typedef struct scored {
    int source, target;
    uint32_t both;
    float score;  /* c(s,t) / sqrt(c(s) c(t)) */
} scored;

static int by_source_then_score(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->both != y->both)
        return x->both > y->both ? -1 : 1;
    return (x->target > y->target) - (x->target < y->target);
}

/* Every pair counted, scored, sorted by source then best first. */
static scored *score_pairs(const counts *c)
{
    scored *all = malloc((c->used ? c->used : 1) * sizeof *all);
    if (!all)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < c->capacity; i++) {
        if (!c->keys[i])
            continue;
        uint64_t key = c->keys[i] - 1;
        int s = (int)(key / (uint64_t)c->tgt_vocab), t = (int)(key % (uint64_t)c->tgt_vocab);
        double product = (double)c->src_pairs[s] * (double)c->tgt_pairs[t];
        all[n++] = (scored){s, t, c->both[i], (float)(c->both[i] / sqrt(product))};
    }
    qsort(all, n, sizeof *all, by_source_then_score);
    return all;
}

typedef struct frequency_order {
    int id;
    uint64_t count;
} frequency_order;

static int by_frequency(const void *a, const void *b)
{
    const frequency_order *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* "frequent" and the M most frequent targets seen. */
static int write_frequent(FILE *out, const counts *c, int m)
{
    frequency_order *order = malloc((size_t)c->tgt_vocab * sizeof *order);
    if (!order)
        return cli_error("shortlist: out of memory");
    for (int t = 0; t < c->tgt_vocab; t++)
        order[t] = (frequency_order){t, c->tgt_tokens[t]};
    qsort(order, (size_t)c->tgt_vocab, sizeof *order, by_frequency);
    fputs("frequent", out);
    for (int i = 0; i < m && i < c->tgt_vocab && order[i].count > 0; i++)
        fprintf(out, " %d", order[i].id);
    fputc('\n', out);
    free(order);
    return 0;
}

static int write_shortlist(FILE *out, const counts *c, const shortlist_args *o)
{
    scored *all = score_pairs(c);
    if (!all)
        return cli_error("shortlist: out of memory for %zu token pairs", c->used);
    fprintf(out,
            "ted-shortlist 1\n"
            "# per source token the %d targets of highest c(s,t) / sqrt(c(s) c(t)) over %s%s%s;\n"
            "# the %d most frequent targets\n"
            "vocab %d %d\n",
            o->top, o->source, o->target ? " and " : " and the model's translations",
            o->target ? o->target : "", o->frequent, c->src_vocab, c->tgt_vocab);
    int status = write_frequent(out, c, o->frequent);
    for (size_t i = 0; !status && i < c->used;) {
        int s = all[i].source, kept = 0;
        fprintf(out, "%d", s);
        for (; i < c->used && all[i].source == s; i++)
            if (kept++ < o->top)
                fprintf(out, " %d", all[i].target);
        fputc('\n', out);
    }
    free(all);
    return status;
}

/* ---- the command ------------------------------------------------------------ */

static bool shortlist_option(cli_args *a, const char *option, void *options)
{
    shortlist_args *o = options;
    if (cli_value_option(a, option, "--source", NULL, &o->source) ||
        cli_value_option(a, option, "--target", NULL, &o->target) ||
        cli_value_option(a, option, "--output", "-o", &o->output)) {
        return true;
    } else if (!strcmp(option, "--force")) {
        o->force = true;
    } else if (!strcmp(option, "--top")) {
        cli_take_int(a, option, 1, 1 << 24, &o->top);
    } else if (!strcmp(option, "--frequent")) {
        cli_take_int(a, option, 0, 1 << 24, &o->frequent);
    } else if (!strcmp(option, "--threads")) {
        cli_take_int(a, option, 1, 256, &o->threads);
    } else {
        return cli_language_option(a, option, &o->languages);
    }
    return true;
}

static int check_shortlist(const cli_args *a, void *options)
{
    const shortlist_args *o = options;
    if (a->operand_count > 0)
        return cli_error("shortlist: unexpected argument '%s'", a->operands[0]);
    if (!a->model_dir || !o->source || !o->output)
        return cli_error("shortlist: -m DIR, --source FILE and -o FILE are required");
    return 0;
}

static int open_corpus(corpus *in, const shortlist_args *o)
{
    if (!(in->src = fopen(o->source, "r")))
        return cli_error("shortlist: cannot open %s: %s", o->source, strerror(errno));
    if (o->target && !(in->tgt = fopen(o->target, "r")))
        return cli_error("shortlist: cannot open %s: %s", o->target, strerror(errno));
    return 0;
}

static void close_corpus(corpus *in)
{
    if (in->src)
        fclose(in->src);
    if (in->tgt)
        fclose(in->tgt);
    free(in->lines[0]);
    free(in->lines[1]);
}

/* -o FILE is none of the inputs (the corpus, the model's files and its
 * shortlist) and, without --force, no file that exists
 * (frontend_output_check, the rule of ted quantize's directory). */
static int check_output(const ted_model *model, const char *model_dir, const shortlist_args *o)
{
    const ted_config *config = ted_model_config(model);
    const char *shortlist = ted_config_get_view(config).files.shortlist;
    ted_model_files files;
    ted_model_list_files(config, &files);
    static char paths[TED_MODEL_FILES + 1][PATH_MAX];
    const char *inputs[TED_MODEL_FILES + 3] = {o->source, o->target};
    int n = 2;
    for (int i = 0; i < files.count; i++) {
        snprintf(paths[i], PATH_MAX, "%s/%s", model_dir, files.name[i]);
        inputs[n++] = paths[i];
    }
    if (shortlist[0]) {
        bool absolute = shortlist[0] == '/';
        snprintf(paths[files.count], PATH_MAX, "%s%s%s", absolute ? "" : model_dir,
                 absolute ? "" : "/", shortlist);
        inputs[n++] = paths[files.count];
    }
    ted_error err = {0};
    if (strcmp(o->output, "-") &&
        frontend_output_check(o->output, inputs, n, "--force", o->force, &err))
        return cli_error("shortlist: -o %s", err.message);
    return 0;
}

static int shortlist_command(ted_model *model, const cli_args *a, void *options)
{
    const shortlist_args *o = options;
    if (check_output(model, a->model_dir, o))
        return 1;
    ted_model_set_shortlist(model, NULL, NULL);  /* translations over the whole vocabulary */
    ted_set_threads(o->threads);
    counts c = {0};
    corpus in = {0};
    chunk *k = calloc(1, sizeof *k);
    if (!k)
        return cli_error("shortlist: out of memory");
    int status = counts_init(&c, model);
    if (!status && !(status = open_corpus(&in, o)))
        status = count_corpus(&c, model, o, &in, k);
    if (!status) {
        cli_output out;
        if (!(status = cli_output_open(&out, o->output, "shortlist")))
            status = cli_output_close(&out, write_shortlist(out.file, &c, o));
    }
    close_corpus(&in);
    counts_free(&c);
    free(k);
    return status;
}

int cli_shortlist(int argc, char **argv)
{
    static const cli_command command = {"shortlist", usage, shortlist_option,
                                        check_shortlist, shortlist_command, false};
    shortlist_args o = {.top = 50, .frequent = 50, .threads = 1};
    return cli_run(&command, &o, argc, argv);
}
