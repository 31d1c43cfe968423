/* Marian's model files, either container (io/marian_file.h). */
#include "io/marian_file.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file.h"
#include "core/mapped.h"
#include "io/marian_bin.h"
#include "io/npz.h"

ted_status ted_marian_parse(const void *bytes, size_t size, const char *name,
                            ted_marian_file *file, ted_error *err)
{
    if (!file || (!bytes && size) || !name)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_marian_parse: missing argument");
    memset(file, 0, sizeof *file);
    const unsigned char *p = bytes;
    if (size >= 4 && p[0] == 'P' && p[1] == 'K')
        return ted_npz_parse(bytes, size, name, file, err);
    /* A .bin starts with its version, a small u64 (1 today): the .bin
     * reader names a version it does not read. */
    static const unsigned char high_zeros[6] = {0};
    if (size >= 8 && memcmp(p + 2, high_zeros, 6) == 0)
        return ted_marian_bin_parse(bytes, size, name, file, err);
    return ted_fail(err, TED_ERR_FORMAT,
                    "%s: neither a NumPy .npz (a zip archive) nor a Marian .bin (version 1) "
                    "by its first bytes",
                    name);
}

/* Maps the whole of `fd`, which names `path` in messages. */
static ted_status map_file(int fd, const char *path, const unsigned char **bytes,
                           size_t *size, ted_error *err)
{
    struct stat info;
    if (fstat(fd, &info) != 0)
        return ted_fail(err, TED_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if ((uint64_t)info.st_size > SIZE_MAX)
        return ted_fail(err, TED_ERR_IO, "%s: %lld bytes do not fit in memory", path,
                        (long long)info.st_size);
    if (info.st_size == 0)
        return ted_fail(err, TED_ERR_FORMAT, "%s: the file is empty", path);
    void *map = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        return ted_fail(err, TED_ERR_IO, "%s: cannot map %lld bytes: %s", path,
                        (long long)info.st_size, strerror(errno));
    /* Loading reads every weight, so ask for read-ahead; only speed is at
     * stake if the kernel declines. */
    (void)posix_madvise(map, (size_t)info.st_size, POSIX_MADV_WILLNEED);
    *bytes = map;
    *size = (size_t)info.st_size;
    return TED_OK;
}

ted_status ted_marian_open(const char *path, ted_marian_file *file, ted_error *err)
{
    if (!path || !file)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_marian_open: missing argument");
    memset(file, 0, sizeof *file);
    int fd;
    ted_status status = ted_open_regular(path, &fd, err);
    if (status != TED_OK)
        return status;
    const unsigned char *bytes = NULL;
    size_t size = 0;
    status = map_file(fd, path, &bytes, &size, err);
    /* The mapping outlives the descriptor, and nothing was written through
     * it, so a failing close loses nothing. */
    (void)close(fd);
    if (status != TED_OK)
        return status;
    ted_mapped_add(bytes, size, path);
    status = ted_marian_parse(bytes, size, path, file, err);
    if (status != TED_OK) {
        ted_mapped_remove(bytes);
        munmap((void *)bytes, size);
        return status;
    }
    file->mapped = true;
    return TED_OK;
}
