/* Greedy decoding: at every step each unfinished sentence takes its most
 * likely next token that is not banned. A loop over ted_session_step();
 * finished sentences leave the batch so later steps do not compute them. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "kernels/kernels.h"
#include "model/decoding.h"
#include "model/session.h"

typedef struct greedy_state {
    const ted_model *model;
    const int *max_lengths;  /* (batch) */
    int **outputs;           /* (batch): each sentence's ids */
    float **log_probs;       /* (batch): their log-probs; NULL: not wanted */
    int *lengths;            /* (batch) */
    ted_rows rows;           /* owner: the sentence */
    /* The rows' choices are made in `tasks` parallel tasks, task t with
     * buffers t of: */
    int tasks;
    float *allowed;          /* (tasks, vocab): a row's logits, banned tokens at -infinity */
    float *scratch;          /* (tasks, vocab): its log-softmax, when log-probs are wanted */
    int *best;               /* (batch): each row's choice */
    float *best_log_prob;    /* (batch): its log-probability, when wanted */
} greedy_state;

static void free_outputs(greedy_state *st, int count)
{
    for (int i = 0; i < count; i++) {
        free(st->outputs[i]);
        st->outputs[i] = NULL;
        if (st->log_probs) {
            free(st->log_probs[i]);
            st->log_probs[i] = NULL;
        }
    }
}

static void free_rows(greedy_state *st)
{
    free(st->rows.tokens);
    free(st->rows.owner);
    free(st->rows.keep);
    free(st->allowed);
    free(st->scratch);
    free(st->best);
    free(st->best_log_prob);
}

typedef struct choice_job {
    greedy_state *st;
    const float *logits;  /* (active, vocab) */
    int active, rows_per_task;
} choice_job;

/* Task t: the best allowed token of rows [t * rows_per_task, ...), with
 * buffers t. */
static void choose_rows(void *context, int task)
{
    const choice_job *j = context;
    greedy_state *st = j->st;
    int vocab = st->model->config.tgt_vocab_size;
    float *allowed = st->allowed + (size_t)task * vocab;
    float *log_probs = st->scratch ? st->scratch + (size_t)task * vocab : NULL;
    int first = task * j->rows_per_task;
    int last = first + j->rows_per_task < j->active ? first + j->rows_per_task : j->active;
    for (int row = first; row < last; row++) {
        ted_next_token_scores(st->model, j->logits + (size_t)row * vocab, log_probs, allowed);
        st->best[row] = ted_argmax(allowed, vocab);
        if (log_probs)
            st->best_log_prob[row] = log_probs[st->best[row]];
    }
}

/* Appends each row's best allowed token to its sentence. The choices, a
 * scan of the whole vocabulary per row, are spread over the thread pool. */
static int take_best_tokens(void *state, const float *logits, int active)
{
    greedy_state *st = state;
    const ted_config *c = &st->model->config;
    int tasks = active < st->tasks ? active : st->tasks;
    choice_job job = {st, logits, active, (active + tasks - 1) / tasks};
    ted_parallel_for((active + job.rows_per_task - 1) / job.rows_per_task, choose_rows, &job);
    int kept = 0;
    for (int row = 0; row < active; row++) {
        int i = st->rows.owner[row], next = st->best[row];
        if (st->log_probs)
            st->log_probs[i][st->lengths[i]] = st->best_log_prob[row];
        st->outputs[i][st->lengths[i]++] = next;
        bool ended = next == c->eos_id || st->lengths[i] >= st->max_lengths[i];
        kept = ted_rows_keep(&st->rows, kept, row, i, next, ended);
    }
    return kept;
}

static ted_status alloc_rows(greedy_state *st, int batch, ted_error *err)
{
    int vocab = st->model->config.tgt_vocab_size;
    st->rows.tokens = ted_alloc(batch, sizeof(int), "greedy rows", err);
    st->rows.owner = ted_alloc(batch, sizeof(int), "greedy rows", err);
    st->rows.keep = ted_alloc(batch, sizeof(int), "greedy rows", err);
    st->tasks = ted_parallel_threads();
    size_t buffer = ted_mul_size(st->tasks, vocab);
    st->allowed = ted_alloc(buffer, sizeof(float), "greedy rows", err);
    st->best = ted_alloc(batch, sizeof(int), "greedy rows", err);
    if (st->log_probs) {
        st->scratch = ted_alloc(buffer, sizeof(float), "greedy rows", err);
        st->best_log_prob = ted_alloc(batch, sizeof(float), "greedy rows", err);
    }
    bool ok = st->rows.tokens && st->rows.owner && st->rows.keep && st->allowed && st->best &&
              (!st->log_probs || (st->scratch && st->best_log_prob));
    for (int i = 0; i < batch && ok; i++) {
        st->rows.tokens[i] = st->model->config.bos_id;
        st->rows.owner[i] = i;
        int n = st->max_lengths[i];
        ok = (st->outputs[i] = ted_alloc(n, sizeof(int), "greedy output", err)) &&
             (!st->log_probs ||
              (st->log_probs[i] = ted_alloc(n, sizeof(float), "greedy output", err)));
    }
    return ok ? TED_OK : TED_ERR_NOMEM;
}

/* Greedy decoding; log_probs (NULL: not wanted) receives each sentence's
 * per-token log-probabilities. */
static ted_status greedy(ted_session *s, const int *const *source_ids, const int *source_lengths,
                         const int *max_lengths, int batch, int **outputs, float **log_probs,
                         int *output_lengths, ted_error *err)
{
    greedy_state st = {.model = s->model, .max_lengths = max_lengths, .outputs = outputs,
                       .log_probs = log_probs, .lengths = output_lengths};
    for (int i = 0; i < batch; i++) {
        outputs[i] = NULL;
        if (log_probs)
            log_probs[i] = NULL;
        output_lengths[i] = 0;
    }
    int max_steps;
    ted_status status = ted_check_max_lengths(max_lengths, batch, &max_steps, "greedy", err);
    if (!status)
        status = ted_session_encode(s, source_ids, source_lengths, batch, max_steps, err);
    if (status)
        return status;
    status = alloc_rows(&st, batch, err);
    if (!status)
        status = ted_decode_rows(s, &st.rows, batch, take_best_tokens, &st, err);
    free_rows(&st);
    if (status)
        free_outputs(&st, batch);
    return status;
}

ted_status ted_greedy_decode(ted_session *s, const int *const *source_ids,
                             const int *source_lengths, const int *max_lengths, int batch,
                             int **outputs, int *output_lengths, ted_error *err)
{
    return greedy(s, source_ids, source_lengths, max_lengths, batch, outputs, NULL,
                  output_lengths, err);
}

ted_status ted_greedy_search(ted_session *s, const int *const *source_ids,
                             const int *source_lengths, const int *max_lengths, int batch,
                             ted_hypothesis *hypotheses, ted_error *err)
{
    if (batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "greedy: empty batch");
    for (int i = 0; i < batch; i++)
        hypotheses[i] = (ted_hypothesis){0};
    int **ids = ted_alloc(batch, sizeof *ids, "greedy output", err);
    float **log_probs = ted_alloc(batch, sizeof *log_probs, "greedy output", err);
    int *lengths = ted_alloc(batch, sizeof *lengths, "greedy output", err);
    ted_status status = ids && log_probs && lengths ? TED_OK : TED_ERR_NOMEM;
    if (!status)
        status = greedy(s, source_ids, source_lengths, max_lengths, batch, ids, log_probs,
                        lengths, err);
    for (int i = 0; !status && i < batch; i++) {
        ted_hypothesis *h = &hypotheses[i];
        *h = (ted_hypothesis){.ids = ids[i], .log_probs = log_probs[i], .length = lengths[i]};
        for (int t = 0; t < h->length; t++)
            h->log_prob += h->log_probs[t];
        h->score = h->log_prob;
    }
    free(ids);
    free(log_probs);
    free(lengths);
    return status;
}
