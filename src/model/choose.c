/* The final Softmax's choice (model/choose.h). */
#include "model/choose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "io/config.h"
#include "kernels/kernels.h"
#include "layers/softmax.h"
#include "model/decoding.h"

ted_status ted_chooser_init(ted_chooser *c, const ted_model *m, bool sampling, ted_error *err)
{
    int vocab = ted_model_config(m)->tgt_vocab_size;
    *c = (ted_chooser){.model = m, .tasks = ted_parallel_threads()};
    size_t cells = ted_mul_size(c->tasks, vocab);
    c->log_probs = ted_alloc(cells, sizeof(float), "token choice", err);
    c->allowed = ted_alloc(cells, sizeof(float), "token choice", err);
    bool ok = c->log_probs && c->allowed;
    if (ok && sampling) {
        ok = (c->draw = ted_alloc(c->tasks, sizeof *c->draw, "token choice", err)) != NULL;
        for (int t = 0; ok && t < c->tasks; t++)
            ok = (c->draw[t].ids = ted_alloc(vocab, sizeof(int), "token choice", err)) &&
                 (c->draw[t].weights = ted_alloc(vocab, sizeof(double), "token choice", err));
    }
    if (!ok) {
        ted_chooser_free(c);
        return TED_ERR_NOMEM;
    }
    return TED_OK;
}

void ted_chooser_free(ted_chooser *c)
{
    for (int t = 0; c->draw && t < c->tasks; t++) {
        free(c->draw[t].ids);
        free(c->draw[t].weights);
    }
    free(c->draw);
    free(c->log_probs);
    free(c->allowed);
    *c = (ted_chooser){0};
}

/* The best token of a choice without rules, forced token or sampling,
 * over c->subset's scores of its row alone, with task t's scratch: the
 * scores hold every finite logit of the row, and the ids increase, so the
 * first best is the whole row's; when none is allowed, the row's first
 * id, 0, as ted_argmax takes it of a row of -infinity. */
static void choose_in_subset(const ted_chooser *c, const ted_choice *ch, int t)
{
    const ted_output_subset *sub = c->subset;
    int vocab = ted_model_config(c->model)->tgt_vocab_size, n = sub->count;
    const float *kept = sub->scores + (size_t)ch->row * n;
    float *allowed = c->allowed + (size_t)t * vocab;
    memcpy(allowed, kept, (size_t)n * sizeof(float));
    ted_ban_tokens_subset(c->model, sub->ids, n, allowed);
    int best = ted_argmax(allowed, n);
    bool none = allowed[best] == -INFINITY;
    float max = 0.0f, log_sum = 0.0f, log_prob = -INFINITY;
    if (ch->log_probs)
        ted_log_softmax_terms_at(kept, sub->ids, n, vocab, &max, &log_sum);
    if (none && sub->ids[0] != 0) {
        best = -1;
    } else {
        best = none ? 0 : best;
        log_prob = kept[best] - max - log_sum;
    }
    for (int k = 0; k < ch->draws; k++) {
        ch->tokens[k] = best < 0 ? 0 : sub->ids[best];
        if (ch->log_probs)
            ch->log_probs[k] = log_prob;
    }
}

bool ted_choice_in_subset(const ted_chooser *c, const ted_choice *ch)
{
    return c->subset && c->subset->count > 0 && !ch->rules && !ch->sampling &&
           ch->forced < 0;
}

/* One choice with task t's scratch: the row's scores, then each token. */
static void choose_one(const ted_chooser *c, const float *logits, const ted_choice *ch, int t)
{
    if (ted_choice_in_subset(c, ch)) {
        choose_in_subset(c, ch, t);
        return;
    }
    int vocab = ted_model_config(c->model)->tgt_vocab_size;
    float *log_probs = ch->log_probs ? c->log_probs + (size_t)t * vocab : NULL;
    float *allowed = c->allowed + (size_t)t * vocab;
    ted_next_token_scores(c->model, logits + (size_t)ch->row * vocab, log_probs, allowed);
    if (ch->rules && ch->forced < 0)
        ted_apply_logits_rules_source(c->model, ch->rules, &ch->source, ch->history,
                                      ch->history_length, allowed);
    for (int k = 0; k < ch->draws; k++) {
        int token = ch->forced >= 0 ? ch->forced
                    : ch->sampling
                        ? ted_sample_token(allowed, vocab, ch->sampling, ch->rng, &c->draw[t])
                        : ted_argmax(allowed, vocab);
        ch->tokens[k] = token;
        if (log_probs)
            ch->log_probs[k] = ch->forced >= 0 ? TED_FORCED_LOG_PROB : log_probs[token];
    }
}

typedef struct choice_job {
    const ted_chooser *chooser;
    const float *logits;
    const ted_choice *choices;
    const int *starts;  /* (tasks + 1): task t makes choices [starts[t], starts[t + 1]) */
} choice_job;

static void choose_task(void *context, int t)
{
    const choice_job *j = context;
    for (int i = j->starts[t]; i < j->starts[t + 1]; i++)
        choose_one(j->chooser, j->logits, &j->choices[i], t);
}

/* Cuts the choices into `tasks` runs of about equal length, never
 * between two choices that share a generator. */
static void cut_tasks(const ted_choice *choices, int count, int tasks, int *starts)
{
    starts[0] = 0;
    for (int t = 1; t < tasks; t++) {
        int at = (int)((long)count * t / tasks);
        if (at < starts[t - 1])
            at = starts[t - 1];
        while (at > 0 && at < count && choices[at].rng &&
               choices[at].rng == choices[at - 1].rng)
            at++;
        starts[t] = at;
    }
    starts[tasks] = count;
}

#define MAX_TASKS 256

void ted_choose(ted_chooser *c, const float *logits, const ted_choice *choices, int count)
{
    int tasks = count < c->tasks ? count : c->tasks;
    if (tasks > MAX_TASKS)
        tasks = MAX_TASKS;
    if (tasks < 1)
        return;
    int starts[MAX_TASKS + 1];
    cut_tasks(choices, count, tasks, starts);
    choice_job job = {c, logits, choices, starts};
    ted_parallel_for(tasks, choose_task, &job);
}

void ted_hypotheses_sort(ted_hypothesis *h, int count)
{
    for (int k = 1; k < count; k++)
        for (int at = k; at > 0 && h[at].score > h[at - 1].score; at--) {
            ted_hypothesis swap = h[at];
            h[at] = h[at - 1];
            h[at - 1] = swap;
        }
}
