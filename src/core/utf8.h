/* UTF-8 as RFC 3629 defines it, the one reader of characters that the
 * tokenizer, the learning tools and the front ends share: ted_utf8_char, declared
 * for callers of the library in ted/util.h. */
#ifndef TED_CORE_UTF8_H
#define TED_CORE_UTF8_H

#include "ted/util.h"

#endif
