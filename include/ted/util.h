/*
 * ted — what a program built on libted shares with it: failures reported
 * in a ted_error, allocation checked by size, small files read whole
 * without blocking, UTF-8 characters, sentences ordered by length, and
 * the monotonic clock. ted's own front ends (ted translate, ted serve)
 * reach the library through ted.h, learn.h, quantize.h and this header
 * alone.
 */
#ifndef TED_UTIL_H
#define TED_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "ted/ted.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- failures -------------------------------------------------------------- */

/* Records `status` and a printf-style message in `err` (if not NULL; its
 * option is TED_OPTION_NONE) and returns `status`, so that a function of
 * the library's convention fails with `return ted_fail(err, ...);`. The
 * functions below that take a pointer they need return TED_ERR_ARGUMENT
 * naming it when it is NULL. */
TED_API ted_status ted_fail(ted_error *err, ted_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in `err` with "<context>: " and returns
 * its status (TED_ERR_ARGUMENT when `err` is NULL): a caller that knows which file, request or sentence a
 * failure was in names it. */
TED_API ted_status ted_fail_context(ted_error *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- memory ---------------------------------------------------------------- */

/* Zeroed memory for `count` items of `size` bytes (free() frees it), or
 * NULL with TED_ERR_NOMEM in `err` naming `what` when the product
 * overflows or memory runs out. */
TED_API void *ted_alloc(size_t count, size_t size, const char *what, ted_error *err);

/* a * b, or SIZE_MAX when it overflows: sizes that come from input are
 * multiplied through this before anything is allocated. */
TED_API size_t ted_mul_size(size_t a, size_t b);

/* ---- files ----------------------------------------------------------------- */

/* Opens `path` for reading into *fd, refusing anything but a regular file:
 * the descriptor is opened without blocking (a FIFO with no writer would
 * block open() forever), checked with fstat() (no window between the check
 * and the open) and then set to blocking reads. TED_ERR_IO naming `path`. */
TED_API ted_status ted_open_regular(const char *path, int *fd, ted_error *err);

/* Reads the regular file `path` into a malloc'ed buffer (*text) with a NUL
 * after its *length bytes. A file larger than `max_bytes` fails with
 * `too_large` and a message naming `what` ("a config file"); a FIFO or a
 * device is refused instead of blocking (ted_open_regular). */
TED_API ted_status ted_read_file(const char *path, size_t max_bytes, ted_status too_large,
                                 const char *what, char **text, size_t *length,
                                 ted_error *err);

/* Parses the text of a file read whole: `name` names it in messages. */
typedef ted_status ted_text_parser(const char *text, size_t length, const char *name,
                                   void *into, ted_error *err);

/* Reads `path` whole (ted_read_file with those limits) and hands its text
 * to parse(text, length, path, into, err), whose status it returns. */
TED_API ted_status ted_parse_file(const char *path, size_t max_bytes, ted_status too_large,
                                  const char *what, ted_text_parser *parse, void *into,
                                  ted_error *err);

/* Whether the paths `a` and `b` lead to one file (the same device and
 * inode, whatever links or spellings lead there); false when either does
 * not exist or is NULL. */
TED_API bool ted_same_file(const char *a, const char *b);

/* ---- text and order ---------------------------------------------------------- */

/* UTF-8 as RFC 3629 defines it, the reader the tokenizers use: the length
 * (1 to 4) of the well-formed character at `s`, `available` bytes before
 * the end (a NUL byte is a character of its own); 0 when the bytes there
 * begin none (a stray continuation byte, an overlong form, a UTF-16
 * surrogate, past U+10FFFF, or no bytes at all: `s` NULL or `available`
 * 0); -1 when they begin one that the end cuts short. `problem` (may be NULL) receives why, when the answer is not a
 * length. */
TED_API int ted_utf8_char(const unsigned char *s, size_t available, const char **problem);

/* Sorts indices[0..n) by keys[index], ascending, an index before a larger
 * one among equal keys: the order in which sentences of these lengths
 * (keys) decode, shortest first (ted_translate's batches). `keys` is read
 * at every index listed. TED_ERR_NOMEM (naming `what`) when the sort's
 * memory cannot be had. */
TED_API ted_status ted_order_by_key(int *indices, int n, const int *keys, const char *what,
                                    ted_error *err);

/* ---- time ------------------------------------------------------------------ */

/* Seconds on CLOCK_MONOTONIC (from an unspecified start), for durations. */
TED_API double ted_seconds(void);

/* The time `ms` milliseconds from now on `clock` (a clockid_t: the clock
 * of the condition variable waited on, CLOCK_REALTIME unless its
 * attributes set another): pthread_cond_timedwait's deadline. */
TED_API struct timespec ted_deadline(int clock, long ms);

#ifdef __cplusplus
}
#endif

#endif
