/* One scratch file in a fresh directory, for loader tests: make_temp_dir()
 * (a Criterion .init) creates it, remove_temp_dir() (.fini) removes it.
 * The including file names the file with TEMP_FILE_NAME. */
#ifndef TED_TESTS_TEMP_FILE_H
#define TED_TESTS_TEMP_FILE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    FILE *file = fopen(temp_path, "wb");
    cr_assert_not_null(file);
    cr_assert_eq(fwrite(text, 1, size, file), size);
    cr_assert_eq(fclose(file), 0);
}

#endif
