/* The beam search threads (serve/beam_worker.h). */
#include "serve/beam_worker.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ted/util.h"

/* How often the watch thread looks at the running jobs' clients: a turn
 * outlives its clients by about this long, and a step or two. */
#define WATCH_MS 50

/* ---- which jobs share a turn ------------------------------------------------ */

/* Two language codes, NULL (none) included. */
static bool same_code(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static bool same_rules(const ted_logits_rules *a, const ted_logits_rules *b)
{
    int words = a->bad_words_length;
    return a->repetition_penalty == b->repetition_penalty &&
           a->no_repeat_ngram_size == b->no_repeat_ngram_size &&
           a->encoder_no_repeat_ngram_size == b->encoder_no_repeat_ngram_size &&
           a->min_length == b->min_length && a->min_new_tokens == b->min_new_tokens &&
           words == b->bad_words_length && words >= 0 && words <= TED_BAD_WORDS_MAX &&
           !memcmp(a->bad_words, b->bad_words, (size_t)words * sizeof *a->bad_words);
}

/* same_decoding weighs every field that ted_translate_options has now
 * (1160 bytes on a 64-bit machine): a field added there changes the size
 * and stops the build here until same_decoding compares it (or says why
 * it leaves it out) and the size here follows. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(ted_translate_options) == 1160,
               "a new field of ted_translate_options: weigh it in same_decoding");
#endif

/* Whether two beam search jobs decode alike, so that their sentences may
 * decode together in one ted_translate_ids call with either's options,
 * each as it would with its own: the same model and every option that
 * beam search reads (the strategy and its parameters, n_best, the logits
 * rules, the length rule, the batches, the languages and so the target
 * prefix). The sampling parameters and first_index choose random streams,
 * which beam search never draws from: they are left out (a request
 * without a seed has a random one). The one rule for sharing a turn. */
static bool same_decoding(const serve_job *a, const serve_job *b)
{
    const ted_translate_options *x = &a->options, *y = &b->options;
    const ted_decode_options *d = &x->decode, *e = &y->decode;
    return a->model == b->model && d->strategy == e->strategy &&
           d->beam.beam_size == e->beam.beam_size &&
           d->beam.length_penalty == e->beam.length_penalty &&
           d->beam.length_normalization == e->beam.length_normalization &&
           d->beam.early_stopping == e->beam.early_stopping && d->n_best == e->n_best &&
           d->tokens_only == e->tokens_only && same_rules(&d->rules, &e->rules) &&
           x->batch_size == y->batch_size && x->max_batch_tokens == y->max_batch_tokens &&
           x->workers == y->workers && x->max_length == y->max_length &&
           x->progress == y->progress && x->progress_data == y->progress_data &&
           same_code(x->languages.source, y->languages.source) &&
           same_code(x->languages.target, y->languages.target);
}

/* The sentences a turn decodes at most: as many as max_rows holds, each
 * sentence taking as many rows as its beam is wide (as the running batch
 * counts a sentence's samples), within the batch of options.batch_size
 * that ted translate would make; one at least. A step over many rows
 * costs more for each: beam search moves every row's caches at every
 * step, and beyond a few rows of a small model they no longer stay in the
 * core's cache (docs/serving.md#against-libretranslate). */
static int turn_sentences(const serve_job *job, int max_rows)
{
    int beam = job->options.decode.beam.beam_size > 0 ? job->options.decode.beam.beam_size : 1;
    int n = max_rows > 0 ? max_rows / beam : job->options.batch_size;
    n = n < job->options.batch_size ? n : job->options.batch_size;
    return n > 0 ? n : 1;
}

/* ---- taking a turn ------------------------------------------------------------ */

/* Room for `n` jobs in the lane's turn; false (the room as it was) when
 * the memory cannot be had. */
static bool make_room(serve_beam_lane *t, int n)
{
    if (n <= t->turn_room)
        return true;
    serve_beam_share *turn = realloc(t->turn, (size_t)n * sizeof *turn);
    if (!turn)
        return false;
    t->turn = turn;
    t->turn_room = n;
    return true;
}

/* Takes `job`, which follows `before` (NULL: the first), out of the queue. */
static void unlink_job(serve_beam_worker *w, serve_job *before, serve_job *job)
{
    *(before ? &before->next : &w->first) = job->next;
    if (w->last == job)
        w->last = before;
    job->next = NULL;
}

/* The lane's next turn, out of the queue: its first job, then each later
 * one that decodes as it does (same_decoding), in their order, until the
 * turn holds turn_sentences(); the jobs passed by keep their places.
 * False when stopping and nothing is queued. */
static bool take_turn(serve_beam_lane *t)
{
    serve_beam_worker *w = t->worker;
    pthread_mutex_lock(w->lock);
    while (!w->first && !w->stopping)
        pthread_cond_wait(&w->work, w->lock);
    serve_job *head = w->first;
    t->turn_jobs = 0;
    if (head) {
        int left = turn_sentences(head, w->calls.max_rows);
        int jobs = make_room(t, left) ? left : t->turn_room;
        serve_job *before = NULL, *job = head;
        while (job && left > 0 && t->turn_jobs < jobs) {
            serve_job *next = job->next;
            if (job == head || same_decoding(head, job)) {
                int n = job->unfinished < left ? job->unfinished : left;
                unlink_job(w, before, job);
                t->turn[t->turn_jobs++] = (serve_beam_share){job, n};
                left -= n;
            } else {
                before = job;
            }
            job = next;
        }
    }
    pthread_mutex_unlock(w->lock);
    return head != NULL;
}

/* The turn's jobs whose client has left leave it: their sentences left
 * fail (serve_job_cancelled_error), undecoded. */
static void drop_departed(serve_beam_lane *t)
{
    const serve_beam_calls *calls = &t->worker->calls;
    int kept = 0;
    for (int k = 0; k < t->turn_jobs; k++) {
        serve_job *job = t->turn[k].job;
        if (serve_job_client_gone(job))
            serve_job_cancel(job);
        if (!serve_job_is_cancelled(job)) {
            t->turn[kept++] = t->turn[k];
            continue;
        }
        ted_error err = {0};
        serve_job_cancelled_error(&err, 0);
        calls->done(calls->done_data, job, job->unfinished, &err);
    }
    t->turn_jobs = kept;
}

/* ---- decoding a turn ----------------------------------------------------------- */

/* sentence[0..n): the job's `n` shortest sentences still to decode, the
 * first in order of their index among equals: the batch that
 * ted_translate_ids would decode first of them all (it orders them so). */
static ted_status shortest(const serve_job *job, int n, int *sentence, ted_error *err)
{
    int *pending = ted_alloc(job->count > 0 ? job->count : 1, sizeof *pending, "beam job", err);
    if (!pending)
        return TED_ERR_NOMEM;
    int count = 0;
    for (int i = 0; i < job->count; i++)
        if (serve_job_pending(job, i))
            pending[count++] = i;
    ted_status s = ted_order_by_key(pending, count, job->lengths, "beam job", err);
    if (!s && count < n)
        s = ted_fail(err, TED_ERR_ARGUMENT, "beam job: %d sentences to decode, %d left", n, count);
    for (int k = 0; !s && k < n; k++)
        sentence[k] = pending[k];
    free(pending);
    return s;
}

/* The turn's sentences, job after job: ids and lengths (n) of each, and
 * its index among its job's sentences in `sentence` (n). */
static ted_status gather(const serve_beam_lane *t, const int **ids, int *lengths,
                         int *sentence, ted_error *err)
{
    int at = 0;
    for (int k = 0; k < t->turn_jobs; k++) {
        const serve_job *job = t->turn[k].job;
        ted_status s = shortest(job, t->turn[k].sentences, sentence + at, err);
        if (s)
            return s;
        for (int end = at + t->turn[k].sentences; at < end; at++) {
            ids[at] = job->ids[sentence[at]];
            lengths[at] = job->lengths[sentence[at]];
        }
    }
    return TED_OK;
}

/* found (n, n_best), in the order of gather(), moved into each job's outputs. */
static void hand_out(const serve_beam_lane *t, const int *sentence, ted_translation *found)
{
    int n_best = t->turn[0].job->options.decode.n_best, at = 0;
    for (int k = 0; k < t->turn_jobs; k++)
        for (int end = at + t->turn[k].sentences; at < end; at++)
            for (int j = 0; j < n_best; j++)
                t->turn[k].job->outputs[(size_t)sentence[at] * n_best + j] =
                    found[(size_t)at * n_best + j];
}

/* The turn's `n` sentences, through ted_translate_ids with the first job's
 * options (every job's, same_decoding), as ted translate decodes its
 * input, into the jobs' outputs. A job alone stops at its own stop flag
 * (raised when its client leaves), several at the turn's (raised once all
 * have left): TED_ERR_CANCELLED between two steps, nothing in the outputs. */
static ted_status decode_turn(serve_beam_lane *t, int n, ted_error *err)
{
    const serve_job *head = t->turn[0].job;
    int n_best = head->options.decode.n_best;
    const int **ids = ted_alloc(n, sizeof *ids, "beam turn", err);
    int *lengths = ted_alloc(n, sizeof *lengths, "beam turn", err);
    int *sentence = ted_alloc(n, sizeof *sentence, "beam turn", err);
    ted_translation *found = ted_alloc(ted_mul_size(n, n_best), sizeof *found, "beam turn", err);
    ted_status s = ids && lengths && sentence && found ? TED_OK : TED_ERR_NOMEM;
    if (!s)
        s = gather(t, ids, lengths, sentence, err);
    ted_translate_call call = {&head->options, t->turn_jobs == 1 ? head->stop : t->stop};
    if (!s)
        s = ted_translate_ids_cancellable(head->model, ids, lengths, n, &call, found, err);
    if (!s)
        hand_out(t, sentence, found);
    free(ids);
    free(lengths);
    free(sentence);
    free(found);
    return s;
}

/* Each job of the turn told what became of its sentences: one that
 * translated its share and has more goes back to the end of the queue
 * once done() has counted them (before, another lane could take it with
 * its count not yet down; after, it is not freed: its sentences left keep
 * it); a job cancelled, or every job of a turn that failed, fails the
 * sentences it has left. */
static void finish_turn(serve_beam_lane *t, const ted_error *failure)
{
    serve_beam_worker *w = t->worker;
    for (int k = 0; k < t->turn_jobs; k++) {
        serve_job *job = t->turn[k].job;
        ted_error err = {0};
        if (!failure && !serve_job_is_cancelled(job)) {
            bool again = job->unfinished > t->turn[k].sentences;
            w->calls.done(w->calls.done_data, job, t->turn[k].sentences, NULL);
            if (again) {
                pthread_mutex_lock(w->lock);
                serve_beam_submit(w, job);
                pthread_mutex_unlock(w->lock);
            }
            continue;
        }
        if (serve_job_is_cancelled(job))
            serve_job_cancelled_error(&err, 0);
        else
            err = *failure;
        w->calls.done(w->calls.done_data, job, job->unfinished, &err);
    }
}

/* Decodes the turn taken (take_turn) and hands out its translations. */
static void run_turn(serve_beam_lane *t)
{
    serve_beam_worker *w = t->worker;
    drop_departed(t);
    if (t->turn_jobs == 0)
        return;
    int n = 0;
    for (int k = 0; k < t->turn_jobs; k++)
        n += t->turn[k].sentences;
    if (w->calls.turn_requests)
        serve_histogram_observe(w->calls.turn_requests, t->turn_jobs);
    pthread_mutex_lock(w->lock);
    ted_cancel_reset(t->stop);
    t->running = true;
    w->running++;
    pthread_cond_signal(&w->turn_began);
    pthread_mutex_unlock(w->lock);
    ted_error err = {0};
    ted_status s = decode_turn(t, n, &err);
    pthread_mutex_lock(w->lock);
    t->running = false;
    w->running--;
    pthread_mutex_unlock(w->lock);
    finish_turn(t, s ? &err : NULL);
}

/* ---- the threads --------------------------------------------------------------- */

/* A lane's turn, while it decodes: have its jobs' clients left? Once every
 * job of the turn is cancelled, the turn stops. Under the lock. */
static void watch_turn(serve_beam_lane *t)
{
    bool all_left = true;
    for (int k = 0; k < t->turn_jobs; k++) {
        serve_job *job = t->turn[k].job;
        if (!serve_job_is_cancelled(job) && serve_job_client_gone(job))
            serve_job_cancel(job);
        all_left = all_left && serve_job_is_cancelled(job);
    }
    if (all_left)
        ted_cancel_request(t->stop);
}

/* While turns decode, every WATCH_MS, each one watched (watch_turn). */
static void *watch_main(void *arg)
{
    serve_beam_worker *w = arg;
    pthread_mutex_lock(w->lock);
    while (!w->stopping || w->running > 0) {
        if (w->running == 0) {
            pthread_cond_wait(&w->turn_began, w->lock);
            continue;
        }
        for (int i = 0; i < w->lane_count; i++)
            if (w->lanes[i].running)
                watch_turn(&w->lanes[i]);
        struct timespec until = ted_deadline(CLOCK_REALTIME, WATCH_MS);
        pthread_cond_timedwait(&w->turn_began, w->lock, &until);
    }
    pthread_mutex_unlock(w->lock);
    return NULL;
}

static void *lane_main(void *arg)
{
    serve_beam_lane *t = arg;
    ted_threads_use(t->threads);
    while (take_turn(t))
        run_turn(t);
    return NULL;
}

static void free_worker(serve_beam_worker *w)
{
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->turn_began);
    for (int i = 0; i < SERVE_BEAM_LANES; i++) {
        ted_cancel_free(w->lanes[i].stop);
        free(w->lanes[i].turn);
    }
    w->lock = NULL;
}

/* The lanes' flags and first room, and the watch thread. */
static ted_status prepare(serve_beam_worker *w, ted_error *err)
{
    for (int i = 0; i < SERVE_BEAM_LANES; i++) {
        serve_beam_lane *t = &w->lanes[i];
        t->worker = w;
        t->threads = i == 0 ? w->calls.threads : w->calls.side_threads;
        ted_status s = ted_cancel_new(&t->stop, err);
        if (s)
            return s;
        if (!make_room(t, 1))
            return ted_fail(err, TED_ERR_NOMEM, "beam search turn: out of memory");
    }
    if (pthread_create(&w->watch, NULL, watch_main, w))
        return ted_fail(err, TED_ERR_NOMEM, "cannot start the beam search watch thread");
    return TED_OK;
}

ted_status serve_beam_start(serve_beam_worker *w, pthread_mutex_t *lock, serve_beam_calls calls,
                            ted_error *err)
{
    *w = (serve_beam_worker){.lock = lock, .calls = calls};
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->turn_began, NULL);
    ted_status s = prepare(w, err);
    if (s) {
        free_worker(w);
        return s;
    }
    int lanes = calls.side_threads ? SERVE_BEAM_LANES : 1;
    while (w->lane_count < lanes &&
           !pthread_create(&w->lanes[w->lane_count].thread, NULL, lane_main,
                           &w->lanes[w->lane_count]))
        w->lane_count++;
    if (w->lane_count == 0) {
        serve_beam_stop(w);
        return ted_fail(err, TED_ERR_NOMEM, "cannot start the beam search thread");
    }
    return TED_OK;
}

void serve_beam_submit(serve_beam_worker *w, serve_job *job)
{
    job->next = NULL;
    *(w->last ? &w->last->next : &w->first) = job;
    w->last = job;
    pthread_cond_signal(&w->work);
}

void serve_beam_stop(serve_beam_worker *w)
{
    if (!w->lock)
        return;
    pthread_mutex_lock(w->lock);
    w->stopping = true;
    pthread_cond_broadcast(&w->work);
    pthread_cond_signal(&w->turn_began);
    pthread_mutex_unlock(w->lock);
    for (int i = 0; i < w->lane_count; i++)
        pthread_join(w->lanes[i].thread, NULL);
    pthread_join(w->watch, NULL);
    free_worker(w);
}
