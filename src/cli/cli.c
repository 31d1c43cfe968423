#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

bool cli_common_option(cli_args *a, const char *option)
{
    if (!strcmp(option, "-h") || !strcmp(option, "--help")) {
        fputs(a->usage, stdout);
        a->help = true;
        return true;
    }
    if (!strcmp(option, "-m") || !strcmp(option, "--model")) {
        if (cli_take_value(a, option))
            a->model_dir = a->value;
        return true;
    }
    return false;
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
    char *end;
    errno = 0;
    long v = strtol(a->value, &end, 10);
    if (errno || end == a->value || *end != '\0' || v < min || v > max) {
        cli_error("%s: '%s' is not a whole number from %d to %d", option, a->value, min, max);
        a->failed = true;
        return false;
    }
    *out = (int)v;
    return true;
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

bool cli_read_line(FILE *in, char **line, size_t *capacity, size_t *length)
{
    size_t n = 0;
    int c;
    while ((c = getc(in)) != EOF && c != '\n') {
        if (n + 1 >= *capacity) {
            size_t grown = *capacity ? *capacity * 2 : 256;
            char *p = realloc(*line, grown);
            if (!p) {
                cli_error("out of memory reading a line of %zu bytes", n);
                exit(1);
            }
            *line = p;
            *capacity = grown;
        }
        (*line)[n++] = (char)c;
    }
    if (c == EOF && n == 0)
        return false;
    if (n > 0 && (*line)[n - 1] == '\r')
        n--;
    if (!*line) {
        *line = malloc(1);
        if (!*line) {
            cli_error("out of memory");
            exit(1);
        }
        *capacity = 1;
    }
    (*line)[n] = '\0';
    *length = n;
    return true;
}
