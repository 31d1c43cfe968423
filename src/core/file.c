#include "core/file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"
#include "core/error.h"

ted_status ted_read_file(const char *path, size_t max_bytes, ted_status too_large,
                         const char *what, char **text, size_t *length, ted_error *err)
{
    struct stat info;
    if (stat(path, &info) != 0)
        return ted_fail(err, TED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(info.st_mode))
        return ted_fail(err, TED_ERR_IO, "%s: not a regular file", path);
    if ((unsigned long long)info.st_size > max_bytes)
        return ted_fail(err, too_large, "%s: %lld bytes is larger than %zu MiB; not %s", path,
                        (long long)info.st_size, max_bytes >> 20, what);
    FILE *file = fopen(path, "rb");
    if (!file)
        return ted_fail(err, TED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t size = (size_t)info.st_size;
    char *buffer = ted_alloc(size + 1, 1, path, err);
    if (!buffer) {
        fclose(file);
        return TED_ERR_NOMEM;
    }
    size_t got = fread(buffer, 1, size, file);
    bool failed = ferror(file) || got != size;
    fclose(file);
    if (failed) {
        free(buffer);
        return ted_fail(err, TED_ERR_IO, "%s: cannot read the file", path);
    }
    *text = buffer;
    *length = size;
    return TED_OK;
}
