/* ted quantize: a float model directory -> the same model with int8 weights. */
#include <string.h>

#include "cli/cli.h"
#include "model/quantize.h"

static const char usage[] =
    "usage: ted quantize IN_DIR OUT_DIR\n"
    "\n"
    "Writes OUT_DIR: the model of IN_DIR (F32 weights, tutorial or Marian layout)\n"
    "with every Linear and embedding weight stored as I8, one F32 scale per output\n"
    "row (tensor NAME.scale; symmetric, scale = max |row| / 127); biases and\n"
    "LayerNorms stay F32. config.yaml, the vocabularies and SentencePiece models are\n"
    "copied (nothing else). OUT_DIR must not exist or be empty, and must not be IN_DIR.\n"
    "The result is what `export_torch.py` / `export_hf.py --quantize int8` write.\n";

int cli_quantize(int argc, char **argv)
{
    cli_args a;
    if (!cli_args_init(&a, "quantize", usage, argc, argv))
        return 1;
    const char *option;
    while ((option = cli_next_option(&a)))
        if (!cli_common_option(&a, option))
            cli_unknown_option(&a, option);
    int status = 0;
    if (a.failed) {
        status = 1;
    } else if (a.help) {
        fputs(usage, stdout);
    } else if (a.model_dir || a.operand_count != 2) {
        status = cli_error("quantize takes two directories: IN_DIR OUT_DIR (see ted quantize "
                           "--help)");
    } else {
        ted_error err = {0};
        if (ted_quantize_model(a.operands[0], a.operands[1], &err) != TED_OK)
            status = cli_error("%s", err.message);
        else
            printf("wrote %s: int8 weights of %s\n", a.operands[1], a.operands[0]);
    }
    cli_args_free(&a);
    return status;
}
