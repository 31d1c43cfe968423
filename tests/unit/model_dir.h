/* Model directories for loader and decoding tests: copies of
 * tests/data/tiny-model with the config edited, made in /tmp and removed. */
#ifndef TED_TESTS_MODEL_DIR_H
#define TED_TESTS_MODEL_DIR_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layer_fixtures.h"
#include "ted/ted.h"

/* The model of `dir`, loaded; the test fails when it cannot be. */
static ted_model *load(const char *dir)
{
    ted_model *model = NULL;
    ted_error err = {0};
    cr_assert_eq(ted_model_load(dir, &model, &err), TED_OK, "ted_model_load(%s): %s", dir,
                 err.message);
    cr_assert_not_null(model);
    return model;
}

typedef struct temp_dir {
    char path[64];
} temp_dir;

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_geq(n, 0);
    rewind(f);
    char *data = malloc((size_t)n + 1);
    cr_assert_not_null(data);
    cr_assert_eq(fread(data, 1, (size_t)n, f), (size_t)n);
    data[n] = '\0';
    fclose(f);
    *size = (size_t)n;
    return data;
}

static void write_file(const temp_dir *dir, const char *name, const void *data, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir->path, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    cr_assert_eq(fclose(f), 0);
}

static void copy_file(const temp_dir *dir, const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", TINY_DIR, name);
    size_t size;
    char *data = read_file(path, &size);
    write_file(dir, name, data, size);
    free(data);
}

/* A copy of tests/data/tiny-model with its config edited: `old` replaced
 * by `new` (NULL: unchanged); the weights are copied unless `weights` says
 * otherwise. */
static temp_dir make_model_dir(const char *old, const char *new, bool copy_weights)
{
    temp_dir dir;
    snprintf(dir.path, sizeof dir.path, "/tmp/ted-session-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir.path));
    copy_file(&dir, "vocab.src");
    copy_file(&dir, "vocab.tgt");
    if (copy_weights)
        copy_file(&dir, "model.safetensors");
    size_t size;
    char *config = read_file(TINY_DIR "/config.yaml", &size);
    if (old) {
        char *at = strstr(config, old);
        cr_assert_not_null(at, "\"%s\" is not in the config", old);
        size_t head = (size_t)(at - config), tail = strlen(at + strlen(old));
        char *edited = malloc(head + strlen(new) + tail + 1);
        cr_assert_not_null(edited);
        memcpy(edited, config, head);
        strcpy(edited + head, new);
        strcpy(edited + head + strlen(new), at + strlen(old));
        free(config);
        config = edited;
    }
    write_file(&dir, "config.yaml", config, strlen(config));
    free(config);
    return dir;
}

static void remove_model_dir(const temp_dir *dir)
{
    static const char *const names[] = {"config.yaml", "vocab.src", "vocab.tgt",
                                        "model.safetensors"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir->path, names[i]);
        unlink(path);
    }
    rmdir(dir->path);
}

#endif
