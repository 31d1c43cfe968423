/* What ted serve counts for GET /metrics, in Prometheus's text format:
 * per model, the decoding loop's steps (their time and rows), its encoder
 * passes, the sentences it ended and the tokens it chose, and what it holds
 * now; for the server, the requests answered by status and their time.
 * Counters are atomics, written by the threads that do the work and read
 * by the HTTP thread that answers /metrics. */
#ifndef TED_SERVE_METRICS_H
#define TED_SERVE_METRICS_H

#include <stdatomic.h>

enum { SERVE_BUCKETS_MAX = 16 };

/* Observations by upper bound (a bucket holds those above the previous
 * bound), their count and their sum (in millionths). */
typedef struct serve_histogram {
    const double *bounds;  /* ascending; the last bucket, +Inf, follows them */
    int bound_count;       /* at most SERVE_BUCKETS_MAX */
    atomic_ullong buckets[SERVE_BUCKETS_MAX + 1];
    atomic_ullong sum_millionths;
} serve_histogram;

void serve_histogram_observe(serve_histogram *h, double value);

/* A model's decoding loop. */
typedef struct serve_loop_metrics {
    serve_histogram step_seconds;    /* one step of the batch: the decoder and the
                                      * choice of every row's token */
    serve_histogram step_rows;       /* the rows each step fed */
    serve_histogram encode_seconds;  /* one encoder pass over the sentences joining */
    serve_histogram beam_turn_requests;  /* the jobs of each beam search turn */
    atomic_ullong tokens;            /* tokens chosen, EOS included: a row's one a step
                                      * (a sampled sentence's first step draws each of
                                      * its samples) */
    atomic_ullong translated, failed, dropped;  /* sentences ended so */
    atomic_ullong abandoned;         /* jobs ended because their client left */
} serve_loop_metrics;

void serve_loop_metrics_init(serve_loop_metrics *m);

/* The requests answered. */
typedef struct serve_http_metrics {
    serve_histogram seconds;       /* from the request line to the end of the answer */
    atomic_ullong by_status[500];  /* statuses 100 .. 599 */
    atomic_ullong cut;             /* connections closed before the answer was whole */
} serve_http_metrics;

void serve_http_metrics_init(serve_http_metrics *m);
/* A request that ended with `status`, or cut (status 0) after `seconds`. */
void serve_http_metrics_count(serve_http_metrics *m, int status, double seconds);

/* What a model's decoding loop holds now (serve_loop_stats; GET /v1/stats
 * and GET /metrics). */
typedef struct serve_loop_counts {
    int rows;           /* rows of the running batch, as max_batch counts them */
    int encoding_rows;  /* rows of the sentences being encoded or about to join */
    int waiting;        /* sentences waiting to be encoded */
    int held;           /* sentences submitted and not yet done, beam search's included */
    long dropped;       /* sentences dropped so far because their client left */
} serve_loop_counts;

/* One model's loop for serve_metrics_text(): its name, its counters and
 * what it holds now. */
typedef struct serve_model_metrics {
    const char *name;
    const serve_loop_metrics *loop;
    serve_loop_counts now;
} serve_model_metrics;

/* The text of GET /metrics (version 0.0.4 of the format), malloc'ed; NULL
 * when out of memory. */
char *serve_metrics_text(const serve_http_metrics *http, const serve_model_metrics *models,
                         int count);

#endif
