/* A decoding session: encode a batch once, then step() one token at a time. */
#include "model/session.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

/* ---- buffers -------------------------------------------------------------
 * All of a session's buffers live in one allocation, laid out by the same
 * function that sizes it: a first pass with no base sums the sizes, the
 * second hands out pointers. The layout depends on (batch, source_len,
 * max_steps) and on whether attention weights are kept. */

typedef struct arena {
    char *base;   /* NULL while sizing */
    size_t used;  /* SIZE_MAX once a size overflowed */
} arena;

static void *take(arena *a, size_t count, size_t item_size)
{
    size_t bytes = ted_mul_size(count, item_size);
    size_t aligned = bytes > SIZE_MAX - 64 ? SIZE_MAX : (bytes + 63) & ~(size_t)63;
    size_t offset = a->used;
    a->used = (offset == SIZE_MAX || aligned > SIZE_MAX - offset) ? SIZE_MAX : offset + aligned;
    return a->base && a->used != SIZE_MAX ? a->base + offset : NULL;
}

static size_t product(size_t a, size_t b, size_t c)
{
    return ted_mul_size(ted_mul_size(a, b), c);
}

static void take_activations(arena *a, ted_activations *act, size_t rows, const ted_config *c,
                             size_t scores)
{
    size_t d = c->d_model;
    act->x = take(a, product(rows, d, 1), sizeof(float));
    act->normed = take(a, product(rows, d, 1), sizeof(float));
    act->qkv = take(a, product(rows, d, 3), sizeof(float));
    act->merged = take(a, product(rows, d, 1), sizeof(float));
    act->sublayer = take(a, product(rows, d, 1), sizeof(float));
    act->hidden = take(a, ted_mul_size(rows, c->d_ff), sizeof(float));
    act->scores = take(a, scores, sizeof(float));
}

static size_t max3(size_t a, size_t b, size_t c)
{
    size_t m = a > b ? a : b;
    return m > c ? m : c;
}

static void layout(ted_session *s, arena *a, int batch, int source_len, int max_steps)
{
    const ted_config *c = &s->model->config;
    size_t B = batch, S = source_len, T = max_steps, d = c->d_model, h = c->heads;
    size_t rows = ted_mul_size(B, S);

    s->source_lengths = take(a, B, sizeof(int));
    s->step_key_counts = take(a, B, sizeof(int));
    s->source_ids = take(a, rows, sizeof(int));

    take_activations(a, &s->encoder, rows, c, product(B, h, S));
    s->encoder_k = take(a, product(rows, d, 1), sizeof(float));
    s->encoder_v = take(a, product(rows, d, 1), sizeof(float));

    take_activations(a, &s->decoder, B, c, product(B, h, T > S ? T : S));
    for (int l = 0; l < c->decoder_layers; l++) {
        s->self_k[l] = take(a, product(B, T, d), sizeof(float));
        s->self_v[l] = take(a, product(B, T, d), sizeof(float));
        s->cross_k[l] = take(a, product(rows, d, 1), sizeof(float));
        s->cross_v[l] = take(a, product(rows, d, 1), sizeof(float));
    }
    s->logits = take(a, ted_mul_size(B, c->tgt_vocab_size), sizeof(float));

    size_t widest_row = max3(T * d, S * d, S);
    if (s->keep_attention) {
        s->encoder_attention = take(a, product(c->encoder_layers, B * h, S * S), sizeof(float));
        s->self_attention = take(a, product(c->decoder_layers, B * h, T), sizeof(float));
        s->cross_attention = take(a, product(c->decoder_layers, B * h, S), sizeof(float));
        widest_row = max3(widest_row, h * S * S, h * T);
    } else {
        s->encoder_attention = s->self_attention = s->cross_attention = NULL;
    }
    s->gather_size = ted_mul_size(B, widest_row);
    s->gather = take(a, s->gather_size, sizeof(float));
}

typedef struct session_buffers {
    char *base;
    int batch, source_len, max_steps;
    bool keep_attention;
} session_buffers;

/* ---- the session -------------------------------------------------------- */

typedef struct session_private {
    struct ted_session public;
    session_buffers buffers;
} session_private;

ted_status ted_session_new(const ted_model *model, ted_session **session, ted_error *err)
{
    if (!model || !session)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_session_new: NULL argument");
    *session = NULL;
    session_private *p = ted_alloc(1, sizeof *p, "session", err);
    if (!p)
        return TED_ERR_NOMEM;
    ted_session *s = &p->public;
    s->model = model;
    int layers = model->config.decoder_layers;
    s->self_k = ted_alloc(layers, sizeof(float *), "session caches", err);
    s->self_v = ted_alloc(layers, sizeof(float *), "session caches", err);
    s->cross_k = ted_alloc(layers, sizeof(float *), "session caches", err);
    s->cross_v = ted_alloc(layers, sizeof(float *), "session caches", err);
    if (!s->self_k || !s->self_v || !s->cross_k || !s->cross_v) {
        ted_session_free(s);
        return TED_ERR_NOMEM;
    }
    *session = s;
    return TED_OK;
}

void ted_session_free(ted_session *s)
{
    if (!s)
        return;
    session_private *p = (session_private *)s;
    free(p->buffers.base);
    free(s->self_k);
    free(s->self_v);
    free(s->cross_k);
    free(s->cross_v);
    free(p);
}

void ted_session_keep_attention(ted_session *s, bool keep)
{
    s->attention_requested = keep;
}

/* Makes the buffers fit (batch, source_len, max_steps), growing each
 * capacity to at least what was asked before, so a session that decodes
 * many batches allocates a few times, not once per batch. */
static ted_status reserve(ted_session *s, int batch, int source_len, int max_steps,
                          ted_error *err)
{
    session_buffers *b = &((session_private *)s)->buffers;
    bool fits = b->base && batch <= b->batch && source_len <= b->source_len &&
                max_steps <= b->max_steps && (b->keep_attention || !s->keep_attention);
    if (!fits) {
        if (batch < b->batch)
            batch = b->batch;
        if (source_len < b->source_len)
            source_len = b->source_len;
        if (max_steps < b->max_steps)
            max_steps = b->max_steps;
        arena sizing = {0};
        layout(s, &sizing, batch, source_len, max_steps);
        if (sizing.used == SIZE_MAX)
            return ted_fail(err, TED_ERR_NOMEM,
                            "session buffers for batch %d, source length %d, %d steps "
                            "overflow the address space",
                            batch, source_len, max_steps);
        free(b->base);
        b->base = malloc(sizing.used);
        if (!b->base) {
            *b = (session_buffers){0};
            return ted_fail(err, TED_ERR_NOMEM,
                            "cannot allocate %zu MiB of session buffers for batch %d, source "
                            "length %d, %d steps",
                            sizing.used >> 20, batch, source_len, max_steps);
        }
        b->batch = batch;
        b->source_len = source_len;
        b->max_steps = max_steps;
        b->keep_attention = s->keep_attention;
    }
    /* Lay the buffers out for this decode's own sizes inside the capacity:
     * strides follow (source_len, max_steps) of this batch. */
    arena used = {.base = b->base};
    layout(s, &used, b->batch, source_len, max_steps);
    return TED_OK;
}

static ted_status check_sources(const ted_config *c, const int *const *source_ids,
                                const int *lengths, int batch, ted_error *err)
{
    for (int b = 0; b < batch; b++) {
        if (lengths[b] < 1)
            return ted_fail(err, TED_ERR_INPUT, "source %d is empty", b);
        if (lengths[b] > c->max_positions)
            return ted_fail(err, TED_ERR_INPUT,
                            "source %d has %d tokens; the model's max_positions is %d", b,
                            lengths[b], c->max_positions);
        for (int t = 0; t < lengths[b]; t++)
            if (source_ids[b][t] < 0 || source_ids[b][t] >= c->src_vocab_size)
                return ted_fail(err, TED_ERR_INPUT,
                                "source %d, token %d: id %d is outside the source "
                                "vocabulary (0..%d)",
                                b, t, source_ids[b][t], c->src_vocab_size - 1);
    }
    return TED_OK;
}

ted_status ted_session_encode(ted_session *s, const int *const *source_ids,
                              const int *source_lengths, int batch, int max_steps,
                              ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (batch < 1 || !source_ids || !source_lengths)
        return ted_fail(err, TED_ERR_ARGUMENT, "encode: empty batch");
    if (max_steps < 1 || max_steps > c->max_positions)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "encode: max_steps %d is outside 1..%d (max_positions)", max_steps,
                        c->max_positions);
    ted_status status = check_sources(c, source_ids, source_lengths, batch, err);
    if (status)
        return status;

    s->keep_attention = s->attention_requested;
    int source_len = 0;
    for (int b = 0; b < batch; b++)
        if (source_lengths[b] > source_len)
            source_len = source_lengths[b];
    if ((status = reserve(s, batch, source_len, max_steps, err)))
        return status;

    s->batch = batch;
    s->source_len = source_len;
    s->max_steps = max_steps;
    s->position = 0;
    for (int b = 0; b < batch; b++) {
        s->source_lengths[b] = source_lengths[b];
        int *row = s->source_ids + (size_t)b * source_len;
        memcpy(row, source_ids[b], sizeof(int) * source_lengths[b]);
        for (int t = source_lengths[b]; t < source_len; t++)
            row[t] = c->pad_id;
    }
    ted_encoder_forward(s);
    ted_decoder_attend_source(s);
    return TED_OK;
}

ted_status ted_session_step(ted_session *s, const int *tokens, const float **logits,
                            ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "step: no source encoded");
    if (s->position >= s->max_steps)
        return ted_fail(err, TED_ERR_ARGUMENT, "step: all %d steps of this decode are used",
                        s->max_steps);
    for (int b = 0; b < s->batch; b++)
        if (tokens[b] < 0 || tokens[b] >= c->tgt_vocab_size)
            return ted_fail(err, TED_ERR_INPUT,
                            "step: token id %d of row %d is outside the target vocabulary "
                            "(0..%d)",
                            tokens[b], b, c->tgt_vocab_size - 1);
    ted_decoder_step(s, tokens);
    s->position++;
    if (logits)
        *logits = s->logits;
    return TED_OK;
}

/* rows of `row_size` items of `item` bytes: out[i] = in[rows[i]], in place. */
static void gather_rows(void *data, size_t row_size, size_t item, const int *rows, int count,
                        void *scratch)
{
    size_t row_bytes = row_size * item;
    for (int i = 0; i < count; i++)
        memcpy((char *)scratch + i * row_bytes, (char *)data + rows[i] * row_bytes, row_bytes);
    memcpy(data, scratch, count * row_bytes);
}

/* (layers, batch, row_size) -> (layers, count, row_size), each layer's
 * rows gathered. A layer's new block never overlaps an old block still to
 * be read: front to back when the batch shrinks, back to front when it grows. */
static void gather_layers(float *data, int layers, int batch, size_t row_size, const int *rows,
                          int count, float *scratch)
{
    size_t row_bytes = row_size * sizeof(float);
    for (int i = 0; i < layers; i++) {
        int l = count <= batch ? i : layers - 1 - i;
        const float *old_block = data + (size_t)l * batch * row_size;
        for (int r = 0; r < count; r++)
            memcpy(scratch + r * row_size, old_block + rows[r] * row_size, row_bytes);
        memcpy(data + (size_t)l * count * row_size, scratch, count * row_bytes);
    }
}

/* The pointers of everything select() carries over, saved before layout()
 * points the session at a new arena. */
typedef struct kept_buffers {
    int *source_lengths, *source_ids;
    float **layer_caches;  /* (4, decoder_layers): self_k, self_v, cross_k, cross_v */
    float *encoder_attention, *self_attention, *cross_attention;
} kept_buffers;

static void copy_rows(void *to, const void *from, size_t row_size, size_t item, const int *rows,
                      int count)
{
    size_t row_bytes = row_size * item;
    for (int i = 0; i < count; i++)
        memcpy((char *)to + i * row_bytes, (const char *)from + rows[i] * row_bytes, row_bytes);
}

/* (layers, batch, row_size) -> (layers, count, row_size) in another buffer. */
static void copy_layer_rows(float *to, const float *from, int layers, int batch,
                            size_t row_size, const int *rows, int count)
{
    for (int l = 0; l < layers; l++)
        copy_rows(to + (size_t)l * count * row_size, from + (size_t)l * batch * row_size,
                  row_size, sizeof(float), rows, count);
}

/* select() to more rows than the buffers hold: lays the session out in a
 * new arena sized for `count` rows (the source length and step capacities
 * unchanged), copies the selected rows of the source and of every cache
 * (and of the kept attention weights) straight from the old arena, then
 * frees it. The encoder's activations and the decoder's scratch are not
 * carried over: the first are done with, the second are rewritten by the
 * next step. */
static ted_status grow_and_select(ted_session *s, const int *rows, int count, ted_error *err)
{
    const ted_config *c = &s->model->config;
    session_buffers *b = &((session_private *)s)->buffers;
    int layers = c->decoder_layers;
    kept_buffers old = {s->source_lengths, s->source_ids, NULL, s->encoder_attention,
                        s->self_attention, s->cross_attention};
    old.layer_caches = ted_alloc(4 * (size_t)layers, sizeof(float *), "session caches", err);
    if (!old.layer_caches)
        return TED_ERR_NOMEM;
    for (int l = 0; l < layers; l++) {
        old.layer_caches[l] = s->self_k[l];
        old.layer_caches[layers + l] = s->self_v[l];
        old.layer_caches[2 * layers + l] = s->cross_k[l];
        old.layer_caches[3 * layers + l] = s->cross_v[l];
    }
    arena sizing = {0};
    layout(s, &sizing, count, b->source_len, b->max_steps);
    char *base = sizing.used == SIZE_MAX ? NULL : malloc(sizing.used);
    if (!base) {
        /* point the session back at the old arena, which is still whole */
        arena back = {.base = b->base};
        layout(s, &back, b->batch, s->source_len, s->max_steps);
        free(old.layer_caches);
        return ted_fail(err, TED_ERR_NOMEM,
                        "select: cannot allocate session buffers for %d rows (source length "
                        "%d, %d steps)",
                        count, b->source_len, b->max_steps);
    }
    arena used = {.base = base};
    layout(s, &used, count, s->source_len, s->max_steps);

    size_t S = s->source_len, T = s->max_steps, d = c->d_model, h = c->heads;
    copy_rows(s->source_lengths, old.source_lengths, 1, sizeof(int), rows, count);
    copy_rows(s->source_ids, old.source_ids, S, sizeof(int), rows, count);
    for (int l = 0; l < layers; l++) {
        copy_rows(s->self_k[l], old.layer_caches[l], T * d, sizeof(float), rows, count);
        copy_rows(s->self_v[l], old.layer_caches[layers + l], T * d, sizeof(float), rows, count);
        copy_rows(s->cross_k[l], old.layer_caches[2 * layers + l], S * d, sizeof(float), rows,
                  count);
        copy_rows(s->cross_v[l], old.layer_caches[3 * layers + l], S * d, sizeof(float), rows,
                  count);
    }
    if (s->keep_attention) {
        copy_layer_rows(s->encoder_attention, old.encoder_attention, c->encoder_layers, s->batch,
                        h * S * S, rows, count);
        copy_layer_rows(s->self_attention, old.self_attention, layers, s->batch, h * T, rows,
                        count);
        copy_layer_rows(s->cross_attention, old.cross_attention, layers, s->batch, h * S, rows,
                        count);
    }
    free(old.layer_caches);
    free(b->base);
    b->base = base;
    b->batch = count;
    b->keep_attention = s->keep_attention;
    s->batch = count;
    return TED_OK;
}

ted_status ted_session_select(ted_session *s, const int *rows, int count, ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "select: no source encoded");
    if (count < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "select: %d rows; at least 1 is needed", count);
    for (int i = 0; i < count; i++)
        if (rows[i] < 0 || rows[i] >= s->batch)
            return ted_fail(err, TED_ERR_ARGUMENT, "select: row %d is outside 0..%d", rows[i],
                            s->batch - 1);
    if (count > ((session_private *)s)->buffers.batch)
        return grow_and_select(s, rows, count, err);
    size_t S = s->source_len, T = s->max_steps, d = c->d_model, h = c->heads;
    gather_rows(s->source_lengths, 1, sizeof(int), rows, count, s->gather);
    gather_rows(s->source_ids, S, sizeof(int), rows, count, s->gather);
    for (int l = 0; l < c->decoder_layers; l++) {
        gather_rows(s->self_k[l], T * d, sizeof(float), rows, count, s->gather);
        gather_rows(s->self_v[l], T * d, sizeof(float), rows, count, s->gather);
        gather_rows(s->cross_k[l], S * d, sizeof(float), rows, count, s->gather);
        gather_rows(s->cross_v[l], S * d, sizeof(float), rows, count, s->gather);
    }
    if (s->keep_attention) {
        gather_layers(s->encoder_attention, c->encoder_layers, s->batch, h * S * S, rows, count,
                      s->gather);
        gather_layers(s->self_attention, c->decoder_layers, s->batch, h * T, rows, count,
                      s->gather);
        gather_layers(s->cross_attention, c->decoder_layers, s->batch, h * S, rows, count,
                      s->gather);
    }
    s->batch = count;
    return TED_OK;
}

int ted_session_batch(const ted_session *s)
{
    return s->batch;
}

int ted_session_position(const ted_session *s)
{
    return s->position;
}

int ted_session_source_length(const ted_session *s, int row)
{
    return row >= 0 && row < s->batch ? s->source_lengths[row] : 0;
}

ted_status ted_session_attention(const ted_session *s, ted_attention_kind kind, int layer,
                                 int row, ted_attention_view *view, ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (!s->keep_attention || s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "attention: not kept (call ted_session_keep_attention before encode)");
    int layers = kind == TED_ENCODER_SELF_ATTENTION ? c->encoder_layers : c->decoder_layers;
    if (layer < 0 || layer >= layers || row < 0 || row >= s->batch)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: layer %d, row %d out of range",
                        layer, row);
    if (kind != TED_ENCODER_SELF_ATTENTION && s->position == 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: no decoder step yet");
    size_t block = (size_t)layer * s->batch + row;
    int S = s->source_len, h = c->heads;
    switch (kind) {
    case TED_ENCODER_SELF_ATTENTION:
        *view = (ted_attention_view){s->encoder_attention + block * h * S * S, h, S, S, S};
        break;
    case TED_DECODER_SELF_ATTENTION:
        *view = (ted_attention_view){s->self_attention + block * h * s->max_steps, h, 1,
                                     s->position, s->max_steps};
        break;
    case TED_CROSS_ATTENTION:
        *view = (ted_attention_view){s->cross_attention + block * h * S, h, 1, S, S};
        break;
    }
    return TED_OK;
}
