/* Marian's model files, either container (io/marian_file.h). */
#include "io/marian_file.h"

#include <string.h>

#include "core/error.h"
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

/* ted_marian_parse of a whole file, which names an empty one as such. */
static ted_status parse_whole(const void *bytes, size_t size, const char *name, void *into,
                              ted_error *err)
{
    if (size == 0)
        return ted_fail(err, TED_ERR_FORMAT, "%s: the file is empty", name);
    return ted_marian_parse(bytes, size, name, into, err);
}

ted_status ted_marian_open(const char *path, ted_marian_file *file, ted_error *err)
{
    if (!path || !file)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_marian_open: missing argument");
    memset(file, 0, sizeof *file);
    ted_status status = ted_map_parse(path, parse_whole, file, err);
    file->mapped = status == TED_OK;
    return status;
}
