/* ted translate: one output line per input line, in order. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted translate -m DIR [OPTIONS] [TEXT...]\n"
    "\n"
    "Translates each TEXT, or each line of standard input when none is given,\n"
    "printing one line per input line, in order. An empty line gives an empty line.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR      the model directory (config.yaml, weights, vocabularies)\n"
    "  --max-length N       generate at most N tokens per sentence (default: the\n"
    "                       model's decoding rule in config.yaml)\n"
    "  --batch-size N       sentences decoded together (default 32)\n"
    "  --threads N          threads for the matrix products (default 1)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Words missing from the source vocabulary are translated as unknown (<unk>)\n"
    "and reported on standard error.\n";

/* Lines are translated in chunks, so output starts before input ends and
 * memory stays bounded on long files. */
enum { CHUNK_LINES = 1024 };

typedef struct translate_job {
    ted_model *model;
    ted_translate_options options;
    long first_line;  /* number of the chunk's first line, for messages */
} translate_job;

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
            return cli_error("line %ld: %s", job->first_line + i, err.message);
        if (n > max_positions)
            return cli_error("line %ld: %d tokens, more than the model's max_positions (%d)",
                             job->first_line + i, n, max_positions);
    }
    return 0;
}

/* "ted: line 3: 2 words not in the vocabulary, translated as <unk>: 'zebra' 'xylophone'".
 * The words are listed for the whitespace tokenizer, where the n-th word
 * of the line is the n-th source token. */
static void report_unknown(const translate_job *job, const char *line, long number,
                           int unknown)
{
    fprintf(stderr, "ted: line %ld: %d word%s not in the vocabulary, translated as <unk>",
            number, unknown, unknown > 1 ? "s" : "");
    const ted_config *c = ted_model_config(job->model);
    int *ids = NULL, count = 0;
    if (c->tokenizer == TED_TOKENIZER_WHITESPACE &&
        ted_encode_source(job->model, line, &ids, &count, NULL, NULL) == TED_OK) {
        const char *separators = " \t\r\n\v\f";
        int token = c->source_bos_eos ? 1 : 0;
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

static int translate_chunk(translate_job *job, const char *const *lines, int count)
{
    if (check_lines(job, lines, count))
        return 1;
    char **outputs = calloc(count, sizeof *outputs);
    int *unknown = calloc(count, sizeof *unknown);
    if (!outputs || !unknown) {
        free(outputs);
        free(unknown);
        return cli_error("out of memory");
    }
    ted_error err = {0};
    ted_status s = ted_translate(job->model, lines, count, &job->options, outputs, unknown, &err);
    if (s != TED_OK) {
        free(outputs);
        free(unknown);
        return cli_error("%s", err.message);
    }
    for (int i = 0; i < count; i++) {
        if (unknown[i] > 0)
            report_unknown(job, lines[i], job->first_line + i, unknown[i]);
        puts(outputs[i]);
        free(outputs[i]);
    }
    fflush(stdout);
    free(outputs);
    free(unknown);
    job->first_line += count;
    return 0;
}

static int translate_stdin(translate_job *job)
{
    char *lines[CHUNK_LINES] = {0};
    size_t capacity[CHUNK_LINES] = {0};
    int count = 0, status = 0;
    size_t length;
    while (status == 0 && cli_read_line(stdin, &lines[count], &capacity[count], &length)) {
        if (strlen(lines[count]) != length)
            status = cli_error("line %ld: contains a NUL byte", job->first_line + count);
        else if (++count == CHUNK_LINES) {
            status = translate_chunk(job, (const char *const *)lines, count);
            count = 0;
        }
    }
    if (status == 0 && count > 0)
        status = translate_chunk(job, (const char *const *)lines, count);
    for (int i = 0; i < CHUNK_LINES; i++)
        free(lines[i]);
    return status;
}

int cli_translate(int argc, char **argv)
{
    cli_args a;
    if (!cli_args_init(&a, argc, argv))
        return 1;
    const char *model_dir = NULL, *option;
    translate_job job = {.options = ted_translate_default_options(), .first_line = 1};
    int threads = 1;
    while (!a.failed && (option = cli_next_option(&a))) {
        if (!strcmp(option, "-h") || !strcmp(option, "--help")) {
            fputs(usage, stdout);
            cli_args_free(&a);
            return 0;
        } else if (!strcmp(option, "-m") || !strcmp(option, "--model")) {
            if (cli_take_value(&a, option))
                model_dir = a.value;
        } else if (!strcmp(option, "--max-length")) {
            cli_take_int(&a, option, 1, 1 << 20, &job.options.max_length);
        } else if (!strcmp(option, "--batch-size")) {
            cli_take_int(&a, option, 1, 4096, &job.options.batch_size);
        } else if (!strcmp(option, "--threads")) {
            cli_take_int(&a, option, 1, 256, &threads);
        } else {
            a.failed = true;
            cli_error("translate: unknown option '%s' (see ted translate --help)", option);
        }
    }
    int status = a.failed ? 1 : 0;
    if (!status && !model_dir)
        status = cli_error("translate: no model; give one with -m DIR");
    if (!status && !(job.model = cli_load_model(model_dir)))
        status = 1;
    if (!status) {
        ted_set_threads(threads);
        if (a.operand_count > 0)
            status = translate_chunk(&job, a.operands, a.operand_count);
        else
            status = translate_stdin(&job);
    }
    ted_model_free(job.model);
    cli_args_free(&a);
    return status;
}
