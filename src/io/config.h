/* config.yaml -> ted_config (libyaml). */
#ifndef TED_IO_CONFIG_H
#define TED_IO_CONFIG_H

#include <stddef.h>

#include "ted/ted.h"

/* Reads and validates a config file. Unknown keys, wrong types, impossible
 * values and missing required keys are errors naming the file, the line and
 * the key ("config.yaml:7: model.heads: 3 does not divide d_model 512"). */
ted_status ted_config_load(const char *path, ted_config *config, ted_error *err);

/* The same, from text in memory; `name` stands for the file in messages. */
ted_status ted_config_parse(const char *text, size_t length, const char *name,
                            ted_config *config, ted_error *err);

#endif
