/* ted tokenize: what the tokenizer makes of text (the ids the encoder or the
 * decoder is fed, or their tokens), and the text target ids become. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted tokenize -m DIR [--target] [--pieces] [TEXT...]\n"
    "       ted tokenize -m DIR --decode [IDS...]\n"
    "\n"
    "Prints one line for each TEXT, or each line of standard input: the source ids\n"
    "the encoder is fed (BOS and EOS as config.yaml's tokenizer section says), or\n"
    "with --target the target ids the decoder is fed after BOS (no EOS), separated\n"
    "by spaces. With --decode, each TEXT or line is target ids separated by spaces,\n"
    "and the line printed is the text they become, as ted translate prints it.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR   the model directory\n"
    "  --target          the target side: its tokenizer and vocabulary\n"
    "  --pieces          print the tokens (vocabulary entries) instead of the ids\n"
    "  --decode          target ids -> text\n"
    "  -h, --help        show this help\n";

typedef struct tokenize_job {
    const ted_model *model;
    bool target;  /* --target */
    bool pieces;  /* --pieces */
    bool decode;  /* --decode */
} tokenize_job;

static void print_ids(const tokenize_job *job, const int *ids, int count)
{
    for (int i = 0; i < count; i++) {
        if (i > 0)
            putchar(' ');
        if (!job->pieces)
            printf("%d", ids[i]);
        else if (!job->target)
            fputs(ted_source_token(job->model, ids[i]), stdout);
        else
            fputs(ted_target_token(job->model, ids[i]), stdout);
    }
    putchar('\n');
}

/* The ids written in `text`, separated by spaces or tabs; malloc'ed. */
static int parse_ids(const char *text, long line, int **ids, int *count)
{
    size_t room = strlen(text) / 2 + 1;  /* an id and a separator: 2 bytes at least */
    *count = 0;
    if (!(*ids = malloc(sizeof **ids * room)))
        return cli_error("out of memory");
    for (const char *p = text + strspn(text, " \t"); *p; p += strspn(p, " \t")) {
        char *end;
        errno = 0;
        long id = strtol(p, &end, 10);
        size_t n = strcspn(p, " \t");
        if (end != p + n || *p == '-' || *p == '+' || errno || id > INT_MAX) {
            free(*ids);
            *ids = NULL;
            return cli_error("line %ld: \"%.*s\" is not a token id", line, (int)n, p);
        }
        (*ids)[(*count)++] = (int)id;
        p = end;
    }
    return 0;
}

static int decode_line(const tokenize_job *job, const char *text, long line)
{
    int *ids, count;
    if (parse_ids(text, line, &ids, &count))
        return 1;
    char *out = ted_decode_target(job->model, ids, count);
    free(ids);
    if (!out)
        return cli_error("line %ld: out of memory", line);
    puts(out);
    free(out);
    return 0;
}

static int tokenize_line(const tokenize_job *job, const char *text, long line)
{
    if (job->decode)
        return decode_line(job, text, line);
    int *ids = NULL, count = 0;
    ted_error err = {0};
    ted_status s = job->target ? ted_encode_target(job->model, text, &ids, &count, NULL, &err)
                               : ted_encode_source(job->model, text, &ids, &count, NULL, &err);
    if (s)
        return cli_error("line %ld: %s", line, err.message);
    print_ids(job, ids, count);
    free(ids);
    return 0;
}

static int tokenize_input(const tokenize_job *job, const cli_args *a)
{
    for (int i = 0; i < a->operand_count; i++)
        if (tokenize_line(job, a->operands[i], i + 1))
            return 1;
    if (a->operand_count > 0)
        return 0;
    char *line = NULL;
    size_t capacity = 0, length = 0;
    int status = 0, got;
    for (long number = 1;
         !status && (got = cli_read_bounded_line(stdin, NULL, number, &line, &capacity,
                                                 &length)) != CLI_LINE_END;
         number++)
        status = got == CLI_LINE_ERROR ? 1 : tokenize_line(job, line, number);
    free(line);
    return status;
}

static bool tokenize_option(cli_args *a, const char *option, void *options)
{
    (void)a;
    tokenize_job *job = options;
    bool *flag = !strcmp(option, "--target")   ? &job->target
                 : !strcmp(option, "--pieces") ? &job->pieces
                 : !strcmp(option, "--decode") ? &job->decode
                                               : NULL;
    if (flag)
        *flag = true;
    return flag != NULL;
}

static int tokenize_check(const cli_args *a, void *options)
{
    const tokenize_job *job = options;
    if (job->decode && (job->target || job->pieces))
        return cli_error("tokenize: --decode goes with neither --target nor --pieces");
    return !cli_require_model(a);
}

static int tokenize_run(ted_model *model, const cli_args *a, void *options)
{
    tokenize_job *job = options;
    job->model = model;
    return tokenize_input(job, a);
}

int cli_tokenize(int argc, char **argv)
{
    static const cli_command command = {
        .name = "tokenize", .usage = usage, .option = tokenize_option,
        .check = tokenize_check, .run = tokenize_run};
    tokenize_job job = {0};
    return cli_run(&command, &job, argc, argv);
}
