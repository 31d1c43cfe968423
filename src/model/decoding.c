/* ted_decode() and the pieces its strategies share: the final Softmax's
 * choices (banned tokens, argmax, top-k), the length rule, hypotheses,
 * forced prefixes, the length penalty, the checks of a batch (the options'
 * are model/options.c's). */
#include "model/decoding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/kernels.h"
#include "layers/softmax.h"
#include "model/model.h"
#include "model/session.h"

/* ---- the final Softmax ---------------------------------------------------- */

void ted_ban_tokens(const ted_model *m, float *scores)
{
    if (!m || !scores)
        return;
    const ted_config *c = &m->config;
    for (int i = 0; i < c->banned_id_count; i++)
        if (c->banned_ids[i] >= 0 && c->banned_ids[i] < c->tgt_vocab_size)
            scores[c->banned_ids[i]] = -INFINITY;
}

void ted_next_token_scores(const ted_model *m, const float *logits, float *log_probs,
                           float *allowed)
{
    size_t bytes = sizeof(float) * (size_t)m->config.tgt_vocab_size;
    if (log_probs) {
        memcpy(log_probs, logits, bytes);
        ted_log_softmax(log_probs, m->config.tgt_vocab_size);
    }
    if (allowed) {
        memcpy(allowed, logits, bytes);
        ted_ban_tokens(m, allowed);
    }
}

int ted_argmax(const float *x, int n)
{
    if (!x || n < 1)
        return -1;
    return ted_index_of_max(x, n);
}

/* a ranks before b: a higher score, or the same and a lower id */
static bool ranks_before(const float *scores, int a, int b)
{
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
}

/* Restores the heap below `at`: heap[0] is the id that ranks last. */
static void sift_down(const float *scores, int *heap, int count, int at)
{
    for (;;) {
        int last = at, left = 2 * at + 1, right = left + 1;
        if (left < count && ranks_before(scores, heap[last], heap[left]))
            last = left;
        if (right < count && ranks_before(scores, heap[last], heap[right]))
            last = right;
        if (last == at)
            return;
        int swap = heap[at];
        heap[at] = heap[last];
        heap[last] = swap;
        at = last;
    }
}

/* A heap of the k best seen so far, the worst on top: a later id with an
 * equal score ranks after every id in it, so only a higher score enters.
 * Then the heap is sorted by moving its top to the end, one at a time. */
int ted_top_k(const float *scores, int n, int k, int *ids, float *values)
{
    if (!scores || !ids)
        return 0;
    if (k > n)
        k = n;
    if (k < 1)
        return 0;
    for (int i = 0; i < k; i++)
        ids[i] = i;
    for (int i = k / 2 - 1; i >= 0; i--)
        sift_down(scores, ids, k, i);
    for (int i = k; i < n; i++) {
        if (scores[i] > scores[ids[0]]) {
            ids[0] = i;
            sift_down(scores, ids, k, 0);
        }
    }
    for (int end = k - 1; end > 0; end--) {
        int swap = ids[0];
        ids[0] = ids[end];
        ids[end] = swap;
        sift_down(scores, ids, end, 0);
    }
    for (int i = 0; values && i < k; i++)
        values[i] = scores[ids[i]];
    return k;
}

/* ---- lengths, arguments, hypotheses ------------------------------------------- */

/* With no bound in the config, a decode that never emits EOS stops at
 * twice the source plus a margin, as other runtimes bound it by the
 * source, rather than at max_positions (up to a million tokens). */
#define DEFAULT_LENGTH_FACTOR 2
#define DEFAULT_LENGTH_MARGIN 10

int ted_max_target_length(const ted_model *m, int source_tokens, int max_length)
{
    if (!m)
        return 0;
    const ted_config *c = &m->config;
    int limit = c->max_positions;
    if (max_length > 0)
        return max_length < limit ? max_length : limit;
    if (c->max_length == 0 && c->max_length_offset == 0) {
        long fallback = (long)DEFAULT_LENGTH_FACTOR * source_tokens + DEFAULT_LENGTH_MARGIN;
        return fallback < limit ? (int)fallback : limit;
    }
    if (c->max_length > 0 && c->max_length < limit)
        limit = c->max_length;
    if (c->max_length_offset > 0 && source_tokens + c->max_length_offset < limit)
        limit = source_tokens + c->max_length_offset;
    return limit;
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

ted_status ted_hypothesis_append(ted_hypothesis *h, int *room, int limit, int token,
                                 float log_prob, ted_error *err)
{
    if (h->length == *room) {
        int grown = *room < 8 ? 8 : *room > limit / 2 ? limit : 2 * *room;
        if (grown > limit)
            grown = limit;
        if (grown <= h->length)
            return ted_fail(err, TED_ERR_ARGUMENT, "hypothesis: more than %d tokens", limit);
        int *ids = realloc(h->ids, sizeof(int) * (size_t)grown);
        if (ids)
            h->ids = ids;
        float *log_probs = realloc(h->log_probs, sizeof(float) * (size_t)grown);
        if (log_probs)
            h->log_probs = log_probs;
        if (!ids || !log_probs)
            return ted_fail(err, TED_ERR_NOMEM, "hypothesis: out of memory for %d tokens",
                            grown);
        *room = grown;
    }
    h->ids[h->length] = token;
    h->log_probs[h->length++] = log_prob;
    return TED_OK;
}

void ted_hypothesis_total(ted_hypothesis *h)
{
    h->log_prob = 0.0;
    for (int t = 0; t < h->length; t++)
        h->log_prob += h->log_probs[t];
    h->score = h->log_prob;
}

void ted_hypotheses_free(ted_hypothesis *hypotheses, int count)
{
    for (int i = 0; hypotheses && i < count; i++) {
        free(hypotheses[i].ids);
        free(hypotheses[i].log_probs);
        hypotheses[i] = (ted_hypothesis){0};
    }
}

/* ---- beam search --------------------------------------------------------------- */

double ted_length_penalty(ted_length_normalization normalization, double alpha, int length)
{
    if (alpha == 0.0)
        return 1.0;
    if (normalization == TED_LENGTH_POWER)
        return pow(length, alpha);
    return pow((5.0 + length) / 6.0, alpha);
}

/* ---- ted_decode --------------------------------------------------------------- */

int ted_batch_forced(const ted_batch *b, int i, int length)
{
    if (!b->prefix_ids || length >= b->prefix_lengths[i])
        return -1;
    return b->prefix_ids[i][length];
}

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
