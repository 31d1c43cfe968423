/* The decoding trace of the learning tools (ted/learn.h). The session
 * runs the model through the public API, and the final Softmax is the
 * decoding strategies' own (the softmax of layers/softmax.h, the banned
 * tokens and the rules on the scores of model/decoding.h, which record
 * what they change, ted_top_k), so the probabilities shown are those
 * greedy decoding computes: this file only copies out what they show. */
#include "ted/learn.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/config.h"
#include "layers/softmax.h"
#include "model/decoding.h"

/* t->encoder: the encoder's self-attention weights the session keeps, not
 * a copy. A batch of one lays them out as (encoder_layers, heads, S, S),
 * each row S long; the session's buffers can move when a step grows them,
 * so each step points again. */
static ted_status point_encoder_attention(ted_learn_trace *t, ted_error *err)
{
    ted_attention_view v;
    if (!t->encoder_kept)
        return TED_OK;
    if (ted_session_attention(t->session, TED_ENCODER_SELF_ATTENTION, 0, 0, &v, err))
        return err->status;
    t->encoder = v.weights;
    return TED_OK;
}

/* ted_learn_start, with or without the encoder's attention weights. */
static ted_status start(ted_learn_trace *t, const ted_model *model, const ted_source *source,
                        int max_length, int top_k, bool encoder_attention, ted_error *err)
{
    *t = (ted_learn_trace){.model = model, .config = ted_model_config(model)};
    const ted_config *c = t->config;
    if (source->blank)
        return ted_fail(err, TED_ERR_INPUT, "the sentence is empty");
    t->top_k = top_k < 1 ? 1 : top_k < c->tgt_vocab_size ? top_k : c->tgt_vocab_size;
    t->rules = ted_translate_model_options(model).decode.rules;
    t->source_len = source->count;
    t->max_steps = ted_max_target_length(model, t->source_len, max_length);
    size_t S = (size_t)t->source_len, V = (size_t)c->tgt_vocab_size;
    t->source = malloc(S * sizeof *t->source);
    t->steps = calloc((size_t)t->max_steps, sizeof *t->steps);
    t->probs = malloc(V * sizeof *t->probs);
    t->allowed = malloc(V * sizeof *t->allowed);
    t->top_ids = malloc((size_t)t->top_k * sizeof *t->top_ids);
    t->history = malloc((size_t)t->max_steps * sizeof *t->history);
    t->marks = malloc(V * sizeof *t->marks);
    t->prefix = malloc(((size_t)source->prefix_count + 1) * sizeof *t->prefix);
    if (!t->source || !t->steps || !t->probs || !t->allowed || !t->top_ids || !t->prefix ||
        !t->history || !t->marks)
        return ted_fail(err, TED_ERR_NOMEM, "out of memory");
    memcpy(t->source, source->ids, S * sizeof *t->source);
    t->prefix_len = source->prefix_count;
    if (t->prefix_len > 0)
        memcpy(t->prefix, source->prefix_ids, (size_t)t->prefix_len * sizeof *t->prefix);

    const int *sources[1] = {t->source};
    if (ted_session_new(model, &t->session, err) != TED_OK)
        return err->status;
    ted_session_keep_attention(t->session, true);
    ted_session_keep_encoder_attention(t->session, encoder_attention);
    t->encoder_kept = encoder_attention;
    if (ted_session_encode(t->session, sources, &t->source_len, 1, t->max_steps, err) != TED_OK)
        return err->status;
    return point_encoder_attention(t, err);
}

ted_status ted_learn_start(ted_learn_trace *t, const ted_model *model, const ted_source *source,
                           int max_length, int top_k, ted_error *err)
{
    return start(t, model, source, max_length, top_k, true, err);
}

ted_status ted_learn_start_steps(ted_learn_trace *t, const ted_model *model,
                                 const ted_source *source, int max_length, int top_k,
                                 ted_error *err)
{
    return start(t, model, source, max_length, top_k, false, err);
}

void ted_learn_use_rules(ted_learn_trace *t, const ted_logits_rules *rules)
{
    t->rules = rules ? *rules : (ted_logits_rules){0};
}

/* The final Softmax of a step: the probabilities of every token into
 * t->probs; the top_k tokens by the model's own logits, most likely first,
 * each with what the banned tokens and the rules did to it (the functions
 * of greedy decoding record it in t->marks as they apply them); and the
 * token greedy decoding takes: the best the rules leave, ties to the
 * lower id. */
static void rank(ted_learn_trace *t, const float *logits, ted_learn_step *s)
{
    int vocab = t->config->tgt_vocab_size;
    memcpy(t->probs, logits, (size_t)vocab * sizeof *t->probs);
    ted_softmax(t->probs, vocab);
    memcpy(t->allowed, logits, (size_t)vocab * sizeof *t->allowed);
    memset(t->marks, 0, (size_t)vocab * sizeof *t->marks);
    ted_ban_tokens_marked(t->model, t->allowed, t->marks);
    const ted_rules_source source = {t->source, t->source_len};
    ted_apply_logits_rules_marked(t->model, &t->rules, &source, t->history, t->count,
                                  t->allowed, t->marks);
    for (int id = 0; id < vocab; id++)
        t->marks[id].score = t->allowed[id];
    int n = ted_top_k(logits, vocab, t->top_k, t->top_ids, NULL);
    for (int k = 0; k < n; k++) {
        int id = t->top_ids[k];
        s->top[k] = (ted_learn_candidate){id, t->probs[id], logits[id]};
        s->changes[k] = t->marks[id];
    }
    int best = ted_argmax(t->allowed, vocab);
    s->best = (ted_learn_candidate){best, t->probs[best], logits[best]};
}

/* What took the chosen token: the rule that forced it, or what the rules
 * did to it. */
static ted_learn_change taken_change(const ted_learn_trace *t, const ted_learn_step *s,
                                     bool from_prefix)
{
    if (!s->forced)
        return t->marks[s->chosen];
    ted_learn_rule rule = !from_prefix ? TED_LEARN_RULE_FORCED
                          : s->chosen == t->config->forced_bos_id ? TED_LEARN_RULE_FORCED_BOS
                                                                  : TED_LEARN_RULE_FORCED_LANGUAGE;
    return (ted_learn_change){.rule = rule, .score = t->marks[s->chosen].score};
}

/* The step's attention weights, out of the session: s->self (layers,
 * heads, keys) and s->cross (layers, heads, source_len). */
static ted_status keep_step_attention(ted_learn_trace *t, ted_learn_step *s, size_t keys,
                                      ted_error *err)
{
    const ted_config *c = t->config;
    size_t h = (size_t)c->heads, S = (size_t)t->source_len;
    for (int l = 0; l < c->decoder_layers; l++) {
        ted_attention_view self, cross;
        if (ted_session_attention(t->session, TED_DECODER_SELF_ATTENTION, l, 0, &self, err) ||
            ted_session_attention(t->session, TED_CROSS_ATTENTION, l, 0, &cross, err))
            return err->status;
        for (size_t head = 0; head < h; head++) {
            memcpy(s->self + ((size_t)l * h + head) * keys, self.weights + head * self.stride,
                   keys * sizeof *s->self);
            memcpy(s->cross + ((size_t)l * h + head) * S, cross.weights + head * cross.stride,
                   S * sizeof *s->cross);
        }
    }
    return TED_OK;
}

ted_status ted_learn_advance(ted_learn_trace *t, int force, ted_error *err)
{
    const ted_config *c = t->config;
    if (t->finished || t->count >= t->max_steps)
        return ted_fail(err, TED_ERR_ARGUMENT, "decoding is over");
    ted_learn_step *s = &t->steps[t->count];
    size_t h = (size_t)c->heads, L = (size_t)c->decoder_layers, S = (size_t)t->source_len;
    size_t keys = (size_t)t->count + 1;
    s->top = malloc((size_t)t->top_k * sizeof *s->top);
    s->changes = malloc((size_t)t->top_k * sizeof *s->changes);
    s->self = malloc(L * h * keys * sizeof *s->self);
    s->cross = malloc(L * h * S * sizeof *s->cross);
    if (!s->top || !s->changes || !s->self || !s->cross)
        return ted_fail(err, TED_ERR_NOMEM, "out of memory");

    s->input = t->count == 0 ? c->decoder_start_id : t->steps[t->count - 1].chosen;
    const float *logits;
    if (ted_session_step(t->session, &s->input, &logits, err) != TED_OK)
        return err->status;
    rank(t, logits, s);
    bool from_prefix = force < 0 && t->count < t->prefix_len;
    if (from_prefix)
        force = t->prefix[t->count];
    s->forced = force >= 0;
    s->chosen = s->forced ? force : s->best.id;
    s->taken = (ted_learn_candidate){s->chosen, t->probs[s->chosen], logits[s->chosen]};
    s->taken_change = taken_change(t, s, from_prefix);
    t->history[t->count] = s->chosen;
    if (keep_step_attention(t, s, keys, err) != TED_OK ||
        point_encoder_attention(t, err) != TED_OK)
        return err->status;
    t->count++;
    t->finished = s->chosen == c->eos_id || t->count >= t->max_steps;
    return TED_OK;
}

void ted_learn_end(ted_learn_trace *t)
{
    if (t->steps)
        for (int i = 0; i < t->max_steps; i++) {
            free(t->steps[i].top);
            free(t->steps[i].changes);
            free(t->steps[i].self);
            free(t->steps[i].cross);
        }
    free(t->steps);
    free(t->probs);
    free(t->allowed);
    free(t->top_ids);
    free(t->history);
    free(t->marks);
    free(t->source);
    free(t->prefix);
    ted_session_free(t->session);
    *t = (ted_learn_trace){0};
}

void ted_learn_forget_attention(ted_learn_trace *t, int step)
{
    if (step < 0 || step >= t->count)
        return;
    free(t->steps[step].self);
    free(t->steps[step].cross);
    t->steps[step].self = t->steps[step].cross = NULL;
}

/* ---- forced tokens ---------------------------------------------------------- */

int ted_learn_forced_at(const ted_learn_forced *forced, int count, int step)
{
    for (int i = 0; i < count; i++)
        if (step + 1 >= forced[i].step && step + 1 < forced[i].step + forced[i].count)
            return forced[i].ids[step + 1 - forced[i].step];
    return -1;
}

bool ted_learn_resolve_forced(const ted_model *model, const char *text, ted_learn_forced *f)
{
    ted_error err = {0};
    return ted_target_word(model, text, f->ids, TED_LEARN_FORCE_PIECES, &f->count, &err) == TED_OK;
}

ted_learn_force_refusal ted_learn_add_forced(const ted_model *model, ted_learn_forced *forced,
                                             int *count, int step, const char *token)
{
    ted_learn_forced f = {.step = step};
    if (!ted_learn_resolve_forced(model, token, &f))
        return TED_LEARN_FORCE_NOT_IN_VOCABULARY;
    for (int i = 0; i < f.count; i++)
        if (ted_learn_forced_at(forced, *count, step - 1 + i) >= 0)
            return TED_LEARN_FORCE_STEP_TAKEN;
    forced[(*count)++] = f;
    return TED_LEARN_FORCE_ADDED;
}

ted_status ted_learn_run(ted_learn_trace *t, const ted_learn_forced *forced, int count,
                         ted_error *err)
{
    while (!t->finished)
        if (ted_learn_advance(t, ted_learn_forced_at(forced, count, t->count), err) != TED_OK)
            return err->status;
    return TED_OK;
}

/* ---- what the steps give -------------------------------------------------- */

char *ted_learn_translation(const ted_learn_trace *t)
{
    int *ids = malloc((size_t)(t->count > 0 ? t->count : 1) * sizeof *ids);
    if (!ids)
        return NULL;
    for (int i = 0; i < t->count; i++)
        ids[i] = t->steps[i].chosen;
    char *text = ted_decode_target(t->model, ids, t->count);
    free(ids);
    return text;
}

/* out[j] = rows[head][j], or the mean over heads when head == heads:
 * rows (heads, row_stride), out (keys). */
static void head_row(const float *rows, int heads, int head, size_t row_stride, int keys,
                     float *out)
{
    if (head < heads) {
        memcpy(out, rows + (size_t)head * row_stride, (size_t)keys * sizeof *out);
        return;
    }
    for (int j = 0; j < keys; j++) {
        double sum = 0;
        for (int k = 0; k < heads; k++)
            sum += rows[(size_t)k * row_stride + j];
        out[j] = (float)(sum / heads);
    }
}

void ted_learn_encoder_row(const ted_learn_trace *t, int layer, int head, int query, float *out)
{
    size_t S = (size_t)t->source_len, h = (size_t)t->config->heads;
    head_row(t->encoder + (size_t)layer * h * S * S + (size_t)query * S, (int)h, head, S * S,
             (int)S, out);
}

void ted_learn_self_row(const ted_learn_trace *t, int step, int layer, int head, float *out)
{
    size_t keys = (size_t)step + 1, h = (size_t)t->config->heads;
    head_row(t->steps[step].self + (size_t)layer * h * keys, (int)h, head, keys, (int)keys, out);
}

void ted_learn_cross_row(const ted_learn_trace *t, int step, int layer, int head, float *out)
{
    size_t S = (size_t)t->source_len, h = (size_t)t->config->heads;
    head_row(t->steps[step].cross + (size_t)layer * h * S, (int)h, head, S, (int)S, out);
}
