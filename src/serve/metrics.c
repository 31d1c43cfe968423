/* GET /metrics (serve/metrics.h). */
#include "serve/metrics.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static const double SECONDS[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                 0.1,    0.2,   0.5,   1,     2,    5};
static const double ROWS[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
static const double REQUEST_SECONDS[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5,   1,      2.5,   5,    10,    30,    60};

#define COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))

static void init_histogram(serve_histogram *h, const double *bounds, int count)
{
    h->bounds = bounds;
    h->bound_count = count;
    for (int i = 0; i <= count; i++)
        atomic_init(&h->buckets[i], 0);
    atomic_init(&h->sum_millionths, 0);
}

void serve_histogram_observe(serve_histogram *h, double value)
{
    int i = 0;
    while (i < h->bound_count && value > h->bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    double millionths = value > 0 ? round(value * 1e6) : 0;
    atomic_fetch_add_explicit(&h->sum_millionths, (unsigned long long)millionths,
                              memory_order_relaxed);
}

void serve_loop_metrics_init(serve_loop_metrics *m)
{
    init_histogram(&m->step_seconds, SECONDS, COUNT(SECONDS));
    init_histogram(&m->step_rows, ROWS, COUNT(ROWS));
    init_histogram(&m->encode_seconds, SECONDS, COUNT(SECONDS));
    init_histogram(&m->beam_turn_requests, ROWS, COUNT(ROWS));
    atomic_init(&m->tokens, 0);
    atomic_init(&m->translated, 0);
    atomic_init(&m->failed, 0);
    atomic_init(&m->dropped, 0);
    atomic_init(&m->abandoned, 0);
}

void serve_http_metrics_init(serve_http_metrics *m)
{
    init_histogram(&m->seconds, REQUEST_SECONDS, COUNT(REQUEST_SECONDS));
    for (int i = 0; i < COUNT(m->by_status); i++)
        atomic_init(&m->by_status[i], 0);
    atomic_init(&m->cut, 0);
}

void serve_http_metrics_count(serve_http_metrics *m, int status, double seconds)
{
    if (status >= 100 && status < 100 + COUNT(m->by_status))
        atomic_fetch_add_explicit(&m->by_status[status - 100], 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&m->cut, 1, memory_order_relaxed);
    serve_histogram_observe(&m->seconds, seconds);
}

/* ---- the text ------------------------------------------------------------- */

static unsigned long long load(const atomic_ullong *counter)
{
    return atomic_load_explicit(counter, memory_order_relaxed);
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and line feed escaped. */
static void label_value(FILE *out, const char *value)
{
    for (const char *c = value; *c; c++) {
        if (*c == '\\' || *c == '"')
            fputc('\\', out);
        if (*c == '\n')
            fputs("\\n", out);
        else
            fputc(*c, out);
    }
}

/* The samples of one histogram; `model` NULL: no label. The buckets are
 * cumulative; the count is the last one. */
static void histogram(FILE *out, const char *name, const char *model, const serve_histogram *h)
{
    unsigned long long total = 0;
    for (int i = 0; i <= h->bound_count; i++) {
        total += load(&h->buckets[i]);
        fprintf(out, "%s_bucket{", name);
        if (model) {
            fputs("model=\"", out);
            label_value(out, model);
            fputs("\",", out);
        }
        if (i < h->bound_count)
            fprintf(out, "le=\"%g\"} %llu\n", h->bounds[i], total);
        else
            fprintf(out, "le=\"+Inf\"} %llu\n", total);
    }
    const char *open = model ? "{model=\"" : "", *close = model ? "\"}" : "";
    for (int part = 0; part < 2; part++) {
        fprintf(out, "%s_%s%s", name, part ? "count" : "sum", open);
        if (model)
            label_value(out, model);
        if (part)
            fprintf(out, "%s %llu\n", close, total);
        else
            fprintf(out, "%s %.6f\n", close, (double)load(&h->sum_millionths) * 1e-6);
    }
}

/* One sample of `model`'s, with a second label when `label` is not NULL. */
static void sample(FILE *out, const char *name, const char *model, const char *label,
                   const char *value, unsigned long long number)
{
    fprintf(out, "%s{model=\"", name);
    label_value(out, model);
    if (label)
        fprintf(out, "\",%s=\"%s", label, value);
    fprintf(out, "\"} %llu\n", number);
}

static void model_histograms(FILE *out, const serve_model_metrics *models, int count)
{
    static const struct {
        const char *name, *help;
    } families[] = {
        {"ted_step_seconds", "Decoder steps of a model's batch, by their time (the decoder "
                             "and the choice of every row's token)."},
        {"ted_step_rows", "Decoder steps of a model's batch, by the rows they fed."},
        {"ted_encode_seconds", "Encoder passes over the sentences joining a model's batch, "
                               "by their time."},
        {"ted_beam_turn_requests", "Turns of a model's beam search thread, by the requests "
                                   "whose sentences they decoded together."},
    };
    for (int k = 0; k < COUNT(families); k++) {
        family(out, families[k].name, "histogram", families[k].help);
        for (int i = 0; i < count; i++) {
            const serve_loop_metrics *m = models[i].loop;
            /* in the order of families[] */
            const serve_histogram *of[] = {&m->step_seconds, &m->step_rows, &m->encode_seconds,
                                           &m->beam_turn_requests};
            histogram(out, families[k].name, models[i].name, of[k]);
        }
    }
}

static void model_counters(FILE *out, const serve_model_metrics *models, int count)
{
    family(out, "ted_tokens_total", "counter",
           "Target tokens chosen by a model's batch, EOS included.");
    for (int i = 0; i < count; i++)
        sample(out, "ted_tokens_total", models[i].name, NULL, NULL, load(&models[i].loop->tokens));
    family(out, "ted_sentences_total", "counter",
           "Sentences a model ended: translated, failed, or dropped because their client left.");
    for (int i = 0; i < count; i++) {
        const serve_loop_metrics *m = models[i].loop;
        sample(out, "ted_sentences_total", models[i].name, "outcome", "translated",
               load(&m->translated));
        sample(out, "ted_sentences_total", models[i].name, "outcome", "failed", load(&m->failed));
        sample(out, "ted_sentences_total", models[i].name, "outcome", "dropped",
               load(&m->dropped));
    }
    family(out, "ted_requests_abandoned_total", "counter",
           "Translation jobs a model stopped because their client left.");
    for (int i = 0; i < count; i++)
        sample(out, "ted_requests_abandoned_total", models[i].name, NULL, NULL,
               load(&models[i].loop->abandoned));
}

static void model_gauges(FILE *out, const serve_model_metrics *models, int count)
{
    static const struct {
        const char *name, *help;
    } gauges[] = {
        {"ted_batch_rows", "Rows of a model's running batch, as --max-batch counts them."},
        {"ted_encoding_rows", "Rows of the sentences being encoded or about to join."},
        {"ted_waiting_sentences", "Sentences waiting to be encoded."},
        {"ted_held_sentences", "Sentences accepted and not yet done, beam search's included."},
    };
    for (int k = 0; k < COUNT(gauges); k++) {
        family(out, gauges[k].name, "gauge", gauges[k].help);
        for (int i = 0; i < count; i++) {
            const serve_loop_counts *now = &models[i].now;
            int of[] = {now->rows, now->encoding_rows, now->waiting, now->held};  /* gauges[] */
            sample(out, gauges[k].name, models[i].name, NULL, NULL, (unsigned long long)of[k]);
        }
    }
}

static void http(FILE *out, const serve_http_metrics *m)
{
    family(out, "ted_http_requests_total", "counter", "Requests answered, by status.");
    for (int i = 0; i < COUNT(m->by_status); i++) {
        unsigned long long n = load(&m->by_status[i]);
        if (n > 0)
            fprintf(out, "ted_http_requests_total{code=\"%d\"} %llu\n", i + 100, n);
    }
    family(out, "ted_http_requests_cut_total", "counter",
           "Requests whose connection closed before their answer was whole.");
    fprintf(out, "ted_http_requests_cut_total %llu\n", load(&m->cut));
    family(out, "ted_http_request_seconds", "histogram",
           "Requests, by the time from their request line to the end of their answer.");
    histogram(out, "ted_http_request_seconds", NULL, &m->seconds);
}

char *serve_metrics_text(const serve_http_metrics *http_metrics,
                         const serve_model_metrics *models, int count)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return NULL;
    model_histograms(out, models, count);
    model_counters(out, models, count);
    model_gauges(out, models, count);
    http(out, http_metrics);
    bool failed = ferror(out);
    if (fclose(out) || failed) {
        free(text);
        return NULL;
    }
    return text;
}
