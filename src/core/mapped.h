/* Weights files memory-mapped whole, and the table of those ted has
 * mapped, so that a fault while reading one (the file was truncated while
 * in use: the kernel raises SIGBUS) can be reported with the file's name
 * instead of a bare signal. */
#ifndef TED_CORE_MAPPED_H
#define TED_CORE_MAPPED_H

#include <stddef.h>

#include "ted/ted.h"

/* Remembers that [base, base + size) maps `path`; a no-op when the table
 * of mappings is full (the fault is then reported without the name). */
void ted_mapped_add(const void *base, size_t size, const char *path);
void ted_mapped_remove(const void *base);

/* Maps the whole of the regular file `path` read-only (ted_open_regular),
 * asks for read-ahead, and remembers the mapping (ted_mapped_add); the
 * messages name `path`. An empty file is not mapped: it gives *bytes =
 * NULL and *size = 0, for the parser to name what it lacks. */
ted_status ted_map_file(const char *path, const unsigned char **bytes, size_t *size,
                        ted_error *err);

/* Forgets and unmaps what ted_map_file gave; a no-op for an empty file. */
void ted_unmap_file(const void *bytes, size_t size);

/* Parses the `size` bytes of a whole file (NULL and 0 for an empty one)
 * into `into`: `name` names the file in messages. */
typedef ted_status ted_bytes_parser(const void *bytes, size_t size, const char *name,
                                    void *into, ted_error *err);

/* Maps `path` (ted_map_file) and hands its bytes to parse(bytes, size,
 * path, into, err), unmapping them when that fails. On success the mapping
 * stays, for what the parser filled to point into until its close calls
 * ted_unmap_file. */
ted_status ted_map_parse(const char *path, ted_bytes_parser *parse, void *into,
                         ted_error *err);

#endif
