/* The thread pool of the kernels (declared in kernels/kernels.h). */
#include "kernels/kernels.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* SPIN_NS: how long a waiting thread spins before it sleeps (a worker) or
 * yields its core (the caller), when the pool has no more threads than the
 * process has CPUs; with more, it does not spin at all. SPIN_CHECK: the
 * pauses between two readings of the clock. */
enum { MAX_THREADS = 64, SPIN_NS = 1000000, SPIN_CHECK = 64 };

/* The pool watches its jobs in windows of up to STARVED_WINDOW. When, after
 * STARVED_FIRST jobs or more, the workers have run under a quarter of the
 * tasks they would on CPUs of their own ((threads - 1) / threads of them),
 * or the caller has spent more than half of the window's time waiting for
 * tasks that workers had claimed, the workers are not getting CPUs: other
 * processes hold them, a worker runs only now and then and spins when it
 * does, taking the time of the caller's own share of the machine where the
 * scheduler shares it out by group. The jobs of the next SERIAL_NS then run
 * on the caller alone (the workers go to sleep), and the pool tries again;
 * each window found starved in a row doubles that time, up to
 * SERIAL_MAX_NS (measurements: docs/performance.md#a-loaded-machine). */
enum { STARVED_FIRST = 8, STARVED_WINDOW = 64 };
#define SERIAL_NS 20000000LL
#define SERIAL_MAX_NS 1000000000LL

/* A job is a numbered batch of tasks. Its number and the index of its next
 * task share one atomic word, so a worker claims a task only while that job
 * is current: a worker that wakes late, after the job is done, finds a new
 * number (or none) and claims nothing. The caller takes tasks too and
 * returns once every task has completed, never waiting for a worker that
 * had nothing to do.
 *
 * Idle workers spin for a while (SPIN_NS) before sleeping: a decoder step
 * hands out dozens of jobs a few microseconds apart, and waking a sleeping
 * thread costs about as much as a job. A spinning thread tells the core so
 * (pause), which leaves the other hyperthread its share. A thread spins
 * only while every thread of the pool can have a CPU of its own: with more
 * threads than the process's CPUs (ted_usable_cpus), a spinning thread
 * takes the core that the thread it waits for needs, so waiting workers
 * sleep at once and the caller yields its core while it waits
 * (measurements: docs/performance.md#threads-beyond-the-cpus). */
static struct {
    pthread_mutex_t owner;   /* held by the thread whose jobs the pool runs */
    pthread_mutex_t sleep;
    pthread_cond_t wake;
    pthread_t workers[MAX_THREADS];
    atomic_int worker_count; /* written under `owner`, read by anyone */

    void (*task)(void *, int);
    void *context;
    atomic_int count;        /* tasks in the current job */
    _Atomic uint64_t claim;  /* job number << 32 | next task index */
    atomic_int completed;    /* tasks of the current job that are done */
    atomic_uint job;         /* the current job number */
    atomic_bool stopping;
    atomic_long spin_ns;     /* SPIN_NS, or 0 with more threads than CPUs */

    /* the owner's: its watch over the workers (STARVED_WINDOW) */
    long long busy_ns, wait_ns;
    long long tasks, callers_tasks;
    int watched;
    long long serial_until;  /* until then (CLOCK_MONOTONIC ns), jobs run on the caller */
    long long serial_ns;     /* the next serial time: SERIAL_NS, doubling */
} pool = {
    .owner = PTHREAD_MUTEX_INITIALIZER,
    .sleep = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A wait that spins for the pool's spin time, then stops spinning. */
typedef struct spin {
    struct timespec deadline;
    int rounds;
    bool over;
} spin;

/* Pauses once and returns true while the spin time lasts; false after. */
static bool spin_more(spin *s)
{
    if (s->over)
        return false;
    if (s->rounds++ % SPIN_CHECK == 0) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (s->rounds == 1) {
            long ns = t.tv_nsec + atomic_load(&pool.spin_ns);
            s->deadline = (struct timespec){t.tv_sec + ns / 1000000000L, ns % 1000000000L};
        }
        if (t.tv_sec > s->deadline.tv_sec ||
            (t.tv_sec == s->deadline.tv_sec && t.tv_nsec >= s->deadline.tv_nsec)) {
            s->over = true;
            return false;
        }
    }
    spin_pause();
    return true;
}

static bool claim_task(uint32_t job, int *index)
{
    uint64_t current = atomic_load(&pool.claim);
    for (;;) {
        if ((uint32_t)(current >> 32) != job || (int)(uint32_t)current >= pool.count)
            return false;
        if (atomic_compare_exchange_weak(&pool.claim, &current, current + 1)) {
            *index = (int)(uint32_t)current;
            return true;
        }
    }
}

/* Runs tasks of `job` until none is left; returns how many it ran. */
static int run_tasks(uint32_t job)
{
    int index, ran = 0;
    while (claim_task(job, &index)) {
        pool.task(pool.context, index);
        atomic_fetch_add(&pool.completed, 1);
        ran++;
    }
    return ran;
}

static uint32_t wait_for_job(uint32_t seen)
{
    spin s = {.rounds = 0};
    while (spin_more(&s)) {
        uint32_t job = atomic_load_explicit(&pool.job, memory_order_acquire);
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
    uint32_t seen = (uint32_t)(uintptr_t)arg;
    for (;;) {
        seen = wait_for_job(seen);
        if (atomic_load(&pool.stopping))
            return NULL;
        run_tasks(seen);
    }
}

static void stop_workers(void)
{
    pthread_mutex_lock(&pool.sleep);
    atomic_store(&pool.stopping, true);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.sleep);
    int workers = atomic_load(&pool.worker_count);
    for (int i = 0; i < workers; i++)
        pthread_join(pool.workers[i], NULL);
    atomic_store(&pool.worker_count, 0);
    atomic_store(&pool.stopping, false);
}

void ted_parallel_set_threads(int threads)
{
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    pthread_mutex_lock(&pool.owner);
    if (threads - 1 != atomic_load(&pool.worker_count)) {
        stop_workers();
        uint32_t job = atomic_load(&pool.job);
        int started = 0;
        while (started < threads - 1 &&
               pthread_create(&pool.workers[started], NULL, worker, (void *)(uintptr_t)job) == 0)
            started++;  /* fewer threads when one cannot start: slower, still correct */
        atomic_store(&pool.worker_count, started);
    }
    atomic_store(&pool.spin_ns, threads <= ted_usable_cpus() ? SPIN_NS : 0);
    pool.busy_ns = pool.wait_ns = pool.tasks = pool.callers_tasks = 0;
    pool.watched = 0;
    pool.serial_until = 0;
    pool.serial_ns = SERIAL_NS;
    pthread_mutex_unlock(&pool.owner);
}

int ted_parallel_threads(void)
{
    return atomic_load(&pool.worker_count) + 1;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Hands the job to the workers, takes tasks too, and waits until every
 * task is done; returns the nanoseconds spent waiting for the workers'
 * last tasks. */
static long long run_pooled(int count, void (*task)(void *, int), void *context)
{
    pool.tasks += count;
    uint32_t job = atomic_load(&pool.job) + 1;
    /* The new number goes into the claim word before the new count: a worker
     * still on the previous job that reads the new count then fails its
     * compare-exchange, rather than claiming a task past the old job's end. */
    atomic_store(&pool.claim, (uint64_t)job << 32);
    pool.task = task;
    pool.context = context;
    atomic_store(&pool.count, count);
    atomic_store(&pool.completed, 0);
    pthread_mutex_lock(&pool.sleep);
    atomic_store_explicit(&pool.job, job, memory_order_release);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.sleep);

    pool.callers_tasks += run_tasks(job);
    if (atomic_load(&pool.completed) >= count)
        return 0;
    long long start = now_ns();
    spin s = {.rounds = 0};
    while (atomic_load(&pool.completed) < count)
        if (!spin_more(&s))
            sched_yield();
    return now_ns() - start;
}

/* Adds a job to the watch: a window found starved sends the jobs of the
 * next serial_ns to the caller alone. */
static void watch(long long busy, long long waited, long long now)
{
    pool.busy_ns += busy;
    pool.wait_ns += waited;
    pool.watched++;
    long long threads = atomic_load(&pool.worker_count) + 1;
    long long workers_tasks = pool.tasks - pool.callers_tasks;
    bool starved = pool.watched >= STARVED_FIRST &&
                   (4 * threads * workers_tasks < (threads - 1) * pool.tasks ||
                    2 * pool.wait_ns > pool.busy_ns);
    if (!starved && pool.watched < STARVED_WINDOW)
        return;
    if (pool.serial_ns < SERIAL_NS)
        pool.serial_ns = SERIAL_NS;
    if (starved) {
        pool.serial_until = now + pool.serial_ns;
        pool.serial_ns = 2 * pool.serial_ns < SERIAL_MAX_NS ? 2 * pool.serial_ns : SERIAL_MAX_NS;
    } else {
        pool.serial_ns = SERIAL_NS;
    }
    pool.busy_ns = pool.wait_ns = 0;
    pool.tasks = pool.callers_tasks = 0;
    pool.watched = 0;
}

void ted_parallel_for(int count, void (*task)(void *context, int index), void *context)
{
    bool owned = count > 1 && pthread_mutex_trylock(&pool.owner) == 0;
    long long start = owned && atomic_load(&pool.worker_count) > 0 ? now_ns() : 0;
    if (!owned || start == 0 || start < pool.serial_until) {
        for (int i = 0; i < count; i++)
            task(context, i);
        if (owned)
            pthread_mutex_unlock(&pool.owner);
        return;
    }
    long long waited = run_pooled(count, task, context);
    long long end = now_ns();
    watch(end - start, waited, end);
    pthread_mutex_unlock(&pool.owner);
}
