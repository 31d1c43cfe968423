/* The beam search threads of a model's decoding loop (serve/loop.h): beam
 * search requests in turns. A turn takes the job first in the queue and,
 * behind it in arrival order, every waiting job whose decoding is the
 * same (same_decoding in beam_worker.c), up to --max-batch rows (a
 * sentence counts its beam's width, within options.batch_size sentences:
 * turn_sentences in beam_worker.c), each job's shortest first; it decodes
 * them together through ted_translate_ids_cancellable (so one-sentence
 * requests, as LibreTranslate's clients send them, decode in batches),
 * and hands each job its own sentences' translations. A job with
 * sentences left goes back to the end of the queue: a request of many
 * sentences holds the others back by a batch at a time, and the first job
 * is in every turn, so none waits without bound.
 *
 * Where the loop has CPUs beyond its pool's (it encodes beside its steps,
 * on a second pool), a second thread decodes turns on that pool beside
 * the first: a turn ties a thread to one core for most of its work (a
 * beam search step over a few rows is too small to share), and beam
 * search requests alone would leave the second core idle. A job is in
 * one turn at a time.
 *
 * A watch thread looks at the clients of the turns' jobs: libmicrohttpd
 * does not see a suspended connection close, so a client that leaves
 * during a turn of many steps is seen there and its job cancelled
 * (serve_job_cancel). A turn of one job stops at its next step; a turn of
 * several stops once every job in it is cancelled, and until then decodes
 * on for the others: a job cancelled meanwhile gets no translation (its
 * sentences count as dropped) and takes no part in a later turn. */
#ifndef TED_SERVE_BEAM_WORKER_H
#define TED_SERVE_BEAM_WORKER_H

#include <pthread.h>

#include "serve/job.h"
#include "serve/metrics.h"

/* What the beam search threads call, and where they compute. */
typedef struct serve_beam_calls {
    serve_sentences_done_fn *done;  /* sentences of a job are done */
    void *done_data;
    ted_threads *threads;           /* the pool of the first thread (NULL: the process's) */
    ted_threads *side_threads;      /* a second thread's, on the CPUs beyond the first
                                     * pool's (the loop's encoding pool); NULL: one thread */
    serve_histogram *turn_requests; /* observes the jobs of each turn (NULL: none) */
    int max_rows;                   /* --max-batch: the rows a turn decodes together,
                                     * each sentence's beam counted */
} serve_beam_calls;

/* A job's part in a turn. */
typedef struct serve_beam_share {
    serve_job *job;
    int sentences;  /* its sentences decoded in the turn: its shortest left */
} serve_beam_share;

typedef struct serve_beam_worker serve_beam_worker;

/* A thread that decodes turns, one at a time. */
typedef struct serve_beam_lane {
    serve_beam_worker *worker;
    ted_threads *threads;       /* the pool it computes on */
    serve_beam_share *turn;     /* (turn_room): the jobs of its turn, taken or decoded */
    int turn_jobs, turn_room;
    bool running;               /* the turn is being decoded: for the watch thread */
    ted_cancel *stop;           /* stops a turn of several jobs, once all are cancelled */
    pthread_t thread;
} serve_beam_lane;

enum { SERVE_BEAM_LANES = 2 };

struct serve_beam_worker {
    pthread_mutex_t *lock;      /* the loop's: guards the queue, the turns and `stopping` */
    pthread_cond_t work;        /* a job arrived, or stop */
    serve_job *first, *last;    /* the jobs waiting, in order */
    serve_beam_lane lanes[SERVE_BEAM_LANES];
    int lane_count;             /* the lanes started */
    int running;                /* the lanes decoding a turn */
    pthread_cond_t turn_began;  /* a turn began, or stop: for the watch thread */
    bool stopping;
    serve_beam_calls calls;
    pthread_t watch;            /* looks at the running jobs' clients (WATCH_MS) */
};

/* Starts the threads; jobs are queued under `lock`. */
ted_status serve_beam_start(serve_beam_worker *w, pthread_mutex_t *lock, serve_beam_calls calls,
                            ted_error *err);

/* Queues a job; the caller holds the lock. */
void serve_beam_submit(serve_beam_worker *w, serve_job *job);

/* Decodes the jobs queued, then ends the threads. */
void serve_beam_stop(serve_beam_worker *w);

#endif
