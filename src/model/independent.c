/* Greedy decoding and sampling in ted_decode: the batch's sentences as
 * rows that go on alone (model/rows.h, which holds their rules). Every row
 * of the session decodes one sample and never looks at the others, so a
 * step is: feed each row its token, choose each row's next token, drop the
 * rows that ended. Greedy decoding is one row per sentence taking the best
 * allowed token; sampling is n_best rows per sentence, each drawing its
 * token.
 *
 * Sampling is reproducible: sentence i draws from its own generator,
 * seeded by (seed, its stream), and its samples consume it in a fixed
 * order (at the first step sample 0, 1, ..., later the unfinished ones in
 * that order), so what a sentence gets does not depend on the other
 * sentences of its batch. The rows stay in that order: those of a
 * sentence together, its samples in order. */
#include "model/independent.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "model/model.h"
#include "model/rows.h"
#include "model/session.h"

/* Rows of the session: row r decodes sample sample[r] of sentence
 * owner[r] and feeds tokens[r] at the next step. */
typedef struct row_set {
    int *owner;   /* (count * samples) */
    int *sample;  /* (count * samples) */
    int *tokens;  /* (count * samples) */
} row_set;

typedef struct independent {
    const ted_model *model;
    int count;                     /* sentences */
    int samples;                   /* hypotheses per sentence: n_best when sampling, else 1 */
    ted_row_sentence *sentences;   /* (count) */
    int *room;                     /* (count * samples): cells held by each hypothesis */
    row_set now, next;             /* this step's rows, those that go on */
    int *keep;                     /* (count * samples): the row of the step each came from */
    ted_choice *choices;           /* (count * samples): one per row */
    int *tokens;                   /* (count * samples): what the choices chose */
    float *log_probs;              /* (count * samples) */
    ted_chooser chooser;
} independent;

static bool alloc_rows(row_set *r, size_t n, ted_error *err)
{
    r->owner = ted_alloc(n, sizeof(int), "decoding rows", err);
    r->sample = ted_alloc(n, sizeof(int), "decoding rows", err);
    r->tokens = ted_alloc(n, sizeof(int), "decoding rows", err);
    return r->owner && r->sample && r->tokens;
}

static void free_rows(row_set *r)
{
    free(r->owner);
    free(r->sample);
    free(r->tokens);
}

static ted_status alloc_state(independent *st, bool sampling, ted_error *err)
{
    size_t n = ted_mul_size(st->count, st->samples);
    if (n > (size_t)1 << 30)
        return ted_fail(err, TED_ERR_NOMEM, "decode: %d x %d samples are too many", st->count,
                        st->samples);
    st->sentences = ted_alloc(st->count, sizeof *st->sentences, "decoding rows", err);
    st->room = ted_alloc(n, sizeof(int), "decoding rows", err);
    bool rows = alloc_rows(&st->now, n, err) && alloc_rows(&st->next, n, err);
    st->keep = ted_alloc(n, sizeof(int), "decoding rows", err);
    st->choices = ted_alloc(n, sizeof(ted_choice), "decoding rows", err);
    st->tokens = ted_alloc(n, sizeof(int), "decoding rows", err);
    st->log_probs = ted_alloc(n, sizeof(float), "decoding rows", err);
    if (!st->sentences || !st->room || !rows || !st->keep || !st->choices || !st->tokens ||
        !st->log_probs)
        return TED_ERR_NOMEM;
    return ted_chooser_init(&st->chooser, st->model, sampling, err);
}

static void free_state(independent *st)
{
    free(st->sentences);
    free(st->room);
    free_rows(&st->now);
    free_rows(&st->next);
    free(st->keep);
    free(st->choices);
    free(st->tokens);
    free(st->log_probs);
    ted_chooser_free(&st->chooser);
}

/* Sentence i writes its samples to out[i * samples ...] and starts on row
 * i, feeding the decoder's start token. */
static void start_sentences(independent *st, const ted_batch *b, const ted_decode_options *o,
                            ted_hypothesis *out)
{
    int start = ted_model_config(st->model)->decoder_start_id;
    for (int i = 0; i < st->count; i++) {
        size_t first = (size_t)i * st->samples;
        st->sentences[i] = (ted_row_sentence){
            .max_length = b->max_lengths[i],
            .prefix_ids = b->prefix_ids ? b->prefix_ids[i] : NULL,
            .prefix_length = b->prefix_ids ? b->prefix_lengths[i] : 0,
            .source = {b->source_ids[i], b->source_lengths[i]},
            .scored = !o->tokens_only || st->samples > 1,
            .found = out + first,
            .room = st->room + first,
        };
        uint64_t stream = b->streams ? b->streams[i] : (uint64_t)i;
        ted_row_sentence_start(&st->sentences[i], st->model, o, stream);
        st->now.owner[i] = i;
        st->now.sample[i] = 0;
        st->now.tokens[i] = start;
    }
}

/* Plans, makes and takes the choices of the `active` rows over `logits`
 * (session's, spread when a choice reads them); lists the rows that go on
 * in st->next and st->keep, and counts them into *kept. */
static ted_status choose_tokens(ted_session *session, independent *st, const float *logits,
                                int active, int *kept, ted_error *err)
{
    int drawn = 0;
    bool rows = false;
    for (int r = 0; r < active; r++) {
        ted_row_sentence *s = &st->sentences[st->now.owner[r]];
        st->choices[r] = ted_row_plan(s, st->now.sample[r], r, st->tokens + drawn,
                                      st->log_probs + drawn);
        drawn += st->choices[r].draws;
        rows = rows || !ted_choice_in_subset(&st->chooser, &st->choices[r]);
    }
    if (rows)
        ted_session_spread_logits(session);
    ted_choose(&st->chooser, logits, st->choices, active);
    ted_rows_next next = {st->keep, st->next.sample, st->next.tokens};
    for (int r = 0; r < active; r++) {
        int owner = st->now.owner[r], from = *kept;
        ted_status status = ted_row_take(&st->sentences[owner], st->now.sample[r],
                                         &st->choices[r], next, kept, err);
        if (status)
            return status;
        for (int k = from; k < *kept; k++)
            st->next.owner[k] = owner;
    }
    return TED_OK;
}

/* Steps the session until no row goes on, select()ing after every step
 * the rows that go on (unless they are all of them). */
static ted_status run_steps(ted_session *s, independent *st, ted_error *err)
{
    for (int active = st->count; active > 0;) {
        const float *logits;
        ted_status status = ted_session_step_scores(s, st->now.tokens, &logits, err);
        int kept = 0;
        st->chooser.subset = ted_session_step_subset(s);
        if (!status)
            status = choose_tokens(s, st, logits, active, &kept, err);
        if (status)
            return status;
        if (kept > 0 && !ted_rows_keep_all(st->keep, kept, active) &&
            (status = ted_session_select(s, st->keep, kept, err)))
            return status;
        row_set swap = st->now;
        st->now = st->next;
        st->next = swap;
        active = kept;
    }
    return TED_OK;
}

ted_status ted_decode_independent(ted_session *s, const ted_batch *batch,
                                  const ted_decode_options *o, ted_hypothesis *out,
                                  ted_error *err)
{
    independent st = {.model = ted_session_model(s), .count = batch->count,
                      .samples = ted_row_samples(o)};
    ted_status status = alloc_state(&st, o->strategy == TED_DECODE_SAMPLE, err);
    if (!status) {
        start_sentences(&st, batch, o, out);
        status = run_steps(s, &st, err);
    }
    for (int i = 0; !status && i < batch->count; i++)
        ted_row_sentence_finish(&st.sentences[i]);
    free_state(&st);
    return status;
}
