/* What the decoding strategies (greedy.c, beam.c, sampling.c) share: the
 * checks of their arguments, hypotheses, the loop of the strategies whose
 * rows go on alone (greedy decoding, sampling), the length penalty of beam
 * search, and the seeded random generator and token draw of sampling. The
 * public pieces of the final Softmax (ted_ban_tokens, ted_argmax,
 * ted_top_k) are defined in decoding.c too. */
#ifndef TED_MODEL_DECODING_H
#define TED_MODEL_DECODING_H

#include <stdint.h>

#include "ted/ted.h"

/* Checks that every max_lengths[i] is at least 1 and that the batch is not
 * empty; `*max_steps` receives the largest (what encode() must allow). */
ted_status ted_check_max_lengths(const int *max_lengths, int batch, int *max_steps,
                                 const char *who, ted_error *err);

/* Copies `length` ids and log-probs into a fresh hypothesis; log_prob is
 * their sum (in double), score is given. */
ted_status ted_hypothesis_copy(ted_hypothesis *h, const int *ids, const float *log_probs,
                               int length, double score, ted_error *err);

/* One row of logits (target_vocab) as a strategy reads it: `log_probs`
 * (may be NULL) receives the model's log-softmax, `allowed` (may be NULL)
 * the logits with the banned tokens at -infinity. */
void ted_next_token_scores(const ted_model *model, const float *logits, float *log_probs,
                           float *allowed);

/* ---- rows that go on alone -------------------------------------------------
 * Greedy decoding and sampling: every row of the session decodes one output
 * and never looks at the others, so a step is: feed each row its token,
 * choose each row's next token, drop the rows that ended. */
typedef struct ted_rows {
    int *tokens;  /* (rows): the token each row feeds next */
    int *owner;   /* (rows): the sentence or sample each row decodes */
    int *keep;    /* (rows): the rows of the last step that go on, in order */
} ted_rows;

/* Chooses the next token of each of the `active` rows from their logits
 * ((active, target_vocab)), and lists the rows that go on with
 * ted_rows_keep(); returns how many go on. */
typedef int (*ted_choose_tokens)(void *state, const float *logits, int active);

/* Steps the session from `active` rows until none goes on, select()ing
 * after every step the rows that go on (unless they are all of them). */
ted_status ted_decode_rows(ted_session *session, ted_rows *rows, int active,
                           ted_choose_tokens choose, void *state, ted_error *err);

/* Lists old row `row`, now decoding `owner` and feeding `token`, as the
 * `kept`-th row that goes on, unless `ended`; returns the rows kept. Reads
 * nothing of rows `kept` and later, so a choose() may read owner[row],
 * row >= kept, before it keeps the row. */
int ted_rows_keep(ted_rows *rows, int kept, int row, int owner, int token, bool ended);

/* ---- beam search ------------------------------------------------------------ */

/* lp(length) that divides a finished hypothesis' log-prob: GNMT's
 * ((5 + length) / 6)^alpha or length^alpha; 1 when alpha is 0. */
double ted_length_penalty(ted_length_normalization normalization, double alpha, int length);

/* ---- the random generator ------------------------------------------------
 * PCG32 (M. O'Neill, "PCG: A Family of Simple Fast Space-Efficient
 * Statistically Good Algorithms for Random Number Generation", 2014): 64
 * bits of state, 32-bit outputs; each (seed, stream) pair is its own
 * sequence. No global state: a generator is this struct. */
typedef struct ted_rng {
    uint64_t state;
    uint64_t increment;  /* odd; selects the stream */
} ted_rng;

/* Streams that differ only in bit 63 are the same stream. */
ted_rng ted_rng_seed(uint64_t seed, uint64_t stream);
uint32_t ted_rng_next(ted_rng *rng);
/* Uniform in [0, 1), 53 random bits (two outputs). */
double ted_rng_uniform(ted_rng *rng);

/* ---- one draw ------------------------------------------------------------ */

/* Room for one draw over a vocabulary of `vocab` tokens. */
typedef struct ted_draw_scratch {
    int *ids;         /* (vocab): the candidates */
    double *weights;  /* (vocab): exp((logit - max) / temperature) of each */
} ted_draw_scratch;

/* Draws one token from softmax(logits / temperature) over `vocab` logits,
 * cut to the top_k most likely, then to the fewest most likely whose
 * probability (renormalized after the top_k cut) reaches top_p; ties rank
 * the lower id first; a logit of -infinity is never drawn. One uniform
 * draw from `rng` per call. The parameters must be valid
 * (ted_check_sampling_params). */
int ted_sample_token(const float *logits, int vocab, const ted_sampling_params *params,
                     ted_rng *rng, const ted_draw_scratch *scratch);

ted_status ted_check_sampling_params(const ted_sampling_params *params, ted_error *err);
ted_status ted_check_beam_params(const ted_beam_params *params, int n_best, int vocab,
                                 ted_error *err);

#endif
