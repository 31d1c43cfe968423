/* config.yaml -> ted_config (libyaml). */
#ifndef TED_IO_CONFIG_H
#define TED_IO_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "ted/ted.h"

/* Reads and validates a config file (docs/model-format.md). Unknown keys,
 * duplicate keys, wrong types, impossible values and missing required keys
 * are TED_ERR_CONFIG errors naming the file, the line and the key
 * ("config.yaml:7: model.heads: 3 does not divide d_model 512"); a file that
 * cannot be read is TED_ERR_IO, one over 1 MiB TED_ERR_CONFIG. `*config` is
 * written only on success. Whether the files it names exist is left to the
 * model loader. */
ted_status ted_config_load(const char *path, ted_config *config, ted_error *err);

/* The same, from `length` bytes in memory (no NUL terminator needed);
 * `name` stands for the file in messages. */
ted_status ted_config_parse(const char *text, size_t length, const char *name,
                            ted_config *config, ted_error *err);

/* The types of the values ted_config_visit hands over, and what `value`
 * points to for each. */
typedef enum ted_value_type {
    TED_VALUE_INT,       /* const int * */
    TED_VALUE_BOOL,      /* const bool * */
    TED_VALUE_FLOAT,     /* const float * */
    TED_VALUE_WORD,      /* const char *: the word of the field's enum ("gelu"), NULL when
                          * the field holds no word's index */
    TED_VALUE_PATH,      /* const char *: a path relative to the model directory */
    TED_VALUE_INT_LIST,  /* const int *: the first of `count` ints */
    TED_VALUE_CODE,      /* const char *: a language code ("en") */
    TED_VALUE_CODE_LIST, /* const char *: `count` language codes, each NUL-terminated,
                          * one after another */
} ted_value_type;

/* One key of config.yaml and its value in a config: `section` is "model",
 * "tokenizer" or "decoding", NULL for a top-level key ("weights"); `key` is
 * the key's name in its section ("heads"); `count` is the number of values
 * of a list (0 to the field's capacity), 1 for every other type. */
typedef void ted_config_visit_fn(void *data, const char *section, const char *key,
                                 ted_value_type type, const void *value, int count);

/* Calls `fn` with `data` once for each key of config.yaml, in the order of
 * the reader's table: the keys of a section one after another, the
 * sections in the order config.yaml has them. An optional path left empty
 * (src_spm, tgt_spm) is skipped. */
void ted_config_visit(const ted_config *config, ted_config_visit_fn *fn, void *data);

/* The word config.yaml spells for `value` of the key named `dotted_key`
 * ("model.activation", 1 -> "gelu"); NULL when the key takes no word or
 * `value` is none of its words. */
const char *ted_config_word(const char *dotted_key, int value);

/* The shortest decimal text that reads back as `value`, with a point in its
 * mantissa as YAML 1.1 floats have (0.6, 1.0, 1.0e-05): how config.yaml
 * spells a float. 32 bytes of `text` hold any. */
void ted_config_format_float(float value, char *text, size_t size);

/* The keys config.yaml knows, in the table's order: ted_config_key_name
 * writes key `index` (0 to ted_config_key_count() - 1) dotted, "model" for a
 * section, "model.d_model" for a key in one, "weights" at the top level, to
 * `name` of `size` bytes (TED_ERR_ARGUMENT when it does not fit). */
int ted_config_key_count(void);
ted_status ted_config_key_name(int index, char *name, size_t size, ted_error *err);

#endif
