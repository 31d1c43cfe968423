/* ted logits: the decoder fed its start token, the forced target-language
 * code if any, and the target, teacher-forced; one line of logits per
 * position, each predicting the next target token. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted logits -m DIR --source TEXT --target TEXT\n"
    "\n"
    "Feeds the decoder its start token (BOS, or the config's decoder_start_id),\n"
    "the target language's code when the model forces it (--target-lang), then\n"
    "the target's tokens, as transformers' generate() does, and prints for each\n"
    "position the whole logit vector (space-separated) that predicts the next\n"
    "token: without a forced code, line i predicts target token i and the last\n"
    "line predicts EOS; with one, the first line predicts the code.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR   the model directory\n"
    "  --source TEXT     the source sentence\n"
    "  --target TEXT     the target sentence (may be empty)\n"
    "  --source-lang CODE  the source language (`ted info` lists a model's)\n"
    "  --target-lang CODE  the target language, required when the model\n"
    "                    translates into several: the decoder is fed its\n"
    "                    code after the decoder start when the model forces it\n"
    "  --shortlist FILE  restrict the final Linear + Softmax to the vocabulary\n"
    "                    shortlist FILE gives for the source (`ted shortlist`):\n"
    "                    the logits of other tokens print as -inf\n"
    "  -h, --help        show this help\n"
    "\n"
    "Words of either sentence missing from its vocabulary are fed as unknown\n"
    "(<unk>) and named on standard error. Logits that are not numbers (weights\n"
    "that overflow) are an error.\n";

static void print_logits(const float *logits, int vocab)
{
    for (int v = 0; v < vocab; v++)
        printf(v ? " %.9g" : "%.9g", logits[v]);
    putchar('\n');
}

typedef struct logits_options {
    const char *source, *target;
    ted_languages languages;
    const char *shortlist;
} logits_options;

/* The source (ted_prepare_source) and the target's ids; an error names
 * the option at fault, and unknown words are reported, as they are fed to
 * the model as <unk>. A blank source is fed as it is (BOS EOS alone, when
 * the config adds them): only a source of no tokens is refused. */
static int encode_both(const ted_model *model, const logits_options *o, ted_source *src,
                       int **tgt, int *tgt_len)
{
    ted_error err = {0};
    int unknown = 0;
    if (ted_prepare_source(model, o->source, &o->languages, src, &err))
        return cli_error("logits: --source: %s", err.message);
    if (src->count == 0)
        return cli_error("logits: --source: the source is empty");
    if (src->unknown > 0)
        cli_report_unknown(model, "--source", 0, o->source, src, "fed as <unk>");
    if (ted_encode_target(model, o->target, tgt, tgt_len, &unknown, &err))
        return cli_error("logits: --target: %s", err.message);
    if (unknown > 0)
        cli_report_unknown_target(model, "--target", o->target, *tgt, *tgt_len, unknown,
                                  "fed as <unk>");
    return 0;
}

/* The decoder's inputs, as transformers' generate feeds them: the decoder
 * start, the source's prefix (a forced target-language code), the target's
 * tokens; (1 + prefix_count + tgt_len) ids, malloc'ed. */
static int *decoder_inputs(const ted_model *model, const ted_source *src, const int *tgt,
                           int tgt_len, int *count)
{
    *count = 1 + src->prefix_count + tgt_len;
    int *inputs = malloc((size_t)*count * sizeof *inputs);
    if (!inputs)
        return NULL;
    inputs[0] = ted_config_get_view(ted_model_config(model)).tokens.decoder_start_id;
    for (int i = 0; i < src->prefix_count; i++)
        inputs[1 + i] = src->prefix_ids[i];
    for (int i = 0; i < tgt_len; i++)
        inputs[1 + src->prefix_count + i] = tgt[i];
    return inputs;
}

static int run_logits(const ted_model *model, const logits_options *o)
{
    ted_source src = {0};
    int *tgt = NULL, tgt_len = 0, *inputs = NULL, steps = 0;
    ted_session *session = NULL;
    ted_error err = {0};
    int status = encode_both(model, o, &src, &tgt, &tgt_len);
    if (!status && !(inputs = decoder_inputs(model, &src, tgt, tgt_len, &steps)))
        status = cli_error("out of memory");
    if (!status && ted_session_new(model, &session, &err))
        status = cli_error("%s", err.message);
    const int *sources[1] = {src.ids};
    if (!status && ted_session_encode(session, sources, &src.count, 1, steps, &err))
        status = cli_error("%s", err.message);
    int vocab = ted_config_get_view(ted_model_config(model)).model.tgt_vocab_size;
    for (int t = 0; !status && t < steps; t++) {
        const float *logits;
        if (ted_session_step(session, &inputs[t], &logits, &err)) {
            status = cli_error("%s", err.message);
            break;
        }
        print_logits(logits, vocab);
    }
    ted_session_free(session);
    ted_source_free(&src);
    free(tgt);
    free(inputs);
    return status;
}

static bool logits_option(cli_args *a, const char *option, void *options)
{
    logits_options *o = options;
    return cli_value_option(a, option, "--source", NULL, &o->source) ||
           cli_value_option(a, option, "--target", NULL, &o->target) ||
           cli_shortlist_option(a, option, &o->shortlist) ||
           cli_language_option(a, option, &o->languages);
}

static int check_logits(const cli_args *a, void *options)
{
    const logits_options *o = options;
    if (a->operand_count > 0)
        return cli_error("logits: unexpected argument '%s'", a->operands[0]);
    if (!a->model_dir || !o->source || !o->target)
        return cli_error("logits: -m DIR, --source TEXT and --target TEXT are required");
    return 0;
}

static int logits_command(ted_model *model, const cli_args *a, void *options)
{
    (void)a;
    const logits_options *o = options;
    if (cli_use_shortlist(model, o->shortlist, "logits"))
        return 1;
    return run_logits(model, o);
}

int cli_logits(int argc, char **argv)
{
    static const cli_command command = {"logits", usage, logits_option, check_logits,
                                        logits_command, false};
    logits_options o = {0};
    return cli_run(&command, &o, argc, argv);
}
