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
    ted_hypotheses_free(d->rows.found, d->rows.samples);
    free(d->rows.found);
    free(d->rows.room);
    free(d);
}

serve_sentence *serve_sentence_new(const ted_model *m, serve_job *job, int index,
                                   ted_error *err)
{
    serve_sentence *d = ted_alloc(1, sizeof *d, "sentence", err);
    if (!d)
        return NULL;
    *d = (serve_sentence){.job = job, .index = index};
    d->rows = (ted_row_sentence){
        .max_length = ted_max_target_length(m, job->lengths[index], job->options.max_length),
        .prefix_ids = job->prefix_ids[index],
        .prefix_length = job->prefix_lengths[index],
        .source = {job->ids[index], job->lengths[index]},
        .scored = job->log_probs,
    };
    ted_row_sentence_start(&d->rows, m, &job->options.decode,
                           job->options.first_index + (uint64_t)index);
    int samples = d->unfinished = d->rows.samples;
    d->rows.found = ted_alloc(samples, sizeof *d->rows.found, "sentence", err);
    d->rows.room = ted_alloc(samples, sizeof *d->rows.room, "sentence", err);
    if (!d->rows.found || !d->rows.room) {
        serve_sentence_free(d);
        return NULL;
    }
    return d;
}

/* A sentence whose samples have all ended: its hypotheses, best first,
 * become its translations. */
static void finish(const serve_batch *b, serve_sentence *d)
{
    serve_job *job = d->job;
    ted_translation *out = job->outputs + (size_t)d->index * d->rows.samples;
    ted_error err = {0};
    ted_status s = TED_OK;
    ted_row_sentence_finish(&d->rows);
    for (int k = 0; k < d->rows.samples; k++) {
        out[k].hypothesis = d->rows.found[k];
        d->rows.found[k] = (ted_hypothesis){0};
        if (!s && !(out[k].text = ted_decode_target(job->model, out[k].hypothesis.ids,
                                                    out[k].hypothesis.length)))
            s = ted_fail(&err, TED_ERR_NOMEM, "text[%d]: out of memory", d->index);
    }
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
    return (x->sample > y->sample) - (x->sample < y->sample);
}

/* b->order: the rows of each sentence together, its samples in order. */
static void order_rows(serve_batch *b)
{
    for (int r = 0; r < b->rows; r++)
        b->order[r] = (serve_row_key){b->now.owner[r]->serial, b->now.sample[r], r};
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
        b->charged += serve_charge(b->max_batch, d->rows.samples);
        b->now.owner[b->rows] = d;
        b->now.sample[b->rows] = 0;
        b->now.tokens[b->rows++] = bos;
    }
    return s;
}

/* The choice of each row, in b->order (ted_row_plan): the token its
 * prefix forces, the best allowed token, or a draw from its sentence's
 * generator (at the sentence's first step, the first token of every
 * sample). */
static void plan_choices(serve_batch *b)
{
    int drawn = 0;
    for (int k = 0; k < b->rows; k++) {
        int r = b->order[k].row;
        b->choices[k] = ted_row_plan(&b->now.owner[r]->rows, b->now.sample[r], r,
                                     b->tokens + drawn, b->log_probs + drawn);
        drawn += b->choices[k].draws;
    }
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

/* A sentence whose client left stops: its samples leave the batch at this
 * step, and it is dropped once the last of them has (take_tokens). */
static void check_cancelled(serve_sentence *d)
{
    if (!d->failure.status && !d->dropped && serve_job_is_cancelled(d->job)) {
        serve_job_cancelled_error(&d->failure, d->index);
        d->dropped = true;
    }
}

/* Appends a choice's tokens to its samples (ted_row_take; a streamed
 * sentence of one hypothesis hands its token to job->progress). The
 * samples that go on are kept for the next step; returns how many are
 * kept so far. The others end, and the sentence with them once its last
 * sample has. */
static int take_tokens(serve_batch *b, const ted_choice *ch, int kept)
{
    serve_sentence *d = b->now.owner[ch->row];
    int from = kept, token = ch->tokens[0];
    check_cancelled(d);
    if (!d->failure.status)
        ted_row_take(&d->rows, b->now.sample[ch->row], ch,
                     (ted_rows_next){b->keep, b->next.sample, b->next.tokens}, &kept,
                     &d->failure);
    if (!d->failure.status && token != d->rows.eos && d->rows.samples == 1 && d->job->progress)
        d->job->progress(d->job, d->index, token);
    for (int k = from; k < kept; k++)
        b->next.owner[k] = d;
    for (int ended = ch->draws - (kept - from); ended > 0; ended--) {
        b->charged -= serve_charge(b->max_batch, d->unfinished) -
                      serve_charge(b->max_batch, d->unfinished - 1);
        if (--d->unfinished == 0) {  /* its last sample still decoding ended */
            end_sentence(b, d);
            break;
        }
    }
    return kept;
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
 * places of the rows that ended. */
static void arrange(serve_batch *b, int kept)
{
    if (repeats_a_row(b, kept))
        return;
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
        b->spare.sample[place] = b->next.sample[k];
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
}

/* The step's time and rows, and the tokens chosen, counted before any
 * sentence that ended is answered. */
static void count_step(const serve_batch *b, double start)
{
    unsigned long long chosen = 0;
    for (int k = 0; k < b->rows; k++)
        chosen += (unsigned long long)b->choices[k].draws;
    atomic_fetch_add_explicit(&b->metrics->tokens, chosen, memory_order_relaxed);
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
    if (ted_session_step(b->session, b->now.tokens, &logits, &err)) {
        fail_rows(b, &err);
        return;
    }
    int kept = 0;
    order_rows(b);
    plan_choices(b);
    ted_choose(&b->chooser, logits, b->choices, b->rows);
    count_step(b, start);
    for (int k = 0; k < b->rows; k++)
        kept = take_tokens(b, &b->choices[k], kept);
    arrange(b, kept);
    serve_row_set swap = b->now;
    b->now = b->next;
    b->next = swap;
    bool same = ted_rows_keep_all(b->keep, kept, b->rows);
    b->rows = kept;
    if (kept == 0)
        ted_session_empty(b->session);
    else if (!same && ted_session_select(b->session, b->keep, kept, &err))
        fail_rows(b, &err);
}

void serve_batch_free(serve_batch *b)
{
    ted_session_free(b->session);
    free(b->now.owner), free(b->now.sample), free(b->now.tokens);
    free(b->next.owner), free(b->next.sample), free(b->next.tokens);
    free(b->spare.owner), free(b->spare.sample), free(b->spare.tokens);
    free(b->keep), free(b->spare_keep), free(b->kept), free(b->order);
    free(b->choices), free(b->tokens), free(b->log_probs);
    ted_chooser_free(&b->chooser);
}

static ted_status new_rows(serve_row_set *r, int capacity, ted_error *err)
{
    r->owner = ted_alloc(capacity, sizeof *r->owner, "batch rows", err);
    r->sample = ted_alloc(capacity, sizeof *r->sample, "batch rows", err);
    r->tokens = ted_alloc(capacity, sizeof *r->tokens, "batch rows", err);
    return r->owner && r->sample && r->tokens ? TED_OK : TED_ERR_NOMEM;
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
    b->choices = ted_alloc(rows, sizeof *b->choices, "batch rows", err);
    b->tokens = ted_alloc(rows, sizeof *b->tokens, "batch rows", err);
    b->log_probs = ted_alloc(rows, sizeof *b->log_probs, "batch rows", err);
    bool all = b->keep && b->spare_keep && b->kept && b->order && b->choices && b->tokens &&
               b->log_probs;
    if (!s && !all)
        s = TED_ERR_NOMEM;
    return s ? s : ted_chooser_init(&b->chooser, m, true, err);
}
