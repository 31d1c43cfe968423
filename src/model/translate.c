/* Text in, text out: the sources made ready (model/source.c), decoded in
 * batches of similar length with the chosen strategy, detokenized. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/order.h"
#include "kernels/kernels.h"
#include "model/decoding.h"
#include "model/session_hooks.h"
#include "model/model.h"

int ted_set_threads(int threads)
{
    int cpus = ted_usable_cpus();
    if (threads < 1 || threads > cpus)
        threads = cpus;
    ted_parallel_set_threads(threads);
    return ted_parallel_threads();
}

ted_status ted_threads_new(int threads, ted_threads **pool, ted_error *err)
{
    TED_REQUIRE(pool, err);
    int cpus = ted_usable_cpus();
    *pool = ted_parallel_pool_new(threads < 1 || threads > cpus ? cpus : threads);
    return *pool ? TED_OK : ted_fail(err, TED_ERR_NOMEM, "out of memory for a thread pool");
}

void ted_threads_free(ted_threads *pool)
{
    ted_parallel_pool_free(pool);
}

int ted_threads_count(const ted_threads *pool)
{
    return pool ? ted_parallel_pool_threads(pool) : 0;
}

ted_threads *ted_threads_use(ted_threads *pool)
{
    return ted_parallel_use(pool);
}

ted_translate_options ted_translate_default_options(void)
{
    return (ted_translate_options){
        .decode = {.strategy = TED_DECODE_GREEDY,
                   .beam = ted_beam_default_params(),
                   .sampling = ted_sampling_default_params(),
                   .n_best = 1},
        .batch_size = 32,
        .max_batch_tokens = 0,
        .workers = 1,
        .max_length = 0,
    };
}

/* A decoder layer's weights below which a batch per CPU beats one batch
 * over every CPU (measurements: docs/performance.md#workers). */
enum { WORKER_LAYER_WEIGHTS = 8000000, MAX_WORKERS = 256 };

int ted_translate_workers(const ted_model *m, int cpus)
{
    if (!m || cpus < 2)
        return 1;
    const ted_config *c = &m->config;
    double d = c->d_model;
    double layer = 8 * d * d + 2 * d * c->d_ff;  /* two attentions and the feed-forward */
    if (layer >= WORKER_LAYER_WEIGHTS)
        return 1;
    return cpus < MAX_WORKERS ? cpus : MAX_WORKERS;
}

ted_translate_options ted_translate_model_options(const ted_model *m)
{
    const ted_config *c = &m->config;
    ted_translate_options o = ted_translate_default_options();
    ted_decode_options *d = &o.decode;
    if (c->beam_size > 1) {
        d->strategy = TED_DECODE_BEAM;
        d->beam.beam_size = c->beam_size;
    } else if (c->sample) {
        d->strategy = TED_DECODE_SAMPLE;
    }
    d->beam.length_penalty = c->length_penalty;
    d->beam.length_normalization = c->length_normalization;
    d->beam.early_stopping = c->early_stopping;
    d->sampling.temperature = c->temperature;
    d->sampling.top_k = c->top_k;
    d->sampling.top_p = c->top_p;
    d->rules = (ted_logits_rules){.repetition_penalty = c->repetition_penalty,
                                  .no_repeat_ngram_size = c->no_repeat_ngram_size,
                                  .encoder_no_repeat_ngram_size =
                                      c->encoder_no_repeat_ngram_size,
                                  .min_length = c->min_length};
    return o;
}

ted_status ted_translate_options_check(const ted_model *m, const ted_translate_options *o,
                                       ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(o, err);
    if (o->batch_size < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: batch size %d", o->batch_size);
    if (o->max_batch_tokens < 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: max batch tokens %d",
                        o->max_batch_tokens);
    if (o->workers < 1 || o->workers > MAX_WORKERS)
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: %d workers (1 to %d)", o->workers,
                        MAX_WORKERS);
    return ted_check_decode_options(m, &o->decode, err);
}

/* The sentences of a translation; a blank one (ted_source.blank)
 * translates to the empty string without running the model. */
typedef struct source_batch {
    const int *const *ids;  /* (count): token ids of each sentence */
    const int *lengths;     /* (count) */
    const bool *blank;      /* (count) from ted_prepare_source, or NULL: a sentence of
                             * blank_length ids or fewer is blank */
    int blank_length;
    const int *const *prefix_ids;  /* (count) or NULL: ted_batch.prefix_ids */
    const int *prefix_lengths;     /* (count) */
    int *order;             /* (ordered): the non-blank sentences, shortest first */
    int ordered;
} source_batch;

/* Sentences of similar length decode together: less padding, and batches
 * of short sentences finish early. */
static ted_status order_by_length(source_batch *src, int count, ted_error *err)
{
    src->order = ted_alloc(count > 0 ? count : 1, sizeof(int), "sentence order", err);
    if (!src->order)
        return TED_ERR_NOMEM;
    for (int i = 0; i < count; i++)
        if (src->blank ? !src->blank[i] : src->lengths[i] > src->blank_length)
            src->order[src->ordered++] = i;
    return ted_order_by_key(src->order, src->ordered, src->lengths, "sentence order", err);
}

/* ted_translate_n_best's sources: each text made a ted_source. */
typedef struct prepared {
    ted_source *sources;  /* (count) */
    int **ids;            /* (count) each source's ids, then (count) each prefix */
    int *lengths;         /* (count) each source's length, then (count) each prefix's */
    bool *blank;          /* (count) */
} prepared;

static void prepared_free(prepared *p, int count)
{
    for (int i = 0; p->sources && i < count; i++)
        ted_source_free(&p->sources[i]);
    free(p->sources);
    free(p->ids);
    free(p->lengths);
    free(p->blank);
}

static ted_status prepare_all(const ted_model *m, const char *const *sources, int count,
                              const ted_translate_options *o, prepared *p, int *unknown,
                              ted_error *err)
{
    size_t room = count > 0 ? (size_t)count : 1;
    p->sources = ted_alloc(room, sizeof *p->sources, "sources", err);
    p->ids = ted_alloc(2 * room, sizeof *p->ids, "sources", err);
    p->lengths = ted_alloc(2 * room, sizeof *p->lengths, "sources", err);
    p->blank = ted_alloc(room, sizeof *p->blank, "sources", err);
    if (!p->sources || !p->ids || !p->lengths || !p->blank)
        return TED_ERR_NOMEM;
    for (int i = 0; i < count; i++) {
        ted_source *source = &p->sources[i];
        if (ted_prepare_source(m, sources[i], &o->languages, source, err))
            return ted_fail_context(err, "sentence %d", i + 1);
        p->ids[i] = source->ids;
        p->lengths[i] = source->count;
        p->ids[count + i] = source->prefix_ids;
        p->lengths[count + i] = source->prefix_count;
        p->blank[i] = source->blank;
        if (unknown)
            unknown[i] = source->unknown;
    }
    return TED_OK;
}

/* Moves sentence order[k]'s hypotheses from `found` into `outputs`, with
 * their texts. */
static ted_status take_hypotheses(const ted_model *m, const int *order, int n, int n_best,
                                  ted_hypothesis *found, ted_translation *outputs,
                                  ted_error *err)
{
    for (int k = 0; k < n; k++) {
        int i = order[k];
        for (int j = 0; j < n_best; j++) {
            ted_translation *t = &outputs[(size_t)i * n_best + j];
            t->hypothesis = found[(size_t)k * n_best + j];
            found[(size_t)k * n_best + j] = (ted_hypothesis){0};
            t->text = ted_decode_target(m, t->hypothesis.ids, t->hypothesis.length);
            if (!t->text)
                return ted_fail(err, TED_ERR_NOMEM, "sentence %d: out of memory", i + 1);
        }
    }
    return TED_OK;
}

/* Decodes sentences order[first .. first + n) together and writes their
 * n_best hypotheses and texts into outputs. */
static ted_status translate_batch(ted_session *session, const source_batch *src, int first,
                                  int n, const ted_translate_options *o,
                                  ted_translation *outputs, ted_error *err)
{
    const ted_model *m = ted_session_model(session);
    int n_best = o->decode.n_best;
    const int **ids = ted_alloc(2 * (size_t)n, sizeof *ids, "batch", err);
    int *lengths = ted_alloc(3 * (size_t)n, sizeof(int), "batch", err);
    uint64_t *streams = ted_alloc(n, sizeof *streams, "batch", err);
    ted_hypothesis *found = ted_alloc(ted_mul_size(n, n_best), sizeof *found, "batch", err);
    ted_status s = ids && lengths && streams && found ? TED_OK : TED_ERR_NOMEM;
    if (s) {
        free(ids);
        free(lengths);
        free(streams);
        free(found);
        return s;
    }
    ted_batch batch = {.source_ids = ids, .source_lengths = lengths, .max_lengths = lengths + n,
                       .prefix_ids = src->prefix_ids ? ids + n : NULL,
                       .prefix_lengths = lengths + 2 * n, .streams = streams, .count = n};
    for (int k = 0; k < n; k++) {
        int i = src->order[first + k];
        ids[k] = src->ids[i];
        lengths[k] = src->lengths[i];
        lengths[n + k] = ted_max_target_length(m, lengths[k], o->max_length);
        ids[n + k] = src->prefix_ids ? src->prefix_ids[i] : NULL;
        lengths[2 * n + k] = src->prefix_ids ? src->prefix_lengths[i] : 0;
        streams[k] = o->first_index + (uint64_t)i;
    }
    s = ted_decode(session, &batch, &o->decode, NULL, found, err);
    if (!s)
        s = take_hypotheses(m, src->order + first, n, n_best, found, outputs, err);
    ted_hypotheses_free(found, n * n_best);
    free(ids);
    free(lengths);
    free(streams);
    free(found);
    return s;
}

void ted_translations_free(ted_translation *translations, int count)
{
    for (int i = 0; translations && i < count; i++) {
        free(translations[i].text);
        ted_hypotheses_free(&translations[i].hypothesis, 1);
        translations[i].text = NULL;
    }
}

/* `*o`: the options (NULL: the model's), checked; the outputs zeroed. */
static ted_status prepare(const ted_model *m, const ted_translate_options *options, int count,
                          ted_translation *outputs, ted_translate_options *o, ted_error *err)
{
    *o = options ? *options : ted_translate_model_options(m);
    ted_status s = ted_translate_options_check(m, o, err);
    if (s)
        return s;
    size_t total = ted_mul_size(count, o->decode.n_best);
    if (total > INT_MAX)
        return ted_fail(err, TED_ERR_NOMEM, "translate: %d sentences x %d hypotheses are too many",
                        count, o->decode.n_best);
    for (size_t i = 0; i < total; i++)
        outputs[i] = (ted_translation){0};
    return TED_OK;
}

/* The sentences of the batch that starts at order[first]: at most
 * batch_size and, with max_batch_tokens, at most that many source tokens
 * counting the padding (the sentences come shortest first, so the last is
 * the longest); always one at least. */
static int batch_length(const source_batch *src, int first, const ted_translate_options *o)
{
    int n = 1;
    while (first + n < src->ordered && n < o->batch_size) {
        long long tokens = (long long)(n + 1) * src->lengths[src->order[first + n]];
        if (o->max_batch_tokens > 0 && tokens > o->max_batch_tokens)
            break;
        n++;
    }
    return n;
}

/* A translation shared by its workers: batch k is the sentences
 * order[starts[k] .. starts[k + 1]), claimed in turn by the next free
 * worker; each writes its sentences' outputs only. */
typedef struct translation_run {
    const source_batch *src;
    const ted_translate_options *o;
    const ted_cancel *cancel;  /* watched by every worker's session; NULL: none */
    ted_translation *outputs;
    int *starts;          /* (batches + 1) */
    int batches;
    atomic_int next;      /* the next batch to claim */
    atomic_bool failed;   /* a worker failed: the others stop */
    pthread_mutex_t lock; /* done and the progress callback */
    int done, total;      /* sentences, blank ones counted done from the start */
} translation_run;

typedef struct translate_worker {
    translation_run *run;
    const ted_model *model;
    ted_threads *threads;  /* the pool it computes on (NULL: the process's) */
    pthread_t thread;
    ted_status status;
    ted_error err;
} translate_worker;

/* Decodes batches claimed from the run until none is left or a worker
 * failed. */
static ted_status run_batches(translation_run *run, ted_session *session, ted_error *err)
{
    for (;;) {
        int k = atomic_fetch_add(&run->next, 1);
        if (k >= run->batches || atomic_load(&run->failed))
            return TED_OK;
        if (ted_cancel_requested(run->cancel))
            return ted_fail(err, TED_ERR_CANCELLED, "translate: cancelled before a batch "
                            "(ted_cancel_request)");
        int first = run->starts[k], n = run->starts[k + 1] - first;
        ted_status s = translate_batch(session, run->src, first, n, run->o, run->outputs, err);
        if (s)
            return s;
        pthread_mutex_lock(&run->lock);
        run->done += n;
        if (run->o->progress)
            run->o->progress(run->o->progress_data, run->done, run->total);
        pthread_mutex_unlock(&run->lock);
    }
}

static void *worker_main(void *arg)
{
    translate_worker *w = arg;
    ted_parallel_use(w->threads);  /* the pool of the thread that started it */
    ted_session *session = NULL;
    w->status = ted_session_new(w->model, &session, &w->err);
    ted_session_watch(session, w->run->cancel);
    if (!w->status)
        w->status = run_batches(w->run, session, &w->err);
    if (w->status)
        atomic_store(&w->run->failed, true);
    ted_session_free(session);
    return NULL;
}

/* Decodes the run's batches on `count` workers: the calling thread and
 * count - 1 more (fewer when a thread cannot start). */
static ted_status run_workers(const ted_model *m, translation_run *run, int count,
                              ted_error *err)
{
    translate_worker *w = ted_alloc(count, sizeof *w, "translation workers", err);
    if (!w)
        return TED_ERR_NOMEM;
    int started = 1;
    for (int i = 0; i < count; i++)
        w[i] = (translate_worker){.run = run, .model = m, .threads = ted_parallel_bound()};
    while (started < count && pthread_create(&w[started].thread, NULL, worker_main,
                                             &w[started]) == 0)
        started++;
    worker_main(&w[0]);
    for (int i = 1; i < started; i++)
        pthread_join(w[i].thread, NULL);
    ted_status s = TED_OK;
    for (int i = 0; i < started && !s; i++)
        if ((s = w[i].status) && err)
            *err = w[i].err;
    free(w);
    return s;
}

/* Decodes the ordered sentences in batches (batch_length), on o->workers
 * workers at most. */
static ted_status translate_ordered(const ted_model *m, const source_batch *src, int count,
                                    const ted_translate_call *call, ted_translation *outputs,
                                    ted_error *err)
{
    const ted_translate_options *o = call->options;
    translation_run run = {.src = src, .o = o, .cancel = call->cancel, .outputs = outputs,
                           .done = count - src->ordered, .total = count};
    run.starts = ted_alloc((size_t)src->ordered + 1, sizeof(int), "batches", err);
    if (!run.starts)
        return TED_ERR_NOMEM;
    for (int first = 0; first < src->ordered; first += batch_length(src, first, o))
        run.starts[run.batches++] = first;
    run.starts[run.batches] = src->ordered;
    atomic_init(&run.next, 0);
    atomic_init(&run.failed, false);
    pthread_mutex_init(&run.lock, NULL);
    int workers = o->workers < run.batches ? o->workers : run.batches;
    ted_status s = workers > 0 ? run_workers(m, &run, workers, err) : TED_OK;
    pthread_mutex_destroy(&run.lock);
    free(run.starts);
    return s;
}

/* Decodes the sentences of `src`, shortest first, in the batches of
 * translate_ordered; blank ones get empty hypotheses. call->options are
 * checked. */
static ted_status translate_sources(const ted_model *m, source_batch *src, int count,
                                    const ted_translate_call *call, ted_translation *outputs,
                                    ted_error *err)
{
    size_t total = (size_t)count * call->options->decode.n_best;
    ted_status s = order_by_length(src, count, err);
    if (!s)
        s = translate_ordered(m, src, count, call, outputs, err);
    /* blank sentences: empty hypotheses */
    for (size_t i = 0; !s && i < total; i++)
        if (!outputs[i].text && !(outputs[i].text = calloc(1, 1)))
            s = ted_fail(err, TED_ERR_NOMEM, "out of memory");
    if (s)
        ted_translations_free(outputs, (int)total);
    free(src->order);
    return s;
}

ted_status ted_translate_ids_cancellable(const ted_model *m, const int *const *ids,
                                         const int *lengths, int count,
                                         const ted_translate_call *call,
                                         ted_translation *outputs, ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(call, err);
    TED_REQUIRE(outputs, err);
    if (count > 0 && (!ids || !lengths))
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: %d sentences but no ids", count);
    ted_translate_options o;
    ted_translate_call checked = {&o, call->cancel};
    ted_source empty = {0};  /* what a blank source is, and the prefix of every one */
    ted_status s = prepare(m, call->options, count, outputs, &o, err);
    if (!s)
        s = ted_prepare_source(m, "", &o.languages, &empty, err);
    size_t room = count > 0 ? (size_t)count : 1;
    const int **prefixes = ted_alloc(room, sizeof *prefixes, "prefixes", err);
    int *prefix_lengths = ted_alloc(room, sizeof(int), "prefixes", err);
    if (!s && (!prefixes || !prefix_lengths))
        s = TED_ERR_NOMEM;
    for (int i = 0; !s && i < count; i++) {
        prefixes[i] = empty.prefix_ids;
        prefix_lengths[i] = empty.prefix_count;
    }
    source_batch src = {.ids = ids, .lengths = lengths, .blank_length = empty.count,
                        .prefix_ids = empty.prefix_ids ? prefixes : NULL,
                        .prefix_lengths = prefix_lengths};
    if (!s)
        s = translate_sources(m, &src, count, &checked, outputs, err);
    ted_source_free(&empty);
    free(prefixes);
    free(prefix_lengths);
    return s;
}

ted_status ted_translate_ids(const ted_model *m, const int *const *ids, const int *lengths,
                             int count, const ted_translate_options *options,
                             ted_translation *outputs, ted_error *err)
{
    ted_translate_call call = {options, NULL};
    return ted_translate_ids_cancellable(m, ids, lengths, count, &call, outputs, err);
}

ted_status ted_translate_n_best_cancellable(const ted_model *m, const char *const *sources,
                                            int count, const ted_translate_call *call,
                                            ted_translation *outputs, int *unknown,
                                            ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(call, err);
    TED_REQUIRE(outputs, err);
    if (!sources && count > 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: sources is NULL", __func__);
    ted_translate_options o;
    ted_translate_call checked = {&o, call->cancel};
    ted_status s = prepare(m, call->options, count, outputs, &o, err);
    if (s)
        return s;
    prepared p = {0};
    s = prepare_all(m, sources, count, &o, &p, unknown, err);
    if (!s) {
        source_batch src = {.ids = (const int *const *)p.ids, .lengths = p.lengths,
                            .blank = p.blank, .prefix_ids = (const int *const *)p.ids + count,
                            .prefix_lengths = p.lengths + count};
        s = translate_sources(m, &src, count, &checked, outputs, err);
    }
    prepared_free(&p, count);
    return s;
}

ted_status ted_translate_n_best(const ted_model *m, const char *const *sources, int count,
                                const ted_translate_options *options, ted_translation *outputs,
                                int *unknown, ted_error *err)
{
    ted_translate_call call = {options, NULL};
    return ted_translate_n_best_cancellable(m, sources, count, &call, outputs, unknown, err);
}

ted_status ted_translate(const ted_model *m, const char *const *sources, int count,
                         const ted_translate_options *options, char **outputs, int *unknown,
                         ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(outputs, err);
    if (!sources && count > 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: sources is NULL", __func__);
    ted_translate_options o = options ? *options : ted_translate_model_options(m);
    for (int i = 0; i < count; i++)
        outputs[i] = NULL;
    int n_best = o.decode.n_best;
    if (n_best < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: n-best %d", n_best);
    ted_translation *all = ted_alloc(ted_mul_size(count > 0 ? count : 1, n_best),
                                     sizeof *all, "translations", err);
    if (!all)
        return TED_ERR_NOMEM;
    ted_status s = ted_translate_n_best(m, sources, count, &o, all, unknown, err);
    for (int i = 0; !s && i < count; i++) {
        outputs[i] = all[(size_t)i * n_best].text;
        all[(size_t)i * n_best].text = NULL;
    }
    if (!s)
        ted_translations_free(all, count * n_best);
    free(all);
    return s;
}
