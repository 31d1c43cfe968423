/* Writing an output file (ted translate -o FILE, ted attention --html FILE)
 * without changing what FILE is:
 *   - a symbolic link is followed: its target is written, the link stays;
 *   - a regular file is replaced only once everything is written: the output
 *     goes to a temporary file in the same directory, given the old file's
 *     mode and owner, and is renamed over it (a new file gets 0666 less the
 *     umask); the temporary file is removed when the output fails;
 *   - anything else (a device such as /dev/null, a FIFO, a terminal, or a
 *     name of an open descriptor such as /dev/stdout or /proc/self/fd/1) is
 *     opened and written directly, appending, as standard output would be. */
#ifndef FRONTEND_OUTPUT_H
#define FRONTEND_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "ted/ted.h"

typedef struct frontend_output {
    FILE *file;
    char *temp;    /* the temporary file renamed over `target`; NULL: written directly */
    char *target;  /* the file it replaces: the path with its symbolic links followed */
    int error;     /* after a failure, its errno, for callers that word their own message */
} frontend_output;

/* Opens `path` for writing as above. Messages ("cannot write PATH: REASON")
 * name `path`. */
ted_status frontend_output_open(frontend_output *o, const char *path, ted_error *err);

/* With `keep`, completes the output: flushes it and (for a temporary file)
 * syncs it and renames it over the target; a write that failed is reported.
 * Without `keep`, removes the temporary file. Frees what open allocated. */
ted_status frontend_output_close(frontend_output *o, const char *path, bool keep,
                                 ted_error *err);

/* The rule of an output made from input files (ted shortlist -o; ted
 * quantize keeps it for its directory): `path` is none of the `count`
 * `inputs` (NULL entries skipped), by whichever path it is reached, and
 * no regular file that exists unless `replace`; a device or a FIFO
 * (/dev/null) may be written. Messages name `path`, the input it is, or
 * `replace_option` ("--force"), the option that allows replacing. */
ted_status frontend_output_check(const char *path, const char *const *inputs, int count,
                                 const char *replace_option, bool replace, ted_error *err);

#endif
