/* Moses' punctuation normalization (src/io/normalize.h) of texts read on
 * standard input, for tests/parity/test_normalize.py:
 *
 *     normalize-check [LANGUAGE] < texts > normalized
 *
 * Every text ends with a NUL byte (so texts may hold line ends); each
 * normalized text is written followed by a NUL byte. No LANGUAGE: none. */
#include <stdio.h>
#include <stdlib.h>

#include "../lib/records.h"
#include "io/normalize.h"

/* Writes the normalized text and its NUL; 1 (after a message) when
 * ted_normalize_moses fails. */
static int normalize(const char *text, size_t length, size_t at, void *language)
{
    char *out;
    size_t out_length;
    ted_error err = {0};
    if (ted_normalize_moses(text, length, language, &out, &out_length, &err) != TED_OK) {
        fprintf(stderr, "normalize-check: text at byte %zu: %s\n", at, err.message);
        return 1;
    }
    fwrite(out, 1, out_length + 1, stdout);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    const char *language = argc > 1 ? argv[1] : NULL;
    int status = argc > 2 ? -1 : for_each_record(normalize, (void *)language);
    if (status < 0) {
        fprintf(stderr, "usage: normalize-check [LANGUAGE] < NUL-terminated texts\n");
        return 1;
    }
    return status == 0 && fflush(stdout) == 0 ? 0 : 1;
}
