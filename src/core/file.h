/* Reading small text files whole (configs, vocabularies). */
#ifndef TED_CORE_FILE_H
#define TED_CORE_FILE_H

#include <stddef.h>

#include "ted/ted.h"

/* Reads the regular file `path` into a malloc'ed buffer with a NUL after
 * its `*length` bytes. A file larger than `max_bytes` fails with
 * `too_large` and a message naming `what` ("a config file"). stat() comes
 * first, so a FIFO or a device is refused instead of blocking. */
ted_status ted_read_file(const char *path, size_t max_bytes, ted_status too_large,
                         const char *what, char **text, size_t *length, ted_error *err);

#endif
