/* Marian's tensors under ted's names (io/marian_tensors.h). Marian names
 * a Linear's weight W (in, out) and its bias b (1, out); ted's tensor_names
 * marian wants (out, in) and (out). */
#include "io/marian_tensors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

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

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ted_st_tensor *)a)->name, ((const ted_st_tensor *)b)->name);
}

static ted_status fill(const ted_marian_file *file, const plan *p, const char *path,
                   ted_marian_weights *weights, ted_error *err)
{
    size_t total = 0;
    for (int i = 0; i < p->count; i++)
        total += (size_t)p->items[i].rows * (size_t)(p->items[i].cols ? p->items[i].cols : 1);
    weights->values = malloc(total * sizeof(float) + 1);
    weights->tensors.tensors = calloc((size_t)(p->count > 0 ? p->count : 1), sizeof(ted_st_tensor));
    if (!weights->values || !weights->tensors.tensors)
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory for %zu floats", path, total);
    float *at = weights->values;
    for (int i = 0; i < p->count; i++) {
        const mapping *m = &p->items[i];
        const ted_marian_tensor *t = ted_marian_find(file, m->marian);
        if (!t)
            return ted_fail(err, TED_ERR_WEIGHTS, "%s: missing tensor '%s', which model.yml "
                            "needs", path, m->marian);
        ted_status s = check_tensor(t, m, path, err);
        if (!s)
            s = describe(&weights->tensors.tensors[i], m, at, err);
        if (s)
            return s;
        weights->tensors.count = i + 1;
        copy_values(t, m, at);
        at += (size_t)m->rows * (size_t)(m->cols ? m->cols : 1);
    }
    qsort(weights->tensors.tensors, (size_t)p->count, sizeof(ted_st_tensor), by_name);
    return TED_OK;
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
    snprintf(weights->model_type, sizeof weights->model_type, "%s, %s",
             file->container == TED_MARIAN_NPZ ? "npz" : "bin",
             !w || w->st.dtype == TED_DTYPE_F32 ? "float32" : "intgemm8, dequantized");
    if (s) {
        ted_safetensors_close(&weights->tensors);
        free(weights->values);
        weights->values = NULL;
    }
    return s;
}
