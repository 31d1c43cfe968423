/* Standard input as NUL-terminated records (records.h). */
#include "records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* All of standard input, malloc'ed, in *text and *length. */
static int read_all(char **text, size_t *length)
{
    size_t capacity = 1 << 16, used = 0, got;
    char *buffer = malloc(capacity);
    while (buffer && (got = fread(buffer + used, 1, capacity - used, stdin)) > 0) {
        used += got;
        if (used == capacity) {
            char *grown = realloc(buffer, capacity *= 2);
            if (!grown)
                free(buffer);
            buffer = grown;
        }
    }
    *text = buffer;
    *length = used;
    return buffer && !ferror(stdin) ? 0 : -1;
}

int for_each_record(record_fn each, void *context)
{
    char *input;
    size_t length;
    if (read_all(&input, &length) != 0) {
        free(input);
        return -1;
    }
    int status = 0;
    for (size_t at = 0; at < length && status == 0;) {
        const char *end = memchr(input + at, '\0', length - at);
        size_t n = end ? (size_t)(end - (input + at)) : length - at;
        status = each(input + at, n, at, context);
        at += n + 1;
    }
    free(input);
    return status;
}
