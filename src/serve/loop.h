/* A model's decoding loops.
 *
 * Continuous batching: one thread owns a session and steps every sentence
 * it holds, greedy or sampled, from any request, as rows of one batch.
 * Sentences that arrive while the batch runs are encoded together, in a
 * session of their own, and join the batch at the next step
 * (ted_session_join); a sentence leaves the batch the step it ends
 * (ted_session_select): a short sentence never waits for a long one, and a
 * lone sentence never waits for a batch to fill. Where the process has a
 * CPU beyond the threads of the matrix products, a second thread encodes
 * the newcomers while the batch steps; where it has not, the batching
 * thread encodes them between two steps with every thread of the pool
 * (two threads computing at once would share the same cores, and only one
 * of them can have the pool). Each row decodes exactly as it would alone;
 * a sampled sentence draws from its own generator, seeded as ted
 * translate seeds it, and a sentence's target prefix (a forced
 * target-language code) is taken before anything is chosen.
 *
 * loop.c admits the sentences (the queue, the admission policy), runs the
 * encoding thread and hands the encoded groups to the batching thread;
 * the running batch and its step are serve/batch.c's.
 *
 * Beam search requests go to a second thread, in turns that decode the
 * sentences of the requests alike together through ted_translate_ids, as
 * ted translate decodes them (serve/beam_worker.h). */
#ifndef TED_SERVE_LOOP_H
#define TED_SERVE_LOOP_H

#include "serve/job.h"
#include "serve/metrics.h"

typedef struct serve_loop serve_loop;

/* max_batch: the rows stepped together (a sentence with n sampled
 * hypotheses takes n); max_queue: the sentences the loop holds at once,
 * waiting or decoding; threads: those of the loop's own pool (ted_threads),
 * which its batching and beam search threads compute on, and which decide
 * whether an encoding thread runs beside the batching thread, on a second
 * pool of its own. Each model's loop computes on its pools, beside the
 * other models'. */
ted_status serve_loop_start(const ted_model *model, int max_batch, int max_queue, int threads,
                            serve_loop **loop, ted_error *err);

typedef enum serve_admission {
    SERVE_ACCEPTED,    /* the job's done() will be called */
    SERVE_QUEUE_FULL,  /* the loop holds too many sentences now */
    SERVE_TOO_MANY,    /* more sentences than the loop ever holds */
} serve_admission;

/* Hands a job with sentences to decode to the loop. */
serve_admission serve_loop_submit(serve_loop *loop, serve_job *job);

/* What the loop holds now (GET /v1/stats): serve/metrics.h. */
void serve_loop_stats(serve_loop *loop, serve_loop_counts *counts);

/* What the loop has counted (GET /metrics). */
const serve_loop_metrics *serve_loop_metrics_of(const serve_loop *loop);

/* The pool of threads the loop's decoding computes on (--threads). */
ted_threads *serve_loop_threads(const serve_loop *l);

/* Decodes every sentence already submitted, then stops the threads and
 * frees the loop. */
void serve_loop_stop(serve_loop *loop);

#endif
