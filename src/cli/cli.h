/* Shared pieces of the ted commands: argument parsing, model loading,
 * reading input lines, reporting errors. */
#ifndef TED_CLI_CLI_H
#define TED_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "frontend/limits.h"
#include "frontend/output.h"
#include "ted/learn.h"
#include "ted/ted.h"

/* Each command: argc/argv start at the command's own arguments. Returns
 * the process exit status. */
int cli_translate(int argc, char **argv);
/* ted translate's options and work under another command's name and the
 * head of its help (the usage line and what it does), translate's options
 * following: ted generate. */
int cli_translate_as(const char *name, const char *help_head, int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_logits(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_step(int argc, char **argv);
int cli_attention(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_quantize(int argc, char **argv);
int cli_shortlist(int argc, char **argv);

/* "ted: <message>" on stderr; returns 1, the exit status of every error. */
int cli_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* The threads of a pool: `requested`, or with 0 the CPUs this process may
 * use (ted_usable_cpus); more than those are not started, which standard
 * error says. */
int cli_threads(int requested);

/* Sizes the process's pool of the matrix products (ted_set_threads) to
 * cli_threads(requested); returns the threads set. */
int cli_set_threads(int requested);

/* Walks argv one option at a time. An option takes its value as the next
 * argument or after '=' (--max-length=20). Arguments that are not options
 * are operands, collected in order. */
typedef struct cli_args {
    const char *command;   /* "translate", for messages */
    const char *usage;     /* printed by --help */
    const char *model_dir; /* -m / --model */
    bool help;             /* --help was given: the usage is printed, exit 0 */
    int argc;
    char **argv;
    int next;
    const char *value;     /* the value of the option just matched */
    const char **operands;
    int operand_count;
    bool failed;
} cli_args;

bool cli_args_init(cli_args *a, const char *command, const char *usage, int argc, char **argv);
void cli_args_free(cli_args *a);
/* The next option's name (e.g. "--model"), or NULL when all are read. */
const char *cli_next_option(cli_args *a);
/* Reads the value of the option just returned; false (and an error printed)
 * when it has none. */
bool cli_take_value(cli_args *a, const char *option);
/* An option that names a string, `name` or its short form `alias` (NULL:
 * none): its value into *value. True when `option` was it. */
bool cli_value_option(cli_args *a, const char *option, const char *name, const char *alias,
                      const char **value);
/* The options every command shares: -h/--help and -m/--model DIR. True
 * when `option` was one of them. */
bool cli_common_option(cli_args *a, const char *option);
/* --source-lang CODE and --target-lang CODE, the options of every command
 * that decodes a sentence, into `languages`. True when `option` was one. */
bool cli_language_option(cli_args *a, const char *option, ted_languages *languages);
/* --shortlist FILE, of every command that decodes, into `path`. True when
 * `option` was it. */
bool cli_shortlist_option(cli_args *a, const char *option, const char **path);
/* Restricts the model's final Linear + Softmax to the shortlist at `path`
 * (ted_model_set_shortlist; NULL: nothing to do). 0, or 1 once the error
 * is reported. */
int cli_use_shortlist(ted_model *model, const char *path, const char *command);
/* Reports an option the command does not know. */
void cli_unknown_option(cli_args *a, const char *option);
/* True when -m DIR was given; else reports it. */
bool cli_require_model(const cli_args *a);
/* Parses the value as an int in [min, max]. */
bool cli_take_int(cli_args *a, const char *option, int min, int max, int *out);
/* The decoding options as the commands spell them, for
 * frontend_choose_options' errors. */
extern const char *const cli_option_names[TED_OPTION_COUNT];
/* --bad-words-ids IDS: one sequence, its ids separated by commas, added to
 * those of the option's other uses. */
struct frontend_choice;
bool cli_take_bad_words(cli_args *a, const char *option, struct frontend_choice *d);

/* Loads a model, printing the error on failure. */
ted_model *cli_load_model(const char *dir);

/* What every command does the same way: read the options (-h/--help and
 * -m/--model DIR for all, the command's own through `option`), print the
 * usage for --help, check the arguments, load the model, run, free. */
typedef struct cli_command {
    const char *name;   /* "translate", for messages */
    const char *usage;  /* printed by --help */
    /* Takes one of the command's own options into `options`; false when
     * the command has no such option. */
    bool (*option)(cli_args *a, const char *option, void *options);
    /* Once every argument is read, before the model is loaded: returns 0,
     * or 1 after printing what is wrong. NULL: only -m DIR is required. */
    int (*check)(const cli_args *a, void *options);
    /* Returns the exit status; `model` is loaded from -m DIR, or NULL
     * when the command loads models itself. */
    int (*run)(ted_model *model, const cli_args *a, void *options);
    bool loads_its_own_model;
} cli_command;

/* Runs `command` on argv; returns the exit status. */
int cli_run(const cli_command *command, void *options, int argc, char **argv);

/* 0 when the command was given exactly one TEXT operand; else 1 after
 * saying so. */
int cli_one_sentence(const cli_args *a);

/* "ted: FILE: line N: 2 words not in the vocabulary, translated as <unk>:
 * 'zebra' 'xylophone'" on stderr (`file` NULL: no file; `line` 0: no line)
 * for the `source` of `text`, which has source->unknown unknown words. The
 * words are named for the whitespace tokenizer, where the n-th word of the
 * text is the n-th source token after BOS. */
void cli_report_unknown(const ted_model *model, const char *file, long line, const char *text,
                        const ted_source *source, const char *shown_as);
/* The same for target text, whose ids (from ted_encode_target) have no BOS;
 * `label` ("--target") stands where the file would. */
void cli_report_unknown_target(const ted_model *model, const char *label, const char *text,
                               const int *ids, int count, int unknown, const char *shown_as);

/* The sentence a learning command (ted step, ted attention) follows. */
typedef struct cli_sentence {
    const char *command;  /* "step": its errors read "ted: step: ..." */
    const char *text;
    ted_source source;
} cli_sentence;

/* Makes `text` the command's sentence (ted_prepare_source): 0, or 1 after
 * printing the error. cli_sentence_free() frees it either way. */
int cli_sentence_prepare(cli_sentence *s, const ted_model *model, const char *command,
                         const char *text, const ted_languages *languages);
void cli_sentence_free(cli_sentence *s);

/* ted_learn_start() on the sentence (ted_learn_start_steps() without
 * `encoder_attention`), its unknown words reported on stderr: 0, or 1
 * after printing the error. ted_learn_end() frees the trace either way. */
int cli_learn_begin(ted_learn_trace *t, const ted_model *model, const cli_sentence *s,
                    int max_length, int top_k, bool encoder_attention);
/* ted_learn_advance(): 0, or 1 after printing the error. */
int cli_learn_next(ted_learn_trace *t, const char *command, int force);

enum { CLI_LINE_END, CLI_LINE_ERROR, CLI_LINE_READ };

/* Reads one line of up to CLI_LINE_MAX_BYTES from `in`, without its "\n" or
 * "\r\n": how every command reads its text. Returns CLI_LINE_READ;
 * CLI_LINE_END at end of input; or CLI_LINE_ERROR after saying so (naming
 * `file` when not NULL, and the line `number` when above 0) for a longer
 * line, a line holding a NUL byte, or no memory. `*line` is reused between
 * calls. */
int cli_read_bounded_line(FILE *in, const char *file, long number, char **line,
                          size_t *capacity, size_t *length);

/* cli_read_bounded_line that exits with status 1 after an error; true when
 * a line was read. */
bool cli_read_line(FILE *in, char **line, size_t *capacity, size_t *length);

/* An output file (-o FILE, --html FILE) as frontend/output.h writes it, its
 * temporary file also removed when SIGTERM, SIGINT or SIGHUP ends the
 * program; NULL or "-" is standard output. */
typedef struct cli_output {
    FILE *file;        /* where to write */
    const char *name;  /* for messages: the path, or "the standard output" */
    const char *command;  /* "attention": messages "attention: cannot write 'PATH': ..." */
    frontend_output output;
    int slot;          /* among the temporary files removed at a signal; -1: none */
} cli_output;

/* 0, or 1 after saying why `path` cannot be written ("cannot write PATH:
 * REASON", or with `command` "COMMAND: cannot write 'PATH': REASON"). */
int cli_output_open(cli_output *o, const char *path, const char *command);
/* Completes the output when `status` is 0, else discards it; returns
 * `status`, or 1 after saying why the output failed ("cannot write PATH:
 * REASON", or "COMMAND: error writing 'PATH': REASON"). Standard output is
 * left to cli_run's final check. */
int cli_output_close(cli_output *o, int status);

#endif
