/*
 * The decoding options: one table (key, kind, range, the strategy an
 * option applies to, where its words come from) and the checks that walk
 * it, for the library's own callers and for every front end (ted
 * translate's flags, ted serve's fields, the Python binding's arguments),
 * which spell the keys their own way (ted_error_spell_options). The
 * defaults are config.yaml's (io/config.c's table, through
 * ted_translate_model_options); its words for length_normalization and
 * early_stopping are the options' words.
 */
#include "model/options.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "io/config.h"
#include "model/decoding.h"
#include "model/model.h"

typedef enum option_kind {
    KIND_WHOLE,   /* an int of at least min; max caps what a user gives (given), not
                   * what a program sets (40000 samples of a sentence) */
    KIND_NUMBER,  /* a finite float above min (or at it, min_included), at most max */
    KIND_WORD,    /* an enum, one of the words of config_key */
    KIND_FLAG,    /* chooses the strategy */
    KIND_SEED,    /* any uint64 */
    KIND_IDS,     /* token sequences (ted_logits_rules.bad_words): checked against the
                   * vocabulary (check_bad_words) */
} option_kind;

/* The strategy an option applies to: one of ted_decoding_strategy, or
 * EVERY_STRATEGY. */
#define EVERY_STRATEGY (-1)

typedef struct option_spec {
    const char *key;
    option_kind kind;
    double min, max;
    bool min_included;
    int strategy;
    const char *config_key;  /* a word option: the config.yaml key of its words */
} option_spec;

static const option_spec table[TED_OPTION_COUNT] = {
    [TED_OPTION_BEAM_SIZE] = {"beam_size", KIND_WHOLE, 1, TED_BEAM_SIZE_MAX, true,
                              TED_DECODE_BEAM, NULL},
    [TED_OPTION_SAMPLE] = {"sample", KIND_FLAG, 0, 0, true, TED_DECODE_SAMPLE, NULL},
    [TED_OPTION_N_BEST] = {"n_best", KIND_WHOLE, 1, TED_N_BEST_MAX, true, EVERY_STRATEGY, NULL},
    [TED_OPTION_LENGTH_PENALTY] = {"length_penalty", KIND_NUMBER, 0, INFINITY, true,
                                   TED_DECODE_BEAM, NULL},
    [TED_OPTION_LENGTH_NORMALIZATION] = {"length_normalization", KIND_WORD, 0, 0, true,
                                         TED_DECODE_BEAM, "decoding.length_normalization"},
    [TED_OPTION_EARLY_STOPPING] = {"early_stopping", KIND_WORD, 0, 0, true, TED_DECODE_BEAM,
                                   "decoding.early_stopping"},
    [TED_OPTION_TEMPERATURE] = {"temperature", KIND_NUMBER, 0, INFINITY, false,
                                TED_DECODE_SAMPLE, NULL},
    [TED_OPTION_TOP_K] = {"top_k", KIND_WHOLE, 0, TED_TOP_K_MAX, true, TED_DECODE_SAMPLE, NULL},
    [TED_OPTION_TOP_P] = {"top_p", KIND_NUMBER, 0, 1, false, TED_DECODE_SAMPLE, NULL},
    [TED_OPTION_SEED] = {"seed", KIND_SEED, 0, 0, true, TED_DECODE_SAMPLE, NULL},
    [TED_OPTION_MAX_LENGTH] = {"max_length", KIND_WHOLE, 1, TED_MAX_LENGTH_MAX, true,
                               EVERY_STRATEGY, NULL},
    [TED_OPTION_REPETITION_PENALTY] = {"repetition_penalty", KIND_NUMBER, 0, INFINITY, true,
                                       EVERY_STRATEGY, NULL},
    [TED_OPTION_NO_REPEAT_NGRAM_SIZE] = {"no_repeat_ngram_size", KIND_WHOLE, 0,
                                         TED_MAX_LENGTH_MAX, true, EVERY_STRATEGY, NULL},
    [TED_OPTION_MIN_LENGTH] = {"min_length", KIND_WHOLE, 0, TED_MAX_LENGTH_MAX, true,
                               EVERY_STRATEGY, NULL},
    [TED_OPTION_MIN_NEW_TOKENS] = {"min_new_tokens", KIND_WHOLE, 0, TED_MAX_LENGTH_MAX, true,
                                   EVERY_STRATEGY, NULL},
    [TED_OPTION_BAD_WORDS_IDS] = {"bad_words_ids", KIND_IDS, 0, TED_BAD_WORDS_MAX, true,
                                  EVERY_STRATEGY, NULL},
    [TED_OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE] = {"encoder_no_repeat_ngram_size", KIND_WHOLE, 0,
                                                 TED_MAX_LENGTH_MAX, true, EVERY_STRATEGY,
                                                 NULL},
};

static const option_spec *spec(ted_option option)
{
    return option > TED_OPTION_NONE && option < TED_OPTION_COUNT ? &table[option] : NULL;
}

const char *ted_option_key(ted_option option)
{
    return spec(option) ? spec(option)->key : NULL;
}

bool ted_option_bounds(ted_option option, double *min, double *max, bool *min_included)
{
    const option_spec *o = spec(option);
    if (!o || (o->kind != KIND_WHOLE && o->kind != KIND_NUMBER))
        return false;
    *min = o->min;
    *max = o->max;
    *min_included = o->min_included;
    return true;
}

const char *ted_option_word(ted_option option, int value)
{
    const option_spec *o = spec(option);
    return o && o->kind == KIND_WORD ? ted_config_word(o->config_key, value) : NULL;
}

size_t ted_option_words_text(ted_option option, const char *quote, char *out, size_t size)
{
    size_t at = 0;
    int count = 0;
    while (ted_option_word(option, count))
        count++;
    if (size > 0)
        out[0] = '\0';
    for (int i = 0; i < count; i++) {
        const char *join = i == 0 ? "" : i + 1 < count ? ", " : " or ";
        int n = snprintf(out + at, at < size ? size - at : 0, "%s%s%s%s", join, quote,
                         ted_option_word(option, i), quote);
        at += n > 0 ? (size_t)n : 0;
    }
    return at;
}

/* ---- the values of a translation's options -------------------------------------- */

static double value_of(const ted_decode_options *d, int max_length, ted_option option)
{
    switch (option) {
    case TED_OPTION_BEAM_SIZE: return d->beam.beam_size;
    case TED_OPTION_N_BEST: return d->n_best;
    case TED_OPTION_LENGTH_PENALTY: return d->beam.length_penalty;
    case TED_OPTION_LENGTH_NORMALIZATION: return (double)d->beam.length_normalization;
    case TED_OPTION_EARLY_STOPPING: return (double)d->beam.early_stopping;
    case TED_OPTION_TEMPERATURE: return d->sampling.temperature;
    case TED_OPTION_TOP_K: return d->sampling.top_k;
    case TED_OPTION_TOP_P: return d->sampling.top_p;
    case TED_OPTION_MAX_LENGTH: return max_length;
    case TED_OPTION_REPETITION_PENALTY: return d->rules.repetition_penalty;
    case TED_OPTION_NO_REPEAT_NGRAM_SIZE: return d->rules.no_repeat_ngram_size;
    case TED_OPTION_MIN_LENGTH: return d->rules.min_length;
    case TED_OPTION_MIN_NEW_TOKENS: return d->rules.min_new_tokens;
    case TED_OPTION_BAD_WORDS_IDS: return d->rules.bad_words_length;
    case TED_OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE: return d->rules.encoder_no_repeat_ngram_size;
    default: return 0.0;
    }
}

static const char *strategy_name(int strategy)
{
    return strategy == TED_DECODE_BEAM ? "beam search" : "sampling";
}

/* The option's value within its range (a word: one of its words); the cap
 * of a whole number only when the user gave it. */
static ted_status check_range(ted_option option, double value, bool given, ted_error *err)
{
    const option_spec *o = &table[option];
    if (o->kind == KIND_WHOLE && !(value >= o->min && (!given || value <= o->max)))
        return ted_fail_option(err, option, "%s: %.0f is not a whole number from %.0f to %.0f",
                               o->key, value, o->min, o->max);
    bool above = o->min_included ? value >= o->min : value > o->min;
    const char *relation = o->min_included ? ">=" : ">";
    if (o->kind == KIND_NUMBER && !(isfinite(value) && above && value <= o->max))
        return isinf(o->max) ? ted_fail_option(err, option, "%s: %g is not a number %s %g",
                                               o->key, value, relation, o->min)
                             : ted_fail_option(err, option,
                                               "%s: %g is not a number %s %g and <= %g", o->key,
                                               value, relation, o->min, o->max);
    if (o->kind == KIND_WORD && !ted_option_word(option, (int)value)) {
        char words[128];
        ted_option_words_text(option, "", words, sizeof words);
        return ted_fail_option(err, option, "%s: %.0f is none of %s", o->key, value, words);
    }
    return TED_OK;
}

/* Each option given, or applying to the strategy, in its range; none of
 * another strategy given. max_length 0 (the model's bound) is no value. */
static ted_status check_each(const ted_decode_options *d, int max_length, unsigned given,
                             ted_error *err)
{
    for (int i = TED_OPTION_NONE + 1; i < TED_OPTION_COUNT; i++) {
        const option_spec *o = &table[i];
        bool is_given = given & 1u << i;
        bool applies = o->strategy == EVERY_STRATEGY || o->strategy == (int)d->strategy;
        if (i == TED_OPTION_MAX_LENGTH && !is_given && max_length == 0)
            continue;
        ted_status s = is_given || applies
                           ? check_range(i, value_of(d, max_length, i), is_given, err)
                           : TED_OK;
        if (s)
            return s;
    }
    for (int i = TED_OPTION_NONE + 1; i < TED_OPTION_COUNT; i++) {
        const option_spec *o = &table[i];
        if (!(given & 1u << i) || o->kind == KIND_FLAG || i == TED_OPTION_BEAM_SIZE ||
            o->strategy == EVERY_STRATEGY || o->strategy == (int)d->strategy)
            continue;
        if (o->strategy == TED_DECODE_SAMPLE)
            return ted_fail_option(err, i, "%s applies to %s; add %s", o->key,
                                   strategy_name(o->strategy), table[TED_OPTION_SAMPLE].key);
        return ted_fail_option(err, i, "%s applies to %s; add %s N", o->key,
                               strategy_name(o->strategy), table[TED_OPTION_BEAM_SIZE].key);
    }
    return TED_OK;
}

/* bad_words_ids: sequences of target ids, each ended by -1, within the
 * array. */
static ted_status check_bad_words(const ted_logits_rules *r, int vocab, ted_error *err)
{
    const char *key = table[TED_OPTION_BAD_WORDS_IDS].key;
    int n = r->bad_words_length;
    if (n < 0 || n > TED_BAD_WORDS_MAX)
        return ted_fail_option(err, TED_OPTION_BAD_WORDS_IDS,
                               "%s: %d ints, more than %d (each sequence's ids and one more)",
                               key, n, TED_BAD_WORDS_MAX);
    for (int at = 0, begin = 0; at < n; at++) {
        int id = r->bad_words[at];
        if (id == -1 && at == begin)
            return ted_fail_option(err, TED_OPTION_BAD_WORDS_IDS, "%s: an empty sequence", key);
        if (id < -1 || id >= vocab)
            return ted_fail_option(err, TED_OPTION_BAD_WORDS_IDS,
                                   "%s: %d is not a target token (0 to %d)", key, id,
                                   vocab - 1);
        begin = id == -1 ? at + 1 : begin;
    }
    if (n > 0 && r->bad_words[n - 1] != -1)
        return ted_fail_option(err, TED_OPTION_BAD_WORDS_IDS,
                               "%s: the last sequence does not end with -1", key);
    return TED_OK;
}

/* The rules between options: the beam and the vocabulary, n_best and the
 * strategy. */
static ted_status check_together(const ted_decode_options *d, int vocab, ted_error *err)
{
    const char *beam = table[TED_OPTION_BEAM_SIZE].key, *n_best = table[TED_OPTION_N_BEST].key;
    if (d->strategy == TED_DECODE_BEAM && d->beam.beam_size >= vocab)
        return ted_fail_option(err, TED_OPTION_BEAM_SIZE,
                               "%s %d: the beam must be smaller than the target vocabulary (%d "
                               "tokens)",
                               beam, d->beam.beam_size, vocab);
    if (d->n_best > 1 && d->strategy == TED_DECODE_GREEDY)
        return ted_fail_option(err, TED_OPTION_N_BEST,
                               "%s %d needs beam search (%s %d or more) or %s", n_best,
                               d->n_best, beam, d->n_best, table[TED_OPTION_SAMPLE].key);
    if (d->strategy == TED_DECODE_BEAM && d->n_best > d->beam.beam_size)
        return ted_fail_option(err, TED_OPTION_N_BEST, "%s %d is more than the beam size %d",
                               n_best, d->n_best, d->beam.beam_size);
    return check_bad_words(&d->rules, vocab, err);
}

ted_status ted_check_options(const ted_model *m, const ted_decode_options *d, int max_length,
                             unsigned given, ted_error *err)
{
    TED_REQUIRE(m, err);
    if (!d)
        return ted_fail(err, TED_ERR_ARGUMENT, "decode: no options");
    if (d->strategy != TED_DECODE_GREEDY && d->strategy != TED_DECODE_BEAM &&
        d->strategy != TED_DECODE_SAMPLE)
        return ted_fail(err, TED_ERR_ARGUMENT, "decode: unknown strategy %d", (int)d->strategy);
    unsigned both = 1u << TED_OPTION_BEAM_SIZE | 1u << TED_OPTION_SAMPLE;
    if ((given & both) == both)
        return ted_fail_option(err, TED_OPTION_BEAM_SIZE, "%s and %s exclude each other",
                               table[TED_OPTION_BEAM_SIZE].key, table[TED_OPTION_SAMPLE].key);
    ted_status s = check_each(d, max_length, given, err);
    if (!s)
        s = check_together(d, ted_model_config(m)->tgt_vocab_size, err);
    return s;
}

ted_status ted_check_decode_options(const ted_model *m, const ted_decode_options *o,
                                    ted_error *err)
{
    return ted_check_options(m, o, 0, 0, err);
}

ted_status ted_translate_options_check_given(const ted_model *m, const ted_translate_options *o,
                                             unsigned given, ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(o, err);
    ted_status s = ted_check_options(m, &o->decode, o->max_length, given, err);
    return s ? s : ted_translate_options_check(m, o, err);
}

/* ---- front ends' spellings ------------------------------------------------------ */

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* The option whose key starts `text` as a whole word, else TED_OPTION_NONE. */
static ted_option key_at(const char *text)
{
    for (int i = TED_OPTION_NONE + 1; i < TED_OPTION_COUNT; i++) {
        size_t n = strlen(table[i].key);
        if (!strncmp(text, table[i].key, n) && !word_char(text[n]))
            return (ted_option)i;
    }
    return TED_OPTION_NONE;
}

void ted_error_spell_options(ted_error *err, const char *const *spelling)
{
    if (!err || !spelling)
        return;
    char out[TED_ERROR_MESSAGE_SIZE];
    size_t at = 0;
    const char *m = err->message;
    for (size_t i = 0; m[i] && at + 1 < sizeof out;) {
        ted_option key = i == 0 || !word_char(m[i - 1]) ? key_at(m + i) : TED_OPTION_NONE;
        const char *with = key ? spelling[key] : NULL;
        if (!with) {
            out[at++] = m[i++];
            continue;
        }
        int n = snprintf(out + at, sizeof out - at, "%s", with);
        at = n < 0 || (size_t)n >= sizeof out - at ? sizeof out - 1 : at + (size_t)n;
        i += strlen(table[key].key);
    }
    out[at] = '\0';
    memcpy(err->message, out, at + 1);
}
