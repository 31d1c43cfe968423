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

/* The largest --batch-size, --max-batch-tokens and --workers. */
#define FRONTEND_BATCH_SIZE_MAX 4096
#define FRONTEND_BATCH_TOKENS_MAX (1 << 24)
#define FRONTEND_WORKERS_MAX 256

/* How ted translate batches a file and spreads the batches over the CPUs,
 * as the user gave it; 0: not given. */
typedef struct frontend_batching {
    int batch_size, max_batch_tokens, workers, threads;
} frontend_batching;

/* Sets options' batch_size, max_batch_tokens and workers from `given` and
 * returns the threads for the matrix products (ted_set_threads), for a
 * process that may use `cpus` CPUs:
 * - a batch holds at most --batch-size sentences (default 32; with
 *   --max-batch-tokens alone, as many as the tokens allow) and at most
 *   --max-batch-tokens source tokens, padding counted;
 * - with neither --workers nor --threads, ted_translate_workers(model,
 *   cpus) workers, sharing the CPUs out as threads; --threads alone: one
 *   worker; --workers alone: the CPUs shared out among them;
 * - the workers' own threads and the thread pool's (which one worker uses
 *   at a time) stay within the CPUs: threads <= cpus - workers + 1, at
 *   least 1. */
int frontend_apply_batching(const ted_model *model, const frontend_batching *given, int cpus,
                            ted_translate_options *options);

/* Decoding options given over the model's defaults, each with whether it
 * was given. */
typedef struct frontend_choice {
    bool beam_given, sample, length_penalty_given, normalization_given;
    bool temperature_given, top_k_given, top_p_given, seed_given;
    bool n_best_given, max_length_given, early_stopping_given;
    int beam;
    float length_penalty;
    ted_length_normalization normalization;
    ted_early_stopping early_stopping;
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
        *seed, *n_best, *max_length, *early_stopping;
} frontend_option_names;

/* The early_stopping setting `word` spells ("false", "true" or "never", as
 * config.yaml's decoding.early_stopping and transformers spell them) into
 * `*out`; false when it spells none. */
bool frontend_early_stopping(const char *word, ted_early_stopping *out);
/* The word of an early_stopping setting ("false" for one out of range). */
const char *frontend_early_stopping_name(ted_early_stopping setting);

/* What `ted translate` and `ted serve` say the words are: "false, true or
 * never". */
extern const char frontend_early_stopping_words[];

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
