/* Decoding options as a user gives them: the flags of `ted translate` and
 * the fields of `ted serve`'s requests, checked in one place and applied
 * over the model's config.yaml defaults. Linked into the ted program, not
 * into libted: a library caller fills ted_decode_options itself. */
#ifndef TED_FRONTEND_OPTIONS_H
#define TED_FRONTEND_OPTIONS_H

#include "ted/ted.h"

/* The largest values ted translate's options and ted serve's fields take. */
#define FRONTEND_BEAM_MAX 1024
#define FRONTEND_N_BEST_MAX 1024
#define FRONTEND_TOP_K_MAX 16777216
#define FRONTEND_MAX_LENGTH_MAX (1 << 20)

/* Decoding options given over the model's defaults, each with whether it
 * was given. */
typedef struct frontend_choice {
    bool beam_given, sample, length_penalty_given, normalization_given;
    bool temperature_given, top_k_given, top_p_given, seed_given;
    bool n_best_given, max_length_given;
    int beam;
    float length_penalty;
    ted_length_normalization normalization;
    float temperature;
    int top_k;
    float top_p;
    uint64_t seed;
    int n_best;
    int max_length;
    ted_languages languages;  /* NULL fields: not given */
} frontend_choice;

/* How a program names each option in its messages: "--beam" on ted
 * translate's command line, "beam" in ted serve's requests. */
typedef struct frontend_option_names {
    const char *beam, *sample, *length_penalty, *normalization, *temperature, *top_k, *top_p,
        *seed, *n_best, *max_length;
} frontend_option_names;

/* `*options` = the model's defaults (ted_translate_model_options) with
 * `choice` applied, after checking it: every value in its range (the
 * limits above; length_penalty >= 0, temperature > 0, 0 < top_p <= 1), not
 * beam search and sampling both, the sampling options only when sampling
 * and the beam search ones only with beam search, a beam narrower than
 * the target vocabulary, an n-best list only from beam search (at most
 * the beam) or sampling. Sampling without a seed takes one from
 * /dev/urandom. TED_ERR_ARGUMENT names the option at fault as `names`
 * spells it. The languages are checked as every source will be
 * (ted_prepare_source): TED_ERR_INPUT for an unknown code, or none where
 * the model has several. */
ted_status frontend_choose_options(const ted_model *model, const frontend_choice *choice,
                                   const frontend_option_names *names,
                                   ted_translate_options *options, ted_error *err);

/* The language of the source text, where a front end needs it by name
 * (ICU's sentence rules, document_options.language): the one given
 * (languages->source), else the model's only source language, else NULL. */
const char *frontend_source_language(const ted_model *model, const ted_languages *languages);

#endif
