/* A batch's vocabulary shortlist (model/session.h): the union of the
 * shortlisted targets of the batch's source tokens, the shortlist's
 * frequent targets, EOS, UNK and the model's target-language codes (with
 * a Marian binary shortlist, io/shortlist_bin.h: the source tokens
 * themselves when both sides share a vocabulary, and padding to a
 * multiple of 8), and the final Linear's rows for them, gathered once per
 * batch. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "model/session.h"

static void mark(ted_session *s, int id)
{
    if (!s->subset_marks[id]) {
        s->subset_marks[id] = 1;
        s->subset_count++;
    }
}

/* Marks the ids not taken from list->pad_from up until the count is a
 * multiple of list->pad_multiple (Marian's binary shortlists: 8). */
static void pad_marks(ted_session *s, const ted_shortlist *list)
{
    int vocab = s->model->config.tgt_vocab_size;
    if (list->pad_multiple <= 1)
        return;
    for (int v = list->pad_from; v < vocab && s->subset_count % list->pad_multiple; v++)
        mark(s, v);
}

/* Marks every target the batch's rows may take. */
static void mark_batch(ted_session *s)
{
    const ted_model *m = s->model;
    const ted_shortlist *list = &m->shortlist;
    memset(s->subset_marks, 0, (size_t)m->config.tgt_vocab_size);
    s->subset_count = 0;
    mark(s, m->config.eos_id);
    mark(s, m->config.unk_id);
    for (int i = 0; i < list->frequent_count; i++)
        mark(s, list->frequent[i]);
    const ted_language_side *codes = &m->languages[TED_SIDE_TARGET];
    for (int i = 0; i < codes->count; i++)
        if (codes->ids[i] >= 0)
            mark(s, codes->ids[i]);
    for (int b = 0; b < s->batch; b++) {
        const int *ids = s->source_ids + (size_t)b * s->source_len;
        for (int t = 0; t < s->source_lengths[b]; t++) {
            for (int k = list->offsets[ids[t]]; k < list->offsets[ids[t] + 1]; k++)
                mark(s, list->targets[k]);
            if (list->add_sources && ids[t] < m->config.tgt_vocab_size)
                mark(s, ids[t]);
        }
    }
    pad_marks(s, list);
}

/* The session's marks and ids of the whole target vocabulary. */
static ted_status allocate(ted_session *s, ted_error *err)
{
    const ted_config *c = &s->model->config;
    if (s->subset_marks)
        return TED_OK;
    s->subset_marks = ted_alloc((size_t)c->tgt_vocab_size, 1, "shortlist", err);
    s->subset_ids = ted_alloc((size_t)c->tgt_vocab_size, sizeof(int), "shortlist", err);
    return s->subset_marks && s->subset_ids ? TED_OK : TED_ERR_NOMEM;
}

/* Room for the gathered rows of `count` targets, growing by half again
 * when it grows. */
static ted_status room_for_rows(ted_session *s, int count, ted_error *err)
{
    const ted_config *c = &s->model->config;
    const ted_output_weights *out = &s->model->weights.generator;
    size_t bytes = ted_output_gather_bytes(out, count, c->d_model);
    if (bytes <= s->subset_storage_bytes)
        return TED_OK;
    int more = count + count / 2 < c->tgt_vocab_size ? count + count / 2 : c->tgt_vocab_size;
    bytes = (ted_output_gather_bytes(out, more, c->d_model) + 63) / 64 * 64;
    free(s->subset_storage);
    s->subset_storage_bytes = 0;
    s->subset_storage = aligned_alloc(64, bytes);
    if (!s->subset_storage)
        return ted_fail(err, TED_ERR_NOMEM, "shortlist: out of memory for %d target rows",
                        more);
    s->subset_storage_bytes = bytes;
    return TED_OK;
}

/* The rows of the marked ids, into the subset. */
static ted_status gather(ted_session *s, ted_error *err)
{
    const ted_config *c = &s->model->config;
    s->subset_active = false;
    ted_status status = room_for_rows(s, s->subset_count, err);
    if (status)
        return status;
    int n = 0;
    for (int v = 0; v < c->tgt_vocab_size; v++)
        if (s->subset_marks[v])
            s->subset_ids[n++] = v;
    s->subset.ids = s->subset_ids;
    s->subset.count = n;
    ted_output_gather(&s->subset, &s->model->weights.generator, c->d_model, s->subset_storage);
    s->subset_active = true;
    return TED_OK;
}

ted_status ted_session_restrict(ted_session *s, const ted_batch *prefixes, ted_error *err)
{
    if (!s->model->has_shortlist)
        return TED_OK;
    if (prefixes) {
        if (!s->subset_active || !prefixes->prefix_ids)
            return TED_OK;
        int before = s->subset_count;
        for (int i = 0; i < prefixes->count; i++)
            for (int t = 0; t < prefixes->prefix_lengths[i]; t++)
                mark(s, prefixes->prefix_ids[i][t]);
        return s->subset_count != before ? gather(s, err) : TED_OK;
    }
    s->subset_active = false;
    ted_status status = allocate(s, err);
    if (status)
        return status;
    mark_batch(s);
    return gather(s, err);
}

ted_status ted_session_subset_scratch(ted_session *s, ted_error *err)
{
    size_t need = ted_mul_size((size_t)s->batch, (size_t)s->subset.count);
    if (!s->subset_active || need <= s->subset_scores_room)
        return TED_OK;
    float *scores = realloc(s->subset.scores, need * sizeof(float));
    if (!scores)
        return ted_fail(err, TED_ERR_NOMEM, "shortlist: out of memory for %zu logits", need);
    s->subset.scores = scores;
    s->subset_scores_room = need;
    return TED_OK;
}

const ted_output_subset *ted_session_step_subset(const ted_session *s)
{
    return s->decoder.subset;
}

void ted_session_free_subset(ted_session *s)
{
    free(s->subset_marks);
    free(s->subset_ids);
    free(s->subset_storage);
    free(s->subset.scores);
}
