/* The decoding trace of `ted step`, `ted attention` and ted serve's
 * explorer, the explanation of each step's computation, and the shared
 * text helpers. The session runs the model through the public API, and the
 * final Softmax is the decoding strategies' own (the softmax of
 * layers/softmax.h, ted_ban_tokens, ted_top_k): this file only copies out
 * what they show. */
#include "cli/learn.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/error.h"
#include "layers/softmax.h"

ted_status learn_start(learn_trace *t, const ted_model *model, const char *text,
                       int max_length, int top_k, int *unknown, ted_error *err)
{
    *t = (learn_trace){.model = model, .config = ted_model_config(model), .command = "learn"};
    const ted_config *c = t->config;
    *unknown = 0;
    if (ted_encode_source(model, text, &t->source, &t->source_len, unknown, err) != TED_OK)
        return err->status;
    if (t->source_len <= c->source_bos + c->source_eos)
        return ted_fail(err, TED_ERR_INPUT, "the sentence is empty");
    if (t->source_len > c->max_positions)
        return ted_fail(err, TED_ERR_INPUT, "%d tokens, more than the model's max_positions (%d)",
                        t->source_len, c->max_positions);

    int allowed = c->tgt_vocab_size - c->banned_id_count;
    t->top_k = top_k < 1 ? 1 : top_k < allowed ? top_k : allowed;
    t->max_steps = ted_max_target_length(model, t->source_len, max_length);
    size_t S = (size_t)t->source_len, h = (size_t)c->heads, V = (size_t)c->tgt_vocab_size;
    t->steps = calloc((size_t)t->max_steps, sizeof *t->steps);
    t->probs = malloc(V * sizeof *t->probs);
    t->allowed = malloc(V * sizeof *t->allowed);
    t->top_ids = malloc((size_t)t->top_k * sizeof *t->top_ids);
    t->encoder = malloc((size_t)c->encoder_layers * h * S * S * sizeof *t->encoder);
    if (!t->steps || !t->probs || !t->allowed || !t->top_ids || !t->encoder)
        return ted_fail(err, TED_ERR_NOMEM, "out of memory");

    const int *sources[1] = {t->source};
    if (ted_session_new(model, &t->session, err) != TED_OK)
        return err->status;
    ted_session_keep_attention(t->session, true);
    if (ted_session_encode(t->session, sources, &t->source_len, 1, t->max_steps, err) != TED_OK)
        return err->status;

    for (int l = 0; l < c->encoder_layers; l++) {
        ted_attention_view v;
        if (ted_session_attention(t->session, TED_ENCODER_SELF_ATTENTION, l, 0, &v, err))
            return err->status;
        float *out = t->encoder + (size_t)l * h * S * S;
        for (int head = 0; head < v.heads; head++)
            for (int i = 0; i < v.queries; i++)
                memcpy(out + ((size_t)head * S + i) * S,
                       v.weights + ((size_t)head * v.queries + i) * v.stride,
                       S * sizeof *out);
    }
    return TED_OK;
}

int learn_begin(learn_trace *t, const ted_model *model, const char *command, const char *text,
                int max_length, int top_k)
{
    ted_error err = {0};
    int unknown = 0;
    ted_status status = learn_start(t, model, text, max_length, top_k, &unknown, &err);
    t->command = command;
    if (!status && unknown > 0) {
        char shown_as[256];
        snprintf(shown_as, sizeof shown_as, "shown as %s",
                 ted_source_token(model, t->config->unk_id));
        cli_report_unknown(model, NULL, 0, text, t->source, t->source_len, unknown, shown_as);
    }
    return status ? cli_error("%s: %s", command, err.message) : 0;
}

/* The final Softmax of a step: the probabilities of every token into
 * t->probs, and the top_k tokens that are not banned, most likely first;
 * ties go to the lower id, as in greedy decoding. */
static void rank(learn_trace *t, const float *logits, learn_step *s)
{
    int vocab = t->config->tgt_vocab_size;
    memcpy(t->probs, logits, (size_t)vocab * sizeof *t->probs);
    ted_softmax(t->probs, vocab);
    memcpy(t->allowed, logits, (size_t)vocab * sizeof *t->allowed);
    ted_ban_tokens(t->model, t->allowed);
    int n = ted_top_k(t->allowed, vocab, t->top_k, t->top_ids, NULL);
    for (int k = 0; k < n; k++)
        s->top[k] = (learn_candidate){t->top_ids[k], t->probs[t->top_ids[k]],
                                      logits[t->top_ids[k]]};
    s->best = s->top[0];
}

ted_status learn_advance(learn_trace *t, int force, ted_error *err)
{
    const ted_config *c = t->config;
    if (t->finished || t->count >= t->max_steps)
        return ted_fail(err, TED_ERR_ARGUMENT, "decoding is over");
    learn_step *s = &t->steps[t->count];
    size_t h = (size_t)c->heads, L = (size_t)c->decoder_layers, S = (size_t)t->source_len;
    size_t keys = (size_t)t->count + 1;
    s->top = malloc((size_t)t->top_k * sizeof *s->top);
    s->self = malloc(L * h * keys * sizeof *s->self);
    s->cross = malloc(L * h * S * sizeof *s->cross);
    if (!s->top || !s->self || !s->cross)
        return ted_fail(err, TED_ERR_NOMEM, "out of memory");

    s->input = t->count == 0 ? c->bos_id : t->steps[t->count - 1].chosen;
    const float *logits;
    if (ted_session_step(t->session, &s->input, &logits, err) != TED_OK)
        return err->status;
    rank(t, logits, s);
    s->forced = force >= 0;
    s->chosen = s->forced ? force : s->best.id;
    s->taken = (learn_candidate){s->chosen, t->probs[s->chosen], logits[s->chosen]};

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
    t->count++;
    t->finished = s->chosen == c->eos_id || t->count >= t->max_steps;
    return TED_OK;
}

int learn_next(learn_trace *t, int force)
{
    ted_error err = {0};
    if (learn_advance(t, force, &err) != TED_OK)
        return cli_error("%s: %s", t->command, err.message);
    return 0;
}

void learn_end(learn_trace *t)
{
    if (t->steps)
        for (int i = 0; i < t->max_steps; i++) {
            free(t->steps[i].top);
            free(t->steps[i].self);
            free(t->steps[i].cross);
        }
    free(t->steps);
    free(t->probs);
    free(t->allowed);
    free(t->top_ids);
    free(t->encoder);
    free(t->source);
    ted_session_free(t->session);
    *t = (learn_trace){0};
}

/* ---- the computation, in the words of multi-head attention ---------------- */

/* An explanation goes out through `emit` one piece at a time; these carry
 * the emitter along. */
typedef struct explainer {
    const learn_trace *t;
    learn_explain_fn *emit;
    void *data;
} explainer;

static void part(const explainer *x, const char *title, const char *words)
{
    x->emit(x->data, LEARN_EXPLAIN_PART, title, words, "");
}

static void heading(const explainer *x, const char *title, const char *words)
{
    x->emit(x->data, LEARN_EXPLAIN_HEADING, title, words, "");
}

static void line(const explainer *x, const char *words, const char *shape)
{
    x->emit(x->data, LEARN_EXPLAIN_LINE, "", words, shape ? shape : "");
}

static const char *activation_name(ted_activation activation)
{
    switch (activation) {
    case TED_ACTIVATION_GELU: return "GELU";
    case TED_ACTIVATION_SILU: return "SiLU";
    default: return "ReLU";
    }
}

static void explain_add_norm(const explainer *x, const char *shape)
{
    line(x,
         x->t->config->norm_first ? "Add & Norm (pre-norm): x + sublayer(LayerNorm(x))"
                                  : "Add & Norm: LayerNorm(x + sublayer(x))",
         shape);
}

static void explain_feed_forward(const explainer *x, int seq)
{
    const ted_config *c = x->t->config;
    char words[160], shape[96];
    snprintf(words, sizeof words, "feed-forward: Linear %d → %d, %s, Linear %d → %d", c->d_model,
             c->d_ff, activation_name(c->activation), c->d_ff, c->d_model);
    snprintf(shape, sizeof shape, "(1, %d, %d) → (1, %d, %d)", seq, c->d_ff, seq, c->d_model);
    line(x, words, shape);
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

void learn_explain_encoder(const learn_trace *t, learn_explain_fn *emit, void *data)
{
    const explainer x0 = {t, emit, data}, *x = &x0;
    const ted_config *c = t->config;
    int d = c->d_model, h = c->heads, q = d / h, S = t->source_len;
    char words[200], shape[120];
    part(x, "how the encoder reads the source", " (once, before the first step)");
    snprintf(words, sizeof words, "Batch 1 · Embedding Size %d · Number of Heads %d · "
             "Query Size = %d / %d = %d", d, h, d, h, q);
    line(x, words, NULL);
    line(x, "shapes: (Batch, Seq, Embedding Size), and split into heads (Batch, Heads, Seq, "
         "Query Size)", NULL);
    snprintf(words, sizeof words, "the %d source tokens: input embedding%s + positional encoding",
             S, c->scale_embedding ? " × √Embedding Size" : "");
    snprintf(shape, sizeof shape, "(1, %d, %d)", S, d);
    line(x, words, shape);
    snprintf(words, sizeof words, "encoder layer 1 of %d", c->encoder_layers);
    heading(x, words, " — multi-head self-attention, every token over every token");
    snprintf(words, sizeof words, "Q, K, V: one Linear %d → 3 × %d, cut in three", d, d);
    snprintf(shape, sizeof shape, "Q, K, V (1, %d, %d)", S, d);
    line(x, words, shape);
    snprintf(words, sizeof words, "logical split into %d heads of Query Size %d", h, q);
    snprintf(shape, sizeof shape, "(1, %d, %d) → (1, %d, %d, %d)", S, d, h, S, q);
    line(x, words, shape);
    snprintf(words, sizeof words, "scores Q·Kᵀ / √%d, softmax over the keys", q);
    snprintf(shape, sizeof shape, "(1, %d, %d, %d)", h, S, S);
    line(x, words, shape);
    snprintf(shape, sizeof shape, "(1, %d, %d, %d)", h, S, q);
    line(x, "weights × V", shape);
    snprintf(shape, sizeof shape, "(1, %d, %d, %d) → (1, %d, %d, %d) → (1, %d, %d × %d = %d)", h,
             S, q, S, h, q, S, h, q, d);
    line(x, "merge heads", shape);
    snprintf(words, sizeof words, "output Linear W^O %d → %d", d, d);
    snprintf(shape, sizeof shape, "(1, %d, %d)", S, d);
    line(x, words, shape);
    explain_add_norm(x, shape);
    explain_feed_forward(x, S);
    explain_add_norm(x, shape);
    explain_same_layers(x, c->encoder_layers, S);
    if (c->encoder_final_norm)
        line(x, "final LayerNorm", shape);
    snprintf(words, sizeof words, "each decoder layer projects K and V from this output once");
    snprintf(shape, sizeof shape, "K, V (1, %d, %d) → (1, %d, %d, %d)", S, d, h, S, q);
    line(x, words, shape);
}

/* Layer 1's masked self-attention over positions 0..step. */
static void explain_masked_self_attention(const explainer *x, int step)
{
    const ted_config *c = x->t->config;
    int d = c->d_model, h = c->heads, q = d / h, keys = step + 1;
    char words[640], shape[160];
    snprintf(words, sizeof words, "decoder layer 1 of %d", c->decoder_layers);
    heading(x, words, " — masked multi-head self-attention");
    snprintf(words, sizeof words, "Q, K, V: one Linear %d → 3 × %d", d, d);
    snprintf(shape, sizeof shape, "Q, K, V (1, 1, %d)", d);
    line(x, words, shape);
    if (step > 0) {
        snprintf(words, sizeof words, "K and V join those of positions 0..%d (cache)", step - 1);
        snprintf(shape, sizeof shape, "K, V (1, %d, %d)", keys, d);
        line(x, words, shape);
    }
    snprintf(words, sizeof words, "logical split into %d heads of Query Size %d", h, q);
    snprintf(shape, sizeof shape, "Q (1, %d, 1, %d); K, V (1, %d, %d, %d)", h, q, h, keys, q);
    line(x, words, shape);
    snprintf(words, sizeof words, "scores Q·Kᵀ / √%d, softmax over positions 0..%d (the mask: "
             "later ones are not there yet)", q, step);
    snprintf(shape, sizeof shape, "(1, %d, 1, %d)", h, keys);
    line(x, words, shape);
    snprintf(shape, sizeof shape, "(1, %d, 1, %d) → (1, 1, %d, %d) → (1, 1, %d)", h, q, h, q, d);
    line(x, "weights × V, merge heads", shape);
    snprintf(words, sizeof words, "output Linear W^O %d → %d", d, d);
    snprintf(shape, sizeof shape, "(1, 1, %d)", d);
    line(x, words, shape);
    explain_add_norm(x, shape);
}

/* Layer 1's encoder-decoder attention, its feed-forward and the other layers. */
static void explain_cross_attention(const explainer *x)
{
    const ted_config *c = x->t->config;
    int d = c->d_model, h = c->heads, q = d / h, S = x->t->source_len;
    char words[640], shape[160];
    heading(x, "decoder layer 1, continued", " — encoder-decoder attention: Q from the decoder, "
            "K and V from the encoder's output");
    snprintf(words, sizeof words, "Q: Linear %d → %d, logical split", d, d);
    snprintf(shape, sizeof shape, "(1, 1, %d) → (1, %d, 1, %d)", d, h, q);
    line(x, words, shape);
    snprintf(words, sizeof words, "K, V of the %d source tokens (computed once)", S);
    snprintf(shape, sizeof shape, "(1, %d, %d, %d)", h, S, q);
    line(x, words, shape);
    snprintf(words, sizeof words, "scores Q·Kᵀ / √%d, softmax over the source", q);
    snprintf(shape, sizeof shape, "(1, %d, 1, %d)", h, S);
    line(x, words, shape);
    snprintf(shape, sizeof shape, "(1, %d, 1, %d) → (1, 1, %d, %d) → (1, 1, %d)", h, q, h, q, d);
    line(x, "weights × V, merge heads, W^O", shape);
    snprintf(shape, sizeof shape, "(1, 1, %d)", d);
    explain_add_norm(x, shape);
    explain_feed_forward(x, 1);
    explain_add_norm(x, shape);
    explain_same_layers(x, c->decoder_layers, 1);
    if (c->decoder_final_norm)
        line(x, "final LayerNorm", shape);
}

/* The final Linear + Softmax of a step. */
static void explain_output(const explainer *x, const learn_step *st)
{
    const ted_config *c = x->t->config;
    char words[640], shape[160], best[256];
    snprintf(words, sizeof words, "Linear %d → %d (the target vocabulary): the logits",
             c->d_model, c->tgt_vocab_size);
    snprintf(shape, sizeof shape, "(1, 1, %d)", c->tgt_vocab_size);
    line(x, words, shape);
    learn_show(ted_target_token(x->t->model, st->best.id), best, sizeof best);
    snprintf(words, sizeof words, "Softmax: p = exp(logit) / Σ exp(logits); the largest logit, "
             "%.3f for '%s', gives p = %.4f", st->best.logit, best, st->best.p);
    line(x, words, shape);
}

void learn_explain_step(const learn_trace *t, int step, learn_explain_fn *emit, void *data)
{
    const explainer x0 = {t, emit, data}, *x = &x0;
    const ted_config *c = t->config;
    const learn_step *st = &t->steps[step];
    char title[64], words[640], shape[160], tok[256];
    learn_show(ted_target_token(t->model, st->input), tok, sizeof tok);
    snprintf(title, sizeof title, "how step %d was computed", step + 1);
    snprintf(words, sizeof words, ": the decoder reads '%s' at position %d, one new position "
             "(Seq 1); the earlier ones are cached", tok, step);
    heading(x, title, words);
    snprintf(words, sizeof words, "output embedding of '%s'%s + positional encoding of "
             "position %d", tok, c->scale_embedding ? " × √Embedding Size" : "", step);
    snprintf(shape, sizeof shape, "(1, 1, %d)", c->d_model);
    line(x, words, shape);
    explain_masked_self_attention(x, step);
    explain_cross_attention(x);
    explain_output(x, st);
}

char *learn_translation(const learn_trace *t)
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

/* out[j] = rows[head][j], or the mean over heads when head == heads. */
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

void learn_encoder_row(const learn_trace *t, int layer, int head, int query, float *out)
{
    size_t S = (size_t)t->source_len, h = (size_t)t->config->heads;
    head_row(t->encoder + (size_t)layer * h * S * S + (size_t)query * S, (int)h, head, S * S,
             (int)S, out);
}

void learn_self_row(const learn_trace *t, int step, int layer, int head, float *out)
{
    size_t keys = (size_t)step + 1, h = (size_t)t->config->heads;
    head_row(t->steps[step].self + (size_t)layer * h * keys, (int)h, head, keys, (int)keys, out);
}

void learn_cross_row(const learn_trace *t, int step, int layer, int head, float *out)
{
    size_t S = (size_t)t->source_len, h = (size_t)t->config->heads;
    head_row(t->steps[step].cross + (size_t)layer * h * S, (int)h, head, S, (int)S, out);
}

bool learn_is_special(const ted_config *c, int id)
{
    return id == c->unk_id || id == c->pad_id || id == c->bos_id || id == c->eos_id;
}

/* The length of the well-formed UTF-8 character at p (1 to 4), or 0. */
static size_t utf8_char_length(const unsigned char *p)
{
    size_t n = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2
             : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;  /* overlong, a surrogate, or past U+10FFFF */
    return n;
}

/* One character of a token as shown, into `out` (room for 4 bytes);
 * returns its length there and advances *p past it. */
static size_t show_char(const unsigned char **p, char *out)
{
    size_t n = utf8_char_length(*p);
    if (n == 0 || (n == 1 && (**p < 0x20 || **p == 0x7f))) {
        *p += 1;
        out[0] = '?';  /* a control byte, or a byte that starts no character */
        return 1;
    }
    if (n == 1 && **p == ' ') {
        *p += 1;
        memcpy(out, "\xe2\x90\xa3", 3);  /* ␣ */
        return 3;
    }
    memcpy(out, *p, n);
    *p += n;
    return n;
}

const char *learn_show(const char *token, char *buf, size_t size)
{
    static const char ellipsis[] = "\xe2\x80\xa6";  /* … */
    if (size < 8) {
        if (size)
            buf[0] = '\0';
        return buf;
    }
    if (!*token) {
        snprintf(buf, size, "\xe2\x88\x85");  /* ∅ */
        return buf;
    }
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)token;
    while (*p) {
        char c[4];
        size_t len = show_char(&p, c);
        bool last = *p == '\0';
        /* keep room for the ellipsis unless this is the last character */
        if (n + len + (last ? 0 : sizeof ellipsis - 1) + 1 > size) {
            memcpy(buf + n, ellipsis, sizeof ellipsis);
            return buf;
        }
        memcpy(buf + n, c, len);
        n += len;
    }
    buf[n] = '\0';
    return buf;
}

int learn_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

void learn_pad(FILE *out, const char *s, int width)
{
    fputs(s, out);
    for (int w = learn_width(s); w < width; w++)
        fputc(' ', out);
}

/* The bar's length in eighths of a block. */
static int bar_units(double value, int width)
{
    if (!(value > 0))
        return 0;
    return (int)lround((value > 1 ? 1 : value) * width * 8);
}

int learn_bar_columns(double value, int width)
{
    int units = bar_units(value, width);
    return units / 8 + (units % 8 > 0);
}

int learn_bar(FILE *out, double value, int width)
{
    static const char *const eighths[8] = {"",
                                           "\xe2\x96\x8f", "\xe2\x96\x8e", "\xe2\x96\x8d",
                                           "\xe2\x96\x8c", "\xe2\x96\x8b", "\xe2\x96\x8a",
                                           "\xe2\x96\x89"};
    int units = bar_units(value, width);
    for (int i = 0; i < units / 8; i++)
        fputs("\xe2\x96\x88", out);  /* █ */
    fputs(eighths[units % 8], out);
    return units / 8 + (units % 8 > 0);
}

void learn_xml_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
                fputc('?', out);
            else
                fputc(*s, out);
        }
    }
}

void learn_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

bool learn_parse_int(const char *text, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}
