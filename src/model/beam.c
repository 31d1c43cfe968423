/* Beam search: a loop over ted_session_step() and ted_session_select(),
 * like greedy decoding, keeping up to beam_size open hypotheses per
 * sentence (docs/decoding.md).
 *
 * Every step, each open hypothesis of a sentence is extended by every
 * token; the candidates are ranked by total log-prob (ties: the earlier
 * hypothesis, then the lower id). Among the best beam_size candidates,
 * those that end in EOS or reach the sentence's length limit are finished:
 * they leave the beam and are kept aside, ranked by score = log-prob /
 * ((5 + length) / 6)^alpha. The best beam_size candidates that are not
 * finished form the next beam. A sentence stops when it holds n_best
 * finished hypotheses and the best open one cannot enter them: its
 * log-prob only falls as it grows, so its best possible score is its
 * log-prob divided by the penalty of the longest length allowed.
 *
 * Each source is encoded once, as one row. After the first step its
 * candidates become up to beam_size rows: ted_session_select() repeats the
 * row, growing the session's buffers the first time (later batches reuse
 * the room). That costs one buffer copy per session instead of running the
 * encoder and the encoder-decoder projections beam_size times over the
 * same source. From then on select() reorders the rows of the KV caches
 * after every step so that row r holds the history of the hypothesis it
 * extends. Only the best beam_size + 1 tokens of a hypothesis can be among
 * the candidates that matter (at most one of them is EOS), so only those
 * are ranked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "layers/softmax.h"
#include "model/decoding.h"
#include "model/session.h"

ted_beam_params ted_beam_default_params(void)
{
    return (ted_beam_params){.beam_size = 4, .length_penalty = 0.6f};
}

typedef struct candidate {
    double log_prob;  /* of the extended hypothesis */
    float token_log_prob;
    int beam;         /* the open hypothesis it extends, 0.. within its sentence */
    int token;
} candidate;

/* Better first: higher log-prob, then the earlier hypothesis, then the lower id. */
static int by_rank(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->log_prob != y->log_prob)
        return x->log_prob < y->log_prob ? 1 : -1;
    if (x->beam != y->beam)
        return x->beam < y->beam ? -1 : 1;
    return (x->token > y->token) - (x->token < y->token);
}

/* The open hypotheses, one per session row, and what the next step makes
 * of them; `history` arrays are (rows, max_steps). */
typedef struct beam_rows {
    int *sentence;
    double *log_prob;
    int *ids;
    float *log_probs;
} beam_rows;

/* A sentence's finished hypotheses: the n_best best so far, by score. */
typedef struct finished {
    int count;
    double *score, *log_prob;  /* (n_best) */
    int *length;               /* (n_best) */
    int *ids;                  /* (n_best, max_steps) */
    float *log_probs;          /* (n_best, max_steps) */
} finished;

typedef struct beam_state {
    const ted_model *model;
    int beam, n_best, max_steps, batch;
    double alpha;
    const int *max_lengths;
    beam_rows rows[2];   /* current and next, swapped after every step */
    int *parents;        /* (capacity): old row of each next row */
    int *tokens;         /* (capacity): the token each next row feeds */
    finished *done;      /* (batch) */
    candidate *candidates;  /* (beam * (beam + 1)) */
    float *scratch;      /* (vocab): a row's log-softmax */
} beam_state;

static double penalty(const beam_state *st, int length)
{
    return st->alpha == 0.0 ? 1.0 : pow((5.0 + length) / 6.0, st->alpha);
}

static void free_rows(beam_rows *r)
{
    free(r->sentence);
    free(r->log_prob);
    free(r->ids);
    free(r->log_probs);
}

static void free_state(beam_state *st)
{
    for (int k = 0; k < 2; k++)
        free_rows(&st->rows[k]);
    free(st->parents);
    free(st->tokens);
    for (int i = 0; st->done && i < st->batch; i++) {
        free(st->done[i].score);
        free(st->done[i].log_prob);
        free(st->done[i].length);
        free(st->done[i].ids);
        free(st->done[i].log_probs);
    }
    free(st->done);
    free(st->candidates);
    free(st->scratch);
}

static bool alloc_rows(beam_rows *r, size_t capacity, size_t cells, ted_error *err)
{
    r->sentence = ted_alloc(capacity, sizeof(int), "beam", err);
    r->log_prob = ted_alloc(capacity, sizeof(double), "beam", err);
    r->ids = ted_alloc(cells, sizeof(int), "beam", err);
    r->log_probs = ted_alloc(cells, sizeof(float), "beam", err);
    return r->sentence && r->log_prob && r->ids && r->log_probs;
}

static ted_status alloc_state(beam_state *st, ted_error *err)
{
    size_t capacity = ted_mul_size(st->batch, st->beam);
    size_t cells = ted_mul_size(capacity, st->max_steps);
    size_t kept = ted_mul_size(st->n_best, st->max_steps);
    if (capacity > (size_t)INT32_MAX)
        return ted_fail(err, TED_ERR_NOMEM, "beam search: %d sentences x beam %d are too many",
                        st->batch, st->beam);
    bool ok = alloc_rows(&st->rows[0], capacity, cells, err) &&
              alloc_rows(&st->rows[1], capacity, cells, err);
    st->parents = ted_alloc(capacity, sizeof(int), "beam", err);
    st->tokens = ted_alloc(capacity, sizeof(int), "beam", err);
    st->done = ted_alloc(st->batch, sizeof(finished), "beam", err);
    st->candidates = ted_alloc((size_t)st->beam * (st->beam + 1), sizeof(candidate), "beam", err);
    st->scratch = ted_alloc(st->model->config.tgt_vocab_size, sizeof(float), "beam", err);
    ok = ok && st->parents && st->tokens && st->done && st->candidates && st->scratch;
    for (int i = 0; ok && i < st->batch; i++) {
        finished *f = &st->done[i];
        f->score = ted_alloc(st->n_best, sizeof(double), "beam", err);
        f->log_prob = ted_alloc(st->n_best, sizeof(double), "beam", err);
        f->length = ted_alloc(st->n_best, sizeof(int), "beam", err);
        f->ids = ted_alloc(kept, sizeof(int), "beam", err);
        f->log_probs = ted_alloc(kept, sizeof(float), "beam", err);
        ok = f->score && f->log_prob && f->length && f->ids && f->log_probs;
    }
    return ok ? TED_OK : TED_ERR_NOMEM;
}

/* Appends the best `keep` tokens of one row (log-softmax in `lp`) as
 * candidates extending hypothesis `beam` of log-prob `base`; returns the
 * number appended. */
static int add_candidates(const float *lp, int vocab, int keep, int beam, double base,
                          candidate *out)
{
    int count = 0;
    for (int id = 0; id < vocab; id++) {
        float x = lp[id];
        /* ids come in increasing order, so an equal log-prob ranks after */
        if (count == keep && !(x > out[keep - 1].token_log_prob))
            continue;
        int at = count < keep ? count++ : keep - 1;
        while (at > 0 && x > out[at - 1].token_log_prob) {
            out[at] = out[at - 1];
            at--;
        }
        out[at] = (candidate){base + x, x, beam, id};
    }
    return count;
}

/* Keeps a finished hypothesis (the history of `parent` plus `c`) if it is
 * among the n_best best of its sentence; on equal scores the earlier
 * finished ranks first. */
static void keep_finished(beam_state *st, int sentence, const beam_rows *from, int parent,
                          int length, const candidate *c)
{
    finished *f = &st->done[sentence];
    double score = c->log_prob / penalty(st, length);
    int at = f->count;
    while (at > 0 && score > f->score[at - 1])
        at--;
    if (at >= st->n_best)
        return;
    int last = f->count < st->n_best ? f->count++ : st->n_best - 1;
    size_t T = st->max_steps;
    for (int k = last; k > at; k--) {
        f->score[k] = f->score[k - 1];
        f->log_prob[k] = f->log_prob[k - 1];
        f->length[k] = f->length[k - 1];
        memcpy(f->ids + k * T, f->ids + (k - 1) * T, sizeof(int) * f->length[k]);
        memcpy(f->log_probs + k * T, f->log_probs + (k - 1) * T, sizeof(float) * f->length[k]);
    }
    f->score[at] = score;
    f->log_prob[at] = c->log_prob;
    f->length[at] = length;
    memcpy(f->ids + at * T, from->ids + parent * T, sizeof(int) * (length - 1));
    memcpy(f->log_probs + at * T, from->log_probs + parent * T, sizeof(float) * (length - 1));
    f->ids[at * T + length - 1] = c->token;
    f->log_probs[at * T + length - 1] = c->token_log_prob;
}

/* Makes next row `row` the history of old row `parent` plus `c`. */
static void extend(beam_state *st, const beam_rows *from, beam_rows *to, int row, int parent,
                   int length, const candidate *c)
{
    size_t T = st->max_steps;
    to->sentence[row] = from->sentence[parent];
    to->log_prob[row] = c->log_prob;
    memcpy(to->ids + row * T, from->ids + parent * T, sizeof(int) * (length - 1));
    memcpy(to->log_probs + row * T, from->log_probs + parent * T, sizeof(float) * (length - 1));
    to->ids[row * T + length - 1] = c->token;
    to->log_probs[row * T + length - 1] = c->token_log_prob;
    st->parents[row] = parent;
    st->tokens[row] = c->token;
}

/* One step of one sentence, whose open hypotheses are rows [first, first +
 * open) of `from` with `length - 1` tokens each; its next open hypotheses
 * are appended to `to` from row `next`. Returns how many (0 when the
 * sentence is done). */
static int advance(beam_state *st, const float *logits, const beam_rows *from, beam_rows *to,
                   int first, int open, int next, int length)
{
    const ted_config *c = &st->model->config;
    int vocab = c->tgt_vocab_size, sentence = from->sentence[first];
    int keep = st->beam + 1 < vocab ? st->beam + 1 : vocab;
    int count = 0;
    for (int b = 0; b < open; b++) {
        int row = first + b;
        memcpy(st->scratch, logits + (size_t)row * vocab, sizeof(float) * vocab);
        ted_log_softmax(st->scratch, vocab);
        count += add_candidates(st->scratch, vocab, keep, b, from->log_prob[row],
                                st->candidates + count);
    }
    qsort(st->candidates, count, sizeof *st->candidates, by_rank);

    bool at_limit = length >= st->max_lengths[sentence];
    int opened = 0;
    for (int k = 0; k < count && (opened < st->beam || k < st->beam); k++) {
        const candidate *cand = &st->candidates[k];
        if (cand->token == c->eos_id || at_limit) {
            if (k < st->beam)
                keep_finished(st, sentence, from, first + cand->beam, length, cand);
        } else if (opened < st->beam) {
            extend(st, from, to, next + opened, first + cand->beam, length, cand);
            opened++;
        }
    }
    const finished *f = &st->done[sentence];
    if (opened > 0 && f->count >= st->n_best) {
        double best_possible = to->log_prob[next] / penalty(st, st->max_lengths[sentence]);
        if (best_possible <= f->score[st->n_best - 1])
            opened = 0;
    }
    return opened;
}

static ted_status collect(const beam_state *st, ted_hypothesis *out, ted_error *err)
{
    size_t T = st->max_steps;
    for (int i = 0; i < st->batch; i++) {
        const finished *f = &st->done[i];
        for (int k = 0; k < st->n_best; k++) {
            ted_hypothesis *h = &out[(size_t)i * st->n_best + k];
            if (k >= f->count) {  /* not reached while beam_size < vocabulary */
                *h = (ted_hypothesis){.log_prob = -INFINITY, .score = -INFINITY};
                continue;
            }
            ted_status s = ted_hypothesis_copy(h, f->ids + k * T, f->log_probs + k * T,
                                               f->length[k], f->score[k], err);
            if (s)
                return s;
            h->log_prob = f->log_prob[k];
        }
    }
    return TED_OK;
}

ted_status ted_beam_search(ted_session *s, const int *const *source_ids,
                           const int *source_lengths, const int *max_lengths, int batch,
                           const ted_beam_params *params, int n_best,
                           ted_hypothesis *hypotheses, ted_error *err)
{
    const ted_model *m = s->model;
    int max_steps;
    ted_status status = ted_check_max_lengths(max_lengths, batch, &max_steps, "beam search",
                                              err);
    if (!status)
        status = ted_check_beam_params(params, n_best, m->config.tgt_vocab_size, err);
    if (status)
        return status;
    for (size_t i = 0; i < (size_t)batch * n_best; i++)
        hypotheses[i] = (ted_hypothesis){0};

    beam_state st = {
        .model = m,
        .beam = params->beam_size,
        .n_best = n_best,
        .max_steps = max_steps,
        .batch = batch,
        .alpha = params->length_penalty,
        .max_lengths = max_lengths,
    };
    status = alloc_state(&st, err);
    if (!status)
        status = ted_session_encode(s, source_ids, source_lengths, batch, max_steps, err);
    beam_rows *from = &st.rows[0], *to = &st.rows[1];
    for (int i = 0; !status && i < batch; i++) {
        from->sentence[i] = i;
        from->log_prob[i] = 0.0;
        st.tokens[i] = m->config.bos_id;
    }
    for (int active = batch, length = 1; !status && active > 0; length++) {
        const float *logits;
        if ((status = ted_session_step(s, st.tokens, &logits, err)))
            break;
        int next = 0;
        for (int first = 0; first < active;) {
            int open = 1;
            while (first + open < active && from->sentence[first + open] == from->sentence[first])
                open++;
            next += advance(&st, logits, from, to, first, open, next, length);
            first += open;
        }
        if (next > 0)
            status = ted_session_select(s, st.parents, next, err);
        beam_rows *swap = from;
        from = to;
        to = swap;
        active = next;
    }
    if (!status)
        status = collect(&st, hypotheses, err);
    if (status)
        ted_hypotheses_free(hypotheses, batch * n_best);
    free_state(&st);
    return status;
}
