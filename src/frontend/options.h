/* Decoding options as a user gives them: the flags of `ted translate` and
 * the fields of `ted serve`'s requests, checked in one place and applied
 * over the model's config.yaml defaults. Linked into the ted program, not
 * into libted: a library caller fills ted_decode_options itself. */
#ifndef TED_FRONTEND_OPTIONS_H
#define TED_FRONTEND_OPTIONS_H

#include "frontend/limits.h"
#include "ted/ted.h"

/* The largest values ted translate's options and ted serve's fields take:
 * the option table's (ted.h). */
#define FRONTEND_BEAM_MAX TED_BEAM_SIZE_MAX
#define FRONTEND_N_BEST_MAX TED_N_BEST_MAX
#define FRONTEND_TOP_K_MAX TED_TOP_K_MAX
#define FRONTEND_MAX_LENGTH_MAX TED_MAX_LENGTH_MAX

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
    bool repetition_penalty_given, no_repeat_ngram_size_given, min_length_given;
    bool min_new_tokens_given, bad_words_given, encoder_ngram_given;
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
    float repetition_penalty;
    int no_repeat_ngram_size, min_length, min_new_tokens, encoder_ngram;
    int bad_words[TED_BAD_WORDS_MAX];  /* as ted_logits_rules.bad_words */
    int bad_words_length;
    ted_languages languages;  /* NULL fields: not given */
} frontend_choice;

/* Appends one sequence of `count` ids (and its -1) to d->bad_words, sets
 * bad_words_given; false when it leaves no room (TED_BAD_WORDS_MAX) or is
 * empty. The ids are checked against the vocabulary with the rest
 * (frontend_choose_options). */
bool frontend_add_bad_words(frontend_choice *d, const int *ids, int count);

/* How a program names each option in its messages, by ted_option: "--beam"
 * on ted translate's command line, "beam" in ted serve's requests
 * (ted_error_spell_options). */
typedef const char *frontend_option_names[TED_OPTION_COUNT];

/* The setting of word option `option` (length_normalization,
 * early_stopping) that `word` spells into `*value`; false when it spells
 * none of the option's words (ted_option_word). */
bool frontend_option_word(ted_option option, const char *word, int *value);

/* `*options` = the model's defaults (ted_translate_model_options) with
 * `choice` applied, checked by the library's option table
 * (ted_translate_options_check_given, with the options given): its
 * TED_ERR_ARGUMENT names the option at fault as `names` spells it.
 * Sampling without a seed takes one from /dev/urandom. The languages are
 * checked as every source will be (ted_prepare_source): TED_ERR_INPUT for
 * an unknown code, or none where the model has several. */
ted_status frontend_choose_options(const ted_model *model, const frontend_choice *choice,
                                   const frontend_option_names names,
                                   ted_translate_options *options, ted_error *err);

/* The language of the source text, where a front end needs it by name
 * (ICU's sentence rules, document_options.language): the one given
 * (languages->source), else the model's only source language, else NULL. */
const char *frontend_source_language(const ted_model *model, const ted_languages *languages);

#endif
