/* The answers of ted serve's HTTP service (serve/http.h): JSON bodies,
 * refusals, CORS headers. */
#include "serve/http.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ted/util.h"

void http_start_answering(request *r)
{
    pthread_mutex_lock(&r->server->lock);
    if (r->link)
        r->link->answering = true;
    pthread_mutex_unlock(&r->server->lock);
}

/* The CORS headers of an answer (--cors): Access-Control-Allow-Origin
 * when the request's Origin is the one allowed (or every one is). */
void http_add_cors(request *r, struct MHD_Response *answer)
{
    const char *allowed = r->server->config->cors;
    if (!allowed)
        return;
    const char *origin = MHD_lookup_connection_value(r->connection, MHD_HEADER_KIND, "Origin");
    bool any = !strcmp(allowed, "*");
    if (!any)
        MHD_add_response_header(answer, "Vary", "Origin");
    if (any || (origin && !strcmp(origin, allowed)))
        MHD_add_response_header(answer, "Access-Control-Allow-Origin", any ? "*" : allowed);
}

/* Queues `body` (malloc'ed, of `type`; NULL: out of memory, a JSON 500)
 * with `status`, and a header when `header` is not NULL. */
enum MHD_Result http_respond_as(request *r, int status, char *body, const char *type,
                                const char *header, const char *value)
{
    static const char no_memory[] = "{\"error\":\"out of memory\"}";
    struct MHD_Response *answer =
        body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(sizeof no_memory - 1, (void *)no_memory,
                                               MHD_RESPMEM_PERSISTENT);
    if (!answer) {
        free(body);
        return MHD_NO;
    }
    status = body ? status : MHD_HTTP_INTERNAL_SERVER_ERROR;
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CONTENT_TYPE,
                            body ? type : "application/json");
    if (header && body)
        MHD_add_response_header(answer, header, value);
    if (r->close)
        MHD_add_response_header(answer, MHD_HTTP_HEADER_CONNECTION, "close");
    http_add_cors(r, answer);
    http_start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, (unsigned)status, answer);
    MHD_destroy_response(answer);
    r->status = status;
    return queued;
}

/* http_respond_as() with a JSON body. */
enum MHD_Result http_respond(request *r, int status, char *json, const char *header,
                             const char *value)
{
    return http_respond_as(r, status, json, "application/json", header, value);
}

/* {"error": "..."} with `status`. */
enum MHD_Result http_refuse(request *r, int status, const char *header, const char *value,
                            const char *format, ...)
{
    char message[TED_ERROR_MESSAGE_SIZE];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return http_respond(r, status, serve_error_json(message), header, value);
}

/* A refusal of the request's headers (serve/guard.h): the connection is
 * closed after it, since what follows on it cannot be trusted. */
enum MHD_Result http_refuse_closing(request *r, const serve_refusal *no)
{
    r->close = true;
    return http_refuse(r, no->status, NULL, NULL, "%s", no->message);
}

enum MHD_Result http_refuse_draining(request *r)
{
    return http_refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
                       "the server is shutting down; send the request to another one");
}

/* A CORS preflight (OPTIONS, with --cors): what a page may send. */
enum MHD_Result http_preflight(request *r)
{
    struct MHD_Response *answer =
        MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!answer)
        return MHD_NO;
    http_add_cors(r, answer);
    MHD_add_response_header(answer, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(answer, "Access-Control-Allow-Headers",
                            "Content-Type, Authorization");
    MHD_add_response_header(answer, "Access-Control-Max-Age", "600");
    http_start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, MHD_HTTP_NO_CONTENT, answer);
    MHD_destroy_response(answer);
    r->status = MHD_HTTP_NO_CONTENT;
    return queued;
}

enum MHD_Result http_wrong_method(request *r, const char *allowed)
{
    return http_refuse(r, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW, allowed,
                       "%s takes %s, not %s", r->path, allowed, r->method);
}

/* Whether a request with API key `key` may go on (--api-keys); when not,
 * `*answer` is its refusal: 403 without a valid key, 429 over its limit. */
bool http_key_allowed(request *r, const char *key, enum MHD_Result *answer)
{
    int retry = 1;
    serve_key_verdict verdict =
        r->server->keys ? serve_keys_check(r->server->keys, key, ted_seconds(), &retry) : SERVE_KEY_OK;
    char after[16];
    snprintf(after, sizeof after, "%d", retry);
    if (verdict == SERVE_KEY_MISSING)
        *answer = http_refuse(r, MHD_HTTP_FORBIDDEN, NULL, NULL,
                              "this server requires an API key: give it in the api_key field");
    else if (verdict == SERVE_KEY_INVALID)
        *answer = http_refuse(r, MHD_HTTP_FORBIDDEN, NULL, NULL, "Invalid API key");
    else if (verdict == SERVE_KEY_LIMITED)
        *answer = http_refuse(r, MHD_HTTP_TOO_MANY_REQUESTS, MHD_HTTP_HEADER_RETRY_AFTER, after,
                              "Slowdown: this key's requests per minute are spent; retry in %d s",
                              retry);
    return verdict == SERVE_KEY_OK;
}

void http_resume(serve_job *job, void *data)
{
    (void)job;
    request *r = data;
    MHD_resume_connection(r->connection);
}
