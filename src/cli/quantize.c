/* ted quantize: a float model directory -> the same model with int8 or
 * bfloat16 weights. */
#include <signal.h>
#include <string.h>

#include "cli/cli.h"
#include "ted/quantize.h"

static const char usage[] =
    "usage: ted quantize [--dtype int8|int4|bf16] [--layout portable|mapped] IN_DIR OUT_DIR\n"
    "\n"
    "Writes OUT_DIR: the model of IN_DIR (F32 weights, tutorial or Marian layout)\n"
    "with every Linear and embedding weight stored as I8, one F32 scale per output\n"
    "row (tensor NAME.scale; symmetric, scale = max |row| / 127), or with\n"
    "--dtype bf16 as BF16 (each float rounded to the nearest bfloat16, ties to\n"
    "even; half the bytes); biases and LayerNorms stay F32. The default is int8.\n"
    "--dtype int4 stores the Linear weights but the output layer's in groups of\n"
    "32 columns, each with an F32 scale (max |group| / 7; values -7..7 plus 8,\n"
    "two to a byte, as U8; the scales in NAME.scale), and the embeddings and the\n"
    "output layer as int8.\n"
    "--layout mapped (int8, int4) stores the int8 Linear weights in the groups the\n"
    "int8 products read, so that loading maps the file and copies nothing (processes\n"
    "serving the model share its pages); the default, portable, stores rows, which\n"
    "any safetensors reader takes and ted repacks at load. `ted info` says which.\n"
    "config.yaml, the vocabularies and SentencePiece models are\n"
    "copied (nothing else). OUT_DIR must not exist or be empty, and must not be IN_DIR.\n"
    "Each file is written under a new temporary name (NAME.XXXXXX; no link is\n"
    "followed, nothing replaced) and renamed into place once all are whole. A run\n"
    "that fails (a full disk is named: \"No space left on device\") or is stopped\n"
    "by SIGINT, SIGTERM or SIGHUP leaves none of them, nor OUT_DIR if it created it.\n"
    "The int8 result is what `export_torch.py` / `export_hf.py --quantize int8`\n"
    "write.\n";

/* What the run has created so far, for the signal handler. */
static ted_quantize_record record;

/* SIGINT, SIGTERM, SIGHUP: the partial output removed, then the signal's
 * default action (the exit status says which signal ended the run). A
 * signal ignored at the start (SIGINT of a shell's background job) stays
 * ignored. */
static void remove_partial_and_stop(int sig)
{
    ted_quantize_remove_partial(&record);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_stop_signals(void)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction action = {.sa_handler = remove_partial_and_stop};
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaddset(&action.sa_mask, signals[i]);  /* one handler runs at a time */
    for (int i = 0; i < 3; i++) {
        struct sigaction old;
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(signals[i], &action, NULL);
    }
}

/* --dtype NAME into *dtype; false (reported) for an unknown NAME. */
static bool take_dtype(cli_args *a, ted_quantize_dtype *dtype)
{
    if (!cli_take_value(a, "--dtype"))
        return false;
    static const char *const names[] = {[TED_QUANTIZE_INT8] = "int8",
                                        [TED_QUANTIZE_BF16] = "bf16",
                                        [TED_QUANTIZE_INT4] = "int4"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(a->value, names[i])) {
            *dtype = (ted_quantize_dtype)i;
            return true;
        }
    cli_error("--dtype '%s': expected int8, int4 or bf16", a->value);
    a->failed = true;
    return false;
}

/* --layout NAME into *layout; false (reported) for an unknown NAME. */
static bool take_layout(cli_args *a, ted_quantize_layout *layout)
{
    if (!cli_take_value(a, "--layout"))
        return false;
    if (!strcmp(a->value, "portable") || !strcmp(a->value, "mapped")) {
        *layout = strcmp(a->value, "mapped") ? TED_LAYOUT_PORTABLE : TED_LAYOUT_GROUPS;
        return true;
    }
    cli_error("--layout '%s': expected portable or mapped", a->value);
    a->failed = true;
    return false;
}

int cli_quantize(int argc, char **argv)
{
    cli_args a;
    if (!cli_args_init(&a, "quantize", usage, argc, argv))
        return 1;
    ted_quantize_dtype dtype = TED_QUANTIZE_INT8;
    ted_quantize_layout layout = TED_LAYOUT_PORTABLE;
    const char *option;
    while ((option = cli_next_option(&a)))
        if (!strcmp(option, "--dtype"))
            take_dtype(&a, &dtype);
        else if (!strcmp(option, "--layout"))
            take_layout(&a, &layout);
        else if (!cli_common_option(&a, option))
            cli_unknown_option(&a, option);
    int status = 0;
    if (a.failed) {
        status = 1;
    } else if (a.help) {
        status = 0;  /* cli_common_option printed the usage */
    } else if (a.model_dir || a.operand_count != 2) {
        status = cli_error("quantize takes two directories: IN_DIR OUT_DIR (see ted quantize "
                           "--help)");
    } else {
        ted_error err = {0};
        catch_stop_signals();
        if (ted_quantize_model_recorded(a.operands[0], a.operands[1], dtype, layout, &record,
                                        &err))
            status = cli_error("%s", err.message);
        else
            printf("wrote %s: %s weights of %s\n", a.operands[1],
                   dtype == TED_QUANTIZE_BF16   ? "bf16"
                   : dtype == TED_QUANTIZE_INT4 ? "int4"
                                                : "int8",
                   a.operands[0]);
    }
    cli_args_free(&a);
    return status;
}
