/* The beam search thread of a model's decoding loop (serve/loop.h): beam
 * search requests in turns, in arrival order, a batch of a request's
 * sentences a turn: the batches ted translate makes of the same lines,
 * each decoded through ted_translate_ids_cancellable. A second thread
 * watches the client of the turn's job: libmicrohttpd does not see a
 * suspended connection close, so a client that leaves during a turn of
 * many steps would otherwise hold the thread until the turn ends; it is
 * cancelled (serve_job_cancel), and the turn stops at its next step. */
#ifndef TED_SERVE_BEAM_WORKER_H
#define TED_SERVE_BEAM_WORKER_H

#include <pthread.h>

#include "serve/job.h"

/* What the beam search thread calls, and where it computes. */
typedef struct serve_beam_calls {
    serve_sentences_done_fn *done;  /* sentences of a job are done */
    void *done_data;
    ted_threads *threads;           /* the pool it computes on (NULL: the process's) */
} serve_beam_calls;

typedef struct serve_beam_worker {
    pthread_mutex_t *lock;      /* the loop's: guards the queue and `stopping` */
    pthread_cond_t work;        /* a job arrived, or stop */
    serve_job *first, *last;    /* the jobs waiting, in order */
    serve_job *running;         /* the job of the turn being decoded, or NULL */
    pthread_cond_t turn;        /* a turn began, or stop: for the watch thread */
    bool stopping;
    serve_beam_calls calls;
    pthread_t thread;
    pthread_t watch;            /* looks at the running job's client (WATCH_MS) */
} serve_beam_worker;

/* Starts the threads; jobs are queued under `lock`. */
ted_status serve_beam_start(serve_beam_worker *w, pthread_mutex_t *lock, serve_beam_calls calls,
                            ted_error *err);

/* Queues a job; the caller holds the lock. */
void serve_beam_submit(serve_beam_worker *w, serve_job *job);

/* Decodes the jobs queued, then ends the threads. */
void serve_beam_stop(serve_beam_worker *w);

#endif
