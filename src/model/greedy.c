/* Greedy decoding: at every step each unfinished sentence takes its most
 * likely next token. A loop over ted_session_step(); finished sentences
 * leave the batch so later steps do not compute them. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "layers/softmax.h"
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

static void free_outputs(int **outputs, int count)
{
    for (int i = 0; i < count; i++) {
        free(outputs[i]);
        outputs[i] = NULL;
    }
}

typedef struct greedy_rows {
    int *tokens;    /* (batch): the token each row feeds next */
    int *sentence;  /* (batch): which sentence a row decodes */
    int *keep;      /* (batch): rows that go on after this step */
} greedy_rows;

/* Appends each row's argmax to its sentence; returns how many rows go on,
 * compacting tokens/sentence and listing the survivors in keep. */
static int take_best_tokens(const ted_model *m, const float *logits, greedy_rows *r, int active,
                            const int *max_lengths, int **outputs, int *lengths)
{
    int vocab = m->config.tgt_vocab_size, eos = m->config.eos_id;
    int kept = 0;
    for (int row = 0; row < active; row++) {
        int i = r->sentence[row];
        int next = ted_argmax(logits + (size_t)row * vocab, vocab);
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

ted_status ted_greedy_decode(ted_session *s, const int *const *source_ids,
                             const int *source_lengths, const int *max_lengths, int batch,
                             int **outputs, int *output_lengths, ted_error *err)
{
    const ted_model *m = s->model;
    int max_steps = 0;
    for (int i = 0; i < batch; i++) {
        outputs[i] = NULL;
        output_lengths[i] = 0;
        if (max_lengths[i] < 1)
            return ted_fail(err, TED_ERR_ARGUMENT, "greedy: max length of sentence %d is %d",
                            i, max_lengths[i]);
        if (max_lengths[i] > max_steps)
            max_steps = max_lengths[i];
    }
    ted_status status = ted_session_encode(s, source_ids, source_lengths, batch, max_steps, err);
    if (status)
        return status;

    greedy_rows r = {
        .tokens = ted_alloc(batch, sizeof(int), "greedy rows", err),
        .sentence = ted_alloc(batch, sizeof(int), "greedy rows", err),
        .keep = ted_alloc(batch, sizeof(int), "greedy rows", err),
    };
    for (int i = 0; i < batch && r.tokens && r.sentence && r.keep; i++) {
        r.tokens[i] = m->config.bos_id;
        r.sentence[i] = i;
        if (!(outputs[i] = ted_alloc(max_lengths[i], sizeof(int), "greedy output", err)))
            break;
    }
    status = r.tokens && r.sentence && r.keep && outputs[batch - 1] ? TED_OK : TED_ERR_NOMEM;

    for (int active = batch; status == TED_OK && active > 0;) {
        const float *logits;
        if ((status = ted_session_step(s, r.tokens, &logits, err)))
            break;
        int kept = take_best_tokens(m, logits, &r, active, max_lengths, outputs, output_lengths);
        if (kept > 0 && kept < active)
            status = ted_session_select(s, r.keep, kept, err);
        active = kept;
    }
    free(r.tokens);
    free(r.sentence);
    free(r.keep);
    if (status)
        free_outputs(outputs, batch);
    return status;
}
