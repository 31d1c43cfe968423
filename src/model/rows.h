/* Rows that decode on their own: greedy decoding and sampling, as
 * ted_decode runs them over one batch (model/independent.c) and as the
 * public steps of ted/rows.h (ted_rows_choose, which ted serve's running
 * batch calls for sentences that join and leave it) run them. The rules of
 * a row live here, once:
 *
 * - A sentence decodes `samples` hypotheses (n_best when sampling, else
 *   1), each on a row of its own that never reads the others.
 * - At its first step the sentence has one row, whose logits start every
 *   sample: that row's choice draws one token per sample, and the caller
 *   repeats the row once per sample (ted_session_select).
 * - A row takes the token its target prefix forces, else the best allowed
 *   token, else a draw from the sentence's generator, seeded by (seed,
 *   stream): a sentence's draws do not depend on the other sentences of
 *   its batch (model/choose.h).
 * - A sample goes on until it appends EOS or reaches max_length tokens.
 *
 * A step, for the caller that owns the session and its rows: plan each
 * row's choice (ted_row_plan), the rows of one sentence together, its
 * samples in order; make them (ted_choose); take each choice's tokens
 * (ted_row_take), which lists the rows that go on; select those rows
 * unless they are every row (ted_rows_keep_all). */
#ifndef TED_MODEL_ROWS_H
#define TED_MODEL_ROWS_H

#include <stdint.h>

#include "model/choose.h"
#include "ted/rows.h"

/* One sentence decoded by rows that go on alone. The caller sets
 * max_length, the prefix, scored, found and room, then calls
 * ted_row_sentence_start (ted_row_sentence_new: both, found and room its
 * own). */
struct ted_row_sentence {
    int max_length;          /* tokens, EOS counted (ted_max_target_length) */
    const int *prefix_ids;   /* (prefix_length): the tokens it begins with, or NULL */
    int prefix_length;
    ted_rules_source source; /* its source ids, for the rules */
    bool scored;             /* the tokens' log-probabilities are wanted */
    ted_hypothesis *found;   /* (samples), zeroed: each sample's tokens so far */
    int *room;               /* (samples), zeroed: the cells each holds */
    /* set by ted_row_sentence_start */
    int samples;             /* hypotheses: n_best when sampling, else 1 */
    int eos;
    bool first;              /* before its first step: its one row draws every sample */
    const ted_sampling_params *sampling;  /* NULL: the best allowed token */
    const ted_logits_rules *rules;        /* NULL: none on */
    ted_rng rng;             /* sampling: its generator, (seed, stream) */
    /* ted_rows_choose's */
    bool stopped;            /* ted_row_sentence_stop: its rows choose nothing */
    ted_error failure;       /* status TED_OK, or why its rows ended (a hypothesis out of
                              * memory) */
};

/* The sentence's samples, EOS, strategy, rules and generator, from the
 * options (checked, and outliving the sentence) and its stream; its first
 * step comes next. */
void ted_row_sentence_start(ted_row_sentence *s, const ted_model *model,
                            const ted_decode_options *options, uint64_t stream);

/* The samples of a sentence that holds no row: each hypothesis totalled
 * (ted_hypothesis_total), best first (ted_hypotheses_sort). */
void ted_row_sentence_finish(ted_row_sentence *s);

/* The choice of the row that reads logits row `row` and decodes sample
 * `sample` of `s` (0 at the sentence's first step, where it draws every
 * sample): the tokens go to `tokens` (its draws) and, when the sentence is
 * scored, their log-probabilities to `log_probs` (its draws). */
ted_choice ted_row_plan(ted_row_sentence *s, int sample, int row, int *tokens,
                        float *log_probs);

/* The rows that go on after a step: row keep[k] of the step becomes row
 * k, decoding sample sample[k] of its sentence and feeding tokens[k]. */
typedef struct ted_rows_next {
    int *keep;
    int *sample;
    int *tokens;
} ted_rows_next;

/* Appends the tokens of `choice` (ted_row_plan for `sample`) to their
 * samples and ends the sentence's first step. Each sample that goes on is
 * listed in `next` at *kept, which counts it. On failure (a hypothesis
 * out of memory) the tokens after the failing one are not taken, and their
 * samples are not listed. */
ted_status ted_row_take(ted_row_sentence *s, int sample, const ted_choice *choice,
                        ted_rows_next next, int *kept, ted_error *err);

/* True when the `kept` rows that go on are the `rows` rows of the step in
 * their order: no ted_session_select is needed. */
bool ted_rows_keep_all(const int *keep, int kept, int rows);

#endif
