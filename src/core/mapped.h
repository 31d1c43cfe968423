/* The weights files ted has memory-mapped, so that a fault while reading
 * one (the file was truncated while in use: the kernel raises SIGBUS) can
 * be reported with the file's name instead of a bare signal. */
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

#endif
