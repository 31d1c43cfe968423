/*
 * config.yaml <-> ted_config.
 *
 * A first pass over libyaml's events checks the shape of the stream (one
 * document, shallow nesting) and notes explicit tags; libyaml then builds
 * the document tree. One table describes every key (section, type, bounds,
 * default, field): the config a file starts from is built from it, walking
 * a mapping, refusing unknown and duplicate keys and reporting missing ones
 * is the same code for every section, and ted_config_visit hands every key
 * and its value over in its order (ted_config_write_yaml is such a visit).
 * Checks that involve two keys run once the whole file is read, and then
 * the sizes no key sets (Query Size) are derived.
 */
#include "io/config.h"

#include <errno.h>
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

/* The types of ted_config_visit (io/config.h), and sections. */
typedef enum value_type {
    VALUE_INT = TED_VALUE_INT,
    VALUE_BOOL = TED_VALUE_BOOL,
    VALUE_FLOAT = TED_VALUE_FLOAT,
    VALUE_WORD = TED_VALUE_WORD,          /* one word of a list */
    VALUE_PATH = TED_VALUE_PATH,          /* a file inside the model directory */
    VALUE_INT_LIST = TED_VALUE_INT_LIST,  /* a sequence of ints, flow ([1, 2]) or block */
    VALUE_CODE = TED_VALUE_CODE,          /* a language code: one word, no spaces */
    VALUE_CODE_LIST = TED_VALUE_CODE_LIST,  /* a sequence of distinct codes */
    VALUE_SECTION,                        /* a mapping of further keys; never visited */
    VALUE_SERVED_LIST,  /* codes and directions ("a > b"), visited as TED_VALUE_CODE_LIST */
} value_type;

/* One key of config.yaml: how it is read, checked, defaulted and written. */
typedef struct key_spec {
    const char *section;  /* NULL for top-level keys */
    const char *name;
    value_type type;
    bool required;
    size_t offset;        /* of the field in ted_config (not for sections) */
    int min, max;         /* inclusive bounds of an int or of each int of a list;
                           * for a float, min 0 allows 0 (min 1: it must be > 0)
                           * and max > 0 bounds it */
    const char *const *choices;  /* a word's list, NULL-terminated; index = enum value */
    size_t count_offset;  /* a list: of the int counting its values */
    int capacity;         /* a list: the most values its field holds; a code or a
                           * list of codes: the bytes of its field */
    double fallback;      /* an optional key's default: the number, 0/1 for a
                           * bool, the word's index; paths and lists are empty */
} key_spec;

static const char *const activation_names[] = {"relu", "gelu", "silu", "gelu_tanh", NULL};
static const char *const feed_forward_names[] = {"plain", "gated", NULL};
static const char *const norm_names[] = {"layer", "rms", NULL};
static const char *const tensor_names_names[] = {"tutorial", "marian", NULL};
static const char *const projection_names[] = {"packed", "separate", NULL};
static const char *const positional_names[] = {"interleaved", "concatenated", "fairseq",
                                                "learned", "relative", "marian", NULL};
static const char *const decoder_layer_names[] = {"self-attention", "ssru", NULL};
static const char *const tokenizer_names[] = {"whitespace", "char", "sentencepiece", "bpe",
                                               NULL};
static const char *const normalizer_names[] = {"none", "moses", NULL};
static const char *const language_names[] = {"none", "en", "de", "es", "fr", "cs", "cz", NULL};
static const char *const length_normalization_names[] = {"gnmt", "power", NULL};
static const char *const source_code_names[] = {"none", "first", "last", NULL};
static const char *const target_code_names[] = {"none", "forced", "source", NULL};
static const char *const early_stopping_names[] = {"false", "true", "never", "marian",
                                                     NULL};

/* The size of a field, and the offset of one the table reads and writes as
 * int (ints, and the enums of words): a field of another size does not
 * compile. */
#define FIELD_SIZE(field) sizeof(((ted_config *)0)->field)
#define INT_FIELD(field) \
    (offsetof(ted_config, field) + 0 * sizeof(char[FIELD_SIZE(field) == sizeof(int) ? 1 : -1]))

#define SECTION(key, is_required) {.name = key, .type = VALUE_SECTION, .required = is_required}
#define REQUIRED_INT(sec, key, field, low, high) \
    {.section = sec, .name = key, .type = VALUE_INT, .required = true, \
     .offset = INT_FIELD(field), .min = low, .max = high}
#define INT(sec, key, field, low, high, value) \
    {.section = sec, .name = key, .type = VALUE_INT, .offset = INT_FIELD(field), .min = low, \
     .max = high, .fallback = value}
#define BOOL(sec, key, field, value) \
    {.section = sec, .name = key, .type = VALUE_BOOL, .offset = offsetof(ted_config, field), \
     .fallback = value}
#define FLOAT_IN(sec, key, field, low, high, value) \
    {.section = sec, .name = key, .type = VALUE_FLOAT, .offset = offsetof(ted_config, field), \
     .min = low, .max = high, .fallback = value}
#define FLOAT(sec, key, field, value) FLOAT_IN(sec, key, field, 1, 0, value)
#define PATH(sec, key, field) \
    {.section = sec, .name = key, .type = VALUE_PATH, .required = true, \
     .offset = offsetof(ted_config, field)}
#define OPTIONAL_PATH(sec, key, field) \
    {.section = sec, .name = key, .type = VALUE_PATH, .offset = offsetof(ted_config, field)}
#define CHOICE(sec, key, field, names, value) \
    {.section = sec, .name = key, .type = VALUE_WORD, .offset = INT_FIELD(field), \
     .choices = names, .fallback = value}
#define INT_LIST(sec, key, field, count_field, low, high) \
    {.section = sec, .name = key, .type = VALUE_INT_LIST, .offset = INT_FIELD(field[0]), \
     .min = low, .max = high, .count_offset = INT_FIELD(count_field), \
     .capacity = (int)(FIELD_SIZE(field) / sizeof(int))}
#define CODE(sec, key, field) \
    {.section = sec, .name = key, .type = VALUE_CODE, .offset = offsetof(ted_config, field), \
     .capacity = (int)FIELD_SIZE(field)}
#define CODE_LIST(sec, key, field, count_field) \
    {.section = sec, .name = key, .type = VALUE_CODE_LIST, \
     .offset = offsetof(ted_config, field), .count_offset = INT_FIELD(count_field), \
     .capacity = (int)FIELD_SIZE(field)}
#define SERVED_LIST(sec, key, field, count_field) \
    {.section = sec, .name = key, .type = VALUE_SERVED_LIST, \
     .offset = offsetof(ted_config, field), .count_offset = INT_FIELD(count_field), \
     .capacity = (int)FIELD_SIZE(field)}

/* Every key of config.yaml, in the order ted_config_write_yaml writes them
 * (docs/model-format.md has a row for each). The bounds refuse absurd sizes
 * before any buffer is sized from them. */
static const key_spec keys[] = {
    SECTION("model", true),
    REQUIRED_INT("model", "d_model", d_model, 2, 65536),
    REQUIRED_INT("model", "heads", heads, 1, 1024),
    INT("model", "head_size", head_size, 0, 65536, 0),
    REQUIRED_INT("model", "encoder_layers", encoder_layers, 1, 256),
    REQUIRED_INT("model", "decoder_layers", decoder_layers, 1, 256),
    REQUIRED_INT("model", "d_ff", d_ff, 1, 1048576),
    REQUIRED_INT("model", "src_vocab_size", src_vocab_size, 4, 16777216),
    REQUIRED_INT("model", "tgt_vocab_size", tgt_vocab_size, 4, 16777216),
    CHOICE("model", "activation", activation, activation_names, TED_ACTIVATION_RELU),
    CHOICE("model", "feed_forward", feed_forward, feed_forward_names, TED_FEED_FORWARD_PLAIN),
    BOOL("model", "linear_bias", linear_bias, true),
    BOOL("model", "scale_attention", scale_attention, true),
    CHOICE("model", "norm", norm, norm_names, TED_NORM_LAYER),
    BOOL("model", "norm_first", norm_first, false),
    FLOAT("model", "layer_norm_eps", layer_norm_eps, 1e-5),
    INT("model", "max_positions", max_positions, 1, 1048576, 5000),
    BOOL("model", "scale_embedding", scale_embedding, true),
    CHOICE("model", "positional_encoding", positional_layout, positional_names,
           TED_POSITIONS_INTERLEAVED),
    INT("model", "position_offset", position_offset, 0, 1024, 0),
    INT("model", "relative_buckets", relative_buckets, 4, 1024, 32),
    INT("model", "relative_max_distance", relative_max_distance, 1, 1048576, 128),
    BOOL("model", "embedding_norm", embedding_norm, false),
    BOOL("model", "encoder_final_norm", encoder_final_norm, true),
    BOOL("model", "decoder_final_norm", decoder_final_norm, true),
    CHOICE("model", "tensor_names", tensor_names, tensor_names_names, TED_NAMES_TUTORIAL),
    CHOICE("model", "attention_projection", attention_projection, projection_names,
           TED_PROJECTION_PACKED),
    BOOL("model", "shared_embeddings", shared_embeddings, false),
    BOOL("model", "tied_output", tied_output, false),
    BOOL("model", "output_bias", output_bias, true),
    BOOL("model", "scale_output", scale_output, false),
    CHOICE("model", "decoder_layer", decoder_layer, decoder_layer_names,
           TED_DECODER_LAYER_ATTENTION),
    BOOL("model", "zero_start_embedding", zero_start_embedding, false),
    PATH(NULL, "weights", weights),
    SECTION("tokenizer", true),
    CHOICE("tokenizer", "type", tokenizer, tokenizer_names, TED_TOKENIZER_WHITESPACE),
    BOOL("tokenizer", "lowercase", lowercase, false),
    CHOICE("tokenizer", "normalize", normalize, normalizer_names, TED_NORMALIZE_NONE),
    CHOICE("tokenizer", "source_language", source_language, language_names, TED_LANGUAGE_NONE),
    PATH("tokenizer", "src_vocab", src_vocab),
    PATH("tokenizer", "tgt_vocab", tgt_vocab),
    OPTIONAL_PATH("tokenizer", "src_spm", src_spm),
    OPTIONAL_PATH("tokenizer", "tgt_spm", tgt_spm),
    OPTIONAL_PATH("tokenizer", "merges", merges),
    BOOL("tokenizer", "add_prefix_space", add_prefix_space, false),
    BOOL("tokenizer", "clean_up_text", clean_up_text, true),
    INT("tokenizer", "unk_id", unk_id, 0, INT_MAX, 0),
    INT("tokenizer", "pad_id", pad_id, 0, INT_MAX, 1),
    INT("tokenizer", "bos_id", bos_id, 0, INT_MAX, 2),
    INT("tokenizer", "eos_id", eos_id, 0, INT_MAX, 3),
    BOOL("tokenizer", "source_bos", source_bos, true),
    BOOL("tokenizer", "source_eos", source_eos, true),
    CODE_LIST("tokenizer", "languages", languages, language_count),
    CHOICE("tokenizer", "source_language_token", source_language_token, source_code_names,
           TED_SOURCE_CODE_NONE),
    CHOICE("tokenizer", "target_language_token", target_language_token, target_code_names,
           TED_TARGET_CODE_NONE),
    /* -1 is no value a file gives: the default, bos_id (derive_sizes) */
    INT("tokenizer", "decoder_start_id", decoder_start_id, 0, INT_MAX, -1),
    INT("tokenizer", "forced_bos_id", forced_bos_id, -1, INT_MAX, -1),
    CODE("tokenizer", "source_lang", source_lang),
    CODE("tokenizer", "target_lang", target_lang),
    CODE("tokenizer", "default_target_lang", default_target_lang),
    SECTION("decoding", false),
    /* no decode outlives max_positions, whose bound these share */
    INT("decoding", "max_length", max_length, 0, 1048576, 0),
    INT("decoding", "max_length_offset", max_length_offset, 0, 1048576, 0),
    FLOAT_IN("decoding", "max_length_factor", max_length_factor, 0, 0, 0),
    INT("decoding", "beam_size", beam_size, 1, 1024, 1),
    FLOAT_IN("decoding", "length_penalty", length_penalty, 0, 0, 0.6),
    CHOICE("decoding", "length_normalization", length_normalization,
           length_normalization_names, TED_LENGTH_GNMT),
    CHOICE("decoding", "early_stopping", early_stopping, early_stopping_names,
           TED_EARLY_STOPPING_FALSE),
    BOOL("decoding", "forced_eos", forced_eos, false),
    INT_LIST("decoding", "banned_ids", banned_ids, banned_id_count, 0, INT_MAX),
    OPTIONAL_PATH("decoding", "shortlist", shortlist),
    BOOL("decoding", "sample", sample, false),
    FLOAT("decoding", "temperature", temperature, 1.0),
    INT("decoding", "top_k", top_k, 0, 16777216, 0),
    FLOAT_IN("decoding", "top_p", top_p, 1, 1, 1.0),
    FLOAT_IN("decoding", "repetition_penalty", repetition_penalty, 0, 0, 1.0),
    INT("decoding", "no_repeat_ngram_size", no_repeat_ngram_size, 0, 1048576, 0),
    INT("decoding", "encoder_no_repeat_ngram_size", encoder_no_repeat_ngram_size, 0, 1048576, 0),
    INT("decoding", "min_length", min_length, 0, 1048576, 0),
    /* after tokenizer.languages, which spec_named("languages") finds */
    SERVED_LIST(NULL, "languages", served_languages, served_language_count),
};

#define KEY_COUNT (sizeof keys / sizeof keys[0])

/* Where explicitly tagged scalars start ("!!str 4"): one bit per character
 * of the text, NULL when none is. libyaml's document tree gives "4" and
 * "!!str 4" the same tag, so the tags are noted from its events. */
typedef unsigned char tag_marks;

typedef struct reader {
    yaml_document_t *document;
    const char *name;   /* the file, in messages */
    const tag_marks *tagged;
    ted_config config;
    int line[KEY_COUNT];  /* where each key was seen (1-based), 0 = not seen */
    ted_error *err;
} reader;

static void *field_of(ted_config *c, const key_spec *spec) { return (char *)c + spec->offset; }

static const void *value_of(const ted_config *c, const key_spec *spec)
{
    return (const char *)c + spec->offset;
}

/* Every optional key at its default; required ones 0, paths and lists empty. */
static ted_config default_config(void)
{
    ted_config c;
    memset(&c, 0, sizeof c);
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const key_spec *spec = &keys[i];
        if (spec->type == VALUE_INT || spec->type == VALUE_WORD)
            *(int *)field_of(&c, spec) = (int)spec->fallback;
        else if (spec->type == VALUE_BOOL)
            *(bool *)field_of(&c, spec) = spec->fallback != 0;
        else if (spec->type == VALUE_FLOAT)
            *(float *)field_of(&c, spec) = (float)spec->fallback;
    }
    return c;
}

static int node_line(const yaml_node_t *node) { return (int)node->start_mark.line + 1; }

static int key_index(const key_spec *spec) { return (int)(spec - keys); }

/* A key's dotted name: "model.heads", "weights", "model". */
typedef struct dotted_name {
    char text[64];
} dotted_name;

static dotted_name dotted(const key_spec *spec)
{
    dotted_name out;
    snprintf(out.text, sizeof out.text, "%s%s%s", spec->section ? spec->section : "",
             spec->section ? "." : "", spec->name);
    return out;
}

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
    return ted_fail(r->err, TED_ERR_CONFIG, "%s:%d: %s: %s", r->name, line, dotted(spec).text,
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

static bool is_null(const yaml_node_t *node)
{
    return node->type == YAML_SCALAR_NODE && is_plain(node) &&
           (node->data.scalar.length == 0 || scalar_is(node, "~") || scalar_is(node, "null"));
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

/* What a scalar of each type is, and the one tag it may carry explicitly. */
static const struct {
    const char *tag;
    const char *what;
} scalar_types[] = {
    [VALUE_INT] = {YAML_INT_TAG, "an integer"},
    [VALUE_BOOL] = {YAML_BOOL_TAG, "true or false"},
    [VALUE_FLOAT] = {YAML_FLOAT_TAG, "a number"},
    [VALUE_PATH] = {YAML_STR_TAG, "a path"},
    [VALUE_WORD] = {YAML_STR_TAG, "a word"},
    [VALUE_CODE] = {YAML_STR_TAG, "a language code"},
};

static bool has_explicit_tag(const reader *r, const yaml_node_t *node)
{
    size_t at = node->start_mark.index;
    return r->tagged && (r->tagged[at / 8] >> (at % 8) & 1);
}

/* An explicit tag must be that of the type the key expects: "!!str 4" is a
 * string, as "4" is, and no integer. */
static ted_status check_tag(reader *r, const key_spec *spec, const yaml_node_t *node,
                            value_type type)
{
    const char *tag = (const char *)node->tag;
    if (!tag || !has_explicit_tag(r, node) || strcmp(tag, scalar_types[type].tag) == 0)
        return TED_OK;
    static const char yaml_prefix[] = "tag:yaml.org,2002:";
    bool standard = strncmp(tag, yaml_prefix, sizeof yaml_prefix - 1) == 0;
    return key_error(r, spec, node_line(node), "expected %s, got \"%s\" tagged %s%.40s",
                     scalar_types[type].what, shown(node).text, standard ? "!!" : "",
                     standard ? tag + sizeof yaml_prefix - 1 : tag);
}

static ted_status read_int(reader *r, const key_spec *spec, const yaml_node_t *node, int *out)
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
    *out = (int)value;
    return TED_OK;
}

static ted_status read_bool(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    bool value = scalar_is(node, "true");
    if (!is_plain(node) || (!value && !scalar_is(node, "false")))
        return key_error(r, spec, node_line(node), "expected true or false, got \"%s\"",
                         shown(node).text);
    *(bool *)field_of(&r->config, spec) = value;
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
    *(float *)field_of(&r->config, spec) = single == 0.0f ? 0.0f : single;
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
    char *field = field_of(&r->config, spec);
    memcpy(field, s, n);
    field[n] = '\0';
    return TED_OK;
}

static ted_status read_choice(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    char allowed[128] = "";
    for (int i = 0; spec->choices[i]; i++) {
        if (scalar_is(node, spec->choices[i])) {
            *(int *)field_of(&r->config, spec) = i;
            return TED_OK;
        }
        if (i > 0)
            strcat(allowed, ", ");
        strcat(allowed, spec->choices[i]);  /* the lists above fit */
    }
    return key_error(r, spec, node_line(node), "\"%s\" is not one of %s", shown(node).text,
                     allowed);
}

/* A list of ints, flow ([1, 2]) or block ("- 1" lines); a list left empty
 * ("banned_ids:" with every line commented out) has none. */
static ted_status read_int_list(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    int *count = (int *)((char *)&r->config + spec->count_offset);
    if (is_null(node)) {
        *count = 0;
        return TED_OK;
    }
    if (node->type == YAML_SCALAR_NODE)
        return key_error(r, spec, node_line(node), "expected a list of integers, got \"%s\"",
                         shown(node).text);
    if (node->type == YAML_MAPPING_NODE)
        return key_error(r, spec, node_line(node), "expected a list of integers, got a mapping");
    yaml_node_item_t *items = node->data.sequence.items.start;
    ptrdiff_t n = node->data.sequence.items.top - items;
    if (n > spec->capacity)
        return key_error(r, spec, node_line(node), "at most %d values are allowed, got %td",
                         spec->capacity, n);
    int *values = field_of(&r->config, spec);
    for (ptrdiff_t i = 0; i < n; i++) {
        const yaml_node_t *item = yaml_document_get_node(r->document, items[i]);
        ted_status status = item->type == YAML_SCALAR_NODE
                                ? check_tag(r, spec, item, VALUE_INT)
                                : key_error(r, spec, node_line(item),
                                            "expected an integer, got %s", node_kind(item));
        if (status == TED_OK)
            status = read_int(r, spec, item, &values[i]);
        if (status != TED_OK)
            return status;
    }
    *count = (int)n;
    return TED_OK;
}

/* A language code is one token of a vocabulary: no spaces, no control
 * characters, shorter than its field. */
static const char *code_problem(const char *s, size_t n, int capacity)
{
    if (n == 0)
        return "a language code must not be empty";
    if (n >= (size_t)capacity)
        return "the language code is too long";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return "a language code holds no spaces or control characters";
    return NULL;
}

static ted_status read_code(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    const char *s = (const char *)node->data.scalar.value;
    size_t n = node->data.scalar.length;
    const char *problem = code_problem(s, n, TED_LANGUAGE_CODE_SIZE);
    if (problem)
        return key_error(r, spec, node_line(node), "\"%s\": %s", shown(node).text, problem);
    char *field = field_of(&r->config, spec);
    memcpy(field, s, n);
    field[n] = '\0';
    return TED_OK;
}

/* The index of `code` among the `count` codes packed at `codes`, or -1. */
static int find_code(const char *codes, int count, const char *code, size_t n)
{
    for (int i = 0; i < count; codes += strlen(codes) + 1, i++)
        if (strlen(codes) == n && memcmp(codes, code, n) == 0)
            return i;
    return -1;
}

/* An item of the top-level `languages`, "code" or "source > target" with
 * any spaces around ">", as "source > target". */
typedef struct served_text {
    char text[2 * TED_LANGUAGE_CODE_SIZE + 4];
} served_text;

static const char *served_item(const char *s, size_t n, served_text *out)
{
    const char *word[4];
    size_t length[4];
    int words = 0;
    for (size_t i = 0; i < n && words < 4;) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t start = i;
        while (i < n && s[i] != ' ' && s[i] != '\t')
            i++;
        if (i > start) {
            word[words] = s + start;
            length[words++] = i - start;
        }
    }
    if (words == 1 || (words == 3 && length[1] == 1 && word[1][0] == '>')) {
        const char *problem = code_problem(word[0], length[0], TED_LANGUAGE_CODE_SIZE);
        if (!problem && words == 3)
            problem = code_problem(word[2], length[2], TED_LANGUAGE_CODE_SIZE);
        if (problem)
            return problem;
        if (words == 3 && length[0] == length[2] && !memcmp(word[0], word[2], length[0]))
            return "a direction goes from one language into another";
        snprintf(out->text, sizeof out->text, "%.*s%s%.*s", (int)length[0], word[0],
                 words == 3 ? " > " : "", words == 3 ? (int)length[2] : 0,
                 words == 3 ? word[2] : "");
        return NULL;
    }
    return "expected a language code or a direction, \"SOURCE > TARGET\"";
}

/* One code of a list, appended at `field + *used`. */
static ted_status read_list_code(reader *r, const key_spec *spec, const yaml_node_t *item,
                                 int index, size_t *used)
{
    if (item->type != YAML_SCALAR_NODE)
        return key_error(r, spec, node_line(item), "expected a language code, got %s",
                         node_kind(item));
    ted_status status = check_tag(r, spec, item, VALUE_CODE);
    const char *s = (const char *)item->data.scalar.value;
    size_t n = item->data.scalar.length;
    served_text canonical;
    const char *problem = spec->type == VALUE_SERVED_LIST ? served_item(s, n, &canonical)
                                                          : code_problem(s, n,
                                                                         TED_LANGUAGE_CODE_SIZE);
    if (spec->type == VALUE_SERVED_LIST && !problem) {
        s = canonical.text;
        n = strlen(canonical.text);
    }
    if (status == TED_OK && problem)
        status = key_error(r, spec, node_line(item), "\"%s\": %s", shown(item).text, problem);
    if (status != TED_OK)
        return status;
    char *field = field_of(&r->config, spec);
    if (find_code(field, index, s, n) >= 0)
        return key_error(r, spec, node_line(item), "\"%s\" is listed twice", shown(item).text);
    if (*used + n + 1 > (size_t)spec->capacity)
        return key_error(r, spec, node_line(item), "the codes take more than %d bytes",
                         spec->capacity);
    memcpy(field + *used, s, n);
    field[*used + n] = '\0';
    *used += n + 1;
    return TED_OK;
}

/* A list of distinct language codes, flow or block; empty: none. */
static ted_status read_code_list(reader *r, const key_spec *spec, const yaml_node_t *node)
{
    int *count = (int *)((char *)&r->config + spec->count_offset);
    *count = 0;
    if (is_null(node))
        return TED_OK;
    if (node->type == YAML_SCALAR_NODE)
        return key_error(r, spec, node_line(node), "expected a list of language codes, got \"%s\"",
                         shown(node).text);
    if (node->type == YAML_MAPPING_NODE)
        return key_error(r, spec, node_line(node),
                         "expected a list of language codes, got a mapping");
    yaml_node_item_t *items = node->data.sequence.items.start;
    ptrdiff_t n = node->data.sequence.items.top - items;
    size_t used = 0;
    for (ptrdiff_t i = 0; i < n; i++) {
        const yaml_node_t *item = yaml_document_get_node(r->document, items[i]);
        ted_status status = read_list_code(r, spec, item, (int)i, &used);
        if (status != TED_OK)
            return status;
        *count = (int)i + 1;
    }
    return TED_OK;
}

static ted_status read_section(reader *r, const char *section, yaml_node_t *mapping, int line);

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
    if (spec->type == VALUE_SECTION)
        return read_section_value(r, spec, node);
    if (spec->type == VALUE_INT_LIST)
        return read_int_list(r, spec, node);
    if (spec->type == VALUE_CODE_LIST || spec->type == VALUE_SERVED_LIST)
        return read_code_list(r, spec, node);
    if (node->type != YAML_SCALAR_NODE)
        return key_error(r, spec, node_line(node), "expected a single value, got %s",
                         node_kind(node));
    ted_status status = check_tag(r, spec, node, spec->type);
    if (status != TED_OK)
        return status;
    switch (spec->type) {
    case VALUE_INT: return read_int(r, spec, node, field_of(&r->config, spec));
    case VALUE_BOOL: return read_bool(r, spec, node);
    case VALUE_FLOAT: return read_float(r, spec, node);
    case VALUE_PATH: return read_path(r, spec, node);
    case VALUE_CODE: return read_code(r, spec, node);
    default: break;
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

/* key_error() at the line of the key named `key`. */
static ted_status named_key_error(reader *r, const char *key, const char *format, ...)
{
    char what[TED_ERROR_MESSAGE_SIZE];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof what, format, args);
    va_end(args);
    const key_spec *spec = spec_named(key);
    return key_error(r, spec, line_of(r, spec), "%s", what);
}

static ted_status check_shape(reader *r)
{
    const ted_config *c = &r->config;
    if (c->d_model % 2 != 0) {
        return named_key_error(r, "d_model",
                               "%d is odd; the sinusoidal positional encoding pairs each sine "
                               "with a cosine", c->d_model);
    }
    if (c->head_size == 0 && c->d_model % c->heads != 0) {
        return named_key_error(r, "heads", "%d does not divide d_model %d", c->heads,
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
            /* the decoder may start from padding; a decoder that starts from a zero
             * vector has no start token, and pads with EOS (Marian: </s> 0) */
            bool shared = (i == 2 && j == 1) || (i == 3 && j >= 1 && c->zero_start_embedding);
            if (ids[i] != ids[j] || shared)
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
    if (c->tokenizer == TED_TOKENIZER_BPE && !r->line[key_index(spec_named("merges"))])
        return key_error(r, spec_named("merges"), line_of(r, spec_named("type")),
                         "missing; the bpe tokenizer needs its merges file");
    if (c->shared_embeddings && c->src_vocab_size != c->tgt_vocab_size) {
        return named_key_error(r, "shared_embeddings",
                               "true, but src_vocab_size %d and tgt_vocab_size %d differ",
                               c->src_vocab_size, c->tgt_vocab_size);
    }
    if (c->shared_embeddings && c->tensor_names == TED_NAMES_TUTORIAL) {
        return named_key_error(r, "shared_embeddings",
                               "true, but tensor_names tutorial has no shared embedding tensor");
    }
    return TED_OK;
}

/* What the positional encoding needs of others: the fairseq frequencies
 * divide by d_model/2 - 1; learned tables, relative bias tables, the
 * embedding norm and the gated network's second Linear are tensors only
 * the marian naming scheme names. */
static ted_status check_positions(reader *r)
{
    const ted_config *c = &r->config;
    if ((c->positional_layout == TED_POSITIONS_FAIRSEQ ||
         c->positional_layout == TED_POSITIONS_MARIAN) && c->d_model < 4) {
        return named_key_error(r, "positional_encoding",
                               "fairseq and marian need d_model >= 4 (its frequencies divide by d_model/2 - 1)");
    }
    if (c->positional_layout == TED_POSITIONS_RELATIVE &&
        c->relative_max_distance <= c->relative_buckets / 2) {
        return named_key_error(r, "relative_max_distance",
                               "%d is not above relative_buckets / 2 (%d), where the buckets of "
                               "exact distances end", c->relative_max_distance,
                               c->relative_buckets / 2);
    }
    if (c->tensor_names != TED_NAMES_TUTORIAL)
        return TED_OK;
    if (c->positional_layout == TED_POSITIONS_LEARNED) {
        return named_key_error(r, "positional_encoding",
                               "learned, but tensor_names tutorial has no positional tables");
    }
    if (c->embedding_norm) {
        return named_key_error(r, "embedding_norm",
                               "true, but tensor_names tutorial has no embedding LayerNorm");
    }
    if (c->positional_layout == TED_POSITIONS_RELATIVE) {
        return named_key_error(r, "positional_encoding",
                               "relative, but tensor_names tutorial has no relative bias tables");
    }
    if (c->feed_forward == TED_FEED_FORWARD_GATED) {
        return named_key_error(r, "feed_forward",
                               "gated, but tensor_names tutorial has no second input Linear");
    }
    if (c->decoder_layer == TED_DECODER_LAYER_SSRU) {
        return named_key_error(r, "decoder_layer",
                               "ssru, but tensor_names tutorial has no SSRU weights");
    }
    return TED_OK;
}

/* Sampling and beam search exclude each other; a beam needs more
 * candidates than it keeps; a banned id must be a target token. */
static ted_status check_decoding(reader *r)
{
    const ted_config *c = &r->config;
    if (c->sample && c->beam_size > 1) {
        return named_key_error(r, "sample",
                               "true with beam_size %d; sampling and beam search exclude each other",
                               c->beam_size);
    }
    if (c->beam_size >= c->tgt_vocab_size) {
        return named_key_error(r, "beam_size", "%d is not below tgt_vocab_size %d",
                               c->beam_size, c->tgt_vocab_size);
    }
    for (int i = 0; i < c->banned_id_count; i++) {
        if (c->banned_ids[i] >= c->tgt_vocab_size) {
            return named_key_error(r, "banned_ids", "%d is not below tgt_vocab_size %d",
                                   c->banned_ids[i], c->tgt_vocab_size);
        }
    }
    return TED_OK;
}

/* A default target language is one of the codes forced as the first
 * target token. */
static ted_status check_default_target(reader *r)
{
    const ted_config *c = &r->config;
    const key_spec *spec = spec_named("default_target_lang");
    if (!c->default_target_lang[0])
        return TED_OK;
    if (c->target_language_token != TED_TARGET_CODE_FORCED)
        return key_error(r, spec, line_of(r, spec), "\"%s\", but target_language_token is "
                         "not forced", c->default_target_lang);
    const char *code = c->languages;
    for (int i = 0; i < c->language_count; i++, code += strlen(code) + 1)
        if (strcmp(code, c->default_target_lang) == 0)
            return TED_OK;
    return key_error(r, spec, line_of(r, spec), "\"%s\" is not a code of tokenizer.languages",
                     c->default_target_lang);
}

/* A code token's place needs codes, and codes need a place; the decoder
 * starts from a target token. Whether each code is a token of the vocabulary is the
 * model loader's check. */
static ted_status check_languages(reader *r)
{
    const ted_config *c = &r->config;
    bool source = c->source_language_token != TED_SOURCE_CODE_NONE;
    bool target = c->target_language_token != TED_TARGET_CODE_NONE;
    const key_spec *place = spec_named(source ? "source_language_token" : "target_language_token");
    const key_spec *languages = spec_named("languages");
    if ((source || target) && c->language_count == 0)
        return key_error(r, place, line_of(r, place), "%s, but tokenizer.languages names no codes",
                         source ? source_code_names[c->source_language_token]
                                : target_code_names[c->target_language_token]);
    if (!source && !target && c->language_count > 0)
        return key_error(r, languages, line_of(r, languages),
                         "%d codes, but source_language_token and target_language_token are "
                         "none: no token of the text names a language", c->language_count);
    ted_status s = check_default_target(r);
    if (s != TED_OK)
        return s;
    const key_spec *start = spec_named("decoder_start_id");
    if (c->decoder_start_id >= c->tgt_vocab_size)
        return key_error(r, start, line_of(r, start), "%d is not below tgt_vocab_size %d",
                         c->decoder_start_id, c->tgt_vocab_size);
    const key_spec *forced = spec_named("forced_bos_id");
    if (c->forced_bos_id >= c->tgt_vocab_size)
        return key_error(r, forced, line_of(r, forced), "%d is not below tgt_vocab_size %d",
                         c->forced_bos_id, c->tgt_vocab_size);
    if (c->forced_bos_id >= 0 && target)
        return key_error(r, forced, line_of(r, forced),
                         "%d, but target_language_token forces the target's code there",
                         c->forced_bos_id);
    return TED_OK;
}

/* Whether `code` (n bytes) names a language of the model: a code of
 * tokenizer.languages, or its source_lang or target_lang. */
static bool names_language(const ted_config *c, const char *code, size_t n)
{
    if (find_code(c->languages, c->language_count, code, n) >= 0)
        return true;
    return (strlen(c->source_lang) == n && !memcmp(c->source_lang, code, n)) ||
           (strlen(c->target_lang) == n && !memcmp(c->target_lang, code, n));
}

/* The top-level `languages` names languages of the model, and serves
 * default_target_lang as a target. */
static ted_status check_served(reader *r)
{
    const ted_config *c = &r->config;
    const key_spec *spec = &keys[KEY_COUNT - 1];
    int line = r->line[key_index(spec)];
    if (!line)
        return TED_OK;
    if (c->served_language_count == 0)
        return key_error(r, spec, line, "names no language; without the key the model "
                         "translates between every code of tokenizer.languages");
    bool default_served = !c->default_target_lang[0];
    const char *item = c->served_languages;
    for (int i = 0; i < c->served_language_count; i++, item += strlen(item) + 1) {
        size_t first = strcspn(item, " ");
        const char *target = item[first] ? item + first + 3 : item;
        size_t target_length = item[first] ? strlen(target) : first;
        const char *bad = !names_language(c, item, first) ? item
                          : !names_language(c, target, target_length) ? target : NULL;
        if (bad)
            return key_error(r, spec, line, "\"%.*s\" is no code of tokenizer.languages, nor "
                             "source_lang or target_lang", (int)strcspn(bad, " "), bad);
        if (target_length == strlen(c->default_target_lang) &&
            !memcmp(target, c->default_target_lang, target_length))
            default_served = true;
    }
    if (!default_served)
        return named_key_error(r, "default_target_lang", "\"%s\" is no target of the "
                               "top-level languages", c->default_target_lang);
    return TED_OK;
}

/* The sizes no key sets, once check_shape has passed: Query Size, the
 * width of one head (head_size, else d_model / heads, which heads divides
 * then); and the decoder start a file leaves out, bos_id. */
static void derive_sizes(ted_config *c)
{
    c->query_size = c->head_size ? c->head_size : c->d_model / c->heads;
    if (c->decoder_start_id < 0)
        c->decoder_start_id = c->bos_id;
}

static ted_status read_document(reader *r)
{
    yaml_node_t *root = yaml_document_get_root_node(r->document);
    if (!root)
        return ted_fail(r->err, TED_ERR_CONFIG, "%s:1: empty document", r->name);
    if (root->type != YAML_MAPPING_NODE)
        return ted_fail(r->err, TED_ERR_CONFIG, "%s:%d: the top level must be a mapping of keys",
                        r->name, node_line(root));
    /* what the keys must be of each other, in this order */
    static ted_status (*const checks[])(reader *) = {
        check_shape,         check_special_ids, check_decoding,
        check_model_variant, check_positions,   check_languages,
        check_served,
    };
    ted_status status = read_section(r, NULL, root, 1);
    for (size_t i = 0; status == TED_OK && i < sizeof checks / sizeof checks[0]; i++)
        status = checks[i](r);
    if (status == TED_OK)
        derive_sizes(&r->config);
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

/* Notes where a scalar with an explicit tag starts; false when out of
 * memory. */
static bool note_tag(const yaml_event_t *event, size_t length, tag_marks **tagged)
{
    size_t at = event->start_mark.index;
    if (event->type != YAML_SCALAR_EVENT || !event->data.scalar.tag || at > length)
        return true;
    if (!*tagged && !(*tagged = calloc(length / 8 + 1, 1)))
        return false;
    (*tagged)[at / 8] |= (tag_marks)(1u << (at % 8));
    return true;
}

/* One document, nested at most CONFIG_MAX_DEPTH deep. libyaml's scanner
 * slows down with the square of the nesting depth (a megabyte of "[" takes
 * minutes), so this pass over the events, which stops at the first
 * collection nested too deep, comes before the document is built. It also
 * notes the explicit tags in `*tagged` (NULL when there are none; the
 * caller frees it). */
static ted_status check_stream(const char *text, size_t length, const char *name,
                               tag_marks **tagged, ted_error *err)
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
        bool noted = note_tag(&event, length, tagged);
        yaml_event_delete(&event);
        if (!noted)
            status = ted_fail(err, TED_ERR_NOMEM, "%s: out of memory while parsing YAML", name);
        else if (documents > 1)
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
    tag_marks *tagged = NULL;
    ted_status status = check_stream(text, length, name, &tagged, err);
    yaml_parser_t parser;
    if (status == TED_OK && !start_parser(&parser, text, length))
        status = ted_fail(err, TED_ERR_NOMEM, "%s: cannot start the YAML parser", name);
    if (status != TED_OK) {
        free(tagged);
        return status;
    }
    yaml_document_t document;
    reader r = {.document = &document, .name = name, .tagged = tagged,
                .config = default_config(), .err = err};
    if (yaml_parser_load(&parser, &document)) {
        status = read_document(&r);
        yaml_document_delete(&document);
    } else {
        status = syntax_error(&parser, text, length, name, err);
    }
    yaml_parser_delete(&parser);
    free(tagged);
    if (status == TED_OK)
        *config = r.config;
    return status;
}

static ted_status parse_config(const char *text, size_t length, const char *name, void *config,
                               ted_error *err)
{
    return ted_config_parse(text, length, name, config, err);
}

ted_status ted_config_load(const char *path, ted_config *config, ted_error *err)
{
    if (!path || !config)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_config_load: path and config are required");
    return ted_parse_file(path, CONFIG_MAX_BYTES, TED_ERR_CONFIG, "a config file", parse_config,
                          config, err);
}

/* ---- the keys, for tools and tests ----------------------------------------- */

int ted_config_key_count(void) { return (int)KEY_COUNT; }

ted_status ted_config_key_name(int index, char *name, size_t size, ted_error *err)
{
    if (index < 0 || index >= (int)KEY_COUNT || !name)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_config_key_name: no key %d (there are %d)",
                        index, (int)KEY_COUNT);
    dotted_name key = dotted(&keys[index]);
    if (strlen(key.text) >= size)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_config_key_name: %s needs %zu bytes",
                        key.text, strlen(key.text) + 1);
    strcpy(name, key.text);
    return TED_OK;
}

/* ---- visiting the keys ------------------------------------------------------ */

/* The word of `index` in the list of `key`, or NULL. */
static const char *word_of(const key_spec *key, int index)
{
    for (int i = 0; key->choices[i]; i++)
        if (i == index)
            return key->choices[i];
    return NULL;
}

/* The number of values of a list, as its count field says. */
static int list_count(const ted_config *c, const key_spec *key)
{
    return *(const int *)((const char *)c + key->count_offset);
}

/* An optional path or code left empty, a list of codes with none. */
static bool is_unset(const ted_config *c, const key_spec *key)
{
    if (key->type == VALUE_CODE_LIST || key->type == VALUE_SERVED_LIST)
        return list_count(c, key) <= 0;
    return (key->type == VALUE_PATH || key->type == VALUE_CODE) && !key->required &&
           *(const char *)value_of(c, key) == '\0';
}

void ted_config_visit(const ted_config *config, ted_config_visit_fn *fn, void *data)
{
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const key_spec *key = &keys[i];
        if (key->type == VALUE_SECTION || is_unset(config, key))
            continue;
        const void *value = value_of(config, key);
        int count = 1;
        if (key->type == VALUE_WORD) {
            value = word_of(key, *(const int *)value);
        } else if (key->type == VALUE_INT_LIST) {
            count = list_count(config, key);
            count = count < 0 ? 0 : count > key->capacity ? key->capacity : count;
        } else if (key->type == VALUE_CODE_LIST || key->type == VALUE_SERVED_LIST) {
            count = list_count(config, key);
        }
        value_type type = key->type == VALUE_SERVED_LIST ? VALUE_CODE_LIST : key->type;
        fn(data, key->section, key->name, (ted_value_type)type, value, count);
    }
}

const char *ted_config_word(const char *dotted_key, int value)
{
    for (size_t i = 0; dotted_key && i < KEY_COUNT; i++)
        if (keys[i].type == VALUE_WORD && strcmp(dotted(&keys[i]).text, dotted_key) == 0)
            return word_of(&keys[i], value);
    return NULL;
}

/* ---- ted_config -> YAML, a visit ------------------------------------------- */

typedef struct writer {
    yaml_emitter_t emitter;
    const char *section;  /* the section whose mapping is open; NULL: the top level's */
    ted_status status;    /* the first failure; no key after it is written */
    ted_error *err;
} writer;

/* Hands `event` to the emitter; `made` is what making it returned, and
 * `name` ("model.heads", "model", "the config") is named if it fails. */
static ted_status emit(writer *w, int made, yaml_event_t *event, const char *name)
{
    if (!made)
        return ted_fail(w->err, TED_ERR_ARGUMENT, "writing %s: not UTF-8 text, or out of memory",
                        name);
    if (yaml_emitter_emit(&w->emitter, event))
        return TED_OK;
    if (w->emitter.error == YAML_WRITER_ERROR)
        return ted_fail(w->err, TED_ERR_IO, "writing the config: %s", strerror(errno));
    if (w->emitter.error == YAML_MEMORY_ERROR)
        return ted_fail(w->err, TED_ERR_NOMEM, "writing %s: out of memory", name);
    return ted_fail(w->err, TED_ERR_ARGUMENT, "writing %s: %s", name,
                    w->emitter.problem ? w->emitter.problem : "YAML emitter error");
}

static ted_status emit_scalar(writer *w, const char *text, yaml_scalar_style_t style,
                              const char *name)
{
    yaml_event_t event;
    int made = yaml_scalar_event_initialize(&event, NULL, NULL, (yaml_char_t *)text,
                                            (int)strlen(text), 1, 1, style);
    return emit(w, made, &event, name);
}

/* Opens (`start`) or closes a flow list (`list`) or a block mapping. */
static ted_status emit_collection(writer *w, bool list, bool start, const char *name)
{
    yaml_event_t event;
    int made;
    if (list && start)
        made = yaml_sequence_start_event_initialize(&event, NULL, NULL, 1,
                                                    YAML_FLOW_SEQUENCE_STYLE);
    else if (list)
        made = yaml_sequence_end_event_initialize(&event);
    else if (start)
        made = yaml_mapping_start_event_initialize(&event, NULL, NULL, 1,
                                                   YAML_BLOCK_MAPPING_STYLE);
    else
        made = yaml_mapping_end_event_initialize(&event);
    return emit(w, made, &event, name);
}

void ted_config_format_float(float value, char *text, size_t size)
{
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(text, size, "%.*g", digits, (double)value);
        if ((float)strtod(text, NULL) == value)
            break;
    }
    if (!isfinite(value) || strchr(text, '.'))
        return;
    char *exponent = strchr(text, 'e');
    size_t at = exponent ? (size_t)(exponent - text) : strlen(text);
    if (strlen(text) + 3 > size)
        return;
    memmove(text + at + 2, text + at, strlen(text + at) + 1);
    memcpy(text + at, ".0", 2);
}

static ted_status emit_int(writer *w, int value, const char *name)
{
    char text[16];
    snprintf(text, sizeof text, "%d", value);
    return emit_scalar(w, text, YAML_PLAIN_SCALAR_STYLE, name);
}

/* `count` ints as a flow list: [1, 2]. */
static ted_status emit_int_list(writer *w, const int *values, int count, const char *name)
{
    ted_status status = emit_collection(w, true, true, name);
    for (int i = 0; i < count && status == TED_OK; i++)
        status = emit_int(w, values[i], name);
    return status == TED_OK ? emit_collection(w, true, false, name) : status;
}

/* `count` codes packed one after another as a flow list: [en_XX, fr_XX]. */
static ted_status emit_code_list(writer *w, const char *codes, int count, const char *name)
{
    ted_status status = emit_collection(w, true, true, name);
    for (int i = 0; i < count && status == TED_OK; codes += strlen(codes) + 1, i++)
        status = emit_scalar(w, codes, YAML_ANY_SCALAR_STYLE, name);
    return status == TED_OK ? emit_collection(w, true, false, name) : status;
}

static ted_status emit_value(writer *w, ted_value_type type, const void *value, int count,
                             const char *name)
{
    char text[32];
    switch (type) {
    case TED_VALUE_INT: return emit_int(w, *(const int *)value, name);
    case TED_VALUE_BOOL:
        return emit_scalar(w, *(const bool *)value ? "true" : "false", YAML_PLAIN_SCALAR_STYLE,
                           name);
    case TED_VALUE_FLOAT:
        ted_config_format_float(*(const float *)value, text, sizeof text);
        return emit_scalar(w, text, YAML_PLAIN_SCALAR_STYLE, name);
    case TED_VALUE_WORD: return emit_scalar(w, value, YAML_PLAIN_SCALAR_STYLE, name);
    case TED_VALUE_PATH:
    case TED_VALUE_CODE: return emit_scalar(w, value, YAML_ANY_SCALAR_STYLE, name);
    case TED_VALUE_CODE_LIST: return emit_code_list(w, value, count, name);
    case TED_VALUE_INT_LIST: break;
    }
    return emit_int_list(w, value, count, name);
}

/* Closes the mapping of the section open, if one is, and opens that of
 * `section` (NULL: back at the top level). */
static ted_status enter_section(writer *w, const char *section)
{
    ted_status status = TED_OK;
    if (w->section)
        status = emit_collection(w, false, false, w->section);
    if (status == TED_OK && section)
        status = emit_scalar(w, section, YAML_PLAIN_SCALAR_STYLE, section);
    if (status == TED_OK && section)
        status = emit_collection(w, false, true, section);
    w->section = section;
    return status;
}

static bool same_section(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The visit's function: a key and its value, in the mapping of its section
 * (the keys of a section come one after another). */
static void emit_key(void *data, const char *section, const char *key, ted_value_type type,
                     const void *value, int count)
{
    writer *w = data;
    char name[64];
    snprintf(name, sizeof name, "%s%s%s", section ? section : "", section ? "." : "", key);
    if (w->status == TED_OK && !same_section(section, w->section))
        w->status = enter_section(w, section);
    if (w->status == TED_OK)
        w->status = emit_scalar(w, key, YAML_PLAIN_SCALAR_STYLE, name);
    if (w->status == TED_OK)
        w->status = emit_value(w, type, value, count, name);
}

/* A code, or each of a list's codes, ends within its field. */
static bool codes_fit(const ted_config *c, const key_spec *key)
{
    if (key->type != VALUE_CODE && key->type != VALUE_CODE_LIST &&
        key->type != VALUE_SERVED_LIST)
        return true;
    const char *field = value_of(c, key);
    int count = key->type == VALUE_CODE ? 1 : list_count(c, key);
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        const char *end = at < (size_t)key->capacity
                              ? memchr(field + at, '\0', (size_t)key->capacity - at) : NULL;
        if (!end)
            return false;
        at = (size_t)(end - field) + 1;
    }
    return count >= 0;
}

/* What a visit cannot hand over whole: a word's enum out of its range, a
 * list's count beyond its field. */
static ted_status check_writable(const ted_config *c, ted_error *err)
{
    for (size_t i = 0; i < KEY_COUNT; i++) {
        const key_spec *key = &keys[i];
        int index = key->type == VALUE_WORD ? *(const int *)value_of(c, key) : 0;
        int count = key->type == VALUE_INT_LIST ? list_count(c, key) : 0;
        if (key->type == VALUE_WORD && !word_of(key, index))
            return ted_fail(err, TED_ERR_ARGUMENT, "writing %s: %d is not the index of a word",
                            dotted(key).text, index);
        if (count < 0 || count > key->capacity)
            return ted_fail(err, TED_ERR_ARGUMENT, "writing %s: %d values, at most %d fit",
                            dotted(key).text, count, key->capacity);
        if (!codes_fit(c, key))
            return ted_fail(err, TED_ERR_ARGUMENT, "writing %s: the codes overrun the field",
                            dotted(key).text);
    }
    return TED_OK;
}

/* The stream, its one document and the top-level mapping around the keys
 * the visit writes. */
static ted_status emit_document(writer *w, const ted_config *config)
{
    yaml_event_t event;
    const char *top = "the config";
    ted_status status =
        emit(w, yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING), &event, top);
    if (status == TED_OK)
        status = emit(w, yaml_document_start_event_initialize(&event, NULL, NULL, NULL, 1),
                      &event, top);
    if (status == TED_OK)
        status = emit_collection(w, false, true, top);
    if (status != TED_OK)
        return status;
    w->status = TED_OK;
    ted_config_visit(config, emit_key, w);
    status = w->status;
    if (status == TED_OK)
        status = enter_section(w, NULL);
    if (status == TED_OK)
        status = emit_collection(w, false, false, top);
    if (status == TED_OK)
        status = emit(w, yaml_document_end_event_initialize(&event, 1), &event, top);
    if (status == TED_OK)
        status = emit(w, yaml_stream_end_event_initialize(&event), &event, top);
    return status;
}

ted_status ted_config_write_yaml(FILE *out, const ted_config *config, ted_error *err)
{
    if (!out || !config)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_config_write_yaml: out and config are required");
    ted_status status = check_writable(config, err);
    if (status != TED_OK)
        return status;
    writer w = {.err = err};
    if (!yaml_emitter_initialize(&w.emitter))
        return ted_fail(err, TED_ERR_NOMEM, "writing the config: cannot start the YAML emitter");
    yaml_emitter_set_output_file(&w.emitter, out);
    yaml_emitter_set_unicode(&w.emitter, 1);
    yaml_emitter_set_indent(&w.emitter, 2);
    yaml_emitter_set_width(&w.emitter, -1);  /* no folding of long paths */
    status = emit_document(&w, config);
    yaml_emitter_delete(&w.emitter);
    if (status == TED_OK && (fflush(out) != 0 || ferror(out)))
        return ted_fail(err, TED_ERR_IO, "writing the config: %s", strerror(errno));
    return status;
}
