/* The thread pools of the kernels (declared in kernels/kernels.h). */
#include "kernels/kernels.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* SPIN_NS: how long a waiting thread spins before it sleeps (a worker) or
 * yields its core (the caller), when the two pools together have no more
 * threads than the process has CPUs; with more, it does not spin at all.
 * SPIN_CHECK: the pauses between two readings of the clock. */
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

/* A job is a numbered batch of tasks, split in as many ranges as the pool
 * has threads: thread t (the caller 0, worker t) first runs the tasks of
 * range t, in order, then takes the last task left in another's range,
 * until none is left. A thread thus runs the same part of every job of the
 * same shape, step after step (the same columns of a product, the same
 * heads of the same rows in attention), and finds their data in its own
 * cache; the threads claim on cache lines of their own, not all on one.
 * A range is one atomic word, begin << 32 | end: a claim is a
 * compare-exchange of it, so a claim is always of a task of the job whose
 * range the word holds. The caller returns once every task has completed,
 * never waiting for a worker that had nothing to do.
 *
 * Idle workers spin for a while (SPIN_NS) before sleeping: a decoder step
 * hands out dozens of jobs a few microseconds apart, and waking a sleeping
 * thread costs about as much as a job. A spinning thread tells the core so
 * (pause), which leaves the other hyperthread its share. A thread spins
 * only while every thread of both pools can have a CPU of its own: with
 * more threads than the process's CPUs (ted_usable_cpus), a spinning thread
 * takes the core that the thread it waits for needs, so waiting workers
 * sleep at once and the caller yields its core while it waits
 * (measurements: docs/performance.md#threads-beyond-the-cpus). */
typedef struct range {
    _Alignas(64) _Atomic uint64_t word;  /* begin << 32 | end */
} range;

/* A pool is the public ted_threads (ted/ted.h): the process's (MAIN), and
 * those callers make (ted_threads_new). */
typedef struct ted_threads pool;

typedef struct worker_slot {
    pool *p;
    int index;               /* its range: 1 .. threads - 1 */
} worker_slot;

struct ted_threads {
    pthread_mutex_t owner;   /* held by the thread whose jobs the pool runs */
    pthread_mutex_t sleep;
    pthread_cond_t wake;
    pthread_t workers[MAX_THREADS];
    worker_slot slots[MAX_THREADS];
    atomic_int worker_count; /* written under `owner`, read by anyone */
    uint32_t first_job;      /* the job number when the workers were started */

    void (*task)(void *, int);
    void *context;
    range ranges[MAX_THREADS];
    atomic_int parts;        /* the current job's ranges */
    atomic_int completed;    /* tasks of the current job that are done */
    atomic_uint job;         /* the current job number */
    atomic_bool stopping;
    int counted;             /* under `sizing`: the threads it adds to all_threads */

    /* the owner's: its watch over the workers (STARVED_WINDOW) */
    long long busy_ns, wait_ns;
    long long tasks, callers_tasks;
    int watched;
    long long serial_until;  /* until then (CLOCK_MONOTONIC ns), jobs run on the caller */
    long long serial_ns;     /* the next serial time: SERIAL_NS, doubling */
};

#define POOL_INIT                                                                      \
    {                                                                                  \
        .owner = PTHREAD_MUTEX_INITIALIZER, .sleep = PTHREAD_MUTEX_INITIALIZER,        \
        .wake = PTHREAD_COND_INITIALIZER,                                              \
    }

/* The process's pool, every thread's unless it is bound to another
 * (ted_parallel_use). */
static pool main_pool = POOL_INIT;
static _Thread_local pool *chosen;  /* NULL: the main pool */
/* Under `sizing`: the threads of every pool (a pool with workers counts
 * them and its caller, the thread that computes on it), and the spin time
 * of every pool: SPIN_NS while they have CPUs of their own, 0 with more
 * threads than CPUs. */
static pthread_mutex_t sizing = PTHREAD_MUTEX_INITIALIZER;
static int all_threads = 0;
static atomic_long spin_ns = SPIN_NS;

static pool *callers_pool(void)
{
    return chosen ? chosen : &main_pool;
}

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A wait that spins for a pool's spin time, then stops spinning. */
typedef struct spin {
    struct timespec deadline;
    long spin_ns;
    int rounds;
    bool over;
} spin;

static spin spin_of(const pool *p)
{
    (void)p;
    return (spin){.spin_ns = atomic_load(&spin_ns)};
}

/* Pauses once and returns true while the spin time lasts; false after. */
static bool spin_more(spin *s)
{
    if (s->over)
        return false;
    if (s->rounds++ % SPIN_CHECK == 0) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (s->rounds == 1) {
            long ns = t.tv_nsec + s->spin_ns;
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

/* Takes the first task left in range r (front) or the last (back). */
static bool claim_from(range *r, bool front, int *index)
{
    uint64_t word = atomic_load(&r->word);
    for (;;) {
        uint32_t begin = (uint32_t)(word >> 32), end = (uint32_t)word;
        if (begin >= end)
            return false;
        uint64_t rest = front ? word + ((uint64_t)1 << 32) : word - 1;
        if (atomic_compare_exchange_weak(&r->word, &word, rest)) {
            *index = (int)(front ? begin : end - 1);
            return true;
        }
    }
}

/* A task for thread `self`: from its own range, else from another's. */
static bool claim_task(pool *p, int self, int *index)
{
    int parts = atomic_load(&p->parts);
    if (self < parts && claim_from(&p->ranges[self], true, index))
        return true;
    for (int k = 1; k < parts; k++)
        if (claim_from(&p->ranges[(self + k) % parts], false, index))
            return true;
    return false;
}

/* Runs tasks until none is left; returns how many it ran. They count as
 * completed all at once: the caller waits for every task anyway. */
static int run_tasks(pool *p, int self)
{
    int index, ran = 0;
    while (claim_task(p, self, &index)) {
        p->task(p->context, index);
        ran++;
    }
    if (ran > 0)
        atomic_fetch_add(&p->completed, ran);
    return ran;
}

static uint32_t wait_for_job(pool *p, uint32_t seen)
{
    spin s = spin_of(p);
    while (spin_more(&s)) {
        uint32_t job = atomic_load_explicit(&p->job, memory_order_acquire);
        if (job != seen || atomic_load(&p->stopping))
            return job;
    }
    pthread_mutex_lock(&p->sleep);
    while (atomic_load(&p->job) == seen && !atomic_load(&p->stopping))
        pthread_cond_wait(&p->wake, &p->sleep);
    pthread_mutex_unlock(&p->sleep);
    return atomic_load(&p->job);
}

/* A worker waits for the first job after the one current when it was
 * started (p->first_job: it may run only after a later job was handed out). */
static void *worker(void *arg)
{
    const worker_slot *slot = arg;
    pool *p = slot->p;
    uint32_t seen = p->first_job;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load(&p->stopping))
            return NULL;
        run_tasks(p, slot->index);
    }
}

static void stop_workers(pool *p)
{
    pthread_mutex_lock(&p->sleep);
    atomic_store(&p->stopping, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->sleep);
    int workers = atomic_load(&p->worker_count);
    for (int i = 0; i < workers; i++)
        pthread_join(p->workers[i], NULL);
    atomic_store(&p->worker_count, 0);
    atomic_store(&p->stopping, false);
}

/* With p->owner held: `threads` threads for p (fewer when one cannot
 * start: slower, still correct), its watch reset. */
static void resize(pool *p, int threads)
{
    if (threads - 1 != atomic_load(&p->worker_count)) {
        stop_workers(p);
        p->first_job = atomic_load(&p->job);
        int started = 0;
        while (started < threads - 1) {
            p->slots[started] = (worker_slot){p, started + 1};
            if (pthread_create(&p->workers[started], NULL, worker, &p->slots[started]) != 0)
                break;
            started++;
        }
        atomic_store(&p->worker_count, started);
    }
    p->busy_ns = p->wait_ns = p->tasks = p->callers_tasks = 0;
    p->watched = 0;
    p->serial_until = 0;
    p->serial_ns = SERIAL_NS;
}

/* Counts p's threads in all_threads (`threads` of them; 0 once it is
 * freed) and sets every pool's spin time from the sum. */
static void count_threads(pool *p, int threads)
{
    pthread_mutex_lock(&sizing);
    int counted = threads > 1 ? threads : 0;
    all_threads += counted - p->counted;
    p->counted = counted;
    atomic_store(&spin_ns, all_threads <= ted_usable_cpus() ? SPIN_NS : 0);
    pthread_mutex_unlock(&sizing);
}

static void set_threads(pool *p, int threads)
{
    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    pthread_mutex_lock(&p->owner);
    resize(p, threads);
    int started = atomic_load(&p->worker_count) + 1;
    pthread_mutex_unlock(&p->owner);
    /* the last of two threads sizing pools at once sees both sizes */
    count_threads(p, started);
}

void ted_parallel_set_threads(int threads)
{
    set_threads(&main_pool, threads);
}

pool *ted_parallel_pool_new(int threads)
{
    pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->owner, NULL);
    pthread_mutex_init(&p->sleep, NULL);
    pthread_cond_init(&p->wake, NULL);
    set_threads(p, threads);
    return p;
}

void ted_parallel_pool_free(pool *p)
{
    if (!p || p == &main_pool)
        return;
    pthread_mutex_lock(&p->owner);
    stop_workers(p);
    pthread_mutex_unlock(&p->owner);
    count_threads(p, 0);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->sleep);
    pthread_mutex_destroy(&p->owner);
    free(p);
}

pool *ted_parallel_use(pool *p)
{
    pool *before = chosen;
    chosen = p == &main_pool ? NULL : p;
    return before;
}

pool *ted_parallel_bound(void)
{
    return chosen;
}

int ted_parallel_pool_threads(const pool *p)
{
    return atomic_load(&(p ? p : &main_pool)->worker_count) + 1;
}

int ted_parallel_threads(void)
{
    return ted_parallel_pool_threads(callers_pool());
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Hands the job to p's workers, takes tasks too, and waits until every
 * task is done; returns the nanoseconds spent waiting for the workers'
 * last tasks. */
static long long run_pooled(pool *p, int count, void (*task)(void *, int), void *context)
{
    p->tasks += count;
    uint32_t job = atomic_load(&p->job) + 1;
    int parts = atomic_load(&p->worker_count) + 1;
    p->task = task;
    p->context = context;
    atomic_store(&p->completed, 0);
    /* the ranges after the task: a worker that claims from a range then
     * calls the task of the range's job (the stores and its claim are
     * sequentially consistent) */
    for (int t = 0; t < parts; t++) {
        uint64_t begin = (uint64_t)count * t / parts, end = (uint64_t)count * (t + 1) / parts;
        atomic_store(&p->ranges[t].word, begin << 32 | end);
    }
    atomic_store(&p->parts, parts);
    pthread_mutex_lock(&p->sleep);
    atomic_store_explicit(&p->job, job, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->sleep);

    p->callers_tasks += run_tasks(p, 0);
    if (atomic_load(&p->completed) >= count)
        return 0;
    long long start = now_ns();
    spin s = spin_of(p);
    while (atomic_load(&p->completed) < count)
        if (!spin_more(&s))
            sched_yield();
    return now_ns() - start;
}

/* Adds a job to p's watch: a window found starved sends the jobs of the
 * next serial_ns to the caller alone. */
static void watch(pool *p, long long busy, long long waited, long long now)
{
    p->busy_ns += busy;
    p->wait_ns += waited;
    p->watched++;
    long long threads = atomic_load(&p->worker_count) + 1;
    long long workers_tasks = p->tasks - p->callers_tasks;
    bool starved = p->watched >= STARVED_FIRST &&
                   (4 * threads * workers_tasks < (threads - 1) * p->tasks ||
                    2 * p->wait_ns > p->busy_ns);
    if (!starved && p->watched < STARVED_WINDOW)
        return;
    if (p->serial_ns < SERIAL_NS)
        p->serial_ns = SERIAL_NS;
    if (starved) {
        p->serial_until = now + p->serial_ns;
        p->serial_ns = 2 * p->serial_ns < SERIAL_MAX_NS ? 2 * p->serial_ns : SERIAL_MAX_NS;
    } else {
        p->serial_ns = SERIAL_NS;
    }
    p->busy_ns = p->wait_ns = 0;
    p->tasks = p->callers_tasks = 0;
    p->watched = 0;
}

void ted_parallel_for(int count, void (*task)(void *context, int index), void *context)
{
    pool *p = callers_pool();
    bool owned = count > 1 && pthread_mutex_trylock(&p->owner) == 0;
    long long start = owned && atomic_load(&p->worker_count) > 0 ? now_ns() : 0;
    if (!owned || start == 0 || start < p->serial_until) {
        for (int i = 0; i < count; i++)
            task(context, i);
        if (owned)
            pthread_mutex_unlock(&p->owner);
        return;
    }
    long long waited = run_pooled(p, count, task, context);
    long long end = now_ns();
    watch(p, end - start, waited, end);
    pthread_mutex_unlock(&p->owner);
}
