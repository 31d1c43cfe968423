/* The weights files ted has memory-mapped, so that a fault while reading
 * one (the file was truncated while in use: the kernel raises SIGBUS) can
 * be reported with the file's name instead of a bare signal. */
#ifndef TED_CORE_MAPPED_H
#define TED_CORE_MAPPED_H

#include <stddef.h>

/* Remembers that [base, base + size) maps `path`; a no-op when the table
 * of mappings is full (the fault is then reported without the name). */
void ted_mapped_add(const void *base, size_t size, const char *path);
void ted_mapped_remove(const void *base);

#endif
