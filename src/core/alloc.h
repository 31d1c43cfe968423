/* Allocation that checks sizes before it allocates. */
#ifndef TED_CORE_ALLOC_H
#define TED_CORE_ALLOC_H

#include <stddef.h>

#include "ted/ted.h"

/* Zeroed memory for `count` items of `size` bytes, or NULL with an error
 * naming `what` when the product overflows or memory runs out. */
void *ted_alloc(size_t count, size_t size, const char *what, ted_error *err);

/* Same, for float buffers of `count` elements. */
float *ted_alloc_floats(size_t count, const char *what, ted_error *err);

/* a * b, or SIZE_MAX when it overflows: sizes from files are multiplied
 * through this before anything is allocated. */
size_t ted_mul_size(size_t a, size_t b);

#endif
