/* The computation of the encoder and of each step (learn/explain.h), in
 * the words of multi-head attention with the model's real sizes. */
#include "ted/learn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/config.h"
#include "layers/relative_position.h"


/* An explanation goes out through `emit` one piece at a time; these carry
 * the emitter along. */
typedef struct explainer {
    const ted_learn_trace *t;
    ted_learn_explain_fn *emit;
    void *data;
} explainer;

static void part(const explainer *x, const char *title, const char *words)
{
    x->emit(x->data, TED_LEARN_EXPLAIN_PART, title, words, "");
}

static void heading(const explainer *x, const char *title, const char *words)
{
    x->emit(x->data, TED_LEARN_EXPLAIN_HEADING, title, words, "");
}

static void line(const explainer *x, const char *words, const char *shape)
{
    x->emit(x->data, TED_LEARN_EXPLAIN_LINE, "", words, shape ? shape : "");
}

/* The normalization's name: LayerNorm, or T5's RMSNorm. */
static const char *norm_name(const ted_config *c)
{
    return c->norm == TED_NORM_RMS ? "RMSNorm" : "LayerNorm";
}

static void explain_add_norm(const explainer *x, const char *shape)
{
    char words[160];
    if (x->t->config->norm_first)
        snprintf(words, sizeof words, "Add & Norm (pre-norm): x + sublayer(%s(x))",
                 norm_name(x->t->config));
    else
        snprintf(words, sizeof words, "Add & Norm: %s(x + sublayer(x))",
                 norm_name(x->t->config));
    line(x, words, shape);
}

/* What RMSNorm computes, where it stands for LayerNorm. */
static void explain_rms_norm(const explainer *x)
{
    if (x->t->config->norm == TED_NORM_RMS)
        line(x, "RMSNorm: x / √(mean(x²) + ε) × γ — no mean subtraction, no bias β (LayerNorm: "
             "(x − mean) / √(var + ε) × γ + β)", "");
}

static void explain_feed_forward(const explainer *x, int seq)
{
    const ted_config *c = x->t->config;
    char words[200], shape[96];
    const char *activation = ted_learn_shown_word("model.activation", (int)c->activation);
    if (c->feed_forward == TED_FEED_FORWARD_GATED) {
        snprintf(words, sizeof words, "gated feed-forward, two products: %s(x W_i0) ⊙ (x W_i1), "
                 "each Linear %d → %d, multiplied element by element", activation, c->d_model,
                 c->d_ff);
        snprintf(shape, sizeof shape, "(1, %d, %d)", seq, c->d_ff);
        line(x, words, shape);
        snprintf(words, sizeof words, "then W_o: Linear %d → %d", c->d_ff, c->d_model);
        snprintf(shape, sizeof shape, "(1, %d, %d)", seq, c->d_model);
        line(x, words, shape);
        return;
    }
    snprintf(words, sizeof words, "feed-forward: Linear %d → %d, %s, Linear %d → %d", c->d_model,
             c->d_ff, activation, c->d_ff, c->d_model);
    snprintf(shape, sizeof shape, "(1, %d, %d) → (1, %d, %d)", seq, c->d_ff, seq, c->d_model);
    line(x, words, shape);
}

/* "Q·Kᵀ / √q" or T5's "Q·Kᵀ (no 1/√q scaling)", and the relative
 * position bias when the attention adds it. */
static void scores_words(const ted_config *c, bool bias, char *out, size_t size)
{
    int n;
    if (c->scale_attention)
        n = snprintf(out, size, "scores Q·Kᵀ / √%d", c->query_size);
    else
        n = snprintf(out, size, "scores Q·Kᵀ (no 1/√%d scaling)", c->query_size);
    if (bias && n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, " + relative position bias B[head, bucket(key − "
                 "query)]");
}

/* The encoder's relative position bias: its buckets and its table. */
static void explain_encoder_bias(const explainer *x)
{
    const ted_config *c = x->t->config;
    char words[400];
    if (c->positional_layout != TED_POSITIONS_RELATIVE)
        return;
    snprintf(words, sizeof words, "relative position bias: the distance key − query falls in "
             "one of %d buckets (%d for keys up to the query, %d after; distances 0..%d one "
             "each, then log-spaced up to %d), and B (%d buckets × %d heads, learned) gives its bias, "
             "the same in every layer", c->relative_buckets, c->relative_buckets / 2,
             c->relative_buckets / 2, c->relative_buckets / 4 - 1, c->relative_max_distance,
             c->relative_buckets, c->heads);
    line(x, words, "");
}

/* The decoder's bias at this step: the bucket of a few keys for the
 * query at position `step` (key 0 and the last five). */
static void explain_step_buckets(const explainer *x, int step)
{
    const ted_config *c = x->t->config;
    ted_bucket_rule rule = {c->relative_buckets, c->relative_max_distance, false};
    char words[640];
    int n = snprintf(words, sizeof words, "the buckets of query %d (one direction, %d buckets):",
                     step, c->relative_buckets);
    for (int k = 0; k <= step && n > 0 && (size_t)n < sizeof words; k++) {
        if (k > 0 && k < step - 4) {
            if (k == 1)
                n += snprintf(words + n, sizeof words - (size_t)n, ", …");
            continue;
        }
        n += snprintf(words + n, sizeof words - (size_t)n, "%s key %d → bucket %d",
                      k ? "," : "", k, ted_relative_bucket(k - step, rule));
    }
    line(x, words, "");
}

static void explain_same_layers(const explainer *x, int layers, int seq)
{
    char words[160], shape[64];
    if (layers < 2)
        return;
    if (layers == 2)
        snprintf(words, sizeof words, "layer 2: the same computation and shapes");
    else if (layers == 3)
        snprintf(words, sizeof words, "layers 2 and 3: the same computation and shapes, each "
                 "on the output of the one before");
    else
        snprintf(words, sizeof words, "layers 2 to %d: the same computation and shapes, each "
                 "on the output of the one before", layers);
    snprintf(shape, sizeof shape, "(1, %d, %d)", seq, x->t->config->d_model);
    line(x, words, shape);
}

/* "Q, K, V: ..." for `seq` positions: one packed Linear cut in three, or
 * three Linears (T5, Marian); their width is Heads × Query Size, the
 * Embedding Size unless the config sets head_size. */
static void explain_qkv(const explainer *x, int seq, const char *cut)
{
    const ted_config *c = x->t->config;
    int inner = c->heads * c->query_size;
    char words[160], shape[64];
    if (c->attention_projection == TED_PROJECTION_SEPARATE)
        snprintf(words, sizeof words, "Q, K, V: three Linears %d → %d", c->d_model, inner);
    else
        snprintf(words, sizeof words, "Q, K, V: one Linear %d → 3 × %d%s", c->d_model, inner,
                 cut);
    snprintf(shape, sizeof shape, "Q, K, V (1, %d, %d)", seq, inner);
    line(x, words, shape);
}

/* The encoder's sizes: Query Size is the Embedding Size over the heads,
 * or the config's head_size (T5's d_kv). */
static void explain_sizes(const explainer *x)
{
    const ted_config *c = x->t->config;
    int d = c->d_model, h = c->heads, q = c->query_size;
    char words[200];
    if (c->head_size)
        snprintf(words, sizeof words, "Batch 1 · Embedding Size %d · Number of Heads %d · "
                 "Query Size %d (set by the model: Heads × Query Size = %d)", d, h, q, h * q);
    else
        snprintf(words, sizeof words, "Batch 1 · Embedding Size %d · Number of Heads %d · "
                 "Query Size = %d / %d = %d", d, h, d, h, q);
    line(x, words, NULL);
    line(x, "shapes: (Batch, Seq, Embedding Size), and split into heads (Batch, Heads, Seq, "
         "Query Size)", NULL);
}

/* The first encoder layer's self-attention, up to its Add & Norm. */
static void explain_encoder_attention(const explainer *x)
{
    const ted_config *c = x->t->config;
    int d = c->d_model, h = c->heads, q = c->query_size, S = x->t->source_len, inner = h * q;
    char words[200], shape[120];
    snprintf(words, sizeof words, "encoder layer 1 of %d", c->encoder_layers);
    heading(x, words, " — multi-head self-attention, every token over every token");
    explain_qkv(x, S, ", cut in three");
    snprintf(words, sizeof words, "logical split into %d heads of Query Size %d", h, q);
    snprintf(shape, sizeof shape, "(1, %d, %d) → (1, %d, %d, %d)", S, inner, h, S, q);
    line(x, words, shape);
    scores_words(c, c->positional_layout == TED_POSITIONS_RELATIVE, words, sizeof words);
    strncat(words, ", softmax over the keys", sizeof words - strlen(words) - 1);
    snprintf(shape, sizeof shape, "(1, %d, %d, %d)", h, S, S);
    line(x, words, shape);
    explain_encoder_bias(x);
    snprintf(shape, sizeof shape, "(1, %d, %d, %d)", h, S, q);
    line(x, "weights × V", shape);
    snprintf(shape, sizeof shape, "(1, %d, %d, %d) → (1, %d, %d, %d) → (1, %d, %d × %d = %d)", h,
             S, q, S, h, q, S, h, q, inner);
    line(x, "merge heads", shape);
    snprintf(words, sizeof words, "output Linear W^O %d → %d", inner, d);
    snprintf(shape, sizeof shape, "(1, %d, %d)", S, d);
    line(x, words, shape);
    explain_add_norm(x, shape);
    explain_rms_norm(x);
}

void ted_learn_explain_encoder(const ted_learn_trace *t, ted_learn_explain_fn *emit, void *data)
{
    const explainer x0 = {t, emit, data}, *x = &x0;
    const ted_config *c = t->config;
    int d = c->d_model, h = c->heads, q = c->query_size, S = t->source_len;
    char words[200], shape[120];
    part(x, "how the encoder reads the source", " (once, before the first step)");
    explain_sizes(x);
    snprintf(words, sizeof words, "the %d source tokens: input embedding%s%s", S,
             c->scale_embedding ? " × √Embedding Size" : "",
             c->positional_layout == TED_POSITIONS_RELATIVE ? " (no positional encoding: "
             "positions enter as a bias on the scores)" : " + positional encoding");
    snprintf(shape, sizeof shape, "(1, %d, %d)", S, d);
    line(x, words, shape);
    explain_encoder_attention(x);
    explain_feed_forward(x, S);
    explain_add_norm(x, shape);
    explain_same_layers(x, c->encoder_layers, S);
    if (c->encoder_final_norm) {
        snprintf(words, sizeof words, "final %s", norm_name(c));
        line(x, words, shape);
    }
    snprintf(words, sizeof words, "each decoder layer projects K and V from this output once");
    snprintf(shape, sizeof shape, "K, V (1, %d, %d) → (1, %d, %d, %d)", S, d, h, S, q);
    line(x, words, shape);
}

/* Layer 1's masked self-attention over positions 0..step. */
static void explain_masked_self_attention(const explainer *x, int step)
{
    const ted_config *c = x->t->config;
    int d = c->d_model, h = c->heads, q = c->query_size, keys = step + 1, inner = h * q;
    char words[640], shape[160];
    snprintf(words, sizeof words, "decoder layer 1 of %d", c->decoder_layers);
    heading(x, words, " — masked multi-head self-attention");
    explain_qkv(x, 1, "");
    if (step > 0) {
        snprintf(words, sizeof words, "K and V join those of positions 0..%d (cache)", step - 1);
        snprintf(shape, sizeof shape, "K, V (1, %d, %d)", keys, inner);
        line(x, words, shape);
    }
    snprintf(words, sizeof words, "logical split into %d heads of Query Size %d", h, q);
    snprintf(shape, sizeof shape, "Q (1, %d, 1, %d); K, V (1, %d, %d, %d)", h, q, h, keys, q);
    line(x, words, shape);
    bool bias = c->positional_layout == TED_POSITIONS_RELATIVE;
    size_t n;
    scores_words(c, bias, words, sizeof words);
    n = strlen(words);
    snprintf(words + n, sizeof words - n, ", softmax over positions 0..%d (the mask: later ones "
             "are not there yet)", step);
    snprintf(shape, sizeof shape, "(1, %d, 1, %d)", h, keys);
    line(x, words, shape);
    if (bias)
        explain_step_buckets(x, step);
    snprintf(shape, sizeof shape, "(1, %d, 1, %d) → (1, 1, %d, %d) → (1, 1, %d)", h, q, h, q,
             inner);
    line(x, "weights × V, merge heads", shape);
    snprintf(words, sizeof words, "output Linear W^O %d → %d", inner, d);
    snprintf(shape, sizeof shape, "(1, 1, %d)", d);
    line(x, words, shape);
    explain_add_norm(x, shape);
    explain_rms_norm(x);
}

/* What layer 1's SSRU keeps at this step: the share of the new input in
 * its state (the last of the kept weights, averaged over the heads); the
 * rest is what the forget gate kept of the state before. */
static void explain_ssru_keeps(const explainer *x, int step)
{
    const ted_learn_trace *t = x->t;
    float *shares = t->steps[step].self ? malloc(sizeof(float) * (size_t)(step + 1)) : NULL;
    if (!shares)
        return;
    ted_learn_self_row(t, step, 0, t->config->heads, shares);
    float taken = shares[step], oldest = step > 0 ? shares[0] : taken;
    free(shares);
    char words[640], tok[256];
    ted_learn_show_token(ted_target_token(t->model, t->steps[step].input), tok, sizeof tok);
    if (step == 0)
        snprintf(words, sizeof words, "here the state takes %.0f%% of the input of '%s' "
                 "(mean of 1 − f)", 100.0 * taken, tok);
    else
        snprintf(words, sizeof words, "here the gate keeps %.0f%% of the state (mean of f) and "
                 "takes %.0f%% of '%s'; %.1f%% of step 1's input is still in it",
                 100.0 * (1 - taken), 100.0 * taken, tok, 100.0 * oldest);
    line(x, words, "");
}

/* Layer 1's SSRU, Marian's recurrent layer in place of self-attention. */
static void explain_ssru(const explainer *x, int step)
{
    const ted_config *c = x->t->config;
    int d = c->d_model;
    char words[640], shape[160];
    snprintf(words, sizeof words, "decoder layer 1 of %d", c->decoder_layers);
    heading(x, words, " — SSRU: a recurrent cell, one state vector c in place of the cache "
            "of every position's K and V");
    snprintf(shape, sizeof shape, "(1, 1, %d)", d);
    snprintf(words, sizeof words, "forget gate f = sigmoid(x W_f + b_f), Linear %d → %d: per "
             "dimension, how much of the state to keep", d, d);
    line(x, words, shape);
    snprintf(words, sizeof words, "c = f ⊙ c(step %d) + (1 − f) ⊙ x W: the kept state plus "
             "the rest taken from the new input%s", step, step ? "" : " (c starts at 0)");
    line(x, words, shape);
    explain_ssru_keeps(x, step);
    line(x, "h = ReLU(c)", shape);
    explain_add_norm(x, shape);
}

/* Layer 1's encoder-decoder attention, its feed-forward and the other layers. */
static void explain_cross_attention(const explainer *x)
{
    const ted_config *c = x->t->config;
    int d = c->d_model, h = c->heads, q = c->query_size, S = x->t->source_len, inner = h * q;
    char words[640], shape[160];
    heading(x, "decoder layer 1, continued", " — encoder-decoder attention: Q from the decoder, "
            "K and V from the encoder's output");
    snprintf(words, sizeof words, "Q: Linear %d → %d, logical split", d, inner);
    snprintf(shape, sizeof shape, "(1, 1, %d) → (1, %d, 1, %d)", d, h, q);
    line(x, words, shape);
    snprintf(words, sizeof words, "K, V of the %d source tokens (computed once)", S);
    snprintf(shape, sizeof shape, "(1, %d, %d, %d)", h, S, q);
    line(x, words, shape);
    scores_words(c, false, words, sizeof words);
    strncat(words, c->positional_layout == TED_POSITIONS_RELATIVE
                       ? "; no position bias here; softmax over the source"
                       : ", softmax over the source", sizeof words - strlen(words) - 1);
    snprintf(shape, sizeof shape, "(1, %d, 1, %d)", h, S);
    line(x, words, shape);
    snprintf(shape, sizeof shape, "(1, %d, 1, %d) → (1, 1, %d, %d) → (1, 1, %d)", h, q, h, q,
             d);
    line(x, "weights × V, merge heads, W^O", shape);
    snprintf(shape, sizeof shape, "(1, 1, %d)", d);
    explain_add_norm(x, shape);
    explain_feed_forward(x, 1);
    explain_add_norm(x, shape);
    explain_same_layers(x, c->decoder_layers, 1);
    if (c->decoder_final_norm) {
        snprintf(words, sizeof words, "final %s", norm_name(c));
        line(x, words, shape);
    }
}

/* The final Linear + Softmax of a step. */
static void explain_output(const explainer *x, const ted_learn_step *st)
{
    const ted_config *c = x->t->config;
    char words[640], shape[160], best[256];
    snprintf(words, sizeof words, "Linear %d → %d (the target vocabulary): the logits",
             c->d_model, c->tgt_vocab_size);
    snprintf(shape, sizeof shape, "(1, 1, %d)", c->tgt_vocab_size);
    line(x, words, shape);
    ted_learn_show_token(ted_target_token(x->t->model, st->best.id), best, sizeof best);
    snprintf(words, sizeof words, "Softmax: p = exp(logit) / Σ exp(logits); the largest logit, "
             "%.3f for '%s', gives p = %.4f", st->best.logit, best, st->best.p);
    line(x, words, shape);
}

void ted_learn_explain_step(const ted_learn_trace *t, int step, ted_learn_explain_fn *emit,
                            void *data)
{
    const explainer x0 = {t, emit, data}, *x = &x0;
    const ted_config *c = t->config;
    const ted_learn_step *st = &t->steps[step];
    char title[64], words[640], shape[160], tok[256];
    ted_learn_show_token(ted_target_token(t->model, st->input), tok, sizeof tok);
    snprintf(title, sizeof title, "how step %d was computed", step + 1);
    snprintf(words, sizeof words, ": the decoder reads '%s' at position %d, one new position "
             "(Seq 1); the earlier ones are cached", tok, step);
    heading(x, title, words);
    if (c->zero_start_embedding && step == 0)
        snprintf(words, sizeof words, "a zero vector (the first step reads no embedding) + "
                 "positional encoding of position 0");
    else if (c->positional_layout == TED_POSITIONS_RELATIVE)
        snprintf(words, sizeof words, "output embedding of '%s'%s (no positional encoding: "
                 "position %d enters as a bias on the self-attention scores)", tok,
                 c->scale_embedding ? " × √Embedding Size" : "", step);
    else
        snprintf(words, sizeof words, "output embedding of '%s'%s + positional encoding of "
                 "position %d", tok, c->scale_embedding ? " × √Embedding Size" : "", step);
    snprintf(shape, sizeof shape, "(1, 1, %d)", c->d_model);
    line(x, words, shape);
    if (c->decoder_layer == TED_DECODER_LAYER_SSRU)
        explain_ssru(x, step);
    else
        explain_masked_self_attention(x, step);
    explain_cross_attention(x);
    explain_output(x, st);
}
