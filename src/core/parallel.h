/* One process-wide pool of worker threads for the matrix products, so that
 * ted's threads and OpenBLAS's never compete for the same cores: OpenBLAS
 * runs single-threaded inside each task. */
#ifndef TED_CORE_PARALLEL_H
#define TED_CORE_PARALLEL_H

/* Sets how many threads run tasks (the caller counts as one). 1 runs
 * everything on the calling thread. */
void ted_parallel_set_threads(int threads);
int ted_parallel_threads(void);

/* Runs task(context, i) for every i in [0, count), spread over the pool,
 * and returns when all are done. When another thread is already using the
 * pool, runs them all on the calling thread, so concurrent sessions stay
 * correct. */
void ted_parallel_for(int count, void (*task)(void *context, int index), void *context);

#endif
