/* Loading a model directory: config.yaml -> weights (mapped, every tensor
 * checked by name, dtype and shape) -> vocabularies -> positional table. */
#include "model/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/config.h"
#include "layers/positional_encoding.h"

/* ---- binding tensors to weight pointers -------------------------------- */

typedef struct weight_binder {
    ted_model *model;
    const char *path;      /* the weights file, for messages */
    unsigned char *used;   /* (file.count): which tensors the config uses */
    ted_error *err;
} weight_binder;

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

/* Points *field at tensor NAME, which must have shape (rows) when cols is 0,
 * else (rows, cols). */
static ted_status bind(weight_binder *b, const float **field, int64_t rows, int64_t cols,
                       const char *name_format, ...)
    __attribute__((format(printf, 5, 6)));

static ted_status bind(weight_binder *b, const float **field, int64_t rows, int64_t cols,
                       const char *name_format, ...)
{
    char name[256];
    va_list args;
    va_start(args, name_format);
    vsnprintf(name, sizeof name, name_format, args);
    va_end(args);

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
    /* Vectors (biases, LayerNorms) are a sliver of the file: checked here.
     * Matrices are checked by ted_model_check_weights (ted info --check). */
    ted_status s = cols ? TED_OK : ted_safetensors_check_finite(t, b->path, b->err);
    return s ? s : to_f32(b, t, (size_t)rows * (size_t)(cols ? cols : 1), field);
}

static ted_status bind_norm(weight_binder *b, ted_layer_norm_weights *w, int d,
                            const char *prefix)
{
    ted_status s = bind(b, &w->weight, d, 0, "%s.weight", prefix);
    return s ? s : bind(b, &w->bias, d, 0, "%s.bias", prefix);
}

/* PyTorch's packed in_proj_weight (3 * d, d) and in_proj_bias (3 * d): W^Q,
 * W^K and W^V are its thirds. */
static ted_status bind_attention(weight_binder *b, ted_attention_weights *w, int d,
                                 const char *prefix)
{
    const float *in_proj_weight, *in_proj_bias;
    ted_status s;
    if ((s = bind(b, &in_proj_weight, 3 * d, d, "%s.in_proj_weight", prefix)) ||
        (s = bind(b, &in_proj_bias, 3 * d, 0, "%s.in_proj_bias", prefix)) ||
        (s = bind(b, &w->out_weight, d, d, "%s.out_proj.weight", prefix)) ||
        (s = bind(b, &w->out_bias, d, 0, "%s.out_proj.bias", prefix)))
        return s;
    size_t matrix = (size_t)d * d;
    w->q_weight = in_proj_weight, w->q_bias = in_proj_bias;
    w->k_weight = in_proj_weight + matrix, w->k_bias = in_proj_bias + d;
    w->v_weight = in_proj_weight + 2 * matrix, w->v_bias = in_proj_bias + 2 * d;
    return TED_OK;
}

static ted_status bind_feed_forward(weight_binder *b, ted_feed_forward_weights *w, int d,
                                    int d_ff, const char *prefix)
{
    ted_status s;
    if ((s = bind(b, &w->linear1_weight, d_ff, d, "%s.linear1.weight", prefix)) ||
        (s = bind(b, &w->linear1_bias, d_ff, 0, "%s.linear1.bias", prefix)) ||
        (s = bind(b, &w->linear2_weight, d, d_ff, "%s.linear2.weight", prefix)))
        return s;
    return bind(b, &w->linear2_bias, d, 0, "%s.linear2.bias", prefix);
}

static ted_status bind_encoder_layer(weight_binder *b, ted_encoder_layer *w,
                                     const ted_config *c, int layer)
{
    char p[96];
    ted_status s;
    snprintf(p, sizeof p, "transformer.encoder.layers.%d.self_attn", layer);
    if ((s = bind_attention(b, &w->self_attention, c->d_model, p)))
        return s;
    snprintf(p, sizeof p, "transformer.encoder.layers.%d", layer);
    if ((s = bind_feed_forward(b, &w->feed_forward, c->d_model, c->d_ff, p)))
        return s;
    snprintf(p, sizeof p, "transformer.encoder.layers.%d.norm1", layer);
    if ((s = bind_norm(b, &w->norm1, c->d_model, p)))
        return s;
    snprintf(p, sizeof p, "transformer.encoder.layers.%d.norm2", layer);
    return bind_norm(b, &w->norm2, c->d_model, p);
}

static ted_status bind_decoder_layer(weight_binder *b, ted_decoder_layer *w,
                                     const ted_config *c, int layer)
{
    char p[96];
    ted_status s;
    snprintf(p, sizeof p, "transformer.decoder.layers.%d.self_attn", layer);
    if ((s = bind_attention(b, &w->self_attention, c->d_model, p)))
        return s;
    snprintf(p, sizeof p, "transformer.decoder.layers.%d.multihead_attn", layer);
    if ((s = bind_attention(b, &w->cross_attention, c->d_model, p)))
        return s;
    snprintf(p, sizeof p, "transformer.decoder.layers.%d", layer);
    if ((s = bind_feed_forward(b, &w->feed_forward, c->d_model, c->d_ff, p)))
        return s;
    ted_layer_norm_weights *norms[3] = {&w->norm1, &w->norm2, &w->norm3};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "transformer.decoder.layers.%d.norm%d", layer, i + 1);
        if ((s = bind_norm(b, norms[i], c->d_model, p)))
            return s;
    }
    return TED_OK;
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

static ted_status bind_weights(weight_binder *b)
{
    ted_model *m = b->model;
    const ted_config *c = &m->config;
    ted_weights *w = &m->weights;
    int d = c->d_model;
    ted_status s;
    if ((s = bind(b, &w->src_embedding, c->src_vocab_size, d, "src_tok_emb.embedding.weight")) ||
        (s = bind(b, &w->tgt_embedding, c->tgt_vocab_size, d, "tgt_tok_emb.embedding.weight")))
        return s;
    w->encoder = ted_alloc(c->encoder_layers, sizeof *w->encoder, "encoder layers", b->err);
    w->decoder = ted_alloc(c->decoder_layers, sizeof *w->decoder, "decoder layers", b->err);
    if (!w->encoder || !w->decoder)
        return TED_ERR_NOMEM;
    for (int i = 0; i < c->encoder_layers; i++)
        if ((s = bind_encoder_layer(b, &w->encoder[i], c, i)))
            return s;
    for (int i = 0; i < c->decoder_layers; i++)
        if ((s = bind_decoder_layer(b, &w->decoder[i], c, i)))
            return s;
    if (c->encoder_final_norm && (s = bind_norm(b, &w->encoder_norm, d, "transformer.encoder.norm")))
        return s;
    if (c->decoder_final_norm && (s = bind_norm(b, &w->decoder_norm, d, "transformer.decoder.norm")))
        return s;
    if ((s = bind(b, &w->generator.weight, c->tgt_vocab_size, d, "generator.weight")) ||
        (s = bind(b, &w->generator.bias, c->tgt_vocab_size, 0, "generator.bias")))
        return s;
    return check_all_used(b);
}

/* ---- the model directory ------------------------------------------------ */

static ted_status join_path(char *out, size_t size, const char *dir, const char *file,
                            ted_error *err)
{
    int n = snprintf(out, size, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= size)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s/%s: path too long", dir, file);
    return TED_OK;
}

static ted_status load_weights(ted_model *m, const char *dir, ted_error *err)
{
    char path[4096];
    ted_status s = join_path(path, sizeof path, dir, m->config.weights, err);
    if (s || (s = ted_safetensors_open(path, &m->file, err)))
        return s;
    weight_binder b = {.model = m, .path = path, .err = err};
    b.used = ted_alloc(m->file.count, 1, "tensor flags", err);
    if (!b.used)
        return TED_ERR_NOMEM;
    s = bind_weights(&b);
    free(b.used);
    return s;
}

static ted_status load_vocab(ted_vocab *vocab, const char *dir, const char *file,
                             int expected_size, const char *side, const ted_config *config,
                             ted_error *err)
{
    char path[4096];
    ted_status s = join_path(path, sizeof path, dir, file, err);
    if (s || (s = ted_vocab_load(path, vocab, err)))
        return s;
    if (vocab->size != expected_size)
        return ted_fail(err, TED_ERR_VOCAB,
                        "%s: %d tokens, but the model's %s vocabulary has %d (%s_vocab_size)",
                        path, vocab->size, side, expected_size, side);
    return ted_vocab_check_specials(vocab, config, path, err);
}

static ted_status build_positional_encoding(ted_model *m, ted_error *err)
{
    const ted_config *c = &m->config;
    size_t count = ted_mul_size((size_t)c->max_positions, (size_t)c->d_model);
    m->positional_encoding = ted_alloc_floats(count, "positional encoding table", err);
    if (!m->positional_encoding)
        return TED_ERR_NOMEM;
    ted_positional_encoding_table(m->positional_encoding, c->max_positions, c->d_model,
                                  c->positional_layout);
    return TED_OK;
}

ted_status ted_model_load(const char *model_dir, ted_model **model, ted_error *err)
{
    if (!model_dir || !model)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_model_load: NULL argument");
    *model = NULL;
    ted_model *m = ted_alloc(1, sizeof *m, "model", err);
    if (!m)
        return TED_ERR_NOMEM;
    char path[4096];
    ted_status s = join_path(path, sizeof path, model_dir, "config.yaml", err);
    if (!s)
        s = ted_config_load(path, &m->config, err);
    if (!s)
        s = load_weights(m, model_dir, err);
    if (!s)
        s = load_vocab(&m->src_vocab, model_dir, m->config.src_vocab, m->config.src_vocab_size,
                       "src", &m->config, err);
    if (!s)
        s = load_vocab(&m->tgt_vocab, model_dir, m->config.tgt_vocab, m->config.tgt_vocab_size,
                       "tgt", &m->config, err);
    if (!s)
        s = build_positional_encoding(m, err);
    if (s) {
        ted_model_free(m);
        return s;
    }
    m->embedding_scale = m->config.scale_embedding ? sqrtf((float)m->config.d_model) : 1.0f;
    *model = m;
    return TED_OK;
}

void ted_model_free(ted_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->converted_count; i++)
        free(m->converted[i]);
    free(m->converted);
    free(m->weights.encoder);
    free(m->weights.decoder);
    free(m->positional_encoding);
    ted_safetensors_close(&m->file);
    ted_vocab_free(&m->src_vocab);
    ted_vocab_free(&m->tgt_vocab);
    free(m);
}

const ted_config *ted_model_config(const ted_model *m)
{
    return &m->config;
}

ted_status ted_model_check_weights(const ted_model *m, ted_error *err)
{
    if (!m)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_model_check_weights: NULL model");
    for (int i = 0; i < m->file.count; i++) {
        ted_status s = ted_safetensors_check_finite(&m->file.tensors[i], m->config.weights, err);
        if (s)
            return s;
    }
    return TED_OK;
}

int ted_model_tensor_count(const ted_model *m)
{
    return m->file.count;
}

ted_tensor_info ted_model_tensor(const ted_model *m, int index)
{
    ted_tensor_info info = {0};
    if (index < 0 || index >= m->file.count)
        return info;
    const ted_st_tensor *t = &m->file.tensors[index];
    info.name = t->name;
    info.dtype = ted_dtype_name(t->dtype);
    info.ndim = t->ndim;
    for (int i = 0; i < t->ndim && i < 4; i++)
        info.shape[i] = t->shape[i];
    info.bytes = t->bytes;
    return info;
}
