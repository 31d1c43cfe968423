/* UTF-8 as RFC 3629 defines it: the one reader of characters that the
 * tokenizer, the learning tools and the service share. */
#ifndef TED_CORE_UTF8_H
#define TED_CORE_UTF8_H

#include <stddef.h>

/* The length (1 to 4) of the well-formed character at `s`, `available`
 * bytes before the end (a NUL byte is a character of its own); 0 when
 * the bytes there begin none (a stray continuation byte, an overlong
 * form, a UTF-16 surrogate, past U+10FFFF); -1 when they begin one that
 * the end cuts short. `problem` (may be NULL) receives why, when the
 * answer is not a length. */
int ted_utf8_char(const unsigned char *s, size_t available, const char **problem);

#endif
