/* Marian model files built byte by byte for the unit tests: a .bin after
 * marian-dev's src/common/binary.cpp saveItems and a .npz (stored zip
 * members of .npy arrays) after its cnpy's npz_save, each in a buffer of
 * exactly its size (so AddressSanitizer sees any overread). */
#ifndef TED_TESTS_MARIAN_FILES_H
#define TED_TESTS_MARIAN_FILES_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/marian_file.h"
#include "refusal.h"

typedef struct byte_buffer {
    unsigned char *bytes;
    size_t size, capacity;
} byte_buffer;

static inline void buf_put(byte_buffer *b, const void *data, size_t n)
{
    if (b->size + n > b->capacity) {
        b->capacity = (b->size + n) * 2 + 64;
        b->bytes = realloc(b->bytes, b->capacity);
        cr_assert_not_null(b->bytes);
    }
    if (n)
        memcpy(b->bytes + b->size, data, n);
    b->size += n;
}

static inline void buf_le(byte_buffer *b, uint64_t value, int width)
{
    unsigned char p[8];
    for (int i = 0; i < width; i++)
        p[i] = (unsigned char)(value >> (8 * i));
    buf_put(b, p, (size_t)width);
}

static inline void buf_zeros(byte_buffer *b, size_t n)
{
    static const unsigned char zeros[256];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        buf_put(b, zeros, k);
        n -= k;
    }
}

/* The buffer cut to its exact size (for ASan). */
static inline unsigned char *buf_exact(const byte_buffer *b)
{
    unsigned char *p = malloc(b->size ? b->size : 1);
    cr_assert_not_null(p);
    memcpy(p, b->bytes, b->size);
    return p;
}

/* ---- .bin ---------------------------------------------------------------- */

typedef struct bin_item {
    const char *name;
    uint64_t type;
    int rank;
    int32_t shape[5];
    const void *data;
    size_t data_bytes;   /* written, then zeros up to `length` */
    uint64_t length;     /* the header's data length; 0: data_bytes rounded to 256 */
} bin_item;

static inline uint64_t bin_length(const bin_item *item)
{
    return item->length ? item->length : (item->data_bytes + 255) / 256 * 256;
}

/* The file of `count` items, with Marian's padding before the data. */
static inline byte_buffer build_bin(const bin_item *items, int count)
{
    byte_buffer b = {0};
    buf_le(&b, 1, 8);
    buf_le(&b, (uint64_t)count, 8);
    for (int i = 0; i < count; i++) {
        buf_le(&b, strlen(items[i].name) + 1, 8);
        buf_le(&b, items[i].type, 8);
        buf_le(&b, (uint64_t)items[i].rank, 8);
        buf_le(&b, bin_length(&items[i]), 8);
    }
    for (int i = 0; i < count; i++)
        buf_put(&b, items[i].name, strlen(items[i].name) + 1);
    for (int i = 0; i < count; i++)
        for (int d = 0; d < items[i].rank; d++)
            buf_le(&b, (uint32_t)items[i].shape[d], 4);
    size_t next = (b.size + 8) / 256 * 256 + 256;
    buf_le(&b, next - b.size - 8, 8);
    buf_zeros(&b, next - b.size);
    for (int i = 0; i < count; i++) {
        buf_put(&b, items[i].data, items[i].data_bytes);
        buf_zeros(&b, bin_length(&items[i]) - items[i].data_bytes);
    }
    return b;
}

/* ---- .npz ---------------------------------------------------------------- */

static inline uint32_t test_crc32(const unsigned char *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

/* A .npy array: version 1 header `dict` (padded with spaces and a newline
 * to a multiple of 16, as cnpy does), then the values. */
static inline byte_buffer build_npy(const char *dict, const void *data, size_t bytes)
{
    byte_buffer b = {0};
    size_t length = strlen(dict) + 1;
    length += (16 - (10 + length) % 16) % 16;
    buf_put(&b, "\x93NUMPY\x01\x00", 8);
    buf_le(&b, length, 2);
    buf_put(&b, dict, strlen(dict));
    for (size_t i = strlen(dict); i + 1 < length; i++)
        buf_put(&b, " ", 1);
    buf_put(&b, "\n", 1);
    buf_put(&b, data, bytes);
    return b;
}

typedef struct npz_member {
    const char *name;        /* with ".npy" */
    byte_buffer npy;
    uint16_t method;         /* 0 stored */
    uint32_t crc;            /* 0: computed */
} npz_member;

static inline byte_buffer build_npz(const npz_member *members, int count)
{
    byte_buffer b = {0}, central = {0};
    for (int i = 0; i < count; i++) {
        const npz_member *m = &members[i];
        uint32_t crc = m->crc ? m->crc : test_crc32(m->npy.bytes, m->npy.size);
        size_t offset = b.size;
        unsigned char fixed[26];
        byte_buffer f = {0};
        buf_le(&f, 20, 2);
        buf_le(&f, 0, 2);
        buf_le(&f, m->method, 2);
        buf_le(&f, 0, 4);
        buf_le(&f, crc, 4);
        buf_le(&f, m->npy.size, 4);
        buf_le(&f, m->npy.size, 4);
        buf_le(&f, strlen(m->name), 2);
        buf_le(&f, 0, 2);
        memcpy(fixed, f.bytes, 26);
        free(f.bytes);
        buf_put(&b, "PK\3\4", 4);
        buf_put(&b, fixed, 26);
        buf_put(&b, m->name, strlen(m->name));
        buf_put(&b, m->npy.bytes, m->npy.size);
        buf_put(&central, "PK\1\2", 4);
        buf_le(&central, 20, 2);
        buf_put(&central, fixed, 26);
        buf_zeros(&central, 10);  /* comment length, disk, attributes */
        buf_le(&central, offset, 4);
        buf_put(&central, m->name, strlen(m->name));
    }
    size_t central_at = b.size;
    buf_put(&b, central.bytes, central.size);
    buf_put(&b, "PK\5\6", 4);
    buf_zeros(&b, 4);
    buf_le(&b, (uint64_t)count, 2);
    buf_le(&b, (uint64_t)count, 2);
    buf_le(&b, central.size, 4);
    buf_le(&b, central_at, 4);
    buf_le(&b, 0, 2);
    free(central.bytes);
    return b;
}

/* ---- parsing -------------------------------------------------------------- */

/* Parses a copy of `b` of exactly its size, naming it `file_name`; the
 * parsed file points into the copy, which free_parsed frees (a refused
 * copy is freed here). */
static inline ted_status parse_exact(const byte_buffer *b, const char *file_name,
                                     ted_marian_file *file, ted_error *err)
{
    unsigned char *exact = buf_exact(b);
    ted_status status = ted_marian_parse(exact, b->size, file_name, file, err);
    if (status == TED_OK)
        cr_assert_eq(file->bytes, exact);
    else
        free(exact);
    return status;
}

static inline void free_parsed(ted_marian_file *file)
{
    const unsigned char *bytes = file->bytes;
    ted_marian_close(file);
    free((void *)bytes);
}

/* Asserts that `b` is refused with one line naming `file_name`, `part1`
 * and `part2`, and that the table is left empty. */
static inline void expect_buffer_refused(const byte_buffer *b, const char *file_name,
                                         const char *part1, const char *part2)
{
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(parse_exact(b, file_name, &file, &err), TED_ERR_FORMAT, "parsed");
    expect_message(&err, file_name, part1, part2);
    cr_assert_eq(file.count, 0);
    cr_assert_null(file.tensors);
    cr_assert_null(file.yml);
}

/* Asserts that the file `b` cut to each shorter size (in a buffer of
 * exactly that size) is refused with a message naming `file_name`. */
static inline void expect_every_cut_refused(const byte_buffer *b, const char *file_name)
{
    ted_marian_file file;
    ted_error err = {0};
    for (size_t size = 0; size < b->size; size++) {
        unsigned char *cut = malloc(size ? size : 1);
        cr_assert_not_null(cut);
        memcpy(cut, b->bytes, size);
        cr_assert_neq(ted_marian_parse(cut, size, file_name, &file, &err), TED_OK,
                      "%s cut to %zu of %zu bytes parsed", file_name, size, b->size);
        cr_assert(strstr(err.message, file_name), "message: %s", err.message);
        free(cut);
    }
}

#endif
