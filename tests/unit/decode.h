/* ted_decode() with one strategy's options, as the decoding tests call it. */
#ifndef TED_TESTS_DECODE_H
#define TED_TESTS_DECODE_H

#include "ted/ted.h"

/* A batch of `count` sources, each with its max length. */
#define BATCH(IDS, LENGTHS, MAX_LENGTHS, COUNT)                                          \
    (&(ted_batch){.source_ids = (IDS), .source_lengths = (LENGTHS),                      \
                  .max_lengths = (MAX_LENGTHS), .count = (COUNT)})

static inline ted_status decode_greedy(ted_session *s, const ted_batch *b, ted_hypothesis *out,
                                       ted_error *err)
{
    ted_decode_options o = {.strategy = TED_DECODE_GREEDY, .n_best = 1};
    return ted_decode(s, b, &o, NULL, out, err);
}

static inline ted_status decode_beam(ted_session *s, const ted_batch *b,
                                     const ted_beam_params *params, int n_best,
                                     const ted_beam_trace *trace, ted_hypothesis *out,
                                     ted_error *err)
{
    ted_decode_options o = {.strategy = TED_DECODE_BEAM, .beam = *params, .n_best = n_best};
    return ted_decode(s, b, &o, trace, out, err);
}

static inline ted_status decode_sampling(ted_session *s, const ted_batch *b,
                                         const ted_sampling_params *params, int samples,
                                         ted_hypothesis *out, ted_error *err)
{
    ted_decode_options o = {.strategy = TED_DECODE_SAMPLE, .sampling = *params,
                            .n_best = samples};
    return ted_decode(s, b, &o, NULL, out, err);
}

#endif
