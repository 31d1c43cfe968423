/* Beam search (model/beam.c): a strategy that ted_decode() (decode.c)
 * runs once the batch is checked and encoded. */
#ifndef TED_MODEL_BEAM_H
#define TED_MODEL_BEAM_H

#include "ted/ted.h"

/* Decodes `batch`, encoded in `session`, into `out` ((count, n_best),
 * zeroed; freed by ted_decode on failure). */
ted_status ted_decode_beam(ted_session *session, const ted_batch *batch,
                           const ted_decode_options *options, const ted_beam_trace *trace,
                           ted_hypothesis *out, ted_error *err);

#endif
