/* A decoding session: encode a batch once, then step() one token at a time. */
#include "model/session.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "layers/positional_encoding.h"
#include "model/session_hooks.h"

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
    act->sublayer = take(a, product(rows, d, 1), sizeof(float));
    act->hidden = take(a, ted_mul_size(rows, c->d_ff), sizeof(float));
    act->attention.projected = take(a, product(rows, d, 3), sizeof(float));
    act->attention.queries = take(a, product(rows, d, 1), sizeof(float));
    act->attention.context = take(a, product(rows, d, 1), sizeof(float));
    act->attention.merged = take(a, product(rows, d, 1), sizeof(float));
    act->attention.scores = take(a, scores, sizeof(float));
}

/* K and V of (batch, capacity) positions; the cache's length is left as it
 * is: it belongs to the decode, not to the layout. */
static void take_cache(arena *a, ted_kv_cache *cache, size_t batch, int capacity, size_t d)
{
    cache->k = take(a, product(batch, capacity, d), sizeof(float));
    cache->v = take(a, product(batch, capacity, d), sizeof(float));
    cache->capacity = capacity;
}

static size_t max3(size_t a, size_t b, size_t c)
{
    size_t m = a > b ? a : b;
    return m > c ? m : c;
}

/* Points every buffer of the session into the arena. */
static void layout(ted_session *s, arena *a, int batch, int source_len, int max_steps)
{
    const ted_config *c = &s->model->config;
    size_t B = batch, S = source_len, T = max_steps, d = c->d_model, h = c->heads;
    size_t rows = ted_mul_size(B, S);

    s->source_lengths = take(a, B, sizeof(int));
    s->source_ids = take(a, rows, sizeof(int));
    s->steps = take(a, B, sizeof(int));
    s->positions = take(a, product(S > T ? S : T, d, 1), sizeof(float));

    take_activations(a, &s->encoder, rows, c, product(B, h, S));
    take_cache(a, &s->encoder_cache, B, source_len, d);

    take_activations(a, &s->decoder, B, c, product(B, h, T > S ? T : S));
    for (int l = 0; l < c->decoder_layers; l++) {
        take_cache(a, &s->caches[l].self, B, max_steps, d);
        take_cache(a, &s->caches[l].cross, B, source_len, d);
    }
    s->logits = take(a, ted_mul_size(B, c->tgt_vocab_size), sizeof(float));

    size_t widest_row = max3(T * d, S * d, S);
    s->encoder_attention = s->step_attention.self = s->step_attention.cross = NULL;
    if (s->keep_attention) {
        s->encoder_attention = take(a, product(c->encoder_layers, B * h, S * S), sizeof(float));
        s->step_attention.self = take(a, product(c->decoder_layers, B * h, T), sizeof(float));
        s->step_attention.cross = take(a, product(c->decoder_layers, B * h, S), sizeof(float));
        widest_row = max3(widest_row, h * S * S, h * T);
    }
    s->gather_size = ted_mul_size(B, widest_row);
    s->gather = take(a, s->gather_size, sizeof(float));
}

/* ---- what select() and append() carry over ----------------------------------
 * Every buffer that holds rows of the batch: (layers, batch, blocks,
 * block_bytes), each batch row's blocks following its row through
 * select(). A block is one head's positions, or a row's ids: when append()
 * widens the source or step positions, each block keeps its first ones. */

typedef struct carried {
    void *data;
    int layers;
    int blocks;          /* per batch row: one per head, or 1 */
    size_t block_bytes;
} carried;

static size_t row_bytes(carried buffer)
{
    return buffer.blocks * buffer.block_bytes;
}

static int carried_buffers(const ted_session *s, carried *list)
{
    const ted_config *c = &s->model->config;
    size_t S = s->source_len, T = s->max_steps, h = c->heads, q = c->d_model / c->heads;
    size_t f = sizeof(float);
    int n = 0;
    list[n++] = (carried){s->source_lengths, 1, 1, sizeof(int)};
    list[n++] = (carried){s->steps, 1, 1, sizeof(int)};
    list[n++] = (carried){s->source_ids, 1, 1, S * sizeof(int)};
    for (int l = 0; l < c->decoder_layers; l++) {
        const ted_decoder_cache *cache = &s->caches[l];
        list[n++] = (carried){cache->self.k, 1, (int)h, T * q * f};
        list[n++] = (carried){cache->self.v, 1, (int)h, T * q * f};
        list[n++] = (carried){cache->cross.k, 1, (int)h, S * q * f};
        list[n++] = (carried){cache->cross.v, 1, (int)h, S * q * f};
    }
    if (s->keep_attention) {
        list[n++] = (carried){s->encoder_attention, c->encoder_layers, (int)(h * S), S * f};
        list[n++] = (carried){s->step_attention.self, c->decoder_layers, (int)h, T * f};
        list[n++] = (carried){s->step_attention.cross, c->decoder_layers, (int)h, S * f};
    }
    return n;
}

static int carried_capacity(const ted_config *c)
{
    return 3 + 4 * c->decoder_layers + 3;
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
    carried *old_carried, *new_carried;  /* (carried_capacity) each, for select() */
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
    s->caches = ted_alloc(model->config.decoder_layers, sizeof *s->caches, "session caches", err);
    int buffers = carried_capacity(&model->config);
    p->old_carried = ted_alloc(buffers, sizeof(carried), "session caches", err);
    p->new_carried = ted_alloc(buffers, sizeof(carried), "session caches", err);
    if (!s->caches || !p->old_carried || !p->new_carried) {
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
    free(s->caches);
    free(p->old_carried);
    free(p->new_carried);
    free(p);
}

void ted_session_keep_attention(ted_session *s, bool keep)
{
    s->attention_requested = keep;
}

/* Memory for an arena of at least (rows, source_len, max_steps) and at
 * least the capacities of `*room`, which receives the new ones; NULL (and
 * `err` says why) when it cannot be had. The sizing pass leaves the
 * session's pointers unset: the caller lays an arena out again. */
static char *new_arena(ted_session *s, session_buffers *room, int rows, int source_len,
                       int max_steps, const char *who, ted_error *err)
{
    session_buffers grown = {NULL, rows > room->batch ? rows : room->batch,
                             source_len > room->source_len ? source_len : room->source_len,
                             max_steps > room->max_steps ? max_steps : room->max_steps,
                             s->keep_attention};
    arena sizing = {0};
    layout(s, &sizing, grown.batch, grown.source_len, grown.max_steps);
    /* every buffer starts on a cache line (take() rounds sizes to 64 bytes):
     * a vector load across two lines costs two */
    grown.base = sizing.used == SIZE_MAX ? NULL : aligned_alloc(64, sizing.used);
    if (!grown.base) {
        char size[32] = "more than the address space";
        if (sizing.used != SIZE_MAX)
            snprintf(size, sizeof size, "%zu MiB", sizing.used >> 20);
        ted_fail(err, TED_ERR_NOMEM,
                 "%s: cannot allocate %s of session buffers for batch %d, source length %d, "
                 "%d steps",
                 who, size, grown.batch, grown.source_len, grown.max_steps);
        return NULL;
    }
    *room = grown;
    return grown.base;
}

/* A new arena for an encode: what the old one held is not needed, so it
 * goes first. */
static ted_status grow_buffers(ted_session *s, int batch, int source_len, int max_steps,
                               ted_error *err)
{
    session_buffers *b = &((session_private *)s)->buffers;
    session_buffers room = *b;
    free(b->base);
    *b = (session_buffers){0};
    if (!new_arena(s, &room, batch, source_len, max_steps, "encode", err))
        return TED_ERR_NOMEM;
    *b = room;
    return TED_OK;
}

/* Makes the buffers fit (batch, source_len, max_steps) and lays them out
 * for this decode's own sizes inside the capacity: the strides follow
 * (source_len, max_steps) of this batch, whatever the capacities. */
static ted_status reserve(ted_session *s, int batch, int source_len, int max_steps,
                          ted_error *err)
{
    session_buffers *b = &((session_private *)s)->buffers;
    bool fits = b->base && batch <= b->batch && source_len <= b->source_len &&
                max_steps <= b->max_steps && (b->keep_attention || !s->keep_attention);
    ted_status status = fits ? TED_OK : grow_buffers(s, batch, source_len, max_steps, err);
    if (status)
        return status;
    arena used = {.base = b->base};
    layout(s, &used, b->batch, source_len, max_steps);
    return TED_OK;
}

/* The positional encoding of every position the decode reaches. */
static void fill_positions(ted_session *s)
{
    const ted_config *c = &s->model->config;
    int count = s->source_len > s->max_steps ? s->source_len : s->max_steps;
    ted_positional_encoding_table(s->positions, count, c->d_model, c->positional_layout);
}

static ted_status check_max_steps(const ted_config *c, int max_steps, const char *who,
                                  ted_error *err)
{
    if (max_steps < 1 || max_steps > c->max_positions)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "%s: max_steps %d is outside 1..%d (max_positions)", who, max_steps,
                        c->max_positions);
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

/* The largest of n >= 0 counts (0 when n is 0). */
static int largest(const int *counts, int n)
{
    int most = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > most)
            most = counts[i];
    return most;
}

/* row (width) = ids (length), then pad_id; ids may overlap the row's start. */
static void copy_padded(int *row, const int *ids, int length, int width, int pad_id)
{
    memmove(row, ids, sizeof(int) * length);
    for (int t = length; t < width; t++)
        row[t] = pad_id;
}

ted_status ted_session_encode(ted_session *s, const int *const *source_ids,
                              const int *source_lengths, int batch, int max_steps,
                              ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (batch < 1 || !source_ids || !source_lengths)
        return ted_fail(err, TED_ERR_ARGUMENT, "encode: empty batch");
    ted_status status = check_max_steps(c, max_steps, "encode", err);
    if (!status)
        status = check_sources(c, source_ids, source_lengths, batch, err);
    if (status)
        return status;

    s->keep_attention = s->attention_requested;
    int source_len = largest(source_lengths, batch);
    if ((status = reserve(s, batch, source_len, max_steps, err)))
        return status;

    s->batch = batch;
    s->source_len = source_len;
    s->max_steps = max_steps;
    for (int b = 0; b < batch; b++) {
        s->source_lengths[b] = source_lengths[b];
        s->steps[b] = 0;
        copy_padded(s->source_ids + (size_t)b * source_len, source_ids[b], source_lengths[b],
                    source_len, c->pad_id);
    }
    for (int l = 0; l < c->decoder_layers; l++)
        s->caches[l].self.length = 0;
    fill_positions(s);
    ted_encoder_forward(s->model, s->source_ids, s->source_lengths, batch, source_len,
                        s->positions, &s->encoder, s->encoder_cache, s->encoder_attention);
    ted_decoder_cache_memory(s->model, s->encoder.x, batch, source_len, s->caches,
                             s->encoder.attention.projected);
    return TED_OK;
}

/* Weights that are finite can still overflow in use (a LayerNorm weight of
 * 1e30), and a matrix is not checked for NaN at load: either makes logits
 * NaN or infinite, which no decoding can rank. Such a step is an error, not
 * a translation of <unk>s. The check costs one vector pass over (batch,
 * vocab), against the (batch, vocab, d_model) of the output projection;
 * only a failed one looks for the token to name. */
static ted_status check_logits_finite(const ted_session *s, ted_error *err)
{
    int vocab = s->model->config.tgt_vocab_size;
    if (ted_all_finite(s->logits, (size_t)s->batch * vocab))
        return TED_OK;
    for (int b = 0; b < s->batch; b++) {
        const float *row = s->logits + (size_t)b * vocab;
        for (int v = 0; v < vocab; v++)
            if (!isfinite(row[v]))
                return ted_fail(err, TED_ERR_WEIGHTS,
                                "step %d: the logit of target token %d is %s (row %d): the "
                                "model's numbers overflowed or a weight is not finite (ted info "
                                "--check looks for one)",
                                ted_session_position(s), v, isnan(row[v]) ? "NaN" : "infinite",
                                b);
    }
    return TED_OK;
}

ted_status ted_session_step(ted_session *s, const int *tokens, const float **logits,
                            ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "step: no source encoded");
    if (ted_session_position(s) >= s->max_steps)
        return ted_fail(err, TED_ERR_ARGUMENT, "step: all %d steps of this decode are used",
                        s->max_steps);
    for (int b = 0; b < s->batch; b++)
        if (tokens[b] < 0 || tokens[b] >= c->tgt_vocab_size)
            return ted_fail(err, TED_ERR_INPUT,
                            "step: token id %d of row %d is outside the target vocabulary "
                            "(0..%d)",
                            tokens[b], b, c->tgt_vocab_size - 1);
    ted_decoder_step(s->model, tokens, s->batch, s->positions, s->steps, s->source_lengths,
                     s->caches, &s->decoder, s->step_attention, s->logits);
    ted_status status = check_logits_finite(s, err);
    if (status)
        return status;
    if (logits)
        *logits = s->logits;
    return TED_OK;
}

/* (layers, batch, row_bytes) -> (layers, count, row_bytes) in place, row i
 * of each layer taken from row rows[i]. A layer's new block never overlaps
 * an old block still to be read: front to back when the batch shrinks, back
 * to front when it grows. */
static void gather_layers(carried buffer, int batch, const int *rows, int count, char *scratch)
{
    size_t bytes = row_bytes(buffer);
    for (int i = 0; i < buffer.layers; i++) {
        int l = count <= batch ? i : buffer.layers - 1 - i;
        const char *old_block = (const char *)buffer.data + l * batch * bytes;
        for (int r = 0; r < count; r++)
            memcpy(scratch + r * bytes, old_block + rows[r] * bytes, bytes);
        memcpy((char *)buffer.data + l * count * bytes, scratch, count * bytes);
    }
}

/* True when every row either stays (rows[r] == r) or comes from past the
 * new batch (rows[r] >= count): as when rows ended and the last rows
 * take their places. No row is then read after it is written. */
static bool fills_from_the_end(const int *rows, int count)
{
    for (int r = 0; r < count; r++)
        if (rows[r] != r && rows[r] < count)
            return false;
    return true;
}

/* One layer's rows in place: only the rows that move are copied. */
static void fill_rows(carried buffer, const int *rows, int count)
{
    size_t bytes = row_bytes(buffer);
    char *data = buffer.data;
    for (int r = 0; r < count; r++)
        if (rows[r] != r)
            memcpy(data + r * bytes, data + rows[r] * bytes, bytes);
}

/* (layers, batch, blocks) in `from` -> (layers, count, blocks) in `to`,
 * row i of each layer from row rows[i] (rows NULL: row i). A block keeps
 * its first positions when `to`'s are wider. */
static void copy_layer_rows(carried to, carried from, int batch, const int *rows, int count)
{
    size_t bytes = to.block_bytes < from.block_bytes ? to.block_bytes : from.block_bytes;
    for (int l = 0; l < from.layers; l++)
        for (int r = 0; r < count; r++) {
            size_t row = (size_t)l * batch + (rows ? rows[r] : r);
            char *out = (char *)to.data + ((size_t)l * count + r) * row_bytes(to);
            const char *in = (const char *)from.data + row * row_bytes(from);
            for (int k = 0; k < from.blocks; k++)
                memcpy(out + k * to.block_bytes, in + k * from.block_bytes, bytes);
        }
}

/* Moves the session to a new arena of at least `capacity` rows, laid out for
 * (source_len, max_steps), no narrower than the old one, and keeps rows
 * rows[0..count) (NULL: the first count) of every carried buffer, copied
 * straight from the old arena, which is then freed. The encoder's
 * activations and the decoder's scratch are not carried over: the first
 * are done with, the second are rewritten by the next step. */
static ted_status move_rows(ted_session *s, int capacity, int source_len, int max_steps,
                            const int *rows, int count, const char *who, ted_error *err)
{
    session_private *p = (session_private *)s;
    session_buffers *b = &p->buffers, room = *b;
    int buffers = carried_buffers(s, p->old_carried);
    if (!new_arena(s, &room, capacity, source_len, max_steps, who, err)) {
        /* point the session back at the old arena, which is still whole */
        arena back = {.base = b->base};
        layout(s, &back, b->batch, s->source_len, s->max_steps);
        return TED_ERR_NOMEM;
    }
    arena used = {.base = room.base};
    layout(s, &used, room.batch, source_len, max_steps);
    s->source_len = source_len;
    s->max_steps = max_steps;
    carried_buffers(s, p->new_carried);
    for (int i = 0; i < buffers; i++)
        copy_layer_rows(p->new_carried[i], p->old_carried[i], s->batch, rows, count);
    fill_positions(s);
    free(b->base);
    *b = room;
    s->batch = count;
    return TED_OK;
}

/* self.length: the most steps of a row, after rows were dropped. */
static void note_longest_row(ted_session *s)
{
    int longest = largest(s->steps, s->batch);
    for (int l = 0; l < s->model->config.decoder_layers; l++)
        s->caches[l].self.length = longest;
}

ted_status ted_session_select(ted_session *s, const int *rows, int count, ted_error *err)
{
    session_private *p = (session_private *)s;
    if (s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "select: no source encoded");
    if (count < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "select: %d rows; at least 1 is needed", count);
    for (int i = 0; i < count; i++)
        if (rows[i] < 0 || rows[i] >= s->batch)
            return ted_fail(err, TED_ERR_ARGUMENT, "select: row %d is outside 0..%d", rows[i],
                            s->batch - 1);
    if (count > p->buffers.batch) {
        ted_status status =
            move_rows(s, count, s->source_len, s->max_steps, rows, count, "select", err);
        if (status)
            return status;
    } else {
        int buffers = carried_buffers(s, p->old_carried);
        bool in_place = fills_from_the_end(rows, count);
        for (int i = 0; i < buffers; i++) {
            if (in_place && p->old_carried[i].layers == 1)
                fill_rows(p->old_carried[i], rows, count);
            else
                gather_layers(p->old_carried[i], s->batch, rows, count, (char *)s->gather);
        }
        s->batch = count;
    }
    note_longest_row(s);
    return TED_OK;
}

/* ---- rows that join ---------------------------------------------------- */

/* `needed` when more than `now`: at least twice `now`, up to `limit`. */
static int grown(int now, int needed, int limit)
{
    if (needed <= now)
        return now;
    int doubled = now <= limit / 2 ? 2 * now : limit;
    return doubled > needed ? doubled : needed;
}

/* An empty session laid out for `count` rows to join, as wide as its
 * buffers allow (and at least source_len and max_steps): rows that join
 * later fit without moving the caches while the buffers hold them. */
static ted_status lay_out_empty(ted_session *s, int count, int source_len, int max_steps,
                                ted_error *err)
{
    const session_buffers *b = &((session_private *)s)->buffers;
    int width = source_len > b->source_len ? source_len : b->source_len;
    int steps = max_steps > b->max_steps ? max_steps : b->max_steps;
    ted_status status = reserve(s, count, width, steps, err);
    if (status)
        return status;
    s->source_len = width;
    s->max_steps = steps;
    for (int l = 0; l < s->model->config.decoder_layers; l++) {
        s->caches[l].self.length = 0;
        s->caches[l].cross.length = width;
    }
    fill_positions(s);
    return TED_OK;
}

/* Room for `count` more rows with sources of up to `source_len` tokens and
 * up to `max_steps` steps. Each of the three grows at least twofold when
 * it must grow, so rows joining one at a time move the session a few
 * times only; widened source rows are padded. */
static ted_status make_room(ted_session *s, int count, int source_len, int max_steps,
                            ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (s->batch == 0)
        return lay_out_empty(s, count, source_len, max_steps, err);
    int capacity = ((session_private *)s)->buffers.batch, rows = s->batch + count;
    if (rows <= capacity && source_len <= s->source_len && max_steps <= s->max_steps)
        return TED_OK;
    int old_source_len = s->source_len;
    ted_status status = move_rows(s, grown(capacity, rows, INT_MAX),
                                  grown(s->source_len, source_len, c->max_positions),
                                  grown(s->max_steps, max_steps, c->max_positions), NULL,
                                  s->batch, "append", err);
    if (status)
        return status;
    for (int b = 0; b < s->batch && s->source_len > old_source_len; b++) {
        int *row = s->source_ids + (size_t)b * s->source_len;
        copy_padded(row, row, s->source_lengths[b], s->source_len, c->pad_id);
    }
    for (int l = 0; l < c->decoder_layers; l++)
        s->caches[l].cross.length = s->source_len;
    return TED_OK;
}

/* The encoder over `count` new sources, as (count, seq) with seq their own
 * longest, into rows batch .. batch + count - 1 with their encoder-decoder
 * K and V; their source ids are then widened to the session's rows. */
static void encode_joining(ted_session *s, const int *const *source_ids,
                           const int *source_lengths, int count, int seq)
{
    const ted_config *c = &s->model->config;
    int first = s->batch, width = s->source_len;
    int *ids = s->source_ids + (size_t)first * width;
    for (int k = 0; k < count; k++) {
        s->source_lengths[first + k] = source_lengths[k];
        s->steps[first + k] = 0;
        copy_padded(ids + (size_t)k * seq, source_ids[k], source_lengths[k], seq, c->pad_id);
    }
    ted_encoder_forward(s->model, ids, s->source_lengths + first, count, seq, s->positions,
                        &s->encoder, s->encoder_cache, NULL);
    ted_decoder_cache_joining_memory(s->model, s->encoder.x, first, count, seq, s->caches,
                                     s->encoder.attention.projected);
    for (int k = count - 1; k >= 0; k--)  /* last row first: no row overwrites another */
        copy_padded(ids + (size_t)k * width, ids + (size_t)k * seq, source_lengths[k], width,
                    c->pad_id);
    s->batch += count;
}

ted_status ted_session_append(ted_session *s, const int *const *source_ids,
                              const int *source_lengths, int count, int max_steps,
                              ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "append: no batch encoded to append to");
    if (s->keep_attention)
        return ted_fail(err, TED_ERR_ARGUMENT, "append: not while attention weights are kept");
    if (count < 1 || !source_ids || !source_lengths)
        return ted_fail(err, TED_ERR_ARGUMENT, "append: no sources");
    ted_status status = check_max_steps(c, max_steps, "append", err);
    if (!status)
        status = check_sources(c, source_ids, source_lengths, count, err);
    int seq = largest(source_lengths, count);
    if (!status)
        status = make_room(s, count, seq, max_steps, err);
    if (!status)
        encode_joining(s, source_ids, source_lengths, count, seq);
    return status;
}

/* The rows of `joining` (just encoded, not stepped) become rows batch ..
 * batch + count - 1 of s: their source ids, lengths and encoder-decoder
 * K and V are copied, each block keeping its first positions; their
 * source ids are then widened to the session's rows. */
static void copy_joining_rows(ted_session *s, ted_session *joining)
{
    session_private *p = (session_private *)s, *q = (session_private *)joining;
    int buffers = carried_buffers(s, p->new_carried);
    carried_buffers(joining, q->old_carried);
    for (int i = 0; i < buffers; i++) {
        carried to = p->new_carried[i];
        to.data = (char *)to.data + (size_t)s->batch * row_bytes(to);
        copy_layer_rows(to, q->old_carried[i], joining->batch, NULL, joining->batch);
    }
    int pad = s->model->config.pad_id;
    for (int k = 0; k < joining->batch; k++) {
        int row = s->batch + k;
        int *ids = s->source_ids + (size_t)row * s->source_len;
        copy_padded(ids, ids, s->source_lengths[row], s->source_len, pad);
    }
}

ted_status ted_session_join(ted_session *s, ted_session *joining, ted_error *err)
{
    if (!joining || joining == s || joining->model != s->model)
        return ted_fail(err, TED_ERR_ARGUMENT, "join: not another session of the same model");
    if (joining->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "join: the joining session has no encoded rows");
    /* an empty session would take its layout here, not from an encode */
    bool keeps_attention = s->batch == 0 ? s->attention_requested : s->keep_attention;
    if (keeps_attention || joining->keep_attention)
        return ted_fail(err, TED_ERR_ARGUMENT, "join: not while attention weights are kept");
    if (ted_session_position(joining) > 0)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "join: the joining rows have stepped; only encoded rows can join");
    ted_status status = make_room(s, joining->batch, joining->source_len,
                                  joining->max_steps, err);
    if (status)
        return status;
    copy_joining_rows(s, joining);
    s->batch += joining->batch;
    joining->batch = 0;
    return TED_OK;
}

void ted_session_clear(ted_session *s)
{
    s->batch = 0;
    for (int l = 0; l < s->model->config.decoder_layers; l++)
        s->caches[l].self.length = 0;
}

const ted_model *ted_session_model(const ted_session *s)
{
    return s->model;
}

int ted_session_batch(const ted_session *s)
{
    return s->batch;
}

int ted_session_position(const ted_session *s)
{
    return s->caches[0].self.length;
}

int ted_session_row_position(const ted_session *s, int row)
{
    return row >= 0 && row < s->batch ? s->steps[row] : 0;
}

int ted_session_source_length(const ted_session *s, int row)
{
    return row >= 0 && row < s->batch ? s->source_lengths[row] : 0;
}

ted_status ted_session_attention(const ted_session *s, ted_attention_kind kind, int layer,
                                 int row, ted_attention_view *view, ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (kind != TED_ENCODER_SELF_ATTENTION && kind != TED_DECODER_SELF_ATTENTION &&
        kind != TED_CROSS_ATTENTION)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: kind %d is none of encoder "
                        "self-attention, decoder self-attention and cross-attention", (int)kind);
    if (!s->keep_attention || s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "attention: not kept (call ted_session_keep_attention before encode)");
    int layers = kind == TED_ENCODER_SELF_ATTENTION ? c->encoder_layers : c->decoder_layers;
    if (layer < 0 || layer >= layers || row < 0 || row >= s->batch)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: layer %d, row %d out of range",
                        layer, row);
    int position = ted_session_position(s);
    if (kind != TED_ENCODER_SELF_ATTENTION && position == 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: no decoder step yet");
    size_t block = (size_t)layer * s->batch + row;
    int S = s->source_len, h = c->heads;
    switch (kind) {
    case TED_ENCODER_SELF_ATTENTION:
        *view = (ted_attention_view){s->encoder_attention + block * h * S * S, h, S, S, S};
        break;
    case TED_DECODER_SELF_ATTENTION:
        *view = (ted_attention_view){s->step_attention.self + block * h * s->max_steps, h, 1,
                                     position, s->max_steps};
        break;
    case TED_CROSS_ATTENTION:
        *view = (ted_attention_view){s->step_attention.cross + block * h * S, h, 1, S, S};
        break;
    }
    return TED_OK;
}
