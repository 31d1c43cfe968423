/* madvise(MADV_DONTNEED): POSIX_MADV_DONTNEED is a no-op on Linux */
#define _DEFAULT_SOURCE

#include "io/safetensors.h"

#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/mapped.h"
#include "io/little_endian.h"

/* Shape entries and offsets arrive as JSON doubles, which hold integers
 * exactly only up to 2^53. */
#define JSON_EXACT_INTEGER_MAX 9007199254740992.0

#define METADATA_KEY "__metadata__"


const char *ted_dtype_name(ted_dtype dtype)
{
    switch (dtype) {
    case TED_DTYPE_F32: return "F32";
    case TED_DTYPE_F16: return "F16";
    case TED_DTYPE_BF16: return "BF16";
    case TED_DTYPE_I8: return "I8";
    case TED_DTYPE_U8: return "U8";
    }
    return "?";
}

size_t ted_dtype_size(ted_dtype dtype)
{
    switch (dtype) {
    case TED_DTYPE_F32: return 4;
    case TED_DTYPE_F16: return 2;
    case TED_DTYPE_BF16: return 2;
    case TED_DTYPE_I8: return 1;
    case TED_DTYPE_U8: return 1;
    }
    return 0;
}

static bool dtype_from_name(const char *name, ted_dtype *dtype)
{
    static const ted_dtype known[] = {TED_DTYPE_F32, TED_DTYPE_F16, TED_DTYPE_BF16,
                                      TED_DTYPE_I8, TED_DTYPE_U8};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(name, ted_dtype_name(known[i])) == 0) {
            *dtype = known[i];
            return true;
        }
    }
    return false;
}

/* The length of the valid UTF-8 prefix of `s`: equal to `size` when all of
 * it is valid. Overlong forms, surrogates and code points past U+10FFFF are
 * invalid, as the format requires. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t size)
{
    size_t i = 0;
    while (i < size) {
        unsigned char c = s[i];
        size_t extra;
        uint32_t min, code;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            extra = 1;
            min = 0x80;
            code = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            extra = 2;
            min = 0x800;
            code = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            extra = 3;
            min = 0x10000;
            code = c & 0x07;
        } else {
            return i;
        }
        if (size - i <= extra)
            return i;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            code = code << 6 | (s[i + k] & 0x3F);
        }
        if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
            return i;
        i += extra + 1;
    }
    return size;
}

static bool is_json_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The offset of the first byte JSON refuses that cJSON would let through,
 * or `size`: a control character (below 0x20) inside a string or outside
 * the whitespace between tokens, and the escape \u0000. Either would cut a
 * name short ("a\0b" read as "a"). `*what` says which. */
static size_t first_hidden_control(const unsigned char *s, size_t size, const char **what)
{
    bool in_string = false;
    for (size_t i = 0; i < size; i++) {
        unsigned char c = s[i];
        if (c < 0x20 && (in_string || !is_json_space(c))) {
            *what = "a control character";
            return i;
        }
        if (!in_string) {
            in_string = c == '"';
        } else if (c == '"') {
            in_string = false;
        } else if (c == '\\' && i + 1 < size) {
            if (s[i + 1] == 'u' && size - i >= 6 && memcmp(s + i + 2, "0000", 4) == 0) {
                *what = "an escaped NUL (\\u0000)";
                return i;
            }
            if (s[i + 1] >= 0x20)
                i++;  /* the escaped character cannot end the string */
        }
    }
    return size;
}

/* A JSON number that is a whole number in [0, 2^53]. */
static bool json_to_count(const cJSON *item, uint64_t *value)
{
    if (!cJSON_IsNumber(item))
        return false;
    double d = item->valuedouble;
    if (!(d >= 0 && d <= JSON_EXACT_INTEGER_MAX))
        return false;
    uint64_t n = (uint64_t)d;
    if ((double)n != d)
        return false;
    *value = n;
    return true;
}

void ted_shape_format(char *out, size_t size, const int64_t *shape, int ndim)
{
    int used = snprintf(out, size, "[");
    for (int i = 0; i < ndim && used > 0 && (size_t)used < size; i++)
        used += snprintf(out + used, size - (size_t)used, "%s%lld", i ? ", " : "",
                         (long long)shape[i]);
    if (used > 0 && (size_t)used < size)
        snprintf(out + used, size - (size_t)used, "]");
}

/* A zero dimension empties the tensor whatever the others say, so it is
 * looked for before any product can overflow. */
bool ted_shape_bytes(const int64_t *shape, int ndim, ted_dtype dtype, size_t *bytes)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            *bytes = 0;
            return true;
        }
    }
    size_t total = ted_dtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        if ((uint64_t)shape[i] > SIZE_MAX)
            return false;
        total = ted_mul_size(total, (size_t)shape[i]);
        if (total == SIZE_MAX)
            return false;
    }
    *bytes = total;
    return true;
}

static ted_status parse_dtype(const cJSON *entry, const char *file_name, const char *tensor,
                              ted_dtype *dtype, ted_error *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    if (!item)
        return ted_fail(err, TED_ERR_FORMAT, "%s: tensor '%s': no \"dtype\"", file_name, tensor);
    if (!cJSON_IsString(item))
        return ted_fail(err, TED_ERR_FORMAT, "%s: tensor '%s': \"dtype\" is not a string",
                        file_name, tensor);
    if (!dtype_from_name(item->valuestring, dtype))
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: tensor '%s': unsupported dtype '%s' (expected F32, F16, BF16, I8 or U8)",
                        file_name, tensor, item->valuestring);
    return TED_OK;
}

static ted_status parse_shape(const cJSON *entry, const char *file_name, const char *tensor,
                              int64_t *shape, int *ndim, ted_error *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    if (!item)
        return ted_fail(err, TED_ERR_FORMAT, "%s: tensor '%s': no \"shape\"", file_name, tensor);
    if (!cJSON_IsArray(item))
        return ted_fail(err, TED_ERR_FORMAT, "%s: tensor '%s': \"shape\" is not an array",
                        file_name, tensor);
    int dims = 0;
    const cJSON *dim;
    cJSON_ArrayForEach(dim, item) {
        if (dims == TED_TENSOR_MAX_DIMS)
            return ted_fail(err, TED_ERR_FORMAT,
                            "%s: tensor '%s': shape has %d dimensions, more than the %d supported",
                            file_name, tensor, cJSON_GetArraySize(item), TED_TENSOR_MAX_DIMS);
        uint64_t value;
        if (!json_to_count(dim, &value))
            return ted_fail(err, TED_ERR_FORMAT,
                            "%s: tensor '%s': shape[%d] is not a whole number in [0, 2^53]",
                            file_name, tensor, dims);
        shape[dims++] = (int64_t)value;
    }
    *ndim = dims;
    return TED_OK;
}

static ted_status parse_offsets(const cJSON *entry, const char *file_name, const char *tensor,
                                uint64_t data_size, uint64_t *begin, uint64_t *end,
                                ted_error *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!item)
        return ted_fail(err, TED_ERR_FORMAT, "%s: tensor '%s': no \"data_offsets\"", file_name,
                        tensor);
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: tensor '%s': \"data_offsets\" is not an array of 2 numbers",
                        file_name, tensor);
    if (!json_to_count(item->child, begin) || !json_to_count(item->child->next, end))
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets are not whole numbers in [0, 2^53]",
                        file_name, tensor);
    if (*begin > *end)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets [%llu, %llu] are reversed", file_name,
                        tensor, (unsigned long long)*begin, (unsigned long long)*end);
    if (*end > data_size)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets [%llu, %llu] end past the %llu-byte data "
                        "section (file truncated?)",
                        file_name, tensor, (unsigned long long)*begin, (unsigned long long)*end,
                        (unsigned long long)data_size);
    return TED_OK;
}

/* Fills `tensor` from one header entry; `data` is the start of the data
 * section, `data_size` its length. */
static ted_status parse_tensor(const cJSON *entry, const char *file_name,
                               const unsigned char *data, uint64_t data_size,
                               ted_st_tensor *tensor, ted_error *err)
{
    const char *name = entry->string;
    if (name[0] == '\0')
        return ted_fail(err, TED_ERR_FORMAT, "%s: a tensor has an empty name", file_name);
    if (!cJSON_IsObject(entry))
        return ted_fail(err, TED_ERR_FORMAT, "%s: tensor '%s': entry is not an object",
                        file_name, name);

    ted_dtype dtype = TED_DTYPE_F32;
    int64_t shape[TED_TENSOR_MAX_DIMS] = {0};
    int ndim = 0;
    uint64_t begin = 0, end = 0;
    ted_status status = parse_dtype(entry, file_name, name, &dtype, err);
    if (status == TED_OK)
        status = parse_shape(entry, file_name, name, shape, &ndim, err);
    if (status == TED_OK)
        status = parse_offsets(entry, file_name, name, data_size, &begin, &end, err);
    if (status != TED_OK)
        return status;

    char shape_text[TED_SHAPE_TEXT];
    size_t needed;
    if (!ted_shape_bytes(shape, ndim, dtype, &needed)) {
        ted_shape_format(shape_text, sizeof shape_text, shape, ndim);
        return ted_fail(err, TED_ERR_FORMAT, "%s: tensor '%s': shape %s of %s overflows size_t",
                        file_name, name, shape_text, ted_dtype_name(dtype));
    }
    if (end - begin != needed) {
        ted_shape_format(shape_text, sizeof shape_text, shape, ndim);
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes but shape %s "
                        "of %s needs %zu",
                        file_name, name, (unsigned long long)begin, (unsigned long long)end,
                        (unsigned long long)(end - begin), shape_text, ted_dtype_name(dtype),
                        needed);
    }

    size_t name_size = strlen(name) + 1;
    tensor->name = ted_alloc(name_size, 1, "safetensors tensor name", err);
    if (!tensor->name)
        return ted_fail_context(err, "%s: tensor '%s'", file_name, name);
    memcpy(tensor->name, name, name_size);
    tensor->dtype = dtype;
    tensor->ndim = ndim;
    memcpy(tensor->shape, shape, sizeof shape);
    tensor->data = data + begin;
    tensor->bytes = needed;
    return TED_OK;
}

static int compare_by_name(const void *a, const void *b)
{
    return strcmp(((const ted_st_tensor *)a)->name, ((const ted_st_tensor *)b)->name);
}

static int compare_by_position(const void *a, const void *b)
{
    const ted_st_tensor *x = *(const ted_st_tensor *const *)a;
    const ted_st_tensor *y = *(const ted_st_tensor *const *)b;
    const unsigned char *px = x->data, *py = y->data;
    if (px != py)
        return px < py ? -1 : 1;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* Sorts the tensors by name (so find() can bisect) and rejects a name that
 * appears twice: cJSON keeps duplicate keys rather than refusing them. */
static ted_status sort_and_check_names(ted_safetensors *file, const char *file_name,
                                       ted_error *err)
{
    if (file->count == 0)
        return TED_OK;
    qsort(file->tensors, (size_t)file->count, sizeof *file->tensors, compare_by_name);
    for (int i = 1; i < file->count; i++) {
        if (strcmp(file->tensors[i - 1].name, file->tensors[i].name) == 0)
            return ted_fail(err, TED_ERR_FORMAT, "%s: tensor '%s' appears twice in the header",
                            file_name, file->tensors[i].name);
    }
    return TED_OK;
}

/* Two tensors sharing bytes would let a write through one alias the other
 * and usually mean a corrupt header. An empty tensor owns no bytes. */
static ted_status check_overlaps(const ted_safetensors *file, const char *file_name,
                                 const unsigned char *data, ted_error *err)
{
    if (file->count < 2)
        return TED_OK;
    const ted_st_tensor **order =
        ted_alloc((size_t)file->count, sizeof *order, "safetensors tensor order", err);
    if (!order)
        return ted_fail_context(err, "%s", file_name);
    for (int i = 0; i < file->count; i++)
        order[i] = &file->tensors[i];
    qsort(order, (size_t)file->count, sizeof *order, compare_by_position);

    ted_status status = TED_OK;
    const ted_st_tensor *reach_owner = NULL;  /* the tensor ending furthest so far */
    for (int i = 0; i < file->count && status == TED_OK; i++) {
        const ted_st_tensor *t = order[i];
        if (t->bytes == 0)
            continue;
        const unsigned char *begin = t->data;
        if (reach_owner) {
            const unsigned char *owner_begin = reach_owner->data;
            if (begin < owner_begin + reach_owner->bytes) {
                size_t b1 = (size_t)(owner_begin - data), b2 = (size_t)(begin - data);
                status = ted_fail(err, TED_ERR_FORMAT,
                                  "%s: tensors '%s' [%zu, %zu] and '%s' [%zu, %zu] overlap",
                                  file_name, reach_owner->name, b1, b1 + reach_owner->bytes,
                                  t->name, b2, b2 + t->bytes);
            }
        }
        if (!reach_owner ||
            begin + t->bytes > (const unsigned char *)reach_owner->data + reach_owner->bytes)
            reach_owner = t;
    }
    free(order);
    return status;
}

/* Counts the JSON values (strings, numbers, literals, arrays, objects) and
 * the deepest nesting of the header's text, outside strings; fails at the
 * first bound passed. The text holds no control bytes (checked before). */
static ted_status check_header_size(const unsigned char *s, size_t size,
                                    const char *file_name, ted_error *err)
{
    size_t values = 0;
    int depth = 0;
    bool in_string = false, in_scalar = false;
    for (size_t i = 0; i < size; i++) {
        unsigned char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
            continue;
        }
        bool scalar_char = !is_json_space(c) && !strchr("{}[],:\"", c);
        values += (c == '"' || c == '{' || c == '[' || (scalar_char && !in_scalar));
        in_scalar = scalar_char;
        in_string = c == '"';
        depth += (c == '{' || c == '[') - (c == '}' || c == ']');
        if (depth > SAFETENSORS_HEADER_MAX_DEPTH)
            return ted_fail(err, TED_ERR_FORMAT,
                            "%s: header nests deeper than %d levels (at header byte %zu); a "
                            "safetensors header has %d",
                            file_name, SAFETENSORS_HEADER_MAX_DEPTH, i,
                            SAFETENSORS_HEADER_MAX_DEPTH);
        if (values > SAFETENSORS_HEADER_MAX_VALUES)
            return ted_fail(err, TED_ERR_FORMAT,
                            "%s: header holds more than %d JSON values (at header byte %zu); "
                            "a safetensors header describes a tensor in about 8",
                            file_name, SAFETENSORS_HEADER_MAX_VALUES, i);
    }
    return TED_OK;
}

/* The header as a cJSON object. The mapping has no NUL after the header, so
 * cJSON reads a NUL-terminated copy: whatever the header holds, the parser
 * stays inside memory we own. */
static ted_status parse_header_json(const unsigned char *header, size_t size,
                                    const char *file_name, cJSON **root, ted_error *err)
{
    size_t valid = utf8_valid_prefix(header, size);
    if (valid != size)
        return ted_fail(err, TED_ERR_FORMAT, "%s: header is not valid UTF-8 (at header byte %zu)",
                        file_name, valid);

    const char *what = NULL;
    size_t control = first_hidden_control(header, size, &what);
    if (control != size)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: header is not valid JSON: %s at header byte %zu", file_name, what,
                        control);
    ted_status status = check_header_size(header, size, file_name, err);
    if (status != TED_OK)
        return status;

    char *copy = ted_alloc(size + 1, 1, "safetensors header", err);
    if (!copy)
        return ted_fail_context(err, "%s", file_name);
    memcpy(copy, header, size);

    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts(copy, size, &end, 0);
    size_t stop = end ? (size_t)(end - copy) : 0;
    if (!*root) {
        free(copy);
        return ted_fail(err, TED_ERR_FORMAT, "%s: header is not valid JSON (at header byte %zu)",
                        file_name, stop);
    }
    while (stop < size && is_json_space((unsigned char)copy[stop]))
        stop++;
    free(copy);
    if (stop != size) {
        cJSON_Delete(*root);
        *root = NULL;
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: header has data after its JSON object (at header byte %zu)",
                        file_name, stop);
    }
    if (!cJSON_IsObject(*root)) {
        cJSON_Delete(*root);
        *root = NULL;
        return ted_fail(err, TED_ERR_FORMAT, "%s: header is not a JSON object", file_name);
    }
    return TED_OK;
}

static bool is_metadata(const cJSON *entry)
{
    return strcmp(entry->string, METADATA_KEY) == 0;
}

/* The string entries of the "__metadata__" object into file->metadata. */
static ted_status parse_metadata(const cJSON *object, const char *file_name,
                                 ted_safetensors *file, ted_error *err)
{
    if (file->metadata)
        return ted_fail(err, TED_ERR_FORMAT, "%s: \"%s\" is given twice", file_name,
                        METADATA_KEY);
    int count = cJSON_GetArraySize(object);
    file->metadata = ted_alloc(count ? (size_t)count : 1, sizeof *file->metadata,
                               "safetensors metadata", err);
    if (!file->metadata)
        return ted_fail_context(err, "%s", file_name);
    const cJSON *item;
    cJSON_ArrayForEach(item, object) {
        if (!cJSON_IsString(item))
            continue;
        ted_st_metadata *m = &file->metadata[file->metadata_count];
        m->key = strdup(item->string);
        m->value = strdup(item->valuestring);
        if (!m->key || !m->value) {
            free(m->key);
            free(m->value);
            return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory for \"%s\"", file_name,
                            METADATA_KEY);
        }
        file->metadata_count++;
    }
    return TED_OK;
}

const char *ted_safetensors_metadata(const ted_safetensors *file, const char *key)
{
    for (int i = 0; i < file->metadata_count; i++)
        if (!strcmp(file->metadata[i].key, key))
            return file->metadata[i].value;
    return NULL;
}

static ted_status parse_entries(const cJSON *root, const char *file_name,
                                const unsigned char *data, uint64_t data_size,
                                ted_safetensors *file, ted_error *err)
{
    /* An entry takes at least 7 header bytes, so the header limit keeps
     * the count far inside an int. */
    size_t count = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, root) {
        if (!is_metadata(entry))
            count++;
    }
    file->tensors = ted_alloc(count, sizeof *file->tensors, "safetensors tensors", err);
    if (!file->tensors)
        return ted_fail_context(err, "%s", file_name);

    cJSON_ArrayForEach(entry, root) {
        if (is_metadata(entry)) {
            if (!cJSON_IsObject(entry))
                return ted_fail(err, TED_ERR_FORMAT, "%s: \"%s\" is not an object", file_name,
                                METADATA_KEY);
            ted_status status = parse_metadata(entry, file_name, file, err);
            if (status != TED_OK)
                return status;
            continue;
        }
        ted_status status =
            parse_tensor(entry, file_name, data, data_size, &file->tensors[file->count], err);
        if (status != TED_OK)
            return status;
        file->count++;
    }
    return TED_OK;
}

ted_status ted_safetensors_parse(const void *bytes, size_t size, const char *name,
                                 ted_safetensors *file, ted_error *err)
{
    if (!file || !name || (!bytes && size > 0))
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_safetensors_parse: missing argument");
    memset(file, 0, sizeof *file);
    if (size < 8)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: %zu bytes is too short for the 8-byte header length", name, size);

    const unsigned char *start = bytes;
    uint64_t header_size = ted_le_u64(start);
    if (header_size > SAFETENSORS_HEADER_MAX_BYTES)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: header length %llu is over the %llu-byte limit", name,
                        (unsigned long long)header_size,
                        (unsigned long long)SAFETENSORS_HEADER_MAX_BYTES);
    if (header_size > size - 8)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: header length %llu runs past the end of the %zu-byte file", name,
                        (unsigned long long)header_size, size);

    cJSON *root = NULL;
    ted_status status = parse_header_json(start + 8, (size_t)header_size, name, &root, err);
    if (status != TED_OK)
        return status;

    const unsigned char *data = start + 8 + header_size;
    uint64_t data_size = size - 8 - header_size;
    status = parse_entries(root, name, data, data_size, file, err);
    cJSON_Delete(root);
    if (status == TED_OK)
        status = sort_and_check_names(file, name, err);
    if (status == TED_OK)
        status = check_overlaps(file, name, data, err);
    if (status != TED_OK) {
        ted_safetensors_close(file);
        return status;
    }
    file->bytes = start;
    file->size = size;
    return TED_OK;
}

/* ted_safetensors_parse, for ted_map_parse. */
static ted_status parse_whole(const void *bytes, size_t size, const char *name, void *into,
                              ted_error *err)
{
    return ted_safetensors_parse(bytes, size, name, into, err);
}

ted_status ted_safetensors_open(const char *path, ted_safetensors *file, ted_error *err)
{
    if (!path || !file)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_safetensors_open: missing argument");
    memset(file, 0, sizeof *file);
    ted_status status = ted_map_parse(path, parse_whole, file, err);
    file->mapped = status == TED_OK;
    return status;
}

void ted_safetensors_release(const ted_safetensors *file, const void *data, size_t bytes)
{
    uintptr_t begin = (uintptr_t)data, end = begin + bytes;
    uintptr_t file_begin = (uintptr_t)file->bytes, file_end = file_begin + file->size;
    if (!file->mapped || begin < file_begin || end > file_end || end < begin)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
    /* advice only: if the kernel declines, the pages just stay resident */
    if (first < last)
        (void)madvise((void *)first, last - first, MADV_DONTNEED);
}

/* The index of the first element whose exponent bits are all ones (NaN or
 * infinity) among `count` elements of `size` bytes, or `count`. Blocks are
 * counted first, which vectorizes, and only a block that holds one is
 * searched element by element. */
static size_t first_non_finite(const unsigned char *p, size_t count, size_t size,
                               uint32_t exponent_mask)
{
    enum { BLOCK = 1024 };
    for (size_t start = 0; start < count; start += BLOCK) {
        size_t n = count - start < BLOCK ? count - start : BLOCK;
        const unsigned char *q = p + start * size;
        size_t hits = 0;
        if (size == 4) {
            for (size_t i = 0; i < n; i++) {
                uint32_t bits;
                memcpy(&bits, q + 4 * i, 4);
                hits += (bits & exponent_mask) == exponent_mask;
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                uint16_t bits;
                memcpy(&bits, q + 2 * i, 2);
                hits += (bits & exponent_mask) == exponent_mask;
            }
        }
        if (hits == 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            uint32_t bits = 0;
            if (size == 4) {
                memcpy(&bits, q + 4 * i, 4);
            } else {
                uint16_t half;
                memcpy(&half, q + 2 * i, 2);
                bits = half;
            }
            if ((bits & exponent_mask) == exponent_mask)
                return start + i;
        }
    }
    return count;
}

ted_status ted_safetensors_check_finite(const ted_st_tensor *tensor, const char *file_name,
                                        ted_error *err)
{
    if (!tensor || !file_name)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_safetensors_check_finite: missing argument");
    if (tensor->dtype == TED_DTYPE_I8 || tensor->dtype == TED_DTYPE_U8)
        return TED_OK;  /* integers are always finite */
    size_t size = ted_dtype_size(tensor->dtype);
    uint32_t exponent = tensor->dtype == TED_DTYPE_F32   ? 0x7F800000u
                        : tensor->dtype == TED_DTYPE_F16 ? 0x7C00u
                                                         : 0x7F80u;
    uint32_t mantissa = tensor->dtype == TED_DTYPE_F32   ? 0x007FFFFFu
                        : tensor->dtype == TED_DTYPE_F16 ? 0x03FFu
                                                         : 0x007Fu;
    uint32_t sign = size == 4 ? 0x80000000u : 0x8000u;
    size_t count = size ? tensor->bytes / size : 0;
    const unsigned char *p = tensor->data;
    size_t at = first_non_finite(p, count, size, exponent);
    if (at == count)
        return TED_OK;
    uint32_t bits = 0;
    if (size == 4) {
        memcpy(&bits, p + 4 * at, 4);
    } else {
        uint16_t half;
        memcpy(&half, p + 2 * at, 2);
        bits = half;
    }
    const char *kind = (bits & mantissa) ? "NaN" : (bits & sign) ? "-inf" : "+inf";
    /* The element's coordinates, last dimension fastest. */
    int64_t index[TED_TENSOR_MAX_DIMS] = {0};
    size_t rest = at;
    for (int d = tensor->ndim - 1; d >= 0; d--) {
        uint64_t extent = (uint64_t)tensor->shape[d];
        index[d] = extent ? (int64_t)(rest % extent) : 0;
        rest = extent ? rest / extent : 0;
    }
    char where[TED_SHAPE_TEXT];
    ted_shape_format(where, sizeof where, index, tensor->ndim);
    return ted_fail(err, TED_ERR_WEIGHTS,
                    "%s: tensor '%s' holds %s at %s (element %zu); weights must be finite",
                    file_name, tensor->name, kind, where, at);
}

static int compare_name_to_tensor(const void *key, const void *element)
{
    return strcmp(key, ((const ted_st_tensor *)element)->name);
}

const ted_st_tensor *ted_safetensors_find(const ted_safetensors *file, const char *name)
{
    if (!file || !name || file->count <= 0)
        return NULL;
    return bsearch(name, file->tensors, (size_t)file->count, sizeof *file->tensors,
                   compare_name_to_tensor);
}

void ted_safetensors_close(ted_safetensors *file)
{
    if (!file)
        return;
    for (int i = 0; i < file->count; i++)
        free(file->tensors[i].name);
    free(file->tensors);
    for (int i = 0; i < file->metadata_count; i++) {
        free(file->metadata[i].key);
        free(file->metadata[i].value);
    }
    free(file->metadata);
    if (file->mapped)
        ted_unmap_file(file->bytes, file->size);
    memset(file, 0, sizeof *file);
}
