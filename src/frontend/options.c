/* Decoding options as a user gives them (frontend/options.h). */
#include "frontend/options.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ted/util.h"

bool frontend_option_word(ted_option option, const char *word, int *value)
{
    const char *known;
    for (int i = 0; word && (known = ted_option_word(option, i)); i++) {
        if (!strcmp(word, known)) {
            *value = i;
            return true;
        }
    }
    return false;
}

bool frontend_add_bad_words(frontend_choice *d, const int *ids, int count)
{
    if (count < 1 || count + 1 > TED_BAD_WORDS_MAX - d->bad_words_length)
        return false;
    memcpy(d->bad_words + d->bad_words_length, ids, sizeof(int) * (size_t)count);
    d->bad_words_length += count;
    d->bad_words[d->bad_words_length++] = -1;
    d->bad_words_given = true;
    return true;
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
    if (d->repetition_penalty_given)
        o->rules.repetition_penalty = d->repetition_penalty;
    if (d->no_repeat_ngram_size_given)
        o->rules.no_repeat_ngram_size = d->no_repeat_ngram_size;
    if (d->min_length_given)
        o->rules.min_length = d->min_length;
    if (d->min_new_tokens_given)
        o->rules.min_new_tokens = d->min_new_tokens;
    if (d->encoder_ngram_given)
        o->rules.encoder_no_repeat_ngram_size = d->encoder_ngram;
    if (d->bad_words_given) {
        o->rules.bad_words_length = d->bad_words_length;
        memcpy(o->rules.bad_words, d->bad_words, sizeof o->rules.bad_words);
    }
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

/* The options `d` gives, for ted_translate_options_check_given. */
static unsigned given_options(const frontend_choice *d)
{
    const bool given[TED_OPTION_COUNT] = {
        [TED_OPTION_BEAM_SIZE] = d->beam_given,
        [TED_OPTION_SAMPLE] = d->sample,
        [TED_OPTION_N_BEST] = d->n_best_given,
        [TED_OPTION_LENGTH_PENALTY] = d->length_penalty_given,
        [TED_OPTION_LENGTH_NORMALIZATION] = d->normalization_given,
        [TED_OPTION_EARLY_STOPPING] = d->early_stopping_given,
        [TED_OPTION_TEMPERATURE] = d->temperature_given,
        [TED_OPTION_TOP_K] = d->top_k_given,
        [TED_OPTION_TOP_P] = d->top_p_given,
        [TED_OPTION_SEED] = d->seed_given,
        [TED_OPTION_MAX_LENGTH] = d->max_length_given,
        [TED_OPTION_REPETITION_PENALTY] = d->repetition_penalty_given,
        [TED_OPTION_NO_REPEAT_NGRAM_SIZE] = d->no_repeat_ngram_size_given,
        [TED_OPTION_MIN_LENGTH] = d->min_length_given,
        [TED_OPTION_MIN_NEW_TOKENS] = d->min_new_tokens_given,
        [TED_OPTION_BAD_WORDS_IDS] = d->bad_words_given,
        [TED_OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE] = d->encoder_ngram_given,
    };
    unsigned set = 0;
    for (int i = 0; i < TED_OPTION_COUNT; i++)
        set |= given[i] ? 1u << i : 0;
    return set;
}

ted_status frontend_choose_options(const ted_model *m, const frontend_choice *d,
                                   const frontend_option_names n, ted_translate_options *t,
                                   ted_error *err)
{
    *t = ted_translate_model_options(m);
    apply_choice(d, t);
    ted_status s = ted_translate_options_check_given(m, t, given_options(d), err);
    if (s && err && err->option != TED_OPTION_NONE)
        ted_error_spell_options(err, n);
    if (!s)
        s = check_languages(m, &t->languages, err);
    return s;
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
