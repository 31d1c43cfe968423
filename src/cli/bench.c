/* ted bench: how fast a model loads, encodes and decodes, on random
 * source ids; every figure is the median of the timed runs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cli.h"
#include "ted/util.h"

static const char usage[] =
    "usage: ted bench -m DIR [OPTIONS]\n"
    "\n"
    "Decodes random source sentences for exactly N greedy steps (EOS ignored):\n"
    "one warm-up run, then R timed runs. Prints one JSON object of medians:\n"
    "load_ms, encode_ms, per_token_ms (one decoder step for the whole batch),\n"
    "tokens_per_s (batch * N / decode time), peak_rss_mib, threads, batch.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR     the model directory\n"
    "  --batch B           sentences per batch (default 1)\n"
    "  --source-len S      source tokens per sentence (default 32)\n"
    "  --new-tokens N      decoder steps (default 64)\n"
    "  --threads T         threads for the matrix products (default 1; at\n"
    "                      most the CPUs this process may use)\n"
    "  --repeat R          timed runs (default 5)\n"
    "  --seed X            seed of the random source ids (default 1)\n"
    "  --shortlist FILE    restrict the final Linear + Softmax to a vocabulary\n"
    "                      shortlist (`ted shortlist`); shortlist_rows: the\n"
    "                      targets of the batch's union\n"
    "  -h, --help          show this help\n";

typedef struct bench_options {
    const char *model_dir;
    const char *shortlist;
    int batch, source_len, new_tokens, threads, repeat;
    unsigned seed;
} bench_options;

typedef struct bench_run {
    double encode_ms;
    double decode_ms;
} bench_run;

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* xorshift: the same ids on every machine for a seed. */
static uint32_t next_random(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

/* Greedy's choice of every row, as ted translate makes it (the best token
 * that is not banned, ties to the lower id), without the log-probabilities:
 * `allowed` (vocab) is scratch for one row. */
static void choose_best(const ted_model *model, const float *logits, int batch, int vocab,
                        float *allowed, int *tokens)
{
    for (int b = 0; b < batch; b++) {
        memcpy(allowed, logits + (size_t)b * vocab, (size_t)vocab * sizeof *allowed);
        ted_ban_tokens(model, allowed);
        ted_top_k(allowed, vocab, 1, &tokens[b], NULL);
    }
}

static int run_once(ted_session *session, const ted_config_view *c, const bench_options *o,
                    int **sources, int *tokens, bench_run *run)
{
    ted_error err = {0};
    int lengths[o->batch];
    for (int b = 0; b < o->batch; b++)
        lengths[b] = o->source_len;
    float *allowed = malloc((size_t)c->model.tgt_vocab_size * sizeof *allowed);
    if (!allowed)
        return cli_error("out of memory");
    double start = 1e3 * ted_seconds();
    if (ted_session_encode(session, (const int *const *)sources, lengths, o->batch,
                           o->new_tokens, &err)) {
        free(allowed);
        return cli_error("%s", err.message);
    }
    double encoded = 1e3 * ted_seconds();
    for (int b = 0; b < o->batch; b++)
        tokens[b] = c->tokens.decoder_start_id;
    for (int t = 0; t < o->new_tokens; t++) {
        const float *logits;
        if (ted_session_step(session, tokens, &logits, &err)) {
            free(allowed);
            return cli_error("%s", err.message);
        }
        choose_best(ted_session_model(session), logits, o->batch, c->model.tgt_vocab_size, allowed,
                    tokens);
    }
    double decoded = 1e3 * ted_seconds();
    free(allowed);
    run->encode_ms = encoded - start;
    run->decode_ms = decoded - encoded;
    return 0;
}

/* The medians of the R runs, as one JSON object. */
static void print_results(const bench_options *o, const ted_session *session, double *load,
                          double *encode, double *per_token, double *tokens_per_s, int threads)
{
    int R = o->repeat;
    struct rusage resources;
    getrusage(RUSAGE_SELF, &resources);
    printf("{\"kernels\": \"%s\", ", ted_cpu_kernels());
    printf("\"load_ms\": %.3f, \"encode_ms\": %.3f, \"per_token_ms\": %.3f, "
           "\"tokens_per_s\": %.1f, \"peak_rss_mib\": %.1f, \"threads\": %d, "
           "\"batch\": %d, \"source_len\": %d, \"new_tokens\": %d, \"repeat\": %d, "
           "\"shortlist_rows\": %d}\n",
           median(load, R), median(encode, R), median(per_token, R),
           median(tokens_per_s, R), resources.ru_maxrss / 1024.0, threads, o->batch,
           o->source_len, o->new_tokens, R,
           ted_session_shortlist_size(session));
}

static int run_bench(const bench_options *o)
{
    int R = o->repeat;
    double load[R], encode[R], per_token[R], tokens_per_s[R];
    ted_model *model = NULL;
    for (int r = 0; r < R; r++) {
        ted_model_free(model);
        double start = 1e3 * ted_seconds();
        if (!(model = cli_load_model(o->model_dir)))
            return 1;
        load[r] = 1e3 * ted_seconds() - start;
        if (cli_use_shortlist(model, o->shortlist, "bench")) {
            ted_model_free(model);
            return 1;
        }
    }
    int threads = cli_set_threads(o->threads);
    const ted_config_view c = ted_config_get_view(ted_model_config(model));
    ted_session *session = NULL;
    ted_error err = {0};
    int *sources[o->batch];
    int tokens[o->batch];
    uint32_t state = o->seed ? o->seed : 1;
    int status = 0, allocated = 0;
    if (o->source_len > c.model.max_positions || o->new_tokens > c.model.max_positions)
        status = cli_error("bench: lengths exceed the model's max_positions (%d)",
                           c.model.max_positions);
    for (int b = 0; b < o->batch && !status; b++, allocated++) {
        if (!(sources[b] = malloc(sizeof(int) * o->source_len))) {
            status = cli_error("out of memory");
            break;
        }
        for (int t = 0; t < o->source_len; t++)
            sources[b][t] =
                4 + (int)(next_random(&state) % (uint32_t)(c.model.src_vocab_size - 4));
    }
    if (!status && ted_session_new(model, &session, &err))
        status = cli_error("%s", err.message);
    bench_run run;
    if (!status)
        status = run_once(session, &c, o, sources, tokens, &run); /* warm-up */
    for (int r = 0; r < R && !status; r++) {
        status = run_once(session, &c, o, sources, tokens, &run);
        encode[r] = run.encode_ms;
        per_token[r] = run.decode_ms / o->new_tokens;
        tokens_per_s[r] = o->batch * o->new_tokens / (run.decode_ms / 1e3);
    }
    if (!status)
        print_results(o, session, load, encode, per_token, tokens_per_s, threads);
    for (int b = 0; b < allocated; b++)
        free(sources[b]);
    ted_session_free(session);
    ted_model_free(model);
    return status;
}

typedef struct bench_args {
    bench_options o;
    int seed;
} bench_args;

static bool bench_option(cli_args *a, const char *option, void *options)
{
    bench_args *b = options;
    if (!strcmp(option, "--batch"))
        cli_take_int(a, option, 1, 1024, &b->o.batch);
    else if (!strcmp(option, "--source-len"))
        cli_take_int(a, option, 1, 1 << 16, &b->o.source_len);
    else if (!strcmp(option, "--new-tokens"))
        cli_take_int(a, option, 1, 1 << 16, &b->o.new_tokens);
    else if (!strcmp(option, "--threads"))
        cli_take_int(a, option, 1, 256, &b->o.threads);
    else if (!strcmp(option, "--repeat"))
        cli_take_int(a, option, 1, 1000, &b->o.repeat);
    else if (!strcmp(option, "--seed"))
        cli_take_int(a, option, 0, INT32_MAX, &b->seed);
    else if (!cli_shortlist_option(a, option, &b->o.shortlist))
        return false;
    return true;
}

static int bench_command(ted_model *model, const cli_args *a, void *options)
{
    (void)model;
    bench_args *b = options;
    b->o.seed = (unsigned)b->seed;
    b->o.model_dir = a->model_dir;
    return run_bench(&b->o);
}

int cli_bench(int argc, char **argv)
{
    static const cli_command command = {"bench", usage, bench_option, NULL, bench_command, true};
    bench_args b = {.o = {.batch = 1, .source_len = 32, .new_tokens = 64, .threads = 1,
                          .repeat = 5, .seed = 1},
                    .seed = 1};
    return cli_run(&command, &b, argc, argv);
}
