/* Greedy decoding and sampling: rows that go on alone. Every row of the
 * session decodes one output and never looks at the others, so a step is:
 * feed each row its token, choose each row's next token (model/choose.h),
 * drop the rows that ended. Greedy decoding is one row per sentence taking
 * the best allowed token; sampling is n_best rows per sentence, each
 * drawing its token.
 *
 * Sampling is reproducible: sentence i draws from its own generator,
 * seeded by (seed, its stream), and its samples consume it in a fixed
 * order (at the first step sample 0, 1, ..., later the unfinished ones in
 * that order), so what a sentence gets does not depend on the other
 * sentences of its batch. The first step runs one row per sentence, whose
 * logits start every sample; select() then repeats the row once per
 * sample. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "model/choose.h"
#include "model/model.h"

/* The rows of the session: row r decodes sample owner[r] and feeds
 * tokens[r] at the next step. */
typedef struct rows {
    int *tokens;  /* (samples) */
    int *owner;   /* (samples) */
    int *keep;    /* (samples): the rows of the last step that go on, in order */
} rows;

typedef struct independent {
    const ted_model *model;
    const ted_batch *batch;
    const ted_decode_options *options;
    int samples;             /* hypotheses per sentence: n_best when sampling, else 1 */
    bool scored;             /* the tokens' log-probabilities are wanted (tokens_only) */
    bool first;              /* before the first step: row i starts sentence i's samples */
    ted_hypothesis *out;     /* (count * samples): each sample's tokens so far */
    int *room;               /* (count * samples): cells held by each */
    ted_rng *rngs;           /* (count): sampling, each sentence's generator */
    rows rows;
    ted_choice *choices;     /* (count * samples): one per row */
    int *tokens;             /* (count * samples): what the choices chose */
    float *log_probs;        /* (count * samples) */
    ted_chooser chooser;
} independent;

static ted_status alloc_state(independent *st, ted_error *err)
{
    int count = st->batch->count;
    size_t n = ted_mul_size(count, st->samples);
    if (n > (size_t)1 << 30)
        return ted_fail(err, TED_ERR_NOMEM, "decode: %d x %d samples are too many", count,
                        st->samples);
    st->room = ted_alloc(n, sizeof(int), "decoding rows", err);
    st->rngs = ted_alloc(count, sizeof(ted_rng), "decoding rows", err);
    st->rows.tokens = ted_alloc(n, sizeof(int), "decoding rows", err);
    st->rows.owner = ted_alloc(n, sizeof(int), "decoding rows", err);
    st->rows.keep = ted_alloc(n, sizeof(int), "decoding rows", err);
    st->choices = ted_alloc(n, sizeof(ted_choice), "decoding rows", err);
    st->tokens = ted_alloc(n, sizeof(int), "decoding rows", err);
    st->log_probs = ted_alloc(n, sizeof(float), "decoding rows", err);
    bool ok = st->room && st->rngs && st->rows.tokens && st->rows.owner && st->rows.keep &&
              st->choices && st->tokens && st->log_probs;
    if (!ok)
        return TED_ERR_NOMEM;
    bool sampling = st->options->strategy == TED_DECODE_SAMPLE;
    return ted_chooser_init(&st->chooser, st->model, sampling, err);
}

static void free_state(independent *st)
{
    free(st->room);
    free(st->rngs);
    free(st->rows.tokens);
    free(st->rows.owner);
    free(st->rows.keep);
    free(st->choices);
    free(st->tokens);
    free(st->log_probs);
    ted_chooser_free(&st->chooser);
}

/* The choice of each of the `active` rows; returns the tokens they draw. */
static int plan_choices(independent *st, int active)
{
    const ted_batch *b = st->batch;
    bool sampling = st->options->strategy == TED_DECODE_SAMPLE;
    int drawn = 0;
    for (int r = 0; r < active; r++) {
        int sample = st->first ? r * st->samples : st->rows.owner[r];
        int sentence = sample / st->samples;
        st->choices[r] = (ted_choice){
            .row = r,
            .draws = st->first ? st->samples : 1,
            .forced = ted_batch_forced(b, sentence, st->out[sample].length),
            .sampling = sampling ? &st->options->sampling : NULL,
            .rng = &st->rngs[sentence],
            .tokens = st->tokens + drawn,
            .log_probs = st->scored ? st->log_probs + drawn : NULL,
        };
        drawn += st->choices[r].draws;
    }
    return drawn;
}

/* Appends row r's chosen tokens to its samples; lists the samples that go
 * on in st->rows (from `*kept` on). */
static ted_status take_tokens(independent *st, const ted_choice *ch, int *kept, ted_error *err)
{
    int eos = ted_model_config(st->model)->eos_id;
    int from = st->first ? ch->row * st->samples : st->rows.owner[ch->row];
    int limit = st->batch->max_lengths[from / st->samples];
    for (int k = 0; k < ch->draws; k++) {
        int sample = from + k, token = ch->tokens[k];
        ted_hypothesis *h = &st->out[sample];
        ted_status s = ted_hypothesis_append(h, &st->room[sample], limit, token,
                                             ch->log_probs ? ch->log_probs[k] : 0.0f, err);
        if (s)
            return s;
        if (token == eos || h->length >= limit)
            continue;
        st->rows.keep[*kept] = ch->row;
        st->rows.owner[*kept] = sample;
        st->rows.tokens[(*kept)++] = token;
    }
    return TED_OK;
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

/* Steps the session until no row goes on, select()ing after every step
 * the rows that go on (unless they are all of them). keep[] and owner[]
 * are written in row order, each entry after the rows it reads. */
static ted_status run_steps(ted_session *s, independent *st, ted_error *err)
{
    for (int active = st->batch->count; active > 0;) {
        const float *logits;
        ted_status status = ted_session_step(s, st->rows.tokens, &logits, err);
        if (status)
            return status;
        plan_choices(st, active);
        ted_choose(&st->chooser, logits, st->choices, active);
        int kept = 0;
        for (int r = 0; r < active && !status; r++)
            status = take_tokens(st, &st->choices[r], &kept, err);
        if (status)
            return status;
        st->first = false;
        if (kept > 0 && !keeps_every_row(st->rows.keep, kept, active) &&
            (status = ted_session_select(s, st->rows.keep, kept, err)))
            return status;
        active = kept;
    }
    return TED_OK;
}

ted_status ted_decode_independent(ted_session *s, const ted_batch *batch,
                                  const ted_decode_options *o, ted_hypothesis *out,
                                  ted_error *err)
{
    independent st = {.model = ted_session_model(s), .batch = batch, .options = o, .first = true,
                      .samples = o->strategy == TED_DECODE_SAMPLE ? o->n_best : 1, .out = out};
    st.scored = !o->tokens_only || st.samples > 1;
    ted_status status = alloc_state(&st, err);
    for (int i = 0; !status && i < batch->count; i++) {
        uint64_t stream = batch->streams ? batch->streams[i] : (uint64_t)i;
        st.rngs[i] = ted_rng_seed(o->sampling.seed, stream);
        st.rows.tokens[i] = ted_model_config(ted_session_model(s))->decoder_start_id;
    }
    if (!status)
        status = run_steps(s, &st, err);
    for (int i = 0; !status && i < batch->count; i++) {
        ted_hypothesis *h = out + (size_t)i * st.samples;
        for (int k = 0; k < st.samples; k++)
            ted_hypothesis_total(&h[k]);
        ted_hypotheses_sort(h, st.samples);
    }
    free_state(&st);
    return status;
}
