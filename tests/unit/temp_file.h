/* Scratch files for loader tests.
 *
 * write_scratch_file("name", bytes, size) writes a fresh file
 * /tmp/ted-name-XXXXXX and returns its path (malloc'ed), which
 * remove_scratch_file removes and frees; write_file writes over any path.
 *
 * With TEMP_FILE_NAME defined by the including file: one scratch file of
 * that name in a fresh directory, make_temp_dir() (a Criterion .init)
 * creates it, remove_temp_dir() (.fini) removes it, write_temp_file
 * writes it. */
#ifndef TED_TESTS_TEMP_FILE_H
#define TED_TESTS_TEMP_FILE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline void write_file(const char *path, const void *bytes, size_t size)
{
    FILE *file = fopen(path, "wb");
    cr_assert_not_null(file, "%s", path);
    cr_assert_eq(fwrite(bytes, 1, size, file), size);
    cr_assert_eq(fclose(file), 0);
}

static inline char *write_scratch_file(const char *name, const void *bytes, size_t size)
{
    char *path = malloc(strlen(name) + sizeof "/tmp/ted--XXXXXX");
    cr_assert_not_null(path);
    sprintf(path, "/tmp/ted-%s-XXXXXX", name);
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "%s", path);
    cr_assert_eq(close(fd), 0);
    write_file(path, bytes, size);
    return path;
}

static inline void remove_scratch_file(char *path)
{
    unlink(path);
    free(path);
}

#ifdef TEMP_FILE_NAME
static char temp_dir[64];
static char temp_path[128];

static void make_temp_dir(void)
{
    strcpy(temp_dir, "/tmp/ted-test-XXXXXX");
    cr_assert_not_null(mkdtemp(temp_dir));
    snprintf(temp_path, sizeof temp_path, "%s/%s", temp_dir, TEMP_FILE_NAME);
}

static void remove_temp_dir(void)
{
    unlink(temp_path);
    rmdir(temp_dir);
}

static void write_temp_file(const char *text, size_t size)
{
    write_file(temp_path, text, size);
}
#endif

#endif
