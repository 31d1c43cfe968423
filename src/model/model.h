/* The read-only model: config, weights bound to the mapped safetensors file,
 * the vocabularies and the tokenizers of both sides. Shared by every
 * session; nothing here changes after ted_model_load(). */
#ifndef TED_MODEL_MODEL_H
#define TED_MODEL_MODEL_H

#include "io/safetensors.h"
#include "io/sentencepiece.h"
#include "io/shortlist.h"
#include "io/tokenizer.h"
#include "io/config.h"
#include "io/vocab.h"
#include "layers/add_norm.h"
#include "layers/attention.h"
#include "layers/feed_forward.h"
#include "layers/output.h"
#include "layers/positional_encoding.h"
#include "layers/relative_position.h"
#include "layers/ssru.h"
#include "ted/ted.h"

typedef struct ted_encoder_layer {
    ted_attention_weights self_attention;   /* self_attn.* */
    ted_norm_weights norm1;                 /* Add & Norm after attention */
    ted_feed_forward_weights feed_forward;  /* linear1.*, linear2.* */
    ted_norm_weights norm2;                 /* Add & Norm after feed-forward */
} ted_encoder_layer;

typedef struct ted_decoder_layer {
    ted_attention_weights self_attention;   /* masked, self_attn.* */
    ted_ssru_weights ssru;                  /* in its place in an SSRU decoder */
    ted_norm_weights norm1;
    ted_attention_weights cross_attention;  /* encoder-decoder, multihead_attn.* */
    ted_norm_weights norm2;
    ted_feed_forward_weights feed_forward;
    ted_norm_weights norm3;
} ted_decoder_layer;

typedef struct ted_weights {
    ted_matrix src_embedding;             /* (src_vocab_size, d_model) */
    ted_matrix tgt_embedding;             /* (tgt_vocab_size, d_model) */
    const float *encoder_positions;       /* learned positional tables (max_positions +
                                           * position_offset, d_model), else NULL */
    const float *decoder_positions;
    ted_position_bias encoder_bias;       /* relative positions: each stack's bias */
    ted_position_bias decoder_bias;       /* (relative_attention_bias), else NULLs */
    ted_norm_weights encoder_embedding_norm;  /* NULLs without embedding_norm */
    ted_norm_weights decoder_embedding_norm;
    ted_encoder_layer *encoder;           /* (encoder_layers) */
    ted_norm_weights encoder_norm;        /* NULLs without encoder_final_norm */
    ted_decoder_layer *decoder;           /* (decoder_layers) */
    ted_norm_weights decoder_norm;        /* NULLs without decoder_final_norm */
    ted_output_weights generator;         /* the final Linear */
} ted_weights;

/* The kind of each layer, chosen once from the config when the model loads
 * (model.c); the stacks (encoder.c, decoder.c) call each layer through its
 * kind. */
typedef struct ted_layer_kinds {
    ted_norm norm;                            /* LayerNorm or RMSNorm; its eps; pre- or
                                               * post-norm */
    const ted_position_kind *positions;       /* interleaved (the paper's), concatenated,
                                               * fairseq, learned */
    const ted_feed_forward_kind *feed_forward;  /* ReLU, GELU, SiLU, tanh-GELU; plain or
                                                 * gated */
    const struct ted_decoder_layer_kind *decoder_layer;  /* masked self-attention or
                                                          * SSRU (model/decoder.h) */
} ted_layer_kinds;

/* The paper's decoder layer (model/decoder.c): masked self-attention, Add &
 * Norm, encoder-decoder attention, Add & Norm, feed-forward, Add & Norm.
 * Declared here, where the loader (model.c) picks a model's kinds, so that
 * the loader needs nothing else of the decoder. */
extern const struct ted_decoder_layer_kind ted_self_attention_decoder_layer;

/* Marian's RNN decoder layer: an SSRU (layers/ssru.h), Add & Norm, then
 * as the paper's. The cell's state c of row b lives in the first position
 * of its self cache's keys (heads blocks of query_size), and its forget
 * gate f of each position at that position of the values: the session
 * carries and reorders them as it does every cache; a row at position 0
 * starts from c = 0. Its kept "self" weights are, per head, the share of
 * each position's input the state still holds (the SSRU's counterpart of
 * self-attention's weights): (1 - f_j) prod_{k > j} f_k, averaged over
 * the head's dimensions. */
extern const struct ted_decoder_layer_kind ted_ssru_decoder_layer;

/* The weights (model/weights.c): fills m->weights from m->file as m->config describes it: every tensor is
 * found by the name the config's tensor_names scheme gives it and checked
 * for shape; F32 and I8 tensors are used in place, F16/BF16 converted (an
 * I8 matrix with its "NAME.scale" tensor, kernels.h's ted_matrix); a tensor
 * the config does not use is an error. `path` names the file in messages.
 * Then every float Linear weight is copied into panels (m->panels), which
 * the products use, and its pages of the mapped file are let go (not for
 * a model loaded unpacked, m->unpacked). */
ted_status ted_weights_bind(ted_model *m, const char *path, ted_error *err);

/* The languages of one side of the model (ted_model_languages). */
typedef struct ted_language_side {
    const char **codes;  /* (count) as users spell them */
    const char **tokens; /* (count) as the config spells them: a code of tokenizer.languages,
                          * or a bilingual model's source_lang or target_lang */
    int *ids;            /* (count) each code's token: in the source vocabulary when it
                          * goes into the source, the target's when it is forced;
                          * -1: a bilingual model's plain code, no token */
    int count;
} ted_language_side;

struct ted_model {
    ted_config config;
    ted_weights weights;
    ted_layer_kinds kinds;
    float embedding_scale;       /* sqrt(d_model), or 1 */
    float output_scale;          /* d_model^-0.5 (scale_output), or 1 */
    float attention_scale;       /* of q . k (ted_attention_keys.scale): 0, 1 / sqrt
                                  * (query_size), or 1 without scale_attention */
    const ted_attention_arithmetic *attention_arithmetic;  /* ted_attention_keys
                                  * .arithmetic: NULL, or Marian's for a Marian model */
    int *buckets;                /* relative positions: both stacks' bucket tables
                                  * (weights.encoder_bias.buckets, decoder_bias's) */
    ted_safetensors file;
    ted_vocab src_vocab;
    ted_vocab tgt_vocab;
    ted_spm *src_spm;            /* the sentencepiece tokenizer's models, else NULL */
    ted_spm *tgt_spm;
    ted_bpe bpe;                 /* the bpe tokenizer's merges (both sides), else empty */
    ted_tokenizer source_tokenizer;  /* src_vocab, src_spm; BOS/EOS as the config says */
    ted_tokenizer target_tokenizer;  /* tgt_vocab, tgt_spm; never wrapped */
    char marian_type[32];        /* a Marian directory: its container and matrices
                                  * ("npz, float32"); else "" */
    float **converted;           /* F16/BF16 or misaligned tensors copied to F32 */
    int converted_count;
    void *copies;                /* every Linear weight in the layout its products read
                                    (kernels.h: panels, bf16 panels, int8 packed), or NULL */
    size_t copies_bytes;
    ted_language_side languages[2];  /* [TED_SIDE_SOURCE], [TED_SIDE_TARGET]: those the
                                      * model translates (the top-level `languages`) */
    ted_language_side all_languages[2];  /* every language each side names */
    bool *directions;            /* (languages[0].count, languages[1].count): whether the
                                  * model translates source s into target t; NULL: every
                                  * pair */
    char *spelled_codes;         /* the codes of tokenizer.languages as users spell them */
    ted_shortlist shortlist;     /* the vocabulary shortlist, when has_shortlist */
    bool has_shortlist;
    bool unpacked;               /* ted_model_load_unpacked's: no panels, nothing to run */
    bool reprojects_self_kv;     /* the decoder's self-attention K and V are int8 products
                                  * whose x is quantized with 127 / max |x| over the whole
                                  * matrix (TED_I8_WHOLE: Marian's intgemm8), which Marian
                                  * forms of every prefix position of every row each step:
                                  * each step projects them all again (model/decoder.c) in
                                  * place of caching each position's */
};

/* ted_model_load without the copies the products read (the Linear weights
 * in panels): every file read and checked as ted_model_load does, the
 * weights left in the mapped file, for reading its tensors (ted quantize),
 * not for translating. */
ted_status ted_model_load_unpacked(const char *model_dir, ted_model **model, ted_error *err);


/* The blank rule of ted_prepare_source: a source of `count` ids, as
 * ted_encode_source makes them, holds nothing to translate (no tokens, or
 * BOS EOS alone). */
bool ted_source_is_blank(const ted_model *model, int count);

/* The languages of both sides (model->languages) from the config and the
 * vocabularies: TED_ERR_VOCAB names a code of tokenizer.languages that is
 * not a token of the vocabulary it goes into. */
ted_status ted_model_load_languages(ted_model *model, ted_error *err);
void ted_model_free_languages(ted_model *model);

/* The code tokens of one sentence's languages (NULL ok): `*source_id`
 * and `*target_id`, -1 where there is none (a side that names no
 * language; a Marian target left to the text). Errors as
 * ted_prepare_source's: an unknown, ambiguous or untrained code, a
 * direction the model does not translate. */
ted_status ted_language_ids(const ted_model *model, const ted_languages *languages,
                            int *source_id, int *target_id, ted_error *err);

/* The token to force as the first target token (the target-language code
 * of a model whose target_language_token is forced) for `languages` (NULL
 * ok): `*id`, or -1 when there is none. Errors as ted_prepare_source's. */
ted_status ted_language_prefix(const ted_model *model, const ted_languages *languages, int *id,
                               ted_error *err);

#endif
