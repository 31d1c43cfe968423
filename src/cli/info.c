/* ted info: what a model is made of. */
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: ted info -m DIR [--check]\n"
    "\n"
    "Prints the model's config, every tensor of its weights file with its dtype\n"
    "and shape, and the parameter count and size.\n"
    "\n"
    "  --check   first read every weight and fail, naming the tensor and element,\n"
    "            at a NaN or infinity (loading checks only biases and LayerNorms)\n";

static const char *yes_no(bool b)
{
    return b ? "true" : "false";
}

static void print_config(const ted_config *c)
{
    printf("model:\n");
    printf("  d_model: %d            # Embedding Size\n", c->d_model);
    printf("  heads: %d               # Number of Heads; Query Size = %d\n", c->heads,
           c->d_model / c->heads);
    printf("  encoder_layers: %d\n  decoder_layers: %d\n  d_ff: %d\n", c->encoder_layers,
           c->decoder_layers, c->d_ff);
    printf("  src_vocab_size: %d\n  tgt_vocab_size: %d\n", c->src_vocab_size, c->tgt_vocab_size);
    printf("  activation: %s\n", c->activation == TED_ACTIVATION_GELU ? "gelu" : "relu");
    printf("  norm_first: %s\n  layer_norm_eps: %g\n", yes_no(c->norm_first), c->layer_norm_eps);
    printf("  max_positions: %d\n  scale_embedding: %s\n", c->max_positions,
           yes_no(c->scale_embedding));
    printf("  positional_encoding: %s\n",
           c->positional_layout == TED_POSITIONS_INTERLEAVED ? "interleaved" : "concatenated");
    printf("  encoder_final_norm: %s\n  decoder_final_norm: %s\n", yes_no(c->encoder_final_norm),
           yes_no(c->decoder_final_norm));
    printf("weights: %s\n", c->weights);
    printf("tokenizer:\n  type: %s\n  lowercase: %s\n",
           c->tokenizer == TED_TOKENIZER_CHAR ? "char" : "whitespace", yes_no(c->lowercase));
    printf("  src_vocab: %s\n  tgt_vocab: %s\n", c->src_vocab, c->tgt_vocab);
    printf("  unk_id: %d\n  pad_id: %d\n  bos_id: %d\n  eos_id: %d\n", c->unk_id, c->pad_id,
           c->bos_id, c->eos_id);
    printf("  source_bos: %s\n  source_eos: %s\n", yes_no(c->source_bos), yes_no(c->source_eos));
    printf("decoding:\n  max_length: %d\n  max_length_offset: %d\n", c->max_length,
           c->max_length_offset);
}

static void print_tensors(const ted_model *model)
{
    int count = ted_model_tensor_count(model);
    long long parameters = 0, bytes = 0;
    printf("\ntensors: %d\n", count);
    for (int i = 0; i < count; i++) {
        ted_tensor_info t = ted_model_tensor(model, i);
        long long elements = 1;
        printf("  %-60s %-4s [", t.name, t.dtype);
        for (int d = 0; d < t.ndim; d++) {
            printf(d ? ", %lld" : "%lld", (long long)t.shape[d]);
            elements *= t.shape[d];
        }
        printf("]\n");
        parameters += elements;
        bytes += (long long)t.bytes;
    }
    printf("parameters: %lld (%.2f M)\n", parameters, parameters / 1e6);
    printf("bytes: %lld (%.2f MiB)\n", bytes, bytes / (1024.0 * 1024.0));
}

int cli_info(int argc, char **argv)
{
    cli_args a;
    if (!cli_args_init(&a, "info", usage, argc, argv))
        return 1;
    const char *option;
    bool check = false;
    while (!a.failed && !a.help && (option = cli_next_option(&a))) {
        if (cli_common_option(&a, option))
            continue;
        if (!strcmp(option, "--check")) {
            check = true;
        } else {
            cli_unknown_option(&a, option);
        }
    }
    if (a.help) {
        cli_args_free(&a);
        return 0;
    }
    int status = a.failed ? 1 : 0;
    if (!status && !cli_require_model(&a))
        status = 1;
    ted_model *model = NULL;
    if (!status && !(model = cli_load_model(a.model_dir)))
        status = 1;
    ted_error err = {0};
    if (!status && check && ted_model_check_weights(model, &err) != TED_OK)
        status = cli_error("%s/%s", a.model_dir, err.message);
    if (!status) {
        print_config(ted_model_config(model));
        print_tensors(model);
        if (check)
            printf("check: every weight is finite\n");
    }
    ted_model_free(model);
    cli_args_free(&a);
    return status;
}
