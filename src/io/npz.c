/* NumPy .npz archives (io/npz.h): the zip structure. */
#include "io/npz.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/little_endian.h"
#include "io/npy.h"

#define EOCD_BYTES 22
#define EOCD64_LOCATOR_BYTES 20
#define EOCD64_BYTES 56
#define CENTRAL_BYTES 46
#define LOCAL_BYTES 30
#define ZIP_COMMENT_MAX 65535
#define U16_ALL 0xFFFFu
#define U32_ALL 0xFFFFFFFFu
#define NPY_SUFFIX ".npy"

/* Where the central directory lies, from the end records. */
typedef struct zip_directory {
    uint64_t entries;
    uint64_t offset;
    uint64_t size;
    uint64_t end;     /* where the end records start: members lie before */
} zip_directory;

/* One central directory entry. */
typedef struct zip_entry {
    const unsigned char *name;
    size_t name_length;
    uint16_t flags, method;
    uint32_t crc;
    uint64_t compressed, uncompressed, local;
    size_t header_bytes;  /* of the entry in the central directory */
} zip_entry;

/* A member's span, for the overlap check. */
typedef struct zip_span {
    uint64_t start, end;
    int index;
} zip_span;

typedef struct zip_reader {
    const unsigned char *bytes;
    size_t size;
    const char *name;
    ted_error *err;
} zip_reader;

static bool has_signature(const unsigned char *p, unsigned char a, unsigned char b)
{
    return p[0] == 'P' && p[1] == 'K' && p[2] == a && p[3] == b;
}

/* The offset of the end-of-central-directory record: the last "PK\5\6"
 * whose comment reaches the end of the file exactly. */
static bool find_end_record(const zip_reader *r, size_t *at)
{
    if (r->size < EOCD_BYTES)
        return false;
    size_t last = r->size - EOCD_BYTES;
    size_t first = last > ZIP_COMMENT_MAX ? last - ZIP_COMMENT_MAX : 0;
    for (size_t i = last + 1; i-- > first;) {
        const unsigned char *p = r->bytes + i;
        if (has_signature(p, 5, 6) && i + EOCD_BYTES + ted_le_u16(p + 20) == r->size) {
            *at = i;
            return true;
        }
    }
    return false;
}

/* The zip64 end record that the locator just before the end record names. */
static ted_status read_zip64_end(const zip_reader *r, size_t eocd, zip_directory *dir)
{
    if (eocd < EOCD64_LOCATOR_BYTES || !has_signature(r->bytes + eocd - 20, 6, 7))
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: the zip end record asks for zip64 fields, but no zip64 locator "
                        "precedes it",
                        r->name);
    const unsigned char *locator = r->bytes + eocd - EOCD64_LOCATOR_BYTES;
    uint64_t at = ted_le_u64(locator + 8);
    if (ted_le_u32(locator + 4) != 0 || ted_le_u32(locator + 16) > 1 ||
        at > eocd - EOCD64_LOCATOR_BYTES ||
        eocd - EOCD64_LOCATOR_BYTES - at < EOCD64_BYTES ||
        !has_signature(r->bytes + at, 6, 6))
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: the zip64 locator points to no zip64 end record (offset %llu)",
                        r->name, (unsigned long long)at);
    const unsigned char *p = r->bytes + at;
    if (ted_le_u32(p + 16) != 0 || ted_le_u32(p + 20) != 0 ||
        ted_le_u64(p + 24) != ted_le_u64(p + 32))
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: a zip archive spanning several disks", r->name);
    dir->entries = ted_le_u64(p + 32);
    dir->size = ted_le_u64(p + 40);
    dir->offset = ted_le_u64(p + 48);
    dir->end = at;
    return TED_OK;
}

static ted_status read_directory(const zip_reader *r, zip_directory *dir)
{
    size_t eocd;
    if (!find_end_record(r, &eocd))
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: no zip end-of-central-directory record (a .npz cut short?)",
                        r->name);
    const unsigned char *p = r->bytes + eocd;
    if (ted_le_u16(p + 4) != 0 || ted_le_u16(p + 6) != 0 || ted_le_u16(p + 8) != ted_le_u16(p + 10))
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: a zip archive spanning several disks", r->name);
    dir->entries = ted_le_u16(p + 10);
    dir->size = ted_le_u32(p + 12);
    dir->offset = ted_le_u32(p + 16);
    dir->end = eocd;
    if (dir->entries == U16_ALL || dir->size == U32_ALL || dir->offset == U32_ALL) {
        ted_status status = read_zip64_end(r, eocd, dir);
        if (status != TED_OK)
            return status;
    }
    if (dir->offset > dir->end || dir->size > dir->end - dir->offset ||
        dir->entries > dir->size / CENTRAL_BYTES || dir->entries > INT32_MAX)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: the central directory (%llu entries, %llu bytes at offset %llu) "
                        "does not fit before the end record at %llu",
                        r->name, (unsigned long long)dir->entries,
                        (unsigned long long)dir->size, (unsigned long long)dir->offset,
                        (unsigned long long)dir->end);
    return TED_OK;
}

/* The zip64 extra field's values for the fixed fields that hold all ones,
 * in the order the format gives them. */
static bool read_zip64_extra(const unsigned char *extra, size_t length, zip_entry *e)
{
    while (length >= 4) {
        uint16_t id = ted_le_u16(extra), size = ted_le_u16(extra + 2);
        if (size > length - 4)
            return false;
        if (id == 1) {
            const unsigned char *p = extra + 4;
            size_t left = size;
            uint64_t *fields[] = {&e->uncompressed, &e->compressed, &e->local};
            for (int i = 0; i < 3; i++) {
                if (*fields[i] != U32_ALL)
                    continue;
                if (left < 8)
                    return false;
                *fields[i] = ted_le_u64(p);
                p += 8;
                left -= 8;
            }
            return true;
        }
        extra += 4 + (size_t)size;
        length -= 4 + (size_t)size;
    }
    return length == 0;
}

/* The central directory entry at `at` (inside the directory's `left`
 * bytes). */
static ted_status read_entry(const zip_reader *r, uint64_t at, uint64_t left, int index,
                             zip_entry *e)
{
    const unsigned char *p = r->bytes + at;
    if (left < CENTRAL_BYTES || !has_signature(p, 1, 2))
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: central directory entry %d is not one (bad signature or cut "
                        "short)",
                        r->name, index);
    size_t name_length = ted_le_u16(p + 28), extra = ted_le_u16(p + 30),
           comment = ted_le_u16(p + 32);
    e->header_bytes = CENTRAL_BYTES + name_length + extra + comment;
    if (e->header_bytes > left)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: central directory entry %d runs past the directory's end",
                        r->name, index);
    e->flags = ted_le_u16(p + 8);
    e->method = ted_le_u16(p + 10);
    e->crc = ted_le_u32(p + 16);
    e->compressed = ted_le_u32(p + 20);
    e->uncompressed = ted_le_u32(p + 24);
    e->local = ted_le_u32(p + 42);
    e->name = p + CENTRAL_BYTES;
    e->name_length = name_length;
    if (ted_le_u16(p + 34) != 0 && ted_le_u16(p + 34) != U16_ALL)
        return ted_fail(r->err, TED_ERR_FORMAT, "%s: member %d lies on another disk", r->name,
                        index);
    if (!read_zip64_extra(p + CENTRAL_BYTES + name_length, extra, e))
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: member '%.*s': its extra fields are malformed", r->name,
                        (int)name_length, (const char *)e->name);
    return TED_OK;
}

/* The member's name without ".npy", as a string: NULL (the error filled)
 * when it has no such suffix or holds a NUL. */
static char *member_name(const zip_reader *r, const zip_entry *e)
{
    size_t n = e->name_length, suffix = strlen(NPY_SUFFIX);
    if (n <= suffix || memcmp(e->name + n - suffix, NPY_SUFFIX, suffix) != 0 ||
        memchr(e->name, '\0', n)) {
        ted_fail(r->err, TED_ERR_FORMAT,
                 "%s: member '%.*s' is not a NumPy array (NAME.npy)", r->name, (int)n,
                 (const char *)e->name);
        return NULL;
    }
    char *name = ted_alloc(n - suffix + 1, 1, "a tensor name", r->err);
    if (name)
        memcpy(name, e->name, n - suffix);
    return name;
}

/* Refuses what ted does not read of a member: encryption, compression. */
static ted_status check_method(const zip_reader *r, const zip_entry *e, const char *name)
{
    if (e->flags & 0x41)  /* encrypted, strongly encrypted */
        return ted_fail(r->err, TED_ERR_FORMAT, "%s: member '%s.npy' is encrypted", r->name,
                        name);
    if (e->method == 8)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: member '%s.npy' is compressed (deflate); ted reads .npz files "
                        "stored uncompressed, as Marian and numpy.savez write them (not "
                        "numpy.savez_compressed)",
                        r->name, name);
    if (e->method != 0)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: member '%s.npy' uses zip compression method %u; ted reads "
                        "members stored uncompressed (method 0)",
                        r->name, name, (unsigned)e->method);
    if (e->compressed != e->uncompressed)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: member '%s.npy' is stored, yet its sizes differ (%llu and %llu)",
                        r->name, name, (unsigned long long)e->compressed,
                        (unsigned long long)e->uncompressed);
    return TED_OK;
}

/* The CRC-32 of zip (reflected, polynomial 0xEDB88320), four bytes a step
 * through four tables. */
typedef struct crc_tables {
    uint32_t t[4][256];
} crc_tables;

static void crc_init(crc_tables *c)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t v = i;
        for (int k = 0; k < 8; k++)
            v = v & 1 ? v >> 1 ^ 0xEDB88320u : v >> 1;
        c->t[0][i] = v;
    }
    for (int k = 1; k < 4; k++)
        for (int i = 0; i < 256; i++)
            c->t[k][i] = c->t[k - 1][i] >> 8 ^ c->t[0][c->t[k - 1][i] & 0xFF];
}

static uint32_t crc32_of(const crc_tables *c, const unsigned char *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (; n >= 4; n -= 4, p += 4) {
        crc ^= ted_le_u32(p);
        crc = c->t[3][crc & 0xFF] ^ c->t[2][crc >> 8 & 0xFF] ^ c->t[1][crc >> 16 & 0xFF] ^
              c->t[0][crc >> 24];
    }
    while (n--)
        crc = crc >> 8 ^ c->t[0][(crc ^ *p++) & 0xFF];
    return ~crc;
}

/* Finds the member's bytes through its local header, which must agree with
 * the central entry; they must lie before the central directory. */
static ted_status locate_member(const zip_reader *r, const zip_directory *dir,
                                const zip_entry *e, const char *name, zip_span *span)
{
    uint64_t at = e->local;
    if (at > dir->offset || dir->offset - at < LOCAL_BYTES ||
        !has_signature(r->bytes + at, 3, 4))
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': no local header at offset %llu", r->name, name,
                        (unsigned long long)at);
    const unsigned char *p = r->bytes + at;
    uint64_t header = LOCAL_BYTES + (uint64_t)ted_le_u16(p + 26) + ted_le_u16(p + 28);
    if (ted_le_u16(p + 8) != e->method || ted_le_u16(p + 26) != e->name_length ||
        dir->offset - at < header ||
        memcmp(p + LOCAL_BYTES, e->name, e->name_length) != 0)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': its local header disagrees with the central "
                        "directory (name or method)",
                        r->name, name);
    if (e->compressed > dir->offset - at - header)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': its %llu bytes at offset %llu run past the "
                        "central directory (a .npz cut short?)",
                        r->name, name, (unsigned long long)e->compressed,
                        (unsigned long long)(at + header));
    span->start = at;
    span->end = at + header + e->compressed;
    return TED_OK;
}

/* Reads the member of central entry `e` into `t`: its name, its checked
 * bytes and the array they hold. */
static ted_status read_member(const zip_reader *r, const zip_directory *dir,
                              const crc_tables *crc, const zip_entry *e, zip_span *span,
                              ted_marian_tensor *t)
{
    ted_status status = check_method(r, e, t->st.name);
    if (status == TED_OK)
        status = locate_member(r, dir, e, t->st.name, span);
    if (status != TED_OK)
        return status;
    const unsigned char *data = r->bytes + span->end - e->compressed;
    uint32_t actual = crc32_of(crc, data, (size_t)e->compressed);
    if (actual != e->crc)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: member '%s.npy' is corrupted: its CRC-32 is %08x, the archive "
                        "says %08x",
                        r->name, t->st.name, (unsigned)actual, (unsigned)e->crc);
    return ted_npy_parse(data, (size_t)e->compressed, r->name, t, r->err);
}

static int compare_spans(const void *a, const void *b)
{
    const zip_span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* No two members may share bytes. */
static ted_status check_overlaps(const zip_reader *r, zip_span *spans, int count,
                                 const ted_marian_file *file)
{
    qsort(spans, (size_t)count, sizeof *spans, compare_spans);
    for (int i = 1; i < count; i++)
        if (spans[i].start < spans[i - 1].end)
            return ted_fail(r->err, TED_ERR_FORMAT,
                            "%s: members '%s.npy' and '%s.npy' overlap", r->name,
                            file->tensors[spans[i - 1].index].st.name,
                            file->tensors[spans[i].index].st.name);
    return TED_OK;
}

static ted_status read_members(const zip_reader *r, const zip_directory *dir,
                               ted_marian_file *file, zip_span *spans)
{
    crc_tables crc;
    crc_init(&crc);
    uint64_t at = dir->offset, left = dir->size;
    for (int i = 0; i < (int)dir->entries; i++) {
        zip_entry e;
        ted_status status = read_entry(r, at, left, i, &e);
        if (status != TED_OK)
            return status;
        at += e.header_bytes;
        left -= e.header_bytes;
        ted_marian_tensor *t = &file->tensors[i];
        t->st.name = member_name(r, &e);
        if (!t->st.name)
            return r->err ? r->err->status : TED_ERR_FORMAT;
        file->count++;
        spans[i].index = i;
        status = read_member(r, dir, &crc, &e, &spans[i], t);
        if (status != TED_OK)
            return status;
    }
    if (left != 0)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: %llu bytes of the central directory follow its %llu entries",
                        r->name, (unsigned long long)left, (unsigned long long)dir->entries);
    return check_overlaps(r, spans, file->count, file);
}

ted_status ted_npz_parse(const void *bytes, size_t size, const char *name,
                         ted_marian_file *file, ted_error *err)
{
    if (!file || (!bytes && size) || !name)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_npz_parse: missing argument");
    memset(file, 0, sizeof *file);
    file->container = TED_MARIAN_NPZ;
    file->bytes = bytes;
    file->size = size;
    zip_reader r = {.bytes = bytes, .size = size, .name = name, .err = err};
    zip_directory dir;
    ted_status status = read_directory(&r, &dir);
    zip_span *spans = NULL;
    if (status == TED_OK) {
        file->tensors = ted_alloc((size_t)dir.entries, sizeof *file->tensors,
                                  "the tensor table", err);
        spans = ted_alloc((size_t)dir.entries, sizeof *spans, "the member table", err);
        status = file->tensors && spans ? read_members(&r, &dir, file, spans) : TED_ERR_NOMEM;
    }
    free(spans);
    return ted_marian_table_finish(file, status, name, err);
}
