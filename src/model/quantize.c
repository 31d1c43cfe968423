/* ted quantize (model/quantize.h): the float model is loaded (so only a
 * model ted runs is quantized), its weights file rewritten with int8
 * matrices, the other files copied. */
#include "model/quantize.h"

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
#include "core/output.h"
#include "model/model.h"

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

/* ---- what the new file holds ------------------------------------------------ */

typedef enum entry_kind {
    ENTRY_VECTOR,  /* a float tensor kept as F32 */
    ENTRY_MATRIX,  /* the I8 values of a matrix */
    ENTRY_SCALE,   /* the F32 scales of a matrix, "NAME.scale" */
} entry_kind;

typedef struct entry {
    char name[300];
    entry_kind kind;
    const ted_st_tensor *source;
    size_t bytes;
} entry;

static int compare_entries(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    bool x_i8 = x->kind == ENTRY_MATRIX, y_i8 = y->kind == ENTRY_MATRIX;
    if (x_i8 != y_i8)
        return x_i8 ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* Every tensor of `file`: matrices as two entries, F32 first, then I8. */
static ted_status plan_entries(const ted_safetensors *file, const char *path, entry **out,
                               int *count, ted_error *err)
{
    entry *e = ted_alloc((size_t)file->count * 2, sizeof *e, "tensor list", err);
    if (!e)
        return TED_ERR_NOMEM;
    int n = 0;
    for (int i = 0; i < file->count; i++) {
        const ted_st_tensor *t = &file->tensors[i];
        if (t->dtype != TED_DTYPE_F32) {
            free(e);
            return ted_fail(err, TED_ERR_WEIGHTS,
                            "%s: tensor '%s' is %s; ted quantize reads F32 weights", path,
                            t->name, ted_dtype_name(t->dtype));
        }
        bool matrix = t->ndim == 2;
        if (strlen(t->name) + sizeof ".scale" > sizeof e->name) {
            free(e);
            return ted_fail(err, TED_ERR_WEIGHTS, "%s: tensor name '%s' is too long", path,
                            t->name);
        }
        e[n] = (entry){.kind = matrix ? ENTRY_MATRIX : ENTRY_VECTOR, .source = t,
                       .bytes = matrix ? t->bytes / sizeof(float) : t->bytes};
        snprintf(e[n++].name, sizeof e->name, "%s", t->name);
        if (matrix) {
            e[n] = (entry){.kind = ENTRY_SCALE, .source = t,
                           .bytes = (size_t)t->shape[0] * sizeof(float)};
            snprintf(e[n++].name, sizeof e->name, "%s.scale", t->name);
        }
    }
    qsort(e, (size_t)n, sizeof *e, compare_entries);
    *out = e;
    *count = n;
    return TED_OK;
}

/* ---- the safetensors file ---------------------------------------------------- */

/* The JSON header as tools/ted_format.py's json.dumps(separators=(",",
 * ":")) writes it, padded with spaces so the data starts at a multiple of
 * 64 bytes. The names are those of a model ted loaded: plain ASCII. */
static char *header_text(const entry *e, int count, size_t *length, ted_error *err)
{
    size_t size = 64;
    for (int i = 0; i < count; i++)
        size += strlen(e[i].name) + 160;
    char *text = ted_alloc(size, 1, "safetensors header", err);
    if (!text)
        return NULL;
    size_t used = 0, offset = 0;
    used += (size_t)snprintf(text + used, size - used, "{");
    for (int i = 0; i < count; i++) {
        const ted_st_tensor *t = e[i].source;
        const char *dtype = e[i].kind == ENTRY_MATRIX ? "I8" : "F32";
        used += (size_t)snprintf(text + used, size - used, "\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                 e[i].name, dtype);
        int ndim = e[i].kind == ENTRY_SCALE ? 1 : t->ndim;
        for (int d = 0; d < ndim; d++)
            used += (size_t)snprintf(text + used, size - used, d ? ",%lld" : "%lld",
                                     (long long)t->shape[d]);
        used += (size_t)snprintf(text + used, size - used, "],\"data_offsets\":[%zu,%zu]},",
                                 offset, offset + e[i].bytes);
        offset += e[i].bytes;
    }
    used += (size_t)snprintf(text + used, size - used, "\"__metadata__\":{\"format\":\"pt\"}}");
    while ((8 + used) % 64)
        text[used++] = ' ';
    *length = used;
    return text;
}

/* The bytes of one entry, written row by row. */
static bool write_entry(FILE *f, const entry *e, int8_t *q)
{
    const ted_st_tensor *t = e->source;
    if (e->kind == ENTRY_VECTOR)
        return fwrite(t->data, 1, t->bytes, f) == t->bytes;
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

static ted_status write_weights(const ted_model *m, const char *in_path, const char *out_path,
                                ted_error *err)
{
    entry *e = NULL;
    int count = 0;
    ted_status s = plan_entries(&m->file, in_path, &e, &count, err);
    if (s)
        return s;
    size_t length = 0, widest = 1;
    char *header = header_text(e, count, &length, err);
    for (int i = 0; i < count; i++)
        if (e[i].kind == ENTRY_MATRIX && (size_t)e[i].source->shape[1] > widest)
            widest = (size_t)e[i].source->shape[1];
    int8_t *q = header ? ted_alloc(widest, 1, "quantized row", err) : NULL;
    /* through a temporary file, renamed into place once whole: a failed or
     * interrupted run leaves no cut weights file */
    ted_output out;
    s = q ? ted_output_open(&out, out_path, err) : TED_ERR_NOMEM;
    if (q && !s) {
        unsigned char prefix[8];
        for (int i = 0; i < 8; i++)
            prefix[i] = (unsigned char)((uint64_t)length >> (8 * i));
        FILE *f = out.file;
        bool ok = fwrite(prefix, 1, 8, f) == 8 && fwrite(header, 1, length, f) == length;
        for (int i = 0; ok && i < count; i++)
            ok = write_entry(f, &e[i], q);
        s = ted_output_close(&out, out_path, ok, err);
        if (!ok && !s)
            s = ted_fail(err, TED_ERR_IO, "%s: write failed", out_path);
    }
    free(q);
    free(header);
    free(e);
    return s;
}

/* ---- the directories ------------------------------------------------------------ */

static ted_status copy_file(const char *from, const char *to, ted_error *err)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return ted_fail(err, TED_ERR_IO, "%s: %s", from, strerror(errno));
    FILE *out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return ted_fail(err, TED_ERR_IO, "%s: %s", to, strerror(errno));
    }
    char buffer[65536];
    size_t n;
    bool ok = true;
    while (ok && (n = fread(buffer, 1, sizeof buffer, in)) > 0)
        ok = fwrite(buffer, 1, n, out) == n;
    ok = !ferror(in) && ok;
    fclose(in);
    ok = fclose(out) == 0 && ok;
    return ok ? TED_OK : ted_fail(err, TED_ERR_IO, "copying %s to %s failed", from, to);
}

/* The files of a model directory: the weights, config.yaml, the
 * vocabularies and the SentencePiece models, each once, each a plain file
 * name (a path into a subdirectory is refused before anything is written). */
enum { MODEL_FILES = 6 };

typedef struct model_files {
    const char *name[MODEL_FILES];
    int count;
} model_files;

static ted_status list_model_files(const ted_config *c, const char *in_dir, model_files *files,
                                   ted_error *err)
{
    bool spm = c->tokenizer == TED_TOKENIZER_SENTENCEPIECE;
    const char *all[MODEL_FILES] = {c->weights, "config.yaml", c->src_vocab, c->tgt_vocab,
                                    spm ? c->src_spm : NULL, spm ? c->tgt_spm : NULL};
    files->count = 0;
    for (int i = 0; i < MODEL_FILES; i++) {
        bool listed = !all[i];
        for (int j = 0; !listed && j < files->count; j++)
            listed = !strcmp(all[i], files->name[j]);
        if (listed)
            continue;
        if (strchr(all[i], '/'))
            return ted_fail(err, TED_ERR_ARGUMENT,
                            "%s: '%s' is not a file name of the model directory", in_dir,
                            all[i]);
        files->name[files->count++] = all[i];
    }
    return TED_OK;
}

static ted_status join_path(char *path, size_t size, const char *dir, const char *name,
                            ted_error *err)
{
    if (snprintf(path, size, "%s/%s", dir, name) >= (int)size)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s/%s: path too long", dir, name);
    return TED_OK;
}

/* Every file but the weights (files->name[0]), copied. */
static ted_status copy_model_files(const model_files *files, const char *in_dir,
                                   const char *out_dir, ted_error *err)
{
    ted_status s = TED_OK;
    for (int i = 1; !s && i < files->count; i++) {
        char from[PATH_MAX], to[PATH_MAX];
        s = join_path(from, sizeof from, in_dir, files->name[i], err);
        if (!s)
            s = join_path(to, sizeof to, out_dir, files->name[i], err);
        if (!s)
            s = copy_file(from, to, err);
    }
    return s;
}

/* After a failure: the files this run wrote, and out_dir when this run
 * created it, are removed, so no half model is left behind. */
static void remove_output(const model_files *files, const char *out_dir, bool created)
{
    for (int i = 0; i < files->count; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", out_dir, files->name[i]) < (int)sizeof path)
            unlink(path);
    }
    if (created)
        rmdir(out_dir);
}

/* out_dir is created (*created), or is an empty directory other than
 * in_dir. */
static ted_status prepare_out_dir(const char *in_dir, const char *out_dir, bool *created,
                                  ted_error *err)
{
    struct stat in_stat, out_stat;
    *created = false;
    if (stat(in_dir, &in_stat))
        return ted_fail(err, TED_ERR_IO, "%s: %s", in_dir, strerror(errno));
    if (mkdir(out_dir, 0777) == 0) {
        *created = true;
        return TED_OK;
    }
    if (errno != EEXIST)
        return ted_fail(err, TED_ERR_IO, "%s: cannot create the output directory: %s", out_dir,
                        strerror(errno));
    if (!stat(out_dir, &out_stat) && out_stat.st_dev == in_stat.st_dev &&
        out_stat.st_ino == in_stat.st_ino)
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

ted_status ted_quantize_model(const char *in_dir, const char *out_dir, ted_error *err)
{
    if (!in_dir || !out_dir)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_quantize_model: NULL directory");
    ted_model *m;
    ted_status s = ted_model_load(in_dir, &m, err);
    if (s)
        return s;
    model_files files;
    char in_path[PATH_MAX], out_path[PATH_MAX];
    s = list_model_files(&m->config, in_dir, &files, err);
    if (!s)
        s = join_path(in_path, sizeof in_path, in_dir, files.name[0], err);
    if (!s)
        s = join_path(out_path, sizeof out_path, out_dir, files.name[0], err);
    for (int i = 0; !s && i < m->file.count; i++)
        s = ted_safetensors_check_finite(&m->file.tensors[i], in_path, err);
    bool created = false;
    if (!s)
        s = prepare_out_dir(in_dir, out_dir, &created, err);
    if (!s) {
        s = write_weights(m, in_path, out_path, err);
        if (!s)
            s = copy_model_files(&files, in_dir, out_dir, err);
        if (s)
            remove_output(&files, out_dir, created);
    }
    ted_model_free(m);
    return s;
}
