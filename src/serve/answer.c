/* The answer of a translation request (serve/answer.h). */
#include "serve/answer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/legs.h"
#include "ted/util.h"

/* The answer of a job whose sentences are all done, or that the loop refused. */
static enum MHD_Result answer_job(request *r)
{
    const serve_job *job = r->job;
    if (r->refused == MHD_HTTP_TOO_MANY_REQUESTS)
        return http_refuse(r, r->refused, MHD_HTTP_HEADER_RETRY_AFTER, "1",
                           "the queue of model \"%s\" is full (--max-queue %d sentences); "
                           "retry later",
                           r->server->config->models[r->model].name, r->server->config->max_queue);
    if (r->refused)
        return http_refuse(r, r->refused, NULL, NULL,
                           "%d sentences to translate; a request holds at most %d (--max-queue)",
                           job->unfinished, r->server->config->max_queue);
    if (job->status)
        return http_refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "%s",
                           job->error.message);
    if (r->libre)
        return http_respond(r, MHD_HTTP_OK, libre_answer(r->libre, &r->documents, job), NULL, NULL);
    if (r->documents.documents)
        return http_respond(r, MHD_HTTP_OK, serve_documents_answer(&r->documents, job), NULL, NULL);
    if (!r->routed)
        return http_respond(r, MHD_HTTP_OK, serve_answer(job, r->fields.scores), NULL, NULL);
    const ted_languages *asked = &r->fields.choice.languages;
    serve_leg_report legs[2];
    for (int i = 0; i < r->route.legs; i++)
        legs[i] = (serve_leg_report){r->server->config->models[r->route.leg[i].model].name,
                                     i == 0 ? asked->source : "en",
                                     i + 1 == r->route.legs ? asked->target : "en"};
    char *json = serve_answer_routed(job, r->fields.scores, legs, r->route.legs);
    return http_respond(r, MHD_HTTP_OK, json, NULL, NULL);
}

/* A job is done: the answer, or the next leg over its translations. */
enum MHD_Result http_answer(request *r)
{
    if (!r->refused && serve_job_is_cancelled(r->job))
        return MHD_NO;  /* its client left: the connection closes unanswered */
    if (r->refused || r->job->status || r->leg + 1 == r->route.legs)
        return answer_job(r);
    serve_job *previous = r->job;
    const char **texts = serve_job_best(previous);
    r->job = NULL;
    r->leg++;
    enum MHD_Result answer =
        texts ? http_start_leg(r, texts, previous->count)
              : http_refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "out of memory");
    free(texts);
    serve_job_free(previous);
    return answer;
}


/* `text` as the log shows a client's bytes: a control character, a
 * backslash or a byte that is not UTF-8 as \xHH, so that no client can
 * write a line of its own. */
static const char *log_escape(const char *text, char *out, size_t size)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t n = strlen(text), at = 0;
    for (size_t i = 0; i < n;) {
        int length = s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\' ? 0
                                                                  : ted_utf8_char(s + i, n - i, NULL);
        size_t bytes = length > 0 ? (size_t)length : 4;
        if (at + bytes >= size)
            break;
        if (length > 0)
            memcpy(out + at, s + i, bytes);
        else
            snprintf(out + at, 5, "\\x%02x", s[i]);
        at += bytes;
        i += length > 0 ? (size_t)length : 1;
    }
    out[at] = '\0';
    return out;
}

/* The request is over (answered, or its connection closed): one log line. */
void http_completed(void *cls, struct MHD_Connection *c, void **context,
                    enum MHD_RequestTerminationCode why)
{
    (void)c;
    (void)why;
    server *s = cls;
    request *r = *context;
    if (!r)
        return;
    char status[16], method[4 * sizeof r->method], path[4 * sizeof r->path];
    bool cut = r->stream && serve_stream_close(r->stream);  /* frees the job when last */
    snprintf(status, sizeof status, r->status && !cut ? "%d" : "cut", r->status);
    int sentences = r->fields.count;
    double seconds = ted_seconds() - r->start;
    serve_http_metrics_count(&s->metrics, cut ? 0 : r->status, seconds);
    fprintf(stderr, "ted serve: %s %s %s %d sentence%s %.1f ms\n",
            log_escape(r->method, method, sizeof method), log_escape(r->path, path, sizeof path),
            status, sentences, sentences == 1 ? "" : "s", seconds * 1e3);
    pthread_mutex_lock(&s->lock);
    s->in_flight -= r->counted;
    if (r->link) {
        r->link->answering = r->link->receiving = false;
        r->link->waiting_since = ted_seconds();
    }
    pthread_mutex_unlock(&s->lock);
    if (!r->stream)
        serve_job_free(r->job);
    serve_documents_free(&r->documents);
    serve_request_free(&r->fields);
    if (r->libre)
        libre_request_free(r->libre);
    free(r->libre);
    free(r->body);
    free(r);
    *context = NULL;
}
