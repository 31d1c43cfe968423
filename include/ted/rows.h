/*
 * ted — the rows engine: greedy decoding and sampling as rows of a session
 * that go on alone, one step at a time, for a caller that owns the session
 * and lets sentences join and leave between two steps (ted serve's running
 * batch). ted_decode runs its batches with the same engine, so a sentence
 * decodes to the same tokens either way.
 *
 * A sentence decodes `samples` hypotheses (ted_row_samples: n_best when
 * sampling, else 1), each on a row of its own that never reads the others.
 * At its first step it has one row (sample 0), whose logits start every
 * sample: that row draws one token per sample, and the caller repeats the
 * row once per sample (ted_session_select with the rows step->keep lists).
 * A row takes the token its target prefix forces, else the best allowed
 * token (the options' rules applied), else a draw from the sentence's own
 * generator, seeded by (options->sampling.seed, its stream): a sentence's
 * draws do not depend on the other sentences of the step. A sample goes on
 * until it appends EOS or reaches max_length tokens.
 *
 * A step: ted_session_step gives the logits of the session's rows;
 * ted_rows_choose chooses each row's tokens, appends them to its
 * sentence's samples and lists the rows that go on; the caller selects
 * those rows in the session (unless they are every row, in order) and
 * feeds their tokens at the next step. A sentence whose rows have all
 * ended gives its hypotheses with ted_row_sentence_result.
 *
 * A ted_rows, like the session it chooses for, is used by one thread at a
 * time, and so are the sentences of its steps (ted_rows_choose runs the
 * choices of a step on the thread pool of ted_threads_use).
 */
#ifndef TED_ROWS_H
#define TED_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "ted/ted.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The hypotheses a sentence decodes with `options`: n_best when sampling,
 * else 1 (0 when `options` is NULL). */
TED_API int ted_row_samples(const ted_decode_options *options);

/* ---- sentences ------------------------------------------------------------- */

/* One sentence: its samples, their tokens so far, its rules and its
 * generator. */
typedef struct ted_row_sentence ted_row_sentence;

/* What a sentence decodes from. */
typedef struct ted_row_sentence_spec {
    const int *source_ids;   /* (source_length): its source ids as encoded, for the rules */
    int source_length;
    const int *prefix_ids;   /* (prefix_length): the target tokens it begins with, or NULL */
    int prefix_length;
    int max_length;          /* tokens, EOS counted, >= 1 (ted_max_target_length) */
    uint64_t stream;         /* its generator: stream `stream` of options->sampling.seed */
    bool scored;             /* each token's log-probability is kept */
} ted_row_sentence_spec;

/* A sentence decoded with `options` (checked by the caller, e.g.
 * ted_translate_options_check, and outliving the sentence; `spec`'s
 * arrays too), before its first step. TED_ERR_ARGUMENT naming what is
 * missing or out of range; TED_ERR_NOMEM. */
TED_API ted_status ted_row_sentence_new(const ted_model *model, const ted_decode_options *options,
                                        const ted_row_sentence_spec *spec,
                                        ted_row_sentence **sentence, ted_error *err);

/* Its samples (ted_row_samples of its options); 0 for NULL. */
TED_API int ted_row_sentence_samples(const ted_row_sentence *sentence);

/* Stops the sentence: from the next ted_rows_choose on, its rows choose
 * nothing and end (a client that left). Called between two steps, on the
 * thread that steps. */
TED_API void ted_row_sentence_stop(ted_row_sentence *sentence);

/* Once its rows have all ended: its samples' hypotheses, each totalled,
 * best first, moved into out[0 .. samples) (the caller frees them with
 * ted_hypotheses_free). The failure that ended it (a hypothesis out of
 * memory) is returned instead, `out` untouched; a stopped sentence is
 * TED_ERR_CANCELLED. */
TED_API ted_status ted_row_sentence_result(ted_row_sentence *sentence, ted_hypothesis *out,
                                           ted_error *err);

/* Frees the sentence and the hypotheses it still holds; NULL is nothing. */
TED_API void ted_row_sentence_free(ted_row_sentence *sentence);

/* ---- steps ----------------------------------------------------------------- */

/* A row of the session: the sentence it decodes and which of its samples
 * (0 at the sentence's first step). */
typedef struct ted_row {
    ted_row_sentence *sentence;
    int sample;
} ted_row;

/* One step of `count` rows, row r reading row r of the logits. The caller
 * gives `rows` and the output arrays, each of the ted_rows' capacity. */
typedef struct ted_rows_step {
    const ted_row *rows;  /* (count): this step's rows; a sentence's samples in order */
    int count;
    /* written by ted_rows_choose */
    int kept;             /* the rows that go on */
    int *keep;            /* (kept): the row of this step each comes from */
    ted_row *next;        /* (kept): the sentence and sample each decodes */
    int *tokens;          /* (kept): the token each feeds at the next step */
    int *token;           /* (count): the token row r appended to its first sample, or -1
                           * (EOS, a stopped or failed sentence): what a stream shows */
    int *ended;           /* (count): the samples of row r's sentence that ended at row r */
    int drawn;            /* the tokens chosen, every row's draws */
} ted_rows_step;

/* What a step needs beside the session: the model's chooser and room for
 * the choices of `capacity` rows and draws. */
typedef struct ted_rows ted_rows;

/* The engine of `model`'s rows, for steps of at most `capacity` rows whose
 * draws (a sentence's first row draws its every sample) are at most
 * `capacity`. TED_ERR_ARGUMENT, TED_ERR_NOMEM. */
TED_API ted_status ted_rows_new(const ted_model *model, int capacity, ted_rows **rows,
                                ted_error *err);
TED_API void ted_rows_free(ted_rows *rows);

/* Chooses the tokens of step->rows over `logits` ((count,
 * target_vocab), ted_session_step's), the rows of one sentence together
 * and its samples in order (a sentence's draws come in that order), and
 * appends them to the sentences' samples; fills step->kept, keep, next,
 * tokens, token, ended and drawn. A sentence whose hypothesis cannot grow
 * (out of memory) fails alone: its rows end, and ted_row_sentence_result
 * gives the failure. TED_ERR_ARGUMENT (naming the field) when the rows or
 * their draws are more than the capacity, or a row's sample is not its
 * sentence's; the sentences are then untouched. */
TED_API ted_status ted_rows_choose(ted_rows *rows, const float *logits, ted_rows_step *step,
                                   ted_error *err);

#ifdef __cplusplus
}
#endif

#endif
