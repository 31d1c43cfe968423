/* Random sampling: every step each unfinished sample draws its next token
 * from softmax(logits / temperature), cut to the top_k most likely tokens
 * and then to the nucleus holding top_p of the probability. A loop over
 * ted_session_step() and ted_session_select(), like greedy decoding.
 *
 * Reproducible: sentence i draws from its own generator, seeded by (seed,
 * stream i), and its samples consume it in a fixed order (at the first step
 * sample 0, 1, ..., later the unfinished ones in that order), so what a
 * sentence gets does not depend on the other sentences of its batch. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "layers/softmax.h"
#include "model/decoding.h"
#include "model/session.h"

/* ---- PCG32 ---------------------------------------------------------------- */

ted_rng ted_rng_seed(uint64_t seed, uint64_t stream)
{
    ted_rng rng = {0, (stream << 1) | 1u};
    ted_rng_next(&rng);
    rng.state += seed;
    ted_rng_next(&rng);
    return rng;
}

uint32_t ted_rng_next(ted_rng *rng)
{
    uint64_t old = rng->state;
    rng->state = old * 6364136223846793005ULL + rng->increment;
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rotation = (uint32_t)(old >> 59);
    return (xorshifted >> rotation) | (xorshifted << ((0u - rotation) & 31u));
}

double ted_rng_uniform(ted_rng *rng)
{
    uint64_t high = ted_rng_next(rng) >> 5;  /* 27 bits */
    uint64_t low = ted_rng_next(rng) >> 6;   /* 26 bits */
    return (double)((high << 26) | low) * (1.0 / 9007199254740992.0);  /* 2^-53 */
}

/* ---- one draw ------------------------------------------------------------ */

/* More likely first; on equal logits the lower id. */
static int by_logit(const void *a, const void *b)
{
    const ted_candidate *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit < y->logit ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The k most likely of the vocabulary into scratch[0..k), in order. Small k
 * keeps a sorted list (one pass, rarely an insertion); large k sorts all. */
static void take_top(const float *logits, int vocab, int k, ted_candidate *top)
{
    if (k > 64) {
        for (int i = 0; i < vocab; i++)
            top[i] = (ted_candidate){logits[i], i, 0.0};
        qsort(top, vocab, sizeof *top, by_logit);
        return;
    }
    int count = 0;
    for (int i = 0; i < vocab; i++) {
        float x = logits[i];
        /* ids come in increasing order, so an equal logit ranks after */
        if (count == k && !(x > top[k - 1].logit))
            continue;
        int at = count < k ? count++ : k - 1;
        while (at > 0 && x > top[at - 1].logit) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = (ted_candidate){x, i, 0.0};
    }
}

int ted_sample_token(const float *logits, int vocab, const ted_sampling_params *p,
                     ted_rng *rng, ted_candidate *scratch)
{
    double inverse_t = 1.0 / p->temperature;
    int k = p->top_k > 0 && p->top_k < vocab ? p->top_k : vocab;
    int n = vocab;  /* candidates scratch[0..n) */
    if (k < vocab || p->top_p < 1.0f) {
        take_top(logits, vocab, k, scratch);
        n = k;
    } else {
        for (int i = 0; i < vocab; i++)
            scratch[i] = (ted_candidate){logits[i], i, 0.0};
    }
    float max = scratch[0].logit;
    for (int i = 1; i < n; i++)
        if (scratch[i].logit > max)
            max = scratch[i].logit;
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        scratch[i].weight = exp(((double)scratch[i].logit - max) * inverse_t);
        total += scratch[i].weight;
    }
    if (p->top_p < 1.0f) {  /* the candidates are sorted: keep the nucleus */
        double need = (double)p->top_p * total, sum = 0.0;
        int kept = 0;
        while (kept < n && sum < need)
            sum += scratch[kept++].weight;
        n = kept > 0 ? kept : 1;
        total = sum > 0.0 ? sum : scratch[0].weight;
    }
    double u = ted_rng_uniform(rng) * total, sum = 0.0;
    for (int i = 0; i < n; i++) {
        sum += scratch[i].weight;
        if (u < sum)
            return scratch[i].id;
    }
    return scratch[n - 1].id;
}

/* ---- the decode ------------------------------------------------------------ */

ted_sampling_params ted_sampling_default_params(void)
{
    return (ted_sampling_params){.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 0};
}

typedef struct sample_state {
    int n_samples, max_steps;
    int *ids;          /* (batch * n_samples, max_steps) */
    float *log_probs;  /* (batch * n_samples, max_steps) */
    int *lengths;      /* (batch * n_samples) */
    ted_rng *rngs;     /* (batch) */
    int *sample;       /* (rows): the sample a row decodes */
    int *tokens;       /* (rows): the token it feeds next */
    int *keep;         /* (rows): the rows that go on */
    float *scratch;    /* (vocab): one row's log-softmax */
    ted_candidate *candidates;  /* (vocab) */
} sample_state;

static void free_state(sample_state *st)
{
    free(st->ids);
    free(st->log_probs);
    free(st->lengths);
    free(st->rngs);
    free(st->sample);
    free(st->tokens);
    free(st->keep);
    free(st->scratch);
    free(st->candidates);
}

static ted_status alloc_state(sample_state *st, int batch, int n_samples, int max_steps,
                              int vocab, ted_error *err)
{
    size_t samples = ted_mul_size(batch, n_samples);
    size_t cells = ted_mul_size(samples, max_steps);
    if (samples > INT_MAX)
        return ted_fail(err, TED_ERR_NOMEM, "sampling: %d x %d samples are too many", batch,
                        n_samples);
    *st = (sample_state){
        .n_samples = n_samples,
        .max_steps = max_steps,
        .ids = ted_alloc(cells, sizeof(int), "samples", err),
        .log_probs = ted_alloc(cells, sizeof(float), "samples", err),
        .lengths = ted_alloc(samples, sizeof(int), "samples", err),
        .rngs = ted_alloc(batch, sizeof(ted_rng), "samples", err),
        .sample = ted_alloc(samples, sizeof(int), "samples", err),
        .tokens = ted_alloc(samples, sizeof(int), "samples", err),
        .keep = ted_alloc(samples, sizeof(int), "samples", err),
        .scratch = ted_alloc(vocab, sizeof(float), "samples", err),
        .candidates = ted_alloc(vocab, sizeof(ted_candidate), "samples", err),
    };
    bool ok = st->ids && st->log_probs && st->lengths && st->rngs && st->sample && st->tokens &&
              st->keep && st->scratch && st->candidates;
    return ok ? TED_OK : TED_ERR_NOMEM;
}

/* Draws the next token of every row (at the first step, one for each of
 * its sentence's samples); returns how many samples go on, listing their
 * rows in keep and compacting sample and tokens. Later steps read
 * sample[row] before writing sample[kept], kept <= row; the first step does
 * not read it. */
static int draw_tokens(const ted_model *m, sample_state *st, const float *logits, int active,
                       bool first, const int *max_lengths, const ted_sampling_params *p)
{
    int vocab = m->config.tgt_vocab_size, eos = m->config.eos_id;
    int kept = 0;
    for (int row = 0; row < active; row++) {
        const float *row_logits = logits + (size_t)row * vocab;
        memcpy(st->scratch, row_logits, sizeof(float) * vocab);
        ted_log_softmax(st->scratch, vocab);
        int from = first ? row * st->n_samples : st->sample[row];
        int count = first ? st->n_samples : 1;
        int sentence = from / st->n_samples;
        for (int j = from; j < from + count; j++) {
            int token = ted_sample_token(row_logits, vocab, p, &st->rngs[sentence],
                                         st->candidates);
            size_t at = (size_t)j * st->max_steps + st->lengths[j];
            st->ids[at] = token;
            st->log_probs[at] = st->scratch[token];
            st->lengths[j]++;
            if (token == eos || st->lengths[j] >= max_lengths[sentence])
                continue;
            st->keep[kept] = row;
            st->sample[kept] = j;
            st->tokens[kept] = token;
            kept++;
        }
    }
    return kept;
}

/* Sentence i's samples, most likely first (on ties, the earlier sample). */
static ted_status collect(const sample_state *st, int batch, ted_hypothesis *out,
                          ted_error *err)
{
    int n = st->n_samples;
    for (int i = 0; i < batch; i++) {
        ted_hypothesis *h = out + (size_t)i * n;
        for (int k = 0; k < n; k++) {
            int j = i * n + k;
            size_t at = (size_t)j * st->max_steps;
            ted_status s = ted_hypothesis_copy(&h[k], st->ids + at, st->log_probs + at,
                                               st->lengths[j], 0.0, err);
            if (s)
                return s;
            h[k].score = h[k].log_prob;
            for (int at_k = k; at_k > 0 && h[at_k].score > h[at_k - 1].score; at_k--) {
                ted_hypothesis swap = h[at_k];
                h[at_k] = h[at_k - 1];
                h[at_k - 1] = swap;
            }
        }
    }
    return TED_OK;
}

ted_status ted_sampling_decode(ted_session *s, const int *const *source_ids,
                               const int *source_lengths, const int *max_lengths, int batch,
                               const ted_sampling_params *params, const uint64_t *streams,
                               int n_samples, ted_hypothesis *hypotheses, ted_error *err)
{
    const ted_model *m = s->model;
    int max_steps;
    ted_status status = ted_check_max_lengths(max_lengths, batch, &max_steps, "sampling", err);
    if (!status)
        status = ted_check_sampling_params(params, err);
    if (!status && n_samples < 1)
        status = ted_fail(err, TED_ERR_ARGUMENT, "sampling: %d samples per sentence",
                          n_samples);
    if (status)
        return status;
    for (size_t i = 0; i < (size_t)batch * n_samples; i++)
        hypotheses[i] = (ted_hypothesis){0};

    sample_state st = {0};
    status = alloc_state(&st, batch, n_samples, max_steps, m->config.tgt_vocab_size, err);
    if (!status)
        status = ted_session_encode(s, source_ids, source_lengths, batch, max_steps, err);
    if (!status) {
        for (int i = 0; i < batch; i++) {
            st.rngs[i] = ted_rng_seed(params->seed, streams ? streams[i] : (uint64_t)i);
            st.tokens[i] = m->config.bos_id;
        }
    }
    for (int active = batch, first = 1; !status && active > 0; first = 0) {
        const float *logits;
        if ((status = ted_session_step(s, st.tokens, &logits, err)))
            break;
        int kept = draw_tokens(m, &st, logits, active, first, max_lengths, params);
        bool same_rows = kept == active;
        for (int r = 0; same_rows && r < kept; r++)
            same_rows = st.keep[r] == r;
        if (kept > 0 && !same_rows)
            status = ted_session_select(s, st.keep, kept, err);
        active = kept;
    }
    if (!status)
        status = collect(&st, batch, hypotheses, err);
    if (status)
        ted_hypotheses_free(hypotheses, batch * n_samples);
    free_state(&st);
    return status;
}
