/* ted_decode(): checks a batch and the options, encodes the batch and
 * runs the strategy, above the strategies (beam.c, independent.c) and the
 * pieces they share (decoding.c). */
#include <stddef.h>

#include "core/error.h"
#include "model/beam.h"
#include "model/decoding.h"
#include "model/independent.h"
#include "model/model.h"
#include "model/session.h"

static ted_status check_prefix(const ted_model *m, const ted_batch *b, int i, ted_error *err)
{
    int vocab = ted_model_config(m)->tgt_vocab_size, n = b->prefix_lengths[i];
    if (n < 0 || n > b->max_lengths[i] || (n > 0 && !b->prefix_ids[i]))
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "decode: sentence %d: a target prefix of %d tokens, max length %d", i,
                        n, b->max_lengths[i]);
    for (int t = 0; t < n; t++)
        if (b->prefix_ids[i][t] < 0 || b->prefix_ids[i][t] >= vocab)
            return ted_fail(err, TED_ERR_ARGUMENT,
                            "decode: sentence %d: prefix token %d is not a target id (0..%d)", i,
                            b->prefix_ids[i][t], vocab - 1);
    return TED_OK;
}

/* `*max_steps`: the largest max length, what encode() must allow. */
static ted_status check_batch(const ted_model *m, const ted_batch *b, int *max_steps,
                              ted_error *err)
{
    if (!b || b->count < 1 || !b->source_ids || !b->source_lengths || !b->max_lengths)
        return ted_fail(err, TED_ERR_ARGUMENT, "decode: empty batch");
    if (b->prefix_ids && !b->prefix_lengths)
        return ted_fail(err, TED_ERR_ARGUMENT, "decode: prefix ids without their lengths");
    *max_steps = 0;
    for (int i = 0; i < b->count; i++) {
        if (b->max_lengths[i] < 1)
            return ted_fail(err, TED_ERR_ARGUMENT, "decode: max length of sentence %d is %d", i,
                            b->max_lengths[i]);
        ted_status s = b->prefix_ids ? check_prefix(m, b, i, err) : TED_OK;
        if (s)
            return s;
        if (b->max_lengths[i] > *max_steps)
            *max_steps = b->max_lengths[i];
    }
    return TED_OK;
}

ted_status ted_decode(ted_session *s, const ted_batch *batch, const ted_decode_options *o,
                      const ted_beam_trace *trace, ted_hypothesis *out, ted_error *err)
{
    TED_REQUIRE(s, err);
    TED_REQUIRE(out, err);
    const ted_model *m = ted_session_model(s);
    int max_steps = 0;
    ted_status status = check_batch(m, batch, &max_steps, err);
    if (!status)
        status = ted_check_decode_options(m, o, err);
    if (status)
        return status;
    size_t total = (size_t)batch->count * o->n_best;
    for (size_t i = 0; i < total; i++)
        out[i] = (ted_hypothesis){0};
    status = ted_session_encode(s, batch->source_ids, batch->source_lengths, batch->count,
                                max_steps, err);
    if (!status)
        status = ted_session_restrict(s, batch, err);
    if (status)
        return status;
    status = o->strategy == TED_DECODE_BEAM
                 ? ted_decode_beam(s, batch, o, trace, out, err)
                 : ted_decode_independent(s, batch, o, out, err);
    if (status)
        ted_hypotheses_free(out, (int)total);
    return status;
}
