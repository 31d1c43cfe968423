/* Moses' punctuation normalization (src/io/normalize.h) of texts read on
 * standard input, for tests/parity/test_normalize.py:
 *
 *     normalize-check [LANGUAGE] < texts > normalized
 *
 * Every text ends with a NUL byte (so texts may hold line ends); each
 * normalized text is written followed by a NUL byte. No LANGUAGE: none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/normalize.h"

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

int main(int argc, char **argv)
{
    const char *language = argc > 1 ? argv[1] : NULL;
    char *input;
    size_t length;
    if (argc > 2 || read_all(&input, &length) != 0) {
        fprintf(stderr, "usage: normalize-check [LANGUAGE] < NUL-terminated texts\n");
        return 1;
    }
    for (size_t at = 0; at < length;) {
        const char *end = memchr(input + at, '\0', length - at);
        size_t n = end ? (size_t)(end - (input + at)) : length - at;
        char *out;
        size_t out_length;
        ted_error err = {0};
        if (ted_normalize_moses(input + at, n, language, &out, &out_length, &err) != TED_OK) {
            fprintf(stderr, "normalize-check: text at byte %zu: %s\n", at, err.message);
            return 1;
        }
        fwrite(out, 1, out_length + 1, stdout);
        free(out);
        at += n + 1;
    }
    free(input);
    return fflush(stdout) == 0 ? 0 : 1;
}
