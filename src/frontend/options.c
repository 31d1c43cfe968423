/* Decoding options as a user gives them (frontend/options.h). */
#include "frontend/options.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

/* Indexed by ted_early_stopping. */
static const char *const early_stopping_names[] = {"false", "true", "never"};

const char frontend_early_stopping_words[] = "false, true or never";

bool frontend_early_stopping(const char *word, ted_early_stopping *out)
{
    for (int i = 0; word && i < (int)(sizeof early_stopping_names / sizeof *early_stopping_names);
         i++) {
        if (!strcmp(word, early_stopping_names[i])) {
            *out = (ted_early_stopping)i;
            return true;
        }
    }
    return false;
}

const char *frontend_early_stopping_name(ted_early_stopping setting)
{
    int n = (int)(sizeof early_stopping_names / sizeof *early_stopping_names);
    return (int)setting >= 0 && (int)setting < n ? early_stopping_names[setting]
                                                 : early_stopping_names[0];
}

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

static ted_status check_ranges(const frontend_choice *d, const frontend_option_names *n,
                               ted_error *err)
{
    ted_status s = TED_OK;
    if (!s && d->beam_given)
        s = check_whole(n->beam, d->beam, 1, FRONTEND_BEAM_MAX, err);
    if (!s && d->n_best_given)
        s = check_whole(n->n_best, d->n_best, 1, FRONTEND_N_BEST_MAX, err);
    if (!s && d->max_length_given)
        s = check_whole(n->max_length, d->max_length, 1, FRONTEND_MAX_LENGTH_MAX, err);
    if (!s && d->top_k_given)
        s = check_whole(n->top_k, d->top_k, 0, FRONTEND_TOP_K_MAX, err);
    if (!s && d->length_penalty_given)
        s = check_number(n->length_penalty, d->length_penalty, 0.0, true, INFINITY, err);
    if (!s && d->temperature_given)
        s = check_number(n->temperature, d->temperature, 0.0, false, INFINITY, err);
    if (!s && d->top_p_given)
        s = check_number(n->top_p, d->top_p, 0.0, false, 1.0, err);
    return s;
}

/* The options that apply to one strategy only, given with another. */
static ted_status check_strategy_options(const frontend_choice *d,
                                         const frontend_option_names *n, ted_decoding_strategy s,
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
    const char *beam_option = d->length_penalty_given   ? n->length_penalty
                              : d->normalization_given  ? n->normalization
                              : d->early_stopping_given ? n->early_stopping
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

static void apply_choice(const frontend_choice *d, ted_translate_options *t)
{
    ted_decode_options *o = &t->decode;
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
    if (d->early_stopping_given)
        o->beam.early_stopping = d->early_stopping;
    if (d->temperature_given)
        o->sampling.temperature = d->temperature;
    if (d->top_k_given)
        o->sampling.top_k = d->top_k;
    if (d->top_p_given)
        o->sampling.top_p = d->top_p;
    o->sampling.seed = d->seed_given ? d->seed : random_seed();
    o->n_best = d->n_best_given ? d->n_best : 1;
    if (d->max_length_given)
        t->max_length = d->max_length;
    t->languages = d->languages;
}

/* The languages, checked before any sentence as ted_prepare_source checks
 * each. */
static ted_status check_languages(const ted_model *m, const ted_languages *languages,
                                  ted_error *err)
{
    ted_source empty;
    ted_status s = ted_prepare_source(m, "", languages, &empty, err);
    ted_source_free(&empty);
    return s;
}

ted_status frontend_choose_options(const ted_model *m, const frontend_choice *d,
                                   const frontend_option_names *n, ted_translate_options *t,
                                   ted_error *err)
{
    *t = ted_translate_model_options(m);
    ted_decode_options *o = &t->decode;
    if (d->beam_given && d->sample)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s and %s exclude each other", n->beam,
                        n->sample);
    ted_status s = check_ranges(d, n, err);
    if (s)
        return s;
    apply_choice(d, t);
    if ((s = check_languages(m, &t->languages, err)))
        return s;
    if ((s = check_strategy_options(d, n, o->strategy, err)))
        return s;
    int vocab = ted_model_config(m)->tgt_vocab_size;
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
    return ted_translate_options_check(m, t, err);
}

const char *frontend_source_language(const ted_model *model, const ted_languages *languages)
{
    const char *const *codes;
    if (languages && languages->source)
        return languages->source;
    return ted_model_languages(model, TED_SIDE_SOURCE, &codes) == 1 ? codes[0] : NULL;
}

int frontend_apply_batching(const ted_model *m, const frontend_batching *given, int cpus,
                            ted_translate_options *o)
{
    if (cpus < 1)
        cpus = 1;
    if (given->batch_size > 0)
        o->batch_size = given->batch_size;
    else if (given->max_batch_tokens > 0)
        o->batch_size = FRONTEND_BATCH_SIZE_MAX;
    o->max_batch_tokens = given->max_batch_tokens;
    int workers = given->workers, threads = given->threads;
    if (workers == 0)
        workers = threads > 0 ? 1 : ted_translate_workers(m, cpus);
    if (threads == 0)
        threads = cpus / workers;
    if (workers > 1 && threads > cpus - workers + 1)
        threads = cpus - workers + 1;
    o->workers = workers;
    return threads > 0 ? threads : 1;
}
