/* MAP_ANONYMOUS, MAP_POPULATE */
#define _DEFAULT_SOURCE

#include "core/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"

size_t ted_mul_size(size_t a, size_t b)
{
    if (a != 0 && b > SIZE_MAX / a)
        return SIZE_MAX;
    return a * b;
}

void *ted_alloc(size_t count, size_t size, const char *what, ted_error *err)
{
    size_t bytes = ted_mul_size(count, size);
    if (bytes == SIZE_MAX) {
        ted_fail(err, TED_ERR_NOMEM, "%s: %zu x %zu bytes overflows", what, count, size);
        return NULL;
    }
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p)
        ted_fail(err, TED_ERR_NOMEM, "%s: cannot allocate %zu bytes", what, bytes);
    return p;
}

float *ted_alloc_floats(size_t count, const char *what, ted_error *err)
{
    return ted_alloc(count, sizeof(float), what, err);
}

/* A transparent huge page of x86-64. */
enum { HUGE_PAGE = 2 << 20 };

void *ted_alloc_prefaulted(size_t bytes)
{
    if (bytes == 0)
        return NULL;
    if (bytes < HUGE_PAGE || bytes > SIZE_MAX - HUGE_PAGE) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    /* one huge page more, then the start rounded up to a huge page and the
     * slack on both sides unmapped */
    char *p = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *start = (char *)(((uintptr_t)p + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
    if (start > p)
        munmap(p, (size_t)(start - p));
    if (p + HUGE_PAGE > start)
        munmap(start + bytes, (size_t)(p + HUGE_PAGE - start));
    /* advice only: where the kernel gives no huge pages, 4 KiB ones serve */
    (void)madvise(start, bytes, MADV_HUGEPAGE);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < bytes; i += page)
        start[i] = 0;
    return start;
}

void ted_free_prefaulted(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

void ted_free(void *p)
{
    free(p);
}
