#include "core/parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

enum { MAX_THREADS = 64, SPIN_ROUNDS = 20000 };

/* Workers spin a little after each job before sleeping: a decoder step
 * hands out dozens of jobs a few tens of microseconds apart, and waking a
 * sleeping thread costs about as much as a job. */
static struct {
    pthread_mutex_t owner;   /* held by the thread whose jobs the pool runs */
    pthread_mutex_t sleep;
    pthread_cond_t wake;
    pthread_t workers[MAX_THREADS];
    int worker_count;

    void (*task)(void *, int);
    void *context;
    int count;
    atomic_int next;         /* next task index to take */
    atomic_int finished;     /* workers done with the current job */
    atomic_uint job;         /* incremented for every job */
    atomic_bool stopping;
} pool = {
    .owner = PTHREAD_MUTEX_INITIALIZER,
    .sleep = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

static void run_tasks(void)
{
    int i;
    while ((i = atomic_fetch_add(&pool.next, 1)) < pool.count)
        pool.task(pool.context, i);
}

static unsigned wait_for_job(unsigned seen)
{
    for (int spin = 0; spin < SPIN_ROUNDS; spin++) {
        unsigned job = atomic_load(&pool.job);
        if (job != seen || atomic_load(&pool.stopping))
            return job;
    }
    pthread_mutex_lock(&pool.sleep);
    while (atomic_load(&pool.job) == seen && !atomic_load(&pool.stopping))
        pthread_cond_wait(&pool.wake, &pool.sleep);
    pthread_mutex_unlock(&pool.sleep);
    return atomic_load(&pool.job);
}

static void *worker(void *arg)
{
    unsigned seen = (unsigned)(size_t)arg;
    for (;;) {
        seen = wait_for_job(seen);
        if (atomic_load(&pool.stopping))
            return NULL;
        run_tasks();
        atomic_fetch_add(&pool.finished, 1);
    }
}

static void stop_workers(void)
{
    pthread_mutex_lock(&pool.sleep);
    atomic_store(&pool.stopping, true);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.sleep);
    for (int i = 0; i < pool.worker_count; i++)
        pthread_join(pool.workers[i], NULL);
    pool.worker_count = 0;
    atomic_store(&pool.stopping, false);
}

void ted_parallel_set_threads(int threads)
{
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    openblas_set_num_threads(1);
    pthread_mutex_lock(&pool.owner);
    if (threads - 1 != pool.worker_count) {
        stop_workers();
        unsigned job = atomic_load(&pool.job);
        for (int i = 0; i < threads - 1; i++) {
            if (pthread_create(&pool.workers[i], NULL, worker, (void *)(size_t)job) != 0)
                break;  /* fewer threads: slower, still correct */
            pool.worker_count++;
        }
    }
    pthread_mutex_unlock(&pool.owner);
}

int ted_parallel_threads(void)
{
    return pool.worker_count + 1;
}

void ted_parallel_for(int count, void (*task)(void *context, int index), void *context)
{
    bool owned = count > 1 && pthread_mutex_trylock(&pool.owner) == 0;
    if (!owned || pool.worker_count == 0) {
        for (int i = 0; i < count; i++)
            task(context, i);
        if (owned)
            pthread_mutex_unlock(&pool.owner);
        return;
    }
    pool.task = task;
    pool.context = context;
    pool.count = count;
    atomic_store(&pool.next, 0);
    atomic_store(&pool.finished, 0);
    pthread_mutex_lock(&pool.sleep);
    atomic_fetch_add(&pool.job, 1);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.sleep);

    run_tasks();
    while (atomic_load(&pool.finished) < pool.worker_count)
        ;
    pthread_mutex_unlock(&pool.owner);
}
