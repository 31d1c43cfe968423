/* ted attention: the attention weights of a greedy translation as pictures.
 * One decode through the session API with the weights kept; encoder
 * self-attention comes from the encode, decoder masked self-attention and
 * encoder-decoder attention one row per step. Writes a self-contained HTML
 * page (every layer and head as a heatmap, a layer/head selector, the top-k
 * candidates of every step), one heatmap as SVG, or every number as JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/text.h"
#include "ted/learn.h"

static const char usage[] =
    "usage: ted attention -m DIR [OPTIONS] TEXT\n"
    "\n"
    "Translates TEXT greedily with every attention weight kept, and writes:\n"
    "  --html FILE   a self-contained page (no network): heatmaps of every layer and\n"
    "                head for encoder self-attention, decoder masked self-attention\n"
    "                and encoder-decoder attention, tokens on both axes, a layer/head\n"
    "                selector, and the top-k candidates of every step. Open\n"
    "                FILE#layer=2&head=1 to start on a heatmap, FILE#all for all.\n"
    "  --svg FILE    one heatmap, chosen by --kind, --layer and --head\n"
    "  --json FILE   all the numbers: tokens, steps with their top-k, and the\n"
    "                weights as [layer][head][query][key]\n"
    "At least one is needed; FILE '-' is standard output.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR     the model directory\n"
    "  --kind KIND         the SVG heatmap: encoder (self-attention), decoder (masked\n"
    "                      self-attention) or cross (encoder-decoder; the default)\n"
    "  --layer N           its layer, from 1 (default: the last)\n"
    "  --head H            its head, from 1, or 'mean' (the default)\n"
    "  --top K             candidates kept per step (default 5)\n"
    "  --max-length N      at most N steps (default: the model's decoding rule)\n"
    "  --source-lang CODE  the source language (`ted info` lists a model's)\n"
    "  --target-lang CODE  the target language, required when the model\n"
    "                      translates into several\n"
    "  -h, --help          show this help\n"
    "\n"
    "Every output grows with the square of the sentence's length, so the sentence\n"
    "and the decode are capped: at most 64 source tokens and 64 steps with --html\n"
    "or --svg, 256 with --json alone (a longer sentence is refused; a decode that\n"
    "reaches the cap stops there, as with --max-length). A FILE that exists is\n"
    "replaced once it is written, keeping its permissions; a symbolic link's\n"
    "target is written; a device or FIFO is written directly.\n";

enum kind { KIND_ENCODER, KIND_DECODER, KIND_CROSS, KIND_COUNT };

static const char *const kind_names[KIND_COUNT] = {"encoder", "decoder", "cross"};
static const char *const kind_titles[KIND_COUNT] = {
    "Encoder self-attention", "Decoder masked self-attention", "Encoder-decoder attention"};

/* Labels of a trace's tokens, as shown. */
typedef struct labels {
    char **source;   /* (source_len) */
    char **inputs;   /* (count): what each step read */
    char **chosen;   /* (count): what each step took */
    char **steps;    /* (count): "read → took", the row of a decoder heatmap */
} labels;

typedef struct heatmap {
    enum kind kind;
    int layer, head;          /* head == heads: the mean */
    int rows, cols;
    float *w;                 /* (rows, cols) */
    char *const *row_labels;
    char *const *col_labels;
} heatmap;

static char *dup_shown(const char *token)
{
    char buf[512];
    return strdup(ted_learn_show_token(token, buf, sizeof buf));
}

static void free_list(char **list, int n)
{
    for (int i = 0; list && i < n; i++)
        free(list[i]);
    free(list);
}

static void free_labels(labels *l, const ted_learn_trace *t)
{
    free_list(l->source, t->source_len);
    free_list(l->inputs, t->count);
    free_list(l->chosen, t->count);
    free_list(l->steps, t->count);
}

static bool make_labels(labels *l, const ted_learn_trace *t)
{
    int n = t->count > 0 ? t->count : 1;
    l->source = calloc((size_t)t->source_len, sizeof *l->source);
    l->inputs = calloc((size_t)n, sizeof *l->inputs);
    l->chosen = calloc((size_t)n, sizeof *l->chosen);
    l->steps = calloc((size_t)n, sizeof *l->steps);
    if (!l->source || !l->inputs || !l->chosen || !l->steps)
        return false;
    for (int j = 0; j < t->source_len; j++)
        if (!(l->source[j] = dup_shown(ted_source_token(t->model, t->source[j]))))
            return false;
    for (int i = 0; i < t->count; i++) {
        l->inputs[i] = dup_shown(ted_target_token(t->model, t->steps[i].input));
        l->chosen[i] = dup_shown(ted_target_token(t->model, t->steps[i].chosen));
        if (!l->inputs[i] || !l->chosen[i])
            return false;
        size_t size = strlen(l->inputs[i]) + strlen(l->chosen[i]) + 8;
        if (!(l->steps[i] = malloc(size)))
            return false;
        snprintf(l->steps[i], size, "%s \xe2\x86\x92 %s", l->inputs[i], l->chosen[i]);
    }
    return true;
}

static int kind_layers(const ted_config_architecture *c, enum kind kind)
{
    return kind == KIND_ENCODER ? c->encoder_layers : c->decoder_layers;
}

/* Fills h->w (allocated by the caller with room for the largest map). The
 * decoder's self-attention is square over the steps: row i is step i's
 * query over positions 0..i, and the masked positions after i are 0. */
static void fill_heatmap(heatmap *h, const ted_learn_trace *t, const labels *l, enum kind kind,
                         int layer, int head)
{
    *h = (heatmap){.kind = kind, .layer = layer, .head = head, .w = h->w};
    switch (kind) {
    case KIND_ENCODER:
        h->rows = h->cols = t->source_len;
        h->row_labels = h->col_labels = l->source;
        for (int i = 0; i < h->rows; i++)
            ted_learn_encoder_row(t, layer, head, i, h->w + (size_t)i * h->cols);
        break;
    case KIND_DECODER:
        h->rows = h->cols = t->count;
        h->row_labels = l->steps;
        h->col_labels = l->inputs;
        for (int i = 0; i < h->rows; i++) {
            float *row = h->w + (size_t)i * h->cols;
            memset(row, 0, (size_t)h->cols * sizeof *row);
            ted_learn_self_row(t, i, layer, head, row);
        }
        break;
    case KIND_CROSS:
        h->rows = t->count;
        h->cols = t->source_len;
        h->row_labels = l->steps;
        h->col_labels = l->source;
        for (int i = 0; i < h->rows; i++)
            ted_learn_cross_row(t, i, layer, head, h->w + (size_t)i * h->cols);
        break;
    default:
        break;
    }
}

/* ---- SVG ------------------------------------------------------------------ */

/* A white-to-blue scale for a weight in [0, 1]. */
static void weight_colour(float w, int rgb[3])
{
    static const int stops[5][3] = {
        {247, 251, 255}, {198, 219, 239}, {107, 174, 214}, {33, 113, 181}, {8, 48, 107}};
    if (!(w > 0))
        w = 0;
    if (w > 1)
        w = 1;
    float x = w * 4;
    int i = x >= 4 ? 3 : (int)x;
    float f = x - i;
    for (int k = 0; k < 3; k++)
        rgb[k] = (int)(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f + 0.5f);
}

static int longest(char *const *list, int n)
{
    int w = 0;
    for (int i = 0; i < n; i++) {
        int k = cli_width(list[i]);
        w = k > w ? k : w;
    }
    return w;
}

enum { CELL = 28, CHAR_W = 7 };

static const char *head_name(int head, int heads, char *buf, size_t size)
{
    if (head >= heads)
        snprintf(buf, size, "mean of %d heads", heads);
    else
        snprintf(buf, size, "head %d", head + 1);
    return buf;
}

/* One heatmap as an <svg> element: row labels on the left, column labels
 * slanted on top, one square per weight with its value as a tooltip and,
 * when it is 0.1 or more, as text. `standalone` adds the XML namespace and
 * a title line. */
static void write_svg(FILE *out, const heatmap *h, const ted_config_architecture *c,
                      bool standalone)
{
    char head[64];
    int left = longest(h->row_labels, h->rows) * CHAR_W + 12;
    int slant = (int)(longest(h->col_labels, h->cols) * CHAR_W * 0.72) + 10;
    int title = standalone ? 24 : 0;
    int top = title + slant;
    int width = left + h->cols * CELL + slant;
    int height = top + h->rows * CELL + 4;
    fprintf(out, "<svg class=\"heatmap\" %swidth=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "font-family=\"sans-serif\" font-size=\"12\" role=\"img\">",
            standalone ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", width, height, width,
            height);
    if (standalone) {
        fprintf(out, "\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>");
        fprintf(out, "\n<text x=\"4\" y=\"16\" font-size=\"14\" font-weight=\"bold\">%s, "
                     "layer %d, %s</text>",
                kind_titles[h->kind], h->layer + 1, head_name(h->head, c->heads, head, sizeof head));
    }
    for (int j = 0; j < h->cols; j++) {
        double x = left + j * CELL + CELL / 2.0 - 2, y = top - 6;
        fprintf(out, "\n<text class=\"col\" x=\"%.1f\" y=\"%.1f\" transform=\"rotate(-45 %.1f "
                     "%.1f)\">", x, y, x, y);
        cli_xml_escaped(out, h->col_labels[j]);
        fputs("</text>", out);
    }
    for (int i = 0; i < h->rows; i++) {
        fprintf(out, "\n<text class=\"row\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", left - 6,
                top + i * CELL + CELL / 2 + 4);
        cli_xml_escaped(out, h->row_labels[i]);
        fputs("</text>", out);
        for (int j = 0; j < h->cols; j++) {
            float w = h->w[(size_t)i * h->cols + j];
            int x = left + j * CELL, y = top + i * CELL;
            bool masked = h->kind == KIND_DECODER && j > i;
            int rgb[3] = {232, 232, 232};
            if (!masked)
                weight_colour(w, rgb);
            fprintf(out, "\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                         "fill=\"#%02x%02x%02x\" stroke=\"white\"><title>",
                    x, y, CELL, CELL, rgb[0], rgb[1], rgb[2]);
            cli_xml_escaped(out, h->row_labels[i]);
            fputs(" / ", out);
            cli_xml_escaped(out, h->col_labels[j]);
            if (masked)
                fputs(": masked (not there yet)</title></rect>", out);
            else
                fprintf(out, ": %.4f</title></rect>", w);
            if (!masked && w >= 0.1f)
                fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\" "
                             "fill=\"%s\" pointer-events=\"none\">%.2f</text>",
                        x + CELL / 2, y + CELL / 2 + 3, w > 0.55f ? "white" : "#123", w);
        }
    }
    fputs("\n</svg>", out);
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_strings(FILE *out, char *const *list, int n)
{
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", out);
        cli_json_string(out, list[i]);
    }
    fputc(']', out);
}

static void json_weights(FILE *out, const ted_learn_trace *t, const labels *l, enum kind kind,
                         heatmap *h)
{
    const ted_config_architecture c = ted_config_get_view(t->config).model;
    fputc('[', out);
    for (int layer = 0; layer < kind_layers(&c, kind); layer++) {
        fputs(layer ? ",\n  [" : "\n  [", out);
        for (int head = 0; head < c.heads; head++) {
            fill_heatmap(h, t, l, kind, layer, head);
            fputs(head ? ",\n   [" : "\n   [", out);
            for (int i = 0; i < h->rows; i++) {
                fputs(i ? ", [" : "[", out);
                for (int j = 0; j < h->cols; j++)
                    fprintf(out, j ? ", %.9g" : "%.9g", h->w[(size_t)i * h->cols + j]);
                fputc(']', out);
            }
            fputc(']', out);
        }
        fputc(']', out);
    }
    fputc(']', out);
}

static void write_json(FILE *out, const ted_learn_trace *t, const labels *l, const char *text,
                       const char *translation, heatmap *h)
{
    const ted_config_architecture c = ted_config_get_view(t->config).model;
    fprintf(out, "{\n\"config\": {\"embedding_size\": %d, \"heads\": %d, \"query_size\": %d, "
                 "\"encoder_layers\": %d, \"decoder_layers\": %d, \"d_ff\": %d, "
                 "\"target_vocabulary\": %d},\n",
            c.d_model, c.heads, c.query_size, c.encoder_layers, c.decoder_layers,
            c.d_ff, c.tgt_vocab_size);
    fputs("\"source\": ", out);
    cli_json_string(out, text);
    fputs(",\n\"translation\": ", out);
    cli_json_string(out, translation);
    fputs(",\n\"source_tokens\": ", out);
    json_strings(out, l->source, t->source_len);
    fputs(",\n\"decoder_inputs\": ", out);
    json_strings(out, l->inputs, t->count);
    fputs(",\n\"steps\": [", out);
    for (int i = 0; i < t->count; i++) {
        const ted_learn_step *s = &t->steps[i];
        fprintf(out, "%s\n {\"step\": %d, \"input\": ", i ? "," : "", i + 1);
        cli_json_string(out, l->inputs[i]);
        fputs(", \"chosen\": ", out);
        cli_json_string(out, l->chosen[i]);
        fprintf(out, ", \"id\": %d, \"p\": %.9g, \"logit\": %.9g, \"top\": [", s->chosen,
                s->taken.p, s->taken.logit);
        for (int k = 0; k < t->top_k; k++) {
            char buf[512];
            fputs(k ? ", {\"token\": " : "{\"token\": ", out);
            cli_json_string(out, ted_learn_show_token(ted_target_token(t->model, s->top[k].id), buf,
                                              sizeof buf));
            fprintf(out, ", \"id\": %d, \"p\": %.9g, \"logit\": %.9g", s->top[k].id,
                    s->top[k].p, s->top[k].logit);
            ted_learn_change_words(t, i, s->top[k].id, &s->changes[k], buf, sizeof buf);
            if (*buf) {  /* what a rule on the scores did to it */
                fputs(", \"why\": ", out);
                cli_json_string(out, buf);
            }
            fputc('}', out);
        }
        fputs("]}", out);
    }
    fputs("\n],\n\"encoder_self_attention\": ", out);
    json_weights(out, t, l, KIND_ENCODER, h);
    fputs(",\n\"decoder_self_attention\": ", out);
    json_weights(out, t, l, KIND_DECODER, h);
    fputs(",\n\"cross_attention\": ", out);
    json_weights(out, t, l, KIND_CROSS, h);
    fputs("\n}\n", out);
}

/* ---- HTML ----------------------------------------------------------------- */

static const char html_style[] =
    "body{font-family:sans-serif;margin:24px 32px;color:#1b1f24;background:#fff;max-width:1400px}"
    "h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:0 0 4px}"
    "p{margin:4px 0 8px;line-height:1.4}.note{color:#555;font-size:13px}"
    ".tok{display:inline-block;padding:1px 5px;margin:1px;border-radius:4px;background:#eef3f8;"
    "font-family:monospace;font-size:14px}.tok.special{background:#f3e8f7;color:#7a2a8c}"
    ".controls{position:sticky;top:0;background:#fff;padding:8px 0;border-bottom:1px solid #ddd;"
    "z-index:1}.controls button{font-size:13px;margin:2px;padding:3px 10px;border:1px solid #9ab;"
    "border-radius:4px;background:#f6f8fa;cursor:pointer}"
    ".controls button.on{background:#2171b5;color:#fff;border-color:#2171b5}"
    ".controls span{display:inline-block;margin-right:18px}"
    "section{margin:18px 0;padding-top:6px}.maps{display:flex;flex-wrap:wrap;gap:10px 18px;"
    "align-items:flex-start}figure{margin:0}figcaption{font-size:12px;color:#444}"
    "figure[hidden]{display:none}.all .kinds{display:block}.all .maps{display:grid;"
    "grid-template-columns:repeat(var(--cols),auto);justify-content:start}"
    ".all .maps figure svg{height:auto;max-width:250px}"
    ".legend{display:inline-block;width:160px;height:10px;vertical-align:middle;"
    "background:linear-gradient(to right,#f7fbff,#c6dbef,#6baed6,#2171b5,#08306b);"
    "border:1px solid #ccc}.kinds{display:grid;grid-template-columns:repeat(auto-fill,"
    "minmax(440px,1fr));gap:0 32px;align-items:start}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;border-bottom:1px solid "
    "#e4e4e4;text-align:left;vertical-align:middle}th{background:#f6f8fa}"
    ".cand{display:inline-block;min-width:92px;margin-right:6px;font-family:monospace}"
    ".cand i{display:block;height:4px;background:#6baed6}.cand.taken b{color:#1a7f37}"
    ".cand.banned b{text-decoration:line-through;color:#a3342b}"
    ".forced{color:#9a6700}.missing{color:#888;font-size:13px}";

static const char html_script[] =
    "(function(){var L=0,H='mean',all=false;"
    "function parse(){var h=location.hash.replace(/^#/,'');all=false;"
    "h.split('&').forEach(function(p){var kv=p.split('=');"
    "if(kv[0]==='all')all=true;else if(kv[0]==='layer'&&+kv[1]>=1)L=+kv[1]-1;"
    "else if(kv[0]==='head'&&kv[1])H=kv[1]==='mean'?'mean':String(+kv[1]-1);});}"
    "function show(){document.body.classList.toggle('all',all);"
    "document.querySelectorAll('section.kind').forEach(function(s){var n=0;"
    "s.querySelectorAll('figure.hm').forEach(function(f){var on=all||(+f.dataset.layer===L&&"
    "f.dataset.head===H);f.hidden=!on;if(on)n++;});"
    "var m=s.querySelector('.missing');if(m)m.hidden=n>0;});"
    "document.querySelectorAll('button[data-layer]').forEach(function(b){"
    "b.classList.toggle('on',!all&&+b.dataset.layer===L);});"
    "document.querySelectorAll('button[data-head]').forEach(function(b){"
    "b.classList.toggle('on',!all&&b.dataset.head===H);});"
    "var a=document.getElementById('every');if(a)a.classList.toggle('on',all);"
    "document.body.dataset.ready='1';}"
    "document.querySelectorAll('button[data-layer]').forEach(function(b){b.onclick=function(){"
    "all=false;L=+b.dataset.layer;location.hash='layer='+(L+1)+'&head='+(H==='mean'?'mean':+H+1);"
    "show();};});"
    "document.querySelectorAll('button[data-head]').forEach(function(b){b.onclick=function(){"
    "all=false;H=b.dataset.head;location.hash='layer='+(L+1)+'&head='+(H==='mean'?'mean':+H+1);"
    "show();};});"
    "var a=document.getElementById('every');if(a)a.onclick=function(){all=!all;"
    "location.hash=all?'all':'layer='+(L+1)+'&head='+(H==='mean'?'mean':+H+1);show();};"
    "L=+document.body.dataset.layer;parse();show();"
    "window.addEventListener('hashchange',function(){parse();show();});})();";

static void html_token(FILE *out, const ted_config *c, int id, const char *shown)
{
    fprintf(out, "<span class=\"tok%s\">", ted_learn_is_special(c, id) ? " special" : "");
    cli_xml_escaped(out, shown);
    fputs("</span>", out);
}

static const char *const kind_notes[KIND_COUNT] = {
    "Row: a source token's query; column: the source token (key) it attends to. Every row is "
    "a softmax over the keys and sums to 1.",
    "Row: the step that read the first token and chose the second; column: the tokens the "
    "decoder had read by then. Grey cells are masked: those positions do not exist yet.",
    "Row: the step that read the first token and chose the second; column: the source token "
    "its query attends to, through the keys and values the encoder made."};

/* The page's title, the sentence, its translation and the model's sizes. */
static void html_head(FILE *out, const ted_learn_trace *t, const labels *l, const char *model_dir,
                      const char *translation)
{
    const ted_config_architecture c = ted_config_get_view(t->config).model;
    int d = c.d_model, heads = c.heads;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>ted attention: ",
          out);
    cli_xml_escaped(out, translation);
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body data-layer=\"%d\">\n", html_style,
            c.decoder_layers - 1);
    fputs("<h1>Inside the attention heads</h1>\n<p>source: ", out);
    for (int j = 0; j < t->source_len; j++)
        html_token(out, t->config, t->source[j], l->source[j]);
    fputs("</p>\n<p>translation: ", out);
    for (int i = 0; i < t->count; i++)
        html_token(out, t->config, t->steps[i].chosen, l->chosen[i]);
    fputs("</p>\n<p class=\"note\">model ", out);
    cli_xml_escaped(out, model_dir);
    fprintf(out, ": Embedding Size %d, Number of Heads %d, Query Size = %d / %d = %d (the "
                 "logical split: each head attends with its own %d of the %d numbers), "
                 "%d encoder and %d decoder layers, feed-forward %d, target vocabulary %d. "
                 "Greedy decoding, %d steps. Weights: 0 <span class=\"legend\"></span> 1.</p>\n",
            d, heads, d, heads, d / heads, d / heads, d, c.encoder_layers, c.decoder_layers,
            c.d_ff, c.tgt_vocab_size, t->count);
}

/* The layer and head buttons. */
static void html_controls(FILE *out, const ted_config *config)
{
    ted_config_architecture m = ted_config_get_view(config).model;
    int layers = m.encoder_layers > m.decoder_layers ? m.encoder_layers : m.decoder_layers;
    fputs("<div class=\"controls\"><span>layer ", out);
    for (int layer = 0; layer < layers; layer++)
        fprintf(out, "<button data-layer=\"%d\">%d</button>", layer, layer + 1);
    fputs("</span><span>head <button data-head=\"mean\">mean</button>", out);
    for (int head = 0; head < m.heads; head++)
        fprintf(out, "<button data-head=\"%d\">%d</button>", head, head + 1);
    fputs("</span><span><button id=\"every\">every layer and head</button></span></div>\n", out);
}

/* Every heatmap of one kind: each layer's heads and their mean. */
static void html_kind(FILE *out, const ted_learn_trace *t, const labels *l, enum kind kind,
                      heatmap *h)
{
    const ted_config_architecture c = ted_config_get_view(t->config).model;
    int heads = c.heads;
    fprintf(out, "<section class=\"kind\" id=\"%s\">\n<h2>%s</h2>\n<p class=\"note\">%s</p>\n"
                 "<p class=\"missing\" hidden>No such layer here.</p>\n<div class=\"maps\" "
                 "style=\"--cols:%d\">\n",
            kind_names[kind], kind_titles[kind], kind_notes[kind], heads + 1);
    for (int layer = 0; layer < kind_layers(&c, kind); layer++)
        for (int head = 0; head <= heads; head++) {
            char name[64], key[16];
            if (head < heads)
                snprintf(key, sizeof key, "%d", head);
            else
                snprintf(key, sizeof key, "mean");
            fill_heatmap(h, t, l, kind, layer, head);
            fprintf(out, "<figure class=\"hm\" data-kind=\"%s\" data-layer=\"%d\" "
                         "data-head=\"%s\"%s><figcaption>layer %d, %s</figcaption>",
                    kind_names[kind], layer, key,
                    layer == c.decoder_layers - 1 && head == heads ? "" : " hidden",
                    layer + 1, head_name(head, heads, name, sizeof name));
            write_svg(out, h, &c, false);
            fputs("</figure>\n", out);
        }
    fputs("</div>\n</section>\n", out);
}

/* Every step's Linear + Softmax: the token read, the token chosen, the top-k. */
static void html_steps(FILE *out, const ted_learn_trace *t, const labels *l)
{
    const ted_config_architecture c = ted_config_get_view(t->config).model;
    fprintf(out, "<section id=\"steps\">\n<h2>Every step: Linear + Softmax over %d target "
                 "tokens, the %d most likely</h2>\n<table>\n<tr><th>step</th><th>reads</th>"
                 "<th>chooses</th><th>p</th><th>candidates</th></tr>\n",
            c.tgt_vocab_size, t->top_k);
    for (int i = 0; i < t->count; i++) {
        const ted_learn_step *s = &t->steps[i];
        fprintf(out, "<tr class=\"step\"><td>%d</td><td>", i + 1);
        html_token(out, t->config, s->input, l->inputs[i]);
        fputs("</td><td>", out);
        html_token(out, t->config, s->chosen, l->chosen[i]);
        fprintf(out, "</td><td>%.4f</td><td>", s->taken.p);
        for (int k = 0; k < t->top_k; k++) {
            char buf[512], why[512];
            ted_learn_change_words(t, i, s->top[k].id, &s->changes[k], why, sizeof why);
            bool banned = *why && s->changes[k].score == -INFINITY;
            fprintf(out, "<span class=\"cand%s%s\"", s->top[k].id == s->chosen ? " taken" : "",
                    banned ? " banned" : "");
            if (*why) {  /* what a rule on the scores did to it, on hover */
                fputs(" title=\"", out);
                cli_xml_escaped(out, why);
                fputc('"', out);
            }
            fputs("><b>", out);
            cli_xml_escaped(out, ted_learn_show_token(ted_target_token(t->model, s->top[k].id), buf,
                                              sizeof buf));
            fprintf(out, "</b> %.3f<i style=\"width:%.0fpx\"></i></span>", s->top[k].p,
                    s->top[k].p * 90);
        }
        fputs("</td></tr>\n", out);
    }
    fputs("</table>\n</section>\n", out);
}

static void write_html(FILE *out, const ted_learn_trace *t, const labels *l, const char *model_dir,
                       const char *translation, heatmap *h)
{
    html_head(out, t, l, model_dir, translation);
    html_controls(out, t->config);
    fputs("<div class=\"kinds\">\n", out);
    for (int kind = 0; kind < KIND_COUNT; kind++)
        html_kind(out, t, l, (enum kind)kind, h);
    fputs("</div>\n", out);
    html_steps(out, t, l);
    fputs("<script>", out);
    fputs(html_script, out);
    fputs("</script>\n</body>\n</html>\n", out);
}

/* ---- the command ------------------------------------------------------------ */

typedef struct outputs {
    const char *html, *svg, *json;
} outputs;

typedef struct attention_options {
    const char *model_dir, *text;
    outputs out;
    enum kind kind;
    int layer;  /* 1-based; 0: the last */
    int head;   /* 1-based; 0: the mean */
    int top_k, max_length;
    ted_languages languages;
} attention_options;

static int write_all(const ted_learn_trace *t, const attention_options *o)
{
    const ted_config_architecture c = ted_config_get_view(t->config).model;
    int status = 0;
    labels l = {0};
    size_t largest = (size_t)(t->source_len > t->count ? t->source_len : t->count);
    heatmap h = {.w = malloc(largest * largest * sizeof(float))};
    char *translation = ted_learn_translation(t);
    if (!h.w || !translation || !make_labels(&l, t))
        status = cli_error("attention: out of memory");
    struct {
        const char *path;
        int what;
    } files[3] = {{o->out.html, 0}, {o->out.svg, 1}, {o->out.json, 2}};
    for (int f = 0; f < 3 && !status; f++) {
        if (!files[f].path)
            continue;
        cli_output output;
        if ((status = cli_output_open(&output, files[f].path, "attention")))
            break;
        FILE *out = output.file;
        if (files[f].what == 0) {
            write_html(out, t, &l, o->model_dir, translation, &h);
        } else if (files[f].what == 1) {
            int layer = o->layer ? o->layer - 1 : kind_layers(&c, o->kind) - 1;
            fill_heatmap(&h, t, &l, o->kind, layer, o->head ? o->head - 1 : c.heads);
            fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
            write_svg(out, &h, &c, true);
            fputc('\n', out);
        } else {
            write_json(out, t, &l, o->text, translation, &h);
        }
        status = cli_output_close(&output, status);
    }
    free_labels(&l, t);
    free(h.w);
    free(translation);
    return status;
}

/* --kind encoder|decoder|cross */
static void take_kind(cli_args *a, attention_options *o)
{
    int k = 0;
    while (k < KIND_COUNT && strcmp(a->value, kind_names[k]))
        k++;
    if (k == KIND_COUNT) {
        a->failed = true;
        cli_error("attention: --kind '%s': use encoder, decoder or cross", a->value);
    }
    o->kind = (enum kind)k;
}

/* Every output holds layers x heads x length^2 weights of each kind of
 * attention, about 120 bytes a weight in a picture and 12 in JSON, so the
 * sentence and the decode are capped: a Transformer-base page of 64 source
 * tokens and 64 steps is about 80 MB. */
enum { PICTURE_MAX_TOKENS = 64, JSON_MAX_TOKENS = 256 };

/* The decode's length: the model's rule or --max-length, within the cap;
 * a longer sentence is refused. */
static int capped_length(const ted_model *model, const attention_options *o, int source_len,
                         int *max_length)
{
    bool picture = o->out.html || o->out.svg;
    int cap = picture ? PICTURE_MAX_TOKENS : JSON_MAX_TOKENS;
    const char *what = picture ? "--html and --svg draw" : "--json holds";
    if (source_len > cap)
        return cli_error("attention: the sentence is %d tokens; %s at most %d (the output "
                         "grows with the square of the length)", source_len, what, cap);
    if (o->max_length > cap)
        return cli_error("attention: --max-length %d: %s at most %d steps", o->max_length,
                         what, cap);
    int rule = ted_max_target_length(model, source_len, o->max_length);
    *max_length = rule < cap ? rule : cap;
    return 0;
}

static int run_attention(const ted_model *model, const attention_options *o)
{
    ted_learn_trace t = {0};
    cli_sentence sentence;
    int max_length = 0;
    int status = cli_sentence_prepare(&sentence, model, "attention", o->text, &o->languages);
    if (!status)
        status = capped_length(model, o, sentence.source.count, &max_length);
    if (!status)
        status = cli_learn_begin(&t, model, &sentence, max_length, o->top_k, true);
    const ted_config_architecture c = ted_config_get_view(ted_model_config(model)).model;
    if (!status && o->layer > kind_layers(&c, o->kind))
        status = cli_error("attention: --layer %d: the model has %d %s layers", o->layer,
                           kind_layers(&c, o->kind),
                           o->kind == KIND_ENCODER ? "encoder" : "decoder");
    if (!status && o->head > c.heads)
        status = cli_error("attention: --head %d: the model has %d heads", o->head, c.heads);
    ted_error err = {0};
    if (!status && ted_learn_run(&t, NULL, 0, &err) != TED_OK)
        status = cli_error("attention: %s", err.message);
    if (!status)
        status = write_all(&t, o);
    ted_learn_end(&t);
    cli_sentence_free(&sentence);
    return status;
}

static bool attention_option(cli_args *a, const char *option, void *options)
{
    attention_options *o = options;
    if (cli_value_option(a, option, "--html", NULL, &o->out.html) ||
        cli_value_option(a, option, "--svg", NULL, &o->out.svg) ||
        cli_value_option(a, option, "--json", NULL, &o->out.json)) {
        return true;
    } else if (!strcmp(option, "--kind")) {
        if (cli_take_value(a, option))
            take_kind(a, o);
    } else if (!strcmp(option, "--layer")) {
        cli_take_int(a, option, 1, 1000, &o->layer);
    } else if (!strcmp(option, "--head")) {
        if (cli_take_value(a, option) && strcmp(a->value, "mean") &&
            !cli_parse_int(a->value, 1, 1000, &o->head)) {
            a->failed = true;
            cli_error("attention: --head '%s': a head number from 1, or 'mean'", a->value);
        }
    } else if (!strcmp(option, "--top")) {
        cli_take_int(a, option, 1, 1000, &o->top_k);
    } else if (!strcmp(option, "--max-length")) {
        cli_take_int(a, option, 1, 1 << 20, &o->max_length);
    } else {
        return cli_language_option(a, option, &o->languages);
    }
    return true;
}

static bool is_stdout(const char *path)
{
    return path && !strcmp(path, "-");
}

static int check_attention(const cli_args *a, void *options)
{
    const attention_options *o = options;
    if (!cli_require_model(a) || cli_one_sentence(a))
        return 1;
    if (!o->out.html && !o->out.svg && !o->out.json)
        return cli_error("attention: nothing to write; give --html FILE, --svg FILE or "
                         "--json FILE");
    if (is_stdout(o->out.html) + is_stdout(o->out.svg) + is_stdout(o->out.json) > 1)
        return cli_error("attention: only one of --html, --svg and --json can be '-'");
    return 0;
}

static int attention_command(ted_model *model, const cli_args *a, void *options)
{
    attention_options *o = options;
    o->model_dir = a->model_dir;
    o->text = a->operands[0];
    return run_attention(model, o);
}

int cli_attention(int argc, char **argv)
{
    static const cli_command command = {"attention", usage, attention_option, check_attention,
                                        attention_command, false};
    attention_options o = {.kind = KIND_CROSS, .top_k = 5};
    return cli_run(&command, &o, argc, argv);
}
