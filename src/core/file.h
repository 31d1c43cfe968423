/* Reading small text files whole (configs, vocabularies). */
#ifndef TED_CORE_FILE_H
#define TED_CORE_FILE_H

#include <stddef.h>

#include "ted/ted.h"

/* Opens `path` for reading, refusing anything but a regular file: the
 * descriptor is opened without blocking (a FIFO with no writer would block
 * open() forever), checked with fstat() (no window between the check and
 * the open) and then set to blocking reads. */
ted_status ted_open_regular(const char *path, int *fd, ted_error *err);

/* Reads the regular file `path` into a malloc'ed buffer with a NUL after
 * its `*length` bytes. A file larger than `max_bytes` fails with
 * `too_large` and a message naming `what` ("a config file"). A FIFO or a
 * device is refused instead of blocking (ted_open_regular). */
ted_status ted_read_file(const char *path, size_t max_bytes, ted_status too_large,
                         const char *what, char **text, size_t *length, ted_error *err);

/* Parses the text of a file read whole: `name` names it in messages. */
typedef ted_status ted_text_parser(const char *text, size_t length, const char *name,
                                   void *into, ted_error *err);

/* Reads `path` whole (ted_read_file with those limits) and hands its text
 * to parse(text, length, path, into, err). */
ted_status ted_parse_file(const char *path, size_t max_bytes, ted_status too_large,
                          const char *what, ted_text_parser *parse, void *into,
                          ted_error *err);

#endif
