/* A main() for a harness of fuzz/ in place of libFuzzer's: it feeds every
 * file of the directories it is given (a corpus, fuzz/corpus/NAME/), in name
 * order, to LLVMFuzzerTestOneInput once, each in a buffer of exactly its
 * size, so that a sanitizer sees a read past its end. Any compiler builds
 * it (make builds BUILD/fuzz-replay/NAME with the flags of BUILD, gcc with
 * ASan + UBSan under SAN=1). A broken REQUIRE or a sanitizer's report ends
 * the run; else it prints "N inputs" and exits 0.
 *
 *     BUILD/fuzz-replay/NAME DIR... */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

/* libFuzzer's optional set-up hook; only some harnesses define it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* The whole of `path` in a buffer of exactly its size (malloc(0)'s for an
 * empty file); false when it cannot be read. */
static int read_file(const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    unsigned char *buffer = NULL;
    size_t used = 0, capacity = 0;
    int good = 1;
    for (;;) {
        if (used == capacity) {
            capacity = capacity ? 2 * capacity : 4096;
            unsigned char *grown = realloc(buffer, capacity);
            if (!grown) {
                good = 0;
                break;
            }
            buffer = grown;
        }
        size_t n = fread(buffer + used, 1, capacity - used, f);
        used += n;
        if (n == 0)
            break;
    }
    good = good && !ferror(f);
    fclose(f);
    *data = good ? malloc(used) : NULL;  /* glibc and ASan: not NULL for 0 */
    *size = used;
    good = good && *data;
    if (good)
        memcpy(*data, buffer, used);
    free(buffer);
    return good;
}

/* Feeds each file of `dir` to the harness; the count, or -1 on an error. */
static long replay_dir(const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    long fed = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        const char *name = names[i]->d_name;
        int skip = name[0] == '.';
        if (!skip && snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path) {
            unsigned char *data;
            size_t size;
            if (!read_file(path, &data, &size)) {
                fprintf(stderr, "replay: %s: cannot be read\n", path);
                fed = -1;
            } else {
                LLVMFuzzerTestOneInput(data, size);
                free(data);
                if (fed >= 0)
                    fed++;
            }
        }
        free(names[i]);
    }
    free(names);
    return fed;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR...\n", argv[0]);
        return 2;
    }
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    long total = 0;
    for (int i = 1; i < argc; i++) {
        long fed = replay_dir(argv[i]);
        if (fed < 0)
            return 1;
        total += fed;
    }
    printf("%ld inputs\n", total);
    return 0;
}
