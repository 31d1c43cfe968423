/* A model's decoding loops (serve/loop.h). */
#include "serve/loop.h"

#include <errno.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/cpus.h"
#include "core/error.h"
#include "frontend/options.h"
#include "model/rows.h"
#include "model/session_hooks.h"
#include "serve/beam_worker.h"
#include "serve/metrics.h"

/* Sentence `index` of `job`, waiting to join the batch. */
typedef struct waiting {
    serve_job *job;
    int index;
} waiting;

/* One sentence in the running batch. */
typedef struct decoding {
    serve_job *job;
    long serial;        /* the order it joined in */
    int index;          /* in its job */
    int unfinished;     /* samples still decoding */
    bool dropped;       /* its client left (serve_job_cancel) */
    ted_row_sentence rows;  /* its samples, their rules and their tokens so far; its
                             * generator is stream `index` of the job's seed */
    ted_error failure;  /* status TED_OK, or why its samples stop: it fails once the
                         * last of them leaves the batch */
} decoding;

/* Rows of the batch: row r decodes sample sample[r] of owner[r] and feeds
 * tokens[r] at the next step. */
typedef struct row_set {
    decoding **owner;
    int *sample;
    int *tokens;
} row_set;

/* A row, by the sentence it decodes (the order it joined in) and its
 * sample: the order in which the rows choose their tokens, so that a
 * sentence's samples draw from its generator in their own order. */
typedef struct row_key {
    long serial;
    int sample;
    int row;
} row_key;

/* Sentences encoded together by the encoding thread, in a session of
 * their own, on their way into the batch (ted_session_join). */
typedef struct group {
    ted_session *session;
    decoding **sentences;   /* (max_batch) */
    const int **ids;        /* (max_batch): their source ids */
    int *lengths;           /* (max_batch) */
    int count;              /* sentences */
    int rows;               /* the rows they take in the batch: one per sample */
    struct group *next;     /* in the ready or the free list */
} group;

/* Two groups: one is encoded while the other waits for the next step. */
enum { GROUPS = 2 };

/* The source tokens of the sentences encoded together, at most (a single
 * longer sentence alone): without an encoding thread, the batch waits for
 * each group's encoder pass, so a burst of arrivals is encoded a part at a
 * time, a step between two parts. */
enum { ENCODE_TOKENS = 256 };

/* What the batching thread owns: the session and its rows. */
typedef struct batch {
    const ted_model *model;
    ted_session *session;
    int rows;
    int max_batch;
    int charged;            /* the rows its sentences count against max_batch (charge()) */
    long joined;            /* sentences that joined so far */
    row_set now, next;      /* (row_capacity) each: this step's rows, those that go on */
    row_set spare;          /* (row_capacity): for arrange() */
    int *keep;              /* (row_capacity): the old row of each row that goes on */
    int *spare_keep;        /* (row_capacity) */
    unsigned char *kept;    /* (row_capacity): old rows seen in keep, for arrange() */
    row_key *order;         /* (row_capacity): the rows in the order they choose */
    ted_choice *choices;    /* (row_capacity): in that order */
    int *tokens;            /* (row_capacity): what the choices chose */
    float *log_probs;       /* (row_capacity) */
    ted_chooser chooser;
} batch;

struct serve_loop {
    const ted_model *model;
    int max_batch, max_queue;
    bool overlap;               /* an encoding thread beside the batching thread: there
                                 * is a CPU beyond the pool's threads */
    int side_threads;           /* the encoding thread's: as many as the pool's, within
                                 * the CPUs beyond them */
    pthread_mutex_t lock;
    pthread_cond_t encode_work; /* a sentence arrived, a group or rows were freed, or stop */
    pthread_cond_t batch_work;  /* a group was encoded, the encoding thread ended, or
                                 * (without one) a sentence arrived */
    waiting *queue;             /* (max_queue): a ring of sentences waiting to be encoded */
    int first, waiting;
    int passed;                 /* sentences taken ahead of the first waiting one */
    waiting *queue_taken;       /* (max_batch): the encoding thread's next sentences */
    group groups[GROUPS];
    group *free_groups, *ready_first, *ready_last;
    int decoding_rows;          /* the rows the batch's sentences count (charge()), as of
                                 * its last step or join */
    int encoding_rows;          /* the rows the groups being encoded or ready count */
    int held;                   /* sentences submitted and not yet done */
    long dropped;               /* sentences dropped because their client left */
    bool stopping, encoding_ended;
    serve_loop_metrics metrics;
    batch batch;
    serve_beam_worker beam;
    pthread_t encoding, batching;
};

static int samples_of(const serve_job *job)
{
    return ted_row_samples(&job->options.decode);
}

/* The rows a sentence with `samples` rows counts against max_batch: each
 * of them, but never more than three quarters of max_batch, so that a
 * quarter stays free for other sentences while it decodes (its samples
 * cannot be split: they draw from one generator in a fixed order). */
static int charge(int max_batch, int samples)
{
    int most = max_batch - max_batch / 4;
    return samples < most ? samples : most;
}

/* `sentences` of `job` are done, translated or failed (`err`, or NULL):
 * the job is answered once all of its sentences are, by the thread that
 * finished the last one (the encoding, batching and beam search threads
 * may each finish sentences of one job). */
static void sentences_done(void *loop, serve_job *job, int sentences, const ted_error *err)
{
    serve_loop *l = loop;
    atomic_ullong *outcome = !err                          ? &l->metrics.translated
                             : serve_job_is_cancelled(job) ? &l->metrics.dropped
                                                           : &l->metrics.failed;
    atomic_fetch_add_explicit(outcome, (unsigned long long)sentences, memory_order_relaxed);
    pthread_mutex_lock(&l->lock);
    if (err)
        serve_job_fail(job, err);
    l->held -= sentences;
    job->unfinished -= sentences;
    bool answered = job->unfinished == 0;
    pthread_mutex_unlock(&l->lock);
    if (answered)
        job->done(job, job->done_data);
}

/* ---- sentences of the batch --------------------------------------------- */

static void free_decoding(decoding *d)
{
    ted_hypotheses_free(d->rows.found, d->rows.samples);
    free(d->rows.found);
    free(d->rows.room);
    free(d);
}

static decoding *new_decoding(const ted_model *m, waiting w, ted_error *err)
{
    serve_job *job = w.job;
    decoding *d = ted_alloc(1, sizeof *d, "sentence", err);
    if (!d)
        return NULL;
    *d = (decoding){.job = job, .index = w.index};
    d->rows = (ted_row_sentence){
        .max_length = ted_max_target_length(m, job->lengths[w.index], job->options.max_length),
        .prefix_ids = job->prefix_ids[w.index],
        .prefix_length = job->prefix_lengths[w.index],
        .scored = job->log_probs,
    };
    ted_row_sentence_start(&d->rows, m, &job->options.decode,
                           job->options.first_index + (uint64_t)w.index);
    int samples = d->unfinished = d->rows.samples;
    d->rows.found = ted_alloc(samples, sizeof *d->rows.found, "sentence", err);
    d->rows.room = ted_alloc(samples, sizeof *d->rows.room, "sentence", err);
    if (!d->rows.found || !d->rows.room) {
        free_decoding(d);
        return NULL;
    }
    return d;
}

/* A sentence whose samples have all ended: its hypotheses, best first,
 * become its translations. */
static void finish(serve_loop *l, decoding *d)
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
    free_decoding(d);
    sentences_done(l, job, 1, s ? &err : NULL);
}

/* A sentence of a job whose client left, dropped (serve_job_cancel). */
static void drop_sentence(serve_loop *l, serve_job *job, int index)
{
    ted_error err = {0};
    serve_job_cancelled_error(&err, index);
    pthread_mutex_lock(&l->lock);
    l->dropped++;
    pthread_mutex_unlock(&l->lock);
    sentences_done(l, job, 1, &err);
}

static void fail_sentence(serve_loop *l, decoding *d, const ted_error *err)
{
    serve_job *job = d->job;
    free_decoding(d);
    sentences_done(l, job, 1, err);
}

/* A sentence whose samples have all ended: translated, failed, or dropped
 * (its client left). */
static void end_sentence(serve_loop *l, decoding *d)
{
    ted_error failure = d->failure;  /* d is freed */
    if (d->dropped) {
        serve_job *job = d->job;
        int index = d->index;
        free_decoding(d);
        drop_sentence(l, job, index);
    } else if (failure.status) {
        fail_sentence(l, d, &failure);
    } else {
        finish(l, d);
    }
}

static int by_sentence(const void *a, const void *b)
{
    const row_key *x = a, *y = b;
    if (x->serial != y->serial)
        return x->serial < y->serial ? -1 : 1;
    return (x->sample > y->sample) - (x->sample < y->sample);
}

/* b->order: the rows of each sentence together, its samples in order. */
static void order_rows(batch *b)
{
    for (int r = 0; r < b->rows; r++)
        b->order[r] = (row_key){b->now.owner[r]->serial, b->now.sample[r], r};
    qsort(b->order, b->rows, sizeof *b->order, by_sentence);
}

/* Every sentence of the batch fails (the session could not step). */
static void fail_rows(serve_loop *l, batch *b, const ted_error *err)
{
    order_rows(b);
    for (int k = 0; k < b->rows; k++)
        if (k == 0 || b->order[k].serial != b->order[k - 1].serial)
            fail_sentence(l, b->now.owner[b->order[k].row], err);
    b->rows = b->charged = 0;
    ted_session_empty(b->session);
}

/* ---- the encoding thread ---------------------------------------------------- */

/* Sentence k of the queue (0: the first waiting), out of it: the ones
 * before it move up one place. */
static waiting remove_waiting(serve_loop *l, int k)
{
    waiting w = l->queue[(l->first + k) % l->max_queue];
    for (int j = k; j > 0; j--)
        l->queue[(l->first + j) % l->max_queue] = l->queue[(l->first + j - 1) % l->max_queue];
    l->first = (l->first + 1) % l->max_queue;
    l->waiting--;
    return w;
}

/* The admission policy (docs/serving.md#what-ted-refuses). Every row
 * counts against --max-batch, one per sample (charge()): the batch's own
 * and those of the groups on their way. Sentences are taken in arrival
 * order while their rows fit the free rows. One that does not fit waits,
 * and later ones that fit go ahead of it, but the first waiting sentence
 * is passed by at most max_batch of them: then nothing more is taken until
 * it fits, so it never starves. A group holds up to ENCODE_TOKENS source
 * tokens; the sentences past them wait for the next group. Returns how
 * many, into `taken` (the rows they count into *rows_taken). */
static int choose_waiting(serve_loop *l, waiting *taken, int *rows_taken)
{
    int room = l->max_batch - l->decoding_rows - l->encoding_rows;
    int count = 0, rows = 0, k = 0, tokens = 0;
    while (k < l->waiting && count < l->max_batch && rows < room) {
        waiting w = l->queue[(l->first + k) % l->max_queue];
        const serve_job *job = w.job;
        int samples = charge(l->max_batch, samples_of(job));
        if (count > 0 && tokens + job->lengths[w.index] > ENCODE_TOKENS)
            break;
        if (rows + samples > room) {
            if (k == 0 && l->passed >= l->max_batch)
                break;  /* the first sentence has waited long enough */
            k++;
            continue;
        }
        if (k == 0)
            l->passed = 0;
        else if (l->passed < INT_MAX)
            l->passed++;
        taken[count++] = remove_waiting(l, k);
        rows += samples;
        tokens += job->lengths[w.index];
    }
    *rows_taken = rows;
    return count;
}

/* With l->lock held: the sentences that choose_waiting() admits, into a
 * free group (*into). Returns how many (0: none, or no free group). */
static int take_waiting(serve_loop *l, waiting *taken, group **into, int *rows_taken)
{
    int count = l->waiting > 0 && l->free_groups ? choose_waiting(l, taken, rows_taken) : 0;
    if (count > 0) {
        *into = l->free_groups;
        l->free_groups = (*into)->next;
        l->encoding_rows += *rows_taken;
    }
    return count;
}

/* Waits for sentences and a free group, then takes them (take_waiting).
 * Returns how many, into `taken` (their rows into *rows), or -1 once the
 * loop stops with nothing left to encode. */
static int take_to_encode(serve_loop *l, waiting *taken, group **into, int *rows_taken)
{
    pthread_mutex_lock(&l->lock);
    int count = 0;
    for (;;) {
        if ((count = take_waiting(l, taken, into, rows_taken)) > 0)
            break;
        if (l->stopping && l->waiting == 0) {
            count = -1;
            break;
        }
        pthread_cond_wait(&l->encode_work, &l->lock);
    }
    pthread_mutex_unlock(&l->lock);
    return count;
}

/* The taken sentences, encoded together into the group's session; a
 * sentence that cannot be is answered with its failure. */
static void encode_group(serve_loop *l, group *g, const waiting *taken, int count)
{
    int max_steps = 0;
    ted_error err = {0};
    g->count = g->rows = 0;
    for (int k = 0; k < count; k++) {
        if (serve_job_is_cancelled(taken[k].job)) {
            drop_sentence(l, taken[k].job, taken[k].index);
            continue;
        }
        decoding *d = new_decoding(l->model, taken[k], &err);
        if (!d) {
            sentences_done(l, taken[k].job, 1, &err);
            continue;
        }
        g->sentences[g->count] = d;
        g->ids[g->count] = d->job->ids[d->index];
        g->lengths[g->count++] = d->job->lengths[d->index];
        g->rows += charge(l->max_batch, d->rows.samples);
        max_steps = d->rows.max_length > max_steps ? d->rows.max_length : max_steps;
    }
    if (g->count == 0)
        return;
    double start = ted_seconds();
    ted_status s = ted_session_encode(g->session, g->ids, g->lengths, g->count, max_steps, &err);
    serve_histogram_observe(&l->metrics.encode_seconds, ted_seconds() - start);
    if (s) {
        for (int k = 0; k < g->count; k++)
            fail_sentence(l, g->sentences[k], &err);
        g->count = g->rows = 0;
    }
}

/* The group joins the queue of encoded groups, or goes back to the free
 * ones when none of its sentences could be encoded. */
static void publish_group(serve_loop *l, group *g, int taken_rows)
{
    pthread_mutex_lock(&l->lock);
    l->encoding_rows -= taken_rows - g->rows;
    g->next = NULL;
    if (g->count > 0) {
        *(l->ready_last ? &l->ready_last->next : &l->ready_first) = g;
        l->ready_last = g;
        pthread_cond_signal(&l->batch_work);
    } else {
        g->next = l->free_groups;
        l->free_groups = g;
    }
    pthread_mutex_unlock(&l->lock);
}

/* Encodes newcomers while the batching thread steps the batch, so a step
 * never waits for an encoder pass (l->overlap), on threads of its own
 * (l->side_threads). Their number stops at the pool's: the instances of a
 * machine shared out by --threads then keep to about their share. */
static void *encoding_main(void *arg)
{
    serve_loop *l = arg;
    ted_session_compute_beside(l->side_threads);
    waiting *taken = l->queue_taken;
    group *g;
    int count, rows;
    /* rows counted when taken: a job may be answered (and freed) while its
     * sentences are encoded, when one cannot be */
    while ((count = take_to_encode(l, taken, &g, &rows)) >= 0) {
        encode_group(l, g, taken, count);
        publish_group(l, g, rows);
    }
    pthread_mutex_lock(&l->lock);
    l->encoding_ended = true;
    pthread_cond_signal(&l->batch_work);
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

/* ---- the batching thread ---------------------------------------------------- */

/* Nothing decodes and nothing is on its way: the heap pages that the
 * sessions' buffers (released by take_encoded) and the sentences'
 * hypotheses held go back to the system, which glibc does not do for
 * pages below the top of its heap. A burst of work then does not leave
 * the server at its largest size; a batch that empties and refills under
 * load keeps its buffers (ted_session_empty) instead. */
enum { IDLE_MS = 200 };

static void give_back_memory(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* glibc sets its allocator up at the first malloc, or at the first
 * malloc_trim where another allocator serves malloc (AddressSanitizer's,
 * or one preloaded), and that setup is not safe on two threads at once:
 * the loops' threads trim when idle, so the first trim runs here, on the
 * thread that starts them, before any of them does. */
static void set_up_allocator(void)
{
    give_back_memory();
}

/* Waits for work, then takes every encoded group. Returns the groups (a
 * list), or NULL with *stop set once the loop stops with nothing left.
 * Without an encoding thread, sentences waiting are work too (NULL is
 * returned for encode_here()). */
static group *take_encoded(serve_loop *l, batch *b, bool *stop)
{
    pthread_mutex_lock(&l->lock);
    bool given_back = false;
    while (b->rows == 0 && !l->ready_first && !(l->stopping && l->encoding_ended) &&
           !(!l->overlap && l->waiting > 0)) {
        if (given_back || l->encoding_rows > 0 || l->waiting > 0) {
            pthread_cond_wait(&l->batch_work, &l->lock);
            continue;
        }
        /* idle: the memory goes back once the loop has been idle for IDLE_MS,
         * not between the requests of a steady client */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += IDLE_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        if (pthread_cond_timedwait(&l->batch_work, &l->lock, &until) == ETIMEDOUT) {
            given_back = true;
            ted_session_release(b->session);
            for (group *g = l->free_groups; g; g = g->next)
                ted_session_release(g->session);  /* every group is free: none encodes */
            pthread_mutex_unlock(&l->lock);
            give_back_memory();
            pthread_mutex_lock(&l->lock);
        }
    }
    group *ready = l->ready_first;
    l->ready_first = l->ready_last = NULL;
    *stop = b->rows == 0 && !ready && l->waiting == 0;
    pthread_mutex_unlock(&l->lock);
    return ready;
}

/* The group's sentences join: rows of the batch from the next step on,
 * each feeding BOS first. The batch keeps its own session, whose buffers
 * grow with its rows and steps; when its last row ends it keeps them for
 * the next rows (ted_session_empty), and gives them back once the loop is
 * idle (take_encoded). */
static void absorb(serve_loop *l, batch *b, group *g)
{
    ted_error err = {0};
    ted_status s = ted_session_join(b->session, g->session, &err);
    int bos = ted_model_config(b->model)->decoder_start_id;
    for (int k = 0; k < g->count; k++) {
        decoding *d = g->sentences[k];
        if (s) {
            fail_sentence(l, d, &err);
            continue;
        }
        d->serial = b->joined++;
        b->charged += charge(b->max_batch, d->rows.samples);
        b->now.owner[b->rows] = d;
        b->now.sample[b->rows] = 0;
        b->now.tokens[b->rows++] = bos;
    }
    pthread_mutex_lock(&l->lock);
    l->encoding_rows -= g->rows;
    l->decoding_rows += s ? 0 : g->rows;
    g->next = l->free_groups;
    l->free_groups = g;
    pthread_cond_signal(&l->encode_work);
    pthread_mutex_unlock(&l->lock);
}

/* The rows the batch holds now, for the encoding thread's next group. */
static void publish_rows(serve_loop *l, const batch *b)
{
    pthread_mutex_lock(&l->lock);
    bool freed = b->charged < l->decoding_rows;
    l->decoding_rows = b->charged;
    if (freed)
        pthread_cond_signal(&l->encode_work);
    pthread_mutex_unlock(&l->lock);
}

/* The choice of each row, in b->order (ted_row_plan): the token its
 * prefix forces, the best allowed token, or a draw from its sentence's
 * generator (at the sentence's first step, the first token of every
 * sample). */
static void plan_choices(batch *b)
{
    int drawn = 0;
    for (int k = 0; k < b->rows; k++) {
        int r = b->order[k].row;
        b->choices[k] = ted_row_plan(&b->now.owner[r]->rows, b->now.sample[r], r,
                                     b->tokens + drawn, b->log_probs + drawn);
        drawn += b->choices[k].draws;
    }
}

/* A sentence whose client left stops: its samples leave the batch at this
 * step, and it is dropped once the last of them has (take_tokens). */
static void check_cancelled(decoding *d)
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
static int take_tokens(serve_loop *l, batch *b, const ted_choice *ch, int kept)
{
    decoding *d = b->now.owner[ch->row];
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
        b->charged -= charge(b->max_batch, d->unfinished) -
                      charge(b->max_batch, d->unfinished - 1);
        if (--d->unfinished == 0) {  /* its last sample still decoding ended */
            end_sentence(l, d);
            break;
        }
    }
    return kept;
}

/* True when some old row goes on twice: a sentence's first step, which
 * repeats its row once per sample. */
static bool repeats_a_row(batch *b, int kept)
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
static void arrange(batch *b, int kept)
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
    row_set rows = b->next;
    b->next = b->spare;
    b->spare = rows;
    int *keep = b->keep;
    b->keep = b->spare_keep;
    b->spare_keep = keep;
}

/* The step's time and rows, and the tokens chosen, counted before any
 * sentence that ended is answered. */
static void count_step(serve_loop *l, const batch *b, double start)
{
    unsigned long long chosen = 0;
    for (int k = 0; k < b->rows; k++)
        chosen += (unsigned long long)b->choices[k].draws;
    atomic_fetch_add_explicit(&l->metrics.tokens, chosen, memory_order_relaxed);
    serve_histogram_observe(&l->metrics.step_seconds, ted_seconds() - start);
    serve_histogram_observe(&l->metrics.step_rows, b->rows);
}

/* One decoder step for every row; the rows whose sample ended leave. */
static void step(serve_loop *l, batch *b)
{
    const float *logits;
    ted_error err = {0};
    double start = ted_seconds();
    if (ted_session_step(b->session, b->now.tokens, &logits, &err)) {
        fail_rows(l, b, &err);
        return;
    }
    int kept = 0;
    order_rows(b);
    plan_choices(b);
    ted_choose(&b->chooser, logits, b->choices, b->rows);
    count_step(l, b, start);
    for (int k = 0; k < b->rows; k++)
        kept = take_tokens(l, b, &b->choices[k], kept);
    arrange(b, kept);
    row_set swap = b->now;
    b->now = b->next;
    b->next = swap;
    bool same = ted_rows_keep_all(b->keep, kept, b->rows);
    b->rows = kept;
    if (kept == 0)
        ted_session_empty(b->session);
    else if (!same && ted_session_select(b->session, b->keep, kept, &err))
        fail_rows(l, b, &err);
}

/* Without an encoding thread (!l->overlap): the batching thread encodes
 * the sentences waiting between two steps, with every thread of the pool,
 * up to ENCODE_TOKENS of them a step. */
static void encode_here(serve_loop *l)
{
    group *g;
    int rows;
    pthread_mutex_lock(&l->lock);
    int count = take_waiting(l, l->queue_taken, &g, &rows);
    pthread_mutex_unlock(&l->lock);
    if (count > 0) {
        encode_group(l, g, l->queue_taken, count);
        publish_group(l, g, rows);
    }
}

static void *batching_main(void *arg)
{
    serve_loop *l = arg;
    batch *b = &l->batch;
    bool stop = false;
    for (;;) {
        if (!l->overlap)
            encode_here(l);
        group *ready = take_encoded(l, b, &stop);
        if (stop)
            break;
        while (ready) {
            group *next = ready->next;
            absorb(l, b, ready);
            ready = next;
        }
        if (b->rows > 0)
            step(l, b);
        publish_rows(l, b);
    }
    return NULL;
}

/* ---- the loop --------------------------------------------------------------- */

serve_admission serve_loop_submit(serve_loop *l, serve_job *job)
{
    int sentences = job->unfinished;
    if (sentences > l->max_queue)
        return SERVE_TOO_MANY;
    pthread_mutex_lock(&l->lock);
    serve_admission admission = SERVE_QUEUE_FULL;
    if (l->held + sentences <= l->max_queue) {
        admission = SERVE_ACCEPTED;
        l->held += sentences;
        job->next = NULL;
        if (job->options.decode.strategy == TED_DECODE_BEAM) {
            serve_beam_submit(&l->beam, job);
        } else {
            for (int i = 0; i < job->count; i++)
                if (serve_job_pending(job, i))
                    l->queue[(l->first + l->waiting++) % l->max_queue] = (waiting){job, i};
            pthread_cond_signal(l->overlap ? &l->encode_work : &l->batch_work);
        }
    }
    pthread_mutex_unlock(&l->lock);
    return admission;
}

const serve_loop_metrics *serve_loop_metrics_of(const serve_loop *l)
{
    return &l->metrics;
}

void serve_loop_stats(serve_loop *l, serve_loop_counts *counts)
{
    pthread_mutex_lock(&l->lock);
    *counts = (serve_loop_counts){.rows = l->decoding_rows, .encoding_rows = l->encoding_rows,
                                  .waiting = l->waiting, .held = l->held,
                                  .dropped = l->dropped};
    pthread_mutex_unlock(&l->lock);
}

static void free_batch(batch *b)
{
    ted_session_free(b->session);
    free(b->now.owner), free(b->now.sample), free(b->now.tokens);
    free(b->next.owner), free(b->next.sample), free(b->next.tokens);
    free(b->spare.owner), free(b->spare.sample), free(b->spare.tokens);
    free(b->keep), free(b->spare_keep), free(b->kept), free(b->order);
    free(b->choices), free(b->tokens), free(b->log_probs);
    ted_chooser_free(&b->chooser);
}

static ted_status new_rows(row_set *r, int capacity, ted_error *err)
{
    r->owner = ted_alloc(capacity, sizeof *r->owner, "batch rows", err);
    r->sample = ted_alloc(capacity, sizeof *r->sample, "batch rows", err);
    r->tokens = ted_alloc(capacity, sizeof *r->tokens, "batch rows", err);
    return r->owner && r->sample && r->tokens ? TED_OK : TED_ERR_NOMEM;
}

/* Rows: a batch holds up to max_batch rows, or one sentence's samples
 * beside a quarter of max_batch rows of others (charge()). */
static ted_status new_batch(batch *b, const ted_model *m, int max_batch, ted_error *err)
{
    int big = FRONTEND_N_BEST_MAX + max_batch / 4;
    int rows = max_batch > big ? max_batch : big;
    b->model = m;
    b->max_batch = max_batch;
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

static void free_group(group *g)
{
    ted_session_free(g->session);
    free(g->sentences), free(g->ids), free(g->lengths);
}

static ted_status new_group(group *g, const ted_model *m, int max_batch, ted_error *err)
{
    ted_status s = ted_session_new(m, &g->session, err);
    g->sentences = ted_alloc(max_batch, sizeof *g->sentences, "encoding group", err);
    g->ids = ted_alloc(max_batch, sizeof *g->ids, "encoding group", err);
    g->lengths = ted_alloc(max_batch, sizeof *g->lengths, "encoding group", err);
    return s ? s : g->sentences && g->ids && g->lengths ? TED_OK : TED_ERR_NOMEM;
}

/* The groups, all free, and the encoding thread's list of taken sentences. */
static ted_status new_groups(serve_loop *l, ted_error *err)
{
    ted_status s = TED_OK;
    for (int k = 0; k < GROUPS && !s; k++) {
        s = new_group(&l->groups[k], l->model, l->max_batch, err);
        l->groups[k].next = l->free_groups;
        l->free_groups = &l->groups[k];
    }
    l->queue_taken = ted_alloc(l->max_batch, sizeof *l->queue_taken, "decoding queue", err);
    return s ? s : l->queue_taken ? TED_OK : TED_ERR_NOMEM;
}

static void free_loop(serve_loop *l)
{
    free_batch(&l->batch);
    for (int k = 0; k < GROUPS; k++)
        free_group(&l->groups[k]);
    free(l->queue);
    free(l->queue_taken);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->encode_work);
    pthread_cond_destroy(&l->batch_work);
    free(l);
}

/* Stops the threads started (beam search's, and the encoding and the
 * batching thread where `encoding` and `batching`). What waits is encoded
 * and decoded, then they end. */
static void join_threads(serve_loop *l, bool encoding, bool batching)
{
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    if (!encoding)
        l->encoding_ended = true;
    pthread_cond_broadcast(&l->encode_work);
    pthread_cond_broadcast(&l->batch_work);
    pthread_mutex_unlock(&l->lock);
    serve_beam_stop(&l->beam);
    if (encoding)
        pthread_join(l->encoding, NULL);
    if (batching)
        pthread_join(l->batching, NULL);
}

/* The beam search thread, the encoding thread (l->overlap) and the
 * batching thread; on failure, those started are stopped. */
static ted_status start_threads(serve_loop *l, ted_error *err)
{
    ted_status s = serve_beam_start(&l->beam, &l->lock, sentences_done, l, err);
    if (s) {
        join_threads(l, false, false);
        return s;
    }
    bool encoding = l->overlap && !pthread_create(&l->encoding, NULL, encoding_main, l);
    bool batching = (encoding || !l->overlap) &&
                    !pthread_create(&l->batching, NULL, batching_main, l);
    if (batching)
        return TED_OK;
    join_threads(l, encoding, false);
    return ted_fail(err, TED_ERR_NOMEM, "cannot start the decoding threads");
}

ted_status serve_loop_start(const ted_model *model, int max_batch, int max_queue, int threads,
                            serve_loop **out, ted_error *err)
{
    *out = NULL;
    serve_loop *l = ted_alloc(1, sizeof *l, "decoding loop", err);
    if (!l)
        return TED_ERR_NOMEM;
    int spare = ted_usable_cpus() - threads;  /* the CPUs beyond the pool's */
    *l = (serve_loop){.model = model, .max_batch = max_batch, .max_queue = max_queue,
                      .overlap = spare > 0, .side_threads = spare < threads ? spare : threads};
    l->encoding_ended = !l->overlap;
    serve_loop_metrics_init(&l->metrics);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->encode_work, NULL);
    pthread_cond_init(&l->batch_work, NULL);
    l->queue = ted_alloc(max_queue, sizeof *l->queue, "decoding queue", err);
    ted_status s = l->queue ? new_batch(&l->batch, model, max_batch, err) : TED_ERR_NOMEM;
    if (!s)
        s = new_groups(l, err);
    if (!s) {
        set_up_allocator();
        s = start_threads(l, err);
    }
    if (s) {
        free_loop(l);
        return s;
    }
    *out = l;
    return TED_OK;
}

void serve_loop_stop(serve_loop *l)
{
    if (!l)
        return;
    join_threads(l, l->overlap, true);
    free_loop(l);
}
