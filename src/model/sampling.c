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

#include "core/alloc.h"
#include "core/error.h"
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

/* The candidates of a draw into ids[0..n): the top_k most likely, in
 * order, when a cut needs them sorted; else every token, in id order. */
static int take_candidates(const float *logits, int vocab, const ted_sampling_params *p,
                           int *ids)
{
    int k = p->top_k > 0 && p->top_k < vocab ? p->top_k : vocab;
    if (k < vocab || p->top_p < 1.0f)
        return ted_top_k(logits, vocab, k, ids, NULL);
    for (int i = 0; i < vocab; i++)
        ids[i] = i;
    return vocab;
}

/* weights[i] = exp((logits[ids[i]] - max) / temperature); returns their sum. */
static double weigh(const float *logits, const ted_sampling_params *p,
                    const ted_draw_scratch *s, int n)
{
    double inverse_t = 1.0 / p->temperature, total = 0.0;
    float max = logits[s->ids[0]];
    for (int i = 1; i < n; i++)
        if (logits[s->ids[i]] > max)
            max = logits[s->ids[i]];
    for (int i = 0; i < n; i++) {
        s->weights[i] = exp(((double)logits[s->ids[i]] - max) * inverse_t);
        total += s->weights[i];
    }
    return total;
}

int ted_sample_token(const float *logits, int vocab, const ted_sampling_params *p,
                     ted_rng *rng, const ted_draw_scratch *s)
{
    int n = take_candidates(logits, vocab, p, s->ids);
    double total = weigh(logits, p, s, n);
    if (p->top_p < 1.0f) {  /* the candidates are sorted: keep the nucleus */
        double need = (double)p->top_p * total, sum = 0.0;
        int kept = 0;
        while (kept < n && sum < need)
            sum += s->weights[kept++];
        n = kept > 0 ? kept : 1;
        total = sum > 0.0 ? sum : s->weights[0];
    }
    double u = ted_rng_uniform(rng) * total, sum = 0.0;
    int last = 0;  /* the last candidate that can be drawn, should u round up to total */
    for (int i = 0; i < n; i++) {
        if (s->weights[i] == 0.0)
            continue;
        sum += s->weights[i];
        if (u < sum)
            return s->ids[i];
        last = i;
    }
    return s->ids[last];
}

/* ---- the decode ------------------------------------------------------------ */

ted_sampling_params ted_sampling_default_params(void)
{
    return (ted_sampling_params){.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 0};
}

typedef struct sample_state {
    const ted_model *model;
    const ted_sampling_params *params;
    const int *max_lengths;  /* (batch) */
    int n_samples, max_steps;
    bool first;        /* the first step: row i draws every sample of sentence i */
    int *ids;          /* (batch * n_samples, max_steps) */
    float *log_probs;  /* (batch * n_samples, max_steps) */
    int *lengths;      /* (batch * n_samples) */
    ted_rng *rngs;     /* (batch) */
    ted_rows rows;     /* (batch * n_samples) each; owner: the sample */
    float *scratch;    /* (vocab): one row's log-softmax */
    float *allowed;    /* (vocab): its logits, banned tokens at -infinity */
    ted_draw_scratch draw;  /* (vocab) each */
} sample_state;

static void free_state(sample_state *st)
{
    free(st->ids);
    free(st->log_probs);
    free(st->lengths);
    free(st->rngs);
    free(st->rows.owner);
    free(st->rows.tokens);
    free(st->rows.keep);
    free(st->scratch);
    free(st->allowed);
    free(st->draw.ids);
    free(st->draw.weights);
}

static ted_status alloc_state(sample_state *st, int batch, ted_error *err)
{
    size_t samples = ted_mul_size(batch, st->n_samples);
    size_t cells = ted_mul_size(samples, st->max_steps);
    size_t vocab = st->model->config.tgt_vocab_size;
    if (samples > INT_MAX)
        return ted_fail(err, TED_ERR_NOMEM, "sampling: %d x %d samples are too many", batch,
                        st->n_samples);
    st->ids = ted_alloc(cells, sizeof(int), "samples", err);
    st->log_probs = ted_alloc(cells, sizeof(float), "samples", err);
    st->lengths = ted_alloc(samples, sizeof(int), "samples", err);
    st->rngs = ted_alloc(batch, sizeof(ted_rng), "samples", err);
    st->rows.owner = ted_alloc(samples, sizeof(int), "samples", err);
    st->rows.tokens = ted_alloc(samples, sizeof(int), "samples", err);
    st->rows.keep = ted_alloc(samples, sizeof(int), "samples", err);
    st->scratch = ted_alloc(vocab, sizeof(float), "samples", err);
    st->allowed = ted_alloc(vocab, sizeof(float), "samples", err);
    st->draw.ids = ted_alloc(vocab, sizeof(int), "samples", err);
    st->draw.weights = ted_alloc(vocab, sizeof(double), "samples", err);
    bool ok = st->ids && st->log_probs && st->lengths && st->rngs && st->rows.owner &&
              st->rows.tokens && st->rows.keep && st->scratch && st->allowed && st->draw.ids &&
              st->draw.weights;
    return ok ? TED_OK : TED_ERR_NOMEM;
}

/* Draws the next token of every row (at the first step, one for each of
 * its sentence's samples); returns how many samples go on. */
static int draw_tokens(void *state, const float *logits, int active)
{
    sample_state *st = state;
    const ted_config *c = &st->model->config;
    int vocab = c->tgt_vocab_size, kept = 0;
    for (int row = 0; row < active; row++) {
        ted_next_token_scores(st->model, logits + (size_t)row * vocab, st->scratch, st->allowed);
        int from = st->first ? row * st->n_samples : st->rows.owner[row];
        int count = st->first ? st->n_samples : 1;
        int sentence = from / st->n_samples;
        for (int j = from; j < from + count; j++) {
            int token = ted_sample_token(st->allowed, vocab, st->params, &st->rngs[sentence],
                                         &st->draw);
            size_t at = (size_t)j * st->max_steps + st->lengths[j];
            st->ids[at] = token;
            st->log_probs[at] = st->scratch[token];
            st->lengths[j]++;
            bool ended = token == c->eos_id || st->lengths[j] >= st->max_lengths[sentence];
            kept = ted_rows_keep(&st->rows, kept, row, j, token, ended);
        }
    }
    st->first = false;
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

static ted_status check_arguments(const int *max_lengths, int batch,
                                  const ted_sampling_params *params, int n_samples,
                                  int *max_steps, ted_error *err)
{
    ted_status status = ted_check_max_lengths(max_lengths, batch, max_steps, "sampling", err);
    if (!status)
        status = ted_check_sampling_params(params, err);
    if (!status && n_samples < 1)
        status = ted_fail(err, TED_ERR_ARGUMENT, "sampling: %d samples per sentence",
                          n_samples);
    return status;
}

ted_status ted_sampling_decode(ted_session *s, const int *const *source_ids,
                               const int *source_lengths, const int *max_lengths, int batch,
                               const ted_sampling_params *params, const uint64_t *streams,
                               int n_samples, ted_hypothesis *hypotheses, ted_error *err)
{
    sample_state st = {.model = s->model, .params = params, .max_lengths = max_lengths,
                       .n_samples = n_samples, .first = true};
    ted_status status = check_arguments(max_lengths, batch, params, n_samples, &st.max_steps,
                                        err);
    if (status)
        return status;
    for (size_t i = 0; i < (size_t)batch * n_samples; i++)
        hypotheses[i] = (ted_hypothesis){0};
    status = alloc_state(&st, batch, err);
    if (!status)
        status = ted_session_encode(s, source_ids, source_lengths, batch, st.max_steps, err);
    for (int i = 0; !status && i < batch; i++) {
        st.rngs[i] = ted_rng_seed(params->seed, streams ? streams[i] : (uint64_t)i);
        st.rows.tokens[i] = s->model->config.bos_id;
    }
    if (!status)
        status = ted_decode_rows(s, &st.rows, batch, draw_tokens, &st, err);
    if (!status)
        status = collect(&st, batch, hypotheses, err);
    if (status)
        ted_hypotheses_free(hypotheses, batch * n_samples);
    free_state(&st);
    return status;
}
