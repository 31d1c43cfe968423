#include "core/alloc.h"

#include <stdint.h>
#include <stdlib.h>

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
