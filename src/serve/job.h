/* A translation job: the sentences of one request, tokenized, on their way
 * through a model's decoding loop (serve/loop.h), and their translations. */
#ifndef TED_SERVE_JOB_H
#define TED_SERVE_JOB_H

#include <stdatomic.h>
#include <stdbool.h>

#include "ted/ted.h"

typedef struct serve_job serve_job;

struct serve_job {
    const ted_model *model;
    ted_translate_options options;  /* checked (ted_translate_options_check); its
                                     * language codes are the job's own copies */
    int count;                      /* sentences */
    int **ids;                      /* (count): each sentence's source ids */
    int *lengths;                   /* (count) */
    int **prefix_ids;               /* (count): the target tokens each sentence begins
                                     * with (a forced target-language code), or NULL */
    int *prefix_lengths;            /* (count) */
    ted_translation *outputs;       /* (count, n_best); a sentence is done once its
                                     * first output has a text */
    int unfinished;                 /* sentences still to decode */
    bool log_probs;                 /* the tokens' log-probabilities are wanted (scores, or
                                     * n_best > 1 to rank the samples); without them a
                                     * step skips the log-softmax over the vocabulary */
    ted_status status;              /* the first failure, else TED_OK */
    ted_error error;
    /* Called once every sentence is done, from the decoding thread. */
    void (*done)(serve_job *job, void *data);
    void *done_data;
    /* Streaming (NULL otherwise): called by the decoding thread with each
     * token that sentence `index` appends, when it decodes one hypothesis
     * (greedy, or one sample; EOS left out), and with token -1 once the
     * sentence's translation is in `outputs`, whatever its strategy. */
    void (*progress)(serve_job *job, int index, int token);
    atomic_bool cancelled;          /* its client left: its sentences stop (serve_job_cancel) */
    int client_fd;                  /* the socket of the job's client, -1 when none: while
                                     * the connection is suspended, libmicrohttpd does not
                                     * see it close (serve_job_client_gone) */
    ted_cancel *stop;               /* a beam search job's: raised with `cancelled`, it stops
                                     * the turn that ted_translate_ids_cancellable decodes
                                     * between steps; NULL for the other strategies */
    serve_job *next;                /* in a decoding loop's queue */
};

/* A job for `count` texts: each prepared (ted_prepare_source, with
 * options->languages: a blank one, nothing to decode, is done at once with
 * empty hypotheses) and checked against the model's max_positions. TED_ERR_INPUT names the text at fault ("text[2]: ...").
 * `*job` is NULL on failure. */
ted_status serve_job_new(const ted_model *model, const ted_translate_options *options,
                         const char *const *texts, int count, serve_job **job, ted_error *err);

void serve_job_free(serve_job *job);

/* Records the first failure of the job (a sentence that could not be
 * decoded). */
void serve_job_fail(serve_job *job, const ted_error *err);

/* Each sentence's best translation (outputs[i * n_best].text): (count)
 * pointers into the job, malloc'ed; NULL when out of memory. */
const char **serve_job_best(const serve_job *job);

/* True while sentence i waits for its translation. */
bool serve_job_pending(const serve_job *job, int i);

/* The client of a job has left: its sentences that wait are dropped
 * before they are encoded and those being decoded leave the batch at its
 * next step (a beam search turn stops at its next step, job->stop),
 * failed with serve_job_cancelled_error; done() is still called, once.
 * Safe from any thread. */
void serve_job_cancel(serve_job *job);
bool serve_job_is_cancelled(const serve_job *job);

/* Whether the job's client has closed its connection (client_fd reads
 * end-of-file or an error; a client that shuts down its sending side and
 * still reads counts as gone). False without a socket. */
bool serve_job_client_gone(const serve_job *job);

/* Whether the job's client has left: the job is cancelled, or its
 * connection, suspended while the job is decoded, has closed
 * (serve_job_client_gone), which cancels it. A streamed job's connection
 * is not looked at: its answer's end cancels it (serve/stream.h). Only
 * while the job is not done. */
bool serve_job_left(serve_job *job);

/* The failure of a sentence dropped because its client left. */
void serve_job_cancelled_error(ted_error *err, int index);

/* Told when `sentences` of `job` are done, translated or failed (`err`,
 * or NULL). */
typedef void serve_sentences_done_fn(void *data, serve_job *job, int sentences,
                                     const ted_error *err);

#endif
