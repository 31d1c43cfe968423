/* How the learning tools show a token: in the explanation's words (the
 * same in ted step and in the explorer), on the terminal, and in the
 * pages ted attention writes. */
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

#endif
