/* What the decoding strategies (greedy.c, beam.c, sampling.c) share: the
 * checks of their arguments, hypotheses, and the seeded random generator
 * and token draw of sampling. */
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

typedef struct ted_candidate {
    float logit;
    int id;
    double weight;  /* exp((logit - max) / temperature) */
} ted_candidate;

/* Draws one token from softmax(logits / temperature) over `vocab` logits,
 * cut to the top_k most likely, then to the fewest most likely whose
 * probability (renormalized after the top_k cut) reaches top_p; ties rank
 * the lower id first. One uniform draw from `rng` per call. `scratch` holds
 * `vocab` candidates. The parameters must be valid
 * (ted_check_sampling_params). */
int ted_sample_token(const float *logits, int vocab, const ted_sampling_params *params,
                     ted_rng *rng, ted_candidate *scratch);

ted_status ted_check_sampling_params(const ted_sampling_params *params, ted_error *err);
ted_status ted_check_beam_params(const ted_beam_params *params, int n_best, int vocab,
                                 ted_error *err);

#endif
