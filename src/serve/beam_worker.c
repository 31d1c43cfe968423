/* The beam search thread (serve/beam_worker.h). */
#include "serve/beam_worker.h"

#include <stdlib.h>
#include <time.h>

#include "ted/util.h"

/* How often the watch thread looks at the running job's client: a turn
 * outlives its client by about this long, and a step or two. */
#define WATCH_MS 50

static serve_job *take_job(serve_beam_worker *w)
{
    pthread_mutex_lock(w->lock);
    while (!w->first && !w->stopping)
        pthread_cond_wait(&w->work, w->lock);
    serve_job *job = w->first;
    if (job && !(w->first = job->next))
        w->last = NULL;
    pthread_mutex_unlock(w->lock);
    return job;
}

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
    for (int k = 0; !s && k < n; k++)
        sentence[k] = pending[k];
    free(pending);
    return s;
}

/* `n` of the job's sentences still to decode (shortest), through
 * ted_translate_ids as ted translate decodes its input, into the job's
 * outputs. The job's stop flag (raised when its client leaves) ends the
 * decode between two steps: TED_ERR_CANCELLED, nothing in the outputs. */
static ted_status decode_turn(serve_job *job, int n, ted_error *err)
{
    int n_best = job->options.decode.n_best;
    const int **ids = ted_alloc(n, sizeof *ids, "beam job", err);
    int *lengths = ted_alloc(n, sizeof *lengths, "beam job", err);
    int *sentence = ted_alloc(n, sizeof *sentence, "beam job", err);
    ted_translation *found = ted_alloc(ted_mul_size(n, n_best), sizeof *found, "beam job", err);
    ted_status s = ids && lengths && sentence && found ? TED_OK : TED_ERR_NOMEM;
    if (!s)
        s = shortest(job, n, sentence, err);
    for (int k = 0; !s && k < n; k++) {
        ids[k] = job->ids[sentence[k]];
        lengths[k] = job->lengths[sentence[k]];
    }
    ted_translate_call call = {&job->options, job->stop};
    if (!s)
        s = ted_translate_ids_cancellable(job->model, ids, lengths, n, &call, found, err);
    for (int k = 0; !s && k < n; k++)
        for (int j = 0; j < n_best; j++)
            job->outputs[(size_t)sentence[k] * n_best + j] = found[(size_t)k * n_best + j];
    free(ids);
    free(lengths);
    free(sentence);
    free(found);
    return s;
}

/* One turn of a job: a batch of its sentences (options.batch_size), the
 * batch ted_translate_ids would make next of them; a job with more goes
 * back to the end of the queue, so that a request of many sentences holds
 * the others back by a batch at a time, not by all of them. A failure
 * fails the job's sentences left. */
static void run_turn(serve_beam_worker *w, serve_job *job)
{
    int left = job->unfinished, batch = job->options.batch_size > 0 ? job->options.batch_size : 1;
    int n = left < batch ? left : batch;
    ted_error err = {0};
    if (serve_job_client_gone(job))
        serve_job_cancel(job);
    if (serve_job_is_cancelled(job)) {  /* its client left: what is left is not decoded */
        serve_job_cancelled_error(&err, 0);
        w->calls.done(w->calls.done_data, job, left, &err);
        return;
    }
    pthread_mutex_lock(w->lock);
    w->running = job;
    pthread_cond_signal(&w->turn);
    pthread_mutex_unlock(w->lock);
    ted_status s = decode_turn(job, n, &err);
    pthread_mutex_lock(w->lock);
    w->running = NULL;
    pthread_mutex_unlock(w->lock);
    if (s) {
        if (serve_job_is_cancelled(job))
            serve_job_cancelled_error(&err, 0);
        w->calls.done(w->calls.done_data, job, left, &err);
        return;
    }
    if (left > n) {  /* before done(): once the last sentence is done the job may be freed */
        pthread_mutex_lock(w->lock);
        serve_beam_submit(w, job);
        pthread_mutex_unlock(w->lock);
    }
    w->calls.done(w->calls.done_data, job, n, NULL);
}

/* While a turn decodes, every WATCH_MS: has its job's client left? */
static void *watch_main(void *arg)
{
    serve_beam_worker *w = arg;
    pthread_mutex_lock(w->lock);
    while (!w->stopping || w->running) {
        serve_job *job = w->running;
        if (job && !serve_job_is_cancelled(job) && serve_job_client_gone(job))
            serve_job_cancel(job);
        if (!job) {
            pthread_cond_wait(&w->turn, w->lock);
            continue;
        }
        struct timespec until = ted_deadline(CLOCK_REALTIME, WATCH_MS);
        pthread_cond_timedwait(&w->turn, w->lock, &until);
    }
    pthread_mutex_unlock(w->lock);
    return NULL;
}

static void *beam_main(void *arg)
{
    serve_beam_worker *w = arg;
    serve_job *job;
    ted_threads_use(w->calls.threads);
    while ((job = take_job(w)))
        run_turn(w, job);
    return NULL;
}

ted_status serve_beam_start(serve_beam_worker *w, pthread_mutex_t *lock, serve_beam_calls calls,
                            ted_error *err)
{
    *w = (serve_beam_worker){.lock = lock, .calls = calls};
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->turn, NULL);
    if (pthread_create(&w->watch, NULL, watch_main, w)) {
        pthread_cond_destroy(&w->work);
        pthread_cond_destroy(&w->turn);
        w->lock = NULL;
        return ted_fail(err, TED_ERR_NOMEM, "cannot start the beam search watch thread");
    }
    if (pthread_create(&w->thread, NULL, beam_main, w)) {
        pthread_mutex_lock(lock);
        w->stopping = true;
        pthread_cond_signal(&w->turn);
        pthread_mutex_unlock(lock);
        pthread_join(w->watch, NULL);
        pthread_cond_destroy(&w->work);
        pthread_cond_destroy(&w->turn);
        w->lock = NULL;
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
    pthread_cond_signal(&w->turn);
    pthread_mutex_unlock(w->lock);
    pthread_join(w->thread, NULL);
    pthread_join(w->watch, NULL);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->turn);
    w->lock = NULL;
}
