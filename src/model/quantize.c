/* ted quantize (ted/quantize.h): the float model is loaded (so only a
 * model ted runs is quantized), its weights file rewritten with int8 or
 * bfloat16 matrices, the other files copied.
 *
 * The model is loaded unpacked (no panels), and each tensor's mapped pages
 * are let go once it is checked and once it is written: the resident
 * memory holds about one tensor of the file at a time, not the file and
 * its panels (measurements: docs/performance.md#bf16-measured). */
#include "ted/quantize.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/file.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "model/weights.h"

/* ---- the symmetric per-row quantization ------------------------------------ */

/* scale = max |row| / 127. */
static float row_scale(const float *row, int64_t cols)
{
    float m = 0.0f;
    for (int64_t c = 0; c < cols; c++)
        m = fabsf(row[c]) > m ? fabsf(row[c]) : m;
    return m / 127.0f;
}

/* q (cols) = row / scale rounded to the nearest integer, ties to even;
 * zeros when scale is 0. */
static void quantize_row(int8_t *q, const float *row, int64_t cols, float scale)
{
    for (int64_t c = 0; c < cols; c++) {
        float v = scale > 0.0f ? rintf(row[c] / scale) : 0.0f;
        q[c] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
    }
}

/* ---- the symmetric per-group int4 quantization (kernels.h) ------------------ */

/* scales (groups) = max |group| / 7, each group TED_I4_GROUP columns of
 * row (the last one what is left). */
static void group_scales(float *scales, const float *row, int64_t cols)
{
    for (int64_t g = 0; g * TED_I4_GROUP < cols; g++) {
        int64_t n = cols - g * TED_I4_GROUP < TED_I4_GROUP ? cols - g * TED_I4_GROUP
                                                           : TED_I4_GROUP;
        scales[g] = row_scale(row + g * TED_I4_GROUP, n) * (127.0f / 7.0f);
    }
}

/* packed (groups * TED_I4_GROUP / 2) = row in int4: each value divided by
 * its group's scale, rounded to the nearest integer (ties to even) in
 * [-7, 7], plus 8; the columns past cols are zeros (8). */
static void pack_i4_row(uint8_t *packed, const float *row, int64_t cols, const float *scales)
{
    int64_t groups = (cols + TED_I4_GROUP - 1) / TED_I4_GROUP, half = TED_I4_GROUP / 2;
    for (int64_t g = 0; g < groups; g++)
        for (int64_t k = 0; k < half; k++) {
            uint8_t nibble[2];
            for (int e = 0; e < 2; e++) {
                int64_t c = g * TED_I4_GROUP + k + e * half;
                float v = c < cols && scales[g] > 0.0f ? rintf(row[c] / scales[g]) : 0.0f;
                nibble[e] = (uint8_t)((v > 7.0f ? 7.0f : v < -7.0f ? -7.0f : v) + 8.0f);
            }
            packed[g * half + k] = (uint8_t)(nibble[0] | nibble[1] << 4);
        }
}

/* ---- what the new file holds ------------------------------------------------ */

typedef enum entry_kind {
    ENTRY_VECTOR,  /* a float tensor kept as F32 */
    ENTRY_MATRIX,  /* the I8, BF16 or U8 (int4) values of a matrix */
    ENTRY_SCALE,   /* the F32 scales of a matrix, "NAME.scale" */
} entry_kind;

typedef struct entry {
    char name[300];
    entry_kind kind;
    ted_quantize_dtype as;  /* a matrix's type, and its scales' */
    bool groups;            /* an int8 matrix in the products' groups (mapped layout) */
    const ted_st_tensor *source;
    int ndim;
    int64_t shape[3];
    size_t bytes;
} entry;

/* Matrices in groups first (64-byte multiples), then the F32 tensors, then
 * the other matrices. */
static int entry_rank(const entry *e)
{
    return e->kind != ENTRY_MATRIX ? 1 : e->groups ? 0 : 2;
}

static int compare_entries(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (entry_rank(x) != entry_rank(y))
        return entry_rank(x) - entry_rank(y);
    return strcmp(x->name, y->name);
}

/* The entries of the matrix t stored `as`: its values (in groups when
 * in_groups, an int8 matrix), then its scales (none for bf16), at e.
 * Returns how many. */
static int matrix_entries(entry *e, const ted_st_tensor *t, ted_quantize_dtype as,
                          bool in_groups)
{
    int64_t rows = t->shape[0], cols = t->shape[1];
    int64_t groups = (cols + TED_I4_GROUP - 1) / TED_I4_GROUP;
    bool i4 = as == TED_QUANTIZE_INT4;
    size_t element = as == TED_QUANTIZE_BF16 ? sizeof(uint16_t) : sizeof(int8_t);
    int64_t stored_cols = i4 ? groups * (TED_I4_GROUP / 2) : cols;
    e[0] = (entry){.kind = ENTRY_MATRIX, .as = as, .source = t, .ndim = 2,
                   .shape = {rows, stored_cols},
                   .bytes = (size_t)rows * (size_t)stored_cols * element};
    snprintf(e[0].name, sizeof e->name, "%s", t->name);
    if (in_groups) {
        int64_t steps = (cols + 3) / 4;
        e[0].groups = true;
        e[0].ndim = 3;
        e[0].shape[0] = (rows + TED_I8_GROUP_ROWS - 1) / TED_I8_GROUP_ROWS;
        e[0].shape[1] = steps;
        e[0].shape[2] = 64;
        e[0].bytes = ted_i8_packed_bytes((int)rows, (int)cols);
    }
    if (as == TED_QUANTIZE_BF16)
        return 1;
    e[1] = (entry){.kind = ENTRY_SCALE, .as = as, .source = t, .ndim = i4 ? 2 : 1,
                   .shape = {rows, groups},
                   .bytes = (size_t)rows * (size_t)(i4 ? groups : 1) * sizeof(float)};
    snprintf(e[1].name, sizeof e->name, "%s.scale", t->name);
    return 2;
}

/* How the matrix t is stored: as[0] its type (with int4 only the inner
 * Linear weights are int4, the other matrices int8), as[1] whether in
 * groups (an int8 Linear weight of the mapped layout). */
static ted_status matrix_storage(const ted_model *m, const ted_st_tensor *t,
                                 ted_quantize_dtype dtype, ted_quantize_layout layout,
                                 int as[2], ted_error *err)
{
    ted_linear_role role = TED_LINEAR_NONE;
    ted_status s = ted_weights_linear_role(m, t->data, &role, err);
    if (s)
        return s;
    as[0] = dtype == TED_QUANTIZE_INT4 && role != TED_LINEAR_INNER ? TED_QUANTIZE_INT8
                                                                    : (int)dtype;
    as[1] = layout == TED_LAYOUT_GROUPS && as[0] == TED_QUANTIZE_INT8 &&
            role != TED_LINEAR_NONE;
    return TED_OK;
}

/* Every tensor of m's file (compare_entries's order): an int8 or int4
 * matrix as two entries (its values and its scales), a bf16 one as one. */
static ted_status plan_entries(const ted_model *m, const char *path, ted_quantize_dtype dtype,
                               ted_quantize_layout layout, entry **out, int *count,
                               ted_error *err)
{
    const ted_safetensors *file = &m->file;
    entry *e = ted_alloc((size_t)file->count * 2, sizeof *e, "tensor list", err);
    if (!e)
        return TED_ERR_NOMEM;
    int n = 0;
    ted_status s = TED_OK;
    for (int i = 0; !s && i < file->count; i++) {
        const ted_st_tensor *t = &file->tensors[i];
        int as[2];
        if (t->dtype != TED_DTYPE_F32)
            s = ted_fail(err, TED_ERR_WEIGHTS, "%s: tensor '%s' is %s; ted quantize reads F32 "
                         "weights", path, t->name, ted_dtype_name(t->dtype));
        else if (strlen(t->name) + sizeof ".scale" > sizeof e->name)
            s = ted_fail(err, TED_ERR_WEIGHTS, "%s: tensor name '%s' is too long", path,
                         t->name);
        else if (t->ndim != 2) {
            e[n] = (entry){.kind = ENTRY_VECTOR, .source = t, .ndim = 1,
                           .shape = {t->shape[0]}, .bytes = t->bytes};
            snprintf(e[n++].name, sizeof e->name, "%s", t->name);
        } else if (!(s = matrix_storage(m, t, dtype, layout, as, err)))
            n += matrix_entries(e + n, t, (ted_quantize_dtype)as[0], as[1]);
    }
    if (s) {
        free(e);
        return s;
    }
    qsort(e, (size_t)n, sizeof *e, compare_entries);
    *out = e;
    *count = n;
    return TED_OK;
}

/* What a weights file is written from and as. */
typedef struct ted_quantize_spec {
    const char *in_path;  /* the float weights, for messages */
    ted_quantize_dtype dtype;
    ted_quantize_layout layout;
} ted_quantize_spec;

/* The mapped layout holds int8 or int4 weights, and a packed Q/K/V
 * projection's thirds must start groups (d_model a multiple of
 * TED_I8_GROUP_ROWS). */
static ted_status check_groups(const ted_model *m, const char *in_dir,
                               ted_quantize_dtype dtype, ted_error *err)
{
    const ted_config *c = &m->config;
    if (dtype == TED_QUANTIZE_BF16)
        return ted_fail(err, TED_ERR_ARGUMENT, "--layout mapped: holds int8 or int4 weights "
                        "(bf16 weights are repacked at load)");
    if (c->attention_projection == TED_PROJECTION_PACKED && c->d_model % TED_I8_GROUP_ROWS)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: --layout mapped needs d_model (%d) a "
                        "multiple of %d for the packed Q/K/V projections", in_dir, c->d_model,
                        TED_I8_GROUP_ROWS);
    return TED_OK;
}

/* ---- the safetensors file ---------------------------------------------------- */

/* The JSON header as tools/ted_format.py's json.dumps(separators=(",",
 * ":")) writes it, padded with spaces so the data starts at a multiple of
 * 64 bytes; when `mapped`, its "__metadata__" names the mapped layout. The
 * names are those of a model ted loaded: plain ASCII. */
static char *header_text(const entry *e, int count, bool mapped, size_t *length,
                         ted_error *err)
{
    size_t size = 512;
    for (int i = 0; i < count; i++)
        size += strlen(e[i].name) + 160;
    char *text = ted_alloc(size, 1, "safetensors header", err);
    if (!text)
        return NULL;
    size_t used = 0, offset = 0;
    used += (size_t)snprintf(text + used, size - used, "{");
    for (int i = 0; i < count; i++) {
        static const char *const names[] = {[TED_QUANTIZE_INT8] = "I8",
                                            [TED_QUANTIZE_BF16] = "BF16",
                                            [TED_QUANTIZE_INT4] = "U8"};
        const char *dtype = e[i].kind != ENTRY_MATRIX ? "F32" : e[i].groups ? "U8"
                                                                            : names[e[i].as];
        used += (size_t)snprintf(text + used, size - used, "\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                 e[i].name, dtype);
        for (int d = 0; d < e[i].ndim; d++)
            used += (size_t)snprintf(text + used, size - used, d ? ",%lld" : "%lld",
                                     (long long)e[i].shape[d]);
        used += (size_t)snprintf(text + used, size - used, "],\"data_offsets\":[%zu,%zu]},",
                                 offset, offset + e[i].bytes);
        offset += e[i].bytes;
    }
    used += (size_t)snprintf(text + used, size - used, "\"__metadata__\":{\"format\":\"pt\"");
    for (int i = 0; mapped && i < TED_LAYOUT_PARAMS; i++)
        used += (size_t)snprintf(text + used, size - used, ",\"%s\":\"%d\"",
                                 ted_layout_params[i].key, ted_layout_params[i].value);
    used += (size_t)snprintf(text + used, size - used, mapped ? ",\"%s\":\"%s\"}}" : "}}",
                             TED_LAYOUT_KEY, TED_LAYOUT_MAPPED);
    while ((8 + used) % 64)
        text[used++] = ' ';
    *length = used;
    return text;
}

/* The rows of a matrix as bf16, through `h` (cols). */
static bool write_bf16(FILE *f, const ted_st_tensor *t, uint16_t *h)
{
    int64_t rows = t->shape[0], cols = t->shape[1];
    for (int64_t r = 0; r < rows; r++) {
        const float *row = (const float *)t->data + r * cols;
        for (int64_t c = 0; c < cols; c++)
            h[c] = ted_bf16_from_float(row[c]);
        if (fwrite(h, sizeof *h, (size_t)cols, f) != (size_t)cols)
            return false;
    }
    return true;
}

/* The rows of an int4 matrix (values or scales), through `q`: a row's
 * packed bytes, then its scales. */
static bool write_i4(FILE *f, const entry *e, uint8_t *q)
{
    const ted_st_tensor *t = e->source;
    int64_t rows = t->shape[0], cols = t->shape[1];
    int64_t groups = (cols + TED_I4_GROUP - 1) / TED_I4_GROUP;
    size_t bytes = (size_t)groups * (TED_I4_GROUP / 2);
    float *scales = (float *)(q + (bytes + 63) / 64 * 64);
    for (int64_t r = 0; r < rows; r++) {
        const float *row = (const float *)t->data + r * cols;
        group_scales(scales, row, cols);
        if (e->kind == ENTRY_SCALE) {
            if (fwrite(scales, sizeof *scales, (size_t)groups, f) != (size_t)groups)
                return false;
            continue;
        }
        pack_i4_row(q, row, cols, scales);
        if (fwrite(q, 1, bytes, f) != bytes)
            return false;
    }
    return true;
}

/* An int8 matrix in groups, a group of TED_I8_GROUP_ROWS rows at a time:
 * its rows quantized into q (TED_I8_GROUP_ROWS, cols), then packed after
 * them. */
static bool write_groups(FILE *f, const entry *e, int8_t *q)
{
    const ted_st_tensor *t = e->source;
    int64_t rows = t->shape[0], cols = t->shape[1];
    uint8_t *packed = (uint8_t *)q + (size_t)TED_I8_GROUP_ROWS * (size_t)cols;
    size_t bytes = ted_i8_packed_bytes(TED_I8_GROUP_ROWS, (int)cols);
    for (int64_t first = 0; first < rows; first += TED_I8_GROUP_ROWS) {
        int n = rows - first < TED_I8_GROUP_ROWS ? (int)(rows - first) : TED_I8_GROUP_ROWS;
        for (int j = 0; j < n; j++) {
            const float *row = (const float *)t->data + (first + j) * cols;
            quantize_row(q + (size_t)j * cols, row, cols, row_scale(row, cols));
        }
        ted_pack_i8_plain(packed, q, n, (int)cols);
        if (fwrite(packed, 1, bytes, f) != bytes)
            return false;
    }
    return true;
}

/* The bytes of one entry, written row by row; q holds a row of the
 * matrix's new type (and an int4 row's scales), or an int8 group and its
 * packed bytes. */
static bool write_entry(FILE *f, const entry *e, void *q)
{
    const ted_st_tensor *t = e->source;
    if (e->kind == ENTRY_VECTOR)
        return fwrite(t->data, 1, t->bytes, f) == t->bytes;
    if (e->groups)
        return write_groups(f, e, q);
    if (e->as == TED_QUANTIZE_BF16)
        return write_bf16(f, t, q);
    if (e->as == TED_QUANTIZE_INT4)
        return write_i4(f, e, q);
    int64_t rows = t->shape[0], cols = t->shape[1];
    for (int64_t r = 0; r < rows; r++) {
        const float *row = (const float *)t->data + r * cols;
        float scale = row_scale(row, cols);
        if (e->kind == ENTRY_SCALE) {
            if (fwrite(&scale, sizeof scale, 1, f) != 1)
                return false;
            continue;
        }
        quantize_row(q, row, cols, scale);
        if (fwrite(q, 1, (size_t)cols, f) != (size_t)cols)
            return false;
    }
    return true;
}

/* ---- output files, each under a temporary name first ---------------------- */

/* "cannot write PATH: REASON" (a full disk: "No space left on device"). */
static ted_status cannot_write(const char *path, int error, ted_error *err)
{
    return ted_fail(err, error == ENOMEM ? TED_ERR_NOMEM : TED_ERR_IO, "cannot write %s: %s",
                    path, strerror(error ? error : EIO));
}

/* Creates "FINAL.XXXXXX" (mkstemp: O_CREAT | O_EXCL, so no link is
 * followed and nothing is replaced) as record->path[slot], marked in the
 * record before it exists; the file gets 0666 less the umask. */
static ted_status open_temporary(ted_quantize_record *r, int slot, const char *final, FILE **file,
                                 ted_error *err)
{
    if (snprintf(r->path[slot], sizeof r->path[slot], "%s.XXXXXX", final) >=
        (int)sizeof r->path[slot])
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: path too long", final);
    r->used[slot] = 1;
    int fd = mkstemp(r->path[slot]);
    if (fd < 0) {
        int error = errno;
        r->used[slot] = 0;
        return cannot_write(final, error, err);
    }
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(*file = fdopen(fd, "wb"))) {
        int error = errno;
        close(fd);
        return cannot_write(final, error, err);
    }
    return TED_OK;
}

/* Completes (flush, fsync, close) a file open_temporary opened; `error` is
 * the errno of a write that failed, 0 if none did. */
static ted_status close_temporary(FILE *file, const char *final, int error, ted_error *err)
{
    if (!error && (fflush(file) != 0 || fsync(fileno(file)) != 0))
        error = errno ? errno : EIO;
    if (fclose(file) != 0 && !error)
        error = errno ? errno : EIO;
    return error ? cannot_write(final, error, err) : TED_OK;
}

/* The weights file, quantized, into record->path[slot]. */
static ted_status write_weights(const ted_model *m, const char *out_path,
                                const ted_quantize_spec *spec, ted_quantize_record *r,
                                ted_error *err)
{
    entry *e = NULL;
    int count = 0;
    ted_status s = plan_entries(m, spec->in_path, spec->dtype, spec->layout, &e, &count, err);
    if (s)
        return s;
    size_t length = 0, widest = 1;
    char *header = header_text(e, count, spec->layout == TED_LAYOUT_GROUPS, &length, err);
    for (int i = 0; i < count; i++)
        if (e[i].kind == ENTRY_MATRIX && (size_t)e[i].source->shape[1] > widest)
            widest = (size_t)e[i].source->shape[1];
    /* a bf16 row, or an int4 row (at most widest bytes, rounded up to 64)
     * and its scales, or an int8 group and its packed bytes (2 *
     * TED_I8_GROUP_ROWS rows of widest + 3 bytes) */
    void *q = header ? ted_alloc(widest + 64, 2 * TED_I8_GROUP_ROWS, "quantized row", err)
                     : NULL;
    FILE *f = NULL;
    s = q ? open_temporary(r, 0, out_path, &f, err) : TED_ERR_NOMEM;
    if (!s) {
        unsigned char prefix[8];
        for (int i = 0; i < 8; i++)
            prefix[i] = (unsigned char)((uint64_t)length >> (8 * i));
        errno = 0;
        bool ok = fwrite(prefix, 1, 8, f) == 8 && fwrite(header, 1, length, f) == length;
        for (int i = 0; ok && i < count; i++) {
            ok = write_entry(f, &e[i], q);
            ted_safetensors_release(&m->file, e[i].source->data, e[i].source->bytes);
        }
        s = close_temporary(f, out_path, ok ? 0 : errno ? errno : EIO, err);
    }
    free(q);
    free(header);
    free(e);
    return s;
}

/* ---- the directories ------------------------------------------------------------ */

/* Copies the regular file `from` into record->path[slot], a temporary
 * name of `to`. */
static ted_status copy_file(const char *from, const char *to, ted_quantize_record *r, int slot,
                            ted_error *err)
{
    int fd;
    ted_status s = ted_open_regular(from, &fd, err);
    if (s)
        return s;
    FILE *in = fdopen(fd, "rb"), *out = NULL;
    if (!in) {
        close(fd);
        return ted_fail(err, TED_ERR_IO, "%s: %s", from, strerror(errno));
    }
    s = open_temporary(r, slot, to, &out, err);
    if (s) {
        fclose(in);
        return s;
    }
    char buffer[65536];
    size_t n;
    int error = 0;
    errno = 0;
    while (!error && (n = fread(buffer, 1, sizeof buffer, in)) > 0)
        if (fwrite(buffer, 1, n, out) != n)
            error = errno ? errno : EIO;
    bool read_failed = ferror(in);
    fclose(in);
    s = close_temporary(out, to, error, err);
    if (!s && read_failed)
        s = ted_fail(err, TED_ERR_IO, "%s: cannot read the file", from);
    return s;
}

_Static_assert((int)TED_MODEL_FILES == (int)TED_QUANTIZE_FILES, "a quantization writes each model file");

static ted_status join_path(char *path, size_t size, const char *dir, const char *name,
                            ted_error *err)
{
    if (snprintf(path, size, "%s/%s", dir, name) >= (int)size)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s/%s: path too long", dir, name);
    return TED_OK;
}

/* Every file but the weights (files->name[0]), copied, each into
 * record->path[2 * i], a temporary name of OUT_DIR/NAME. */
static ted_status copy_model_files(const ted_model_files *files, const char *in_dir,
                                   const char *out_dir, ted_quantize_record *r, ted_error *err)
{
    ted_status s = TED_OK;
    for (int i = 1; !s && i < files->count; i++) {
        char from[PATH_MAX], to[PATH_MAX];
        s = join_path(from, sizeof from, in_dir, files->name[i], err);
        if (!s)
            s = join_path(to, sizeof to, out_dir, files->name[i], err);
        if (!s)
            s = copy_file(from, to, r, 2 * i, err);
    }
    return s;
}

/* Once every file is whole: each temporary file renamed into place, its
 * final name (record->path[2 * i + 1]) recorded first. */
static ted_status rename_into_place(const ted_model_files *files, const char *out_dir,
                                    ted_quantize_record *r, ted_error *err)
{
    for (int i = 0; i < files->count; i++) {
        ted_status s = join_path(r->path[2 * i + 1], sizeof r->path[0], out_dir, files->name[i],
                                 err);
        if (s)
            return s;
        r->used[2 * i + 1] = 1;
        if (rename(r->path[2 * i], r->path[2 * i + 1]) != 0)
            return cannot_write(r->path[2 * i + 1], errno, err);
        r->used[2 * i] = 0;
    }
    return TED_OK;
}

void ted_quantize_remove_partial(ted_quantize_record *r)
{
    if (!r)
        return;
    for (int i = 0; i < TED_QUANTIZE_PATHS; i++) {
        if (r->used[i])
            unlink(r->path[i]);
        r->used[i] = 0;
    }
    if (r->dir_created)
        rmdir(r->dir);
    r->dir_created = 0;
}

/* out_dir is created (recorded in r), or is an empty directory other than
 * in_dir. */
static ted_status prepare_out_dir(const char *in_dir, const char *out_dir,
                                  ted_quantize_record *r, ted_error *err)
{
    struct stat in_stat;
    if (stat(in_dir, &in_stat))
        return ted_fail(err, TED_ERR_IO, "%s: %s", in_dir, strerror(errno));
    if (snprintf(r->dir, sizeof r->dir, "%s", out_dir) >= (int)sizeof r->dir)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: path too long", out_dir);
    if (mkdir(out_dir, 0777) == 0) {
        r->dir_created = 1;
        return TED_OK;
    }
    if (errno != EEXIST)
        return ted_fail(err, TED_ERR_IO, "%s: cannot create the output directory: %s", out_dir,
                        strerror(errno));
    if (ted_same_file(out_dir, in_dir))
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "%s: the output directory is the input directory; give a new one",
                        out_dir);
    DIR *d = opendir(out_dir);
    if (!d)
        return ted_fail(err, TED_ERR_IO, "%s: exists and is not a directory one can list: %s",
                        out_dir, strerror(errno));
    struct dirent *file;
    bool empty = true;
    while (empty && (file = readdir(d)))
        empty = !strcmp(file->d_name, ".") || !strcmp(file->d_name, "..");
    closedir(d);
    if (!empty)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "%s: the output directory exists and is not empty; give a new or "
                        "empty one", out_dir);
    return TED_OK;
}

/* The model's files, their paths, and its weights checked finite. */
static ted_status plan_files(const ted_model *m, const char *in_dir, const char *out_dir,
                             ted_model_files *files, char *in_path, char *out_path,
                             ted_error *err)
{
    ted_model_list_files(&m->config, files);
    ted_status s = TED_OK;
    if (m->marian_type[0])  /* no config.yaml to copy */
        s = ted_fail(err, TED_ERR_ARGUMENT, "%s: a Marian model (%s); ted quantize reads "
                     "ted's format (config.yaml)", in_dir, m->config.weights);
    for (int i = 0; !s && i < files->count; i++)
        if (strchr(files->name[i], '/'))
            s = ted_fail(err, TED_ERR_ARGUMENT,
                         "%s: '%s' is not a file name of the model directory", in_dir,
                         files->name[i]);
    if (!s)
        s = join_path(in_path, PATH_MAX, in_dir, files->name[0], err);
    if (!s)
        s = join_path(out_path, PATH_MAX, out_dir, files->name[0], err);
    for (int i = 0; !s && i < m->file.count; i++) {
        const ted_st_tensor *t = &m->file.tensors[i];
        s = ted_safetensors_check_finite(t, in_path, err);
        ted_safetensors_release(&m->file, t->data, t->bytes);
    }
    return s;
}

static void clear_record(ted_quantize_record *r)
{
    for (int i = 0; i < TED_QUANTIZE_PATHS; i++)
        r->used[i] = 0;
    r->dir_created = 0;
}

ted_status ted_quantize_model_recorded(const char *in_dir, const char *out_dir,
                                       ted_quantize_dtype dtype, ted_quantize_layout layout,
                                       ted_quantize_record *record, ted_error *err)
{
    if (!in_dir || !out_dir || !record)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_quantize_model: NULL directory or record");
    clear_record(record);
    ted_model *m;
    ted_status s = ted_model_load_unpacked(in_dir, &m, err);
    if (s)
        return s;
    ted_model_files files;
    char in_path[PATH_MAX], out_path[PATH_MAX];
    s = plan_files(m, in_dir, out_dir, &files, in_path, out_path, err);
    if (!s)
        s = prepare_out_dir(in_dir, out_dir, record, err);
    ted_quantize_spec spec = {in_path, dtype, layout};
    if (!s && layout == TED_LAYOUT_GROUPS)
        s = check_groups(m, in_dir, dtype, err);
    if (!s)
        s = write_weights(m, out_path, &spec, record, err);
    if (!s)
        s = copy_model_files(&files, in_dir, out_dir, record, err);
    if (!s)
        s = rename_into_place(&files, out_dir, record, err);
    if (s) {
        ted_quantize_remove_partial(record);
    } else {
        clear_record(record);  /* the model stays */
    }
    ted_model_free(m);
    return s;
}

ted_status ted_quantize_model(const char *in_dir, const char *out_dir, ted_quantize_dtype dtype,
                              ted_quantize_layout layout, ted_error *err)
{
    ted_quantize_record *record = ted_alloc(1, sizeof *record, "quantize record", err);
    if (!record)
        return TED_ERR_NOMEM;
    ted_status s = ted_quantize_model_recorded(in_dir, out_dir, dtype, layout, record, err);
    free(record);
    return s;
}
