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

/* Writes `config` to `out` as config.yaml: every key of the reader's table
 * with its value (the defaults too), sections model, tokenizer and decoding
 * and the top-level weights, in the order docs/model-format.md lists them.
 * Optional paths left empty (src_spm, tgt_spm) are left out. What it writes
 * reads back as the same config. A failed write (`out` is flushed) is
 * TED_ERR_IO; a value no config holds (a word's enum out of its range, a
 * path that is not UTF-8) is TED_ERR_ARGUMENT naming the key. */
ted_status ted_config_write_yaml(FILE *out, const ted_config *config, ted_error *err);

/* The keys config.yaml knows, in the table's order: ted_config_key_name
 * writes key `index` (0 to ted_config_key_count() - 1) dotted, "model" for a
 * section, "model.d_model" for a key in one, "weights" at the top level, to
 * `name` of `size` bytes (TED_ERR_ARGUMENT when it does not fit). */
int ted_config_key_count(void);
ted_status ted_config_key_name(int index, char *name, size_t size, ted_error *err);

#endif
