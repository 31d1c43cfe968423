/* Marian's tensors under ted's names (io/marian_tensors.h). Marian names
 * a Linear's weight W (in, out) and its bias b (1, out); ted's tensor_names
 * marian wants (out, in) and (out). */
#include "io/marian_tensors.h"

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/config.h"

/* NAME.x_mult's value for "127 / max |x| of each product's x" (the tensor
 * format of model/weights.c, TED_I8_WHOLE). */
#define X_MULT_WHOLE (-1.0f)

typedef enum copy_kind {
    AS_STORED,   /* a table or a vector: (rows, cols) as Marian's */
    TRANSPOSED,  /* a Linear's weight: Marian's (in, out) as (out, in) */
} copy_kind;

typedef struct mapping {
    char ted[128];
    char marian[128];
    copy_kind kind;
    int64_t rows, cols;  /* Marian's shape; cols 0: a vector (1, rows) */
} mapping;

typedef struct plan {
    mapping *items;  /* NULL while counting */
    int count;
} plan;

static void add(plan *p, copy_kind kind, int64_t rows, int64_t cols, const char *marian,
                const char *ted_format, const char *layer)
{
    if (p->items) {
        mapping *m = &p->items[p->count];
        snprintf(m->ted, sizeof m->ted, ted_format, layer);
        snprintf(m->marian, sizeof m->marian, "%s", marian);
        m->kind = kind;
        m->rows = rows;
        m->cols = cols;
    }
    p->count++;
}

/* Marian's prefix_W<s> and prefix_b<s> as ted's layer.name.weight and .bias. */
static void add_linear(plan *p, const char *prefix, const char *suffix, int64_t in,
                       int64_t out, const char *layer, const char *name)
{
    char marian[128], ted[128];
    snprintf(marian, sizeof marian, "%s_W%s", prefix, suffix);
    snprintf(ted, sizeof ted, "%%s.%s.weight", name);
    add(p, TRANSPOSED, in, out, marian, ted, layer);
    snprintf(marian, sizeof marian, "%s_b%s", prefix, suffix);
    snprintf(ted, sizeof ted, "%%s.%s.bias", name);
    add(p, AS_STORED, out, 0, marian, ted, layer);
}

static void add_norm(plan *p, const char *prefix, int64_t d, const char *layer,
                     const char *name)
{
    char marian[128], ted[128];
    snprintf(marian, sizeof marian, "%s_ln_scale", prefix);
    snprintf(ted, sizeof ted, "%%s.%s.weight", name);
    add(p, AS_STORED, d, 0, marian, ted, layer);
    snprintf(marian, sizeof marian, "%s_ln_bias", prefix);
    snprintf(ted, sizeof ted, "%%s.%s.bias", name);
    add(p, AS_STORED, d, 0, marian, ted, layer);
}

/* Multi-head attention prefix_{Wq,bq,...} and its Add & Norm prefix_Wo_ln_*. */
static void add_attention(plan *p, const char *prefix, int64_t d, const char *layer,
                          const char *name, const char *norm)
{
    static const char *const parts[4][2] = {{"q", "q_proj"}, {"k", "k_proj"},
                                            {"v", "v_proj"}, {"o", "out_proj"}};
    char ted[64], wo[128];
    for (int i = 0; i < 4; i++) {
        snprintf(ted, sizeof ted, "%s.%s", name, parts[i][1]);
        add_linear(p, prefix, parts[i][0], d, d, layer, ted);
    }
    snprintf(wo, sizeof wo, "%s_Wo", prefix);
    add_norm(p, wo, d, layer, norm);
}

static void add_feed_forward(plan *p, const char *prefix, const ted_config *c,
                             const char *layer)
{
    char norm[128];
    add_linear(p, prefix, "1", c->d_model, c->d_ff, layer, "fc1");
    add_linear(p, prefix, "2", c->d_ff, c->d_model, layer, "fc2");
    snprintf(norm, sizeof norm, "%s_ffn", prefix);
    add_norm(p, norm, c->d_model, layer, "final_layer_norm");
}

/* An SSRU decoder layer: W (no bias), Wf and bf, its Add & Norm. */
static void add_ssru(plan *p, const char *prefix, int64_t d, const char *layer)
{
    char marian[128], norm[128];
    snprintf(marian, sizeof marian, "%s_W", prefix);
    add(p, TRANSPOSED, d, d, marian, "%s.ssru.weight", layer);
    add_linear(p, prefix, "f", d, d, layer, "ssru.forget");
    snprintf(norm, sizeof norm, "%s_ffn", prefix);
    add_norm(p, norm, d, layer, "self_attn_layer_norm");
}

static void make_plan(plan *p, const ted_config *c)
{
    char prefix[64], layer[64];
    int64_t d = c->d_model;
    p->count = 0;
    add(p, AS_STORED, c->tgt_vocab_size, d, "Wemb", "model.shared.weight%s", "");
    add(p, AS_STORED, c->tgt_vocab_size, 0, "decoder_ff_logit_out_b", "final_logits_bias%s", "");
    for (int i = 0; i < c->encoder_layers; i++) {
        snprintf(layer, sizeof layer, "model.encoder.layers.%d", i);
        snprintf(prefix, sizeof prefix, "encoder_l%d_self", i + 1);
        add_attention(p, prefix, d, layer, "self_attn", "self_attn_layer_norm");
        snprintf(prefix, sizeof prefix, "encoder_l%d_ffn", i + 1);
        add_feed_forward(p, prefix, c, layer);
    }
    for (int i = 0; i < c->decoder_layers; i++) {
        snprintf(layer, sizeof layer, "model.decoder.layers.%d", i);
        snprintf(prefix, sizeof prefix, "decoder_l%d_%s", i + 1,
                 c->decoder_layer == TED_DECODER_LAYER_SSRU ? "rnn" : "self");
        if (c->decoder_layer == TED_DECODER_LAYER_SSRU)
            add_ssru(p, prefix, d, layer);
        else
            add_attention(p, prefix, d, layer, "self_attn", "self_attn_layer_norm");
        snprintf(prefix, sizeof prefix, "decoder_l%d_context", i + 1);
        add_attention(p, prefix, d, layer, "encoder_attn", "encoder_attn_layer_norm");
        snprintf(prefix, sizeof prefix, "decoder_l%d_ffn", i + 1);
        add_feed_forward(p, prefix, c, layer);
    }
}

/* ---- the values -------------------------------------------------------------- */

/* Element (r, c) of Marian's (rows, cols) tensor `t`, as a float. */
static float element(const ted_marian_tensor *t, int64_t rows, int64_t cols, int64_t r,
                     int64_t c)
{
    const unsigned char *data = t->st.data;
    size_t at = t->transposed ? (size_t)(c * rows + r) : (size_t)(r * cols + c);
    if (t->st.dtype == TED_DTYPE_I8)
        return (float)((const int8_t *)data)[at] / t->quant_mult;
    float v;
    memcpy(&v, data + at * sizeof v, sizeof v);  /* a .npz member may be unaligned */
    return v;
}

/* `t` has Marian's shape for m (rows, cols), or (1, rows) for a vector,
 * and a type ted reads. */
static ted_status check_tensor(const ted_marian_tensor *t, const mapping *m, const char *path,
                               ted_error *err)
{
    int64_t rows = m->cols ? m->rows : 1, cols = m->cols ? m->cols : m->rows;
    bool shaped = t->st.ndim == 2 && t->st.shape[0] == rows && t->st.shape[1] == cols;
    if (!shaped && !m->cols && t->st.ndim == 1)
        shaped = t->st.shape[0] == m->rows;
    if (!shaped)
        return ted_fail(err, TED_ERR_WEIGHTS, "%s: tensor '%s': not of shape [%lld, %lld], "
                        "which model.yml gives it", path, m->marian, (long long)rows,
                        (long long)cols);
    bool quantized = t->st.dtype == TED_DTYPE_I8 && t->quant_mult > 0;
    if (t->st.dtype != TED_DTYPE_F32 && !quantized)
        return ted_fail(err, TED_ERR_WEIGHTS, "%s: tensor '%s' is of Marian type 0x%llx; "
                        "ted reads float32 and intgemm8", path, m->marian,
                        (unsigned long long)t->type);
    return TED_OK;
}

/* Copies Marian's tensor of `m` into out, as ted's. */
static void copy_values(const ted_marian_tensor *t, const mapping *m, float *out)
{
    int64_t rows = m->cols ? m->rows : 1, cols = m->cols ? m->cols : m->rows;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            size_t to = m->kind == TRANSPOSED ? (size_t)(c * rows + r) : (size_t)(r * cols + c);
            out[to] = element(t, rows, cols, r, c);
        }
}

static ted_status describe(ted_st_tensor *st, const mapping *m, float *values, ted_error *err)
{
    if (!(st->name = strdup(m->ted)))
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", m->ted);
    st->dtype = TED_DTYPE_F32;
    st->ndim = m->cols ? 2 : 1;
    st->shape[0] = m->kind == TRANSPOSED ? m->cols : m->rows;
    st->shape[1] = m->kind == TRANSPOSED ? m->rows : m->cols;
    st->data = values;
    st->bytes = sizeof(float) * (size_t)m->rows * (size_t)(m->cols ? m->cols : 1);
    return TED_OK;
}

/* Whether Marian's tensor of `m` stays int8: a Linear's weight, intgemm8.
 * Its products then quantize x as Marian does (ted_matrix.x_mult). */
static bool kept_int8(const mapping *m, const ted_marian_tensor *t)
{
    return m->kind == TRANSPOSED && t->st.dtype == TED_DTYPE_I8;
}

/* Floats of `values` that the tensors of `m` take: the matrix as floats,
 * or kept as int8 (rounded up to floats), its row scales, its x_mult and
 * its w_mult. */
static size_t floats_of(const mapping *m, const ted_marian_tensor *t)
{
    size_t n = (size_t)m->rows * (size_t)(m->cols ? m->cols : 1);
    return kept_int8(m, t) ? (n + 3) / 4 + (size_t)m->cols + 2 : n;
}

/* Marian's activation multiplier of the int8 matrix `t`: browsermt's
 * precomputed "<name>_QuantMultA" item when the file has one, else
 * X_MULT_WHOLE (127 / max |x| per product, Marian's intgemm8). */
static ted_status x_mult_of(const ted_marian_file *file, const ted_marian_tensor *t,
                            const char *path, float *x_mult, ted_error *err)
{
    char name[160];
    snprintf(name, sizeof name, "%s_QuantMultA", t->st.name);
    const ted_marian_tensor *a = ted_marian_find(file, name);
    *x_mult = X_MULT_WHOLE;
    if (!a)
        return TED_OK;
    if (a->st.dtype == TED_DTYPE_F32 && a->st.bytes == sizeof(float))
        memcpy(x_mult, a->st.data, sizeof *x_mult);
    if (a->st.dtype != TED_DTYPE_F32 || a->st.bytes != sizeof(float) ||
        !(*x_mult > 0.0f && *x_mult <= FLT_MAX))
        return ted_fail(err, TED_ERR_WEIGHTS, "%s: tensor '%s' must be one positive finite "
                        "float32 (an activation multiplier)", path, name);
    return TED_OK;
}

/* The tensor `name` (ted's) of `count` floats of shape (count), or (1)
 * when count is 1, at `values`. */
static ted_status describe_vector(ted_st_tensor *st, const char *name, float *values,
                                  int64_t count, ted_error *err)
{
    if (!(st->name = strdup(name)))
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", name);
    *st = (ted_st_tensor){.name = st->name, .dtype = TED_DTYPE_F32, .ndim = 1,
                          .shape = {count}, .data = values,
                          .bytes = sizeof(float) * (size_t)count};
    return TED_OK;
}

/* The int8 weight of `m` as ted's four tensors at `at`: NAME (out, in)
 * int8 as stored, NAME.scale (out) 1 / Marian's multiplier qm_B,
 * NAME.x_mult, and NAME.w_mult qm_B itself, by which Marian's products
 * scale their dots (1 / (qm_A * qm_B): ted_matrix.w_mult). */
static ted_status keep_int8(ted_st_tensor *st, const mapping *m, const ted_marian_tensor *t,
                            float x_mult, float *at, ted_error *err)
{
    int64_t in = m->rows, out = m->cols;
    int8_t *q = (int8_t *)at;
    const int8_t *data = t->st.data;
    for (int64_t o = 0; o < out; o++)
        for (int64_t i = 0; i < in; i++)
            q[o * in + i] = data[t->transposed ? o * in + i : i * out + o];
    float *scale = at + ((size_t)(in * out) + 3) / 4;
    for (int64_t o = 0; o < out; o++)
        scale[o] = 1.0f / t->quant_mult;
    scale[out] = x_mult;
    scale[out + 1] = t->quant_mult;
    char name[160];
    if (!(st[0].name = strdup(m->ted)))
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", m->ted);
    st[0] = (ted_st_tensor){.name = st[0].name, .dtype = TED_DTYPE_I8, .ndim = 2,
                            .shape = {out, in}, .data = q, .bytes = (size_t)(in * out)};
    snprintf(name, sizeof name, "%s.scale", m->ted);
    ted_status s = describe_vector(&st[1], name, scale, out, err);
    snprintf(name, sizeof name, "%s.x_mult", m->ted);
    if (!s)
        s = describe_vector(&st[2], name, scale + out, 1, err);
    snprintf(name, sizeof name, "%s.w_mult", m->ted);
    return s ? s : describe_vector(&st[3], name, scale + out + 1, 1, err);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ted_st_tensor *)a)->name, ((const ted_st_tensor *)b)->name);
}

/* Finds and checks the tensor of every mapping into found[], and counts
 * the floats they take. */
static ted_status find_all(const ted_marian_file *file, const plan *p, const char *path,
                          const ted_marian_tensor **found, size_t *total, ted_error *err)
{
    *total = 0;
    for (int i = 0; i < p->count; i++) {
        const mapping *m = &p->items[i];
        if (!(found[i] = ted_marian_find(file, m->marian)))
            return ted_fail(err, TED_ERR_WEIGHTS, "%s: missing tensor '%s', which model.yml "
                            "needs", path, m->marian);
        ted_status s = check_tensor(found[i], m, path, err);
        if (s)
            return s;
        *total += floats_of(m, found[i]);
    }
    return TED_OK;
}

/* The tensors of mapping `m` (one, or four when kept int8) from index n. */
static ted_status fill_one(const ted_marian_file *file, const mapping *m,
                           const ted_marian_tensor *t, const char *path, float *at,
                           ted_marian_weights *weights, ted_error *err)
{
    ted_st_tensor *st = &weights->tensors.tensors[weights->tensors.count];
    if (!kept_int8(m, t)) {
        ted_status s = describe(st, m, at, err);
        if (s)
            return s;
        weights->tensors.count++;
        copy_values(t, m, at);
        return TED_OK;
    }
    float x_mult;
    ted_status s = x_mult_of(file, t, path, &x_mult, err);
    if (!s)
        s = keep_int8(st, m, t, x_mult, at, err);
    for (int k = 0; k < 4 && st[k].name; k++)
        weights->tensors.count++;
    return s;
}

static ted_status fill(const ted_marian_file *file, const plan *p, const char *path,
                       ted_marian_weights *weights, ted_error *err)
{
    size_t total;
    const ted_marian_tensor **found = calloc((size_t)(p->count > 0 ? p->count : 1),
                                             sizeof *found);
    if (!found)
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", path);
    ted_status s = find_all(file, p, path, found, &total, err);
    if (!s) {
        weights->values = malloc(total * sizeof(float) + 1);
        weights->tensors.tensors = calloc((size_t)(4 * p->count + 1), sizeof(ted_st_tensor));
        if (!weights->values || !weights->tensors.tensors)
            s = ted_fail(err, TED_ERR_NOMEM, "%s: out of memory for %zu floats", path, total);
    }
    float *at = weights->values;
    for (int i = 0; !s && i < p->count; i++) {
        s = fill_one(file, &p->items[i], found[i], path, at, weights, err);
        at += floats_of(&p->items[i], found[i]);
    }
    free(found);
    if (!s)
        qsort(weights->tensors.tensors, (size_t)weights->tensors.count, sizeof(ted_st_tensor),
              by_name);
    return s;
}

ted_status ted_marian_tensors(const ted_marian_file *file, const ted_config *c,
                              const char *path, ted_marian_weights *weights, ted_error *err)
{
    plan p = {NULL, 0};
    make_plan(&p, c);
    p.items = calloc((size_t)(p.count > 0 ? p.count : 1), sizeof *p.items);
    if (!p.items)
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", path);
    make_plan(&p, c);
    ted_status s = fill(file, &p, path, weights, err);
    free(p.items);
    const ted_marian_tensor *w = ted_marian_find(file, "encoder_l1_self_Wq");
    bool alphas = ted_marian_find(file, "encoder_l1_self_Wq_QuantMultA") != NULL;
    snprintf(weights->model_type, sizeof weights->model_type, "%s, %s",
             file->container == TED_MARIAN_NPZ ? "npz" : "bin",
             !w || w->st.dtype == TED_DTYPE_F32 ? "float32"
             : alphas                           ? "intgemm8, alphas"
                                                : "intgemm8");
    if (s) {
        ted_safetensors_close(&weights->tensors);
        free(weights->values);
        weights->values = NULL;
    }
    return s;
}
