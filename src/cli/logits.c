/* ted logits: the decoder fed BOS + the target, teacher-forced; one line of
 * logits per position, each predicting the next target token. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted logits -m DIR --source TEXT --target TEXT\n"
    "\n"
    "Feeds the decoder BOS followed by the target's tokens and prints, for each\n"
    "of the len(target) + 1 positions, the whole logit vector (space-separated)\n"
    "that predicts the next token: line i predicts target token i, the last line\n"
    "predicts EOS.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR   the model directory\n"
    "  --source TEXT     the source sentence\n"
    "  --target TEXT     the target sentence (may be empty)\n"
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
    if (ted_prepare_source(model, o->source, src, &err))
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

static int run_logits(const ted_model *model, const logits_options *o)
{
    ted_source src = {0};
    int *tgt = NULL, tgt_len = 0;
    ted_session *session = NULL;
    ted_error err = {0};
    int status = encode_both(model, o, &src, &tgt, &tgt_len);
    if (!status && ted_session_new(model, &session, &err))
        status = cli_error("%s", err.message);
    const int *sources[1] = {src.ids};
    if (!status && ted_session_encode(session, sources, &src.count, 1, tgt_len + 1, &err))
        status = cli_error("%s", err.message);

    const ted_config *c = ted_model_config(model);
    int token = c->bos_id;
    for (int t = 0; !status && t <= tgt_len; t++) {
        const float *logits;
        if (ted_session_step(session, &token, &logits, &err)) {
            status = cli_error("%s", err.message);
            break;
        }
        print_logits(logits, c->tgt_vocab_size);
        if (t < tgt_len)
            token = tgt[t];
    }
    ted_session_free(session);
    ted_source_free(&src);
    free(tgt);
    return status;
}

static bool logits_option(cli_args *a, const char *option, void *options)
{
    logits_options *o = options;
    if (!strcmp(option, "--source")) {
        if (cli_take_value(a, option))
            o->source = a->value;
    } else if (!strcmp(option, "--target")) {
        if (cli_take_value(a, option))
            o->target = a->value;
    } else {
        return false;
    }
    return true;
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
    return run_logits(model, o);
}

int cli_logits(int argc, char **argv)
{
    static const cli_command command = {"logits", usage, logits_option, check_logits,
                                        logits_command, false};
    logits_options o = {0};
    return cli_run(&command, &o, argc, argv);
}
