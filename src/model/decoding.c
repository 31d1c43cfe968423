/* Pieces shared by the decoding strategies: argument checks, hypotheses. */
#include "model/decoding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"

ted_status ted_check_max_lengths(const int *max_lengths, int batch, int *max_steps,
                                 const char *who, ted_error *err)
{
    if (batch < 1 || !max_lengths)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: empty batch", who);
    *max_steps = 0;
    for (int i = 0; i < batch; i++) {
        if (max_lengths[i] < 1)
            return ted_fail(err, TED_ERR_ARGUMENT, "%s: max length of sentence %d is %d", who,
                            i, max_lengths[i]);
        if (max_lengths[i] > *max_steps)
            *max_steps = max_lengths[i];
    }
    return TED_OK;
}

ted_status ted_hypothesis_copy(ted_hypothesis *h, const int *ids, const float *log_probs,
                               int length, double score, ted_error *err)
{
    *h = (ted_hypothesis){.score = score};
    if (length > 0) {
        h->ids = ted_alloc(length, sizeof(int), "hypothesis", err);
        h->log_probs = ted_alloc(length, sizeof(float), "hypothesis", err);
        if (!h->ids || !h->log_probs) {
            ted_hypotheses_free(h, 1);
            return TED_ERR_NOMEM;
        }
        memcpy(h->ids, ids, sizeof(int) * length);
        memcpy(h->log_probs, log_probs, sizeof(float) * length);
    }
    h->length = length;
    for (int t = 0; t < length; t++)
        h->log_prob += log_probs[t];
    return TED_OK;
}

void ted_hypotheses_free(ted_hypothesis *hypotheses, int count)
{
    for (int i = 0; hypotheses && i < count; i++) {
        free(hypotheses[i].ids);
        free(hypotheses[i].log_probs);
        hypotheses[i] = (ted_hypothesis){0};
    }
}

ted_status ted_check_sampling_params(const ted_sampling_params *p, ted_error *err)
{
    if (!p)
        return ted_fail(err, TED_ERR_ARGUMENT, "sampling: no parameters");
    if (!(p->temperature > 0.0f) || !isfinite(p->temperature))
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "sampling: temperature %g is not a positive number",
                        (double)p->temperature);
    if (p->top_k < 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "sampling: top_k %d is negative", p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return ted_fail(err, TED_ERR_ARGUMENT, "sampling: top_p %g is outside (0, 1]",
                        (double)p->top_p);
    return TED_OK;
}

ted_status ted_check_beam_params(const ted_beam_params *p, int n_best, int vocab, ted_error *err)
{
    if (!p)
        return ted_fail(err, TED_ERR_ARGUMENT, "beam search: no parameters");
    if (p->beam_size < 1 || p->beam_size >= vocab)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "beam search: beam size %d is outside 1..%d (below the target "
                        "vocabulary size)",
                        p->beam_size, vocab - 1);
    if (!(p->length_penalty >= 0.0f) || !isfinite(p->length_penalty))
        return ted_fail(err, TED_ERR_ARGUMENT, "beam search: length penalty %g is not >= 0",
                        (double)p->length_penalty);
    if (n_best < 1 || n_best > p->beam_size)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "beam search: n-best %d is outside 1..%d (the beam size)", n_best,
                        p->beam_size);
    return TED_OK;
}
