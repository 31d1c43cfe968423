#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"

ted_status ted_open_regular(const char *path, int *fd, ted_error *err)
{
    TED_REQUIRE(path, err);
    TED_REQUIRE(fd, err);
    int d = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (d < 0)
        return ted_fail(err, TED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    if (fstat(d, &info) != 0) {
        int error = errno;
        close(d);
        return ted_fail(err, TED_ERR_IO, "%s: cannot stat: %s", path, strerror(error));
    }
    if (!S_ISREG(info.st_mode)) {
        close(d);
        return ted_fail(err, TED_ERR_IO, "%s: not a regular file", path);
    }
    int flags = fcntl(d, F_GETFL);
    if (flags < 0 || fcntl(d, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        close(d);
        return ted_fail(err, TED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    *fd = d;
    return TED_OK;
}

ted_status ted_read_file(const char *path, size_t max_bytes, ted_status too_large,
                         const char *what, char **text, size_t *length, ted_error *err)
{
    TED_REQUIRE(text, err);
    TED_REQUIRE(length, err);
    int fd;
    ted_status status = ted_open_regular(path, &fd, err);
    if (status != TED_OK)
        return status;
    struct stat info;
    if (fstat(fd, &info) != 0) {
        int error = errno;
        close(fd);
        return ted_fail(err, TED_ERR_IO, "%s: cannot stat: %s", path, strerror(error));
    }
    if ((unsigned long long)info.st_size > max_bytes) {
        close(fd);
        return ted_fail(err, too_large, "%s: %lld bytes is larger than %zu MiB; not %s", path,
                        (long long)info.st_size, max_bytes >> 20, what);
    }
    FILE *file = fdopen(fd, "rb");
    if (!file) {
        close(fd);
        return ted_fail(err, TED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
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

ted_status ted_parse_file(const char *path, size_t max_bytes, ted_status too_large,
                          const char *what, ted_text_parser *parse, void *into,
                          ted_error *err)
{
    TED_REQUIRE(parse, err);
    char *text = NULL;
    size_t length = 0;
    ted_status status = ted_read_file(path, max_bytes, too_large, what, &text, &length, err);
    if (status != TED_OK)
        return status;
    status = parse(text, length, path, into, err);
    free(text);
    return status;
}

bool ted_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}
