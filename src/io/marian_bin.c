/* Marian's binary model format (io/marian_bin.h). */
#include "io/marian_bin.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/little_endian.h"

#define BIN_VERSION 1
#define BIN_ALIGN 256
#define BIN_HEADER_BYTES 32

/* The class bits of Marian's type codes that the refusals name. */
#define CLASS_PACKED 0x800u
#define CLASS_INTGEMM_BROWSERMT 0x4000u
#define CLASS_INTGEMM 0x10000u

typedef struct bin_reader {
    const unsigned char *bytes;
    size_t size;
    const char *name;
    ted_error *err;
} bin_reader;

static bool is_intgemm8(uint64_t type)
{
    return type == TED_MARIAN_INTGEMM8 || type == TED_MARIAN_INTGEMM8_BROWSERMT;
}

/* The dtype of a type code ted reads, or false with `why` saying what the
 * code is. */
static bool type_dtype(uint64_t type, ted_dtype *dtype, const char **why)
{
    switch (type) {
    case TED_MARIAN_FLOAT32: *dtype = TED_DTYPE_F32; return true;
    case TED_MARIAN_FLOAT16: *dtype = TED_DTYPE_F16; return true;
    case TED_MARIAN_INT8: *dtype = TED_DTYPE_I8; return true;
    case TED_MARIAN_UINT8: *dtype = TED_DTYPE_U8; return true;
    case TED_MARIAN_INTGEMM8: *dtype = TED_DTYPE_I8; return true;
    case TED_MARIAN_INTGEMM8_BROWSERMT: *dtype = TED_DTYPE_I8; return true;
    }
    bool intgemm = (type & (CLASS_INTGEMM | CLASS_INTGEMM_BROWSERMT)) != 0;
    if (intgemm && (type & 0xFFu) == 2)
        *why = "intgemm16, which ted does not read (convert with --gemm-type intgemm8)";
    else if (intgemm)
        *why = "an intgemm8 matrix packed for one instruction set (convert with --gemm-type "
               "intgemm8, the layout every CPU reads)";
    else if (type & CLASS_PACKED)
        *why = "an FBGEMM packed matrix (packed16, packed8avx2, packed8avx512), which ted "
               "does not read";
    else
        *why = "not one ted reads (float32 0x404, float16 0x402, int8 0x101, uint8 0x201, "
               "intgemm8 0x4101 or 0x10001)";
    return false;
}

/* The item's header: its rank, the reach of its name (its type is checked
 * once the name is read, to name the item). */
static ted_status check_header(const bin_reader *r, uint64_t index, const unsigned char *h,
                               ted_marian_tensor *t)
{
    uint64_t name_length = ted_le_u64(h), rank = ted_le_u64(h + 16);
    if (rank < 1 || rank > TED_TENSOR_MAX_DIMS)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: item %llu: a shape of rank %llu (ted reads ranks 1 to %d)",
                        r->name, (unsigned long long)index, (unsigned long long)rank,
                        TED_TENSOR_MAX_DIMS);
    if (name_length < 2 || name_length > r->size)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: item %llu: a name length of %llu bytes (with its NUL) does not "
                        "fit the file of %zu bytes",
                        r->name, (unsigned long long)index, (unsigned long long)name_length,
                        r->size);
    t->type = ted_le_u64(h + 8);
    t->st.ndim = (int)rank;
    return TED_OK;
}

/* The dtype of the item's type code, once its name is known. */
static ted_status check_type(const bin_reader *r, ted_marian_tensor *t)
{
    const char *why = NULL;
    if (!type_dtype(t->type, &t->st.dtype, &why))
        return ted_fail(r->err, TED_ERR_FORMAT, "%s: item '%s': type 0x%llx is %s", r->name,
                        t->st.name, (unsigned long long)t->type, why);
    return TED_OK;
}

/* Copies the name of `t` from `*at`, which must hold a NUL at its declared
 * end and nowhere before it; moves *at past it. */
static ted_status take_name(const bin_reader *r, int index, uint64_t length, size_t *at,
                            ted_marian_tensor *t)
{
    if (length > r->size - *at)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: item %d: its name (%llu bytes) runs past the end of the file",
                        r->name, index, (unsigned long long)length);
    const char *name = (const char *)r->bytes + *at;
    size_t nul = strnlen(name, (size_t)length);
    if (nul != length - 1)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: item %d: its name of %llu bytes %s", r->name, index,
                        (unsigned long long)length,
                        nul == length ? "has no terminating NUL" : "holds a NUL before its end");
    t->st.name = ted_alloc(length, 1, "a tensor name", r->err);
    if (!t->st.name)
        return TED_ERR_NOMEM;
    memcpy(t->st.name, name, (size_t)length);
    *at += (size_t)length;
    return TED_OK;
}

static ted_status take_shape(const bin_reader *r, size_t *at, ted_marian_tensor *t)
{
    size_t need = (size_t)t->st.ndim * 4;
    if (need > r->size - *at)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: item '%s': its shape runs past the end of the file", r->name,
                        t->st.name);
    for (int d = 0; d < t->st.ndim; d++) {
        int32_t dim = ted_le_i32(r->bytes + *at + 4 * (size_t)d);
        if (dim < 0)
            return ted_fail(r->err, TED_ERR_FORMAT,
                            "%s: item '%s': dimension %d of its shape is negative (%d)",
                            r->name, t->st.name, d, (int)dim);
        t->st.shape[d] = dim;
    }
    *at += need;
    return TED_OK;
}

/* Reads the headers, names and shapes into file->tensors (file->count
 * grows with each name taken, for ted_marian_close); *at ends after the
 * shapes. */
static ted_status read_items(const bin_reader *r, ted_marian_file *file, uint64_t count,
                             size_t *at)
{
    file->tensors = ted_alloc((size_t)count, sizeof *file->tensors, "the tensor table", r->err);
    if (!file->tensors)
        return TED_ERR_NOMEM;
    for (uint64_t i = 0; i < count; i++) {
        ted_status status = check_header(r, i, r->bytes + 16 + BIN_HEADER_BYTES * i,
                                         &file->tensors[i]);
        if (status != TED_OK)
            return status;
    }
    *at = 16 + BIN_HEADER_BYTES * (size_t)count;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t length = ted_le_u64(r->bytes + 16 + BIN_HEADER_BYTES * i);
        ted_status status = take_name(r, (int)i, length, at, &file->tensors[i]);
        if (status != TED_OK)
            return status;
        file->count++;
        status = check_type(r, &file->tensors[i]);
        if (status != TED_OK)
            return status;
    }
    for (uint64_t i = 0; i < count; i++) {
        ted_status status = take_shape(r, at, &file->tensors[i]);
        if (status != TED_OK)
            return status;
    }
    return TED_OK;
}

/* The u64 padding length and the zero bytes after it, ending at a
 * multiple of 256; *at moves to the start of the data. */
static ted_status skip_padding(const bin_reader *r, size_t *at)
{
    if (r->size - *at < 8)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: the file ends before the padding length after the shapes",
                        r->name);
    uint64_t padding = ted_le_u64(r->bytes + *at);
    *at += 8;
    if (padding > BIN_ALIGN || padding > r->size - *at)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: a padding of %llu bytes before the data (Marian pads 1 to %d "
                        "bytes, within the file of %zu)",
                        r->name, (unsigned long long)padding, BIN_ALIGN, r->size);
    for (uint64_t i = 0; i < padding; i++)
        if (r->bytes[*at + i] != 0)
            return ted_fail(r->err, TED_ERR_FORMAT,
                            "%s: a byte of the padding before the data is not zero (at "
                            "offset %zu)",
                            r->name, *at + (size_t)i);
    *at += (size_t)padding;
    if (*at % BIN_ALIGN != 0)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: the data starts at offset %zu, not a multiple of %d", r->name,
                        *at, BIN_ALIGN);
    return TED_OK;
}

/* The quantization multiplier after an intgemm8 matrix's values. */
static ted_status take_multiplier(const bin_reader *r, const unsigned char *after,
                                  ted_marian_tensor *t)
{
    float mult;
    memcpy(&mult, after, sizeof mult);
    if (!isfinite(mult) || mult <= 0)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: item '%s': its quantization multiplier is %g, not a positive "
                        "finite number",
                        r->name, t->st.name, (double)mult);
    t->quant_mult = mult;
    t->transposed = strstr(t->st.name, "Wemb") == NULL;
    return TED_OK;
}

/* Points `t` at its data at *at, declared `length` bytes: at least its
 * values (and an intgemm8 matrix's multiplier), at most that rounded up to
 * 256 as Marian's allocator holds it. */
static ted_status place_data(const bin_reader *r, uint64_t length, size_t *at,
                             ted_marian_tensor *t)
{
    char shape[TED_SHAPE_TEXT];
    ted_shape_format(shape, sizeof shape, t->st.shape, t->st.ndim);
    size_t values;
    if (!ted_shape_bytes(t->st.shape, t->st.ndim, t->st.dtype, &values) ||
        values > SIZE_MAX - BIN_ALIGN - 4)
        return ted_fail(r->err, TED_ERR_FORMAT, "%s: item '%s': its shape %s is too large",
                        r->name, t->st.name, shape);
    size_t need = values + (is_intgemm8(t->type) ? 4 : 0);
    size_t rounded = (need + BIN_ALIGN - 1) / BIN_ALIGN * BIN_ALIGN;
    if (length < need || length > rounded)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: item '%s': %llu data bytes, but its shape %s of %s needs %zu%s",
                        r->name, t->st.name, (unsigned long long)length, shape,
                        ted_dtype_name(t->st.dtype), need,
                        need == rounded ? "" : " (or that rounded up to 256)");
    if (length > r->size - *at)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: item '%s': its %llu data bytes at offset %zu run past the end "
                        "of the file (%zu bytes)",
                        r->name, t->st.name, (unsigned long long)length, *at, r->size);
    t->st.data = r->bytes + *at;
    t->st.bytes = values;
    if (is_intgemm8(t->type)) {
        ted_status status = take_multiplier(r, r->bytes + *at + values, t);
        if (status != TED_OK)
            return status;
    }
    *at += (size_t)length;
    return TED_OK;
}

static ted_status parse_items(const bin_reader *r, ted_marian_file *file)
{
    if (r->size < 16)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: %zu bytes is too short for a Marian .bin header (version, count)",
                        r->name, r->size);
    uint64_t version = ted_le_u64(r->bytes), count = ted_le_u64(r->bytes + 8);
    if (version != BIN_VERSION)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: Marian .bin version %llu (ted reads version %d)", r->name,
                        (unsigned long long)version, BIN_VERSION);
    if (count > (r->size - 16) / BIN_HEADER_BYTES || count > INT32_MAX)
        return ted_fail(r->err, TED_ERR_FORMAT,
                        "%s: %llu items declared, more headers than the file of %zu bytes "
                        "holds",
                        r->name, (unsigned long long)count, r->size);
    size_t at;
    ted_status status = read_items(r, file, count, &at);
    if (status == TED_OK)
        status = skip_padding(r, &at);
    for (uint64_t i = 0; status == TED_OK && i < count; i++)
        status = place_data(r, ted_le_u64(r->bytes + 16 + BIN_HEADER_BYTES * i + 24), &at,
                            &file->tensors[i]);
    if (status == TED_OK && at != r->size)
        status = ted_fail(r->err, TED_ERR_FORMAT,
                          "%s: %zu bytes follow the last item's data (the file is %zu bytes, "
                          "its items end at %zu)",
                          r->name, r->size - at, r->size, at);
    return status;
}

ted_status ted_marian_bin_parse(const void *bytes, size_t size, const char *name,
                                ted_marian_file *file, ted_error *err)
{
    if (!file || (!bytes && size) || !name)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_marian_bin_parse: missing argument");
    memset(file, 0, sizeof *file);
    file->container = TED_MARIAN_BIN;
    file->bytes = bytes;
    file->size = size;
    bin_reader r = {.bytes = bytes, .size = size, .name = name, .err = err};
    return ted_marian_table_finish(file, parse_items(&r, file), name, err);
}
