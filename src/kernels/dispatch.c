/* Which kernels run (declared in kernels/kernels.h): one copy of
 * src/kernels/variant/ per instruction set (kernels/variants.h), chosen
 * once per process from what the CPU offers or from TED_CPU, and the
 * kernels.h vector functions, which call the chosen copy. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/variants.h"

#if defined(__x86_64__)
/* GCC's CPU model (libgcc's cpuinfo, run before main) reports AVX2, FMA
 * and the AVX-512 features only when XGETBV says the OS saves the YMM
 * registers, and for AVX-512 the opmask and ZMM registers too (Clang's
 * compiler-rt does the same), so these answers include the OS's part. */
static bool cpu_has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static bool cpu_has_avx512(void)
{
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
}
#endif

static bool cpu_has_baseline(void)
{
    return true;
}

/* Every set of this build, best first. */
typedef struct kernel_set {
    const ted_kernel_table *table;
    bool (*supported)(void);
    const char *needs;  /* what the CPU must offer, for messages */
} kernel_set;

static const kernel_set sets[] = {
#if defined(__x86_64__)
    {&ted_kernels_avx512, cpu_has_avx512, "AVX-512 (F, BW, VL and DQ) enabled by the OS"},
    {&ted_kernels_avx2, cpu_has_avx2, "AVX2 and FMA enabled by the OS"},
#endif
    {&ted_kernels_portable, cpu_has_baseline, "nothing"},
};

enum { SET_COUNT = sizeof sets / sizeof sets[0] };

static _Atomic(const ted_kernel_table *) active;
static pthread_once_t environment_once = PTHREAD_ONCE_INIT;
static ted_error environment_error;  /* why TED_CPU was refused; TED_OK if it was not */

static const kernel_set *find_set(const char *name)
{
    for (int i = 0; i < SET_COUNT; i++)
        if (!strcmp(sets[i].table->name, name))
            return &sets[i];
    return NULL;
}

static ted_status refuse_unknown(const char *name, ted_error *err)
{
    char names[128] = "";
    for (int i = 0; i < SET_COUNT; i++) {
        strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
        strncat(names, sets[i].table->name, sizeof names - strlen(names) - 1);
    }
    return ted_fail(err, TED_ERR_ARGUMENT, "unknown kernels '%s' (this build has %s)", name,
                    names);
}

static ted_status switch_to(const char *name, ted_error *err)
{
    const kernel_set *set = find_set(name);
    if (!set)
        return refuse_unknown(name, err);
    if (!set->supported())
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "kernels '%s' need %s, which this CPU does not offer", name,
                        set->needs);
    atomic_store_explicit(&active, set->table, memory_order_release);
    return TED_OK;
}

/* TED_CPU's set, or the best the CPU offers. */
static void choose_from_environment(void)
{
    const char *forced = getenv("TED_CPU");
    if (forced && *forced) {
        if (switch_to(forced, &environment_error) == TED_OK)
            return;
        ted_fail_context(&environment_error, "TED_CPU");
    }
    for (int i = 0; i < SET_COUNT; i++)
        if (sets[i].supported()) {
            atomic_store_explicit(&active, sets[i].table, memory_order_release);
            return;
        }
}

const ted_kernel_table *ted_kernels(void)
{
    const ted_kernel_table *table = atomic_load_explicit(&active, memory_order_acquire);
    if (table)
        return table;
    pthread_once(&environment_once, choose_from_environment);
    return atomic_load_explicit(&active, memory_order_acquire);
}

ted_status ted_kernels_init(ted_error *err)
{
    pthread_once(&environment_once, choose_from_environment);
    if (environment_error.status != TED_OK)
        return ted_fail(err, environment_error.status, "%s", environment_error.message);
    return TED_OK;
}

ted_status ted_kernels_select(const char *name, ted_error *err)
{
    if (!name)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_kernels_select: NULL name");
    pthread_once(&environment_once, choose_from_environment);
    return switch_to(name, err);
}

bool ted_kernels_supported(const char *name)
{
    const kernel_set *set = name ? find_set(name) : NULL;
    return set && set->supported();
}

const char *ted_kernels_name(void)
{
    return ted_kernels()->name;
}

const char *ted_cpu_kernels(void)
{
    return ted_kernels_name();
}

/* ---- the kernels.h vector functions: the chosen set's ---------------------- */

void ted_scaled_dots(float *scores, const float *q, const float *keys, int count, int size,
                     float scale)
{
    ted_kernels()->scaled_dots(scores, q, keys, count, size, scale);
}

void ted_weighted_sum(float *out, const float *weights, const float *values, int count,
                      int size)
{
    ted_kernels()->weighted_sum(out, weights, values, count, size);
}

float ted_max(const float *x, int n)
{
    return ted_kernels()->max(x, n);
}

int ted_index_of_max(const float *x, int n)
{
    return ted_kernels()->index_of_max(x, n);
}

double ted_exp_shifted(float *x, int n, float shift)
{
    return ted_kernels()->exp_shifted(x, n, shift);
}

double ted_sum_exp_shifted(const float *x, int n, float shift)
{
    return ted_kernels()->sum_exp_shifted(x, n, shift);
}

double ted_sum_exp_shifted_at(const float *values, const int *ids, int count, int n,
                              float shift)
{
    return ted_kernels()->sum_exp_shifted_at(values, ids, count, n, shift);
}

void ted_scale(float *x, int n, float factor)
{
    ted_kernels()->scale(x, n, factor);
}

/* Element-wise passes over long vectors (a feed-forward layer's hidden
 * values, a step's logits) are split over the pool in chunks of this many
 * floats (64 KB; a multiple of every set's vector, so the chunks' vector
 * loops and tails cover the elements as one call would). Shorter ones run
 * on the calling thread: a task would cost more than it saves. */
enum { CHUNK_FLOATS = 16384 };

static int chunks_of(size_t n)
{
    return (int)((n + CHUNK_FLOATS - 1) / CHUNK_FLOATS);
}

static size_t chunk_length(size_t n, int index)
{
    size_t start = (size_t)index * CHUNK_FLOATS;
    return n - start < CHUNK_FLOATS ? n - start : CHUNK_FLOATS;
}

typedef struct in_place_job {
    void (*op)(float *x, size_t n);
    float *x;
    size_t n;
} in_place_job;

static void in_place_chunk(void *context, int index)
{
    const in_place_job *job = context;
    job->op(job->x + (size_t)index * CHUNK_FLOATS, chunk_length(job->n, index));
}

static void in_place(void (*op)(float *x, size_t n), float *x, size_t n)
{
    if (n < 2 * CHUNK_FLOATS) {
        op(x, n);
        return;
    }
    in_place_job job = {op, x, n};
    ted_parallel_for(chunks_of(n), in_place_chunk, &job);
}

void ted_zero_negatives(float *x, size_t n)
{
    in_place(ted_kernels()->zero_negatives, x, n);
}

void ted_times_sigmoid(float *x, size_t n)
{
    in_place(ted_kernels()->times_sigmoid, x, n);
}

void ted_times_normal_cdf(float *x, size_t n)
{
    in_place(ted_kernels()->times_normal_cdf, x, n);
}

void ted_times_normal_cdf_tanh(float *x, size_t n)
{
    in_place(ted_kernels()->times_normal_cdf_tanh, x, n);
}

typedef struct finite_job {
    const float *x;
    size_t n;
    atomic_bool all_finite;
} finite_job;

static void finite_chunk(void *context, int index)
{
    finite_job *job = context;
    if (!ted_kernels()->all_finite(job->x + (size_t)index * CHUNK_FLOATS,
                                   chunk_length(job->n, index)))
        atomic_store(&job->all_finite, false);
}

bool ted_all_finite(const float *x, size_t n)
{
    if (n < 2 * CHUNK_FLOATS)
        return ted_kernels()->all_finite(x, n);
    finite_job job = {x, n, true};
    ted_parallel_for(chunks_of(n), finite_chunk, &job);
    return atomic_load(&job.all_finite);
}

void ted_normalize_rows(float *y, const float *x, const float *gamma, const float *beta,
                        int rows, int n, float eps)
{
    ted_kernels()->normalize_rows(y, x, gamma, beta, rows, n, eps);
}
