/* config.yaml -> ted_config (libyaml). */
#ifndef TED_IO_CONFIG_H
#define TED_IO_CONFIG_H

#include <stddef.h>

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

#endif
