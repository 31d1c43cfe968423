/* The running batch of a model's decoding loop (serve/batch.h). */
#include "serve/batch.h"

#include <stdlib.h>

#include "frontend/options.h"
#include "serve/metrics.h"
#include "ted/util.h"

/* ---- sentences ------------------------------------------------------------- */

int serve_charge(int max_batch, int samples)
{
    int most = max_batch - max_batch / 4;
    return samples < most ? samples : most;
}

void serve_sentence_free(serve_sentence *d)
{
    ted_row_sentence_free(d->rows);
    free(d);
}

serve_sentence *serve_sentence_new(const ted_model *m, serve_job *job, int index,
                                   ted_error *err)
{
    serve_sentence *d = ted_alloc(1, sizeof *d, "sentence", err);
    if (!d)
        return NULL;
    *d = (serve_sentence){.job = job, .index = index};
    d->max_length = ted_max_target_length(m, job->lengths[index], job->options.max_length);
    ted_row_sentence_spec spec = {
        .source_ids = job->ids[index],
        .source_length = job->lengths[index],
        .prefix_ids = job->prefix_ids[index],
        .prefix_length = job->prefix_lengths[index],
        .max_length = d->max_length,
        .stream = job->options.first_index + (uint64_t)index,
        .scored = job->log_probs,
    };
    if (ted_row_sentence_new(m, &job->options.decode, &spec, &d->rows, err)) {
        serve_sentence_free(d);
        return NULL;
    }
    d->samples = d->unfinished = ted_row_sentence_samples(d->rows);
    return d;
}

/* A sentence whose samples have all ended: its hypotheses, best first,
 * become its translations. */
static void finish(const serve_batch *b, serve_sentence *d)
{
    serve_job *job = d->job;
    ted_translation *out = job->outputs + (size_t)d->index * d->samples;
    ted_error err = {0};
    ted_hypothesis *found = ted_alloc(d->samples, sizeof *found, "sentence", &err);
    ted_status s = found ? ted_row_sentence_result(d->rows, found, &err) : TED_ERR_NOMEM;
    for (int k = 0; !s && k < d->samples; k++)
        out[k].hypothesis = found[k];
    for (int k = 0; !s && k < d->samples; k++)
        if (!(out[k].text = ted_decode_target(job->model, out[k].hypothesis.ids,
                                              out[k].hypothesis.length)))
            s = ted_fail(&err, TED_ERR_NOMEM, "text[%d]: out of memory", d->index);
    free(found);
    if (job->progress && !s)
        job->progress(job, d->index, -1);
    serve_sentence_free(d);
    b->calls.done(b->calls.data, job, 1, s ? &err : NULL);
}

void serve_batch_fail(const serve_batch *b, serve_sentence *d, const ted_error *err)
{
    serve_job *job = d->job;
    serve_sentence_free(d);
    b->calls.done(b->calls.data, job, 1, err);
}

/* A sentence whose samples have all ended: translated, failed, or dropped
 * (its client left). */
static void end_sentence(const serve_batch *b, serve_sentence *d)
{
    ted_error failure = d->failure;  /* d is freed */
    if (d->dropped) {
        serve_job *job = d->job;
        int index = d->index;
        serve_sentence_free(d);
        b->calls.drop(b->calls.data, job, index);
    } else if (failure.status) {
        serve_batch_fail(b, d, &failure);
    } else {
        finish(b, d);
    }
}

/* ---- the batch ------------------------------------------------------------- */

static int by_sentence(const void *a, const void *b)
{
    const serve_row_key *x = a, *y = b;
    if (x->serial != y->serial)
        return x->serial < y->serial ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* b->order: the rows of each sentence together. */
static void order_rows(serve_batch *b)
{
    for (int r = 0; r < b->rows; r++)
        b->order[r] = (serve_row_key){b->now.owner[r]->serial, r};
    qsort(b->order, b->rows, sizeof *b->order, by_sentence);
}

/* Every sentence of the batch fails (the session could not step). */
static void fail_rows(serve_batch *b, const ted_error *err)
{
    order_rows(b);
    for (int k = 0; k < b->rows; k++)
        if (k == 0 || b->order[k].serial != b->order[k - 1].serial)
            serve_batch_fail(b, b->now.owner[b->order[k].row], err);
    b->rows = b->charged = 0;
    ted_session_empty(b->session);
}

ted_status serve_batch_join(serve_batch *b, ted_session *session,
                            serve_sentence *const *sentences, int count)
{
    ted_error err = {0};
    ted_status s = ted_session_join(b->session, session, &err);
    int bos = ted_config_get_view(ted_model_config(b->model)).tokens.decoder_start_id;
    for (int k = 0; k < count; k++) {
        serve_sentence *d = sentences[k];
        if (s) {
            serve_batch_fail(b, d, &err);
            continue;
        }
        d->serial = b->joined++;
        b->charged += serve_charge(b->max_batch, d->samples);
        b->now.owner[b->rows] = d;
        b->now.rows[b->rows] = (ted_row){d->rows, 0};
        b->now.tokens[b->rows++] = bos;
    }
    return s;
}

/* How often the batch looks at its clients' connections: a client that
 * left costs the batch its rows for at most this long. */
#define LOOK_SECONDS 0.05

/* Every LOOK_SECONDS, before a step: the jobs whose client has left are
 * cancelled (serve_job_left), and their rows leave at this step. */
static void look_at_clients(serve_batch *b)
{
    double now = ted_seconds();
    if (now - b->looked < LOOK_SECONDS)
        return;
    b->looked = now;
    for (int r = 0; r < b->rows; r++)
        if (!b->now.owner[r]->dropped)
            serve_job_left(b->now.owner[r]->job);
}

/* A sentence whose client left stops (ted_row_sentence_stop): its samples
 * leave the batch at this step, and it is dropped once the last of them
 * has (answer_row). */
static void check_cancelled(serve_sentence *d)
{
    if (!d->failure.status && !d->dropped && serve_job_is_cancelled(d->job)) {
        serve_job_cancelled_error(&d->failure, d->index);
        d->dropped = true;
        ted_row_sentence_stop(d->rows);
    }
}

/* After a step, what row r's choice means to its sentence: a streamed
 * sentence of one hypothesis hands its token to job->progress; the
 * samples that ended at row r end, and the sentence with them once its
 * last sample has. */
static void answer_row(serve_batch *b, int r)
{
    serve_sentence *d = b->now.owner[r];
    if (b->token[r] >= 0 && d->samples == 1 && d->job->progress)
        d->job->progress(d->job, d->index, b->token[r]);
    for (int ended = b->ended[r]; ended > 0; ended--) {
        b->charged -= serve_charge(b->max_batch, d->unfinished) -
                      serve_charge(b->max_batch, d->unfinished - 1);
        if (--d->unfinished == 0) {  /* its last sample still decoding ended */
            end_sentence(b, d);
            break;
        }
    }
}

/* True when some old row goes on twice: a sentence's first step, which
 * repeats its row once per sample. */
static bool repeats_a_row(serve_batch *b, int kept)
{
    bool repeated = false;
    for (int k = 0; k < kept; k++) {
        repeated |= b->kept[b->keep[k]];
        b->kept[b->keep[k]] = 1;
    }
    for (int k = 0; k < kept; k++)
        b->kept[b->keep[k]] = 0;
    return repeated;
}

/* Places the rows that go on so that select() copies the fewest: a row
 * inside the new batch stays where it is, and the rows past it take the
 * places of the rows that ended. False when a row repeats (nothing is
 * placed); true when placed, every old row then in its place when every
 * row goes on. */
static bool arrange(serve_batch *b, int kept)
{
    if (repeats_a_row(b, kept))
        return false;
    for (int k = 0; k < kept; k++)
        if (b->keep[k] < kept)
            b->kept[b->keep[k]] = 1;  /* its place is taken */
    int free = 0;
    for (int k = 0; k < kept; k++) {
        int place = b->keep[k];
        if (place >= kept) {
            while (b->kept[free])
                free++;
            place = free++;
        }
        b->spare.owner[place] = b->next.owner[k];
        b->spare.rows[place] = b->next.rows[k];
        b->spare.tokens[place] = b->next.tokens[k];
        b->spare_keep[place] = b->keep[k];
    }
    for (int r = 0; r < kept; r++)
        b->kept[r] = 0;
    serve_row_set rows = b->next;
    b->next = b->spare;
    b->spare = rows;
    int *keep = b->keep;
    b->keep = b->spare_keep;
    b->spare_keep = keep;
    return true;
}

/* The step's time and rows, and the tokens chosen, counted before any
 * sentence that ended is answered. */
static void count_step(const serve_batch *b, double start, int drawn)
{
    atomic_fetch_add_explicit(&b->metrics->tokens, (unsigned long long)drawn,
                              memory_order_relaxed);
    serve_histogram_observe(&b->metrics->step_seconds, ted_seconds() - start);
    serve_histogram_observe(&b->metrics->step_rows, b->rows);
}

/* One decoder step for every row; the rows whose sample ended leave. */
void serve_batch_step(serve_batch *b)
{
    const float *logits;
    ted_error err = {0};
    look_at_clients(b);
    double start = ted_seconds();
    for (int r = 0; r < b->rows; r++)
        check_cancelled(b->now.owner[r]);
    ted_rows_step step = {.rows = b->now.rows, .count = b->rows, .keep = b->keep,
                          .next = b->next.rows, .tokens = b->next.tokens, .token = b->token,
                          .ended = b->ended};
    if (ted_session_step(b->session, b->now.tokens, &logits, &err) ||
        ted_rows_choose(b->engine, logits, &step, &err)) {
        fail_rows(b, &err);
        return;
    }
    int kept = step.kept;
    count_step(b, start, step.drawn);
    for (int k = 0; k < kept; k++)
        b->next.owner[k] = b->now.owner[b->keep[k]];
    for (int r = 0; r < b->rows; r++)
        answer_row(b, r);
    bool same = arrange(b, kept) && kept == b->rows;  /* no row moves: no select() */
    serve_row_set swap = b->now;
    b->now = b->next;
    b->next = swap;
    b->rows = kept;
    if (kept == 0)
        ted_session_empty(b->session);
    else if (!same && ted_session_select(b->session, b->keep, kept, &err))
        fail_rows(b, &err);
}

void serve_batch_free(serve_batch *b)
{
    ted_session_free(b->session);
    free(b->now.owner), free(b->now.rows), free(b->now.tokens);
    free(b->next.owner), free(b->next.rows), free(b->next.tokens);
    free(b->spare.owner), free(b->spare.rows), free(b->spare.tokens);
    free(b->keep), free(b->spare_keep), free(b->kept), free(b->order);
    free(b->token), free(b->ended);
    ted_rows_free(b->engine);
}

static ted_status new_rows(serve_row_set *r, int capacity, ted_error *err)
{
    r->owner = ted_alloc(capacity, sizeof *r->owner, "batch rows", err);
    r->rows = ted_alloc(capacity, sizeof *r->rows, "batch rows", err);
    r->tokens = ted_alloc(capacity, sizeof *r->tokens, "batch rows", err);
    return r->owner && r->rows && r->tokens ? TED_OK : TED_ERR_NOMEM;
}

ted_status serve_batch_init(serve_batch *b, const ted_model *m, int max_batch,
                            serve_batch_calls calls, struct serve_loop_metrics *metrics,
                            ted_error *err)
{
    int big = FRONTEND_N_BEST_MAX + max_batch / 4;
    int rows = max_batch > big ? max_batch : big;
    *b = (serve_batch){.model = m, .max_batch = max_batch, .calls = calls, .metrics = metrics};
    ted_status s = ted_session_new(m, &b->session, err);
    if (!s)
        s = new_rows(&b->now, rows, err);
    if (!s)
        s = new_rows(&b->next, rows, err);
    if (!s)
        s = new_rows(&b->spare, rows, err);
    b->keep = ted_alloc(rows, sizeof *b->keep, "batch rows", err);
    b->spare_keep = ted_alloc(rows, sizeof *b->spare_keep, "batch rows", err);
    b->kept = ted_alloc(rows, sizeof *b->kept, "batch rows", err);
    b->order = ted_alloc(rows, sizeof *b->order, "batch rows", err);
    b->token = ted_alloc(rows, sizeof *b->token, "batch rows", err);
    b->ended = ted_alloc(rows, sizeof *b->ended, "batch rows", err);
    bool all = b->keep && b->spare_keep && b->kept && b->order && b->token && b->ended;
    if (!s && !all)
        s = TED_ERR_NOMEM;
    return s ? s : ted_rows_new(m, rows, &b->engine, err);
}
