/* The beam search thread (serve/beam_worker.h). */
#include "serve/beam_worker.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"

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

/* The job's sentences to decode, in order, through ted_translate_ids as
 * ted translate decodes its input. */
static void run_job(serve_beam_worker *w, serve_job *job)
{
    int n = job->unfinished, n_best = job->options.decode.n_best;
    ted_error err = {0};
    if (serve_job_is_cancelled(job)) {  /* its client left before it was decoded */
        serve_job_cancelled_error(&err, 0);
        w->done(w->done_data, job, n, &err);
        return;
    }
    const int **ids = ted_alloc(n, sizeof *ids, "beam job", &err);
    int *lengths = ted_alloc(n, sizeof *lengths, "beam job", &err);
    int *sentence = ted_alloc(n, sizeof *sentence, "beam job", &err);
    ted_translation *found = ted_alloc(ted_mul_size(n, n_best), sizeof *found, "beam job", &err);
    ted_status s = ids && lengths && sentence && found ? TED_OK : TED_ERR_NOMEM;
    for (int i = 0, k = 0; !s && i < job->count; i++)
        if (serve_job_pending(job, i)) {
            sentence[k] = i;
            ids[k] = job->ids[i];
            lengths[k++] = job->lengths[i];
        }
    if (!s)
        s = ted_translate_ids(job->model, ids, lengths, n, &job->options, found, &err);
    for (int k = 0; !s && k < n; k++)
        for (int j = 0; j < n_best; j++)
            job->outputs[(size_t)sentence[k] * n_best + j] = found[(size_t)k * n_best + j];
    free(ids);
    free(lengths);
    free(sentence);
    free(found);
    w->done(w->done_data, job, n, s ? &err : NULL);
}

static void *beam_main(void *arg)
{
    serve_beam_worker *w = arg;
    serve_job *job;
    while ((job = take_job(w)))
        run_job(w, job);
    return NULL;
}

ted_status serve_beam_start(serve_beam_worker *w, pthread_mutex_t *lock,
                            serve_sentences_done_fn *done, void *done_data, ted_error *err)
{
    *w = (serve_beam_worker){.lock = lock, .done = done, .done_data = done_data};
    pthread_cond_init(&w->work, NULL);
    if (pthread_create(&w->thread, NULL, beam_main, w)) {
        pthread_cond_destroy(&w->work);
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
    pthread_mutex_unlock(w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->work);
    w->lock = NULL;
}
