/* bench-machine: what this machine can do, as a yardstick for the decoder's
 * figures. For 1 and 2 threads (or the counts given as arguments):
 *   - OpenBLAS sgemm GFLOP/s on a large square product (2048^3) and on the
 *     skinny products of a decoder step: M = 1 and 16 rows times a
 *     (512 x 2048) and a (512 x 32000) weight matrix, as C = A * B^T
 *     (weights stored row-major, output features by input features, as
 *     nn.Linear stores them); for these the weight bytes read per second
 *     (GB/s) are printed as well, and for M = 1 also sgemv's (y = W x),
 *     which OpenBLAS serves better than a one-row sgemm;
 *   - memory bandwidth: a read-only sum over 1 GiB, split between the
 *     threads, and a 512 MiB copy (counted as bytes read + written);
 *   - with --working-set BYTES, the same sum over the first BYTES only,
 *     pass after pass: the bandwidth of reading a data set of that size
 *     (a decoder step's weights) again and again, which a large last-level
 *     cache can hold in part;
 *   - with --step D_MODEL,D_FF,LAYERS,VOCAB, OpenBLAS sgemm on the matrix
 *     products of one decoder step of that shape, for 16 rows: per layer
 *     self-attention q, k, v, out and encoder-decoder q, out (d_model x
 *     d_model), the feed-forward's two (d_ff x d_model, d_model x d_ff),
 *     then the output layer (vocab x d_model); every matrix its own, so
 *     that a step reads them all from memory, as a decoder step does;
 *   - the multiply-adds one core's instructions can do per second, from
 *     registers (no memory): float32 FMA on 256- and 512-bit vectors, and
 *     int8 as ted's kernels do it, AVX2 vpsignb + vpmaddubsw + vpmaddwd +
 *     vpaddd (32 products) and AVX-512 VNNI vpdpbusd (64), for the sets
 *     this CPU has: how far int8 can outrun float32 where both are bound
 *     by arithmetic (a batch-16 step) rather than by memory.
 * Every figure is the best of several runs. Prints one JSON object.
 *
 *     bench-machine [--working-set BYTES] [--step D,F,L,V] [THREADS...]
 */
#include <cblas.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define READ_BYTES ((size_t)1 << 30)
#define COPY_BYTES ((size_t)512 << 20)
#define MAX_THREADS 64

/* Declared by OpenBLAS's cblas.h; repeated so that another cblas.h works. */
void openblas_set_num_threads(int threads);
char *openblas_get_config(void);

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *xmalloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes)) {
        fprintf(stderr, "bench-machine: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static void fill(float *x, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
    }
}

/* Best seconds of C(m x n) = A(m x k) * B(n x k)^T over `runs` runs, after
 * one warm-up; stops early once `budget` seconds are spent. */
static double time_sgemm(int m, int n, int k, int runs, double budget)
{
    float *a = xmalloc(sizeof(float) * (size_t)m * k);
    float *b = xmalloc(sizeof(float) * (size_t)n * k);
    float *c = xmalloc(sizeof(float) * (size_t)m * n);
    fill(a, (size_t)m * k, 1);
    fill(b, (size_t)n * k, 2);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
    double best = 1e30, spent = 0;
    for (int r = 0; r < runs && spent < budget; r++) {
        double start = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f,
                    c, n);
        double t = now_s() - start;
        spent += t;
        if (t < best)
            best = t;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

/* Best seconds of y(n) = W(n x k) x(k), as time_sgemm. */
static double time_sgemv(int n, int k, int runs, double budget)
{
    float *w = xmalloc(sizeof(float) * (size_t)n * k);
    float *x = xmalloc(sizeof(float) * k);
    float *y = xmalloc(sizeof(float) * n);
    fill(w, (size_t)n * k, 3);
    fill(x, k, 4);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
    double best = 1e30, spent = 0;
    for (int r = 0; r < runs && spent < budget; r++) {
        double start = now_s();
        cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
        double t = now_s() - start;
        spent += t;
        if (t < best)
            best = t;
    }
    free(w);
    free(x);
    free(y);
    return best;
}

/* The weights of one decoder step (--step): count matrices, matrix i
 * (out[i], in[i]) row-major. */
enum { MAX_LAYERS = 64, STEP_ROWS = 16 };

typedef struct step_weights {
    int count, out[8 * MAX_LAYERS + 1], in[8 * MAX_LAYERS + 1];
    float *w[8 * MAX_LAYERS + 1];
    double flops_per_row;
} step_weights;

static void add_matrix(step_weights *s, int out, int in)
{
    s->out[s->count] = out;
    s->in[s->count] = in;
    s->w[s->count] = xmalloc(sizeof(float) * (size_t)out * in);
    fill(s->w[s->count], (size_t)out * in, 5 + s->count);
    s->flops_per_row += 2.0 * out * in;
    s->count++;
}

static void new_step(step_weights *s, int d_model, int d_ff, int layers, int vocab)
{
    *s = (step_weights){0};
    for (int l = 0; l < layers; l++) {
        for (int i = 0; i < 6; i++)
            add_matrix(s, d_model, d_model);
        add_matrix(s, d_ff, d_model);
        add_matrix(s, d_model, d_ff);
    }
    add_matrix(s, vocab, d_model);
}

/* Best seconds of every product of a step for `rows` rows of x. */
static double time_step(const step_weights *s, int rows, int runs)
{
    int widest = 0;
    for (int i = 0; i < s->count; i++) {
        widest = s->out[i] > widest ? s->out[i] : widest;
        widest = s->in[i] > widest ? s->in[i] : widest;
    }
    float *x = xmalloc(sizeof(float) * (size_t)rows * widest);
    float *y = xmalloc(sizeof(float) * (size_t)rows * widest);
    fill(x, (size_t)rows * widest, 6);
    double best = 1e30;
    for (int r = 0; r <= runs; r++) { /* the first warms up */
        double start = now_s();
        for (int i = 0; i < s->count; i++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, s->out[i], s->in[i],
                        1.0f, x, s->in[i], s->w[i], s->in[i], 0.0f, y, s->out[i]);
        double t = now_s() - start;
        if (r > 0 && t < best)
            best = t;
    }
    free(x);
    free(y);
    return best;
}

typedef struct job {
    const uint64_t *src;
    uint64_t *dst;
    size_t words;
    uint64_t sum;
} job;

static void *sum_job(void *arg)
{
    job *j = arg;
    /* four independent accumulators keep the loop bound by memory, not
     * by the latency of one add chain */
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= j->words; i += 4) {
        s0 += j->src[i];
        s1 += j->src[i + 1];
        s2 += j->src[i + 2];
        s3 += j->src[i + 3];
    }
    for (; i < j->words; i++)
        s0 += j->src[i];
    j->sum = s0 + s1 + s2 + s3;
    return NULL;
}

static void *copy_job(void *arg)
{
    job *j = arg;
    memcpy(j->dst, j->src, j->words * sizeof(uint64_t));
    return NULL;
}

/* Seconds of one pass of `fn` over `words` words split between threads. */
static double run_threads(void *(*fn)(void *), const uint64_t *src, uint64_t *dst, size_t words,
                          int threads, uint64_t *sum)
{
    pthread_t tid[MAX_THREADS];
    job jobs[MAX_THREADS];
    size_t per = words / threads;
    double start = now_s();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){src + per * t, dst ? dst + per * t : NULL,
                        t == threads - 1 ? words - per * t : per, 0};
        if (t > 0 && pthread_create(&tid[t], NULL, fn, &jobs[t])) {
            fprintf(stderr, "bench-machine: cannot start a thread\n");
            exit(1);
        }
    }
    fn(&jobs[0]);
    for (int t = 1; t < threads; t++)
        pthread_join(tid[t], NULL);
    double elapsed = now_s() - start;
    for (int t = 0; t < threads; t++)
        *sum += jobs[t].sum;
    return elapsed;
}

static double best_of(void *(*fn)(void *), const uint64_t *src, uint64_t *dst, size_t words,
                      int threads, int runs, uint64_t *sum)
{
    double best = 1e30;
    run_threads(fn, src, dst, words, threads, sum); /* warm-up */
    for (int r = 0; r < runs; r++) {
        double t = run_threads(fn, src, dst, words, threads, sum);
        if (t < best)
            best = t;
    }
    return best;
}

static const struct {
    const char *name;
    int m, n, k, runs;
} problems[] = {
    {"sgemm_2048x2048x2048", 2048, 2048, 2048, 5},
    {"sgemm_1x512x2048", 1, 2048, 512, 200},
    {"sgemm_16x512x2048", 16, 2048, 512, 200},
    {"sgemm_1x512x32000", 1, 32000, 512, 30},
    {"sgemm_16x512x32000", 16, 32000, 512, 30},
};

/* ---- instruction peaks of one core ------------------------------------------
 * Each loop runs independent chains of one recipe over operands in
 * registers; the empty asm tells the compiler an operand changed, so that
 * nothing is hoisted out of the loop. Enough chains to cover each
 * instruction's latency at two a cycle. */
enum { PEAK_ITERATIONS = 20000000 };

#if defined(__AVX2__) && defined(__FMA__)
/* GMAC/s of PEAK_ITERATIONS iterations begun at `start`, each of `macs`
 * multiply-adds. */
static double gmacs_since(double start, double macs)
{
    return macs * PEAK_ITERATIONS / (now_s() - start) / 1e9;
}

static double fp32_ymm_peak(void)
{
    __m256 a[10], b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(1e-3f);
    for (int j = 0; j < 10; j++)
        a[j] = _mm256_set1_ps((float)j);
    double start = now_s();
    for (long i = 0; i < PEAK_ITERATIONS; i++) {
        for (int j = 0; j < 10; j++)
            a[j] = _mm256_fmadd_ps(a[j], b, c);
        __asm__ volatile("" : "+x"(b));
    }
    double rate = gmacs_since(start, 10 * 8);
    for (int j = 0; j < 10; j++) /* the sums count as used */
        __asm__ volatile("" : : "x"(a[j]));
    return rate;
}

/* 32 int8 products summed into 8 int32 lanes, as the AVX2 kernel does. */
static inline __m256i i8_pairs(__m256i acc, __m256i magnitude, __m256i x, __m256i w,
                               __m256i ones)
{
    __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(x, w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
}

static double i8_avx2_peak(void)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[8], x0 = _mm256_set1_epi8(3), x1 = _mm256_set1_epi8(-5);
    __m256i w0 = _mm256_set1_epi8(-7), w1 = _mm256_set1_epi8(9);
    __m256i m0 = _mm256_abs_epi8(w0), m1 = _mm256_abs_epi8(w1);
    for (int j = 0; j < 8; j++)
        acc[j] = _mm256_setzero_si256();
    double start = now_s();
    for (long i = 0; i < PEAK_ITERATIONS; i++) {
        acc[0] = i8_pairs(acc[0], m0, x0, w0, ones);
        acc[1] = i8_pairs(acc[1], m1, x0, w1, ones);
        acc[2] = i8_pairs(acc[2], m0, x1, w0, ones);
        acc[3] = i8_pairs(acc[3], m1, x1, w1, ones);
        __asm__ volatile("" : "+x"(x0), "+x"(x1));
        acc[4] = i8_pairs(acc[4], m0, x0, w0, ones);
        acc[5] = i8_pairs(acc[5], m1, x0, w1, ones);
        acc[6] = i8_pairs(acc[6], m0, x1, w0, ones);
        acc[7] = i8_pairs(acc[7], m1, x1, w1, ones);
        __asm__ volatile("" : "+x"(x0), "+x"(x1));
    }
    double rate = gmacs_since(start, 8 * 32);
    __m256i sum = acc[0]; /* (an empty asm on each sum instead: 5 % slower code) */
    for (int j = 1; j < 8; j++)
        sum = _mm256_add_epi32(sum, acc[j]);
    __asm__ volatile("" : : "x"(sum));
    return rate;
}
#endif

#if defined(__AVX512F__)
static double fp32_zmm_peak(void)
{
    __m512 a[12], b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-3f);
    for (int j = 0; j < 12; j++)
        a[j] = _mm512_set1_ps((float)j);
    double start = now_s();
    for (long i = 0; i < PEAK_ITERATIONS; i++) {
        for (int j = 0; j < 12; j++)
            a[j] = _mm512_fmadd_ps(a[j], b, c);
        __asm__ volatile("" : "+v"(b));
    }
    double rate = gmacs_since(start, 12 * 16);
    for (int j = 0; j < 12; j++)
        __asm__ volatile("" : : "v"(a[j]));
    return rate;
}
#endif

#if defined(__AVX512VNNI__)
static double i8_vnni_peak(void)
{
    __m512i acc[12], u = _mm512_set1_epi8(7), s = _mm512_set1_epi8(-3);
    for (int j = 0; j < 12; j++)
        acc[j] = _mm512_setzero_si512();
    double start = now_s();
    for (long i = 0; i < PEAK_ITERATIONS; i++) {
        for (int j = 0; j < 12; j++)
            acc[j] = _mm512_dpbusd_epi32(acc[j], u, s);
        __asm__ volatile("" : "+v"(u));
    }
    double rate = gmacs_since(start, 12 * 64);
    for (int j = 0; j < 12; j++)
        __asm__ volatile("" : : "v"(acc[j]));
    return rate;
}
#endif

/* Prints ', "core_peaks": {...}' with the best of three runs of each
 * (empty without AVX2 and FMA). */
static void print_core_peaks(void)
{
    printf(", \"core_peaks\": {");
#if defined(__AVX2__) && defined(__FMA__)
    static const struct {
        const char *name;
        double (*run)(void);
    } peaks[] = {
        {"fp32_fma_256_gmacs", fp32_ymm_peak},
        {"i8_avx2_gmacs", i8_avx2_peak},
#if defined(__AVX512F__)
        {"fp32_fma_512_gmacs", fp32_zmm_peak},
#endif
#if defined(__AVX512VNNI__)
        {"i8_vnni_512_gmacs", i8_vnni_peak},
#endif
    };
    for (size_t p = 0; p < sizeof peaks / sizeof peaks[0]; p++) {
        double best = 0.0;
        for (int run = 0; run < 3; run++) {
            double rate = peaks[p].run();
            best = rate > best ? rate : best;
        }
        printf("%s\"%s\": %.1f", p ? ", " : "", peaks[p].name, best);
    }
#endif
    printf("}");
}

static int usage(void)
{
    fprintf(stderr, "usage: bench-machine [--working-set BYTES] [--step D,F,L,V] [THREADS...] "
            "(BYTES up to %zu, LAYERS up to %d, THREADS 1..%d)\n", READ_BYTES, MAX_LAYERS,
            MAX_THREADS);
    return 2;
}

int main(int argc, char **argv)
{
    int counts[MAX_THREADS], n_counts = 0;
    size_t working_set = 0;
    int d_model = 0, d_ff = 0, layers = 0, vocab = 0;
    for (int i = 1; i < argc && n_counts < MAX_THREADS; i++) {
        if (!strcmp(argv[i], "--step") && i + 1 < argc) {
            char extra;
            if (sscanf(argv[++i], "%d,%d,%d,%d%c", &d_model, &d_ff, &layers, &vocab, &extra) != 4
                || d_model < 1 || d_model > 65536 || d_ff < 1 || d_ff > 262144 || layers < 1
                || layers > MAX_LAYERS || vocab < 1 || vocab > 1 << 20)
                return usage();
            continue;
        }
        if (!strcmp(argv[i], "--working-set") && i + 1 < argc) {
            char *end;
            unsigned long long bytes = strtoull(argv[++i], &end, 10);
            if (*end || bytes < 4096 || bytes > READ_BYTES)
                return usage();
            working_set = bytes;
            continue;
        }
        int t = atoi(argv[i]);
        if (t < 1 || t > MAX_THREADS)
            return usage();
        counts[n_counts++] = t;
    }
    if (!n_counts) {
        counts[0] = 1;
        counts[1] = 2;
        n_counts = 2;
    }

    size_t words = READ_BYTES / sizeof(uint64_t);
    uint64_t *big = xmalloc(READ_BYTES);
    for (size_t i = 0; i < words; i++) /* touches every page before timing */
        big[i] = i;
    uint64_t *copy = xmalloc(COPY_BYTES);
    memset(copy, 0, COPY_BYTES);
    uint64_t checksum = 0;
    step_weights step = {0};
    if (layers)
        new_step(&step, d_model, d_ff, layers, vocab);

    printf("{\"openblas\": \"%s\", \"read_bytes\": %zu, \"copy_bytes\": %zu, \"threads\": [",
           openblas_get_config(), READ_BYTES, COPY_BYTES);
    for (int c = 0; c < n_counts; c++) {
        int threads = counts[c];
        openblas_set_num_threads(threads);
        printf("%s\n {\"threads\": %d", c ? "," : "", threads);
        for (size_t p = 0; p < sizeof problems / sizeof problems[0]; p++) {
            double t = time_sgemm(problems[p].m, problems[p].n, problems[p].k, problems[p].runs,
                                  3.0);
            double flops = 2.0 * problems[p].m * problems[p].n * problems[p].k;
            printf(", \"%s_gflops\": %.2f", problems[p].name, flops / t / 1e9);
            if (problems[p].m < 64) /* weight-bound: bytes of B per second */
                printf(", \"%s_weight_gbs\": %.2f", problems[p].name,
                       4.0 * problems[p].n * problems[p].k / t / 1e9);
            if (problems[p].m == 1) {
                t = time_sgemv(problems[p].n, problems[p].k, problems[p].runs, 3.0);
                printf(", \"sgemv_%dx%d_gflops\": %.2f, \"sgemv_%dx%d_weight_gbs\": %.2f",
                       problems[p].k, problems[p].n, flops / t / 1e9, problems[p].k,
                       problems[p].n, 4.0 * problems[p].n * problems[p].k / t / 1e9);
            }
        }
        if (layers) {
            double t = time_step(&step, STEP_ROWS, 5);
            printf(", \"sgemm_step_%d_rows_ms\": %.3f, \"sgemm_step_%d_rows_gflops\": %.2f",
                   STEP_ROWS, t * 1e3, STEP_ROWS, STEP_ROWS * step.flops_per_row / t / 1e9);
        }
        double t = best_of(sum_job, big, NULL, words, threads, 5, &checksum);
        printf(", \"read_gbs\": %.2f", READ_BYTES / t / 1e9);
        if (working_set) {
            size_t set_words = working_set / sizeof(uint64_t);
            t = best_of(sum_job, big, NULL, set_words, threads, 10, &checksum);
            printf(", \"working_set_bytes\": %zu, \"read_working_set_gbs\": %.2f",
                   set_words * sizeof(uint64_t), set_words * sizeof(uint64_t) / t / 1e9);
        }
        t = best_of(copy_job, big, copy, COPY_BYTES / sizeof(uint64_t), threads, 5, &checksum);
        printf(", \"copy_gbs\": %.2f}", 2.0 * COPY_BYTES / t / 1e9);
        fflush(stdout);
    }
    printf("\n]");
    print_core_peaks();
    printf(", \"checksum\": %llu}\n", (unsigned long long)(checksum & 0xffff));
    free(big);
    free(copy);
    for (int i = 0; i < step.count; i++)
        free(step.w[i]);
    return 0;
}
