/* Pieces shared by the decoding strategies: the final Softmax's choices
 * (banned tokens, argmax, top-k), the length rule, argument checks,
 * hypotheses, the loop of rows that go on alone, the length penalty. */
#include "model/decoding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/kernels.h"
#include "layers/softmax.h"
#include "model/session.h"

/* ---- the final Softmax ---------------------------------------------------- */

void ted_ban_tokens(const ted_model *m, float *scores)
{
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
    return ted_index_of_max(x, n);
}

typedef struct argmax_job {
    const float *x;
    int n, *ids;
} argmax_job;

static void argmax_row(void *context, int row)
{
    const argmax_job *j = context;
    j->ids[row] = ted_index_of_max(j->x + (size_t)row * j->n, j->n);
}

void ted_argmax_rows(const float *x, int rows, int n, int *ids)
{
    argmax_job job = {x, n, ids};
    ted_parallel_for(rows, argmax_row, &job);
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

/* ---- rows that go on alone ------------------------------------------------- */

int ted_rows_keep(ted_rows *r, int kept, int row, int owner, int token, bool ended)
{
    if (ended)
        return kept;
    r->keep[kept] = row;
    r->owner[kept] = owner;
    r->tokens[kept] = token;
    return kept + 1;
}

static bool keeps_every_row(const int *keep, int kept, int active)
{
    if (kept != active)
        return false;
    for (int r = 0; r < kept; r++)
        if (keep[r] != r)
            return false;
    return true;
}

ted_status ted_decode_rows(ted_session *s, ted_rows *rows, int active,
                           ted_choose_tokens choose, void *state, ted_error *err)
{
    while (active > 0) {
        const float *logits;
        ted_status status = ted_session_step(s, rows->tokens, &logits, err);
        if (status)
            return status;
        int kept = choose(state, logits, active);
        if (kept > 0 && !keeps_every_row(rows->keep, kept, active) &&
            (status = ted_session_select(s, rows->keep, kept, err)))
            return status;
        active = kept;
    }
    return TED_OK;
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

/* ---- parameters ------------------------------------------------------------------ */

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
    if (p->length_normalization != TED_LENGTH_GNMT && p->length_normalization != TED_LENGTH_POWER)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "beam search: length normalization %d is neither TED_LENGTH_GNMT nor "
                        "TED_LENGTH_POWER",
                        (int)p->length_normalization);
    if (n_best < 1 || n_best > p->beam_size)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "beam search: n-best %d is outside 1..%d (the beam size)", n_best,
                        p->beam_size);
    return TED_OK;
}
