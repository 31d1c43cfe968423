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

#include "serve/batch.h"
#include "serve/beam_worker.h"
#include "serve/metrics.h"
#include "ted/util.h"

/* Sentence `index` of `job`, waiting to join the batch. */
typedef struct waiting {
    serve_job *job;
    int index;
} waiting;

/* Sentences encoded together by the encoding thread, in a session of
 * their own, on their way into the batch (ted_session_join). */
typedef struct group {
    ted_session *session;
    serve_sentence **sentences;  /* (max_batch) */
    const int **ids;             /* (max_batch): their source ids */
    int *lengths;                /* (max_batch) */
    int count;                   /* sentences */
    int rows;                    /* the rows they take in the batch: one per sample */
    struct group *next;          /* in the ready or the free list */
} group;

/* Two groups: one is encoded while the other waits for the next step. */
enum { GROUPS = 2 };

/* The source tokens of the sentences encoded together, at most (a single
 * longer sentence alone): without an encoding thread, the batch waits for
 * each group's encoder pass, so a burst of arrivals is encoded a part at a
 * time, a step between two parts. */
enum { ENCODE_TOKENS = 256 };

/* What the loop holds: the queue and the groups that the encoding thread
 * fills, under `lock`, and the batch that the batching thread steps. */
struct serve_loop {
    const ted_model *model;
    int max_batch, max_queue;
    bool overlap;               /* an encoding thread beside the batching thread: there
                                 * is a CPU beyond the pool's threads */
    ted_threads *pool;          /* the batching and beam search threads' (--threads) */
    ted_threads *side_pool;     /* the encoding thread's (overlap): as many threads as
                                 * the pool's, within the CPUs beyond them */
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
    int decoding_rows;          /* the rows the batch's sentences count (serve_charge),
                                 * as of its last step or join */
    int encoding_rows;          /* the rows the groups being encoded or ready count */
    int held;                   /* sentences submitted and not yet done */
    long dropped;               /* sentences dropped because their client left */
    bool stopping, encoding_ended;
    serve_loop_metrics metrics;
    serve_batch batch;
    serve_beam_worker beam;
    pthread_t encoding, batching;
};

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
    if (answered && job->status && serve_job_is_cancelled(job))
        atomic_fetch_add_explicit(&l->metrics.abandoned, 1, memory_order_relaxed);
    if (answered)
        job->done(job, job->done_data);
}

/* A sentence of a job whose client left, dropped (serve_job_cancel). */
static void drop_sentence(void *loop, serve_job *job, int index)
{
    serve_loop *l = loop;
    ted_error err = {0};
    serve_job_cancelled_error(&err, index);
    pthread_mutex_lock(&l->lock);
    l->dropped++;
    pthread_mutex_unlock(&l->lock);
    sentences_done(l, job, 1, &err);
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
 * counts against --max-batch, one per sample (serve_charge): the batch's own
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
        int samples = serve_charge(l->max_batch, ted_row_samples(&job->options.decode));
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
        if (serve_job_left(taken[k].job)) {
            drop_sentence(l, taken[k].job, taken[k].index);
            continue;
        }
        serve_sentence *d = serve_sentence_new(l->model, taken[k].job, taken[k].index, &err);
        if (!d) {
            sentences_done(l, taken[k].job, 1, &err);
            continue;
        }
        g->sentences[g->count] = d;
        g->ids[g->count] = d->job->ids[d->index];
        g->lengths[g->count++] = d->job->lengths[d->index];
        g->rows += serve_charge(l->max_batch, d->samples);
        max_steps = d->max_length > max_steps ? d->max_length : max_steps;
    }
    if (g->count == 0)
        return;
    double start = ted_seconds();
    ted_status s = ted_session_encode(g->session, g->ids, g->lengths, g->count, max_steps, &err);
    serve_histogram_observe(&l->metrics.encode_seconds, ted_seconds() - start);
    if (s) {
        for (int k = 0; k < g->count; k++)
            serve_batch_fail(&l->batch, g->sentences[k], &err);
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
 * (l->side_pool). Their number stops at the pool's: the instances of a
 * machine shared out by --threads then keep to about their share. */
static void *encoding_main(void *arg)
{
    serve_loop *l = arg;
    ted_threads_use(l->side_pool);
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
static group *take_encoded(serve_loop *l, serve_batch *b, bool *stop)
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
        struct timespec until = ted_deadline(CLOCK_REALTIME, IDLE_MS);
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

/* The group's sentences join the batch (serve_batch_join), and the group
 * is free again. The batch keeps its own session, whose buffers grow with
 * its rows and steps; when its last row ends it keeps them for the next
 * rows (ted_session_empty), and gives them back once the loop is idle
 * (take_encoded). */
static void absorb(serve_loop *l, serve_batch *b, group *g)
{
    ted_status s = serve_batch_join(b, g->session, g->sentences, g->count);
    pthread_mutex_lock(&l->lock);
    l->encoding_rows -= g->rows;
    l->decoding_rows += s ? 0 : g->rows;
    g->next = l->free_groups;
    l->free_groups = g;
    pthread_cond_signal(&l->encode_work);
    pthread_mutex_unlock(&l->lock);
}

/* The rows the batch holds now, for the encoding thread's next group. */
static void publish_rows(serve_loop *l, const serve_batch *b)
{
    pthread_mutex_lock(&l->lock);
    bool freed = b->charged < l->decoding_rows;
    l->decoding_rows = b->charged;
    if (freed)
        pthread_cond_signal(&l->encode_work);
    pthread_mutex_unlock(&l->lock);
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
    serve_batch *b = &l->batch;
    bool stop = false;
    ted_threads_use(l->pool);
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
            serve_batch_step(b);
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
    serve_batch_free(&l->batch);
    for (int k = 0; k < GROUPS; k++)
        free_group(&l->groups[k]);
    free(l->queue);
    free(l->queue_taken);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->encode_work);
    pthread_cond_destroy(&l->batch_work);
    ted_threads_free(l->pool);
    ted_threads_free(l->side_pool);
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
    serve_beam_calls calls = {sentences_done, l, l->pool, l->side_pool,
                             &l->metrics.beam_turn_requests, l->max_batch};
    ted_status s = serve_beam_start(&l->beam, &l->lock, calls, err);
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
                      .overlap = spare > 0};
    l->encoding_ended = !l->overlap;
    serve_loop_metrics_init(&l->metrics);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->encode_work, NULL);
    pthread_cond_init(&l->batch_work, NULL);
    l->queue = ted_alloc(max_queue, sizeof *l->queue, "decoding queue", err);
    serve_batch_calls calls = {.done = sentences_done, .drop = drop_sentence, .data = l};
    ted_status s = l->queue ? serve_batch_init(&l->batch, model, max_batch, calls, &l->metrics, err)
                            : TED_ERR_NOMEM;
    if (!s)
        s = ted_threads_new(threads, &l->pool, err);
    if (!s && l->overlap)
        s = ted_threads_new(spare < threads ? spare : threads, &l->side_pool, err);
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

ted_threads *serve_loop_threads(const serve_loop *l)
{
    return l->pool;
}

void serve_loop_stop(serve_loop *l)
{
    if (!l)
        return;
    join_threads(l, l->overlap, true);
    free_loop(l);
}
