/* Beam search: a loop over ted_session_step() and ted_session_select(),
 * like greedy decoding, keeping up to beam_size open hypotheses per
 * sentence (docs/decoding.md).
 *
 * Every step, each open hypothesis of a sentence is extended by every
 * token that is not banned, by its log-prob after the rules on the scores
 * (ted_apply_logits_rules, when any is on); the candidates are ranked by total log-prob
 * (ties: the earlier hypothesis, then the lower id). Among the best
 * beam_size candidates, those that end in EOS are finished: they leave the
 * beam and are kept aside, ranked by score = log-prob / lp(length), the
 * beam_size best of them. The best beam_size candidates that do not end in
 * EOS form the next beam.
 *
 * When a sentence stops is Hugging Face transformers' rule
 * (BeamHypotheses.is_done, its early_stopping setting: done()). At the
 * length limit the EOS candidates among the best beam_size finish and, unless
 * the sentence is done by then, so do the best beam_size others, as
 * transformers' finalize() adds its open beams (finish_at_limit).
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
 * are ranked.
 *
 * With a trace, each step of each sentence is reported once decided:
 * every candidate ranked, and whether it stayed open, finished or was
 * pruned. While a sentence's target prefix lasts, the prefix token is each
 * open hypothesis' only candidate. */
#include "model/beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "layers/softmax.h"
#include "model/decoding.h"
#include "model/model.h"
#include "model/session.h"

ted_beam_params ted_beam_default_params(void)
{
    return (ted_beam_params){.beam_size = 4, .length_penalty = 0.6f,
                             .length_normalization = TED_LENGTH_GNMT,
                             .early_stopping = TED_EARLY_STOPPING_FALSE};
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
 * of them; `history` arrays are (rows, history): the steps taken so far. */
typedef struct beam_rows {
    int *sentence;
    double *log_prob;
    int *ids;
    float *log_probs;
} beam_rows;

/* Every sentence's finished hypotheses: the beam_size best so far, by
 * score (the first n_best are the result). */
typedef struct finished {
    int *count;                /* (batch): kept, at most beam_size */
    double *score, *log_prob;  /* (batch, beam_size) */
    int *length;               /* (batch, beam_size) */
    int *ids;                  /* (batch, beam_size, history) */
    float *log_probs;          /* (batch, beam_size, history) */
} finished;

typedef struct beam_state {
    const ted_model *model;
    int beam, n_best, max_steps, batch;
    int history;         /* the tokens each hypothesis's arrays hold: doubles as the steps
                          * reach it, up to max_steps */
    double alpha;
    ted_length_normalization normalization;
    ted_early_stopping early_stopping;
    const ted_batch *sources;
    const int *max_lengths;
    int length;          /* of the candidates of this step, EOS counted */
    beam_rows rows[2];   /* current and next, swapped after every step */
    int *parents;        /* (capacity): old row of each next row */
    int *tokens;         /* (capacity): the token each next row feeds */
    finished done;
    candidate *candidates;  /* (beam * (beam + 1)) */
    float *scratch;      /* (vocab): a row's log-softmax */
    int *top_ids;        /* (beam + 1): its best tokens */
    float *top_values;   /* (beam + 1): and their log-probs */
    const ted_logits_rules *rules;  /* NULL: none on */
    const ted_output_subset *subset;  /* the step's shortlist, whose scores hold every
                                       * finite logit, or NULL: the whole rows */
    ted_session *session;  /* spreads the step's logits where the subset is not enough */
    const ted_beam_trace *trace;  /* NULL: none */
    ted_beam_candidate *traced;   /* (beam * (beam + 1)): a step's candidates, for the trace */
} beam_state;

static double penalty(const beam_state *st, int length)
{
    return ted_length_penalty(st->normalization, st->alpha, length);
}

/* The length a finished hypothesis of `length` tokens, the last `token`, is
 * scored with: one more when it is cut at its sentence's limit and the
 * model's config has an EOS follow there (forced_eos, as transformers'
 * forced_eos_token_id appends it). */
static int scored_length(const beam_state *st, int sentence, int length, int token)
{
    const ted_config *c = &st->model->config;
    bool cut = length >= st->max_lengths[sentence] && token != c->eos_id;
    return cut && c->forced_eos ? length + 1 : length;
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
    free(st->done.count);
    free(st->done.score);
    free(st->done.log_prob);
    free(st->done.length);
    free(st->done.ids);
    free(st->done.log_probs);
    free(st->candidates);
    free(st->scratch);
    free(st->top_ids);
    free(st->top_values);
    free(st->traced);
}

static bool alloc_rows(beam_rows *r, size_t capacity, size_t cells, ted_error *err)
{
    r->sentence = ted_alloc(capacity, sizeof(int), "beam", err);
    r->log_prob = ted_alloc(capacity, sizeof(double), "beam", err);
    r->ids = ted_alloc(cells, sizeof(int), "beam", err);
    r->log_probs = ted_alloc(cells, sizeof(float), "beam", err);
    return r->sentence && r->log_prob && r->ids && r->log_probs;
}

static bool alloc_finished(finished *f, size_t batch, size_t beam, size_t history,
                           ted_error *err)
{
    size_t kept = ted_mul_size(batch, beam), cells = ted_mul_size(kept, history);
    f->count = ted_alloc(batch, sizeof(int), "beam", err);
    f->score = ted_alloc(kept, sizeof(double), "beam", err);
    f->log_prob = ted_alloc(kept, sizeof(double), "beam", err);
    f->length = ted_alloc(kept, sizeof(int), "beam", err);
    f->ids = ted_alloc(cells, sizeof(int), "beam", err);
    f->log_probs = ted_alloc(cells, sizeof(float), "beam", err);
    return f->count && f->score && f->log_prob && f->length && f->ids &&
           f->log_probs;
}

static ted_status alloc_state(beam_state *st, ted_error *err)
{
    size_t capacity = ted_mul_size(st->batch, st->beam);
    st->history = st->max_steps < 32 ? st->max_steps : 32;
    size_t cells = ted_mul_size(capacity, st->history);
    if (capacity > (size_t)INT32_MAX)
        return ted_fail(err, TED_ERR_NOMEM, "beam search: %d sentences x beam %d are too many",
                        st->batch, st->beam);
    bool ok = alloc_rows(&st->rows[0], capacity, cells, err) &&
              alloc_rows(&st->rows[1], capacity, cells, err) &&
              alloc_finished(&st->done, st->batch, st->beam, st->history, err);
    st->parents = ted_alloc(capacity, sizeof(int), "beam", err);
    st->tokens = ted_alloc(capacity, sizeof(int), "beam", err);
    st->candidates = ted_alloc((size_t)st->beam * (st->beam + 1), sizeof(candidate), "beam", err);
    st->scratch = ted_alloc(st->model->config.tgt_vocab_size, sizeof(float), "beam", err);
    st->top_ids = ted_alloc(st->beam + 1, sizeof(int), "beam", err);
    st->top_values = ted_alloc(st->beam + 1, sizeof(float), "beam", err);
    st->traced = ted_alloc((size_t)st->beam * (st->beam + 1), sizeof(ted_beam_candidate), "beam",
                           err);
    ok = ok && st->parents && st->tokens && st->candidates && st->scratch && st->top_ids &&
         st->top_values && st->traced;
    return ok ? TED_OK : TED_ERR_NOMEM;
}

/* top_tokens over st->subset's scores of session row `row` alone, for a
 * step without rules: the scores hold every finite logit of the row and
 * the ids increase, so the log-softmax and the best tokens (the earlier
 * id first among equals) are the whole row's. 0 (nothing chosen) when
 * fewer than beam_size + 1 of them are allowed, which the whole row
 * decides. */
static int top_in_subset(beam_state *st, int row)
{
    const ted_output_subset *sub = st->subset;
    int n = sub->count, k = st->beam + 1;
    if (n < k)
        return 0;
    const float *kept = sub->scores + (size_t)row * n;
    float max, log_sum;
    ted_log_softmax_terms_at(kept, sub->ids, n, st->model->config.tgt_vocab_size, &max,
                             &log_sum);
    for (int i = 0; i < n; i++)
        st->scratch[i] = kept[i] - max - log_sum;
    ted_ban_tokens_subset(st->model, sub->ids, n, st->scratch);
    int count = ted_top_k(st->scratch, n, k, st->top_ids, st->top_values);
    if (count < k || st->top_values[k - 1] == -INFINITY)
        return 0;
    for (int i = 0; i < count; i++)
        st->top_ids[i] = sub->ids[st->top_ids[i]];
    return count;
}

/* The candidate tokens of open hypothesis `row` of `from`, whose logits
 * are `logits`: its best beam_size + 1 allowed tokens by their log-probs
 * after the rules (transformers applies its logits processors to the
 * log-softmax in beam search, and ranks by what they leave), or the token
 * its sentence's prefix forces. Returns their number. */
static int top_tokens(beam_state *st, const float *logits, const beam_rows *from, int row)
{
    int vocab = st->model->config.tgt_vocab_size, length = st->length - 1;
    int forced = ted_batch_forced(st->sources, from->sentence[row], length);
    if (forced >= 0) {
        st->top_ids[0] = forced;
        st->top_values[0] = TED_FORCED_LOG_PROB;
        return 1;
    }
    int n = st->subset && !st->rules ? top_in_subset(st, row) : 0;
    if (n > 0)
        return n;
    ted_session_spread_logits(st->session);
    ted_next_token_scores(st->model, logits, st->scratch, NULL);
    ted_ban_tokens(st->model, st->scratch);
    if (st->rules) {
        int i = from->sentence[row];
        ted_rules_source source = {st->sources->source_ids[i], st->sources->source_lengths[i]};
        ted_apply_logits_rules_source(st->model, st->rules, &source,
                                      from->ids + (size_t)row * st->history, length,
                                      st->scratch);
    }
    return ted_top_k(st->scratch, vocab, st->beam + 1, st->top_ids, st->top_values);
}

/* Ranks the candidates of one sentence, whose open hypotheses are rows
 * [first, first + open) of `from`. Returns their number. */
static int rank_candidates(beam_state *st, const float *logits, const beam_rows *from,
                           int first, int open)
{
    int vocab = st->model->config.tgt_vocab_size, count = 0;
    for (int b = 0; b < open; b++) {
        int row = first + b;
        int n = top_tokens(st, logits + (size_t)row * vocab, from, row);
        for (int i = 0; i < n; i++)
            st->candidates[count++] = (candidate){from->log_prob[row] + st->top_values[i],
                                                  st->top_values[i], b, st->top_ids[i]};
    }
    qsort(st->candidates, count, sizeof *st->candidates, by_rank);
    return count;
}

/* Keeps a finished hypothesis (the history of `parent` plus `c`) if it is
 * among the beam_size best of its sentence; on equal scores the earlier
 * finished ranks first. */
static void keep_finished(beam_state *st, int sentence, const beam_rows *from, int parent,
                          int length, const candidate *c)
{
    finished *f = &st->done;
    size_t T = st->history, first = (size_t)sentence * st->beam;
    double score = c->log_prob / penalty(st, scored_length(st, sentence, length, c->token));
    double *scores = f->score + first;
    int at = f->count[sentence];
    while (at > 0 && score > scores[at - 1])
        at--;
    if (at >= st->beam)
        return;
    int last = f->count[sentence] < st->beam ? f->count[sentence]++ : st->beam - 1;
    for (size_t k = first + last; k > first + at; k--) {
        f->score[k] = f->score[k - 1];
        f->log_prob[k] = f->log_prob[k - 1];
        f->length[k] = f->length[k - 1];
        memcpy(f->ids + k * T, f->ids + (k - 1) * T, sizeof(int) * f->length[k]);
        memcpy(f->log_probs + k * T, f->log_probs + (k - 1) * T, sizeof(float) * f->length[k]);
    }
    size_t k = first + at;
    f->score[k] = score;
    f->log_prob[k] = c->log_prob;
    f->length[k] = length;
    memcpy(f->ids + k * T, from->ids + parent * T, sizeof(int) * (length - 1));
    memcpy(f->log_probs + k * T, from->log_probs + parent * T, sizeof(float) * (length - 1));
    f->ids[k * T + length - 1] = c->token;
    f->log_probs[k * T + length - 1] = c->token_log_prob;
}

/* Makes next row `row` the history of old row `parent` plus `c`. */
static void extend(beam_state *st, const beam_rows *from, beam_rows *to, int row, int parent,
                   int length, const candidate *c)
{
    size_t T = st->history;
    to->sentence[row] = from->sentence[parent];
    to->log_prob[row] = c->log_prob;
    memcpy(to->ids + row * T, from->ids + parent * T, sizeof(int) * (length - 1));
    memcpy(to->log_probs + row * T, from->log_probs + parent * T, sizeof(float) * (length - 1));
    to->ids[row * T + length - 1] = c->token;
    to->log_probs[row * T + length - 1] = c->token_log_prob;
    st->parents[row] = parent;
    st->tokens[row] = c->token;
}

/* Whether a sentence is done after a step whose candidates have `length`
 * tokens, the best of them log-prob `best`: transformers'
 * BeamHypotheses.is_done, whose cur_len minus the decoder's start token is
 * `length`, and whose max_length minus it the sentence's limit (plus the
 * forced EOS, when the config has one follow). */
static bool done(const beam_state *st, int sentence, double best, int length)
{
    const finished *f = &st->done;
    if (f->count[sentence] < st->beam)
        return false;
    if (st->early_stopping == TED_EARLY_STOPPING_TRUE)
        return true;
    if (st->early_stopping == TED_EARLY_STOPPING_NEVER && st->alpha > 0.0)
        length = st->max_lengths[sentence] + (st->model->config.forced_eos ? 1 : 0);
    double worst = f->score[(size_t)sentence * st->beam + st->beam - 1];
    return worst >= best / penalty(st, length);
}

/* ---- the trace ----------------------------------------------------------- */

/* Before a sentence's step is decided: every candidate pruned. */
static void trace_begin(beam_state *st, int count)
{
    for (int k = 0; k < count; k++) {
        const candidate *c = &st->candidates[k];
        st->traced[k] = (ted_beam_candidate){c->beam, c->token, c->log_prob, c->log_prob,
                                             TED_BEAM_PRUNED};
    }
}

static void trace_fate(beam_state *st, int sentence, int k, int length, ted_beam_fate fate)
{
    ted_beam_candidate *c = &st->traced[k];
    c->fate = fate;
    if (fate == TED_BEAM_FINISHED)
        c->score = c->log_prob / penalty(st, scored_length(st, sentence, length, c->token));
}

/* Reports the step, the banned candidates (-infinity, ranked last) left out. */
static void trace_end(const beam_state *st, int sentence, int length, int count, bool stops)
{
    if (!st->trace || !st->trace->step)
        return;
    while (count > 0 && st->candidates[count - 1].log_prob == -INFINITY)
        count--;
    ted_beam_step step = {sentence, length, st->traced, count, stops};
    st->trace->step(st->trace->data, &step);
}

/* The last step of a sentence, as transformers' BeamSearchScorer ends it:
 * the EOS candidates among the best beam_size finish; then, unless the
 * sentence is done by now, so do the best beam_size candidates that do not
 * end in EOS (the open beams its finalize() adds). */
static void finish_at_limit(beam_state *st, const beam_rows *from, int first, int sentence,
                            int count, int length)
{
    int eos = st->model->config.eos_id;
    for (int k = 0; k < count && k < st->beam; k++) {
        const candidate *cand = &st->candidates[k];
        if (cand->log_prob != -INFINITY && cand->token == eos) {
            keep_finished(st, sentence, from, first + cand->beam, length, cand);
            trace_fate(st, sentence, k, length, TED_BEAM_FINISHED);
        }
    }
    if (count == 0 || done(st, sentence, st->candidates[0].log_prob, length))
        return;
    for (int k = 0, kept = 0; k < count && kept < st->beam; k++) {
        const candidate *cand = &st->candidates[k];
        if (cand->log_prob == -INFINITY)  /* banned, and every one after it */
            break;
        if (cand->token != eos) {
            keep_finished(st, sentence, from, first + cand->beam, length, cand);
            trace_fate(st, sentence, k, length, TED_BEAM_FINISHED);
            kept++;
        }
    }
}

/* The candidates a step of `sentence` decides: beam_size, or in Marian's
 * beam the beam_size less those finished, its open hypotheses' number
 * after the first step. */
static int decided(const beam_state *st, int sentence)
{
    if (st->early_stopping != TED_EARLY_STOPPING_MARIAN)
        return st->beam;
    return st->beam - st->done.count[sentence];
}

/* Marian's step: the best decided() candidates, those that end in EOS
 * finished, the others open; at the length limit every one of them
 * finishes. Returns how many stay open. */
static int advance_marian(beam_state *st, const beam_rows *from, beam_rows *to, int first,
                          int count, int next)
{
    int length = st->length, sentence = from->sentence[first];
    int eos = st->model->config.eos_id, keep = decided(st, sentence), opened = 0;
    bool last = length >= st->max_lengths[sentence];
    for (int k = 0; k < count && k < keep; k++) {
        const candidate *cand = &st->candidates[k];
        if (cand->log_prob == -INFINITY)  /* banned, and every one after it */
            break;
        if (cand->token == eos || last) {
            keep_finished(st, sentence, from, first + cand->beam, length, cand);
            trace_fate(st, sentence, k, length, TED_BEAM_FINISHED);
        } else {
            extend(st, from, to, next + opened, first + cand->beam, length, cand);
            trace_fate(st, sentence, k, length, TED_BEAM_OPEN);
            opened++;
        }
    }
    trace_end(st, sentence, length, count, opened == 0);
    return opened;
}

/* One step of one sentence, whose open hypotheses are rows [first, first +
 * open) of `from` with st->length - 1 tokens each; its next open hypotheses
 * are appended to `to` from row `next`. Returns how many (0 when the
 * sentence is done). */
static int advance(beam_state *st, const float *logits, const beam_rows *from, beam_rows *to,
                   int first, int open, int next)
{
    int length = st->length;
    int count = rank_candidates(st, logits, from, first, open);
    int sentence = from->sentence[first], eos = st->model->config.eos_id;
    trace_begin(st, count);
    if (st->early_stopping == TED_EARLY_STOPPING_MARIAN)
        return advance_marian(st, from, to, first, count, next);
    if (length >= st->max_lengths[sentence]) {
        finish_at_limit(st, from, first, sentence, count, length);
        trace_end(st, sentence, length, count, true);
        return 0;
    }
    int opened = 0;
    for (int k = 0; k < count && (opened < st->beam || k < st->beam); k++) {
        const candidate *cand = &st->candidates[k];
        if (cand->log_prob == -INFINITY)  /* banned, and every one after it */
            break;
        if (cand->token == eos) {
            if (k < st->beam) {
                keep_finished(st, sentence, from, first + cand->beam, length, cand);
                trace_fate(st, sentence, k, length, TED_BEAM_FINISHED);
            }
        } else if (opened < st->beam) {
            extend(st, from, to, next + opened, first + cand->beam, length, cand);
            trace_fate(st, sentence, k, length, TED_BEAM_OPEN);
            opened++;
        }
    }
    if (opened > 0 && done(st, sentence, st->candidates[0].log_prob, length))
        opened = 0;
    trace_end(st, sentence, length, count, opened == 0);
    return opened;
}

static ted_status collect(const beam_state *st, ted_hypothesis *out, ted_error *err)
{
    const finished *f = &st->done;
    size_t T = st->history;
    for (int i = 0; i < st->batch; i++) {
        for (int k = 0; k < st->n_best; k++) {
            size_t at = (size_t)i * st->beam + k;
            ted_hypothesis *h = &out[(size_t)i * st->n_best + k];
            if (k >= f->count[i]) {  /* not reached while beam_size < vocabulary */
                *h = (ted_hypothesis){.log_prob = -INFINITY, .score = -INFINITY};
                continue;
            }
            ted_status s = ted_hypothesis_copy(h, f->ids + at * T, f->log_probs + at * T,
                                               f->length[at], f->score[at], err);
            if (s)
                return s;
            h->log_prob = f->log_prob[at];
        }
    }
    return TED_OK;
}

/* (rows, old) items of `item` bytes -> a new (rows, wide) array, each
 * row's first `old` items copied; NULL when out of memory. */
static void *widened(const void *data, size_t item, size_t rows, size_t old, size_t wide,
                     ted_error *err)
{
    char *out = ted_alloc(ted_mul_size(rows, wide), item, "beam", err);
    for (size_t r = 0; out && r < rows; r++)
        memcpy(out + r * wide * item, (const char *)data + r * old * item, old * item);
    return out;
}

/* Room for `length` tokens in every history: the history capacity
 * doubles (up to max_steps), each hypothesis keeping its tokens. */
static ted_status grow_history(beam_state *st, int length, ted_error *err)
{
    if (length <= st->history)
        return TED_OK;
    int wide = st->history <= st->max_steps / 2 ? 2 * st->history : st->max_steps;
    wide = wide > length ? wide : length;
    size_t rows = (size_t)st->batch * st->beam, kept = rows;
    size_t old = st->history;
    int *ids[3] = {NULL, NULL, NULL};
    float *log_probs[3] = {NULL, NULL, NULL};
    int *old_ids[3] = {st->rows[0].ids, st->rows[1].ids, st->done.ids};
    float *old_log_probs[3] = {st->rows[0].log_probs, st->rows[1].log_probs, st->done.log_probs};
    bool ok = true;
    for (int k = 0; k < 3 && ok; k++) {
        size_t n = k < 2 ? rows : kept;
        ids[k] = widened(old_ids[k], sizeof(int), n, old, wide, err);
        log_probs[k] = widened(old_log_probs[k], sizeof(float), n, old, wide, err);
        ok = ids[k] && log_probs[k];
    }
    for (int k = 0; k < 3; k++) {  /* the new arrays when all could be had, else the old */
        free(ok ? old_ids[k] : ids[k]);
        free(ok ? old_log_probs[k] : log_probs[k]);
    }
    if (!ok)
        return TED_ERR_NOMEM;
    st->rows[0].ids = ids[0], st->rows[1].ids = ids[1], st->done.ids = ids[2];
    st->rows[0].log_probs = log_probs[0], st->rows[1].log_probs = log_probs[1];
    st->done.log_probs = log_probs[2];
    st->history = wide;
    return TED_OK;
}

/* Steps every sentence until each is done. */
static ted_status search(ted_session *s, beam_state *st, ted_error *err)
{
    beam_rows *from = &st->rows[0], *to = &st->rows[1];
    for (int i = 0; i < st->batch; i++) {
        from->sentence[i] = i;
        from->log_prob[i] = 0.0;
        st->tokens[i] = st->model->config.decoder_start_id;
    }
    for (int active = st->batch, length = 1; active > 0; length++) {
        const float *logits;
        st->length = length;
        ted_status status = grow_history(st, length, err);
        if (!status)
            status = ted_session_step_scores(s, st->tokens, &logits, err);
        if (status)
            return status;
        st->subset = ted_session_step_subset(s);
        st->session = s;
        int next = 0;
        for (int first = 0; first < active;) {
            int open = 1;
            while (first + open < active && from->sentence[first + open] == from->sentence[first])
                open++;
            next += advance(st, logits, from, to, first, open, next);
            first += open;
        }
        if (next > 0 && (status = ted_session_select(s, st->parents, next, err)))
            return status;
        beam_rows *swap = from;
        from = to;
        to = swap;
        active = next;
    }
    return TED_OK;
}

ted_status ted_decode_beam(ted_session *s, const ted_batch *batch,
                           const ted_decode_options *o, const ted_beam_trace *trace,
                           ted_hypothesis *out, ted_error *err)
{
    int max_steps = 0;
    for (int i = 0; i < batch->count; i++)
        max_steps = batch->max_lengths[i] > max_steps ? batch->max_lengths[i] : max_steps;
    beam_state st = {
        .model = ted_session_model(s),
        .beam = o->beam.beam_size,
        .n_best = o->n_best,
        .max_steps = max_steps,
        .batch = batch->count,
        .alpha = o->beam.length_penalty,
        .normalization = o->beam.length_normalization,
        .early_stopping = o->beam.early_stopping,
        .sources = batch,
        .max_lengths = batch->max_lengths,
        .rules = ted_logits_rules_on(&o->rules) ? &o->rules : NULL,
        .trace = trace,
    };
    ted_status status = alloc_state(&st, err);
    if (!status)
        status = search(s, &st, err);
    if (!status)
        status = collect(&st, out, err);
    free_state(&st);
    return status;
}
