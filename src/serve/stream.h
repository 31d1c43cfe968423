/* A streamed answer of POST /v1/translate ("stream": true): Server-Sent
 * Events (text/event-stream) that show each sentence's translation as its
 * tokens are decoded, then the whole answer (docs/serving.md#streaming).
 *
 *   event: token
 *   data: {"index":0,"tokens":["le"],"text":"le"}
 *
 *   event: done
 *   data: {"translations":["le chat dort ."]}
 *
 * A token event gives the tokens that sentence `index` appended since its
 * last event, as the target vocabulary spells them, and the text they add:
 * a sentence's texts, concatenated, are its translation. A greedy or
 * single-sample sentence gets events as it decodes; one of several
 * hypotheses (beam search, n_best samples) gets its best hypothesis's
 * text in one event once decoded. The last event is `done`, with what the
 * same request without "stream" answers, or `error` ({"error": "..."}).
 *
 * The response is read by libmicrohttpd on an HTTP thread: when no event
 * is ready, the connection is suspended, and the decoding thread resumes
 * it at the next token. A client that leaves cancels the job
 * (serve_job_cancel): its sentences leave the running batch at its next
 * step. */
#ifndef TED_SERVE_STREAM_H
#define TED_SERVE_STREAM_H

#include <microhttpd.h>
#include <stdbool.h>

#include "serve/job.h"
#include "serve/loop.h"

typedef struct serve_stream serve_stream;

/* A stream of `job`'s answer, which it owns from now on (the job is freed
 * with the stream); `scores` as the request's field. The stream sets the
 * job's done and progress callbacks. NULL when out of memory (the job is
 * then the caller's still). */
serve_stream *serve_stream_new(serve_job *job, bool scores);

/* Hands the job to the loop; while the loop holds it, it holds the stream
 * too. */
serve_admission serve_stream_submit(serve_stream *stream, serve_loop *loop);

/* The 200 answer whose body is the stream's events (chunked, of unknown
 * size), for `connection`; NULL when out of memory. */
struct MHD_Response *serve_stream_response(serve_stream *stream,
                                           struct MHD_Connection *connection);

/* The request is over: a job not yet done is cancelled, and the request's
 * hold on the stream is released. Returns true when the stream was cut
 * before its last event went out. */
bool serve_stream_close(serve_stream *stream);

#endif
