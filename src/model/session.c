/* A decoding session (model/session.h): encode a batch once, then step()
 * one token at a time. */
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "model/session.h"
#include "model/session_hooks.h"

ted_status ted_session_new(const ted_model *model, ted_session **session, ted_error *err)
{
    if (!model || !session)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_session_new: NULL argument");
    *session = NULL;
    ted_session *s = ted_alloc(1, sizeof *s, "session", err);
    if (!s)
        return TED_ERR_NOMEM;
    s->model = model;
    s->decoder.caches = ted_alloc(model->config.decoder_layers, sizeof *s->decoder.caches,
                                  "session caches", err);
    int buffers = ted_carried_capacity(&model->config);
    s->old_carried = ted_alloc(buffers, sizeof(ted_carried), "session caches", err);
    s->new_carried = ted_alloc(buffers, sizeof(ted_carried), "session caches", err);
    if (!s->decoder.caches || !s->old_carried || !s->new_carried) {
        ted_session_free(s);
        return TED_ERR_NOMEM;
    }
    *session = s;
    return TED_OK;
}

void ted_session_free(ted_session *s)
{
    if (!s)
        return;
    free(s->arena);
    ted_session_free_subset(s);
    free(s->decoder.caches);
    free(s->old_carried);
    free(s->new_carried);
    free(s);
}

void ted_session_keep_attention(ted_session *s, bool keep)
{
    if (!s)
        return;
    s->attention_requested = keep;
}

void ted_session_keep_encoder_attention(ted_session *s, bool keep)
{
    if (s)
        s->encoder_attention_unwanted = !keep;
}

void ted_session_watch(ted_session *s, const ted_cancel *cancel)
{
    if (s)
        s->cancel = cancel;
}

static ted_status check_max_steps(const ted_config *c, int max_steps, const char *who,
                                  ted_error *err)
{
    if (max_steps < 1 || max_steps > c->max_positions)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "%s: max_steps %d is outside 1..%d (max_positions)", who, max_steps,
                        c->max_positions);
    return TED_OK;
}

static ted_status check_sources(const ted_config *c, const int *const *source_ids,
                                const int *lengths, int batch, ted_error *err)
{
    for (int b = 0; b < batch; b++) {
        if (lengths[b] < 1)
            return ted_fail(err, TED_ERR_INPUT, "source %d is empty", b);
        if (!source_ids[b])
            return ted_fail(err, TED_ERR_ARGUMENT, "source %d: ids is NULL", b);
        if (lengths[b] > c->max_positions)
            return ted_fail(err, TED_ERR_INPUT,
                            "source %d has %d tokens; the model's max_positions is %d", b,
                            lengths[b], c->max_positions);
        for (int t = 0; t < lengths[b]; t++)
            if (source_ids[b][t] < 0 || source_ids[b][t] >= c->src_vocab_size)
                return ted_fail(err, TED_ERR_INPUT,
                                "source %d, token %d: id %d is outside the source "
                                "vocabulary (0..%d)",
                                b, t, source_ids[b][t], c->src_vocab_size - 1);
    }
    return TED_OK;
}

ted_status ted_session_encode(ted_session *s, const int *const *source_ids,
                              const int *source_lengths, int batch, int max_steps,
                              ted_error *err)
{
    TED_REQUIRE(s, err);
    const ted_config *c = &s->model->config;
    if (batch < 1 || !source_ids || !source_lengths)
        return ted_fail(err, TED_ERR_ARGUMENT, "encode: empty batch");
    if (ted_cancel_requested(s->cancel))
        return ted_fail(err, TED_ERR_CANCELLED, "cancelled before the encoder "
                        "(ted_cancel_request)");
    ted_status status = check_max_steps(c, max_steps, "encode", err);
    if (!status)
        status = check_sources(c, source_ids, source_lengths, batch, err);
    if (status)
        return status;

    s->keep_attention = s->attention_requested;
    s->keep_encoder_attention = s->keep_attention && !s->encoder_attention_unwanted;
    s->encodes = true;
    int source_len = ted_largest(source_lengths, batch);
    ted_session_size size = {batch, source_len, max_steps};
    size.max_steps = ted_arena_first_steps(s, size, max_steps);
    if ((status = ted_arena_fit(s, size, "encode", err)))
        return status;
    s->step_limit = max_steps;

    s->batch = batch;
    s->origins_given = (uint64_t)batch;
    for (int b = 0; b < batch; b++) {
        s->origins[b] = (uint64_t)b;
        s->source_lengths[b] = source_lengths[b];
        s->decoder.steps[b] = 0;
        ted_copy_padded(s->source_ids + (size_t)b * source_len, source_ids[b],
                        source_lengths[b], source_len, c->pad_id);
    }
    ted_encoder_forward(s->model, s->source_ids, batch, source_len, &s->encoder);
    ted_decoder_cache_memory(s->model, s->encoder.activations.x, batch, source_len,
                             s->decoder.caches, s->encoder.activations.attention.projected);
    return ted_session_restrict(s, NULL, err);
}

/* Weights that are finite can still overflow in use (a LayerNorm weight of
 * 1e30), and a matrix is not checked for NaN at load: either makes logits
 * NaN or infinite, which no decoding can rank. Such a step is an error, not
 * a translation of <unk>s. The check costs one vector pass over (batch,
 * vocab), against the (batch, vocab, d_model) of the output projection;
 * only a failed one looks for the token to name. */
static ted_status check_logits_finite(ted_session *s, ted_error *err)
{
    int vocab = s->model->config.tgt_vocab_size;
    if (s->subset_active
            ? ted_all_finite(s->subset.scores, (size_t)s->batch * s->subset.count)
            : ted_all_finite(s->logits, (size_t)s->batch * vocab))
        return TED_OK;
    ted_session_spread_logits(s);
    for (int b = 0; b < s->batch; b++) {
        const float *row = s->logits + (size_t)b * vocab;
        for (int v = 0; v < vocab; v++)
            if (!isfinite(row[v]) && !(s->subset_active && row[v] == -INFINITY))
                return ted_fail(err, TED_ERR_WEIGHTS,
                                "step %d: the logit of target token %d is %s (row %d): the "
                                "model's numbers overflowed or a weight is not finite (ted info "
                                "--check looks for one)",
                                ted_session_position(s), v, isnan(row[v]) ? "NaN" : "infinite",
                                b);
    }
    return TED_OK;
}

ted_status ted_session_step(ted_session *s, const int *tokens, const float **logits,
                            ted_error *err)
{
    ted_status status = ted_session_step_scores(s, tokens, logits, err);
    if (!status)
        ted_session_spread_logits(s);
    return status;
}

void ted_session_spread_logits(ted_session *s)
{
    if (s->decoder.subset && !s->logits_spread)
        ted_output_spread_subset(s->logits, s->decoder.subset, s->batch,
                                 s->model->config.tgt_vocab_size);
    s->logits_spread = true;
}

ted_status ted_session_step_scores(ted_session *s, const int *tokens, const float **logits,
                                   ted_error *err)
{
    TED_REQUIRE(s, err);
    TED_REQUIRE(tokens, err);
    const ted_config *c = &s->model->config;
    if (s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT, "step: no source encoded");
    if (ted_cancel_requested(s->cancel))
        return ted_fail(err, TED_ERR_CANCELLED, "cancelled before step %d (ted_cancel_request)",
                        ted_session_position(s) + 1);
    if (ted_session_position(s) >= s->step_limit)
        return ted_fail(err, TED_ERR_ARGUMENT, "step: all %d steps of this decode are used",
                        s->step_limit);
    for (int b = 0; b < s->batch; b++)
        if (tokens[b] < 0 || tokens[b] >= c->tgt_vocab_size)
            return ted_fail(err, TED_ERR_INPUT,
                            "step: token id %d of row %d is outside the target vocabulary "
                            "(0..%d)",
                            tokens[b], b, c->tgt_vocab_size - 1);
    ted_status status = ted_session_grow_steps(s, err);
    if (!status)
        status = ted_session_subset_scratch(s, err);
    if (status)
        return status;
    s->decoder.subset = s->subset_active ? &s->subset : NULL;
    s->logits_spread = false;
    ted_decoder_step(s->model, tokens, s->batch, &s->decoder, s->logits);
    status = check_logits_finite(s, err);
    if (status)
        return status;
    if (logits)
        *logits = s->logits;
    return TED_OK;
}

/* ---- accessors ------------------------------------------------------------ */

const ted_model *ted_session_model(const ted_session *s)
{
    if (!s)
        return NULL;
    return s->model;
}

int ted_session_batch(const ted_session *s)
{
    if (!s)
        return 0;
    return s->batch;
}

int ted_session_position(const ted_session *s)
{
    if (!s)
        return 0;
    return s->decoder.caches[0].self.length;
}

int ted_session_row_position(const ted_session *s, int row)
{
    return row >= 0 && row < s->batch ? s->decoder.steps[row] : 0;
}

int ted_session_source_length(const ted_session *s, int row)
{
    return row >= 0 && row < s->batch ? s->source_lengths[row] : 0;
}

void ted_session_room(const ted_session *s, int *rows, int *source_len, int *max_steps)
{
    *rows = s->room.rows;
    *source_len = s->source_len;
    *max_steps = s->max_steps;
}

size_t ted_session_buffer_bytes(const ted_session *s)
{
    return s->arena_bytes;
}

int ted_session_shortlist_size(const ted_session *s)
{
    return s->subset_active ? s->subset.count : 0;
}

ted_status ted_session_attention(const ted_session *s, ted_attention_kind kind, int layer,
                                 int row, ted_attention_view *view, ted_error *err)
{
    TED_REQUIRE(s, err);
    TED_REQUIRE(view, err);
    const ted_config *c = &s->model->config;
    if (kind != TED_ENCODER_SELF_ATTENTION && kind != TED_DECODER_SELF_ATTENTION &&
        kind != TED_CROSS_ATTENTION)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: kind %d is none of encoder "
                        "self-attention, decoder self-attention and cross-attention", (int)kind);
    if (!s->keep_attention || s->batch < 1)
        return ted_fail(err, TED_ERR_ARGUMENT,
                        "attention: not kept (call ted_session_keep_attention before encode)");
    if (kind == TED_ENCODER_SELF_ATTENTION && !s->keep_encoder_attention)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: the encoder's weights are not kept "
                        "(ted_session_keep_encoder_attention)");
    int layers = kind == TED_ENCODER_SELF_ATTENTION ? c->encoder_layers : c->decoder_layers;
    if (layer < 0 || layer >= layers || row < 0 || row >= s->batch)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: layer %d, row %d out of range",
                        layer, row);
    int position = ted_session_position(s);
    if (kind != TED_ENCODER_SELF_ATTENTION && position == 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "attention: no decoder step yet");
    size_t block = (size_t)layer * s->batch + row;
    int S = s->source_len, h = c->heads;
    switch (kind) {
    case TED_ENCODER_SELF_ATTENTION:
        *view = (ted_attention_view){s->encoder.kept_attention + block * h * S * S, h, S, S, S};
        break;
    case TED_DECODER_SELF_ATTENTION:
        *view = (ted_attention_view){s->decoder.kept.self + block * h * s->max_steps, h, 1,
                                     position, s->max_steps};
        break;
    case TED_CROSS_ATTENTION:
        *view = (ted_attention_view){s->decoder.kept.cross + block * h * S, h, 1, S, S};
        break;
    }
    return TED_OK;
}
