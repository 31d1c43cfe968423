/* ted generate: any converted model's output for each input line, with the
 * model's own generation settings; ted translate's options and work under a
 * task-neutral name (a summarizer's or a task-prefixed T5 model's users do
 * not translate). */
#include "cli/cli.h"

static const char head[] =
    "usage: ted generate -m DIR [OPTIONS] [TEXT...]\n"
    "\n"
    "Generates the model's output for each TEXT, or each line of the input (-i\n"
    "FILE, or standard input), printing one line per input line, in order: a\n"
    "summary of a summarizer's input, the answer of a T5 model to its task prefix\n"
    "(\"summarize: ...\"), a translation. With no option it decodes as the model's\n"
    "config.yaml decoding: section says, which tools/export_hf.py writes from the\n"
    "model's generation_config.json (num_beams, length_penalty, early_stopping,\n"
    "max_length, min_length, no_repeat_ngram_size, repetition_penalty, the forced\n"
    "first and last tokens), so that it gives what transformers' generate() gives\n"
    "with no argument. Each option below overrides one of them, as in ted\n"
    "translate.\n"
    "\n";

int cli_generate(int argc, char **argv)
{
    return cli_translate_as("generate", head, argc, argv);
}
