/* ted translate: one output line per input line (or n_best lines), in order. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted translate -m DIR [OPTIONS] [TEXT...]\n"
    "\n"
    "Translates each TEXT, or each line of the input (-i FILE, or standard input),\n"
    "printing one line per input line, in order. An empty line gives an empty line.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR      the model directory (config.yaml, weights, vocabularies)\n"
    "  -i, --input FILE     read the sentences from FILE, one a line\n"
    "  -o, --output FILE    write the translations to FILE (replaced only once all\n"
    "                       are written) instead of standard output\n"
    "  --max-length N       generate at most N tokens per sentence (default: the\n"
    "                       model's decoding rule in config.yaml)\n"
    "  --batch-size N       sentences decoded together (default 32)\n"
    "  --threads N          threads for the matrix products (default 1)\n"
    "  -h, --help           show this help\n"
    "\n"
    "decoding (default: the model's config.yaml decoding: section, else greedy):\n"
    "  --beam N             beam search keeping N hypotheses per sentence\n"
    "  --length-penalty A   beam search ranks finished hypotheses by\n"
    "                       log-prob / ((5 + length) / 6)^A (default 0.6; 0: none)\n"
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
    "With --n-best or --scores, each hypothesis is a line of fields separated by\n"
    "' ||| ' (Moses n-best style):\n"
    "  INDEX ||| TRANSLATION ||| SCORE ||| LOG-PROB [||| TOKEN-LOG-PROBS]\n"
    "INDEX is the input line number from 0, SCORE what ranks the hypotheses (beam\n"
    "search: LOG-PROB / ((5 + length) / 6)^A; otherwise LOG-PROB), LOG-PROB the\n"
    "natural log of the model's probability of the tokens (EOS included), and\n"
    "with --scores TOKEN-LOG-PROBS that of each token, EOS last when produced.\n"
    "\n"
    "A progress line (sentences done, sentences/s, time left) goes to standard\n"
    "error when it is a terminal. Words missing from the source vocabulary are\n"
    "translated as unknown (<unk>) and reported on standard error.\n";

/* Lines are translated in chunks, so output starts before input ends and
 * memory stays bounded on long files. */
enum { CHUNK_LINES = 1024 };

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
} translate_job;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void progress_show(progress *p, bool final)
{
    double t = now();
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

/* Tokenizes each line once up front so that an error names its line. */
static int check_lines(translate_job *job, const char *const *lines, int count)
{
    int max_positions = ted_model_config(job->model)->max_positions;
    for (int i = 0; i < count; i++) {
        int *ids = NULL, n = 0;
        ted_error err = {0};
        ted_status s = ted_encode_source(job->model, lines[i], &ids, &n, NULL, &err);
        free(ids);
        if (s != TED_OK)
            return cli_error("%s%sline %ld: %s", job->input ? job->input : "",
                             job->input ? ": " : "", job->first_line + i, err.message);
        if (n > max_positions)
            return cli_error("%s%sline %ld: %d tokens, more than the model's max_positions (%d)",
                             job->input ? job->input : "", job->input ? ": " : "",
                             job->first_line + i, n, max_positions);
    }
    return 0;
}

/* "ted: line 3: 2 words not in the vocabulary, translated as <unk>: 'zebra' 'xylophone'".
 * The words are listed for the whitespace tokenizer, where the n-th word
 * of the line is the n-th source token. */
static void report_unknown(translate_job *job, const char *line, long number, int unknown)
{
    progress_clear(&job->progress);
    fprintf(stderr, "ted: %s%sline %ld: %d word%s not in the vocabulary, translated as <unk>",
            job->input ? job->input : "", job->input ? ": " : "", number, unknown,
            unknown > 1 ? "s" : "");
    const ted_config *c = ted_model_config(job->model);
    int *ids = NULL, count = 0;
    if (c->tokenizer == TED_TOKENIZER_WHITESPACE &&
        ted_encode_source(job->model, line, &ids, &count, NULL, NULL) == TED_OK) {
        const char *separators = " \t\r\n\v\f";
        int token = c->source_bos ? 1 : 0;
        const char *p = line + strspn(line, separators);
        for (int listed = 0; *p && listed < 8; token++) {
            size_t n = strcspn(p, separators);
            if (token < count && ids[token] == c->unk_id) {
                fprintf(stderr, "%s'%.*s'", listed ? " " : ": ", (int)n, p);
                listed++;
            }
            p += n;
            p += strspn(p, separators);
        }
    }
    free(ids);
    fputc('\n', stderr);
}

/* One hypothesis as an n-best line (see the usage). */
static void print_moses(const translate_job *job, long index, const ted_translation *t)
{
    const ted_hypothesis *h = &t->hypothesis;
    fprintf(job->out, "%ld ||| %s ||| %.6f ||| %.6f", index, t->text, h->score, h->log_prob);
    if (job->scores) {
        fputs(" |||", job->out);
        for (int k = 0; k < h->length; k++)
            fprintf(job->out, " %.6f", (double)h->log_probs[k]);
    }
    fputc('\n', job->out);
}

static int translate_chunk(translate_job *job, const char *const *lines, int count)
{
    if (check_lines(job, lines, count))
        return 1;
    int n_best = job->options.n_best;
    ted_translation *outputs = calloc((size_t)count * n_best, sizeof *outputs);
    int *unknown = calloc(count, sizeof *unknown);
    if (!outputs || !unknown) {
        free(outputs);
        free(unknown);
        return cli_error("out of memory");
    }
    ted_error err = {0};
    job->options.first_index = (uint64_t)(job->first_line - 1);
    job->progress.done_before = job->first_line - 1;
    ted_status s = ted_translate_n_best(job->model, lines, count, &job->options, outputs,
                                        unknown, &err);
    if (s != TED_OK) {
        free(outputs);
        free(unknown);
        progress_clear(&job->progress);
        return cli_error("%s", err.message);
    }
    progress_clear(&job->progress);  /* standard output may be the same terminal */
    for (int i = 0; i < count; i++) {
        if (unknown[i] > 0)
            report_unknown(job, lines[i], job->first_line + i, unknown[i]);
        for (int k = 0; k < (job->moses ? n_best : 1); k++) {
            const ted_translation *t = &outputs[(size_t)i * n_best + k];
            if (job->moses)
                print_moses(job, job->first_line - 1 + i, t);
            else
                fprintf(job->out, "%s\n", t->text);
        }
    }
    fflush(job->out);
    ted_translations_free(outputs, count * n_best);
    free(outputs);
    free(unknown);
    job->first_line += count;
    if (ferror(job->out)) {
        progress_clear(&job->progress);
        return cli_error("cannot write %s: %s", job->out_name, strerror(errno));
    }
    return 0;
}

static int translate_stream(translate_job *job, FILE *in, const char *in_name)
{
    char *lines[CHUNK_LINES] = {0};
    size_t capacity[CHUNK_LINES] = {0};
    int count = 0, status = 0;
    size_t length;
    while (status == 0 && cli_read_line(in, &lines[count], &capacity[count], &length)) {
        if (strlen(lines[count]) != length)
            status = cli_error("%s%sline %ld: contains a NUL byte", job->input ? job->input : "",
                               job->input ? ": " : "", job->first_line + count);
        else if (++count == CHUNK_LINES) {
            status = translate_chunk(job, (const char *const *)lines, count);
            count = 0;
        }
    }
    if (status == 0 && ferror(in))
        status = cli_error("cannot read %s: %s", in_name, strerror(errno));
    if (status == 0 && count > 0)
        status = translate_chunk(job, (const char *const *)lines, count);
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

/* -o FILE: the translations go to a temporary file next to FILE, renamed
 * over it once all are written, so FILE is never left half written. */
typedef struct output_file {
    char *temp;  /* NULL when writing to standard output */
    FILE *file;
} output_file;

static int open_output(output_file *o, const char *path)
{
    *o = (output_file){NULL, stdout};
    if (!path)
        return 0;
    size_t n = strlen(path);
    o->temp = malloc(n + 8);
    if (!o->temp)
        return cli_error("out of memory");
    memcpy(o->temp, path, n);
    memcpy(o->temp + n, ".XXXXXX", 8);
    int fd = mkstemp(o->temp);
    if (fd < 0) {
        int e = errno;
        free(o->temp);
        o->temp = NULL;
        return cli_error("cannot write %s: %s", path, strerror(e));
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    if (!(o->file = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(o->temp);
        free(o->temp);
        o->temp = NULL;
        return cli_error("cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

/* Renames the temporary file over `path` when status is 0, else removes it. */
static int close_output(output_file *o, const char *path, int status)
{
    if (!o->temp) {
        if (status == 0 && fflush(stdout) != 0)
            return cli_error("cannot write the standard output: %s", strerror(errno));
        return status;
    }
    bool failed = ferror(o->file) != 0;
    int e = errno;
    if (fclose(o->file) != 0 && !failed) {
        failed = true;
        e = errno;
    }
    if (status == 0 && failed)
        status = cli_error("cannot write %s: %s", path, strerror(e));
    if (status == 0 && rename(o->temp, path) != 0)
        status = cli_error("cannot write %s: %s", path, strerror(errno));
    if (status != 0)
        unlink(o->temp);
    free(o->temp);
    o->temp = NULL;
    return status;
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
    if (errno || end == a->value || *end != '\0' || !isfinite(v) || !in_range || v > max) {
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

/* A seed nobody chose: from /dev/urandom, else the clock and the process. */
static uint64_t random_seed(void)
{
    uint64_t seed = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&seed, sizeof seed, 1, f) != 1) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        seed = ((uint64_t)t.tv_sec * 1000000007u) ^ (uint64_t)t.tv_nsec ^
               ((uint64_t)getpid() << 32);
    }
    if (f)
        fclose(f);
    return seed;
}

/* What the command line says about decoding, applied over the model's
 * defaults once the model is loaded. */
typedef struct decoding_args {
    int beam;              /* 0: not given */
    bool sample;
    bool length_penalty_given, temperature_given, top_k_given, top_p_given, seed_given;
    float length_penalty, temperature, top_p;
    int top_k;
    uint64_t seed;
    int n_best;            /* 0: not given */
} decoding_args;

static int apply_decoding(const decoding_args *d, const ted_model *model,
                          ted_translate_options *o)
{
    if (d->beam > 0) {
        o->strategy = TED_DECODE_BEAM;
        o->beam.beam_size = d->beam;
    } else if (d->sample) {
        o->strategy = TED_DECODE_SAMPLE;
    }
    const char *sampling_option = d->temperature_given ? "--temperature"
                                  : d->top_k_given     ? "--top-k"
                                  : d->top_p_given     ? "--top-p"
                                  : d->seed_given      ? "--seed"
                                                       : NULL;
    if (sampling_option && o->strategy != TED_DECODE_SAMPLE)
        return cli_error("translate: %s applies to sampling; add --sample", sampling_option);
    if (d->length_penalty_given && o->strategy != TED_DECODE_BEAM)
        return cli_error("translate: --length-penalty applies to beam search; add --beam N");
    if (d->length_penalty_given)
        o->beam.length_penalty = d->length_penalty;
    if (d->temperature_given)
        o->sampling.temperature = d->temperature;
    if (d->top_k_given)
        o->sampling.top_k = d->top_k;
    if (d->top_p_given)
        o->sampling.top_p = d->top_p;
    o->sampling.seed = d->seed_given ? d->seed : random_seed();
    int vocab = ted_model_config(model)->tgt_vocab_size;
    if (o->strategy == TED_DECODE_BEAM && o->beam.beam_size >= vocab)
        return cli_error("translate: --beam %d: the beam must be smaller than the target "
                         "vocabulary (%d tokens)",
                         o->beam.beam_size, vocab);
    o->n_best = d->n_best > 0 ? d->n_best : 1;
    if (o->n_best > 1 && o->strategy == TED_DECODE_GREEDY)
        return cli_error("translate: --n-best %d needs beam search (--beam %d or more) or "
                         "--sample",
                         o->n_best, o->n_best);
    if (o->strategy == TED_DECODE_BEAM && o->n_best > o->beam.beam_size)
        return cli_error("translate: --n-best %d is more than the beam size %d", o->n_best,
                         o->beam.beam_size);
    return 0;
}

static int run(translate_job *job, const cli_args *a, const char *input, const char *output)
{
    if (input && a->operand_count > 0)
        return cli_error("translate: give TEXT arguments or -i FILE, not both");
    FILE *in = stdin;
    if (input && !(in = fopen(input, "r")))
        return cli_error("cannot open %s: %s", input, strerror(errno));
    output_file out;
    int status = open_output(&out, output);
    if (status == 0) {
        job->out = out.file;
        job->out_name = output ? output : "the standard output";
        progress *p = &job->progress;
        p->on = isatty(STDERR_FILENO);
        if (p->on) {
            p->total = a->operand_count > 0 ? a->operand_count : input ? count_lines(input) : 0;
            p->start = p->last = now();
            job->options.progress = on_progress;
            job->options.progress_data = p;
        }
        job->input = input;
        if (a->operand_count > 0)
            status = translate_chunk(job, a->operands, a->operand_count);
        else
            status = translate_stream(job, in, input ? input : "the standard input");
        if (p->on && status == 0 && p->done > 0)
            progress_show(p, true);
        status = close_output(&out, output, status);
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

int cli_translate(int argc, char **argv)
{
    cli_args a;
    if (!cli_args_init(&a, "translate", usage, argc, argv))
        return 1;
    const char *input = NULL, *output = NULL, *option;
    translate_job job = {.first_line = 1};
    decoding_args d = {0};
    int threads = 1, batch_size = 32, max_length = 0;
    while (!a.failed && !a.help && (option = cli_next_option(&a))) {
        if (cli_common_option(&a, option))
            continue;
        if (!strcmp(option, "-i") || !strcmp(option, "--input")) {
            if (cli_take_value(&a, option))
                input = a.value;
        } else if (!strcmp(option, "-o") || !strcmp(option, "--output")) {
            if (cli_take_value(&a, option))
                output = a.value;
        } else if (!strcmp(option, "--max-length")) {
            cli_take_int(&a, option, 1, 1 << 20, &max_length);
        } else if (!strcmp(option, "--batch-size")) {
            cli_take_int(&a, option, 1, 4096, &batch_size);
        } else if (!strcmp(option, "--threads")) {
            cli_take_int(&a, option, 1, 256, &threads);
        } else if (!strcmp(option, "--beam")) {
            cli_take_int(&a, option, 1, 1024, &d.beam);
        } else if (!strcmp(option, "--length-penalty")) {
            d.length_penalty_given =
                take_float(&a, option, 0.0, true, INFINITY, &d.length_penalty);
        } else if (!strcmp(option, "--sample")) {
            d.sample = take_flag(&a, option);
        } else if (!strcmp(option, "--scores")) {
            job.scores = take_flag(&a, option);
        } else if (!strcmp(option, "--temperature")) {
            d.temperature_given = take_float(&a, option, 0.0, false, INFINITY, &d.temperature);
        } else if (!strcmp(option, "--top-k")) {
            d.top_k_given = cli_take_int(&a, option, 0, 16777216, &d.top_k);
        } else if (!strcmp(option, "--top-p")) {
            d.top_p_given = take_float(&a, option, 0.0, false, 1.0, &d.top_p);
        } else if (!strcmp(option, "--seed")) {
            d.seed_given = take_seed(&a, option, &d.seed);
        } else if (!strcmp(option, "--n-best")) {
            cli_take_int(&a, option, 1, 1024, &d.n_best);
        } else {
            cli_unknown_option(&a, option);
        }
    }
    if (a.help) {
        cli_args_free(&a);
        return 0;
    }
    int status = a.failed ? 1 : 0;
    if (!status && d.beam > 0 && d.sample)
        status = cli_error("translate: --beam and --sample exclude each other");
    if (!status && !cli_require_model(&a))
        status = 1;
    if (!status && !(job.model = cli_load_model(a.model_dir)))
        status = 1;
    if (!status) {
        job.options = ted_translate_model_options(job.model);
        job.options.batch_size = batch_size;
        job.options.max_length = max_length;
        status = apply_decoding(&d, job.model, &job.options);
        job.moses = job.scores || job.options.n_best > 1;
    }
    if (!status) {
        ted_set_threads(threads);
        status = run(&job, &a, input, output);
    }
    ted_model_free(job.model);
    cli_args_free(&a);
    return status;
}
