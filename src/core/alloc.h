/* Allocation that checks sizes before it allocates: ted_alloc and
 * ted_mul_size (ted/util.h), and the library's own buffers of weights. */
#ifndef TED_CORE_ALLOC_H
#define TED_CORE_ALLOC_H

#include <stddef.h>

#include "ted/util.h"

/* ted_alloc for float buffers of `count` elements. */
float *ted_alloc_floats(size_t count, const char *what, ted_error *err);

/* Zeroed memory for `bytes` (page-aligned), every page mapped at once
 * rather than at a page fault per 4 KiB when it is first written (for the
 * weights in panels, a few ms on a small model); from 2 MiB on, aligned to
 * 2 MiB and in transparent huge pages where the kernel gives them
 * (MADV_HUGEPAGE): the products stream the weights with one TLB entry a
 * huge page. NULL when it cannot be had. ted_free_prefaulted(p, bytes)
 * frees it. */
void *ted_alloc_prefaulted(size_t bytes);
void ted_free_prefaulted(void *p, size_t bytes);

#endif
