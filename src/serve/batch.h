/* The running batch of a model's decoding loop (serve/loop.h): the
 * session that the batching thread owns, its rows, the sentences they
 * decode, and a step of them. A row goes on alone by the rules of the
 * library's rows engine (ted/rows.h), the one ted translate's rows follow;
 * the batch adds what a server needs: sentences that join between two
 * steps and leave the step they end, in any order, from any request;
 * streamed tokens; clients that leave. */
#ifndef TED_SERVE_BATCH_H
#define TED_SERVE_BATCH_H

#include "serve/job.h"
#include "ted/rows.h"

struct serve_loop_metrics;

/* One sentence in the running batch. */
typedef struct serve_sentence {
    serve_job *job;
    long serial;        /* the order it joined in */
    int index;          /* in its job */
    int samples;        /* its hypotheses (ted_row_sentence_samples) */
    int max_length;     /* tokens, EOS counted */
    int unfinished;     /* samples still decoding */
    bool dropped;       /* its client left (serve_job_cancel) */
    ted_row_sentence *rows;  /* its samples, their rules and their tokens so far; its
                              * generator is stream `index` of the job's seed */
    ted_error failure;  /* status TED_OK, or why its samples stop: it fails once the
                         * last of them leaves the batch */
} serve_sentence;

/* Sentence `index` of `job`, ready to be encoded; NULL when out of memory. */
serve_sentence *serve_sentence_new(const ted_model *model, serve_job *job, int index,
                                   ted_error *err);
void serve_sentence_free(serve_sentence *sentence);

/* The rows a sentence with `samples` rows counts against max_batch: each
 * of them, but never more than three quarters of max_batch, so that a
 * quarter stays free for other sentences while it decodes (its samples
 * cannot be split: they draw from one generator in a fixed order). */
int serve_charge(int max_batch, int samples);

/* How the batch answers the loop that owns it. */
typedef struct serve_batch_calls {
    serve_sentences_done_fn *done;  /* sentences translated or failed */
    /* sentence `index` of `job` dropped: its client left */
    void (*drop)(void *data, serve_job *job, int index);
    void *data;
} serve_batch_calls;

/* Rows of the batch: row r decodes rows[r] (a sample of owner[r]->rows)
 * and feeds tokens[r] at the next step. */
typedef struct serve_row_set {
    serve_sentence **owner;
    ted_row *rows;
    int *tokens;
} serve_row_set;

/* A row, by the sentence it decodes (the order it joined in). */
typedef struct serve_row_key {
    long serial;
    int row;
} serve_row_key;

/* What the batching thread owns: the session and its rows. */
typedef struct serve_batch {
    const ted_model *model;
    ted_session *session;
    int rows;
    int max_batch;
    int charged;              /* the rows its sentences count against max_batch
                               * (serve_charge) */
    long joined;              /* sentences that joined so far */
    serve_row_set now, next;  /* (row_capacity) each: this step's rows, those that go on */
    serve_row_set spare;      /* (row_capacity): for arrange() */
    int *keep;                /* (row_capacity): the old row of each row that goes on */
    int *spare_keep;          /* (row_capacity) */
    unsigned char *kept;      /* (row_capacity): old rows seen in keep, for arrange() */
    serve_row_key *order;     /* (row_capacity): the rows by sentence, for fail_rows() */
    int *token;               /* (row_capacity): the token each row streams, or -1 */
    int *ended;               /* (row_capacity): the samples that ended at each row */
    ted_rows *engine;         /* the choices of a step (ted_rows_choose) */
    serve_batch_calls calls;
    struct serve_loop_metrics *metrics;  /* the steps and the tokens chosen */
    double looked;            /* when the step last looked at its clients' connections */
} serve_batch;

/* An empty batch of room for max_batch rows (or one sentence's samples
 * beside a quarter of max_batch rows of others: serve_charge). */
ted_status serve_batch_init(serve_batch *batch, const ted_model *model, int max_batch,
                            serve_batch_calls calls, struct serve_loop_metrics *metrics,
                            ted_error *err);
void serve_batch_free(serve_batch *batch);

/* A sentence that cannot go on fails: freed, and answered with `err`. */
void serve_batch_fail(const serve_batch *batch, serve_sentence *sentence, const ted_error *err);

/* The `count` sentences encoded together in `session` join: rows of the
 * batch from the next step on, each feeding BOS first. On failure each of
 * them fails (serve_batch_fail). */
ted_status serve_batch_join(serve_batch *batch, ted_session *session,
                            serve_sentence *const *sentences, int count);

/* One decoder step for every row (there is one at least); the rows whose
 * sample ended leave, and each sentence whose last row left is answered. */
void serve_batch_step(serve_batch *batch);

#endif
