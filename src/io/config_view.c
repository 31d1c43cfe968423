/* The public view of a config (ted_config_get_view in ted/ted.h): the
 * fields a program reads one by one, the strings pointing into the config. */
#include "io/config.h"

ted_config_view ted_config_get_view(const ted_config *c)
{
    if (!c)
        return (ted_config_view){.files = {"", "", "", "", "", "", ""}};
    return (ted_config_view){
        .model = {.d_model = c->d_model, .heads = c->heads, .query_size = c->query_size,
                  .encoder_layers = c->encoder_layers, .decoder_layers = c->decoder_layers,
                  .d_ff = c->d_ff, .src_vocab_size = c->src_vocab_size,
                  .tgt_vocab_size = c->tgt_vocab_size, .max_positions = c->max_positions,
                  .activation = c->activation, .positional_layout = c->positional_layout,
                  .norm_first = c->norm_first, .scale_embedding = c->scale_embedding,
                  .tied_output = c->tied_output},
        .tokens = {.tokenizer = c->tokenizer, .unk_id = c->unk_id, .pad_id = c->pad_id,
                   .bos_id = c->bos_id, .eos_id = c->eos_id,
                   .decoder_start_id = c->decoder_start_id, .source_bos = c->source_bos,
                   .source_eos = c->source_eos},
        .files = {.weights = c->weights, .src_vocab = c->src_vocab, .tgt_vocab = c->tgt_vocab,
                  .src_spm = c->src_spm, .tgt_spm = c->tgt_spm, .merges = c->merges,
                  .shortlist = c->shortlist},
    };
}
