/* The rows of a session's batch (model/session.h): select() keeps, drops
 * or repeats them, join() adds rows encoded in another session, clear()
 * drops them all. The arena grows when the rows outgrow it. */
#include <limits.h>

#include "core/error.h"
#include "model/session.h"
#include "model/session_hooks.h"

/* self.length: the most steps of a row, after rows were dropped. */
static void note_longest_row(ted_session *s)
{
    int longest = ted_largest(s->decoder.steps, s->batch);
    for (int l = 0; l < s->model->config.decoder_layers; l++)
        s->decoder.caches[l].self.length = longest;
}

ted_status ted_session_select(ted_session *s, const int *rows, int count, ted_error *err)
{
    TED_REQUIRE(s, err);
    if (!rows && count > 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: rows is NULL", __func__);
    if (s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "select: no source encoded");
    if (count < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "select: %d rows; at least 1 is needed", count);
    for (int i = 0; i < count; i++)
        if (rows[i] < 0 || rows[i] >= s->batch)
            return ted_fail(err, TED_ERR_ARGUMENT, "select: row %d is outside 0..%d", rows[i],
                            s->batch - 1);
    if (count > s->room.rows) {
        ted_session_size size = {count, s->source_len, s->max_steps};
        ted_status status = ted_arena_widen(s, size, rows, count, "select", err);
        if (status)
            return status;
    } else {
        ted_arena_gather(s, rows, count);
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

static int at_least(int value, int least)
{
    return value > least ? value : least;
}

/* Room for the rows of `joining`: its row count more rows, its sources and
 * steps. An empty session is laid out as wide as its arena has been, so
 * that rows that join later fit without moving the caches. Otherwise the
 * rows, the source room and the step room each grow at least twofold when
 * they must grow, so rows joining one at a time move the session a few
 * times only; widened source rows are padded. */
static ted_status room_to_join(ted_session *s, const ted_session *joining, ted_error *err)
{
    const ted_config *c = &s->model->config;
    int count = joining->batch, source_len = joining->source_len;
    int max_steps = joining->max_steps;
    if (s->batch == 0) {
        s->keep_attention = false;  /* join() refuses sessions that would keep them */
        s->keep_encoder_attention = false;
        s->encodes = false;         /* rows join it: it needs no encoder buffers */
        ted_session_size size = {count, at_least(source_len, s->room.source_len),
                                 at_least(max_steps, s->room.max_steps)};
        return ted_arena_fit(s, size, "join", err);
    }
    int rows = s->batch + count;
    if (rows <= s->room.rows && source_len <= s->source_len && max_steps <= s->max_steps)
        return TED_OK;
    ted_session_size size = {grown(s->room.rows, rows, INT_MAX),
                             grown(s->source_len, source_len, c->max_positions),
                             grown(s->max_steps, max_steps, c->max_positions)};
    return ted_arena_widen(s, size, NULL, s->batch, "join", err);
}

ted_status ted_session_join(ted_session *s, ted_session *joining, ted_error *err)
{
    TED_REQUIRE(s, err);
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
    ted_status status = room_to_join(s, joining, err);
    if (status)
        return status;
    ted_arena_copy_joining(s, joining);
    if (s->batch == 0 || joining->step_limit > s->step_limit)
        s->step_limit = joining->step_limit;
    s->batch += joining->batch;
    joining->batch = 0;
    return ted_session_restrict(s, NULL, err);
}

/* An emptied session gives an arena over TED_SESSION_KEPT_BYTES back:
 * the next encode or join lays out what its own rows need, not what the
 * largest batch needed. */
void ted_session_clear(ted_session *s)
{
    if (!s)
        return;
    ted_session_empty(s);
    if (s->arena_bytes > TED_SESSION_KEPT_BYTES)
        ted_arena_release(s);
}

void ted_session_empty(ted_session *s)
{
    s->batch = 0;
    for (int l = 0; l < s->model->config.decoder_layers; l++)
        s->decoder.caches[l].self.length = 0;
}

void ted_session_release(ted_session *s)
{
    if (!s)
        return;
    ted_session_clear(s);
    ted_arena_release(s);
}

ted_status ted_session_grow_steps(ted_session *s, ted_error *err)
{
    int position = ted_session_position(s);
    if (position < s->max_steps)
        return TED_OK;
    ted_session_size size = {s->room.rows, s->source_len,
                             grown(s->max_steps, position + 1, s->step_limit)};
    return ted_arena_widen(s, size, NULL, s->batch, "step", err);
}
