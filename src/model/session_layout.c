/* The arena of a session (model/session.h): every buffer in one
 * allocation, laid out by the same function that sizes it, and the rows of
 * the batch that select() and join() carry from place to place. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "layers/positional_encoding.h"
#include "model/session.h"

/* ---- buffers -------------------------------------------------------------
 * A first pass of layout() with no base sums the sizes, the second hands
 * out pointers. The layout depends on (batch, source_len, max_steps) and on
 * whether attention weights are kept. */

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

/* The width of the attention's buffers: d_model, or heads * query_size
 * when wider (T5); the encoder packs rows of d_model into them too. */
static size_t attention_width(const ted_config *c)
{
    size_t d = c->d_model, inner = (size_t)c->heads * c->query_size;
    return d > inner ? d : inner;
}

/* The buffers of one pass over `rows` positions; `scores` floats for one
 * query's scores of every (batch row, head). */
static void take_activations(arena *a, ted_activations *act, size_t rows, const ted_model *m,
                             size_t scores)
{
    const ted_config *c = &m->config;
    size_t d = c->d_model, w = attention_width(c);
    act->x = take(a, product(rows, d, 1), sizeof(float));
    act->normed = take(a, product(rows, d, 1), sizeof(float));
    act->sublayer = take(a, product(rows, d, 1), sizeof(float));
    act->hidden = take(a, product(rows, c->d_ff, m->kinds.feed_forward->hidden_rows),
                       sizeof(float));
    act->attention.projected = take(a, product(rows, w, 3), sizeof(float));
    act->attention.queries = take(a, product(rows, w, 1), sizeof(float));
    act->attention.context = take(a, product(rows, w, 1), sizeof(float));
    act->attention.merged = take(a, product(rows, w, 1), sizeof(float));
    act->attention.scores = take(a, scores, sizeof(float));
}

/* K and V of (batch, capacity) positions of d floats; the cache's
 * length is left as it is: it belongs to the decode, not to the layout. */
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

/* The kept attention weights, when kept, and the scratch of select(). */
static void take_kept(ted_session *s, arena *a, size_t B, size_t S, size_t T)
{
    const ted_config *c = &s->model->config;
    size_t d = attention_width(c), h = c->heads;
    size_t widest_row = max3(T * d, S * d, S);
    s->encoder.kept_attention = s->decoder.kept.self = s->decoder.kept.cross = NULL;
    if (s->keep_encoder_attention) {
        s->encoder.kept_attention =
            take(a, product(c->encoder_layers, B * h, S * S), sizeof(float));
        widest_row = max3(widest_row, h * S * S, 0);
    }
    if (s->keep_attention) {
        s->decoder.kept.self = take(a, product(c->decoder_layers, B * h, T), sizeof(float));
        s->decoder.kept.cross = take(a, product(c->decoder_layers, B * h, S), sizeof(float));
        widest_row = max3(widest_row, h * T, 0);
    }
    s->gather_size = ted_mul_size(B, widest_row);
    s->gather = take(a, s->gather_size, sizeof(float));
}

/* The positional encoding each stack adds, from the row of its first
 * position (position_offset): the model's learned tables, or the session's
 * sinusoidal one. */
static void point_positions(ted_session *s)
{
    const ted_config *c = &s->model->config;
    const ted_weights *w = &s->model->weights;
    size_t first = (size_t)c->position_offset * c->d_model;
    const float *encoder = w->encoder_positions ? w->encoder_positions : s->positions;
    const float *decoder = w->decoder_positions ? w->decoder_positions : s->positions;
    /* the arena's measuring pass lays out no memory: NULL stays NULL */
    s->encoder.positions = encoder ? encoder + first : NULL;
    s->decoder.positions = decoder ? decoder + first : NULL;
}

/* Points every buffer of the session into the arena: `batch` rows of
 * source_len source and max_steps decoder positions. A session that does
 * not encode (rows join it: s->encodes) has no encoder buffers. */
static void layout(ted_session *s, arena *a, int batch, int source_len, int max_steps)
{
    const ted_config *c = &s->model->config;
    size_t B = batch, S = source_len, T = max_steps, d = c->d_model, h = c->heads;
    size_t inner = h * (size_t)c->query_size;
    size_t rows = s->encodes ? ted_mul_size(B, S) : 0;
    ted_encoder_state *encoder = &s->encoder;
    ted_decoder_state *decoder = &s->decoder;

    s->source_lengths = take(a, B, sizeof(int));
    s->origins = take(a, B, sizeof(uint64_t));
    s->source_ids = take(a, ted_mul_size(B, S), sizeof(int));
    decoder->steps = take(a, B, sizeof(int));
    s->positions = take(a, product((S > T ? S : T) + c->position_offset, d, 1), sizeof(float));

    take_activations(a, &encoder->activations, rows, s->model,
                     s->encodes ? product(B, h, S) : 0);
    take_cache(a, &encoder->layer_kv, s->encodes ? B : 0, source_len, inner);

    take_activations(a, &decoder->activations, B, s->model, product(B, h, T > S ? T : S));
    bool inputs = s->model->reprojects_self_kv;
    for (int l = 0; l < c->decoder_layers; l++) {
        take_cache(a, &decoder->caches[l].self, B, max_steps, inner);
        take_cache(a, &decoder->caches[l].cross, B, source_len, inner);
        decoder->caches[l].inputs = inputs ? take(a, product(B, T, d), sizeof(float)) : NULL;
    }
    decoder->prefix_kv = inputs ? take(a, product(T, inner, 2), sizeof(float)) : NULL;
    s->logits = take(a, ted_mul_size(B, c->tgt_vocab_size), sizeof(float));
    take_kept(s, a, B, S, T);

    point_positions(s);
    encoder->source_lengths = decoder->source_lengths = s->source_lengths;
}

/* The sinusoidal encoding of every position the decode reaches, from
 * position 0 (the rows before position_offset go unused). */
static void fill_positions(ted_session *s)
{
    const ted_config *c = &s->model->config;
    const ted_position_kind *kind = s->model->kinds.positions;
    if (!kind->fill)  /* learned: the model's own tables */
        return;
    int count = s->source_len > s->max_steps ? s->source_len : s->max_steps;
    kind->fill(s->positions, count + c->position_offset, c->d_model);
}

/* ---- what select() and join() carry over --------------------------------- */

static size_t row_bytes(ted_carried buffer)
{
    return buffer.blocks * buffer.block_bytes;
}

/* Lists every buffer that holds rows of the batch; returns how many. */
static int carried_buffers(const ted_session *s, ted_carried *list)
{
    const ted_config *c = &s->model->config;
    size_t S = s->source_len, T = s->max_steps, h = c->heads, q = c->query_size;
    size_t d = c->d_model, f = sizeof(float);
    const ted_decoder_state *decoder = &s->decoder;
    int n = 0;
    const int *steps = decoder->steps, *sources = s->source_lengths;
    list[n++] = (ted_carried){s->source_lengths, 1, 1, sizeof(int), NULL, 0, true};
    list[n++] = (ted_carried){decoder->steps, 1, 1, sizeof(int), NULL, 0, false};
    list[n++] = (ted_carried){s->source_ids, 1, 1, S * sizeof(int), NULL, 0, true};
    for (int l = 0; l < c->decoder_layers; l++) {
        const ted_decoder_cache *cache = &decoder->caches[l];
        list[n++] = (ted_carried){cache->self.k, 1, (int)h, T * q * f, steps, q * f, false};
        list[n++] = (ted_carried){cache->self.v, 1, (int)h, T * q * f, steps, q * f, false};
        list[n++] = (ted_carried){cache->cross.k, 1, (int)h, S * q * f, sources, q * f, true};
        list[n++] = (ted_carried){cache->cross.v, 1, (int)h, S * q * f, sources, q * f, true};
        if (cache->inputs)
            list[n++] = (ted_carried){cache->inputs, 1, 1, T * d * f, steps, d * f, false};
    }
    if (s->keep_encoder_attention)
        list[n++] = (ted_carried){s->encoder.kept_attention, c->encoder_layers, (int)(h * S),
                                  S * f, NULL, 0, true};
    if (s->keep_attention) {
        list[n++] = (ted_carried){decoder->kept.self, c->decoder_layers, (int)h, T * f, NULL,
                                  0, false};
        list[n++] = (ted_carried){decoder->kept.cross, c->decoder_layers, (int)h, S * f, NULL,
                                  0, false};
    }
    /* last, and not per source: select() reads the rows' old origins until
     * here */
    list[n++] = (ted_carried){s->origins, 1, 1, sizeof(uint64_t), NULL, 0, false};
    return n;
}

int ted_carried_capacity(const ted_config *c)
{
    return 3 + 5 * c->decoder_layers + 3 + 1;
}

/* The bytes of each block that row r of `to` takes from `from`: what the
 * narrower block holds, and no more than the row's positions. */
static size_t used_bytes(ted_carried to, ted_carried from, int r)
{
    size_t bytes = to.block_bytes < from.block_bytes ? to.block_bytes : from.block_bytes;
    size_t held = to.lengths ? (size_t)to.lengths[r] * to.position_bytes : bytes;
    return held < bytes ? held : bytes;
}

/* One row's blocks, their first `used` bytes each. */
static void copy_row(char *out, size_t out_block, const char *in, size_t in_block, int blocks,
                     size_t used)
{
    for (int k = 0; k < blocks; k++)
        memcpy(out + k * out_block, in + k * in_block, used);
}

/* (layers, batch, row_bytes) -> (layers, count, row_bytes) in place, row i
 * of each layer taken from row rows[i]. A layer's new block never overlaps
 * an old block still to be read: front to back when the batch shrinks, back
 * to front when it grows. scratch: (count, row_bytes). */
static void gather_layers(ted_carried buffer, int batch, const int *rows, int count,
                          char *scratch)
{
    size_t bytes = row_bytes(buffer), block = buffer.block_bytes;
    for (int i = 0; i < buffer.layers; i++) {
        int l = count <= batch ? i : buffer.layers - 1 - i;
        const char *old_block = (const char *)buffer.data + l * batch * bytes;
        char *new_block = (char *)buffer.data + l * count * bytes;
        for (int r = 0; r < count; r++)
            copy_row(scratch + r * bytes, block, old_block + rows[r] * bytes, block,
                     buffer.blocks, used_bytes(buffer, buffer, r));
        for (int r = 0; r < count; r++)
            copy_row(new_block + r * bytes, block, scratch + r * bytes, block, buffer.blocks,
                     used_bytes(buffer, buffer, r));
    }
}

/* The rows before a select(), which hold what they hold; the rows past
 * them hold nothing yet. */
typedef struct old_rows {
    int batch;
    const uint64_t *origins;
} old_rows;

/* Whether row r of a one-layer buffer takes another row's bytes: it takes
 * row rows[r] in its place, but for a per-source buffer when it already
 * holds that row's source. */
static bool takes(ted_carried buffer, const int *rows, int r, old_rows old)
{
    bool same_source = r < old.batch && old.origins[rows[r]] == old.origins[r];
    return rows[r] != r && !(buffer.per_source && same_source);
}

/* One layer's rows in place, row r from row rows[r]: only the rows that
 * take another's are written. A row read that is written over is read into
 * scratch (count, row_bytes) first. */
static void take_rows(ted_carried buffer, const int *rows, int count, old_rows old,
                      char *scratch)
{
    size_t bytes = row_bytes(buffer), block = buffer.block_bytes;
    char *data = buffer.data;
    for (int r = 0; r < count; r++)
        if (takes(buffer, rows, r, old) && rows[r] < count &&
            takes(buffer, rows, rows[r], old))
            copy_row(scratch + r * bytes, block, data + rows[r] * bytes, block, buffer.blocks,
                     used_bytes(buffer, buffer, r));
    for (int r = 0; r < count; r++) {
        if (!takes(buffer, rows, r, old))
            continue;
        bool kept_aside = rows[r] < count && takes(buffer, rows, rows[r], old);
        const char *from = kept_aside ? scratch + r * bytes : data + rows[r] * bytes;
        copy_row(data + r * bytes, block, from, block, buffer.blocks,
                 used_bytes(buffer, buffer, r));
    }
}

/* (layers, batch, blocks) in `from` -> (layers, count, blocks) in `to`,
 * row i of each layer from row rows[i] (rows NULL: row i). A block keeps
 * its first positions when `to`'s are wider. */
static void copy_layer_rows(ted_carried to, ted_carried from, int batch, const int *rows,
                            int count)
{
    for (int l = 0; l < from.layers; l++)
        for (int r = 0; r < count; r++) {
            size_t row = (size_t)l * batch + (rows ? rows[r] : r);
            char *out = (char *)to.data + ((size_t)l * count + r) * row_bytes(to);
            const char *in = (const char *)from.data + row * row_bytes(from);
            copy_row(out, to.block_bytes, in, from.block_bytes, from.blocks,
                     used_bytes(to, from, r));
        }
}

void ted_arena_gather(ted_session *s, const int *keep, int kept)
{
    int buffers = carried_buffers(s, s->old_carried);
    old_rows old = {s->batch, s->origins};
    for (int i = 0; i < buffers; i++) {
        if (s->old_carried[i].layers == 1)
            take_rows(s->old_carried[i], keep, kept, old, (char *)s->gather);
        else
            gather_layers(s->old_carried[i], s->batch, keep, kept, (char *)s->gather);
    }
    s->batch = kept;
}

/* Rows first .. first + count - 1 of the source ids: each keeps its first
 * source_lengths[row] ids, and pad_id fills the rest of the row. */
static void pad_source_ids(ted_session *s, int first, int count)
{
    int pad = s->model->config.pad_id;
    for (int row = first; row < first + count; row++) {
        int *ids = s->source_ids + (size_t)row * s->source_len;
        ted_copy_padded(ids, ids, s->source_lengths[row], s->source_len, pad);
    }
}

void ted_arena_copy_joining(ted_session *s, const ted_session *joining)
{
    int buffers = carried_buffers(s, s->new_carried);
    carried_buffers(joining, joining->old_carried);
    for (int i = 0; i < buffers; i++) {
        ted_carried to = s->new_carried[i];
        to.data = (char *)to.data + (size_t)s->batch * row_bytes(to);
        to.lengths = to.lengths ? to.lengths + s->batch : NULL;
        copy_layer_rows(to, joining->old_carried[i], joining->batch, NULL, joining->batch);
    }
    for (int r = s->batch; r < s->batch + joining->batch; r++)
        s->origins[r] = s->origins_given++;
    pad_source_ids(s, s->batch, joining->batch);
}

/* ---- the arena ------------------------------------------------------------- */

/* Memory for an arena that holds `size` and no less than the session's
 * room; `*room` receives what it holds. NULL (and `err` says why) when it
 * cannot be had. The sizing pass leaves the session's pointers unset: the
 * caller lays an arena out again. */
static char *new_arena(ted_session *s, ted_session_size size, ted_session_size *room,
                       const char *who, ted_error *err)
{
    ted_session_size grown = {
        size.rows > s->room.rows ? size.rows : s->room.rows,
        size.source_len > s->room.source_len ? size.source_len : s->room.source_len,
        size.max_steps > s->room.max_steps ? size.max_steps : s->room.max_steps,
    };
    arena sizing = {0};
    layout(s, &sizing, grown.rows, grown.source_len, grown.max_steps);
    /* every buffer starts on a cache line (take() rounds sizes to 64 bytes):
     * a vector load across two lines costs two */
    char *base = sizing.used == SIZE_MAX ? NULL : aligned_alloc(64, sizing.used);
    if (!base) {
        char bytes[32] = "more than the address space";
        if (sizing.used != SIZE_MAX)
            snprintf(bytes, sizeof bytes, "%zu MiB", sizing.used >> 20);
        ted_fail(err, TED_ERR_NOMEM,
                 "%s: cannot allocate %s of session buffers for batch %d, source length %d, "
                 "%d steps",
                 who, bytes, grown.rows, grown.source_len, grown.max_steps);
        return NULL;
    }
    *room = grown;
    s->arena_bytes = sizing.used;
    return base;
}

/* The session's buffers go to a new arena of `room`, laid out as the
 * session now asks (kept attention weights, encoder buffers). */
static void adopt_arena(ted_session *s, char *base, ted_session_size room)
{
    s->arena = base;
    s->room = room;
    s->room_keeps_attention = s->keep_attention;
    s->room_keeps_encoder_attention = s->keep_encoder_attention;
    s->room_encodes = s->encodes;
}

/* Lays the session out in the arena for (source_len, max_steps), every
 * cache `source_len` positions of encoder-decoder K and V long. */
static void lay_out(ted_session *s, int source_len, int max_steps)
{
    arena used = {.base = s->arena};
    layout(s, &used, s->room.rows, source_len, max_steps);
    s->source_len = source_len;
    s->max_steps = max_steps;
    for (int l = 0; l < s->model->config.decoder_layers; l++)
        s->decoder.caches[l].cross.length = source_len;
    fill_positions(s);
}

ted_status ted_arena_fit(ted_session *s, ted_session_size size, const char *who,
                         ted_error *err)
{
    bool fits = s->arena && size.rows <= s->room.rows &&
                size.source_len <= s->room.source_len && size.max_steps <= s->room.max_steps &&
                (s->room_keeps_attention || !s->keep_attention) &&
                (s->room_keeps_encoder_attention || !s->keep_encoder_attention) &&
                (s->room_encodes || !s->encodes);
    s->batch = 0;
    for (int l = 0; l < s->model->config.decoder_layers; l++)
        s->decoder.caches[l].self.length = 0;
    if (!fits) {  /* what the old arena held is not needed, so it goes first */
        ted_session_size room;
        free(s->arena);
        s->arena = NULL;
        char *base = new_arena(s, size, &room, who, err);
        if (!base) {
            s->room = (ted_session_size){0};
            return TED_ERR_NOMEM;
        }
        adopt_arena(s, base, room);
    }
    lay_out(s, size.source_len, size.max_steps);
    return TED_OK;
}

int ted_arena_first_steps(ted_session *s, ted_session_size size, int max_steps)
{
    int least = max_steps < TED_SESSION_FIRST_STEPS ? max_steps : TED_SESSION_FIRST_STEPS;
    int held = s->room.max_steps < max_steps ? s->room.max_steps : max_steps;
    arena small = {0}, whole = {0};
    layout(s, &small, size.rows, size.source_len, least);
    layout(s, &whole, size.rows, size.source_len, max_steps);
    if (whole.used != SIZE_MAX && whole.used / 2 <= small.used)
        return max_steps;
    return held > least ? held : least;
}

void ted_arena_release(ted_session *s)
{
    free(s->arena);
    s->arena = NULL;
    s->arena_bytes = 0;
    s->room = (ted_session_size){0};
    s->room_keeps_attention = s->room_keeps_encoder_attention = s->room_encodes = false;
    s->batch = 0;
    s->source_len = s->max_steps = 0;
}

ted_status ted_arena_widen(ted_session *s, ted_session_size size, const int *keep, int kept,
                           const char *who, ted_error *err)
{
    int buffers = carried_buffers(s, s->old_carried);
    int old_source_len = s->source_len, old_max_steps = s->max_steps;
    ted_session_size room;
    char *base = new_arena(s, size, &room, who, err);
    char *old_base = s->arena;
    if (!base) {  /* point the session back at the old arena, which is still whole */
        arena back = {.base = old_base};
        layout(s, &back, s->room.rows, old_source_len, old_max_steps);
        return TED_ERR_NOMEM;
    }
    adopt_arena(s, base, room);
    lay_out(s, size.source_len, size.max_steps);
    carried_buffers(s, s->new_carried);
    for (int i = 0; i < buffers; i++)
        copy_layer_rows(s->new_carried[i], s->old_carried[i], s->batch, keep, kept);
    free(old_base);
    s->batch = kept;
    if (s->source_len > old_source_len)
        pad_source_ids(s, 0, kept);
    return TED_OK;
}
