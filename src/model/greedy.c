/* Greedy decoding: at every step each unfinished sentence takes its most
 * likely next token. A loop over ted_session_step(); finished sentences
 * leave the batch so later steps do not compute them. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "layers/softmax.h"
#include "model/decoding.h"
#include "model/session.h"

int ted_max_target_length(const ted_model *m, int source_tokens, int max_length)
{
    const ted_config *c = &m->config;
    int limit = c->max_positions;
    if (max_length > 0) {
        if (max_length < limit)
            limit = max_length;
        return limit;
    }
    if (c->max_length > 0 && c->max_length < limit)
        limit = c->max_length;
    if (c->max_length_offset > 0 && source_tokens + c->max_length_offset < limit)
        limit = source_tokens + c->max_length_offset;
    return limit;
}

static void free_outputs(int **outputs, float **log_probs, int count)
{
    for (int i = 0; i < count; i++) {
        free(outputs[i]);
        outputs[i] = NULL;
        if (log_probs) {
            free(log_probs[i]);
            log_probs[i] = NULL;
        }
    }
}

typedef struct greedy_rows {
    int *tokens;    /* (batch): the token each row feeds next */
    int *sentence;  /* (batch): which sentence a row decodes */
    int *keep;      /* (batch): rows that go on after this step */
    float *scratch; /* (vocab): a row's log-softmax, when log-probs are wanted */
} greedy_rows;

/* Appends each row's argmax to its sentence; returns how many rows go on,
 * compacting tokens/sentence and listing the survivors in keep. */
static int take_best_tokens(const ted_model *m, const float *logits, greedy_rows *r, int active,
                            const int *max_lengths, int **outputs, float **log_probs,
                            int *lengths)
{
    int vocab = m->config.tgt_vocab_size, eos = m->config.eos_id;
    int kept = 0;
    for (int row = 0; row < active; row++) {
        int i = r->sentence[row];
        const float *row_logits = logits + (size_t)row * vocab;
        int next = ted_argmax(row_logits, vocab);
        if (log_probs) {
            memcpy(r->scratch, row_logits, sizeof(float) * vocab);
            ted_log_softmax(r->scratch, vocab);
            log_probs[i][lengths[i]] = r->scratch[next];
        }
        outputs[i][lengths[i]++] = next;
        if (next == eos || lengths[i] >= max_lengths[i])
            continue;
        r->keep[kept] = row;
        r->sentence[kept] = i;
        r->tokens[kept] = next;
        kept++;
    }
    return kept;
}

/* Greedy decoding; log_probs (NULL: not wanted) receives each sentence's
 * per-token log-probabilities. */
static ted_status greedy(ted_session *s, const int *const *source_ids, const int *source_lengths,
                         const int *max_lengths, int batch, int **outputs, float **log_probs,
                         int *output_lengths, ted_error *err)
{
    const ted_model *m = s->model;
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

    greedy_rows r = {
        .tokens = ted_alloc(batch, sizeof(int), "greedy rows", err),
        .sentence = ted_alloc(batch, sizeof(int), "greedy rows", err),
        .keep = ted_alloc(batch, sizeof(int), "greedy rows", err),
        .scratch = log_probs ? ted_alloc(m->config.tgt_vocab_size, sizeof(float), "greedy rows",
                                         err)
                             : NULL,
    };
    bool ok = r.tokens && r.sentence && r.keep && (r.scratch || !log_probs);
    for (int i = 0; i < batch && ok; i++) {
        r.tokens[i] = m->config.bos_id;
        r.sentence[i] = i;
        ok = (outputs[i] = ted_alloc(max_lengths[i], sizeof(int), "greedy output", err)) &&
             (!log_probs ||
              (log_probs[i] = ted_alloc(max_lengths[i], sizeof(float), "greedy output", err)));
    }
    status = ok ? TED_OK : TED_ERR_NOMEM;

    for (int active = batch; status == TED_OK && active > 0;) {
        const float *logits;
        if ((status = ted_session_step(s, r.tokens, &logits, err)))
            break;
        int kept = take_best_tokens(m, logits, &r, active, max_lengths, outputs, log_probs,
                                    output_lengths);
        if (kept > 0 && kept < active)
            status = ted_session_select(s, r.keep, kept, err);
        active = kept;
    }
    free(r.tokens);
    free(r.sentence);
    free(r.keep);
    free(r.scratch);
    if (status)
        free_outputs(outputs, log_probs, batch);
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
