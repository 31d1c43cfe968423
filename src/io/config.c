/*
 * config.yaml -> ted_config.
 *
 * A first pass over libyaml's events checks the shape of the stream (one
 * document, shallow nesting); libyaml then builds the document tree. One
 * table describes every key (section, type, bounds, field), so walking a
 * mapping, refusing unknown and duplicate keys and reporting missing ones is
 * the same code for every section. Checks that involve two keys run once the
 * whole file is read.
 */
#include "io/config.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "core/error.h"
#include "core/file.h"

/* A config is a few hundred bytes; anything much larger is some other file
 * given by mistake, and is refused before it is read into memory. */
#define CONFIG_MAX_BYTES (1024 * 1024)

/* A config nests two mappings; a few more levels still get a message about
 * the key at fault, anything deeper is refused outright (see check_stream). */
#define CONFIG_MAX_DEPTH 8

typedef enum value_type {
    VALUE_SECTION,  /* a mapping of further keys */
    VALUE_INT,
    VALUE_BOOL,
    VALUE_FLOAT,
    VALUE_PATH,     /* a file inside the model directory */
    VALUE_CHOICE,   /* one word of a list */
} value_type;

typedef struct key_spec {
    const char *section;  /* NULL for top-level keys */
    const char *name;
    value_type type;
    bool required;
    size_t offset;        /* of the field in ted_config (not for sections and choices) */
    int min, max;         /* inclusive bounds of an int; for a float, min 0 allows 0
                           * (min 1: it must be > 0) and max > 0 bounds it */
    const char *const *choices;               /* NULL-terminated; index = enum value */
    void (*set_choice)(ted_config *, int);
} key_spec;

static const char *const activation_names[] = {"relu", "gelu", "silu", NULL};
static const char *const tensor_names_names[] = {"tutorial", "marian", NULL};
static const char *const projection_names[] = {"packed", "separate", NULL};
static const char *const positional_names[] = {"interleaved", "concatenated", NULL};
static const char *const tokenizer_names[] = {"whitespace", "char", "sentencepiece", NULL};

static void set_activation(ted_config *c, int index) { c->activation = (ted_activation)index; }
static void set_positional(ted_config *c, int index)
{
    c->positional_layout = (ted_positional_layout)index;
}
static void set_tokenizer(ted_config *c, int index) { c->tokenizer = (ted_tokenizer_kind)index; }
static void set_tensor_names(ted_config *c, int index)
{
    c->tensor_names = (ted_tensor_names)index;
}
static void set_projection(ted_config *c, int index)
{
    c->attention_projection = (ted_attention_projection)index;
}

#define SECTION(name, required) {NULL, name, VALUE_SECTION, required, 0, 0, 0, NULL, NULL}
#define INT(section, name, required, field, min, max) \
    {section, name, VALUE_INT, required, offsetof(ted_config, field), min, max, NULL, NULL}
#define BOOL(section, name, field) \
    {section, name, VALUE_BOOL, false, offsetof(ted_config, field), 0, 0, NULL, NULL}
#define FLOAT_IN(section, name, field, min, max) \
    {section, name, VALUE_FLOAT, false, offsetof(ted_config, field), min, max, NULL, NULL}
#define FLOAT(section, name, field) FLOAT_IN(section, name, field, 1, 0)
#define PATH(section, name, field) \
    {section, name, VALUE_PATH, true, offsetof(ted_config, field), 0, 0, NULL, NULL}
#define OPTIONAL_PATH(section, name, field) \
    {section, name, VALUE_PATH, false, offsetof(ted_config, field), 0, 0, NULL, NULL}
#define CHOICE(section, name, names, setter) \
    {section, name, VALUE_CHOICE, false, 0, 0, 0, names, setter}

/* The bounds refuse absurd sizes before any buffer is sized from them. */
static const key_spec keys[] = {
    SECTION("model", true),
    INT("model", "d_model", true, d_model, 2, 65536),
    INT("model", "heads", true, heads, 1, 1024),
    INT("model", "encoder_layers", true, encoder_layers, 1, 256),
    INT("model", "decoder_layers", true, decoder_layers, 1, 256),
    INT("model", "d_ff", true, d_ff, 1, 1048576),
    INT("model", "src_vocab_size", true, src_vocab_size, 4, 16777216),
    INT("model", "tgt_vocab_size", true, tgt_vocab_size, 4, 16777216),
    CHOICE("model", "activation", activation_names, set_activation),
    BOOL("model", "norm_first", norm_first),
    FLOAT("model", "layer_norm_eps", layer_norm_eps),
    INT("model", "max_positions", false, max_positions, 1, 1048576),
    BOOL("model", "scale_embedding", scale_embedding),
    CHOICE("model", "positional_encoding", positional_names, set_positional),
    BOOL("model", "encoder_final_norm", encoder_final_norm),
    BOOL("model", "decoder_final_norm", decoder_final_norm),
    CHOICE("model", "tensor_names", tensor_names_names, set_tensor_names),
    CHOICE("model", "attention_projection", projection_names, set_projection),
    BOOL("model", "shared_embeddings", shared_embeddings),
    BOOL("model", "tied_output", tied_output),
    BOOL("model", "output_bias", output_bias),
    PATH(NULL, "weights", weights),
    SECTION("tokenizer", true),
    CHOICE("tokenizer", "type", tokenizer_names, set_tokenizer),
    BOOL("tokenizer", "lowercase", lowercase),
    PATH("tokenizer", "src_vocab", src_vocab),
    PATH("tokenizer", "tgt_vocab", tgt_vocab),
    OPTIONAL_PATH("tokenizer", "src_spm", src_spm),
    OPTIONAL_PATH("tokenizer", "tgt_spm", tgt_spm),
    INT("tokenizer", "unk_id", false, unk_id, 0, INT_MAX),
    INT("tokenizer", "pad_id", false, pad_id, 0, INT_MAX),
    INT("tokenizer", "bos_id", false, bos_id, 0, INT_MAX),
    INT("tokenizer", "eos_id", false, eos_id, 0, INT_MAX),
    BOOL("tokenizer", "source_bos", source_bos),
    BOOL("tokenizer", "source_eos", source_eos),
    SECTION("decoding", false),
    /* no decode outlives max_positions, whose bound these share */
    INT("decoding", "max_length", false, max_length, 0, 1048576),
    INT("decoding", "max_length_offset", false, max_length_offset, 0, 1048576),
    INT("decoding", "beam_size", false, beam_size, 1, 1024),
    FLOAT_IN("decoding", "length_penalty", length_penalty, 0, 0),
    BOOL("decoding", "sample", sample),
    FLOAT("decoding", "temperature", temperature),
    INT("decoding", "top_k", false, top_k, 0, 16777216),
    FLOAT_IN("decoding", "top_p", top_p, 1, 1),
};

#define KEY_COUNT (sizeof keys / sizeof keys[0])

typedef struct reader {
    yaml_document_t *document;
    const char *name;   /* the file, in messages */
    ted_config config;
    int line[KEY_COUNT];  /* where each key was seen (1-based), 0 = not seen */
    ted_error *err;
} reader;

static const ted_config defaults = {
    .activation = TED_ACTIVATION_RELU,
    .norm_first = false,
    .layer_norm_eps = 1e-5f,
    .max_positions = 5000,
    .scale_embedding = true,
    .positional_layout = TED_POSITIONS_INTERLEAVED,
    .encoder_final_norm = true,
    .decoder_final_norm = true,
    .output_bias = true,
    .tokenizer = TED_TOKENIZER_WHITESPACE,
    .lowercase = false,
    .unk_id = 0,
    .pad_id = 1,
    .bos_id = 2,
    .eos_id = 3,
    .source_bos = true,
    .source_eos = true,
    .max_length = 0,
    .max_length_offset = 0,
    .beam_size = 1,
    .length_penalty = 0.6f,
    .sample = false,
    .temperature = 1.0f,
    .top_k = 0,
    .top_p = 1.0f,
};

static int node_line(const yaml_node_t *node) { return (int)node->start_mark.line + 1; }

static int key_index(const key_spec *spec) { return (int)(spec - keys); }

/* Every message about a key reads "FILE:LINE: KEY: what is wrong", with
 * the key dotted ("model.heads"). */
__attribute__((format(printf, 4, 5)))
static ted_status key_error(reader *r, const key_spec *spec, int line, const char *format, ...)
{
    char what[TED_ERROR_MESSAGE_SIZE];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    return ted_fail(r->err, TED_ERR_CONFIG, "%s:%d: %s%s%s: %s", r->name, line,
                    spec->section ? spec->section : "", spec->section ? "." : "", spec->name,
                    what);
}

static bool scalar_is(const yaml_node_t *node, const char *word)
{
    size_t n = strlen(word);
    return node->data.scalar.length == n && memcmp(node->data.scalar.value, word, n) == 0;
}

static const char *node_kind(const yaml_node_t *node)
{
    return node->type == YAML_MAPPING_NODE ? "a mapping" : "a list";
}

/* Quoted scalars are strings in YAML, so "512" is not a number. */
static bool is_plain(const yaml_node_t *node)
{
    return node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* Up to 47 bytes of a scalar, NUL-terminated, for messages and numbers:
 * one long value must not crowd the rest of a message out. */
typedef struct shown_text {
    char text[48];
} shown_text;

static shown_text shown(const yaml_node_t *node)
{
    shown_text out;
    size_t n = node->data.scalar.length;
    if (n >= sizeof out.text)
        n = sizeof out.text - 1;
    memcpy(out.text, node->data.scalar.value, n);
    out.text[n] = '\0';
    return out;
}

static void *field_of(reader *r, const key_spec *spec) { return (char *)&r->config + spec->offset; }

static ted_status read_int(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    const char *s = (const char *)node->data.scalar.value;
    size_t n = node->data.scalar.length;
    size_t first = (n > 0 && s[0] == '-') ? 1 : 0;
    bool digits = is_plain(node) && first < n;
    bool overflow = false;
    long long value = 0;
    for (size_t i = first; digits && i < n; i++) {
        int digit = s[i] - '0';
        if (digit < 0 || digit > 9)
            digits = false;
        else if (value > ((long long)INT_MAX + 1 - digit) / 10)
            overflow = true;
        else
            value = value * 10 + digit;
    }
    int line = node_line(node);
    if (!digits)
        return key_error(r, spec, line, "expected an integer, got \"%s\"", shown(node).text);
    /* YAML 1.1 readers take 010 for octal 8; refuse rather than guess. */
    if (n - first > 1 && s[first] == '0')
        return key_error(r, spec, line, "%s: leading zeros are not allowed", shown(node).text);
    if (first == 1)
        value = -value;
    if (overflow || value < spec->min || value > spec->max) {
        if (spec->max == INT_MAX)
            return key_error(r, spec, line, "%s is out of range (must be >= %d)",
                             shown(node).text, spec->min);
        return key_error(r, spec, line, "%s is out of range (must be %d to %d)", shown(node).text,
                         spec->min, spec->max);
    }
    *(int *)field_of(r, spec) = (int)value;
    return TED_OK;
}

static ted_status read_bool(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    bool value = scalar_is(node, "true");
    if (!is_plain(node) || (!value && !scalar_is(node, "false")))
        return key_error(r, spec, node_line(node), "expected true or false, got \"%s\"",
                         shown(node).text);
    *(bool *)field_of(r, spec) = value;
    return TED_OK;
}

static ted_status read_float(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    shown_text number = shown(node);
    char *end = NULL;
    double value = 0;
    /* A number too long for the buffer is not one a config needs. */
    if (is_plain(node) && node->data.scalar.length < sizeof number.text && number.text[0] != '\0')
        value = strtod(number.text, &end);
    if (!end || *end != '\0')
        return key_error(r, spec, node_line(node), "expected a number, got \"%s\"", number.text);
    float single = (float)value;
    if (spec->min == 0 && !(single >= 0.0f && isfinite(single)))
        return key_error(r, spec, node_line(node), "%s must be a finite float >= 0",
                         number.text);
    if (spec->min != 0 && !(single > 0.0f && isfinite(single)))
        return key_error(r, spec, node_line(node), "%s must be a positive finite float",
                         number.text);
    if (spec->max > 0 && single > (float)spec->max)
        return key_error(r, spec, node_line(node), "%s is out of range (must be at most %d)",
                         number.text, spec->max);
    *(float *)field_of(r, spec) = single == 0.0f ? 0.0f : single;
    return TED_OK;
}

/* Paths are relative to the model directory and must stay inside it. */
static const char *path_problem(const char *s, size_t n)
{
    if (n == 0)
        return "the path is empty";
    if (memchr(s, '\0', n))
        return "the path contains a NUL byte";
    if (n >= TED_CONFIG_PATH_SIZE)
        return "the path is too long";
    if (s[0] == '/')
        return "the path must be relative to the model directory";
    for (size_t start = 0; start < n;) {
        size_t end = start;
        while (end < n && s[end] != '/')
            end++;
        if (end - start == 2 && s[start] == '.' && s[start + 1] == '.')
            return "the path must not contain \"..\"";
        start = end + 1;
    }
    return NULL;
}

static ted_status read_path(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    const char *s = (const char *)node->data.scalar.value;
    size_t n = node->data.scalar.length;
    const char *problem = path_problem(s, n);
    if (problem)
        return key_error(r, spec, node_line(node), "\"%s\": %s", shown(node).text, problem);
    char *field = field_of(r, spec);
    memcpy(field, s, n);
    field[n] = '\0';
    return TED_OK;
}

static ted_status read_choice(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    char allowed[128] = "";
    for (int i = 0; spec->choices[i]; i++) {
        if (scalar_is(node, spec->choices[i])) {
            spec->set_choice(&r->config, i);
            return TED_OK;
        }
        if (i > 0)
            strcat(allowed, ", ");
        strcat(allowed, spec->choices[i]);  /* the lists above fit */
    }
    return key_error(r, spec, node_line(node), "\"%s\" is not one of %s", shown(node).text,
                     allowed);
}

static ted_status read_section(reader *r, const char *section, yaml_node_t *mapping, int line);

static bool is_null(const yaml_node_t *node)
{
    return node->type == YAML_SCALAR_NODE && is_plain(node) &&
           (node->data.scalar.length == 0 || scalar_is(node, "~") || scalar_is(node, "null"));
}

/* "decoding:" with every key commented out is an empty section. */
static ted_status read_section_value(reader *r, const key_spec *spec, yaml_node_t *node)
{
    int line = r->line[key_index(spec)];
    if (is_null(node))
        return read_section(r, spec->name, NULL, line);
    if (node->type != YAML_MAPPING_NODE)
        return key_error(r, spec, node_line(node), "expected a mapping of keys");
    return read_section(r, spec->name, node, line);
}

static ted_status read_value(reader *r, const key_spec *spec, yaml_node_t *node)
{
    if (spec->type != VALUE_SECTION && node->type != YAML_SCALAR_NODE)
        return key_error(r, spec, node_line(node), "expected a single value, got %s",
                         node_kind(node));
    switch (spec->type) {
    case VALUE_SECTION: return read_section_value(r, spec, node);
    case VALUE_INT: return read_int(r, spec, node);
    case VALUE_BOOL: return read_bool(r, spec, node);
    case VALUE_FLOAT: return read_float(r, spec, node);
    case VALUE_PATH: return read_path(r, spec, node);
    case VALUE_CHOICE: break;
    }
    return read_choice(r, spec, node);
}

static bool in_section(const key_spec *spec, const char *section)
{
    if (!spec->section || !section)
        return spec->section == section;
    return strcmp(spec->section, section) == 0;
}

static const key_spec *find_key(const char *section, const yaml_node_t *key)
{
    if (key->type != YAML_SCALAR_NODE)
        return NULL;
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (in_section(&keys[i], section) && scalar_is(key, keys[i].name))
            return &keys[i];
    return NULL;
}

static ted_status unknown_key(reader *r, const char *section, const yaml_node_t *key)
{
    const char *prefix = section ? section : "";
    if (key->type != YAML_SCALAR_NODE)
        return ted_fail(r->err, TED_ERR_CONFIG, "%s:%d: %s%sexpected a key name, got %s",
                        r->name, node_line(key), prefix, section ? ": " : "", node_kind(key));
    return ted_fail(r->err, TED_ERR_CONFIG, "%s:%d: %s%s%s: unknown key", r->name, node_line(key),
                    prefix, section ? "." : "", shown(key).text);
}

/* Reads the pairs of `mapping` (NULL: an empty section), then reports the
 * first required key that is missing, at `line`. The walk stops at the first
 * unknown or repeated key, so a huge mapping costs no more than a small one. */
static ted_status read_section(reader *r, const char *section, yaml_node_t *mapping, int line)
{
    yaml_node_pair_t *pair = mapping ? mapping->data.mapping.pairs.start : NULL;
    yaml_node_pair_t *end = mapping ? mapping->data.mapping.pairs.top : NULL;
    for (; pair < end; pair++) {
        yaml_node_t *key = yaml_document_get_node(r->document, pair->key);
        const key_spec *spec = find_key(section, key);
        if (!spec)
            return unknown_key(r, section, key);
        int *seen = &r->line[key_index(spec)];
        if (*seen)
            return key_error(r, spec, node_line(key), "duplicate key (first at line %d)", *seen);
        *seen = node_line(key);
        ted_status status = read_value(r, spec, yaml_document_get_node(r->document, pair->value));
        if (status != TED_OK)
            return status;
    }
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (in_section(&keys[i], section) && keys[i].required && !r->line[i])
            return key_error(r, &keys[i], line, "missing required key");
    return TED_OK;
}

static const key_spec *spec_named(const char *name)
{
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

/* The line of a key for a message, or 1 when it was left at its default. */
static int line_of(const reader *r, const key_spec *spec)
{
    int line = r->line[key_index(spec)];
    return line ? line : 1;
}

static ted_status check_shape(reader *r)
{
    const ted_config *c = &r->config;
    if (c->d_model % 2 != 0) {
        const key_spec *spec = spec_named("d_model");
        return key_error(r, spec, line_of(r, spec),
                         "%d is odd; the sinusoidal positional encoding pairs each sine "
                         "with a cosine", c->d_model);
    }
    if (c->d_model % c->heads != 0) {
        const key_spec *spec = spec_named("heads");
        return key_error(r, spec, line_of(r, spec), "%d does not divide d_model %d", c->heads,
                         c->d_model);
    }
    return TED_OK;
}

/* The special ids must be different tokens present in both vocabularies,
 * but for BOS and PAD: a model without a BOS token (Marian) starts its
 * decoder from PAD. A clash is reported on the key the file sets, since the
 * other one may be a default the file never mentions. */
static ted_status check_special_ids(reader *r)
{
    const ted_config *c = &r->config;
    const key_spec *specs[] = {spec_named("unk_id"), spec_named("pad_id"), spec_named("bos_id"),
                               spec_named("eos_id")};
    const int ids[] = {c->unk_id, c->pad_id, c->bos_id, c->eos_id};
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < i; j++) {
            bool bos_is_pad = i == 2 && j == 1;
            if (ids[i] != ids[j] || bos_is_pad)
                continue;
            bool i_is_set = r->line[key_index(specs[i])] != 0;
            const key_spec *named = i_is_set ? specs[i] : specs[j];
            const key_spec *other = i_is_set ? specs[j] : specs[i];
            return key_error(r, named, line_of(r, named),
                             "%d is also %s; the special ids must differ", ids[i], other->name);
        }
        if (ids[i] >= c->src_vocab_size)
            return key_error(r, specs[i], line_of(r, specs[i]), "%d is not below src_vocab_size %d",
                             ids[i], c->src_vocab_size);
        if (ids[i] >= c->tgt_vocab_size)
            return key_error(r, specs[i], line_of(r, specs[i]), "%d is not below tgt_vocab_size %d",
                             ids[i], c->tgt_vocab_size);
    }
    return TED_OK;
}

/* What one key of the model needs of others. */
static ted_status check_model_variant(reader *r)
{
    const ted_config *c = &r->config;
    if (c->tokenizer == TED_TOKENIZER_SENTENCEPIECE) {
        const key_spec *type = spec_named("type");
        const key_spec *paths[] = {spec_named("src_spm"), spec_named("tgt_spm")};
        for (int i = 0; i < 2; i++)
            if (!r->line[key_index(paths[i])])
                return key_error(r, paths[i], line_of(r, type),
                                 "missing; the sentencepiece tokenizer needs its model file");
    }
    if (c->shared_embeddings && c->src_vocab_size != c->tgt_vocab_size) {
        const key_spec *spec = spec_named("shared_embeddings");
        return key_error(r, spec, line_of(r, spec),
                         "true, but src_vocab_size %d and tgt_vocab_size %d differ",
                         c->src_vocab_size, c->tgt_vocab_size);
    }
    if (c->shared_embeddings && c->tensor_names == TED_NAMES_TUTORIAL) {
        const key_spec *spec = spec_named("shared_embeddings");
        return key_error(r, spec, line_of(r, spec),
                         "true, but tensor_names tutorial has no shared embedding tensor");
    }
    return TED_OK;
}

/* Sampling and beam search exclude each other; a beam needs more
 * candidates than it keeps. */
static ted_status check_decoding(reader *r)
{
    const ted_config *c = &r->config;
    if (c->sample && c->beam_size > 1) {
        const key_spec *spec = spec_named("sample");
        return key_error(r, spec, line_of(r, spec),
                         "true with beam_size %d; sampling and beam search exclude each other",
                         c->beam_size);
    }
    if (c->beam_size >= c->tgt_vocab_size) {
        const key_spec *spec = spec_named("beam_size");
        return key_error(r, spec, line_of(r, spec), "%d is not below tgt_vocab_size %d",
                         c->beam_size, c->tgt_vocab_size);
    }
    return TED_OK;
}

static ted_status read_document(reader *r)
{
    yaml_node_t *root = yaml_document_get_root_node(r->document);
    if (!root)
        return ted_fail(r->err, TED_ERR_CONFIG, "%s:1: empty document", r->name);
    if (root->type != YAML_MAPPING_NODE)
        return ted_fail(r->err, TED_ERR_CONFIG, "%s:%d: the top level must be a mapping of keys",
                        r->name, node_line(root));
    ted_status status = read_section(r, NULL, root, 1);
    if (status == TED_OK)
        status = check_shape(r);
    if (status == TED_OK)
        status = check_special_ids(r);
    if (status == TED_OK)
        status = check_decoding(r);
    if (status == TED_OK)
        status = check_model_variant(r);
    return status;
}

static ted_status syntax_error(const yaml_parser_t *parser, const char *text, size_t length,
                               const char *name, ted_error *err)
{
    if (parser->error == YAML_MEMORY_ERROR)
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory while parsing YAML", name);
    size_t line = parser->problem_mark.line + 1;
    /* The reader (encoding, control characters) gives a byte offset, not a mark. */
    if (parser->error == YAML_READER_ERROR) {
        line = 1;
        for (size_t i = 0; i < parser->problem_offset && i < length; i++)
            line += text[i] == '\n';
    }
    const char *problem = parser->problem ? parser->problem : "invalid YAML";
    if (parser->context)
        return ted_fail(err, TED_ERR_CONFIG, "%s:%zu: YAML syntax error: %s %s", name, line,
                        problem, parser->context);
    return ted_fail(err, TED_ERR_CONFIG, "%s:%zu: YAML syntax error: %s", name, line, problem);
}

static bool start_parser(yaml_parser_t *parser, const char *text, size_t length)
{
    if (!yaml_parser_initialize(parser))
        return false;
    yaml_parser_set_input_string(parser, (const unsigned char *)text, length);
    return true;
}

/* One document, nested at most CONFIG_MAX_DEPTH deep. libyaml's scanner
 * slows down with the square of the nesting depth (a megabyte of "[" takes
 * minutes), so this pass over the events, which stops at the first
 * collection nested too deep, comes before the document is built. */
static ted_status check_stream(const char *text, size_t length, const char *name, ted_error *err)
{
    yaml_parser_t parser;
    if (!start_parser(&parser, text, length))
        return ted_fail(err, TED_ERR_NOMEM, "%s: cannot start the YAML parser", name);
    ted_status status = TED_OK;
    int depth = 0, documents = 0;
    for (bool done = false; !done && status == TED_OK;) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) {
            status = syntax_error(&parser, text, length, name, err);
            break;
        }
        size_t line = event.start_mark.line + 1;
        switch (event.type) {
        case YAML_DOCUMENT_START_EVENT: documents++; break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: depth++; break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_STREAM_END_EVENT: done = true; break;
        default: break;
        }
        yaml_event_delete(&event);
        if (documents > 1)
            status = ted_fail(err, TED_ERR_CONFIG,
                              "%s:%zu: a config holds one YAML document, not several", name, line);
        else if (depth > CONFIG_MAX_DEPTH)
            status = ted_fail(err, TED_ERR_CONFIG, "%s:%zu: nested deeper than %d levels", name,
                              line, CONFIG_MAX_DEPTH);
    }
    yaml_parser_delete(&parser);
    return status;
}

ted_status ted_config_parse(const char *text, size_t length, const char *name,
                            ted_config *config, ted_error *err)
{
    if (!text || !name || !config)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_config_parse: text, name and config are required");
    if (length > CONFIG_MAX_BYTES)
        return ted_fail(err, TED_ERR_CONFIG, "%s: %zu bytes is larger than 1 MiB; "
                        "not a config file", name, length);
    ted_status status = check_stream(text, length, name, err);
    if (status != TED_OK)
        return status;

    yaml_parser_t parser;
    if (!start_parser(&parser, text, length))
        return ted_fail(err, TED_ERR_NOMEM, "%s: cannot start the YAML parser", name);
    yaml_document_t document;
    if (!yaml_parser_load(&parser, &document)) {
        status = syntax_error(&parser, text, length, name, err);
        yaml_parser_delete(&parser);
        return status;
    }
    reader r = {.document = &document, .name = name, .config = defaults, .err = err};
    status = read_document(&r);
    yaml_document_delete(&document);
    yaml_parser_delete(&parser);
    if (status == TED_OK)
        *config = r.config;
    return status;
}

ted_status ted_config_load(const char *path, ted_config *config, ted_error *err)
{
    if (!path || !config)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_config_load: path and config are required");
    char *text = NULL;
    size_t length = 0;
    ted_status status = ted_read_file(path, CONFIG_MAX_BYTES, TED_ERR_CONFIG, "a config file",
                                      &text, &length, err);
    if (status != TED_OK)
        return status;
    status = ted_config_parse(text, length, path, config, err);
    free(text);
    return status;
}
