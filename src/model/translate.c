/* Text in, text out: tokenize, decode in batches of similar length with the
 * chosen strategy, detokenize. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/kernels.h"
#include "io/tokenizer.h"
#include "model/decoding.h"
#include "model/session.h"

ted_status ted_encode_source(const ted_model *m, const char *text, int **ids, int *count,
                             int *unknown, ted_error *err)
{
    ted_token_ids out = {NULL, 0, 0};
    ted_status s = ted_tokenize(&m->source_tokenizer, text, strlen(text), &out, err);
    *ids = out.ids;
    *count = out.count;
    if (unknown)
        *unknown = out.unknown;
    return s;
}

ted_status ted_encode_target(const ted_model *m, const char *text, int **ids, int *count,
                             int *unknown, ted_error *err)
{
    ted_token_ids out = {NULL, 0, 0};
    ted_status s = ted_tokenize(&m->target_tokenizer, text, strlen(text), &out, err);
    *ids = out.ids;
    *count = out.count;
    if (unknown)
        *unknown = out.unknown;
    return s;
}

char *ted_decode_target(const ted_model *m, const int *ids, int count)
{
    return ted_detokenize(&m->config, &m->tgt_vocab, m->tgt_spm, ids, count);
}

const char *ted_target_token(const ted_model *m, int id)
{
    const char *t = ted_vocab_token(&m->tgt_vocab, id);
    return t ? t : "";
}

const char *ted_source_token(const ted_model *m, int id)
{
    const char *t = ted_vocab_token(&m->src_vocab, id);
    return t ? t : "";
}

int ted_target_id(const ted_model *m, const char *token)
{
    return ted_vocab_lookup(&m->tgt_vocab, token, strlen(token));
}

void ted_set_threads(int threads)
{
    ted_parallel_set_threads(threads);
}

ted_translate_options ted_translate_default_options(void)
{
    return (ted_translate_options){
        .batch_size = 32,
        .max_length = 0,
        .strategy = TED_DECODE_GREEDY,
        .beam = ted_beam_default_params(),
        .sampling = ted_sampling_default_params(),
        .n_best = 1,
    };
}

ted_translate_options ted_translate_model_options(const ted_model *m)
{
    const ted_config *c = &m->config;
    ted_translate_options o = ted_translate_default_options();
    if (c->beam_size > 1) {
        o.strategy = TED_DECODE_BEAM;
        o.beam.beam_size = c->beam_size;
    } else if (c->sample) {
        o.strategy = TED_DECODE_SAMPLE;
    }
    o.beam.length_penalty = c->length_penalty;
    o.beam.length_normalization = c->length_normalization;
    o.sampling.temperature = c->temperature;
    o.sampling.top_k = c->top_k;
    o.sampling.top_p = c->top_p;
    return o;
}

static ted_status check_options(const ted_model *m, const ted_translate_options *o,
                                ted_error *err)
{
    if (o->batch_size < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: batch size %d", o->batch_size);
    if (o->n_best < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: n-best %d", o->n_best);
    switch (o->strategy) {
    case TED_DECODE_GREEDY:
        if (o->n_best > 1)
            return ted_fail(err, TED_ERR_ARGUMENT,
                            "translate: greedy decoding gives 1 hypothesis, not %d (use beam "
                            "search or sampling for n-best lists)",
                            o->n_best);
        return TED_OK;
    case TED_DECODE_BEAM:
        return ted_check_beam_params(&o->beam, o->n_best, m->config.tgt_vocab_size, err);
    case TED_DECODE_SAMPLE:
        return ted_check_sampling_params(&o->sampling, err);
    }
    return ted_fail(err, TED_ERR_ARGUMENT, "translate: unknown strategy %d", (int)o->strategy);
}

/* A source that tokenizes to nothing, or to BOS EOS alone, translates to
 * the empty string without running the model. */
static bool is_blank(const ted_model *m, int count)
{
    return count <= m->config.source_bos + m->config.source_eos;
}

typedef struct source_batch {
    const int *const *ids;  /* (count): token ids of each sentence */
    const int *lengths;     /* (count) */
    int *order;             /* (ordered): the non-blank sentences, shortest first */
    int ordered;
} source_batch;

typedef struct length_index {
    int length;
    int index;
} length_index;

static int by_length(const void *a, const void *b)
{
    const length_index *x = a, *y = b;
    if (x->length != y->length)
        return (x->length > y->length) - (x->length < y->length);
    return (x->index > y->index) - (x->index < y->index);
}

/* Sentences of similar length decode together: less padding, and batches
 * of short sentences finish early. */
static ted_status order_by_length(const ted_model *m, source_batch *src, int count,
                                  ted_error *err)
{
    src->order = ted_alloc(count > 0 ? count : 1, sizeof(int), "sentence order", err);
    length_index *keys = ted_alloc(count > 0 ? count : 1, sizeof *keys, "sentence order", err);
    if (!src->order || !keys) {
        free(keys);
        return TED_ERR_NOMEM;
    }
    for (int i = 0; i < count; i++)
        if (!is_blank(m, src->lengths[i]))
            keys[src->ordered++] = (length_index){src->lengths[i], i};
    qsort(keys, src->ordered, sizeof *keys, by_length);
    for (int k = 0; k < src->ordered; k++)
        src->order[k] = keys[k].index;
    free(keys);
    return TED_OK;
}

static void free_ids(int **ids, int count)
{
    for (int i = 0; ids && i < count; i++)
        free(ids[i]);
    free(ids);
}

static ted_status tokenize_all(const ted_model *m, const char *const *sources, int count,
                               int **ids, int *lengths, int *unknown, ted_error *err)
{
    for (int i = 0; i < count; i++) {
        int unknown_words = 0;
        ted_status s = ted_encode_source(m, sources[i], &ids[i], &lengths[i], &unknown_words,
                                         err);
        if (s)
            return ted_fail_context(err, "sentence %d", i + 1);
        if (unknown)
            unknown[i] = unknown_words;
    }
    return TED_OK;
}

/* Decodes sentences order[first .. first + n) together with the chosen
 * strategy and writes their n_best hypotheses and texts into outputs. */
static ted_status translate_batch(ted_session *session, const source_batch *src, int first,
                                  int n, const ted_translate_options *o,
                                  ted_translation *outputs, ted_error *err)
{
    const ted_model *m = session->model;
    int n_best = o->n_best;
    const int **ids_of = ted_alloc(n, sizeof *ids_of, "batch", err);
    int *lengths = ted_alloc(2 * (size_t)n, sizeof(int), "batch", err);
    uint64_t *streams = ted_alloc(n, sizeof *streams, "batch", err);
    ted_hypothesis *found = ted_alloc(ted_mul_size(n, n_best), sizeof *found, "batch", err);
    ted_status s = ids_of && lengths && streams && found ? TED_OK : TED_ERR_NOMEM;
    if (!s) {
        int *max_lengths = lengths + n;
        for (int k = 0; k < n; k++) {
            int i = src->order[first + k];
            ids_of[k] = src->ids[i];
            lengths[k] = src->lengths[i];
            max_lengths[k] = ted_max_target_length(m, lengths[k], o->max_length);
            streams[k] = o->first_index + (uint64_t)i;
        }
        switch (o->strategy) {
        case TED_DECODE_BEAM:
            s = ted_beam_search(session, ids_of, lengths, max_lengths, n, &o->beam, n_best,
                                found, err);
            break;
        case TED_DECODE_SAMPLE:
            s = ted_sampling_decode(session, ids_of, lengths, max_lengths, n, &o->sampling,
                                    streams, n_best, found, err);
            break;
        case TED_DECODE_GREEDY:
            s = ted_greedy_search(session, ids_of, lengths, max_lengths, n, found, err);
            break;
        }
        for (int k = 0; k < n && !s; k++) {
            int i = src->order[first + k];
            for (int j = 0; j < n_best && !s; j++) {
                ted_translation *t = &outputs[(size_t)i * n_best + j];
                t->hypothesis = found[(size_t)k * n_best + j];
                found[(size_t)k * n_best + j] = (ted_hypothesis){0};
                t->text = ted_decode_target(m, t->hypothesis.ids, t->hypothesis.length);
                if (!t->text)
                    s = ted_fail(err, TED_ERR_NOMEM, "sentence %d: out of memory", i + 1);
            }
        }
        if (found)
            ted_hypotheses_free(found, n * n_best);
    }
    free(ids_of);
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
    ted_status s = check_options(m, o, err);
    if (s)
        return s;
    size_t total = ted_mul_size(count, o->n_best);
    if (total > INT_MAX)
        return ted_fail(err, TED_ERR_NOMEM, "translate: %d sentences x %d hypotheses are too many",
                        count, o->n_best);
    for (size_t i = 0; i < total; i++)
        outputs[i] = (ted_translation){0};
    return TED_OK;
}

ted_status ted_translate_ids(const ted_model *m, const int *const *ids, const int *lengths,
                             int count, const ted_translate_options *options,
                             ted_translation *outputs, ted_error *err)
{
    if (count > 0 && (!ids || !lengths))
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: %d sentences but no ids", count);
    ted_translate_options o;
    ted_status s = prepare(m, options, count, outputs, &o, err);
    if (s)
        return s;
    size_t total = (size_t)count * o.n_best;
    source_batch src = {.ids = ids, .lengths = lengths};
    ted_session *session = NULL;
    s = order_by_length(m, &src, count, err);
    if (!s)
        s = ted_session_new(m, &session, err);
    for (int first = 0; !s && first < src.ordered; first += o.batch_size) {
        int n = src.ordered - first < o.batch_size ? src.ordered - first : o.batch_size;
        s = translate_batch(session, &src, first, n, &o, outputs, err);
        if (!s && o.progress)
            o.progress(o.progress_data, count - src.ordered + first + n, count);
    }
    /* blank sentences: empty hypotheses */
    for (size_t i = 0; !s && i < total; i++)
        if (!outputs[i].text && !(outputs[i].text = calloc(1, 1)))
            s = ted_fail(err, TED_ERR_NOMEM, "out of memory");
    if (s)
        ted_translations_free(outputs, (int)total);
    ted_session_free(session);
    free(src.order);
    return s;
}

ted_status ted_translate_n_best(const ted_model *m, const char *const *sources, int count,
                                const ted_translate_options *options, ted_translation *outputs,
                                int *unknown, ted_error *err)
{
    ted_translate_options o;
    ted_status s = prepare(m, options, count, outputs, &o, err);
    if (s)
        return s;
    size_t room = count > 0 ? (size_t)count : 1;
    int **ids = ted_alloc(room, sizeof *ids, "sources", err);
    int *lengths = ted_alloc(room, sizeof *lengths, "sources", err);
    s = ids && lengths ? TED_OK : TED_ERR_NOMEM;
    if (!s)
        s = tokenize_all(m, sources, count, ids, lengths, unknown, err);
    if (!s)
        s = ted_translate_ids(m, (const int *const *)ids, lengths, count, &o, outputs, err);
    free_ids(ids, count);
    free(lengths);
    return s;
}

ted_status ted_translate(const ted_model *m, const char *const *sources, int count,
                         const ted_translate_options *options, char **outputs, int *unknown,
                         ted_error *err)
{
    ted_translate_options o = options ? *options : ted_translate_model_options(m);
    for (int i = 0; i < count; i++)
        outputs[i] = NULL;
    if (o.n_best < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "translate: n-best %d", o.n_best);
    ted_translation *all = ted_alloc(ted_mul_size(count > 0 ? count : 1, o.n_best),
                                     sizeof *all, "translations", err);
    if (!all)
        return TED_ERR_NOMEM;
    ted_status s = ted_translate_n_best(m, sources, count, &o, all, unknown, err);
    for (int i = 0; !s && i < count; i++) {
        outputs[i] = all[(size_t)i * o.n_best].text;
        all[(size_t)i * o.n_best].text = NULL;
    }
    if (!s)
        ted_translations_free(all, count * o.n_best);
    free(all);
    return s;
}

/* ---- decoding options as a user gives them --------------------------------- */

static ted_status check_whole(const char *name, int value, int min, int max, ted_error *err)
{
    if (value < min || value > max)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: %d is not a whole number from %d to %d",
                        name, value, min, max);
    return TED_OK;
}

/* value > min (>= min when min_ok) and <= max, finite. */
static ted_status check_number(const char *name, float value, double min, bool min_ok,
                               double max, ted_error *err)
{
    bool above = min_ok ? value >= min : value > min;
    if (isfinite(value) && above && value <= max)
        return TED_OK;
    if (isinf(max))
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: %g is not a number %s %g", name,
                        (double)value, min_ok ? ">=" : ">", min);
    return ted_fail(err, TED_ERR_ARGUMENT, "%s: %g is not a number %s %g and <= %g", name,
                    (double)value, min_ok ? ">=" : ">", min, max);
}

static ted_status check_ranges(const ted_decoding_choice *d, const ted_option_names *n,
                               ted_error *err)
{
    ted_status s = TED_OK;
    if (!s && d->beam_given)
        s = check_whole(n->beam, d->beam, 1, TED_BEAM_MAX, err);
    if (!s && d->n_best_given)
        s = check_whole(n->n_best, d->n_best, 1, TED_N_BEST_MAX, err);
    if (!s && d->max_length_given)
        s = check_whole(n->max_length, d->max_length, 1, TED_MAX_LENGTH_MAX, err);
    if (!s && d->top_k_given)
        s = check_whole(n->top_k, d->top_k, 0, TED_TOP_K_MAX, err);
    if (!s && d->length_penalty_given)
        s = check_number(n->length_penalty, d->length_penalty, 0.0, true, INFINITY, err);
    if (!s && d->temperature_given)
        s = check_number(n->temperature, d->temperature, 0.0, false, INFINITY, err);
    if (!s && d->top_p_given)
        s = check_number(n->top_p, d->top_p, 0.0, false, 1.0, err);
    return s;
}

/* The options that apply to one strategy only, given with another. */
static ted_status check_strategy_options(const ted_decoding_choice *d,
                                         const ted_option_names *n, ted_decoding_strategy s,
                                         ted_error *err)
{
    const char *sampling_option = d->temperature_given ? n->temperature
                                  : d->top_k_given     ? n->top_k
                                  : d->top_p_given     ? n->top_p
                                  : d->seed_given      ? n->seed
                                                       : NULL;
    if (sampling_option && s != TED_DECODE_SAMPLE)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s applies to sampling; add %s",
                        sampling_option, n->sample);
    const char *beam_option = d->length_penalty_given  ? n->length_penalty
                              : d->normalization_given ? n->normalization
                                                       : NULL;
    if (beam_option && s != TED_DECODE_BEAM)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s applies to beam search; add %s N",
                        beam_option, n->beam);
    return TED_OK;
}

/* A seed nobody chose: from /dev/urandom, else the clock and the process. */
static uint64_t random_seed(void)
{
    uint64_t seed = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&seed, sizeof seed, 1, f) != 1) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        seed = ((uint64_t)t.tv_sec * 1000000007u) ^ (uint64_t)t.tv_nsec ^
               ((uint64_t)getpid() << 32);
    }
    if (f)
        fclose(f);
    return seed;
}

static void apply_choice(const ted_decoding_choice *d, ted_translate_options *o)
{
    if (d->beam_given) {
        o->strategy = TED_DECODE_BEAM;
        o->beam.beam_size = d->beam;
    } else if (d->sample) {
        o->strategy = TED_DECODE_SAMPLE;
    }
    if (d->length_penalty_given)
        o->beam.length_penalty = d->length_penalty;
    if (d->normalization_given)
        o->beam.length_normalization = d->normalization;
    if (d->temperature_given)
        o->sampling.temperature = d->temperature;
    if (d->top_k_given)
        o->sampling.top_k = d->top_k;
    if (d->top_p_given)
        o->sampling.top_p = d->top_p;
    o->sampling.seed = d->seed_given ? d->seed : random_seed();
    o->n_best = d->n_best_given ? d->n_best : 1;
    if (d->max_length_given)
        o->max_length = d->max_length;
}

ted_status ted_translate_choose_options(const ted_model *m, const ted_decoding_choice *d,
                                        const ted_option_names *n, ted_translate_options *o,
                                        ted_error *err)
{
    *o = ted_translate_model_options(m);
    if (d->beam_given && d->sample)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s and %s exclude each other", n->beam,
                        n->sample);
    ted_status s = check_ranges(d, n, err);
    if (s)
        return s;
    apply_choice(d, o);
    if ((s = check_strategy_options(d, n, o->strategy, err)))
        return s;
    int vocab = m->config.tgt_vocab_size;
    if (o->strategy == TED_DECODE_BEAM && o->beam.beam_size >= vocab)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "%s %d: the beam must be smaller than the target vocabulary (%d "
                        "tokens)",
                        n->beam, o->beam.beam_size, vocab);
    if (o->n_best > 1 && o->strategy == TED_DECODE_GREEDY)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "%s %d needs beam search (%s %d or more) or %s", n->n_best, o->n_best,
                        n->beam, o->n_best, n->sample);
    if (o->strategy == TED_DECODE_BEAM && o->n_best > o->beam.beam_size)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s %d is more than the beam size %d",
                        n->n_best, o->n_best, o->beam.beam_size);
    return check_options(m, o, err);
}
