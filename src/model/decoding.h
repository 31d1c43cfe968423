/* What the decoding strategies (independent.c: greedy decoding and
 * sampling; beam.c: beam search) share: hypotheses, the scores a row of
 * logits gives, forced prefixes, the length penalty of beam search, the
 * seeded random generator and token draw of sampling, the checks of their
 * parameters. ted_decode() (decode.c), above them, checks a batch,
 * encodes it and runs the strategy. */
#ifndef TED_MODEL_DECODING_H
#define TED_MODEL_DECODING_H

#include <stdint.h>

#include "ted/learn.h"
#include "ted/ted.h"

/* Copies `length` ids and log-probs into a fresh hypothesis; log_prob is
 * their sum (in double), score is given. */
ted_status ted_hypothesis_copy(ted_hypothesis *h, const int *ids, const float *log_probs,
                               int length, double score, ted_error *err);

/* Appends a token and its log-prob to a hypothesis that holds `*room`
 * cells, growing them twofold (never past `limit`) when full: a
 * hypothesis takes memory for the tokens it has, not for every token it
 * might reach. */
ted_status ted_hypothesis_append(ted_hypothesis *h, int *room, int limit, int token,
                                 float log_prob, ted_error *err);

/* log_prob = the sum of log_probs (in double, in order); score = log_prob. */
void ted_hypothesis_total(ted_hypothesis *h);

/* One row of logits (target_vocab) as a strategy reads it: `log_probs`
 * (may be NULL) receives the model's log-softmax, `allowed` (may be NULL)
 * the logits with the banned tokens at -infinity. */
void ted_next_token_scores(const ted_model *model, const float *logits, float *log_probs,
                           float *allowed);

/* ted_ban_tokens over the scores of some target ids: scores (count) holds
 * the scores of ids (count, increasing); the banned among them become
 * -infinity. */
void ted_ban_tokens_subset(const ted_model *model, const int *ids, int count, float *scores);

/* ted_ban_tokens, recording in marks (target_vocab; NULL: nowhere) that
 * TED_LEARN_RULE_BANNED_ID changed each banned token. */
void ted_ban_tokens_marked(const ted_model *model, float *scores, ted_learn_change *marks);

/* ted_apply_logits_rules_source, recording in marks (target_vocab; NULL:
 * nowhere) the rule that changed each token's score and where it found
 * why (ted_learn_change; its score is left as it was): a ban replaces a
 * penalty, the first ban stays. marks[t].rule stays TED_LEARN_RULE_NONE
 * for a token no rule changed; the caller clears marks before. */
void ted_apply_logits_rules_marked(const ted_model *model, const ted_logits_rules *rules,
                                   const ted_rules_source *source, const int *ids, int length,
                                   float *scores, ted_learn_change *marks);

/* Whether any of the rules is on (ted_apply_logits_rules changes
 * something); false for NULL. */
bool ted_logits_rules_on(const ted_logits_rules *rules);

/* The token a hypothesis must take at position `at` (tokens it has so
 * far) when it begins with the `length` tokens of `prefix` (may be NULL
 * when length is 0), or -1. */
int ted_prefix_forced(const int *prefix, int length, int at);

/* The token sentence i must take at position `length` (tokens it has so
 * far), or -1 (ted_prefix_forced). */
int ted_batch_forced(const ted_batch *batch, int i, int length);

/* The log-prob a forced prefix token adds to its hypothesis, in every
 * strategy: 0, as in transformers' generate(), whose
 * ForcedBOSTokenLogitsProcessor leaves the forced token's score 0 and
 * every other -infinity (after the log-softmax in beam search, on the
 * logits in greedy search and sampling). */
#define TED_FORCED_LOG_PROB 0.0f

/* Checks the options against the model: the strategy's parameters, an
 * n-best list that the strategy can give (model/options.c's table). */
ted_status ted_check_decode_options(const ted_model *model, const ted_decode_options *options,
                                    ted_error *err);

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
 * (ted_check_decode_options). */
int ted_sample_token(const float *logits, int vocab, const ted_sampling_params *params,
                     ted_rng *rng, const ted_draw_scratch *scratch);

#endif
