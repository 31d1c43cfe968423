/* Rows that decode on their own (model/rows.h), and their public steps
 * (ted/rows.h). */
#include "model/rows.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/config.h"
#include "model/decoding.h"

int ted_row_samples(const ted_decode_options *o)
{
    if (!o)
        return 0;
    return o->strategy == TED_DECODE_SAMPLE ? o->n_best : 1;
}

void ted_row_sentence_start(ted_row_sentence *s, const ted_model *m,
                            const ted_decode_options *o, uint64_t stream)
{
    s->samples = ted_row_samples(o);
    s->eos = ted_model_config(m)->eos_id;
    s->first = true;
    s->sampling = o->strategy == TED_DECODE_SAMPLE ? &o->sampling : NULL;
    s->rules = ted_logits_rules_on(&o->rules) ? &o->rules : NULL;
    s->rng = ted_rng_seed(o->sampling.seed, stream);
}

void ted_row_sentence_finish(ted_row_sentence *s)
{
    for (int k = 0; k < s->samples; k++)
        ted_hypothesis_total(&s->found[k]);
    ted_hypotheses_sort(s->found, s->samples);
}

ted_choice ted_row_plan(ted_row_sentence *s, int sample, int row, int *tokens,
                        float *log_probs)
{
    int at = s->first ? 0 : s->found[sample].length;
    return (ted_choice){
        .row = row,
        .draws = s->first ? s->samples : 1,
        .forced = ted_prefix_forced(s->prefix_ids, s->prefix_length, at),
        .sampling = s->sampling,
        .rng = &s->rng,
        .rules = s->rules,
        .history = s->found[sample].ids,
        .history_length = at,
        .source = s->source,
        .tokens = tokens,
        .log_probs = s->scored ? log_probs : NULL,
    };
}

ted_status ted_row_take(ted_row_sentence *s, int sample, const ted_choice *ch,
                        ted_rows_next next, int *kept, ted_error *err)
{
    int from = s->first ? 0 : sample;
    s->first = false;
    for (int k = 0; k < ch->draws; k++) {
        int j = from + k, token = ch->tokens[k];
        ted_hypothesis *h = &s->found[j];
        float log_prob = ch->log_probs ? ch->log_probs[k] : 0.0f;
        ted_status status = ted_hypothesis_append(h, &s->room[j], s->max_length, token,
                                                  log_prob, err);
        if (status)
            return status;
        if (token == s->eos || h->length >= s->max_length)
            continue;
        next.keep[*kept] = ch->row;
        next.sample[*kept] = j;
        next.tokens[(*kept)++] = token;
    }
    return TED_OK;
}

bool ted_rows_keep_all(const int *keep, int kept, int rows)
{
    if (kept != rows)
        return false;
    for (int r = 0; r < kept; r++)
        if (keep[r] != r)
            return false;
    return true;
}

/* ---- sentences of ted/rows.h ------------------------------------------------ */

static ted_status check_spec(const ted_row_sentence_spec *spec, ted_error *err)
{
    if (spec->max_length < 1)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_row_sentence_new: max_length is %d, not 1 or more", spec->max_length);
    if (spec->source_length < 0 || (spec->source_length > 0 && !spec->source_ids))
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_row_sentence_new: source_ids is NULL or source_length %d < 0",
                        spec->source_length);
    if (spec->prefix_length < 0 || (spec->prefix_length > 0 && !spec->prefix_ids))
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_row_sentence_new: prefix_ids is NULL or prefix_length %d < 0",
                        spec->prefix_length);
    return TED_OK;
}

ted_status ted_row_sentence_new(const ted_model *m, const ted_decode_options *o,
                                const ted_row_sentence_spec *spec, ted_row_sentence **sentence,
                                ted_error *err)
{
    TED_REQUIRE(sentence, err);
    *sentence = NULL;
    TED_REQUIRE(m, err);
    TED_REQUIRE(o, err);
    TED_REQUIRE(spec, err);
    ted_status status = check_spec(spec, err);
    if (status)
        return status;
    if (ted_row_samples(o) < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_row_sentence_new: n_best is %d, not 1 or more",
                        o->n_best);
    ted_row_sentence *s = ted_alloc(1, sizeof *s, "row sentence", err);
    if (!s)
        return TED_ERR_NOMEM;
    *s = (ted_row_sentence){
        .max_length = spec->max_length,
        .prefix_ids = spec->prefix_ids,
        .prefix_length = spec->prefix_length,
        .source = {spec->source_ids, spec->source_length},
        .scored = spec->scored,
    };
    ted_row_sentence_start(s, m, o, spec->stream);
    s->found = ted_alloc(s->samples, sizeof *s->found, "row sentence", err);
    s->room = ted_alloc(s->samples, sizeof *s->room, "row sentence", err);
    if (!s->found || !s->room) {
        ted_row_sentence_free(s);
        return TED_ERR_NOMEM;
    }
    *sentence = s;
    return TED_OK;
}

int ted_row_sentence_samples(const ted_row_sentence *s)
{
    return s ? s->samples : 0;
}

void ted_row_sentence_stop(ted_row_sentence *s)
{
    if (s)
        s->stopped = true;
}

ted_status ted_row_sentence_result(ted_row_sentence *s, ted_hypothesis *out, ted_error *err)
{
    TED_REQUIRE(s, err);
    TED_REQUIRE(out, err);
    if (s->failure.status) {
        if (err)
            *err = s->failure;
        return s->failure.status;
    }
    if (s->stopped)
        return ted_fail(err, TED_ERR_CANCELLED, "ted_row_sentence_result: the sentence was stopped");
    ted_row_sentence_finish(s);
    for (int k = 0; k < s->samples; k++) {
        out[k] = s->found[k];
        s->found[k] = (ted_hypothesis){0};
    }
    return TED_OK;
}

void ted_row_sentence_free(ted_row_sentence *s)
{
    if (!s)
        return;
    if (s->found)
        ted_hypotheses_free(s->found, s->samples);
    free(s->found);
    free(s->room);
    free(s);
}

/* ---- steps of ted/rows.h ---------------------------------------------------- */

/* A row by its sentence and sample: the order in which rows choose. */
typedef struct row_key {
    uintptr_t sentence;
    int sample;
    int row;
} row_key;

struct ted_rows {
    const ted_model *model;
    int capacity;
    row_key *order;       /* (capacity): the step's rows in the order they choose */
    ted_choice *choices;  /* (capacity): the choices made, in that order */
    int *tokens;          /* (capacity): what they chose */
    int *samples;         /* (capacity): the sample of each row that goes on */
    float *log_probs;     /* (capacity) */
    ted_chooser chooser;
};

ted_status ted_rows_new(const ted_model *m, int capacity, ted_rows **rows, ted_error *err)
{
    TED_REQUIRE(rows, err);
    *rows = NULL;
    TED_REQUIRE(m, err);
    if (capacity < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_rows_new: capacity is %d, not 1 or more",
                        capacity);
    ted_rows *r = ted_alloc(1, sizeof *r, "rows", err);
    if (!r)
        return TED_ERR_NOMEM;
    *r = (ted_rows){.model = m, .capacity = capacity};
    r->order = ted_alloc(capacity, sizeof *r->order, "rows", err);
    r->choices = ted_alloc(capacity, sizeof *r->choices, "rows", err);
    r->tokens = ted_alloc(capacity, sizeof *r->tokens, "rows", err);
    r->log_probs = ted_alloc(capacity, sizeof *r->log_probs, "rows", err);
    r->samples = ted_alloc(capacity, sizeof *r->samples, "rows", err);
    ted_status status = r->order && r->choices && r->tokens && r->log_probs && r->samples
                            ? ted_chooser_init(&r->chooser, m, true, err)
                            : TED_ERR_NOMEM;
    if (status) {
        ted_rows_free(r);
        return status;
    }
    *rows = r;
    return TED_OK;
}

void ted_rows_free(ted_rows *r)
{
    if (!r)
        return;
    free(r->order);
    free(r->choices);
    free(r->tokens);
    free(r->log_probs);
    free(r->samples);
    ted_chooser_free(&r->chooser);
    free(r);
}

/* The tokens a row draws: a sentence's every sample at its first step. */
static int draws(const ted_row_sentence *s)
{
    return s->first ? s->samples : 1;
}

/* Whether the sentence's rows choose at this step. */
static bool choosing(const ted_row_sentence *s)
{
    return !s->stopped && !s->failure.status;
}

static ted_status check_step(const ted_rows *r, const ted_rows_step *step, ted_error *err)
{
    TED_REQUIRE(step->rows, err);
    TED_REQUIRE(step->keep, err);
    TED_REQUIRE(step->next, err);
    TED_REQUIRE(step->tokens, err);
    TED_REQUIRE(step->token, err);
    TED_REQUIRE(step->ended, err);
    if (step->count > r->capacity)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_rows_choose: count %d is above the capacity %d",
                        step->count, r->capacity);
    long drawn = 0;
    for (int k = 0; k < step->count; k++) {
        const ted_row_sentence *s = step->rows[k].sentence;
        int sample = step->rows[k].sample;
        if (!s)
            return ted_fail(err, TED_ERR_ARGUMENT, "ted_rows_choose: rows[%d].sentence is NULL", k);
        if (sample < 0 || sample >= s->samples || (s->first && sample != 0))
            return ted_fail(err, TED_ERR_ARGUMENT,
                            "ted_rows_choose: rows[%d].sample %d is not a sample of its sentence",
                            k, sample);
        drawn += draws(s);
    }
    if (drawn > r->capacity)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "ted_rows_choose: the rows draw %ld tokens, above the capacity %d", drawn,
                        r->capacity);
    return TED_OK;
}

static int by_sentence(const void *a, const void *b)
{
    const row_key *x = a, *y = b;
    if (x->sentence != y->sentence)
        return x->sentence < y->sentence ? -1 : 1;
    return (x->sample > y->sample) - (x->sample < y->sample);
}

/* r->order: the rows of each sentence together, its samples in order;
 * r->choices: the choice of each row that chooses, in that order. Returns
 * how many choose. */
static int plan(ted_rows *r, const ted_rows_step *step)
{
    for (int k = 0; k < step->count; k++)
        r->order[k] = (row_key){(uintptr_t)step->rows[k].sentence, step->rows[k].sample, k};
    qsort(r->order, step->count, sizeof *r->order, by_sentence);
    int n = 0, drawn = 0;
    for (int k = 0; k < step->count; k++) {
        const ted_row *row = &step->rows[r->order[k].row];
        if (!choosing(row->sentence))
            continue;
        r->choices[n] = ted_row_plan(row->sentence, row->sample, r->order[k].row,
                                     r->tokens + drawn, r->log_probs + drawn);
        drawn += r->choices[n++].draws;
    }
    return n;
}

/* Takes a choice's tokens into its sentence's samples (ted_row_take) and
 * lists those that go on in `step`. A sentence whose hypothesis cannot
 * grow fails: none of this choice's samples goes on. */
static void take(const ted_rows *r, ted_row_sentence *s, int sample, const ted_choice *ch,
                 ted_rows_step *step)
{
    int from = step->kept, row = ch->row;
    ted_rows_next next = {step->keep, r->samples, step->tokens};
    if (ted_row_take(s, sample, ch, next, &step->kept, &s->failure)) {
        step->kept = from;
        step->ended[row] = ch->draws;
        return;
    }
    for (int k = from; k < step->kept; k++)
        step->next[k] = (ted_row){s, r->samples[k]};
    step->ended[row] = ch->draws - (step->kept - from);
    step->token[row] = ch->tokens[0] != s->eos ? ch->tokens[0] : -1;
}

ted_status ted_rows_choose(ted_rows *r, const float *logits, ted_rows_step *step,
                           ted_error *err)
{
    TED_REQUIRE(r, err);
    TED_REQUIRE(step, err);
    step->kept = step->drawn = 0;
    if (step->count <= 0)
        return TED_OK;
    TED_REQUIRE(logits, err);
    ted_status status = check_step(r, step, err);
    if (status)
        return status;
    int n = plan(r, step);
    ted_choose(&r->chooser, logits, r->choices, n);
    for (int k = 0, j = 0; k < step->count; k++) {
        int row = r->order[k].row;
        ted_row_sentence *s = step->rows[row].sentence;
        step->token[row] = -1;
        if (j < n && r->choices[j].row == row) {
            step->drawn += r->choices[j].draws;
            if (choosing(s)) {
                take(r, s, step->rows[row].sample, &r->choices[j++], step);
                continue;
            }
            j++;
        }
        step->ended[row] = draws(s);
        s->first = false;
    }
    return TED_OK;
}
