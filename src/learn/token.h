/* How the learning tools show a token (in the explanation's words, the
 * same in ted step and in the explorer, on the terminal, and in the pages
 * ted attention writes) and a word of the config. */
#ifndef TED_LEARN_TOKEN_H
#define TED_LEARN_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#include "ted/ted.h"

/* UNK, PAD, BOS or EOS. */
bool learn_is_special(const ted_config *c, int id);

/* A token as shown: spaces as '␣', control bytes and bytes that are not
 * UTF-8 as '?', "" as '∅'; one too long for `size` bytes is cut between
 * two characters and ends in '…'. Returns buf (size >= 8). */
const char *learn_show_token(const char *token, char *buf, size_t size);

/* A word of config.yaml as the learning tools show it: the word of value
 * `value` of key `dotted_key` (ted_config_word), an activation as it is
 * usually written ("ReLU"), a tokenizer by what its tokens are ("words");
 * a word without a label as config.yaml spells it. */
const char *learn_shown_word(const char *dotted_key, int value);

#endif
