/* Loading a model directory: config.yaml -> weights (mapped, and bound by
 * model/weights.c) -> vocabularies -> SentencePiece models -> the
 * tokenizers of both sides. */
#include "model/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/config.h"
#include "io/marian_model.h"
#include "kernels/kernels.h"
#include "layers/marian_ops.h"

/* ---- the model directory ------------------------------------------------ */

static ted_status join_path(char *out, size_t size, const char *dir, const char *file,
                            ted_error *err)
{
    int n = snprintf(out, size, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= size)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s/%s: path too long", dir, file);
    return TED_OK;
}

/* ---- the kinds of the layers ---------------------------------------------- */

static const ted_position_kind *const position_kinds[] = {
    [TED_POSITIONS_INTERLEAVED] = &ted_interleaved_positions,
    [TED_POSITIONS_CONCATENATED] = &ted_concatenated_positions,
    [TED_POSITIONS_FAIRSEQ] = &ted_fairseq_positions,
    [TED_POSITIONS_LEARNED] = &ted_learned_positions,
    [TED_POSITIONS_RELATIVE] = &ted_relative_positions,
    [TED_POSITIONS_MARIAN] = &ted_marian_positions,
};

static const struct ted_decoder_layer_kind *const decoder_layer_kinds[] = {
    [TED_DECODER_LAYER_ATTENTION] = &ted_self_attention_decoder_layer,
    [TED_DECODER_LAYER_SSRU] = &ted_ssru_decoder_layer,
};

/* [form][activation] */
static const ted_feed_forward_kind *const feed_forward_kinds[][4] = {
    [TED_FEED_FORWARD_PLAIN] = {
        [TED_ACTIVATION_RELU] = &ted_relu_feed_forward,
        [TED_ACTIVATION_GELU] = &ted_gelu_feed_forward,
        [TED_ACTIVATION_SILU] = &ted_silu_feed_forward,
        [TED_ACTIVATION_GELU_TANH] = &ted_gelu_tanh_feed_forward,
    },
    [TED_FEED_FORWARD_GATED] = {
        [TED_ACTIVATION_RELU] = &ted_gated_relu_feed_forward,
        [TED_ACTIVATION_GELU] = &ted_gated_gelu_feed_forward,
        [TED_ACTIVATION_SILU] = &ted_gated_silu_feed_forward,
        [TED_ACTIVATION_GELU_TANH] = &ted_gated_gelu_tanh_feed_forward,
    },
};

static const ted_norm_kind *const norm_kinds[] = {
    [TED_NORM_LAYER] = &ted_layer_norm_kind,
    [TED_NORM_RMS] = &ted_rms_norm_kind,
};

enum {
    POSITION_KINDS = sizeof position_kinds / sizeof *position_kinds,
    FEED_FORWARD_FORMS = sizeof feed_forward_kinds / sizeof *feed_forward_kinds,
    ACTIVATIONS = sizeof *feed_forward_kinds / sizeof **feed_forward_kinds,
    NORM_KINDS = sizeof norm_kinds / sizeof *norm_kinds,
    DECODER_LAYER_KINDS = sizeof decoder_layer_kinds / sizeof *decoder_layer_kinds,
};

/* m->kinds from m->config: the one place a config field picks a layer. */
static ted_status choose_kinds(ted_model *m, const char *config_path, ted_error *err)
{
    const ted_config *c = &m->config;
    if ((unsigned)c->positional_layout >= POSITION_KINDS)
        return ted_fail(err, TED_ERR_CONFIG, "%s: model.positional_encoding: no kind %d",
                        config_path, (int)c->positional_layout);
    if ((unsigned)c->activation >= ACTIVATIONS)
        return ted_fail(err, TED_ERR_CONFIG, "%s: model.activation: no kind %d", config_path,
                        (int)c->activation);
    if ((unsigned)c->feed_forward >= FEED_FORWARD_FORMS)
        return ted_fail(err, TED_ERR_CONFIG, "%s: model.feed_forward: no kind %d", config_path,
                        (int)c->feed_forward);
    if ((unsigned)c->norm >= NORM_KINDS)
        return ted_fail(err, TED_ERR_CONFIG, "%s: model.norm: no kind %d", config_path,
                        (int)c->norm);
    if ((unsigned)c->decoder_layer >= DECODER_LAYER_KINDS)
        return ted_fail(err, TED_ERR_CONFIG, "%s: model.decoder_layer: no kind %d",
                        config_path, (int)c->decoder_layer);
    m->kinds = (ted_layer_kinds){
        .norm = {norm_kinds[c->norm], c->layer_norm_eps, c->norm_first},
        .positions = position_kinds[c->positional_layout],
        .feed_forward = feed_forward_kinds[c->feed_forward][c->activation],
        .decoder_layer = decoder_layer_kinds[c->decoder_layer],
    };
    return TED_OK;
}

static ted_status load_weights(ted_model *m, const char *dir, ted_error *err)
{
    char path[4096];
    ted_status s = join_path(path, sizeof path, dir, m->config.weights, err);
    if (s || (s = ted_safetensors_open(path, &m->file, err)))
        return s;
    return ted_weights_bind(m, path, err);
}

static ted_status load_vocab(ted_vocab *vocab, const char *dir, const char *file,
                             int expected_size, const char *side, const ted_config *config,
                             ted_error *err)
{
    char path[4096];
    ted_status s = join_path(path, sizeof path, dir, file, err);
    if (s || (s = ted_vocab_load(path, vocab, err)))
        return s;
    if (vocab->size != expected_size)
        return ted_fail(err, TED_ERR_VOCAB,
                        "%s: %d tokens, but the model's %s vocabulary has %d (%s_vocab_size)",
                        path, vocab->size, side, expected_size, side);
    return ted_vocab_check_specials(vocab, config, path, err);
}

/* The SentencePiece models of both sides, when the tokenizer is
 * sentencepiece; the merges, when it is bpe. */
static ted_status load_sentencepiece(ted_model *m, const char *dir, ted_error *err)
{
    char path[4096];
    ted_status s;
    if (m->config.tokenizer == TED_TOKENIZER_BPE) {
        s = join_path(path, sizeof path, dir, m->config.merges, err);
        return s ? s : ted_bpe_load(path, &m->bpe, err);
    }
    if (m->config.tokenizer != TED_TOKENIZER_SENTENCEPIECE)
        return TED_OK;
    s = join_path(path, sizeof path, dir, m->config.src_spm, err);
    if (s || (s = ted_spm_load(path, &m->src_spm, err)))
        return s;
    if ((s = join_path(path, sizeof path, dir, m->config.tgt_spm, err)))
        return s;
    return ted_spm_load(path, &m->tgt_spm, err);
}

/* The source and target tokenizers, over the vocabularies and SentencePiece
 * models loaded; only the source side is wrapped in BOS and EOS. */
static void build_tokenizers(ted_model *m)
{
    m->source_tokenizer = (ted_tokenizer){&m->config, &m->src_vocab, m->src_spm, true, &m->bpe};
    m->target_tokenizer = (ted_tokenizer){&m->config, &m->tgt_vocab, m->tgt_spm, false, &m->bpe};
}

/* A directory of ted's format: config.yaml and the files it names. */
static ted_status load_ted(ted_model *m, const char *model_dir, ted_error *err)
{
    char path[4096];
    ted_status s = join_path(path, sizeof path, model_dir, "config.yaml", err);
    if (!s)
        s = ted_config_load(path, &m->config, err);
    if (!s)
        s = choose_kinds(m, path, err);
    if (!s)
        s = load_weights(m, model_dir, err);
    if (!s)
        s = load_vocab(&m->src_vocab, model_dir, m->config.src_vocab, m->config.src_vocab_size,
                       "src", &m->config, err);
    if (!s)
        s = load_vocab(&m->tgt_vocab, model_dir, m->config.tgt_vocab, m->config.tgt_vocab_size,
                       "tgt", &m->config, err);
    if (!s)
        s = load_sentencepiece(m, model_dir, err);
    if (!s && m->config.shortlist[0]) {
        if (!(s = join_path(path, sizeof path, model_dir, m->config.shortlist, err)))
            s = ted_model_set_shortlist(m, path, err);
    }
    return s;
}

/* A Marian vocabulary: the pieces of its SentencePiece model `spm`. */
static ted_status marian_vocab(ted_vocab *vocab, const ted_spm *spm, const char *name,
                               int expected_size, const ted_config *config, ted_error *err)
{
    char *text;
    size_t length;
    ted_status s = ted_spm_vocab_text(spm, name, &text, &length, err);
    if (!s)
        s = ted_vocab_parse(text, length, name, vocab, err);
    free(text);
    if (!s && vocab->size != expected_size)
        s = ted_fail(err, TED_ERR_VOCAB, "%s: %d pieces, but model.yml's dim-vocabs is %d",
                     name, vocab->size, expected_size);
    return s ? s : ted_vocab_check_specials(vocab, config, name, err);
}

/* Keeps `values` with the model's converted tensors, freed with it. */
static ted_status keep_values(ted_model *m, float *values, ted_error *err)
{
    float **grown = realloc(m->converted, sizeof *grown * (m->converted_count + 1));
    if (!grown) {
        free(values);
        return ted_fail(err, TED_ERR_NOMEM, "model: out of memory");
    }
    m->converted = grown;
    m->converted[m->converted_count++] = values;
    return TED_OK;
}

/* A directory as Marian saves a model (io/marian_model.h). */
static ted_status load_marian(ted_model *m, const char *dir, const ted_marian_files *files,
                              ted_error *err)
{
    char path[4096];
    ted_marian_model mm;
    ted_status s = ted_marian_model_load(dir, files, &mm, err);
    if (s)
        return s;
    m->config = mm.config;
    m->file = mm.weights.tensors;
    if ((s = keep_values(m, mm.weights.values, err)) ||
        (s = join_path(path, sizeof path, dir, files->model, err)) ||
        (s = choose_kinds(m, path, err)) || (s = ted_weights_bind(m, path, err)) ||
        (s = load_sentencepiece(m, dir, err)))
        return s;
    snprintf(m->marian_type, sizeof m->marian_type, "%s", mm.weights.model_type);
    /* Marian's float arithmetic before each quantization (layers/marian_ops.h) */
    m->kinds.norm.kind = &ted_marian_layer_norm_kind;
    m->attention_arithmetic = &ted_marian_attention;
    m->reprojects_self_kv = m->kinds.decoder_layer == &ted_self_attention_decoder_layer &&
                            m->config.decoder_layers > 0 &&
                            m->weights.decoder[0].self_attention.k_weight.x_mult == TED_I8_WHOLE;
    s = marian_vocab(&m->src_vocab, m->src_spm, files->src_spm, m->config.src_vocab_size,
                     &m->config, err);
    if (!s)
        s = marian_vocab(&m->tgt_vocab, m->tgt_spm, files->tgt_spm, m->config.tgt_vocab_size,
                         &m->config, err);
    if (!s && files->shortlist[0] &&
        !(s = join_path(path, sizeof path, dir, files->shortlist, err)))
        s = ted_model_set_shortlist(m, path, err);
    return s;
}

/* config.yaml's directory, or without one, Marian's. */
static ted_status load_directory(ted_model *m, const char *dir, ted_error *err)
{
    char path[4096];
    ted_status s = join_path(path, sizeof path, dir, "config.yaml", err);
    if (!s && access(path, F_OK) != 0) {
        ted_marian_files files;
        bool found;
        s = ted_marian_find_files(dir, &files, &found, err);
        if (s || found)
            return s ? s : load_marian(m, dir, &files, err);
    }
    return s ? s : load_ted(m, dir, err);
}

static ted_status load_model(const char *model_dir, ted_model **model, bool unpacked,
                             ted_error *err)
{
    if (!model_dir || !model)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_model_load: NULL argument");
    *model = NULL;
    ted_model *m = ted_alloc(1, sizeof *m, "model", err);
    if (!m)
        return TED_ERR_NOMEM;
    m->unpacked = unpacked;
    ted_status s = ted_kernels_init(err);  /* TED_CPU's kernels, or the CPU's best */
    if (!s)
        s = load_directory(m, model_dir, err);
    if (!s)
        s = ted_model_load_languages(m, err);
    if (s) {
        ted_model_free(m);
        return s;
    }
    build_tokenizers(m);
    m->embedding_scale = m->config.scale_embedding ? sqrtf((float)m->config.d_model) : 1.0f;
    m->output_scale = m->config.scale_output ? (float)pow(m->config.d_model, -0.5) : 1.0f;
    m->attention_scale = m->config.scale_attention ? 0.0f : 1.0f;
    *model = m;
    return TED_OK;
}

ted_status ted_model_load(const char *model_dir, ted_model **model, ted_error *err)
{
    return load_model(model_dir, model, false, err);
}

ted_status ted_model_load_unpacked(const char *model_dir, ted_model **model, ted_error *err)
{
    return load_model(model_dir, model, true, err);
}

void ted_model_free(ted_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->converted_count; i++)
        free(m->converted[i]);
    free(m->converted);
    ted_free_prefaulted(m->copies, m->copies_bytes);
    free(m->buckets);
    free(m->weights.encoder);
    free(m->weights.decoder);
    ted_safetensors_close(&m->file);
    ted_vocab_free(&m->src_vocab);
    ted_vocab_free(&m->tgt_vocab);
    ted_spm_free(m->src_spm);
    ted_spm_free(m->tgt_spm);
    ted_bpe_free(&m->bpe);
    ted_model_free_languages(m);
    ted_shortlist_free(&m->shortlist);
    free(m);
}

const ted_config *ted_model_config(const ted_model *m)
{
    if (!m)
        return NULL;
    return &m->config;
}

const char *ted_model_marian_type(const ted_model *m)
{
    return m && m->marian_type[0] ? m->marian_type : NULL;
}

ted_status ted_model_set_shortlist(ted_model *m, const char *path, ted_error *err)
{
    TED_REQUIRE(m, err);
    ted_shortlist_free(&m->shortlist);
    m->has_shortlist = false;
    if (!path)
        return TED_OK;
    ted_status s = ted_shortlist_load(path, m->config.src_vocab_size, m->config.tgt_vocab_size,
                                      &m->shortlist, err);
    m->has_shortlist = s == TED_OK;
    /* Marian adds the source ids to a binary shortlist's targets when both
     * sides read one vocabulary file. */
    const ted_config *c = &m->config;
    m->shortlist.add_sources =
        m->shortlist.binary && ((c->src_spm[0] && strcmp(c->src_spm, c->tgt_spm) == 0) ||
                                (c->src_vocab[0] && strcmp(c->src_vocab, c->tgt_vocab) == 0));
    return s;
}

ted_status ted_model_check_weights(const ted_model *m, ted_error *err)
{
    if (!m)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_model_check_weights: NULL model");
    for (int i = 0; i < m->file.count; i++) {
        ted_status s = ted_safetensors_check_finite(&m->file.tensors[i], m->config.weights, err);
        if (s)
            return s;
    }
    return TED_OK;
}

int ted_model_tensor_count(const ted_model *m)
{
    if (!m)
        return 0;
    return m->file.count;
}

ted_tensor_info ted_model_tensor(const ted_model *m, int index)
{
    ted_tensor_info info = {0};
    if (!m || index < 0 || index >= m->file.count)
        return info;
    const ted_st_tensor *t = &m->file.tensors[index];
    info.name = t->name;
    info.dtype = ted_dtype_name(t->dtype);
    info.ndim = t->ndim;
    for (int i = 0; i < t->ndim && i < 4; i++)
        info.shape[i] = t->shape[i];
    info.bytes = t->bytes;
    return info;
}

void ted_model_list_files(const ted_config *c, ted_model_files *files)
{
    bool spm = c->tokenizer == TED_TOKENIZER_SENTENCEPIECE;
    bool bpe = c->tokenizer == TED_TOKENIZER_BPE;
    const char *all[TED_MODEL_FILES] = {c->weights, "config.yaml", c->src_vocab, c->tgt_vocab,
                                        spm ? c->src_spm : bpe ? c->merges : NULL,
                                        spm ? c->tgt_spm : NULL};
    files->count = 0;
    for (int i = 0; i < TED_MODEL_FILES; i++) {
        bool listed = !all[i];
        for (int j = 0; !listed && j < files->count; j++)
            listed = !strcmp(all[i], files->name[j]);
        if (!listed)
            files->name[files->count++] = all[i];
    }
}
