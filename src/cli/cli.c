#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/text.h"
#include "frontend/options.h"
#include "ted/learn.h"

int cli_error(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("ted: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    return 1;
}

int cli_threads(int requested)
{
    int cpus = ted_usable_cpus();
    int threads = requested < 1 || requested > cpus ? cpus : requested;
    if (requested > threads)
        fprintf(stderr,
                "ted: --threads %d: this process may use %d CPU%s; running %d thread%s "
                "(more would only wait for each other)\n",
                requested, ted_usable_cpus(), ted_usable_cpus() == 1 ? "" : "s", threads,
                threads == 1 ? "" : "s");
    return threads;
}

int cli_set_threads(int requested)
{
    return ted_set_threads(cli_threads(requested));
}

bool cli_args_init(cli_args *a, const char *command, const char *usage, int argc, char **argv)
{
    *a = (cli_args){.command = command, .usage = usage, .argc = argc, .argv = argv};
    a->operands = calloc(argc > 0 ? argc : 1, sizeof *a->operands);
    if (!a->operands)
        cli_error("out of memory");
    return a->operands != NULL;
}

void cli_args_free(cli_args *a)
{
    free(a->operands);
    a->operands = NULL;
}

const char *cli_next_option(cli_args *a)
{
    static char name[64];
    while (a->next < a->argc) {
        char *arg = a->argv[a->next++];
        if (strcmp(arg, "--") == 0) {
            while (a->next < a->argc)
                a->operands[a->operand_count++] = a->argv[a->next++];
            return NULL;
        }
        if (arg[0] != '-' || arg[1] == '\0') {
            a->operands[a->operand_count++] = arg;
            continue;
        }
        const char *eq = strchr(arg, '=');
        a->value = NULL;
        if (eq && arg[1] == '-') {
            size_t n = (size_t)(eq - arg) < sizeof name - 1 ? (size_t)(eq - arg) : sizeof name - 1;
            memcpy(name, arg, n);
            name[n] = '\0';
            a->value = eq + 1;
            return name;
        }
        return arg;
    }
    return NULL;
}

bool cli_take_value(cli_args *a, const char *option)
{
    if (a->value)
        return true;
    if (a->next >= a->argc) {
        cli_error("%s needs a value", option);
        a->failed = true;
        return false;
    }
    a->value = a->argv[a->next++];
    return true;
}

bool cli_language_option(cli_args *a, const char *option, ted_languages *languages)
{
    bool source = !strcmp(option, "--source-lang");
    if (!source && strcmp(option, "--target-lang"))
        return false;
    if (cli_take_value(a, option)) {
        if (source)
            languages->source = a->value;
        else
            languages->target = a->value;
    }
    return true;
}

bool cli_value_option(cli_args *a, const char *option, const char *name, const char *alias,
                      const char **value)
{
    if (strcmp(option, name) && !(alias && !strcmp(option, alias)))
        return false;
    if (cli_take_value(a, option))
        *value = a->value;
    return true;
}

bool cli_shortlist_option(cli_args *a, const char *option, const char **path)
{
    return cli_value_option(a, option, "--shortlist", NULL, path);
}

int cli_use_shortlist(ted_model *model, const char *path, const char *command)
{
    ted_error err = {0};
    if (path && ted_model_set_shortlist(model, path, &err))
        return cli_error("%s: --shortlist: %s", command, err.message);
    return 0;
}

bool cli_common_option(cli_args *a, const char *option)
{
    if (!strcmp(option, "-h") || !strcmp(option, "--help")) {
        fputs(a->usage, stdout);
        a->help = true;
        return true;
    }
    return cli_value_option(a, option, "--model", "-m", &a->model_dir);
}

void cli_unknown_option(cli_args *a, const char *option)
{
    a->failed = true;
    cli_error("%s: unknown option '%s' (see ted %s --help)", a->command, option, a->command);
}

bool cli_require_model(const cli_args *a)
{
    if (a->model_dir)
        return true;
    cli_error("%s: no model; give one with -m DIR", a->command);
    return false;
}

bool cli_take_int(cli_args *a, const char *option, int min, int max, int *out)
{
    if (!cli_take_value(a, option))
        return false;
    if (!cli_parse_int(a->value, min, max, out)) {
        cli_error("%s: '%s' is not a whole number from %d to %d", option, a->value, min, max);
        a->failed = true;
        return false;
    }
    return true;
}

const char *const cli_option_names[TED_OPTION_COUNT] = {
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
    [TED_OPTION_REPETITION_PENALTY] = "--repetition-penalty",
    [TED_OPTION_NO_REPEAT_NGRAM_SIZE] = "--no-repeat-ngram-size",
    [TED_OPTION_MIN_LENGTH] = "--min-length",
    [TED_OPTION_MIN_NEW_TOKENS] = "--min-new-tokens",
    [TED_OPTION_BAD_WORDS_IDS] = "--bad-words-ids",
    [TED_OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE] = "--encoder-no-repeat-ngram-size",
};

bool cli_take_bad_words(cli_args *a, const char *option, frontend_choice *d)
{
    if (!cli_take_value(a, option))
        return false;
    int ids[TED_BAD_WORDS_MAX], count = 0;
    const char *at = a->value;
    for (;;) {
        char *end;
        errno = 0;
        long id = strtol(at, &end, 10);
        if (end == at || errno || id < 0 || id > INT_MAX || count == TED_BAD_WORDS_MAX ||
            (*end != ',' && *end != '\0'))
            break;
        ids[count++] = (int)id;
        if (*end == '\0') {
            if (frontend_add_bad_words(d, ids, count))
                return true;
            cli_error("%s: more than %d ids in all (each sequence's and one more)", option,
                      TED_BAD_WORDS_MAX);
            a->failed = true;
            return false;
        }
        at = end + 1;
    }
    cli_error("%s: '%s' is not token ids separated by commas (5,17)", option, a->value);
    a->failed = true;
    return false;
}

ted_model *cli_load_model(const char *dir)
{
    ted_model *model = NULL;
    ted_error err = {0};
    if (ted_model_load(dir, &model, &err) != TED_OK) {
        cli_error("%s", err.message);
        return NULL;
    }
    return model;
}

/* Standard output is buffered: a write that failed (a full disk, a closed
 * pipe) may only show when the buffer is flushed, so every command ends
 * with this check before it can report success. A command that failed has
 * said why already. */
static int check_output_written(int status)
{
    errno = 0;
    if ((fflush(stdout) == 0 && !ferror(stdout)) || status != 0)
        return status;
    int error = errno;
    cli_error("cannot write the output: %s", error ? strerror(error) : "write error");
    return 1;
}

int cli_run(const cli_command *c, void *options, int argc, char **argv)
{
    cli_args a;
    if (!cli_args_init(&a, c->name, c->usage, argc, argv))
        return 1;
    const char *option;
    while (!a.failed && !a.help && (option = cli_next_option(&a)))
        if (!c->option(&a, option, options) && !cli_common_option(&a, option))
            cli_unknown_option(&a, option);
    int status = a.failed ? 1 : 0;
    if (!a.help && !status)
        status = c->check ? c->check(&a, options) : !cli_require_model(&a);
    ted_model *model = NULL;
    if (!a.help && !status && !c->loads_its_own_model && !(model = cli_load_model(a.model_dir)))
        status = 1;
    if (!a.help && !status)
        status = c->run(model, &a, options);
    ted_model_free(model);
    cli_args_free(&a);
    return check_output_written(a.help ? 0 : status);
}

int cli_one_sentence(const cli_args *a)
{
    if (a->operand_count == 0)
        return cli_error("%s: no sentence; give one as TEXT", a->command);
    if (a->operand_count > 1)
        return cli_error("%s: give one sentence, in quotes (got %d arguments)", a->command,
                         a->operand_count);
    return 0;
}

/* ": 'w1' 'w2'": the words of `text` whose source token is unknown, at most 8. */
/* Echoed input is cut: a word of megabytes gives a line of ~60 bytes. */
static void print_word(const char *word, size_t length, const char *before)
{
    char copy[128], shown[64];
    size_t kept = length < sizeof copy - 1 ? length : sizeof copy - 1;
    memcpy(copy, word, kept);
    copy[kept] = '\0';
    fprintf(stderr, "%s'%s'", before, ted_learn_show_token(copy, shown, sizeof shown));
}

static void list_unknown_words(const ted_config_view *c, const char *text, const int *ids,
                               int count, int token)
{
    const char *separators = " \t\r\n\v\f";
    const char *p = text + strspn(text, separators);
    for (int listed = 0; *p && listed < 8; token++) {
        size_t n = strcspn(p, separators);
        if (token < count && ids[token] == c->tokens.unk_id) {
            print_word(p, n, listed ? " " : ": ");
            listed++;
        }
        p += n;
        p += strspn(p, separators);
    }
}

/* A text and its tokens, for naming its unknown words. */
typedef struct text_tokens {
    const char *text;
    const int *ids;  /* (count) */
    int count;
    int unknown;     /* ids that are unk_id */
    int first_word;  /* the token of the text's first word (1 after a BOS) */
    bool target;     /* target text (ted_encode_target), else source */
} text_tokens;

/* The words of the text (split at whitespace) that hold an unknown token,
 * each word encoded alone: a SentencePiece model's unknown pieces are not
 * the words, so the words are found again. With `print`, up to 8 are
 * printed (": 'w1' 'w2'"); returns how many there are. */
static int unknown_words(const ted_model *model, const text_tokens *t, bool print)
{
    const char *separators = " \t\r\n\v\f";
    const char *p = t->text + strspn(t->text, separators);
    int found = 0;
    while (*p) {
        size_t n = strcspn(p, separators);
        char *word = strndup(p, n);
        int *ids = NULL, count = 0, unknown = 0;
        ted_error err = {0};
        bool encoded =
            word && (t->target ? ted_encode_target(model, word, &ids, &count, &unknown, &err)
                               : ted_encode_source(model, word, &ids, &count, &unknown, &err)) ==
                        TED_OK;
        if (encoded && unknown > 0) {
            if (print && found < 8)
                print_word(p, n, found ? " " : ": ");
            found++;
        }
        free(ids);
        free(word);
        p += n;
        p += strspn(p, separators);
    }
    return found;
}

static void report_unknown(const ted_model *model, const char *file, long line,
                           const text_tokens *t, const char *shown_as)
{
    fputs("ted: ", stderr);
    if (file)
        fprintf(stderr, "%s: ", file);
    if (line > 0)
        fprintf(stderr, "line %ld: ", line);
    const ted_config_view c = ted_config_get_view(ted_model_config(model));
    bool words = c.tokens.tokenizer == TED_TOKENIZER_WHITESPACE;
    int unknown = words ? t->unknown : unknown_words(model, t, false);
    if (unknown == 0)
        unknown = t->unknown;  /* no word alone holds one: the tokens are counted */
    fprintf(stderr, "%d word%s not in the vocabulary, %s", unknown, unknown > 1 ? "s" : "",
            shown_as);
    if (words)
        list_unknown_words(&c, t->text, t->ids, t->count, t->first_word);
    else
        unknown_words(model, t, true);
    fputc('\n', stderr);
}

void cli_report_unknown(const ted_model *model, const char *file, long line, const char *text,
                        const ted_source *source, const char *shown_as)
{
    bool bos = ted_config_get_view(ted_model_config(model)).tokens.source_bos;
    text_tokens t = {text, source->ids, source->count, source->unknown, bos ? 1 : 0, false};
    report_unknown(model, file, line, &t, shown_as);
}

void cli_report_unknown_target(const ted_model *model, const char *label, const char *text,
                               const int *ids, int count, int unknown, const char *shown_as)
{
    text_tokens t = {text, ids, count, unknown, 0, true};
    report_unknown(model, label, 0, &t, shown_as);
}

/* ---- the sentence of a learning command -------------------------------------- */

int cli_sentence_prepare(cli_sentence *s, const ted_model *model, const char *command,
                         const char *text, const ted_languages *languages)
{
    *s = (cli_sentence){.command = command, .text = text};
    ted_error err = {0};
    if (ted_prepare_source(model, text, languages, &s->source, &err) != TED_OK)
        return cli_error("%s: %s", command, err.message);
    return 0;
}

void cli_sentence_free(cli_sentence *s)
{
    ted_source_free(&s->source);
}

int cli_learn_begin(ted_learn_trace *t, const ted_model *model, const cli_sentence *s,
                    int max_length, int top_k, bool encoder_attention)
{
    ted_error err = {0};
    ted_status status = encoder_attention
                            ? ted_learn_start(t, model, &s->source, max_length, top_k, &err)
                            : ted_learn_start_steps(t, model, &s->source, max_length, top_k, &err);
    if (status != TED_OK)
        return cli_error("%s: %s", s->command, err.message);
    if (s->source.unknown > 0) {
        char shown_as[256];
        snprintf(shown_as, sizeof shown_as, "shown as %s",
                 ted_source_token(model, ted_config_get_view(t->config).tokens.unk_id));
        cli_report_unknown(model, NULL, 0, s->text, &s->source, shown_as);
    }
    return 0;
}

int cli_learn_next(ted_learn_trace *t, const char *command, int force)
{
    ted_error err = {0};
    if (ted_learn_advance(t, force, &err) != TED_OK)
        return cli_error("%s: %s", command, err.message);
    return 0;
}

/* "ted: FILE: line N: PROBLEM" (without the file or the line when not
 * known). */
static int line_error(const char *file, long number, const char *problem)
{
    fputs("ted: ", stderr);
    if (file)
        fprintf(stderr, "%s: ", file);
    if (number > 0)
        fprintf(stderr, "line %ld: ", number);
    fprintf(stderr, "%s\n", problem);
    return CLI_LINE_ERROR;
}

int cli_read_bounded_line(FILE *in, const char *file, long number, char **line,
                          size_t *capacity, size_t *length)
{
    size_t n = 0;
    int c;
    while ((c = getc(in)) != EOF && c != '\n') {
        if (n >= CLI_LINE_MAX_BYTES) {  /* no input without line ends takes all memory */
            char problem[64];
            snprintf(problem, sizeof problem, "longer than %d MiB; a line is one sentence",
                     CLI_LINE_MAX_BYTES >> 20);
            return line_error(file, number, problem);
        }
        if (n + 1 >= *capacity) {
            size_t grown = *capacity ? *capacity * 2 : 256;
            char *p = realloc(*line, grown);
            if (!p)
                return cli_error("out of memory reading a line of %zu bytes", n);
            *line = p;
            *capacity = grown;
        }
        (*line)[n++] = (char)c;
    }
    if (c == EOF && n == 0)
        return CLI_LINE_END;
    if (n > 0 && memchr(*line, '\0', n))  /* a C string would end there, unread */
        return line_error(file, number, "contains a NUL byte");
    if (n > 0 && (*line)[n - 1] == '\r')
        n--;
    if (!*line) {
        if (!(*line = malloc(1)))
            return cli_error("out of memory");
        *capacity = 1;
    }
    (*line)[n] = '\0';
    *length = n;
    return CLI_LINE_READ;
}

bool cli_read_line(FILE *in, char **line, size_t *capacity, size_t *length)
{
    int got = cli_read_bounded_line(in, NULL, 0, line, capacity, length);
    if (got == CLI_LINE_ERROR)
        exit(1);
    return got == CLI_LINE_READ;
}

/* ---- output files ------------------------------------------------------------ */

/* The temporary files of the outputs being written, removed when SIGTERM,
 * SIGINT or SIGHUP ends the program before they are renamed. A name is
 * copied in before its slot is marked used, so the handler reads only
 * whole names. */
enum { PENDING_MAX = 4 };
static char pending_names[PENDING_MAX][PATH_MAX];
static volatile sig_atomic_t pending_used[PENDING_MAX];

static void remove_temporaries_and_stop(int signal_number)
{
    for (int i = 0; i < PENDING_MAX; i++)
        if (pending_used[i])
            unlink(pending_names[i]);
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

/* Installed once; a signal the program was told to ignore (nohup) stays
 * ignored. */
static void install_removal_handlers(void)
{
    static bool installed;
    static const int signals[] = {SIGTERM, SIGINT, SIGHUP};
    if (installed)
        return;
    installed = true;
    for (size_t i = 0; i < sizeof signals / sizeof *signals; i++) {
        struct sigaction old, action = {.sa_handler = remove_temporaries_and_stop};
        sigemptyset(&action.sa_mask);
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(signals[i], &action, NULL);
    }
}

static int remember_temporary(const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < PENDING_MAX; i++)
        if (!pending_used[i] && n < sizeof pending_names[i]) {
            memcpy(pending_names[i], name, n + 1);
            pending_used[i] = 1;
            return i;
        }
    return -1;
}

int cli_output_open(cli_output *o, const char *path, const char *command)
{
    *o = (cli_output){.file = stdout, .name = "the standard output", .command = command,
                      .slot = -1};
    if (!path || !strcmp(path, "-"))
        return 0;
    install_removal_handlers();
    ted_error err = {0};
    if (frontend_output_open(&o->output, path, &err) != TED_OK)
        return command ? cli_error("%s: cannot write '%s': %s", command, path,
                                   strerror(o->output.error))
                       : cli_error("%s", err.message);
    o->file = o->output.file;
    o->name = path;
    if (o->output.temp)
        o->slot = remember_temporary(o->output.temp);
    return 0;
}

int cli_output_close(cli_output *o, int status)
{
    if (o->file == stdout)
        return status;
    ted_error err = {0};
    if (frontend_output_close(&o->output, o->name, status == 0, &err) != TED_OK && status == 0)
        status = o->command ? cli_error("%s: error writing '%s': %s", o->command, o->name,
                                        strerror(o->output.error))
                            : cli_error("%s", err.message);
    if (o->slot >= 0)
        pending_used[o->slot] = 0;
    o->slot = -1;
    o->file = NULL;
    return status;
}
