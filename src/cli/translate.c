/* ted translate: one output line per input line (or n_best lines), in order. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/clock.h"
#include "document/document.h"
#include "frontend/options.h"

static const char usage[] =
    "usage: ted translate -m DIR [OPTIONS] [TEXT...]\n"
    "\n"
    "Translates each TEXT, or each line of the input (-i FILE, or standard input),\n"
    "printing one line per input line, in order. An empty line gives an empty line.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR      the model directory (config.yaml, weights, vocabularies)\n"
    "  -i, --input FILE     read the sentences from FILE, one a line\n"
    "  -o, --output FILE    write the translations to FILE instead of standard\n"
    "                       output: a FILE that exists is replaced only once all\n"
    "                       are written, keeping its permissions and owner; a\n"
    "                       symbolic link's target is written; a device or FIFO\n"
    "                       (/dev/stdout) is written directly; '-' is standard\n"
    "                       output\n"
    "  --max-length N       generate at most N tokens per sentence (default: the\n"
    "                       model's decoding rule in config.yaml)\n"
    "  --batch-size N       sentences decoded together, at most (default 32; with\n"
    "                       --max-batch-tokens alone, as many as its tokens allow)\n"
    "  --max-batch-tokens N a batch holds at most N source tokens, padding\n"
    "                       counted (sentences x the longest); the sentences of\n"
    "                       each 1024 lines are sorted by length first, and the\n"
    "                       output keeps the input's order\n"
    "  --workers W          batches decoded at once, each on a thread of its own\n"
    "  --threads N          threads for the matrix products (at most the CPUs this\n"
    "                       process may use: its affinity mask and cgroup CPU\n"
    "                       quota). Default: all those CPUs, as W workers of one\n"
    "                       thread up to Transformer-base's size (a decoder layer\n"
    "                       under 8 million weights), else one worker of N\n"
    "                       threads; --threads alone: one worker; --workers\n"
    "                       alone: the CPUs shared among them\n"
    "  --source-lang CODE   the source language, for a model that names its\n"
    "                       languages (`ted info` lists them)\n"
    "  --target-lang CODE   the target language; required when the model\n"
    "                       translates into several\n"
    "  --shortlist FILE     restrict the final Linear + Softmax, per batch, to the\n"
    "                       target tokens the vocabulary shortlist FILE lists for\n"
    "                       the batch's source tokens (`ted shortlist` makes one;\n"
    "                       default: the config's decoding.shortlist, if any)\n"
    "  -h, --help           show this help\n"
    "\n"
    "decoding (default: the model's config.yaml decoding: section, else greedy):\n"
    "  --beam N             beam search keeping N hypotheses per sentence\n"
    "  --length-penalty A   beam search ranks finished hypotheses by\n"
    "                       log-prob / lp(length) (default 0.6; 0: none)\n"
    "  --length-normalization gnmt|power\n"
    "                       beam search: gnmt (the default): lp = ((5 + length)\n"
    "                       / 6)^A; power: lp = length^A (Hugging Face\n"
    "                       transformers)\n"
    "  --early-stopping true|false|never\n"
    "                       beam search, once N hypotheses are finished (as\n"
    "                       transformers' generate): true stops at once; false\n"
    "                       (the default) once the best candidate's log-prob /\n"
    "                       lp(its length) cannot beat the worst of them; never\n"
    "                       once nothing open can, even at the length limit\n"
    "  --sample             draw each token at random from the model's distribution\n"
    "  --temperature T      sampling: divide the logits by T > 0 (default 1)\n"
    "  --top-k K            sampling: only among the K most likely tokens (0: all)\n"
    "  --top-p P            sampling: only among the most likely tokens holding\n"
    "                       probability P, 0 < P <= 1 (default 1: all)\n"
    "  --seed S             sampling: the random seed (0 to 2^64 - 1); the same seed\n"
    "                       and input give the same output (default: a random seed)\n"
    "  --n-best N           print N hypotheses per sentence, best first: beam search\n"
    "                       (N <= beam size) or N samples\n"
    "  --scores             print the log-probability of every token too\n"
    "\n"
    "documents:\n"
    "  --split-sentences    each input line is a paragraph: its sentences (cut\n"
    "                       with ICU) are translated as one batch and rejoined\n"
    "                       with the line's own spacing\n"
    "  --format text|html   html: the input (-i FILE or standard input, read\n"
    "                       whole; or each TEXT) is one HTML page; its text is\n"
    "                       translated sentence by sentence and the page comes\n"
    "                       back with every tag, attribute, comment and entity\n"
    "                       as it was (script, style, code, pre and\n"
    "                       translate=\"no\" left as they are). Default: text\n"
    "\n"
    "With --n-best or --scores, each hypothesis is a line of fields separated by\n"
    "' ||| ' (Moses n-best style):\n"
    "  INDEX ||| TRANSLATION ||| SCORE ||| LOG-PROB [||| TOKEN-LOG-PROBS]\n"
    "INDEX is the input line number from 0, SCORE what ranks the hypotheses (beam\n"
    "search: LOG-PROB / lp(length), EOS counted; otherwise LOG-PROB), LOG-PROB the\n"
    "natural log of the model's probability of the tokens (EOS included), and\n"
    "with --scores TOKEN-LOG-PROBS that of each token, EOS last when produced\n"
    "(an empty field for an empty line: every line has its five fields).\n"
    "--n-best and --scores apply to single sentences: not with --split-sentences\n"
    "or --format html.\n"
    "\n"
    "A progress line (sentences done, sentences/s, time left) goes to standard\n"
    "error when it is a terminal. Words missing from the source vocabulary are\n"
    "translated as unknown (<unk>) and reported on standard error. A line longer\n"
    "than 4 MiB is an error, naming the line.\n"
    "\n"
    "SIGINT (Ctrl-C) stops the translation between decoding steps: the lines\n"
    "translated before stay written (-o FILE: FILE is left as it was), and the exit\n"
    "status is 130. A second SIGINT ends the program at once.\n";

/* Lines are translated in chunks of CHUNK_LINES, or fewer once they hold
 * CHUNK_BYTES, so output starts before input ends and memory stays bounded
 * on long files and long lines. */
enum { CHUNK_LINES = 1024, CHUNK_BYTES = 16 << 20, KEPT_LINE_BYTES = 64 << 10 };

/* The progress line on standard error, when it is a terminal. */
typedef struct progress {
    bool on;
    bool shown;         /* a line is on the screen, without its newline */
    long total;         /* sentences in the whole input; 0: unknown (standard input) */
    long done_before;   /* sentences of earlier chunks */
    long done;
    double start, last; /* seconds */
} progress;

typedef struct translate_job {
    ted_model *model;
    ted_translate_options options;
    long first_line;  /* number of the chunk's first line, for messages */
    const char *input;  /* -i FILE, named before the line in messages; else NULL */
    bool moses;       /* n-best lines: INDEX ||| TEXT ||| SCORE ||| LOG-PROB */
    bool scores;      /* and ||| TOKEN-LOG-PROBS */
    FILE *out;
    const char *out_name;  /* for messages */
    progress progress;
    bool documents;             /* --split-sentences or --format html */
    document_options document;  /* their options */
    long sentences_done;        /* of the documents so far: their sampling streams */
} translate_job;

static void progress_show(progress *p, bool final)
{
    double t = ted_seconds();
    if (!final && t - p->last < 0.1)
        return;
    p->last = t;
    double elapsed = t - p->start;
    double rate = elapsed > 0.0 ? (double)p->done / elapsed : 0.0;
    fprintf(stderr, "\rted: %ld", p->done);
    if (p->total > 0)
        fprintf(stderr, "/%ld", p->total);
    fprintf(stderr, " sentences, %.1f sentences/s", rate);
    if (p->total > 0 && rate > 0.0) {
        long left = (long)ceil((double)(p->total - p->done) / rate);
        fprintf(stderr, ", ETA %ld:%02ld", left / 60, left % 60);
    }
    fputs("\033[K", stderr);
    if (final)
        fputc('\n', stderr);
    p->shown = !final;
    fflush(stderr);
}

/* Clears the progress line before another message goes to standard error. */
static void progress_clear(progress *p)
{
    if (p->on && p->shown) {
        fputs("\r\033[K", stderr);
        p->shown = false;
    }
}

static void on_progress(void *data, int done, int total)
{
    (void)total;
    progress *p = data;
    p->done = p->done_before + done;
    progress_show(p, false);
}

/* ---- SIGINT ------------------------------------------------------------------ */

/* The exit status after SIGINT, as a shell reports a program it ended. */
enum { INTERRUPTED_STATUS = 128 + SIGINT };

/* SIGINT requests the flag the translations watch (they stop between
 * decoding steps) and puts back the action there was before, so that a
 * second SIGINT takes it (ending the program, after removing a temporary
 * output file). */
static ted_cancel *interrupt_flag;
static struct sigaction interrupt_previous;
static volatile sig_atomic_t interrupted;

static void on_interrupt(int signal_number)
{
    (void)signal_number;
    interrupted = 1;
    ted_cancel_request(interrupt_flag);
    sigaction(SIGINT, &interrupt_previous, NULL);
}

/* Installs on_interrupt, unless SIGINT is ignored (a shell's background
 * job); true when it did. No SA_RESTART: a read of the input that SIGINT
 * interrupts returns. */
static bool catch_interrupt(void)
{
    struct sigaction action = {.sa_handler = on_interrupt};
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGINT, NULL, &interrupt_previous) != 0 ||
        interrupt_previous.sa_handler == SIG_IGN)
        return false;
    return sigaction(SIGINT, &action, NULL) == 0;
}

/* The lines of a chunk as sources, each line tokenized once. */
typedef struct encoded_lines {
    ted_source *sources;  /* (count) */
    const int **ids;      /* (count): sources[i].ids, as ted_translate_ids takes them */
    int *lengths;         /* (count): sources[i].count */
    int count;
} encoded_lines;

static void free_encoded(encoded_lines *e)
{
    for (int i = 0; e->sources && i < e->count; i++)
        ted_source_free(&e->sources[i]);
    free(e->sources);
    free(e->ids);
    free(e->lengths);
}

/* Tokenizes every line of the chunk before any is translated
 * (ted_prepare_source), so that an error names its line and leaves no
 * output: line_of[i] (NULL: the chunk's lines in order; -N: sentence N of
 * a page). */
static int encode_lines(const translate_job *job, const char *const *lines, int count,
                        const long *line_of, encoded_lines *e)
{
    const char *file = job->input ? job->input : "", *colon = job->input ? ": " : "";
    *e = (encoded_lines){.sources = calloc(count, sizeof *e->sources),
                         .ids = calloc(count, sizeof *e->ids),
                         .lengths = calloc(count, sizeof *e->lengths),
                         .count = count};
    if (!e->sources || !e->ids || !e->lengths)
        return cli_error("out of memory");
    for (int i = 0; i < count; i++) {
        ted_error err = {0};
        long where = line_of ? line_of[i] : job->first_line + i;
        if (ted_prepare_source(job->model, lines[i], &job->options.languages, &e->sources[i],
                               &err) != TED_OK)
            return cli_error("%s%s%s %ld: %s", file, colon, where > 0 ? "line" : "sentence",
                             where > 0 ? where : -where, err.message);
        e->ids[i] = e->sources[i].ids;
        e->lengths[i] = e->sources[i].count;
    }
    return 0;
}

/* The sentences of `e` translated with the job's options, watching the
 * SIGINT flag: 0, 1 after the library's message, or INTERRUPTED_STATUS
 * (which run() reports). */
static int translate_encoded(translate_job *job, const encoded_lines *e,
                             ted_translation *outputs)
{
    ted_error err = {0};
    ted_translate_call call = {&job->options, interrupt_flag};
    ted_status s = ted_translate_ids_cancellable(job->model, e->ids, e->lengths, e->count, &call,
                                                 outputs, &err);
    progress_clear(&job->progress);  /* standard output may be the same terminal */
    if (s == TED_ERR_CANCELLED)
        return INTERRUPTED_STATUS;
    return s == TED_OK ? 0 : cli_error("%s", err.message);
}

/* One hypothesis as an n-best line (see the usage). */
static void print_moses(const translate_job *job, long index, const ted_translation *t)
{
    const ted_hypothesis *h = &t->hypothesis;
    fprintf(job->out, "%ld ||| %s ||| %.6f ||| %.6f", index, t->text, h->score, h->log_prob);
    if (job->scores) {
        fputs(" ||| ", job->out);  /* the field is there, empty, for an empty line */
        for (int k = 0; k < h->length; k++)
            fprintf(job->out, k ? " %.6f" : "%.6f", (double)h->log_probs[k]);
    }
    fputc('\n', job->out);
}

/* Writes each line's translation (n-best lines with --n-best or --scores),
 * after the report of its unknown words. */
static void write_translations(translate_job *job, const char *const *lines,
                               const encoded_lines *e, const ted_translation *outputs)
{
    int n_best = job->options.decode.n_best;
    for (int i = 0; i < e->count; i++) {
        if (e->sources[i].unknown > 0)
            cli_report_unknown(job->model, job->input, job->first_line + i, lines[i],
                               &e->sources[i], "translated as <unk>");
        for (int k = 0; k < (job->moses ? n_best : 1); k++) {
            const ted_translation *t = &outputs[(size_t)i * n_best + k];
            if (job->moses)
                print_moses(job, job->first_line - 1 + i, t);
            else
                fprintf(job->out, "%s\n", t->text);
        }
    }
    fflush(job->out);
}

static int translate_chunk(translate_job *job, const char *const *lines, int count)
{
    encoded_lines e = {0};
    int n_best = job->options.decode.n_best;
    ted_translation *outputs = calloc((size_t)count * n_best, sizeof *outputs);
    int status = outputs ? encode_lines(job, lines, count, NULL, &e) : cli_error("out of memory");
    if (status == 0) {
        job->options.first_index = (uint64_t)(job->first_line - 1);
        job->progress.done_before = job->first_line - 1;
        status = translate_encoded(job, &e, outputs);
    }
    if (status == 0) {
        write_translations(job, lines, &e, outputs);
        ted_translations_free(outputs, count * n_best);
        job->first_line += count;
    }
    free_encoded(&e);
    free(outputs);
    if (status == 0 && ferror(job->out))
        status = cli_error("cannot write %s: %s", job->out_name, strerror(errno));
    return status;
}

/* ---- documents: --split-sentences, --format html --------------------------------- */

/* The documents of a chunk and their sentences, one after another. */
typedef struct chunk_documents {
    document **documents;    /* (count) */
    int count;
    const char **sentences;  /* (total) */
    long *line_of;           /* (total): each sentence's input line, for messages; in a
                              * page read whole, -N for its sentence N */
    int total;
} chunk_documents;

static void free_documents(chunk_documents *c)
{
    for (int i = 0; c->documents && i < c->count; i++)
        document_free(c->documents[i]);
    free(c->documents);
    free(c->sentences);
    free(c->line_of);
}

/* Parses each text as a document: each a line (lengths NULL, each text
 * NUL-terminated) or the whole input (lengths given). */
static int parse_documents(const translate_job *job, const char *const *texts,
                           const size_t *lengths, int count, chunk_documents *c)
{
    const char *file = job->input ? job->input : "the input";
    *c = (chunk_documents){.documents = calloc((size_t)count, sizeof *c->documents), .count = count};
    for (int i = 0; c->documents && i < count; i++) {
        ted_error err = {0};
        size_t length = lengths ? lengths[i] : strlen(texts[i]);
        if (document_parse(texts[i], length, &job->document, &c->documents[i], &err))
            return lengths ? cli_error("%s: %s", file, err.message)
                           : cli_error("%s%sline %ld: %s", job->input ? job->input : "",
                                       job->input ? ": " : "", job->first_line + i, err.message);
        c->total += document_sentence_count(c->documents[i]);
    }
    size_t room = c->total > 0 ? (size_t)c->total : 1;
    c->sentences = calloc(room, sizeof *c->sentences);
    c->line_of = calloc(room, sizeof *c->line_of);
    if (!c->documents || !c->sentences || !c->line_of)
        return cli_error("out of memory");
    for (int i = 0, at = 0; i < count; i++)
        for (int k = 0; k < document_sentence_count(c->documents[i]); k++, at++) {
            c->sentences[at] = document_sentences(c->documents[i])[k];
            c->line_of[at] = lengths ? -(long)(at + 1) : job->first_line + i;
        }
    return 0;
}

/* Writes each document rebuilt around its sentences' translations (and a
 * line end after each line's), after the report of its unknown words. */
static int write_documents(translate_job *job, const chunk_documents *c, const encoded_lines *e,
                           const ted_translation *outputs, bool line_ends)
{
    const char **texts = calloc(c->total > 0 ? (size_t)c->total : 1, sizeof *texts);
    if (!texts)
        return cli_error("out of memory");
    for (int j = 0; j < c->total; j++) {
        texts[j] = outputs[j].text;
        if (e->sources[j].unknown > 0)
            cli_report_unknown(job->model, job->input, c->line_of[j] > 0 ? c->line_of[j] : 0,
                               c->sentences[j],
                               &e->sources[j], "translated as <unk>");
    }
    int status = 0;
    for (int i = 0, at = 0; status == 0 && i < c->count; i++) {
        char *text;
        size_t length;
        ted_error err = {0};
        if (document_render(c->documents[i], texts + at, &text, &length, &err)) {
            status = cli_error("%s", err.message);
            break;
        }
        fwrite(text, 1, length, job->out);
        if (line_ends)
            fputc('\n', job->out);
        free(text);
        at += document_sentence_count(c->documents[i]);
    }
    free(texts);
    fflush(job->out);
    return status;
}

/* Translates the sentences of every document as one batch, then writes
 * the documents (texts and lengths as parse_documents takes them). */
static int translate_documents(translate_job *job, const char *const *texts,
                               const size_t *lengths, int count)
{
    chunk_documents c;
    encoded_lines e = {0};
    ted_translation *outputs = NULL;
    int status = parse_documents(job, texts, lengths, count, &c);
    if (status == 0 && !(outputs = calloc(c.total > 0 ? (size_t)c.total : 1, sizeof *outputs)))
        status = cli_error("out of memory");
    if (status == 0)
        status = encode_lines(job, c.sentences, c.total, c.line_of, &e);
    if (status == 0) {
        job->options.first_index = (uint64_t)job->sentences_done;
        job->progress.done_before = job->sentences_done;
        status = translate_encoded(job, &e, outputs);
    }
    if (status == 0) {
        status = write_documents(job, &c, &e, outputs, lengths == NULL);
        ted_translations_free(outputs, c.total);
        job->first_line += count;
        job->sentences_done += c.total;
    }
    free_encoded(&e);
    free(outputs);
    free_documents(&c);
    if (status == 0 && ferror(job->out))
        status = cli_error("cannot write %s: %s", job->out_name, strerror(errno));
    return status;
}

/* A chunk of lines: sentences, or paragraphs with --split-sentences. */
static int translate_lines(translate_job *job, const char *const *lines, int count)
{
    if (job->documents)
        return translate_documents(job, lines, NULL, count);
    return translate_chunk(job, lines, count);
}

/* --format html without TEXT: the whole input is one page. */
static int translate_page(translate_job *job, FILE *in, const char *in_name)
{
    size_t length = 0, capacity = 65536;
    char *page = malloc(capacity);
    size_t n;
    while (page && (n = fread(page + length, 1, capacity - length, in)) > 0) {
        length += n;
        if (length == capacity && capacity < CLI_PAGE_MAX_BYTES + 1) {
            size_t most = CLI_PAGE_MAX_BYTES + 1;
            capacity = capacity * 2 > most ? most : capacity * 2;
            char *grown = realloc(page, capacity);
            if (!grown)
                free(page);
            page = grown;
        } else if (length == capacity) {
            free(page);
            return cli_error("%s: the page is over %zu MiB", in_name, CLI_PAGE_MAX_BYTES >> 20);
        }
    }
    int status = !page        ? cli_error("out of memory")
                 : ferror(in) ? cli_error("cannot read %s: %s", in_name, strerror(errno))
                              : translate_documents(job, (const char *const *)&page, &length, 1);
    free(page);
    return status;
}

/* After a chunk, the buffers a long line grew are freed: the 1024 line
 * buffers kept for the next chunk stay small. */
static void free_grown_buffers(char **lines, size_t *capacity, int count)
{
    for (int i = 0; i < count; i++)
        if (capacity[i] > KEPT_LINE_BYTES) {
            free(lines[i]);
            lines[i] = NULL;
            capacity[i] = 0;
        }
}

static int translate_stream(translate_job *job, FILE *in, const char *in_name)
{
    char *lines[CHUNK_LINES] = {0};
    size_t capacity[CHUNK_LINES] = {0};
    int count = 0, status = 0, got;
    size_t length, bytes = 0;
    while (status == 0 && !interrupted &&
           (got = cli_read_bounded_line(in, job->input, job->first_line + count, &lines[count],
                                        &capacity[count], &length)) != CLI_LINE_END) {
        if (got == CLI_LINE_ERROR) {
            status = 1;
        } else {
            bytes += length + 1;
            if (++count == CHUNK_LINES || bytes >= CHUNK_BYTES) {
                status = translate_lines(job, (const char *const *)lines, count);
                free_grown_buffers(lines, capacity, count);
                count = 0;
                bytes = 0;
            }
        }
    }
    if (status == 0 && !interrupted && ferror(in))
        status = cli_error("cannot read %s: %s", in_name, strerror(errno));
    if (status == 0 && !interrupted && count > 0)
        status = translate_lines(job, (const char *const *)lines, count);
    for (int i = 0; i < CHUNK_LINES; i++)
        free(lines[i]);
    return status;
}

/* Lines in a regular file, for the progress line's total; 0 when it cannot
 * tell (a pipe or a terminal can be read only once). */
static long count_lines(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buffer[65536];
    long lines = 0;
    size_t n;
    int last = '\n';
    while ((n = fread(buffer, 1, sizeof buffer, f)) > 0) {
        for (size_t i = 0; i < n; i++)
            lines += buffer[i] == '\n';
        last = buffer[n - 1];
    }
    fclose(f);
    return lines + (last != '\n');
}

/* Parses a float option's value into [min, max] (min itself allowed only
 * when min_ok). */
static bool take_float(cli_args *a, const char *option, double min, bool min_ok, double max,
                       float *out)
{
    if (!cli_take_value(a, option))
        return false;
    char *end;
    errno = 0;
    double v = strtod(a->value, &end);
    bool in_range = min_ok ? v >= min : v > min;
    bool number = !errno && end != a->value && *end == '\0' && isfinite(v);
    if (number && in_range && v <= max && (v > FLT_MAX || (v != 0 && v < FLT_MIN))) {
        /* a double, but a float would make it infinity or 0 */
        if (v > FLT_MAX)
            cli_error("%s: '%s' is too large for a float (at most %g)", option, a->value,
                      FLT_MAX);
        else
            cli_error("%s: '%s' is too small for a float (at least %g)", option,
                      a->value, FLT_MIN);
        a->failed = true;
        return false;
    }
    if (!number || !in_range || v > max) {
        if (isinf(max))
            cli_error("%s: '%s' is not a number %s %g", option, a->value, min_ok ? ">=" : ">",
                      min);
        else
            cli_error("%s: '%s' is not a number %s %g and <= %g", option, a->value,
                      min_ok ? ">=" : ">", min, max);
        a->failed = true;
        return false;
    }
    *out = (float)v;
    return true;
}

static bool take_seed(cli_args *a, const char *option, uint64_t *out)
{
    if (!cli_take_value(a, option))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(a->value, &end, 10);
    if (errno || end == a->value || *end != '\0' || a->value[0] == '-' ||
        a->value[0] == '+' || a->value[0] == ' ') {
        cli_error("%s: '%s' is not a whole number from 0 to 18446744073709551615", option,
                  a->value);
        a->failed = true;
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

/* The TEXT operands, the page or the stream, SIGINT stopping the
 * translation between decoding steps (INTERRUPTED_STATUS, said here). The
 * flag stays allocated for the program's life: a signal may reach another
 * thread while this one goes on. */
static int translate_input(translate_job *job, const cli_args *a, FILE *in, const char *input)
{
    ted_error err = {0};
    if (!interrupt_flag && ted_cancel_new(&interrupt_flag, &err))
        return cli_error("translate: %s", err.message);
    bool caught = catch_interrupt();
    int status;
    if (a->operand_count > 0)
        status = translate_lines(job, a->operands, a->operand_count);
    else if (job->document.format == DOCUMENT_HTML)
        status = translate_page(job, in, input ? input : "the standard input");
    else
        status = translate_stream(job, in, input ? input : "the standard input");
    if (caught)
        sigaction(SIGINT, &interrupt_previous, NULL);
    if (!interrupted)
        return status;
    progress_clear(&job->progress);
    cli_error("translate: interrupted (SIGINT): the translation stopped between decoding "
              "steps");
    return INTERRUPTED_STATUS;
}

static int run(translate_job *job, const cli_args *a, const char *input, const char *output)
{
    if (input && a->operand_count > 0)
        return cli_error("translate: give TEXT arguments or -i FILE, not both");
    FILE *in = stdin;
    if (input && !(in = fopen(input, "r")))
        return cli_error("cannot open %s: %s", input, strerror(errno));
    cli_output out;
    int status = cli_output_open(&out, output, NULL);
    if (status == 0) {
        job->out = out.file;
        job->out_name = out.name;
        progress *p = &job->progress;
        p->on = isatty(STDERR_FILENO);
        if (p->on) {
            /* the total counts lines; with documents the progress counts sentences */
            p->total = job->documents          ? 0
                       : a->operand_count > 0 ? a->operand_count
                       : input                ? count_lines(input)
                                              : 0;
            p->start = p->last = ted_seconds();
            job->options.progress = on_progress;
            job->options.progress_data = p;
        }
        job->input = input;
        status = translate_input(job, a, in, input);
        if (p->on && status == 0 && p->done > 0)
            progress_show(p, true);
        status = cli_output_close(&out, status);
    }
    if (in != stdin)
        fclose(in);
    return status;
}

/* A flag: true, unless it was given a value (--sample=1), which is an error. */
static bool take_flag(cli_args *a, const char *option)
{
    if (!a->value)
        return true;
    a->failed = true;
    cli_error("%s takes no value", option);
    return false;
}

/* A word of `which` (--length-normalization, --early-stopping): its
 * setting in *out, as the option table spells its words. */
static bool take_word(cli_args *a, const char *option, ted_option which, int *out)
{
    if (!cli_take_value(a, option))
        return false;
    if (frontend_option_word(which, a->value, out))
        return true;
    char words[128];
    ted_option_words_text(which, "", words, sizeof words);
    cli_error("%s: '%s' is not %s", option, a->value, words);
    a->failed = true;
    return false;
}

/* A whole number within the option table's bounds of `which`. */
static bool take_whole(cli_args *a, const char *option, ted_option which, int *out)
{
    double min = 0, max = 0;
    bool included;
    ted_option_bounds(which, &min, &max, &included);
    return cli_take_int(a, option, (int)min, (int)max, out);
}

/* A number within the option table's bounds of `which`. */
static bool take_number(cli_args *a, const char *option, ted_option which, float *out)
{
    double min = 0, max = 0;
    bool included = true;
    ted_option_bounds(which, &min, &max, &included);
    return take_float(a, option, min, included, max, out);
}

/* Everything the command line says, until the model is loaded. */
typedef struct translate_args {
    translate_job job;
    frontend_choice d;
    const char *input, *output;
    const char *shortlist;
    frontend_batching batching;
} translate_args;

static bool decoding_option(cli_args *a, const char *option, frontend_choice *d)
{
    if (!strcmp(option, "--beam"))
        d->beam_given = take_whole(a, option, TED_OPTION_BEAM_SIZE, &d->beam);
    else if (!strcmp(option, "--length-penalty"))
        d->length_penalty_given =
            take_number(a, option, TED_OPTION_LENGTH_PENALTY, &d->length_penalty);
    else if (!strcmp(option, "--length-normalization"))
        d->normalization_given = take_word(a, option, TED_OPTION_LENGTH_NORMALIZATION,
                                           (int *)&d->normalization);
    else if (!strcmp(option, "--early-stopping"))
        d->early_stopping_given =
            take_word(a, option, TED_OPTION_EARLY_STOPPING, (int *)&d->early_stopping);
    else if (!strcmp(option, "--sample"))
        d->sample = take_flag(a, option);
    else if (!strcmp(option, "--temperature"))
        d->temperature_given = take_number(a, option, TED_OPTION_TEMPERATURE, &d->temperature);
    else if (!strcmp(option, "--top-k"))
        d->top_k_given = take_whole(a, option, TED_OPTION_TOP_K, &d->top_k);
    else if (!strcmp(option, "--top-p"))
        d->top_p_given = take_number(a, option, TED_OPTION_TOP_P, &d->top_p);
    else if (!strcmp(option, "--seed"))
        d->seed_given = take_seed(a, option, &d->seed);
    else if (!strcmp(option, "--n-best"))
        d->n_best_given = take_whole(a, option, TED_OPTION_N_BEST, &d->n_best);
    else if (!strcmp(option, "--max-length"))
        d->max_length_given = take_whole(a, option, TED_OPTION_MAX_LENGTH, &d->max_length);
    else
        return false;
    return true;
}

static bool translate_option(cli_args *a, const char *option, void *options)
{
    translate_args *t = options;
    if (cli_value_option(a, option, "--input", "-i", &t->input) ||
        cli_value_option(a, option, "--output", "-o", &t->output)) {
        return true;
    } else if (!strcmp(option, "--batch-size")) {
        cli_take_int(a, option, 1, FRONTEND_BATCH_SIZE_MAX, &t->batching.batch_size);
    } else if (!strcmp(option, "--max-batch-tokens")) {
        cli_take_int(a, option, 1, FRONTEND_BATCH_TOKENS_MAX, &t->batching.max_batch_tokens);
    } else if (!strcmp(option, "--workers")) {
        cli_take_int(a, option, 1, FRONTEND_WORKERS_MAX, &t->batching.workers);
    } else if (!strcmp(option, "--threads")) {
        cli_take_int(a, option, 1, 256, &t->batching.threads);
    } else if (!strcmp(option, "--scores")) {
        t->job.scores = take_flag(a, option);
    } else if (!strcmp(option, "--split-sentences")) {
        t->job.document.split_sentences = take_flag(a, option);
    } else if (!strcmp(option, "--format")) {
        if (cli_take_value(a, option) && !document_format_from_name(a->value, &t->job.document.format)) {
            cli_error("%s: '%s' is neither text nor html", option, a->value);
            a->failed = true;
        }
    } else if (cli_language_option(a, option, &t->d.languages) ||
               cli_shortlist_option(a, option, &t->shortlist)) {
        return true;
    } else {
        return decoding_option(a, option, &t->d);
    }
    return true;
}

static int translate_command(ted_model *model, const cli_args *a, void *options)
{
    static const frontend_option_names names = {
        [TED_OPTION_BEAM_SIZE] = "--beam",
        [TED_OPTION_SAMPLE] = "--sample",
        [TED_OPTION_N_BEST] = "--n-best",
        [TED_OPTION_LENGTH_PENALTY] = "--length-penalty",
        [TED_OPTION_LENGTH_NORMALIZATION] = "--length-normalization",
        [TED_OPTION_EARLY_STOPPING] = "--early-stopping",
        [TED_OPTION_TEMPERATURE] = "--temperature",
        [TED_OPTION_TOP_K] = "--top-k",
        [TED_OPTION_TOP_P] = "--top-p",
        [TED_OPTION_SEED] = "--seed",
        [TED_OPTION_MAX_LENGTH] = "--max-length",
    };
    translate_args *t = options;
    translate_job *job = &t->job;
    job->model = model;
    ted_error err = {0};
    if (cli_use_shortlist(model, t->shortlist, "translate"))
        return 1;
    if (frontend_choose_options(model, &t->d, names, &job->options, &err))
        return cli_error("translate: %s", err.message);
    job->moses = job->scores || job->options.decode.n_best > 1;
    job->options.decode.tokens_only = !job->moses;  /* no scores printed: none computed */
    if (job->document.format == DOCUMENT_HTML)
        job->document.split_sentences = true;  /* a page's blocks are cut into sentences */
    job->documents = job->document.split_sentences;
    job->document.language = frontend_source_language(model, &job->options.languages);
    if (job->documents && job->moses)
        return cli_error("translate: %s applies to single sentences, not with %s",
                         job->scores ? "--scores" : "--n-best",
                         job->document.format == DOCUMENT_HTML ? "--format html"
                                                               : "--split-sentences");
    cli_set_threads(frontend_apply_batching(model, &t->batching, ted_usable_cpus(),
                                            &job->options));
    return run(job, a, t->input, t->output);
}

int cli_translate(int argc, char **argv)
{
    static const cli_command command = {"translate", usage, translate_option, NULL,
                                        translate_command, false};
    translate_args t = {.job = {.first_line = 1}};
    return cli_run(&command, &t, argc, argv);
}
