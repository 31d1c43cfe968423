/* ted: translate with, inspect and learn from encoder-decoder Transformers. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  translate   translate text with a model\n"
    "  generate    run any model on text with its own generation settings\n"
    "  logits      print the teacher-forced logits of a target given a source\n"
    "  tokenize    print the ids (or tokens) text becomes, or the text of target ids\n"
    "  info        show a model's config and tensors\n"
    "  bench       measure load, encode and decode speed\n"
    "  step        watch a translation one token at a time, inside every attention head\n"
    "  attention   draw every layer's and head's attention as heatmaps (HTML, SVG, JSON)\n"
    "  serve       serve translations over HTTP, many requests decoded together\n"
    "  quantize    write a copy of a model with int8, int4 or bf16 weights\n"
    "  shortlist   build a vocabulary shortlist from a corpus, for faster decoding\n"
    "  version     print the version (also --version)\n"
    "\n"
    "Run 'ted COMMAND --help' for a command's options.\n";

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"translate", cli_translate},
    {"generate", cli_generate},
    {"logits", cli_logits},
    {"tokenize", cli_tokenize},
    {"info", cli_info},
    {"bench", cli_bench},
    {"step", cli_step},
    {"attention", cli_attention},
    {"serve", cli_serve},
    {"quantize", cli_quantize},
    {"shortlist", cli_shortlist},
};

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("ted %s\n", TED_VERSION);
        return 0;
    }
    ted_report_weight_faults(NULL);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 2, argv + 2);
    return cli_error("unknown command '%s' (see ted --help)", argv[1]);
}
