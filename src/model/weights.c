/* Binding tensors to weight pointers (model/weights.h). A naming scheme
 * (config tensor_names) says what each weight is called in the file;
 * everything else (packed or separate Q/K/V, shared embeddings, a tied
 * output projection, final norms) is a config key of its own. */
#include "model/weights.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/kernels.h"

/* ---- naming schemes -------------------------------------------------------- */

typedef struct tensor_names {
    const char *src_embedding, *tgt_embedding, *shared_embedding;  /* NULL: none */
    const char *encoder_layer, *decoder_layer;  /* prefixes, with %d for the layer */
    const char *self_attention, *cross_attention;
    const char *packed_projection;         /* + "_weight", "_bias" */
    const char *q, *k, *v, *out;           /* + ".weight", ".bias" */
    const char *ffn_in, *ffn_out;
    const char *ffn_up;                    /* the gated network's second input Linear */
    const char *encoder_norms[2];          /* after self-attention, feed-forward */
    const char *decoder_norms[3];          /* after self-, cross-attention, feed-forward */
    const char *encoder, *decoder;         /* the stacks' prefixes, for their final norms */
    const char *final_norm;
    const char *embedding_norm, *positions;  /* in the stacks' prefixes; NULL: none */
    const char *relative_bias;             /* in the stacks' prefixes; NULL: none */
    const char *output_weight, *output_bias;
    const char *ssru;                      /* an SSRU decoder layer's: + ".weight",
                                            * ".forget.weight", ".forget.bias" */
} tensor_names;

static const tensor_names schemes[] = {
    [TED_NAMES_TUTORIAL] = {
        "src_tok_emb.embedding.weight", "tgt_tok_emb.embedding.weight", NULL,
        "transformer.encoder.layers.%d", "transformer.decoder.layers.%d",
        "self_attn", "multihead_attn",
        "in_proj", "q_proj", "k_proj", "v_proj", "out_proj",
        "linear1", "linear2", NULL,
        {"norm1", "norm2"}, {"norm1", "norm2", "norm3"},
        "transformer.encoder", "transformer.decoder", "norm", NULL, NULL, NULL,
        "generator.weight", "generator.bias", NULL},
    [TED_NAMES_MARIAN] = {
        "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
        "model.shared.weight",
        "model.encoder.layers.%d", "model.decoder.layers.%d",
        "self_attn", "encoder_attn",
        "in_proj", "q_proj", "k_proj", "v_proj", "out_proj",
        "fc1", "fc2", "up_proj",
        {"self_attn_layer_norm", "final_layer_norm"},
        {"self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm"},
        "model.encoder", "model.decoder", "layer_norm",
        "layernorm_embedding", "embed_positions.weight", "relative_attention_bias.weight",
        "lm_head.weight", "final_logits_bias", "ssru"},
};

/* ---- one tensor ------------------------------------------------------------ */

typedef struct weight_binder {
    ted_model *model;
    const tensor_names *names;
    const char *path;      /* the weights file, for messages */
    unsigned char *used;   /* (file.count): which tensors the config uses */
    bool mapped;           /* the header names the mapped layout */
    ted_error *err;
} weight_binder;

const ted_layout_param ted_layout_params[TED_LAYOUT_PARAMS] = {
    {"ted_i8_group_rows", TED_I8_GROUP_ROWS},
    {"ted_i8_group_k", 4},  /* bytes of k of a row in each dword of a group */
    {"ted_i4_group", TED_I4_GROUP},
};

/* b->mapped = whether the header names the mapped layout, whose
 * parameters must be this build's; any other layout is refused. */
static ted_status check_layout(weight_binder *b)
{
    const ted_safetensors *f = &b->model->file;
    const char *layout = ted_safetensors_metadata(f, TED_LAYOUT_KEY);
    b->mapped = layout != NULL;
    if (!layout)
        return TED_OK;
    if (strcmp(layout, TED_LAYOUT_MAPPED))
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: __metadata__ %s is '%s'; ted reads '%s' (or no %s: the portable "
                        "layout)", b->path, TED_LAYOUT_KEY, layout, TED_LAYOUT_MAPPED,
                        TED_LAYOUT_KEY);
    for (int i = 0; i < TED_LAYOUT_PARAMS; i++) {
        const ted_layout_param *p = &ted_layout_params[i];
        const char *value = ted_safetensors_metadata(f, p->key);
        char expected[16];
        snprintf(expected, sizeof expected, "%d", p->value);
        if (!value || strcmp(value, expected))
            return ted_fail(b->err, TED_ERR_WEIGHTS,
                            "%s: the mapped layout's %s is %s%s%s in __metadata__; this build's "
                            "kernels read %s (write the model again with ted quantize --layout "
                            "mapped)", b->path, p->key, value ? "'" : "", value ? value : "missing",
                            value ? "'" : "", expected);
    }
    return TED_OK;
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    int exponent = (h >> 10) & 0x1f;
    uint32_t mantissa = h & 0x3ff;
    float magnitude;
    if (exponent == 0)
        magnitude = ldexpf((float)mantissa, -24);
    else if (exponent == 31)
        magnitude = mantissa ? NAN : INFINITY;
    else
        magnitude = ldexpf((float)(mantissa | 0x400), exponent - 25);
    uint32_t bits;
    memcpy(&bits, &magnitude, sizeof bits);
    bits |= sign;
    memcpy(&magnitude, &bits, sizeof bits);
    return magnitude;
}

/* F32 tensors aligned for float access are used in place; anything else is
 * converted into a buffer the model owns. */
static ted_status to_f32(weight_binder *b, const ted_st_tensor *t, size_t count,
                         const float **out)
{
    if (t->dtype == TED_DTYPE_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
        *out = t->data;
        return TED_OK;
    }
    ted_model *m = b->model;
    float **grown = realloc(m->converted, sizeof *grown * (m->converted_count + 1));
    if (!grown)
        return ted_fail(b->err, TED_ERR_NOMEM, "%s: tensor '%s': out of memory", b->path,
                        t->name);
    m->converted = grown;
    float *f = ted_alloc_floats(count, t->name, b->err);
    if (!f)
        return TED_ERR_NOMEM;
    m->converted[m->converted_count++] = f;
    const unsigned char *src = t->data;
    for (size_t i = 0; i < count; i++) {
        if (t->dtype == TED_DTYPE_F32) {
            memcpy(&f[i], src + 4 * i, 4);
            continue;
        }
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        if (t->dtype == TED_DTYPE_F16) {
            f[i] = half_to_float(h);
        } else {
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&f[i], &bits, 4);
        }
    }
    *out = f;
    return TED_OK;
}

static void format_shape(char *buf, size_t size, const int64_t *shape, int ndim)
{
    int n = snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - n, "]");
}

/* *out = tensor NAME, marked used, which must have shape (rows) when cols
 * is 0, else (rows, cols). */
static ted_status find_shaped(weight_binder *b, const char *name, int64_t rows, int64_t cols,
                              const ted_st_tensor **out)
{
    const ted_st_tensor *t = ted_safetensors_find(&b->model->file, name);
    if (!t)
        return ted_fail(b->err, TED_ERR_WEIGHTS, "%s: missing tensor '%s'", b->path, name);
    b->used[t - b->model->file.tensors] = 1;

    int64_t expected[2] = {rows, cols};
    int ndim = cols ? 2 : 1;
    bool same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == expected[i];
    if (!same) {
        char got[96], want[96];
        format_shape(got, sizeof got, t->shape, t->ndim);
        format_shape(want, sizeof want, expected, ndim);
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' has shape %s, the config needs %s", b->path, name, got,
                        want);
    }
    *out = t;
    return TED_OK;
}

#define NAME_SIZE 256

/* The tensor whose name `format` spells (into name[NAME_SIZE]), of shape
 * (shape[0], shape[1]), or (shape[0]) when shape[1] is 0. */
static ted_status find_named(weight_binder *b, const int64_t shape[2], char *name,
                             const ted_st_tensor **t, const char *format, va_list args)
{
    vsnprintf(name, NAME_SIZE, format, args);
    return find_shaped(b, name, shape[0], shape[1], t);
}

/* Points *field at the vector NAME (rows): a bias or a LayerNorm's. */
static ted_status bind_vector(weight_binder *b, const float **field, int64_t rows,
                              const char *name_format, ...)
    __attribute__((format(printf, 4, 5)));

static ted_status bind_vector(weight_binder *b, const float **field, int64_t rows,
                              const char *name_format, ...)
{
    char name[NAME_SIZE];
    const ted_st_tensor *t;
    va_list args;
    va_start(args, name_format);
    ted_status s = find_named(b, (int64_t[2]){rows, 0}, name, &t, name_format, args);
    va_end(args);
    if (s)
        return s;
    if (t->dtype == TED_DTYPE_I8 || t->dtype == TED_DTYPE_U8)
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' is %s; only matrices (Linear and embedding weights) "
                        "may be quantized", b->path, name, ted_dtype_name(t->dtype));
    /* Vectors are a sliver of the file: checked here. Matrices are checked
     * by ted_model_check_weights (ted info --check). */
    s = ted_safetensors_check_finite(t, b->path, b->err);
    return s ? s : to_f32(b, t, (size_t)rows, field);
}

/* The scales of the int8 matrix NAME (rows, cols): tensor "NAME.scale",
 * F32 of shape (rows), every scale finite and not negative. */
static ted_status bind_scales(weight_binder *b, ted_matrix *field, const char *name,
                              int64_t rows, int64_t cols)
{
    if (cols > TED_I8_MAX_IN_FEATURES)
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' is I8 with %lld columns; int8 products take at most "
                        "%d", b->path, name, (long long)cols, TED_I8_MAX_IN_FEATURES);
    char scale_name[300];
    snprintf(scale_name, sizeof scale_name, "%s.scale", name);
    if (!ted_safetensors_find(&b->model->file, scale_name))
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' is I8 but the file has no '%s' (one F32 scale per row)",
                        b->path, name, scale_name);
    const ted_st_tensor *t;
    ted_status s = find_shaped(b, scale_name, rows, 0, &t);
    if (s)
        return s;
    if (t->dtype != TED_DTYPE_F32)
        return ted_fail(b->err, TED_ERR_WEIGHTS, "%s: tensor '%s' is %s; scales must be F32",
                        b->path, scale_name, ted_dtype_name(t->dtype));
    s = to_f32(b, t, (size_t)rows, &field->scale);
    for (int64_t r = 0; !s && r < rows; r++)
        if (!(field->scale[r] >= 0.0f && field->scale[r] <= FLT_MAX))
            s = ted_fail(b->err, TED_ERR_WEIGHTS,
                         "%s: tensor '%s' holds %g at [%lld]; scales must be finite and not "
                         "negative", b->path, scale_name, (double)field->scale[r], (long long)r);
    return s;
}

/* The int4 matrix (rows, cols) whose U8 tensor t (rows, groups *
 * TED_I4_GROUP / 2) bind_matrix found, with its F32 group scales
 * "NAME.scale" (rows, groups), every scale finite and not negative. */
static ted_status bind_i4(weight_binder *b, ted_matrix *field, const ted_st_tensor *t,
                          int64_t rows, int64_t cols)
{
    *field = (ted_matrix){0};
    if (cols > TED_I8_MAX_IN_FEATURES)
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' is int4 (U8) with %lld columns; int4 products take "
                        "at most %d", b->path, t->name, (long long)cols, TED_I8_MAX_IN_FEATURES);
    int64_t groups = ted_i4_groups((int)cols), bytes = groups * (TED_I4_GROUP / 2);
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != bytes)
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' is U8 (int4); the config needs shape [%lld, %lld] "
                        "(%lld columns, two to a byte in groups of %d)", b->path, t->name,
                        (long long)rows, (long long)bytes, (long long)cols, TED_I4_GROUP);
    char scale_name[300];
    snprintf(scale_name, sizeof scale_name, "%s.scale", t->name);
    if (!ted_safetensors_find(&b->model->file, scale_name))
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' is U8 (int4) but the file has no '%s' (one F32 "
                        "scale per group of %d)", b->path, t->name, scale_name, TED_I4_GROUP);
    const ted_st_tensor *st;
    ted_status s = find_shaped(b, scale_name, rows, groups, &st);
    if (!s && st->dtype != TED_DTYPE_F32)
        s = ted_fail(b->err, TED_ERR_WEIGHTS, "%s: tensor '%s' is %s; scales must be F32",
                     b->path, scale_name, ted_dtype_name(st->dtype));
    if (!s)
        s = to_f32(b, st, (size_t)(rows * groups), &field->scale);
    for (int64_t i = 0; !s && i < rows * groups; i++)
        if (!(field->scale[i] >= 0.0f && field->scale[i] <= FLT_MAX))
            s = ted_fail(b->err, TED_ERR_WEIGHTS,
                         "%s: tensor '%s' holds %g at [%lld]; scales must be finite and not "
                         "negative", b->path, scale_name, (double)field->scale[i],
                         (long long)i);
    field->i4 = s ? NULL : t->data;
    return s;
}

/* The int8 matrix (rows, cols) whose U8 tensor t (groups, ceil(cols / 4),
 * 64) a mapped file holds in the products' groups, with its F32 scales. */
static ted_status bind_i8_groups(weight_binder *b, ted_matrix *field, const ted_st_tensor *t,
                                 int64_t rows, int64_t cols)
{
    *field = (ted_matrix){0};
    int64_t groups = (rows + TED_I8_GROUP_ROWS - 1) / TED_I8_GROUP_ROWS, steps = (cols + 3) / 4;
    if (!b->mapped)
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' is U8 of 3 dimensions (int8 in the mapped layout) but "
                        "the header's __metadata__ has no %s", b->path, t->name, TED_LAYOUT_KEY);
    if (t->shape[0] != groups || t->shape[1] != steps || t->shape[2] != 64)
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' is int8 in the mapped layout; the config needs shape "
                        "[%lld, %lld, 64] (%lld rows in groups of %d, %lld columns)", b->path,
                        t->name, (long long)groups, (long long)steps, (long long)rows,
                        TED_I8_GROUP_ROWS, (long long)cols);
    if ((uintptr_t)t->data % 64)
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: tensor '%s' (int8 in the mapped layout) does not start at a "
                        "multiple of 64 bytes", b->path, t->name);
    ted_status s = bind_scales(b, field, t->name, rows, cols);
    field->i8_packed = s ? NULL : t->data;
    return s;
}

/* The optional one-value tensor "NAME.SUFFIX" of the matrix NAME: *found
 * says whether the file has it; *v is its value when it is one F32, NaN
 * when it is another dtype (which no multiplier check accepts). */
static ted_status read_multiplier(weight_binder *b, const char *name, const char *suffix,
                                  char *full, size_t full_size, int *found, float *v)
{
    const ted_st_tensor *t;
    snprintf(full, full_size, "%s.%s", name, suffix);
    *found = ted_safetensors_find(&b->model->file, full) != NULL;
    *v = NAN;
    if (!*found)
        return TED_OK;
    ted_status s = find_shaped(b, full, 1, 0, &t);
    if (!s && t->dtype == TED_DTYPE_F32)
        memcpy(v, t->data, sizeof *v);
    return s;
}

/* The optional "NAME.x_mult" (F32, shape (1)) of the int8 matrix NAME: how
 * its products quantize x (ted_matrix.x_mult), a multiplier > 0 or
 * TED_I8_WHOLE; without it, each row with its own scale. */
static ted_status bind_x_mult(weight_binder *b, ted_matrix *field, const char *name)
{
    char mult_name[300];
    int found;
    float v;
    ted_status s = read_multiplier(b, name, "x_mult", mult_name, sizeof mult_name, &found, &v);
    if (s || !found)
        return s;
    if (!(v == TED_I8_WHOLE || (v > 0.0f && v <= FLT_MAX)))
        return ted_fail(b->err, TED_ERR_WEIGHTS, "%s: tensor '%s' must be one F32, a "
                        "multiplier above 0 or %g (127 / max |x| per product)", b->path,
                        mult_name, (double)TED_I8_WHOLE);
    field->x_mult = v;
    return TED_OK;
}

/* The optional "NAME.w_mult" (F32, shape (1)) of an int8 matrix NAME with
 * an x_mult: Marian's multiplier qm_B of W (ted_matrix.w_mult), by which
 * its products scale their dots as 1 / (qm_A * qm_B). */
static ted_status bind_w_mult(weight_binder *b, ted_matrix *field, const char *name)
{
    char mult_name[300];
    int found;
    float v;
    ted_status s = read_multiplier(b, name, "w_mult", mult_name, sizeof mult_name, &found, &v);
    if (s || !found)
        return s;
    if (!(v > 0.0f && v <= FLT_MAX) || field->x_mult == 0.0f)
        return ted_fail(b->err, TED_ERR_WEIGHTS, "%s: tensor '%s' must be one F32 above 0, "
                        "beside a '%s.x_mult'", b->path, mult_name, name);
    field->w_mult = v;
    return TED_OK;
}

/* Binds the matrix NAME (rows, cols): BF16 used in place from the mapping
 * (converted to float when its data is not 2-byte aligned), F32 or F16
 * as floats, I8 with its scales, or U8 (int4) with its group scales. */
static ted_status bind_matrix(weight_binder *b, ted_matrix *field, int64_t rows, int64_t cols,
                              const char *name_format, ...)
    __attribute__((format(printf, 5, 6)));

static ted_status bind_matrix(weight_binder *b, ted_matrix *field, int64_t rows, int64_t cols,
                              const char *name_format, ...)
{
    char name[NAME_SIZE];
    const ted_st_tensor *t;
    va_list args;
    va_start(args, name_format);
    vsnprintf(name, NAME_SIZE, name_format, args);
    va_end(args);
    t = ted_safetensors_find(&b->model->file, name);
    if (t && t->dtype == TED_DTYPE_U8) {  /* its bytes are not its columns */
        b->used[t - b->model->file.tensors] = 1;
        return t->ndim == 3 ? bind_i8_groups(b, field, t, rows, cols)
                            : bind_i4(b, field, t, rows, cols);
    }
    ted_status s = find_shaped(b, name, rows, cols, &t);
    if (s)
        return s;
    *field = (ted_matrix){0};
    if (t->dtype == TED_DTYPE_I8) {
        field->i8 = t->data;
        s = bind_scales(b, field, name, rows, cols);
        if (!s)
            s = bind_x_mult(b, field, name);
        return s ? s : bind_w_mult(b, field, name);
    }
    if (t->dtype == TED_DTYPE_BF16 && (uintptr_t)t->data % sizeof(uint16_t) == 0) {
        field->bf16 = t->data;
        return TED_OK;
    }
    return to_f32(b, t, (size_t)rows * (size_t)cols, &field->f32);
}

/* Every tensor of the file must be one the config uses: an extra one means
 * the config and the weights disagree (more layers, a final norm...). */
static ted_status check_all_used(weight_binder *b)
{
    const ted_safetensors *f = &b->model->file;
    for (int i = 0; i < f->count; i++)
        if (!b->used[i])
            return ted_fail(b->err, TED_ERR_WEIGHTS,
                            "%s: tensor '%s' is not part of the model config.yaml describes "
                            "(check encoder_layers, decoder_layers and the final norms)",
                            b->path, f->tensors[i].name);
    return TED_OK;
}

/* A norm's gamma, and its beta unless it is an RMSNorm, which has none. */
static ted_status bind_norm(weight_binder *b, ted_norm_weights *w, int d,
                            const char *prefix, const char *name)
{
    ted_status s = bind_vector(b, &w->weight, d, "%s.%s.weight", prefix, name);
    w->bias = NULL;
    if (s || b->model->config.norm == TED_NORM_RMS)
        return s;
    return bind_vector(b, &w->bias, d, "%s.%s.bias", prefix, name);
}

/* ---- multi-head attention ------------------------------------------------- */

/* W^Q, W^K, W^V as the thirds of a packed (3 * d, d) projection. */
static ted_status bind_packed_projection(weight_binder *b, ted_attention_weights *w, int d,
                                         const char *prefix)
{
    if (b->model->config.query_size * b->model->config.heads != d)
        return ted_fail(b->err, TED_ERR_WEIGHTS, "%s: %s: a packed projection needs heads * "
                        "query_size = d_model (attention_projection: separate)", b->path,
                        prefix);
    const char *name = b->names->packed_projection;
    ted_matrix weight;
    const float *bias;
    ted_status s;
    if ((s = bind_matrix(b, &weight, 3 * d, d, "%s.%s_weight", prefix, name)) ||
        (s = bind_vector(b, &bias, 3 * d, "%s.%s_bias", prefix, name)))
        return s;
    if (weight.i8_packed && !weight.i8 && d % TED_I8_GROUP_ROWS)
        return ted_fail(b->err, TED_ERR_WEIGHTS,
                        "%s: %s.%s_weight is int8 in the mapped layout, whose Q, K and V "
                        "must each start a group: d_model (%d) must be a multiple of %d",
                        b->path, prefix, name, d, TED_I8_GROUP_ROWS);
    w->q_weight = weight, w->q_bias = bias;
    w->k_weight = ted_matrix_rows(weight, d, d), w->k_bias = bias + d;
    w->v_weight = ted_matrix_rows(weight, 2 * (size_t)d, d), w->v_bias = bias + 2 * d;
    return TED_OK;
}

/* A Linear layer's weight (out, in), and its bias (out) unless the
 * model's Linears have none (linear_bias: false). */
static ted_status bind_linear(weight_binder *b, ted_matrix *weight, const float **bias,
                              int out, int in, const char *prefix, const char *name)
{
    ted_status s = bind_matrix(b, weight, out, in, "%s.%s.weight", prefix, name);
    *bias = NULL;
    if (s || !b->model->config.linear_bias)
        return s;
    return bind_vector(b, bias, out, "%s.%s.bias", prefix, name);
}

/* W^Q, W^K, W^V (inner, d) and W^O (d, inner), inner = heads * query_size. */
static ted_status bind_attention(weight_binder *b, ted_attention_weights *w, int d,
                                 const char *layer, const char *attention)
{
    const tensor_names *n = b->names;
    const ted_config *c = &b->model->config;
    int inner = c->heads * c->query_size;
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s.%s", layer, attention);
    ted_status s;
    if (c->attention_projection == TED_PROJECTION_PACKED)
        s = bind_packed_projection(b, w, d, prefix);
    else if (!(s = bind_linear(b, &w->q_weight, &w->q_bias, inner, d, prefix, n->q)) &&
             !(s = bind_linear(b, &w->k_weight, &w->k_bias, inner, d, prefix, n->k)))
        s = bind_linear(b, &w->v_weight, &w->v_bias, inner, d, prefix, n->v);
    return s ? s : bind_linear(b, &w->out_weight, &w->out_bias, d, inner, prefix, n->out);
}

/* ---- layers ---------------------------------------------------------------- */

static ted_status bind_feed_forward(weight_binder *b, ted_feed_forward_weights *w,
                                    const ted_config *c, const char *layer)
{
    const tensor_names *n = b->names;
    ted_status s = bind_linear(b, &w->linear1_weight, &w->linear1_bias, c->d_ff, c->d_model,
                               layer, n->ffn_in);
    if (!s && c->feed_forward == TED_FEED_FORWARD_GATED)
        s = bind_linear(b, &w->up_weight, &w->up_bias, c->d_ff, c->d_model, layer, n->ffn_up);
    return s ? s : bind_linear(b, &w->linear2_weight, &w->linear2_bias, c->d_model, c->d_ff,
                               layer, n->ffn_out);
}

static ted_status bind_encoder_layer(weight_binder *b, ted_encoder_layer *w, int index)
{
    const ted_config *c = &b->model->config;
    const tensor_names *n = b->names;
    char layer[96];
    snprintf(layer, sizeof layer, n->encoder_layer, index);
    ted_status s;
    if ((s = bind_attention(b, &w->self_attention, c->d_model, layer, n->self_attention)) ||
        (s = bind_feed_forward(b, &w->feed_forward, c, layer)) ||
        (s = bind_norm(b, &w->norm1, c->d_model, layer, n->encoder_norms[0])))
        return s;
    return bind_norm(b, &w->norm2, c->d_model, layer, n->encoder_norms[1]);
}

/* An SSRU's W and W_f (d, d) and b_f (d). */
static ted_status bind_ssru(weight_binder *b, ted_ssru_weights *w, int d, const char *layer)
{
    const char *name = b->names->ssru;
    ted_status s = bind_matrix(b, &w->weight, d, d, "%s.%s.weight", layer, name);
    if (!s)
        s = bind_matrix(b, &w->forget_weight, d, d, "%s.%s.forget.weight", layer, name);
    return s ? s : bind_vector(b, &w->forget_bias, d, "%s.%s.forget.bias", layer, name);
}

static ted_status bind_decoder_layer(weight_binder *b, ted_decoder_layer *w, int index)
{
    const ted_config *c = &b->model->config;
    const tensor_names *n = b->names;
    char layer[96];
    snprintf(layer, sizeof layer, n->decoder_layer, index);
    ted_status s;
    if (c->decoder_layer == TED_DECODER_LAYER_SSRU)
        s = bind_ssru(b, &w->ssru, c->d_model, layer);
    else
        s = bind_attention(b, &w->self_attention, c->d_model, layer, n->self_attention);
    if (s || (s = bind_attention(b, &w->cross_attention, c->d_model, layer,
                                 n->cross_attention)) ||
        (s = bind_feed_forward(b, &w->feed_forward, c, layer)))
        return s;
    ted_norm_weights *norms[3] = {&w->norm1, &w->norm2, &w->norm3};
    for (int i = 0; i < 3; i++)
        if ((s = bind_norm(b, norms[i], c->d_model, layer, n->decoder_norms[i])))
            return s;
    return TED_OK;
}

/* ---- the whole model ------------------------------------------------------- */

static ted_status bind_embeddings(weight_binder *b, ted_weights *w)
{
    const ted_config *c = &b->model->config;
    const tensor_names *n = b->names;
    if (c->shared_embeddings) {
        ted_status s = bind_matrix(b, &w->src_embedding, c->src_vocab_size, c->d_model, "%s",
                                   n->shared_embedding);
        w->tgt_embedding = w->src_embedding;
        return s;
    }
    ted_status s = bind_matrix(b, &w->src_embedding, c->src_vocab_size, c->d_model, "%s",
                               n->src_embedding);
    return s ? s : bind_matrix(b, &w->tgt_embedding, c->tgt_vocab_size, c->d_model, "%s",
                               n->tgt_embedding);
}

/* The final Linear: its own weight, or the target embedding used in place
 * (tied_output); a bias or none. */
static ted_status bind_output(weight_binder *b, ted_weights *w)
{
    const ted_config *c = &b->model->config;
    const tensor_names *n = b->names;
    ted_status s = TED_OK;
    w->generator.weight = w->tgt_embedding;
    if (!c->tied_output)
        s = bind_matrix(b, &w->generator.weight, c->tgt_vocab_size, c->d_model, "%s",
                        n->output_weight);
    w->generator.bias = NULL;
    if (!s && c->output_bias)
        s = bind_vector(b, &w->generator.bias, c->tgt_vocab_size, "%s", n->output_bias);
    return s;
}

/* A table that is added, not multiplied (a learned positional table, a
 * relative position bias), `stack`.`name` of (rows, cols), as floats: an
 * int8 or bf16 one (ted quantize makes every matrix int8) is converted
 * into memory the model owns. */
static ted_status bind_table(weight_binder *b, const float **field, int64_t rows, int cols,
                             const char *stack, const char *name)
{
    ted_matrix table;
    ted_status s = bind_matrix(b, &table, rows, cols, "%s.%s", stack, name);
    if (s || table.f32) {
        *field = table.f32;
        return s;
    }
    size_t count = (size_t)rows * (size_t)cols;
    float *f = ted_alloc_floats(count, name, b->err);
    float **grown = f ? realloc(b->model->converted,
                                sizeof *grown * (b->model->converted_count + 1)) : NULL;
    if (!grown) {
        free(f);
        return ted_fail(b->err, TED_ERR_NOMEM, "%s: %s.%s: out of memory", b->path, stack,
                        name);
    }
    b->model->converted = grown;
    b->model->converted[b->model->converted_count++] = f;
    for (int64_t r = 0; r < rows; r++)
        ted_matrix_row(f + (size_t)r * cols, table, (int)r, cols, 1.0f);
    *field = f;
    return TED_OK;
}

/* A learned positional table (max_positions + position_offset, d_model). */
static ted_status bind_positions(weight_binder *b, const float **field, const char *stack)
{
    const ted_config *c = &b->model->config;
    int64_t rows = (int64_t)c->max_positions + c->position_offset;
    return bind_table(b, field, rows, c->d_model, stack, b->names->positions);
}

/* Both stacks' relative position bias: the tables (relative_buckets,
 * heads) and the bucket of every distance, bidirectional in the encoder,
 * unidirectional in the decoder (m->buckets). */
static ted_status bind_relative_bias(weight_binder *b, ted_weights *w)
{
    const ted_config *c = &b->model->config;
    const tensor_names *n = b->names;
    ted_position_bias *bias[2] = {&w->encoder_bias, &w->decoder_bias};
    const char *stacks[2] = {n->encoder, n->decoder};
    ted_bucket_rule rule = {c->relative_buckets, c->relative_max_distance, true};
    int reach = ted_bucket_reach(rule);
    size_t width = 2 * (size_t)reach + 1;
    int *buckets = b->model->buckets = ted_alloc(2 * width, sizeof(int), "buckets", b->err);
    if (!buckets)
        return TED_ERR_NOMEM;
    for (int i = 0; i < 2; i++) {
        ted_status s = bind_table(b, &bias[i]->table, c->relative_buckets, c->heads,
                                  stacks[i], n->relative_bias);
        if (s)
            return s;
        rule.bidirectional = i == 0;
        ted_fill_buckets(buckets + i * width, reach, rule);
        bias[i]->buckets = buckets + i * width;
        bias[i]->reach = reach;
        bias[i]->heads = c->heads;
    }
    return TED_OK;
}

/* What each stack has besides its layers: relative position biases,
 * learned positional tables, the embedding LayerNorms. */
static ted_status bind_stack_inputs(weight_binder *b, ted_weights *w)
{
    const ted_config *c = &b->model->config;
    const tensor_names *n = b->names;
    ted_status s = TED_OK;
    if (c->positional_layout == TED_POSITIONS_RELATIVE && (s = bind_relative_bias(b, w)))
        return s;
    if (!b->model->kinds.positions->fill &&  /* learned: the table is a weight */
        ((s = bind_positions(b, &w->encoder_positions, n->encoder)) ||
         (s = bind_positions(b, &w->decoder_positions, n->decoder))))
        return s;
    if (c->embedding_norm &&
        ((s = bind_norm(b, &w->encoder_embedding_norm, c->d_model, n->encoder,
                        n->embedding_norm)) ||
         (s = bind_norm(b, &w->decoder_embedding_norm, c->d_model, n->decoder,
                        n->embedding_norm))))
        return s;
    return TED_OK;
}

static ted_status bind_stacks(weight_binder *b, ted_weights *w)
{
    const ted_config *c = &b->model->config;
    const tensor_names *n = b->names;
    w->encoder = ted_alloc(c->encoder_layers, sizeof *w->encoder, "encoder layers", b->err);
    w->decoder = ted_alloc(c->decoder_layers, sizeof *w->decoder, "decoder layers", b->err);
    if (!w->encoder || !w->decoder)
        return TED_ERR_NOMEM;
    ted_status s = bind_stack_inputs(b, w);
    if (s)
        return s;
    for (int i = 0; i < c->encoder_layers; i++)
        if ((s = bind_encoder_layer(b, &w->encoder[i], i)))
            return s;
    for (int i = 0; i < c->decoder_layers; i++)
        if ((s = bind_decoder_layer(b, &w->decoder[i], i)))
            return s;
    if (c->encoder_final_norm &&
        (s = bind_norm(b, &w->encoder_norm, c->d_model, n->encoder, n->final_norm)))
        return s;
    if (c->decoder_final_norm &&
        (s = bind_norm(b, &w->decoder_norm, c->d_model, n->decoder, n->final_norm)))
        return s;
    return TED_OK;
}

/* ---- float weights in panels ------------------------------------------------ */

typedef struct linear_weight {
    ted_matrix *matrix;
    int rows, cols;
} linear_weight;

typedef struct linear_list {
    linear_weight *items;  /* NULL while counting */
    int count;
} linear_list;

static void add_linear(linear_list *list, ted_matrix *matrix, int rows, int cols)
{
    if (list->items)
        list->items[list->count] = (linear_weight){matrix, rows, cols};
    list->count++;
}

/* Q, K and V (inner, d) one after another: when their rows follow one
 * another in the file (a packed in_proj_weight), so do their panels, and
 * the products of Q, K and V stay one product. W^O (d, inner). */
static void add_attention(linear_list *list, ted_attention_weights *a, int d, int inner)
{
    add_linear(list, &a->q_weight, inner, d);
    add_linear(list, &a->k_weight, inner, d);
    add_linear(list, &a->v_weight, inner, d);
    add_linear(list, &a->out_weight, d, inner);
}

static void add_feed_forward(linear_list *list, ted_feed_forward_weights *f,
                             const ted_config *c)
{
    add_linear(list, &f->linear1_weight, c->d_ff, c->d_model);
    if (c->feed_forward == TED_FEED_FORWARD_GATED)
        add_linear(list, &f->up_weight, c->d_ff, c->d_model);
    add_linear(list, &f->linear2_weight, c->d_model, c->d_ff);
}

/* Every Linear layer's weight (the embeddings are looked up, not
 * multiplied, and keep their stored rows). */
static void list_linear_weights(linear_list *list, ted_weights *w, const ted_config *c)
{
    int d = c->d_model, inner = c->heads * c->query_size;
    for (int l = 0; l < c->encoder_layers; l++) {
        add_attention(list, &w->encoder[l].self_attention, d, inner);
        add_feed_forward(list, &w->encoder[l].feed_forward, c);
    }
    for (int l = 0; l < c->decoder_layers; l++) {
        if (c->decoder_layer == TED_DECODER_LAYER_SSRU) {
            add_linear(list, &w->decoder[l].ssru.weight, d, d);
            add_linear(list, &w->decoder[l].ssru.forget_weight, d, d);
        } else {
            add_attention(list, &w->decoder[l].self_attention, d, inner);
        }
        add_attention(list, &w->decoder[l].cross_attention, d, inner);
        add_feed_forward(list, &w->decoder[l].feed_forward, c);
    }
    add_linear(list, &w->generator.weight, c->tgt_vocab_size, d);
}

ted_status ted_weights_linear_role(const ted_model *m, const void *data, ted_linear_role *role,
                                   ted_error *err)
{
    ted_weights *w = (ted_weights *)&m->weights;  /* listed, not written */
    linear_list list = {NULL, 0};
    list_linear_weights(&list, w, &m->config);
    list.items = ted_alloc((size_t)list.count, sizeof *list.items, "linear weights", err);
    if (!list.items)
        return TED_ERR_NOMEM;
    list.count = 0;
    list_linear_weights(&list, w, &m->config);
    *role = TED_LINEAR_NONE;
    for (int i = 0; data && *role == TED_LINEAR_NONE && i < list.count; i++)
        if (list.items[i].matrix->f32 == data)
            *role = list.items[i].matrix == &w->generator.weight ? TED_LINEAR_OUTPUT
                                                                 : TED_LINEAR_INNER;
    free(list.items);
    return TED_OK;
}

/* An embedding table that is the output layer's weight (tied) looks its
 * rows up in the output layer's copy (panels, or int8 packed): its mapped
 * pages were let go. */
static void share_output_panels(ted_weights *w)
{
    ted_matrix *tables[2] = {&w->src_embedding, &w->tgt_embedding};
    const ted_matrix *out = &w->generator.weight;
    for (int i = 0; i < 2; i++) {
        if (tables[i]->f32 && tables[i]->f32 == out->f32)
            tables[i]->panels = out->panels;
        if (tables[i]->i8 && tables[i]->i8 == out->i8)
            tables[i]->i8_packed = out->i8_packed;
    }
}

/* Letting mapped pages go costs a system call and, with other threads
 * running, an interrupt to each of their cores: it is done per slice for a
 * large matrix (the output layer), and for the others once they add up to
 * RELEASE_BYTES, so the resident memory holds at most that much twice
 * (measurements: docs/performance.md#releasing-the-mapped-weights). */
enum { SLICE_ROWS = 64 * TED_PANEL_COLUMNS, RELEASE_BYTES = 2 << 20 };

/* The mapped range whose weights were packed and not yet let go. */
typedef struct released {
    const ted_safetensors *file;
    const char *begin, *end;  /* NULL: nothing pending */
} released;

static void release_pending(released *r)
{
    if (r->begin)
        ted_safetensors_release(r->file, r->begin, (size_t)(r->end - r->begin));
    r->begin = r->end = NULL;
}

static void add_pending(released *r, const void *data, size_t bytes)
{
    const char *begin = data, *end = begin + bytes;
    r->begin = r->begin && r->begin < begin ? r->begin : begin;
    r->end = r->end && r->end > end ? r->end : end;
}

/* The layouts a Linear weight is copied into at load: float32 into
 * panels, bf16 into bf16 panels, int8 packed for vpdpbusd where the
 * kernel set reads it so (kernels.h). */
typedef enum { PACK_F32, PACK_BF16, PACK_I8, PACK_KINDS } pack_kind;

/* W's stored elements of `kind`, or NULL. */
static const void *stored(const ted_matrix *W, pack_kind kind)
{
    return kind == PACK_F32    ? (const void *)W->f32
           : kind == PACK_BF16 ? (const void *)W->bf16
                               : (const void *)W->i8;
}

static size_t stored_bytes(pack_kind kind, int rows, int cols)
{
    static const size_t element[PACK_KINDS] = {sizeof(float), sizeof(uint16_t), 1};
    return (size_t)rows * cols * element[kind];
}

/* Bytes of W (rows, cols) copied (rows: all of W, or a whole number of
 * panels or groups); SIZE_MAX when the count overflows. Each is a multiple
 * of 64, so the copies that follow one another stay aligned. */
static size_t copied_bytes(pack_kind kind, int rows, int cols)
{
    if (kind == PACK_F32)
        return ted_mul_size(ted_panels_floats(rows, cols), sizeof(float));
    if (kind == PACK_BF16)
        return ted_mul_size(ted_bf16_panels_halves(rows, cols), sizeof(uint16_t));
    return ted_i8_packed_bytes(rows, cols);
}

static void set_copy(ted_matrix *W, pack_kind kind, const void *copy)
{
    if (kind == PACK_F32)
        W->panels = copy;
    else if (kind == PACK_BF16)
        W->bf16_panels = copy;
    else
        W->i8_packed = copy;
}

/* W (rows, cols) of `kind` copied into `to`, a slice of rows per task over
 * the pool. */
typedef struct packing {
    pack_kind kind;
    char *to;
    const char *W;
    int rows, cols;
    const ted_safetensors *file;  /* let each slice go, or NULL */
} packing;

static void pack_slice(void *context, int index)
{
    const packing *p = context;
    int first = index * SLICE_ROWS;
    int count = p->rows - first < SLICE_ROWS ? p->rows - first : SLICE_ROWS;
    const char *slice = p->W + stored_bytes(p->kind, first, p->cols);
    void *to = p->to + copied_bytes(p->kind, first, p->cols);
    if (p->kind == PACK_F32)
        ted_pack_panels(to, (const float *)slice, count, p->cols);
    else if (p->kind == PACK_BF16)
        ted_pack_bf16_panels(to, (const uint16_t *)slice, count, p->cols);
    else
        ted_pack_i8(to, (const int8_t *)slice, count, p->cols);
    if (p->file)
        ted_safetensors_release(p->file, slice, stored_bytes(p->kind, count, p->cols));
}

/* Copies the matrix of `job` and lets its mapped pages go: a large one
 * slice by slice, a small one with the pending range. */
static void pack_and_release(packing job, released *pending)
{
    size_t bytes = stored_bytes(job.kind, job.rows, job.cols);
    bool large = bytes >= RELEASE_BYTES;
    job.file = large ? pending->file : NULL;
    ted_parallel_for((job.rows + SLICE_ROWS - 1) / SLICE_ROWS, pack_slice, &job);
    if (large)
        return;
    add_pending(pending, job.W, bytes);
    if ((size_t)(pending->end - pending->begin) >= RELEASE_BYTES)
        release_pending(pending);
}

/* Whether the weights of `kind` are copied: int8 ones only where the kernel
 * set reads them packed. */
static bool copied(pack_kind kind)
{
    return kind != PACK_I8 || ted_i8_packs();
}

/* Copies every Linear weight into the layout its products read, in one
 * allocation, and lets the mapped pages it came from go: the products read
 * the copies only, so the resident memory holds each weight once. */
static ted_status pack_linear_weights(ted_model *m, const char *path, ted_error *err)
{
    linear_list list = {NULL, 0};
    list_linear_weights(&list, &m->weights, &m->config);
    list.items = ted_alloc((size_t)list.count, sizeof *list.items, "linear weights", err);
    if (!list.items)
        return TED_ERR_NOMEM;
    list.count = 0;
    list_linear_weights(&list, &m->weights, &m->config);

    size_t bytes = 0;  /* SIZE_MAX once the sum overflows */
    for (pack_kind kind = 0; kind < PACK_KINDS; kind++)
        for (int i = 0; copied(kind) && i < list.count; i++) {
            const linear_weight *l = &list.items[i];
            size_t size = stored(l->matrix, kind) ? copied_bytes(kind, l->rows, l->cols) : 0;
            bytes = bytes != SIZE_MAX && size <= SIZE_MAX - bytes ? bytes + size : SIZE_MAX;
        }
    ted_status s = TED_OK;
    if (bytes == SIZE_MAX)
        s = ted_fail(err, TED_ERR_NOMEM,
                     "%s: the Linear weights' copies would not fit in the address space", path);
    else if (bytes > 0 && !(m->copies = ted_alloc_prefaulted(bytes)))
        s = ted_fail(err, TED_ERR_NOMEM,
                     "%s: cannot allocate %zu MiB for the Linear weights' copies", path,
                     bytes >> 20);
    m->copies_bytes = m->copies ? bytes : 0;
    char *next = m->copies;
    released pending = {&m->file, NULL, NULL};
    for (pack_kind kind = 0; !s && kind < PACK_KINDS; kind++)
        for (int i = 0; copied(kind) && i < list.count; i++) {
            linear_weight *l = &list.items[i];
            const void *W = stored(l->matrix, kind);
            if (!W)
                continue;
            pack_and_release((packing){kind, next, W, l->rows, l->cols, NULL}, &pending);
            set_copy(l->matrix, kind, next);
            next += copied_bytes(kind, l->rows, l->cols);
        }
    release_pending(&pending);
    free(list.items);
    share_output_panels(&m->weights);
    return s;
}

ted_status ted_weights_bind(ted_model *m, const char *path, ted_error *err)
{
    weight_binder b = {.model = m, .names = &schemes[m->config.tensor_names], .path = path,
                       .err = err};
    b.used = ted_alloc(m->file.count, 1, "tensor flags", err);
    if (!b.used)
        return TED_ERR_NOMEM;
    ted_weights *w = &m->weights;
    ted_status s = check_layout(&b);
    if (!s)
        s = bind_embeddings(&b, w);
    if (!s)
        s = bind_stacks(&b, w);
    if (!s)
        s = bind_output(&b, w);
    if (!s)
        s = check_all_used(&b);
    free(b.used);
    return s || m->unpacked ? s : pack_linear_weights(m, path, err);
}
