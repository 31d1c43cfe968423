/* The decoding trace of `ted step` and `ted attention`, and their shared
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
#include "layers/softmax.h"

int learn_begin(learn_trace *t, const ted_model *model, const char *command, const char *text,
                int max_length, int top_k)
{
    *t = (learn_trace){.model = model, .config = ted_model_config(model), .command = command};
    const ted_config *c = t->config;
    ted_error err = {0};
    int unknown = 0;
    if (ted_encode_source(model, text, &t->source, &t->source_len, &unknown, &err) != TED_OK)
        return cli_error("%s: %s", command, err.message);
    if (t->source_len <= c->source_bos + c->source_eos)
        return cli_error("%s: the sentence is empty", command);
    if (t->source_len > c->max_positions)
        return cli_error("%s: %d tokens, more than the model's max_positions (%d)", command,
                         t->source_len, c->max_positions);
    if (unknown > 0) {
        char shown_as[256];
        snprintf(shown_as, sizeof shown_as, "shown as %s",
                 ted_source_token(model, c->unk_id));
        cli_report_unknown(model, NULL, 0, text, t->source, t->source_len, unknown, shown_as);
    }

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
        return cli_error("%s: out of memory", command);

    const int *sources[1] = {t->source};
    if (ted_session_new(model, &t->session, &err) != TED_OK)
        return cli_error("%s: %s", command, err.message);
    ted_session_keep_attention(t->session, true);
    if (ted_session_encode(t->session, sources, &t->source_len, 1, t->max_steps, &err) != TED_OK)
        return cli_error("%s: %s", command, err.message);

    for (int l = 0; l < c->encoder_layers; l++) {
        ted_attention_view v;
        if (ted_session_attention(t->session, TED_ENCODER_SELF_ATTENTION, l, 0, &v, &err))
            return cli_error("%s: %s", command, err.message);
        float *out = t->encoder + (size_t)l * h * S * S;
        for (int head = 0; head < v.heads; head++)
            for (int i = 0; i < v.queries; i++)
                memcpy(out + ((size_t)head * S + i) * S,
                       v.weights + ((size_t)head * v.queries + i) * v.stride,
                       S * sizeof *out);
    }
    return 0;
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

int learn_next(learn_trace *t, int force)
{
    const ted_config *c = t->config;
    if (t->finished || t->count >= t->max_steps)
        return cli_error("%s: decoding is over", t->command);
    learn_step *s = &t->steps[t->count];
    size_t h = (size_t)c->heads, L = (size_t)c->decoder_layers, S = (size_t)t->source_len;
    size_t keys = (size_t)t->count + 1;
    s->top = malloc((size_t)t->top_k * sizeof *s->top);
    s->self = malloc(L * h * keys * sizeof *s->self);
    s->cross = malloc(L * h * S * sizeof *s->cross);
    if (!s->top || !s->self || !s->cross)
        return cli_error("%s: out of memory", t->command);

    s->input = t->count == 0 ? c->bos_id : t->steps[t->count - 1].chosen;
    const float *logits;
    ted_error err = {0};
    if (ted_session_step(t->session, &s->input, &logits, &err) != TED_OK)
        return cli_error("%s: %s", t->command, err.message);
    rank(t, logits, s);
    s->forced = force >= 0;
    s->chosen = s->forced ? force : s->best.id;
    s->taken = (learn_candidate){s->chosen, t->probs[s->chosen], logits[s->chosen]};

    for (int l = 0; l < c->decoder_layers; l++) {
        ted_attention_view self, cross;
        if (ted_session_attention(t->session, TED_DECODER_SELF_ATTENTION, l, 0, &self, &err) ||
            ted_session_attention(t->session, TED_CROSS_ATTENTION, l, 0, &cross, &err))
            return cli_error("%s: %s", t->command, err.message);
        for (size_t head = 0; head < h; head++) {
            memcpy(s->self + ((size_t)l * h + head) * keys, self.weights + head * self.stride,
                   keys * sizeof *s->self);
            memcpy(s->cross + ((size_t)l * h + head) * S, cross.weights + head * cross.stride,
                   S * sizeof *s->cross);
        }
    }
    t->count++;
    t->finished = s->chosen == c->eos_id || t->count >= t->max_steps;
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
