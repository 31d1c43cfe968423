/* The beam search thread of a model's decoding loop (serve/loop.h): beam
 * search requests in turns, in arrival order, a batch of a request's
 * sentences a turn: the batches ted translate makes of the same lines,
 * each decoded through ted_translate_ids. */
#ifndef TED_SERVE_BEAM_WORKER_H
#define TED_SERVE_BEAM_WORKER_H

#include <pthread.h>

#include "serve/job.h"

typedef struct serve_beam_worker {
    pthread_mutex_t *lock;      /* the loop's: guards the queue and `stopping` */
    pthread_cond_t work;        /* a job arrived, or stop */
    serve_job *first, *last;    /* the jobs waiting, in order */
    bool stopping;
    serve_sentences_done_fn *done;
    void *done_data;
    pthread_t thread;
} serve_beam_worker;

/* Starts the thread; jobs are queued under `lock`. */
ted_status serve_beam_start(serve_beam_worker *w, pthread_mutex_t *lock,
                            serve_sentences_done_fn *done, void *done_data, ted_error *err);

/* Queues a job; the caller holds the lock. */
void serve_beam_submit(serve_beam_worker *w, serve_job *job);

/* Decodes the jobs queued, then ends the thread. */
void serve_beam_stop(serve_beam_worker *w);

#endif
