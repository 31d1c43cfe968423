/* The pieces that ted_decode()'s strategies (decode.c) share: the final
 * Softmax's choices (banned tokens, the rules on the scores, argmax,
 * top-k), the length rule,
 * hypotheses, forced prefixes, the length penalty (the options' checks
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
#include "ted/learn.h"

/* ---- the final Softmax ---------------------------------------------------- */

/* Records in marks[token] (when marks is not NULL) that `rule` changed
 * the token's score, `at` where it found why: a ban replaces a penalty,
 * never another ban (the first rule to ban a token names it). */
static void mark(ted_learn_change *marks, int token, ted_learn_rule rule, int at)
{
    if (marks && (marks[token].rule == TED_LEARN_RULE_NONE ||
                  marks[token].rule == TED_LEARN_RULE_REPETITION))
        marks[token] = (ted_learn_change){.rule = rule, .at = at};
}

void ted_ban_tokens_marked(const ted_model *m, float *scores, ted_learn_change *marks)
{
    if (!m || !scores)
        return;
    const ted_config *c = &m->config;
    for (int i = 0; i < c->banned_id_count; i++)
        if (c->banned_ids[i] >= 0 && c->banned_ids[i] < c->tgt_vocab_size) {
            scores[c->banned_ids[i]] = -INFINITY;
            mark(marks, c->banned_ids[i], TED_LEARN_RULE_BANNED_ID, 0);
        }
}

void ted_ban_tokens(const ted_model *m, float *scores)
{
    ted_ban_tokens_marked(m, scores, NULL);
}

static int by_id(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void ted_ban_tokens_subset(const ted_model *m, const int *ids, int count, float *scores)
{
    const ted_config *c = &m->config;
    for (int i = 0; i < c->banned_id_count; i++) {
        const int *at = bsearch(&c->banned_ids[i], ids, (size_t)count, sizeof *ids, by_id);
        if (at)
            scores[at - ids] = -INFINITY;
    }
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

/* ---- the rules on the scores (transformers' logits processors) ------------------ */

/* The row the rules change: a hypothesis' history (the decoder's start
 * token, then ids[0..length)), the vocabulary, EOS, and where to record
 * what they change (NULL: nowhere). */
typedef struct rule_row {
    int start;
    const int *ids;
    int length;
    int vocab;
    int eos;
    ted_learn_change *marks;  /* (vocab) or NULL */
} rule_row;

/* Token k of a history that is the decoder's start token, then ids. */
static int history_at(int start, const int *ids, int k)
{
    return k == 0 ? start : ids[k - 1];
}

/* RepetitionPenaltyLogitsProcessor: each token of the history once, by
 * the score it had before any was penalized. */
static void penalize_repeats(float penalty, const rule_row *row, float *scores)
{
    int start = row->start, length = row->length, vocab = row->vocab;
    const int *ids = row->ids;
    for (int k = 0; k <= length; k++) {
        int token = history_at(start, ids, k);
        bool seen = token < 0 || token >= vocab;
        for (int j = 0; j < k && !seen; j++)
            seen = history_at(start, ids, j) == token;
        if (seen)
            continue;
        float score = scores[token];
        scores[token] = score < 0 ? score * penalty : score / penalty;
        mark(row->marks, token, TED_LEARN_RULE_REPETITION, k);
    }
}

/* NoRepeatNGramLogitsProcessor: after the history's last n - 1 tokens,
 * every token that followed them before. */
static void ban_repeated_ngrams(int n, const rule_row *row, float *scores)
{
    int start = row->start, vocab = row->vocab, total = row->length + 1;
    const int *ids = row->ids;
    for (int i = 0; i + n <= total; i++) {
        bool same = true;
        for (int j = 0; j < n - 1 && same; j++)
            same = history_at(start, ids, i + j) == history_at(start, ids, total - n + 1 + j);
        int token = history_at(start, ids, i + n - 1);
        if (same && token >= 0 && token < vocab) {
            scores[token] = -INFINITY;
            mark(row->marks, token, TED_LEARN_RULE_NGRAM, i);
        }
    }
}

/* EncoderNoRepeatNGramLogitsProcessor: after the history's last n - 1
 * tokens, every token that followed them in the source. */
static void ban_source_ngrams(int n, const ted_rules_source *source, const rule_row *row,
                              float *scores)
{
    int start = row->start, vocab = row->vocab, total = row->length + 1;
    const int *ids = row->ids;
    if (n - 1 > total)
        return;
    for (int i = 0; i + n <= source->count; i++) {
        bool same = true;
        for (int j = 0; j < n - 1 && same; j++)
            same = source->ids[i + j] == history_at(start, ids, total - n + 1 + j);
        int token = source->ids[i + n - 1];
        if (same && token >= 0 && token < vocab) {
            scores[token] = -INFINITY;
            mark(row->marks, token, TED_LEARN_RULE_SOURCE_NGRAM, i);
        }
    }
}

/* NoBadWordsLogitsProcessor: sequence seq[0..n) bans seq[n - 1] where the
 * history ends with its first n - 1 tokens; one token alone is banned at
 * every step, but EOS. */
static void ban_sequence(const int *seq, int n, int at, const rule_row *row, float *scores)
{
    int total = row->length + 1;
    if (n > total || (n == 1 && seq[0] == row->eos))
        return;
    bool same = true;
    for (int j = 0; j < n - 1 && same; j++)
        same = history_at(row->start, row->ids, total - (n - 1) + j) == seq[j];
    if (same) {
        scores[seq[n - 1]] = -INFINITY;
        mark(row->marks, seq[n - 1], TED_LEARN_RULE_BAD_WORDS, at);
    }
}

/* Every sequence of `r->bad_words` (ids below vocab: ted_check_options). */
static void ban_bad_words(const ted_logits_rules *r, const rule_row *row, float *scores)
{
    int vocab = row->vocab;
    int n = r->bad_words_length < TED_BAD_WORDS_MAX ? r->bad_words_length : TED_BAD_WORDS_MAX;
    for (int begin = 0, at = 0; at < n; at++) {
        if (r->bad_words[at] >= 0)
            continue;
        bool valid = at > begin;
        for (int k = begin; k < at && valid; k++)
            valid = r->bad_words[k] < vocab;
        if (valid)
            ban_sequence(r->bad_words + begin, at - begin, begin, row, scores);
        begin = at + 1;
    }
}

void ted_apply_logits_rules(const ted_model *m, const ted_logits_rules *r, const int *ids,
                            int length, float *scores)
{
    ted_apply_logits_rules_source(m, r, NULL, ids, length, scores);
}

void ted_apply_logits_rules_source(const ted_model *m, const ted_logits_rules *r,
                                   const ted_rules_source *source, const int *ids, int length,
                                   float *scores)
{
    ted_apply_logits_rules_marked(m, r, source, ids, length, scores, NULL);
}

void ted_apply_logits_rules_marked(const ted_model *m, const ted_logits_rules *r,
                                   const ted_rules_source *source, const int *ids, int length,
                                   float *scores, ted_learn_change *marks)
{
    if (!m || !r || !scores || (length > 0 && !ids))
        return;
    const ted_config *c = &m->config;
    const rule_row row = {.start = c->decoder_start_id, .ids = ids, .length = length,
                          .vocab = c->tgt_vocab_size, .eos = c->eos_id, .marks = marks};
    if (r->repetition_penalty > 0 && r->repetition_penalty != 1)
        penalize_repeats(r->repetition_penalty, &row, scores);
    if (r->no_repeat_ngram_size > 0)
        ban_repeated_ngrams(r->no_repeat_ngram_size, &row, scores);
    if (r->encoder_no_repeat_ngram_size > 0 && source && source->ids)
        ban_source_ngrams(r->encoder_no_repeat_ngram_size, source, &row, scores);
    if (r->bad_words_length > 0)
        ban_bad_words(r, &row, scores);
    bool short_of = length + 1 < r->min_length || length < r->min_new_tokens;
    if (short_of && c->eos_id >= 0 && c->eos_id < row.vocab) {
        scores[c->eos_id] = -INFINITY;
        mark(marks, c->eos_id,
             length + 1 < r->min_length ? TED_LEARN_RULE_MIN_LENGTH
                                        : TED_LEARN_RULE_MIN_NEW_TOKENS, 0);
    }
}

bool ted_logits_rules_on(const ted_logits_rules *r)
{
    return r && ((r->repetition_penalty > 0 && r->repetition_penalty != 1) ||
                 r->no_repeat_ngram_size > 0 || r->encoder_no_repeat_ngram_size > 0 ||
                 r->min_length > 1 || r->min_new_tokens > 0 || r->bad_words_length > 0);
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
    if (c->max_length == 0 && c->max_length_offset == 0 && c->max_length_factor <= 0) {
        long fallback = (long)DEFAULT_LENGTH_FACTOR * source_tokens + DEFAULT_LENGTH_MARGIN;
        return fallback < limit ? (int)fallback : limit;
    }
    if (c->max_length > 0 && c->max_length < limit)
        limit = c->max_length;
    if (c->max_length_offset > 0 && source_tokens + c->max_length_offset < limit)
        limit = source_tokens + c->max_length_offset;
    if (c->max_length_factor > 0 && c->max_length_factor * source_tokens < limit)
        limit = (int)(c->max_length_factor * source_tokens);
    return limit > 0 ? limit : 1;
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

/* ---- forced prefixes ------------------------------------------------------------ */

int ted_prefix_forced(const int *prefix, int length, int at)
{
    return prefix && at < length ? prefix[at] : -1;
}

int ted_batch_forced(const ted_batch *b, int i, int length)
{
    if (!b->prefix_ids)
        return -1;
    return ted_prefix_forced(b->prefix_ids[i], b->prefix_lengths[i], length);
}
