/* One NumPy .npy array (io/npy.h). */
#include "io/npy.h"

#include <string.h>

#include "core/error.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_BYTES 6

typedef struct dict_reader {
    const char *at, *end;
} dict_reader;

/* What the header's three keys give. */
typedef struct npy_header {
    const char *descr;
    size_t descr_length;
    bool fortran_order;
    int ndim;
    int64_t shape[TED_TENSOR_MAX_DIMS];
    unsigned seen;   /* a bit per key */
    bool too_many_dims;
} npy_header;

static void skip_space(dict_reader *d)
{
    while (d->at < d->end && (*d->at == ' ' || *d->at == '\t'))
        d->at++;
}

static bool take_char(dict_reader *d, char c)
{
    skip_space(d);
    if (d->at == d->end || *d->at != c)
        return false;
    d->at++;
    return true;
}

/* A quoted string without escapes. */
static bool take_string(dict_reader *d, const char **s, size_t *n)
{
    skip_space(d);
    if (d->at == d->end || (*d->at != '\'' && *d->at != '"'))
        return false;
    char quote = *d->at++;
    const char *start = d->at;
    while (d->at < d->end && *d->at != quote) {
        if (*d->at == '\\')
            return false;
        d->at++;
    }
    if (d->at == d->end)
        return false;
    *s = start;
    *n = (size_t)(d->at - start);
    d->at++;
    return true;
}

static bool take_word(dict_reader *d, const char *word)
{
    size_t n = strlen(word);
    skip_space(d);
    if ((size_t)(d->end - d->at) < n || memcmp(d->at, word, n) != 0)
        return false;
    d->at += n;
    return true;
}

/* A non-negative decimal integer (Python 2's trailing L allowed). */
static bool take_dim(dict_reader *d, int64_t *value)
{
    skip_space(d);
    const char *start = d->at;
    int64_t v = 0;
    for (; d->at < d->end && *d->at >= '0' && *d->at <= '9'; d->at++) {
        if (v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (*d->at - '0');
    }
    if (d->at == start)
        return false;
    if (d->at < d->end && *d->at == 'L')
        d->at++;
    *value = v;
    return true;
}

/* "(d0, d1, ...)", a trailing comma allowed; "()" for a scalar. */
static bool take_shape(dict_reader *d, npy_header *h)
{
    if (!take_char(d, '('))
        return false;
    h->ndim = 0;
    while (!take_char(d, ')')) {
        int64_t dim;
        if (!take_dim(d, &dim))
            return false;
        if (h->ndim == TED_TENSOR_MAX_DIMS) {
            h->too_many_dims = true;
            return false;
        }
        h->shape[h->ndim++] = dim;
        if (!take_char(d, ',')) {
            if (!take_char(d, ')') || h->ndim == 1)  /* (n) is no tuple */
                return false;
            break;
        }
    }
    return true;
}

static bool take_entry(dict_reader *d, npy_header *h)
{
    const char *key;
    size_t n;
    if (!take_string(d, &key, &n) || !take_char(d, ':'))
        return false;
    unsigned bit;
    bool ok;
    if (n == 5 && memcmp(key, "descr", 5) == 0) {
        bit = 1;
        ok = take_string(d, &h->descr, &h->descr_length);
    } else if (n == 13 && memcmp(key, "fortran_order", 13) == 0) {
        bit = 2;
        ok = take_word(d, "True") ? (h->fortran_order = true)
                                  : take_word(d, "False");
    } else if (n == 5 && memcmp(key, "shape", 5) == 0) {
        bit = 4;
        ok = take_shape(d, h);
    } else {
        return false;
    }
    if (!ok || (h->seen & bit))
        return false;
    h->seen |= bit;
    return true;
}

/* The dict, then only spaces up to the closing newline. */
static bool parse_dict(const char *text, size_t length, npy_header *h)
{
    dict_reader d = {.at = text, .end = text + length};
    if (length == 0 || text[length - 1] != '\n')
        return false;
    d.end--;
    if (!take_char(&d, '{'))
        return false;
    while (!take_char(&d, '}')) {
        if (!take_entry(&d, h))
            return false;
        if (!take_char(&d, ',')) {
            if (!take_char(&d, '}'))
                return false;
            break;
        }
    }
    skip_space(&d);
    return d.at == d.end && h->seen == 7;
}

static bool descr_is(const npy_header *h, const char *descr)
{
    return h->descr_length == strlen(descr) && memcmp(h->descr, descr, h->descr_length) == 0;
}

/* The dtype and Marian type code of a descr ted reads. */
static bool descr_dtype(const npy_header *h, ted_marian_tensor *t)
{
    static const struct {
        const char *descr;
        ted_dtype dtype;
        uint64_t type;
    } known[] = {
        {"<f4", TED_DTYPE_F32, TED_MARIAN_FLOAT32}, {"<f2", TED_DTYPE_F16, TED_MARIAN_FLOAT16},
        {"|i1", TED_DTYPE_I8, TED_MARIAN_INT8},     {"<i1", TED_DTYPE_I8, TED_MARIAN_INT8},
        {"|u1", TED_DTYPE_U8, TED_MARIAN_UINT8},    {"<u1", TED_DTYPE_U8, TED_MARIAN_UINT8},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (descr_is(h, known[i].descr)) {
            t->st.dtype = known[i].dtype;
            t->type = known[i].type;
            return true;
        }
    }
    return false;
}

/* The header's length and where the values start, by format version. */
static ted_status header_span(const unsigned char *bytes, size_t size, const char *file_name,
                              const char *member, size_t *start, size_t *length,
                              ted_error *err)
{
    if (size < NPY_MAGIC_BYTES + 4 || memcmp(bytes, NPY_MAGIC, NPY_MAGIC_BYTES) != 0)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: member '%s.npy' is not a NumPy array (no \\x93NUMPY magic)",
                        file_name, member);
    unsigned major = bytes[6];
    if (major == 1) {
        *start = 10;
        *length = (size_t)bytes[8] | (size_t)bytes[9] << 8;
    } else if ((major == 2 || major == 3) && size >= 12) {
        *start = 12;
        *length = (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 |
                  (size_t)bytes[11] << 24;
    } else {
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': NumPy format version %u (ted reads 1 to 3)",
                        file_name, member, major);
    }
    if (*length > size - *start)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': its header of %zu bytes runs past the member's "
                        "%zu",
                        file_name, member, *length, size);
    return TED_OK;
}

static ted_status check_header(const npy_header *h, const char *file_name, const char *member,
                               ted_marian_tensor *t, ted_error *err)
{
    if (h->too_many_dims)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': more than %d dimensions", file_name, member,
                        TED_TENSOR_MAX_DIMS);
    if (h->seen != 7)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': its header is not the dict NumPy writes "
                        "({'descr': ..., 'fortran_order': ..., 'shape': (...), })",
                        file_name, member);
    if (!descr_dtype(h, t))
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': dtype '%.*s' (ted reads '<f4', '<f2', '|i1', "
                        "'|u1')",
                        file_name, member, (int)h->descr_length, h->descr);
    if (h->fortran_order)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: member '%s.npy' is in Fortran order (ted reads C order)",
                        file_name, member);
    return TED_OK;
}

ted_status ted_npy_parse(const unsigned char *bytes, size_t size, const char *file_name,
                         ted_marian_tensor *t, ted_error *err)
{
    const char *member = t->st.name;
    size_t start = 0, length = 0;
    ted_status status = header_span(bytes, size, file_name, member, &start, &length, err);
    if (status != TED_OK)
        return status;
    npy_header h = {0};
    if (!parse_dict((const char *)bytes + start, length, &h))
        h.seen = h.too_many_dims ? h.seen : 0;
    status = check_header(&h, file_name, member, t, err);
    if (status != TED_OK)
        return status;
    t->st.ndim = h.ndim;
    memcpy(t->st.shape, h.shape, sizeof h.shape);
    size_t values, left = size - start - length;
    char shape[TED_SHAPE_TEXT];
    ted_shape_format(shape, sizeof shape, h.shape, h.ndim);
    if (!ted_shape_bytes(h.shape, h.ndim, t->st.dtype, &values))
        return ted_fail(err, TED_ERR_FORMAT, "%s: member '%s.npy': its shape %s is too large",
                        file_name, member, shape);
    if (values != left)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: member '%s.npy': %zu bytes of values, but its shape %s of %s "
                        "needs %zu",
                        file_name, member, left, shape, ted_dtype_name(t->st.dtype), values);
    t->st.data = bytes + start + length;
    t->st.bytes = values;
    return TED_OK;
}
