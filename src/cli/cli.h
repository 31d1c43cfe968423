/* Shared pieces of the ted commands: argument parsing, model loading,
 * reading input lines, reporting errors. */
#ifndef TED_CLI_CLI_H
#define TED_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "ted/ted.h"

/* Each command: argc/argv start at the command's own arguments. Returns
 * the process exit status. */
int cli_translate(int argc, char **argv);
int cli_logits(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_step(int argc, char **argv);
int cli_attention(int argc, char **argv);
int cli_serve(int argc, char **argv);

/* "ted: <message>" on stderr; returns 1, the exit status of every error. */
int cli_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

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
/* The options every command shares: -h/--help and -m/--model DIR. True
 * when `option` was one of them. */
bool cli_common_option(cli_args *a, const char *option);
/* Reports an option the command does not know. */
void cli_unknown_option(cli_args *a, const char *option);
/* True when -m DIR was given; else reports it. */
bool cli_require_model(const cli_args *a);
/* Parses the value as an int in [min, max]. */
bool cli_take_int(cli_args *a, const char *option, int min, int max, int *out);

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
 * for a `text` with `unknown` unknown words, whose source ids are
 * ids[0..count). The words are named for the whitespace tokenizer, where
 * the n-th word of the text is the n-th source token after BOS. */
void cli_report_unknown(const ted_model *model, const char *file, long line, const char *text,
                        const int *ids, int count, int unknown, const char *shown_as);

/* Reads one line of any length from `in`, without its "\n" or "\r\n".
 * Returns false at end of input. `*line` is reused between calls. */
bool cli_read_line(FILE *in, char **line, size_t *capacity, size_t *length);

#endif
