/* A Marian directory's files and config (io/marian_model.h); its tensors
 * are in io/marian_tensors.c. */
#include "io/marian_model.h"

#include <dirent.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "core/error.h"
#include "core/file.h"
#include "io/config.h"

/* ---- the files ------------------------------------------------------------ */

/* One name of `dir` matching any of `patterns` (NULL-terminated) into
 * `out`; "" when none. Two such names fail, naming both. */
static ted_status find_one(const char *dir, const char *const *patterns, const char *what,
                           char *out, ted_error *err)
{
    out[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return TED_OK;
    ted_status s = TED_OK;
    for (struct dirent *e; !s && (e = readdir(d));) {
        bool match = false;
        for (int i = 0; patterns[i] && !match; i++)
            match = fnmatch(patterns[i], e->d_name, 0) == 0;
        if (!match)
            continue;
        if (strlen(e->d_name) >= TED_MARIAN_NAME_SIZE)
            s = ted_fail(err, TED_ERR_ARGUMENT, "%s/%s: name too long", dir, e->d_name);
        else if (out[0])
            s = ted_fail(err, TED_ERR_ARGUMENT, "%s: two %s, %s and %s; keep one", dir, what,
                         out, e->d_name);
        else
            snprintf(out, TED_MARIAN_NAME_SIZE, "%s", e->d_name);
    }
    closedir(d);
    return s;
}

static ted_status find_vocabularies(const char *dir, ted_marian_files *files, ted_error *err)
{
    static const char *const joint[] = {"vocab*.spm", NULL};
    static const char *const src[] = {"srcvocab*.spm", NULL};
    static const char *const tgt[] = {"trgvocab*.spm", NULL};
    ted_status s = find_one(dir, joint, "joint vocabularies (vocab*.spm)", files->src_spm, err);
    if (s)
        return s;
    if (files->src_spm[0]) {
        memcpy(files->tgt_spm, files->src_spm, sizeof files->tgt_spm);
        return TED_OK;
    }
    if ((s = find_one(dir, src, "source vocabularies", files->src_spm, err)) ||
        (s = find_one(dir, tgt, "target vocabularies", files->tgt_spm, err)))
        return s;
    if (!files->src_spm[0] || !files->tgt_spm[0])
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "%s: Marian model %s but no SentencePiece vocabulary (vocab*.spm, or "
                        "srcvocab*.spm and trgvocab*.spm)", dir, files->model);
    return TED_OK;
}

ted_status ted_marian_find_files(const char *dir, ted_marian_files *files, bool *found,
                                 ted_error *err)
{
    static const char *const models[] = {"model*.npz", "model*.bin", NULL};
    static const char *const decoders[] = {"decoder.yml", "*.decoder.yml", NULL};
    static const char *const shortlists[] = {"lex*.s2t.bin", NULL};
    memset(files, 0, sizeof *files);
    *found = false;
    ted_status s = find_one(dir, models, "Marian models", files->model, err);
    if (s || !files->model[0])
        return s;
    if (strstr(files->model, ".optimizer."))
        return ted_fail(err, TED_ERR_ARGUMENT, "%s/%s: an optimizer's state, not a model", dir,
                        files->model);
    *found = true;
    if ((s = find_vocabularies(dir, files, err)) ||
        (s = find_one(dir, shortlists, "shortlists", files->shortlist, err)))
        return s;
    return find_one(dir, decoders, "decoder configs", files->decoder_yml, err);
}

/* ---- model.yml and decoder.yml --------------------------------------------- */

typedef struct yml {
    yaml_document_t document;
    bool loaded;
    const char *name;  /* the file, in messages */
} yml;

static ted_status yml_load(yml *y, const char *text, size_t length, const char *name,
                           ted_error *err)
{
    yaml_parser_t parser;
    y->name = name;
    y->loaded = false;
    if (!yaml_parser_initialize(&parser))
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, length);
    bool ok = yaml_parser_load(&parser, &y->document);
    int line = (int)parser.problem_mark.line + 1;
    yaml_parser_delete(&parser);
    if (!ok)
        return ted_fail(err, TED_ERR_FORMAT, "%s:%d: not YAML", name, line);
    y->loaded = true;
    yaml_node_t *root = yaml_document_get_root_node(&y->document);
    if (!root || root->type != YAML_MAPPING_NODE)
        return ted_fail(err, TED_ERR_FORMAT, "%s: not a YAML mapping of options", name);
    return TED_OK;
}

static void yml_free(yml *y)
{
    if (y->loaded)
        yaml_document_delete(&y->document);
    y->loaded = false;
}

/* The value of top-level `key`, or NULL. */
static yaml_node_t *yml_node(yml *y, const char *key)
{
    yaml_node_t *root = yaml_document_get_root_node(&y->document);
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&y->document, p->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, key))
            return yaml_document_get_node(&y->document, p->value);
    }
    return NULL;
}

/* The scalar of `key` ("" for an empty one), or `fallback` when absent. */
static const char *yml_text(yml *y, const char *key, const char *fallback)
{
    yaml_node_t *n = yml_node(y, key);
    if (!n)
        return fallback;
    if (n->type != YAML_SCALAR_NODE)
        return NULL;
    return (const char *)n->data.scalar.value;
}

/* The whole number of `key` (the first item of a list), or `fallback`;
 * -1 when it is no number. */
static long yml_long(yml *y, const char *key, long fallback)
{
    yaml_node_t *n = yml_node(y, key);
    if (n && n->type == YAML_SEQUENCE_NODE && n->data.sequence.items.top >
                                                  n->data.sequence.items.start)
        n = yaml_document_get_node(&y->document, *n->data.sequence.items.start);
    if (!n)
        return fallback;
    if (n->type != YAML_SCALAR_NODE)
        return -1;
    char *end;
    long v = strtol((const char *)n->data.scalar.value, &end, 10);
    return *end || end == (char *)n->data.scalar.value || v < 0 ? -1 : v;
}

static bool yml_true(yml *y, const char *key)
{
    const char *t = yml_text(y, key, "false");
    return t && !strcmp(t, "true");
}

/* ---- model.yml -> config.yaml ------------------------------------------------ */

/* The options whose other values ted has no layer for: each must be
 * absent or as given. */
static const struct {
    const char *key, *value;
} required[] = {
    {"type", "transformer"},
    {"transformer-postprocess", "dan"},
    {"transformer-preprocess", ""},
    {"transformer-postprocess-emb", "d"},
    {"transformer-postprocess-top", ""},
    {"transformer-ffn-depth", "2"},
    {"transformer-train-position-embeddings", "false"},
    {"transformer-no-projection", "false"},
    {"transformer-no-bias", "false"},
    {"transformer-no-affine", "false"},
    {"transformer-pool", "false"},
    {"output-omit-bias", "false"},
    {"right-left", "false"},
    {"factors-dim-emb", "0"},
    {"lemma-dim-emb", "0"},
    {"ulr", "false"},
};

static ted_status check_supported(yml *y, ted_error *err)
{
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        const char *v = yml_text(y, required[i].key, required[i].value);
        if (!v || strcmp(v, required[i].value))
            return ted_fail(err, TED_ERR_CONFIG, "%s: %s: \"%s\"; ted runs only \"%s\"",
                            y->name, required[i].key, v ? v : "(not a word)",
                            required[i].value);
    }
    long depth = yml_long(y, "transformer-decoder-ffn-depth", 0);
    long dec_ffn = yml_long(y, "transformer-decoder-dim-ffn", 0);
    if ((depth != 0 && depth != 2) ||
        (dec_ffn != 0 && dec_ffn != yml_long(y, "transformer-dim-ffn", -1)))
        return ted_fail(err, TED_ERR_CONFIG, "%s: transformer-decoder-ffn-depth %ld, "
                        "transformer-decoder-dim-ffn %ld: ted runs the encoder's feed-forward "
                        "network in the decoder too", y->name, depth, dec_ffn);
    const char *autoreg = yml_text(y, "transformer-decoder-autoreg", "self-attention");
    const char *cell = yml_text(y, "dec-cell", "ssru");
    if (!autoreg || (strcmp(autoreg, "self-attention") && strcmp(autoreg, "rnn")))
        return ted_fail(err, TED_ERR_CONFIG, "%s: transformer-decoder-autoreg: %s; ted runs "
                        "self-attention and rnn", y->name, autoreg ? autoreg : "?");
    if (!strcmp(autoreg, "rnn") && (!cell || strcmp(cell, "ssru")))
        return ted_fail(err, TED_ERR_CONFIG, "%s: dec-cell: %s; ted runs the ssru cell",
                        y->name, cell ? cell : "?");
    if (!yml_true(y, "tied-embeddings-all"))
        return ted_fail(err, TED_ERR_CONFIG, "%s: tied-embeddings-all is not true; ted runs "
                        "Marian models with one embedding matrix (Wemb)", y->name);
    return TED_OK;
}

/* config.yaml's model section, from model.yml. */
static int model_section(yml *y, char *out, size_t size)
{
    const char *act = yml_text(y, "transformer-ffn-activation", "swish");
    bool rnn = !strcmp(yml_text(y, "transformer-decoder-autoreg", "self-attention"), "rnn");
    long vocab = yml_long(y, "dim-vocabs", -1);
    return snprintf(out, size,
                    "model:\n  d_model: %ld\n  heads: %ld\n  encoder_layers: %ld\n"
                    "  decoder_layers: %ld\n  d_ff: %ld\n  src_vocab_size: %ld\n"
                    "  tgt_vocab_size: %ld\n  activation: %s\n  norm_first: false\n"
                    "  layer_norm_eps: 1.0e-06\n  max_positions: 4096\n"
                    "  scale_embedding: true\n  positional_encoding: marian\n"
                    "  encoder_final_norm: false\n  decoder_final_norm: false\n"
                    "  tensor_names: marian\n  attention_projection: separate\n"
                    "  shared_embeddings: true\n  tied_output: true\n  output_bias: true\n"
                    "  decoder_layer: %s\n  zero_start_embedding: true\n",
                    yml_long(y, "dim-emb", 512), yml_long(y, "transformer-heads", 8),
                    yml_long(y, "enc-depth", 6), yml_long(y, "dec-depth", 6),
                    yml_long(y, "transformer-dim-ffn", 2048), vocab, vocab,
                    act && !strcmp(act, "relu") ? "relu" : act && !strcmp(act, "swish") ? "silu"
                                                                                     : "?",
                    rnn ? "ssru" : "self-attention");
}

/* The language pair Firefox Translations' file names carry
 * ("model.esen.intgemm.alphas.bin": es -> en): the first dot-separated
 * part of `name` of four lowercase letters, as "  source_lang: es\n
 * target_lang: en\n" into out (room for 64); "" when none. */
static void language_pair(const char *name, char *out)
{
    out[0] = '\0';
    for (const char *p = strchr(name, '.'); p; p = strchr(p + 1, '.')) {
        size_t n = strcspn(p + 1, ".");
        bool letters = n == 4 && p[1 + n] == '.';
        for (size_t i = 0; letters && i < 4; i++)
            letters = p[1 + i] >= 'a' && p[1 + i] <= 'z';
        if (letters) {
            snprintf(out, 64, "  source_lang: %.2s\n  target_lang: %.2s\n", p + 1, p + 3);
            return;
        }
    }
}

/* The tokenizer and decoding sections; beam and normalize from
 * decoder.yml (`dec`, NULL: Marian's defaults for translation). */
static int other_sections(const ted_marian_files *f, yml *dec, char *out, size_t size)
{
    long beam = dec ? yml_long(dec, "beam-size", 12) : 12;
    const char *normalize = dec ? yml_text(dec, "normalize", "0") : "0";
    char languages[64];
    language_pair(f->model, languages);
    return snprintf(out, size,
                    "weights: %s\ntokenizer:\n  type: sentencepiece\n  src_vocab: %s\n"
                    "  tgt_vocab: %s\n  src_spm: %s\n  tgt_spm: %s\n  clean_up_text: false\n"
                    "  unk_id: 1\n"
                    "  pad_id: 0\n  bos_id: 0\n  eos_id: 0\n  source_bos: false\n"
                    "  source_eos: true\n%sdecoding:\n  beam_size: %ld\n"
                    "  length_penalty: %s\n  length_normalization: power\n"
                    "  early_stopping: marian\n  max_length_factor: 3\n  banned_ids: [1]\n"
                    "%s%s%s",
                    f->model, f->src_spm, f->tgt_spm, f->src_spm, f->tgt_spm, languages, beam,
                    normalize ? normalize : "?", f->shortlist[0] ? "  shortlist: " : "",
                    f->shortlist, f->shortlist[0] ? "\n" : "");
}

static ted_status read_decoder_yml(const char *dir, const ted_marian_files *f, yml *dec,
                                   char **text, ted_error *err)
{
    char path[4096];
    size_t length;
    *text = NULL;
    if (!f->decoder_yml[0])
        return TED_OK;
    snprintf(path, sizeof path, "%s/%s", dir, f->decoder_yml);
    ted_status s = ted_read_file(path, 1 << 20, TED_ERR_CONFIG, "a decoder config", text,
                                 &length, err);
    return s ? s : yml_load(dec, *text, length, f->decoder_yml, err);
}

/* model.yml (and decoder.yml) -> config, through the text of the
 * config.yaml they amount to, which io/config.c validates. */
static ted_status make_config(const char *dir, const ted_marian_files *f, const char *model_yml,
                              ted_config *config, ted_error *err)
{
    char name[4096 + TED_MARIAN_NAME_SIZE + 16], text[4096], *dec_text = NULL;
    snprintf(name, sizeof name, "%s/%s (model.yml)", dir, f->model);
    yml model = {0}, dec = {0};
    ted_status s = yml_load(&model, model_yml, strlen(model_yml), name, err);
    if (!s)
        s = check_supported(&model, err);
    if (!s)
        s = read_decoder_yml(dir, f, &dec, &dec_text, err);
    if (!s) {
        int n = model_section(&model, text, sizeof text);
        if (n > 0 && (size_t)n < sizeof text)
            n += other_sections(f, dec.loaded ? &dec : NULL, text + n, sizeof text - n);
        if (n <= 0 || (size_t)n >= sizeof text)
            s = ted_fail(err, TED_ERR_CONFIG, "%s: the config is too long", name);
        else
            s = ted_config_parse(text, (size_t)n, name, config, err);
    }
    yml_free(&model);
    yml_free(&dec);
    free(dec_text);
    return s;
}

ted_status ted_marian_model_load(const char *dir, const ted_marian_files *files,
                                 ted_marian_model *model, ted_error *err)
{
    char path[4096];
    memset(model, 0, sizeof *model);
    model->files = *files;
    snprintf(path, sizeof path, "%s/%s", dir, files->model);
    ted_marian_file file;
    ted_status s = ted_marian_open(path, &file, err);
    if (s)
        return s;
    const char *model_yml = ted_marian_yml(&file, NULL);
    if (!model_yml)
        s = ted_fail(err, TED_ERR_FORMAT, "%s: no %s item (the model's config)", path,
                     TED_MARIAN_YML_NAME);
    if (!s)
        s = make_config(dir, files, model_yml, &model->config, err);
    if (!s)
        s = ted_marian_tensors(&file, &model->config, path, &model->weights, err);
    ted_marian_close(&file);
    return s;
}
