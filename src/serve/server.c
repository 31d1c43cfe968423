/* The HTTP service (serve/server.h) on libmicrohttpd.
 *
 * A pool of HTTP threads reads requests. A translation request is parsed,
 * tokenized and handed to its model's decoding loop; its connection is
 * suspended meanwhile (no HTTP thread waits for it) and resumed by the
 * decoding thread once every sentence is translated, and the answer goes
 * out. A watchdog cuts connections that take longer than --timeout to
 * send a request, and closes those idle past --idle-timeout. Before a
 * connection is taken, the caps on connections (--max-connections, in all
 * and per client address) make room by closing idle ones. Every request's
 * headers are checked first (serve/guard.h). SIGTERM or SIGINT starts
 * draining: new requests get 503, and the service stops once every
 * request accepted before it, of any endpoint, is answered.
 * The explorer (serve/explore.h) is answered on the HTTP thread: its page
 * from memory, its decodes with a session of their own. */
#include "serve/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/utf8.h"
#include "serve/detect.h"
#include "serve/documents.h"
#include "serve/explore.h"
#include "serve/fields.h"
#include "serve/guard.h"
#include "serve/keys.h"
#include "serve/languages.h"
#include "serve/libre.h"
#include "serve/loop.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/stream.h"

enum { HTTP_THREADS = 2, FD_RESERVE = 64, WATCH_MS = 200, CLIENT_KEY = 9 };

/* A connection, for the watchdog and the caps on connections. */
typedef struct tracked {
    int fd;
    unsigned char client[CLIENT_KEY];  /* its address (client_key) */
    double waiting_since;  /* when it began waiting for its next request */
    bool receiving;        /* a request line came: the request is being read */
    bool answering;        /* its request is read; the answer is on its way */
    bool cut;
    struct tracked *prev, *next;
} tracked;

typedef struct server {
    const serve_config *config;
    serve_loop **loops;          /* (model_count) */
    char *models_json;           /* GET /v1/models */
    struct MHD_Daemon *daemon;
    char *explorer_json;         /* GET /v1/explorer */
    serve_routes *routes;        /* the models' languages, and the routes between them */
    serve_detector *detector;    /* "source": "auto" and /detect; NULL: no profile */
    serve_keys *keys;            /* --api-keys; NULL: no key needed */
    libre_server libre;          /* what the LibreTranslate API sees of the server */
    char *languages_json;        /* GET /languages */
    char *settings_json;         /* GET /frontend/settings */
    serve_hosts hosts;           /* the names it answers to */
    int max_connections;         /* connections at once, in all */
    pthread_mutex_t lock;
    pthread_cond_t stop_watch;
    int in_flight;               /* requests accepted before the drain, not yet answered */
    int evicted, turned_away;    /* connections closed or refused for room, not yet logged */
    double logged_at;            /* when the watchdog last said so */
    atomic_int exploring;        /* explorer requests being decoded (on HTTP threads) */
    bool draining, stopping;
    atomic_bool listening;       /* libmicrohttpd's messages are left out from then on */
    char why_not[256];           /* libmicrohttpd's last message before that */
    tracked *connections;
    pthread_t watchdog;
    serve_http_metrics metrics;  /* GET /metrics */
} server;

/* One HTTP request. */
typedef struct request {
    server *server;
    struct MHD_Connection *connection;
    tracked *link;
    char method[16];     /* for the log: GET, POST... */
    char path[80];       /* cut between UTF-8 characters */
    double start;
    char *body;
    size_t length, capacity;
    bool too_large;
    serve_request fields;
    int model;           /* which of the models served: the current leg's */
    serve_route route;   /* the legs its texts go through, one after the other */
    bool routed;         /* /v1/translate: the languages chose the route (its answer says it) */
    int leg;             /* the leg being decoded */
    libre_request *libre;  /* a POST /translate of the LibreTranslate API */
    serve_documents documents;  /* with split_sentences or format html: the texts */
    serve_job *job;
    serve_stream *stream; /* "stream": true, once the job is the stream's */
    bool counted;        /* in server->in_flight: accepted before the drain */
    bool close;          /* the answer closes the connection */
    int refused;         /* 429 or 413: the loop refused the job after it was suspended */
    int status;          /* the status answered; 0: none */
} request;

/* ---- answers ----------------------------------------------------------------- */

static void start_answering(request *r)
{
    pthread_mutex_lock(&r->server->lock);
    if (r->link)
        r->link->answering = true;
    pthread_mutex_unlock(&r->server->lock);
}

/* The CORS headers of an answer (--cors): Access-Control-Allow-Origin
 * when the request's Origin is the one allowed (or every one is). */
static void add_cors(request *r, struct MHD_Response *answer)
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
static enum MHD_Result respond_as(request *r, int status, char *body, const char *type,
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
    add_cors(r, answer);
    start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, (unsigned)status, answer);
    MHD_destroy_response(answer);
    r->status = status;
    return queued;
}

/* respond_as() with a JSON body. */
static enum MHD_Result respond(request *r, int status, char *json, const char *header,
                               const char *value)
{
    return respond_as(r, status, json, "application/json", header, value);
}

static enum MHD_Result refuse(request *r, int status, const char *header, const char *value,
                              const char *format, ...) __attribute__((format(printf, 5, 6)));

/* {"error": "..."} with `status`. */
static enum MHD_Result refuse(request *r, int status, const char *header, const char *value,
                              const char *format, ...)
{
    char message[TED_ERROR_MESSAGE_SIZE];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    return respond(r, status, serve_error_json(message), header, value);
}

/* A refusal of the request's headers (serve/guard.h): the connection is
 * closed after it, since what follows on it cannot be trusted. */
static enum MHD_Result refuse_closing(request *r, const serve_refusal *no)
{
    r->close = true;
    return refuse(r, no->status, NULL, NULL, "%s", no->message);
}

static enum MHD_Result refuse_draining(request *r)
{
    return refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
                  "the server is shutting down; send the request to another one");
}

/* The answer of a job whose sentences are all done, or that the loop refused. */
static enum MHD_Result answer_job(request *r)
{
    const serve_job *job = r->job;
    if (r->refused == MHD_HTTP_TOO_MANY_REQUESTS)
        return refuse(r, r->refused, MHD_HTTP_HEADER_RETRY_AFTER, "1",
                      "the queue of model \"%s\" is full (--max-queue %d sentences); "
                      "retry later",
                      r->server->config->models[r->model].name, r->server->config->max_queue);
    if (r->refused)
        return refuse(r, r->refused, NULL, NULL,
                      "%d sentences to translate; a request holds at most %d (--max-queue)",
                      job->unfinished, r->server->config->max_queue);
    if (job->status)
        return refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "%s",
                      job->error.message);
    if (r->libre)
        return respond(r, MHD_HTTP_OK, libre_answer(r->libre, &r->documents, job), NULL, NULL);
    if (r->documents.documents)
        return respond(r, MHD_HTTP_OK, serve_documents_answer(&r->documents, job), NULL, NULL);
    if (!r->routed)
        return respond(r, MHD_HTTP_OK, serve_answer(job, r->fields.scores), NULL, NULL);
    const ted_languages *asked = &r->fields.choice.languages;
    serve_leg_report legs[2];
    for (int i = 0; i < r->route.legs; i++)
        legs[i] = (serve_leg_report){r->server->config->models[r->route.leg[i].model].name,
                                     i == 0 ? asked->source : "en",
                                     i + 1 == r->route.legs ? asked->target : "en"};
    return respond(r, MHD_HTTP_OK,
                   serve_answer_routed(job, r->fields.scores, legs, r->route.legs), NULL, NULL);
}

/* ---- translation requests ---------------------------------------------------- */

/* Called by the decoding thread once every sentence of the job is done. */
static void job_done(serve_job *job, void *data)
{
    (void)job;
    request *r = data;
    MHD_resume_connection(r->connection);
}

/* Hands the job to the loop, with the connection suspended until it is
 * done; a refusal is answered once the connection is resumed. The request
 * came before any drain (route), so it is decoded even during one. */
static enum MHD_Result submit(request *r, serve_loop *loop)
{
    r->job->done = job_done;
    r->job->done_data = r;
    MHD_suspend_connection(r->connection);
    serve_admission admission = serve_loop_submit(loop, r->job);
    if (admission != SERVE_ACCEPTED) {
        r->refused = admission == SERVE_QUEUE_FULL ? MHD_HTTP_TOO_MANY_REQUESTS
                                                   : MHD_HTTP_CONTENT_TOO_LARGE;
        MHD_resume_connection(r->connection);
    }
    return MHD_YES;
}

/* "stream": true: the job goes to the loop, and the answer, Server-Sent
 * Events, goes out as its sentences decode (serve/stream.h). */
static enum MHD_Result stream(request *r, serve_loop *loop)
{
    if (!(r->stream = serve_stream_new(r->job, r->fields.scores)))
        return respond(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, NULL);
    serve_admission admission = serve_stream_submit(r->stream, loop);
    if (admission != SERVE_ACCEPTED) {
        r->refused = admission == SERVE_QUEUE_FULL ? MHD_HTTP_TOO_MANY_REQUESTS
                                                   : MHD_HTTP_CONTENT_TOO_LARGE;
        return answer_job(r);
    }
    struct MHD_Response *answer = serve_stream_response(r->stream, r->connection);
    if (!answer)
        return MHD_NO;
    start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, MHD_HTTP_OK, answer);
    MHD_destroy_response(answer);
    r->status = MHD_HTTP_OK;
    return queued;
}

static int find_model(const serve_config *c, const char *name)
{
    for (int i = 0; i < c->model_count; i++)
        if (!name || !strcmp(c->models[i].name, name))
            return i;
    return -1;
}

/* Whether the current leg's job is made of the request's texts read as
 * documents (serve/documents.h), and how they are read (*o): on the first
 * leg of a LibreTranslate /translate, always (sentences split, as
 * LibreTranslate does, in its "format"); of a /v1/translate, with
 * "split_sentences" or "format": "html". `language`: the source's code. */
static bool wants_documents(const request *r, const char *language, document_options *o)
{
    const serve_request *f = &r->fields;
    if (r->leg > 0)
        return false;
    *o = r->libre ? libre_document_options(r->libre, language)
                  : (document_options){.format = f->format, .split_sentences = true,
                                       .language = language};
    return r->libre || f->split_sentences || f->format == DOCUMENT_HTML;
}

/* The job of the current leg: `texts` (count), or their documents'
 * sentences (wants_documents). */
static ted_status job_of_texts(request *r, const ted_model *model,
                               const ted_translate_options *options, const char *const *texts,
                               int count, ted_error *err)
{
    const serve_request *f = &r->fields;
    document_options o;
    if (!wants_documents(r, frontend_source_language(model, &options->languages), &o))
        return serve_job_new(model, options, texts, count, &r->job, err);
    if (!r->libre && (f->scores || options->decode.n_best > 1))
        return ted_fail(err, TED_ERR_ARGUMENT, "%s applies to single sentences, not with %s",
                        f->scores ? "scores" : "n_best",
                        f->format == DOCUMENT_HTML ? "\"format\": \"html\""
                                                   : "\"split_sentences\": true");
    ted_status s = serve_documents_parse(texts, count, &o, &r->documents, err);
    if (!s && (s = serve_job_new(model, options, r->documents.sentences, r->documents.total,
                                 &r->job, err)))
        serve_documents_name_sentence(&r->documents, err);
    if (!s && r->libre)
        r->fields.count = r->documents.total;  /* the log line's sentences */
    return s;
}

static enum MHD_Result after_job(request *r);

/* A leg whose job cannot be made. On a later leg the texts are the
 * previous leg's translations, not the client's: one longer than the
 * model's max_positions is the route's failure (422, naming the leg and
 * the text it came from), not a bad request. */
static enum MHD_Result refuse_leg(request *r, ted_error *err)
{
    if (err->status == TED_ERR_NOMEM)
        return refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "%s", err->message);
    if (r->leg == 0 || err->status != TED_ERR_INPUT)
        return refuse(r, MHD_HTTP_BAD_REQUEST, NULL, NULL, "%s", err->message);
    if (r->documents.documents)
        serve_documents_name_sentence(&r->documents, err);
    return refuse(r, MHD_HTTP_UNPROCESSABLE_CONTENT, NULL, NULL,
                  "the route goes through English, and its leg %d of %d, model \"%s\", cannot "
                  "take the English translation of %s; a lower max_length (or temperature) "
                  "keeps that translation shorter",
                  r->leg + 1, r->route.legs,
                  r->server->config->models[r->route.leg[r->leg].model].name, err->message);
}

/* Makes the job of the current leg from `texts` (count) and hands it to
 * its model's loop; with nothing to decode, goes on at once. Every leg
 * but the last keeps one hypothesis per sentence. */
static enum MHD_Result start_leg(request *r, const char *const *texts, int count)
{
    const serve_config *c = r->server->config;
    const serve_leg *leg = &r->route.leg[r->leg];
    bool last = r->leg + 1 == r->route.legs;
    const ted_model *model = c->models[leg->model].model;
    frontend_choice choice = r->libre ? libre_leg_choice(r->libre, model, last) : r->fields.choice;
    choice.n_best_given = choice.n_best_given && last;
    choice.languages = (ted_languages){leg->source, leg->target};
    ted_translate_options options;
    ted_error err = {0};
    char message[TED_ERROR_MESSAGE_SIZE];
    r->model = leg->model;
    if (frontend_choose_options(model, &choice, serve_field_names, &options, &err) ||
        job_of_texts(r, model, &options, texts, count, &err))
        return refuse_leg(r, &err);
    if (!serve_job_within_budget(r->job, c->max_request_tokens, message, sizeof message))
        return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL, "%s", message);
    r->job->log_probs = last && (r->fields.scores || options.decode.n_best > 1);
    const union MHD_ConnectionInfo *socket =
        MHD_get_connection_info(r->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->job->client_fd = socket ? socket->connect_fd : -1;
    if (r->fields.stream) {
        if (r->route.legs > 1 || r->documents.documents)
            return refuse(r, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                          "\"stream\" applies to sentences one model translates, not with %s",
                          r->documents.documents ? "documents" : "a route through English");
        return stream(r, r->server->loops[leg->model]);
    }
    if (r->job->unfinished == 0)
        return after_job(r);
    return submit(r, r->server->loops[leg->model]);
}

/* A job is done: the answer, or the next leg over its translations. */
static enum MHD_Result after_job(request *r)
{
    if (r->refused || r->job->status || r->leg + 1 == r->route.legs)
        return answer_job(r);
    serve_job *previous = r->job;
    const char **texts = serve_job_best(previous);
    r->job = NULL;
    r->leg++;
    enum MHD_Result answer =
        texts ? start_leg(r, texts, previous->count)
              : refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "out of memory");
    free(texts);
    serve_job_free(previous);
    return answer;
}

/* Whether a request with API key `key` may go on (--api-keys); when not,
 * `*answer` is its refusal: 403 without a valid key, 429 over its limit. */
static bool key_allowed(request *r, const char *key, enum MHD_Result *answer)
{
    int retry = 1;
    serve_key_verdict verdict =
        r->server->keys ? serve_keys_check(r->server->keys, key, ted_seconds(), &retry) : SERVE_KEY_OK;
    char after[16];
    snprintf(after, sizeof after, "%d", retry);
    if (verdict == SERVE_KEY_MISSING)
        *answer = refuse(r, MHD_HTTP_FORBIDDEN, NULL, NULL,
                         "this server requires an API key: give it in the api_key field");
    else if (verdict == SERVE_KEY_INVALID)
        *answer = refuse(r, MHD_HTTP_FORBIDDEN, NULL, NULL, "Invalid API key");
    else if (verdict == SERVE_KEY_LIMITED)
        *answer = refuse(r, MHD_HTTP_TOO_MANY_REQUESTS, MHD_HTTP_HEADER_RETRY_AFTER, after,
                         "Slowdown: this key's requests per minute are spent; retry in %d s",
                         retry);
    return verdict == SERVE_KEY_OK;
}

/* The route of a /v1/translate: the model named (or, without languages,
 * the first), with its languages; or the route that source_lang and
 * target_lang lead to. False with the refusal. */
static bool v1_route(request *r, serve_refusal *no)
{
    const serve_config *c = r->server->config;
    const serve_request *f = &r->fields;
    const char *source = f->choice.languages.source, *target = f->choice.languages.target;
    const serve_routes *routes = r->server->routes;
    char a[FIELD_NAME_SHOWN], b[FIELD_NAME_SHOWN];
    if (f->model || !source || !target) {
        int m = find_model(c, f->model);
        if (m < 0)
            return serve_refuse(no, MHD_HTTP_NOT_FOUND,
                                "model \"%s\" is not served here (GET /v1/models lists them)",
                                serve_utf8_clean(f->model, a, sizeof a));
        r->route = (serve_route){
            1, {{m, source ? serve_model_code(routes, m, false, source) : NULL,
                 target ? serve_model_code(routes, m, true, target) : NULL}}};
        return true;
    }
    r->routed = true;
    return serve_route_find(routes, source, target, &r->route) ||
           serve_refuse(no, MHD_HTTP_BAD_REQUEST,
                        "no model here translates %s into %s, directly or through English "
                        "(GET /languages lists the pairs)",
                        serve_utf8_clean(source, a, sizeof a), serve_utf8_clean(target, b, sizeof b));
}

/* The whole body of a /v1/translate is in: parse, check, route, decode. */
static enum MHD_Result translate(request *r)
{
    const serve_config *c = r->server->config;
    start_answering(r);
    if (r->too_large)
        return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                      "the body is over %zu bytes (--max-body)", c->max_body);
    char message[TED_ERROR_MESSAGE_SIZE];
    if (!serve_parse_request(r->body ? r->body : "", r->length, &r->fields, message,
                             sizeof message))
        return refuse(r, MHD_HTTP_BAD_REQUEST, NULL, NULL, "%s", message);
    enum MHD_Result answer;
    if (!key_allowed(r, r->fields.api_key, &answer))
        return answer;
    serve_refusal no;
    if (!v1_route(r, &no))
        return refuse(r, no.status, NULL, NULL, "%s", no.message);
    return start_leg(r, r->fields.texts, r->fields.count);
}

/* ---- the LibreTranslate API (serve/libre.h) ----------------------------------------- */

/* Reads the fields of a LibreTranslate POST and checks its key; false
 * when it is refused (`*answer`). */
static bool libre_admit(request *r, libre_fields *f, enum MHD_Result *answer)
{
    serve_refusal no;
    start_answering(r);
    if (r->too_large) {
        *answer = refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                         "the body is over %zu bytes (--max-body)", r->server->config->max_body);
        return false;
    }
    if (!libre_read_fields(r->connection, r->body ? r->body : "", r->length, f, &no)) {
        *answer = refuse(r, no.status, NULL, NULL, "%s", no.message);
        return false;
    }
    return key_allowed(r, f->value[LIBRE_API_KEY], answer);
}

/* POST /translate. */
static enum MHD_Result libre_translate(request *r)
{
    enum MHD_Result answer;
    serve_refusal no;
    if (!(r->libre = calloc(1, sizeof *r->libre)))
        return refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "out of memory");
    if (!libre_admit(r, &r->libre->fields, &answer))
        return answer;
    if (!libre_plan(&r->server->libre, r->libre, &no))
        return refuse(r, no.status, NULL, NULL, "%s", no.message);
    r->route = r->libre->route;
    return start_leg(r, r->libre->fields.q, r->libre->fields.q_count);
}

/* POST /detect. */
static enum MHD_Result libre_detect(request *r)
{
    libre_fields f;
    enum MHD_Result answer;
    serve_refusal no;
    if (!libre_admit(r, &f, &answer)) {
        libre_fields_free(&f);
        return answer;
    }
    char *json = libre_detect_json(&r->server->libre, &f, &no);
    libre_fields_free(&f);
    return json ? respond(r, MHD_HTTP_OK, json, NULL, NULL)
                : refuse(r, no.status, NULL, NULL, "%s", no.message);
}

static bool is_libre_post(const char *path)
{
    return !strcmp(path, "/translate") || !strcmp(path, "/detect");
}

/* A CORS preflight (OPTIONS, with --cors): what a page may send. */
static enum MHD_Result preflight(request *r)
{
    struct MHD_Response *answer =
        MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!answer)
        return MHD_NO;
    add_cors(r, answer);
    MHD_add_response_header(answer, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(answer, "Access-Control-Allow-Headers",
                            "Content-Type, Authorization");
    MHD_add_response_header(answer, "Access-Control-Max-Age", "600");
    start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, MHD_HTTP_NO_CONTENT, answer);
    MHD_destroy_response(answer);
    r->status = MHD_HTTP_NO_CONTENT;
    return queued;
}

/* ---- the explorer (serve/explore.h) ---------------------------------------------- */

/* A file of the page, with a policy that lets it reach this server only. */
static enum MHD_Result send_asset(request *r, const serve_asset *asset)
{
    if (strcmp(r->method, MHD_HTTP_METHOD_GET))
        return refuse(r, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW,
                      MHD_HTTP_METHOD_GET, "%s takes GET, not %s", r->path, r->method);
    struct MHD_Response *answer = MHD_create_response_from_buffer(
        asset->size, (void *)asset->data, MHD_RESPMEM_PERSISTENT);
    if (!answer)
        return MHD_NO;
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CONTENT_TYPE, asset->content_type);
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(answer, "Content-Security-Policy", serve_explorer_policy);
    MHD_add_response_header(answer, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(answer, "Referrer-Policy", "no-referrer");
    add_cors(r, answer);
    start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, MHD_HTTP_OK, answer);
    MHD_destroy_response(answer);
    r->status = MHD_HTTP_OK;
    return queued;
}

/* docs/openapi.yaml, built into the program (serve/openapi_asset.S). */
extern const unsigned char serve_openapi_yaml[], serve_openapi_yaml_end[];

static serve_asset openapi_asset(void)
{
    return (serve_asset){"/openapi.yaml", "application/yaml; charset=utf-8", serve_openapi_yaml,
                         (size_t)(serve_openapi_yaml_end - serve_openapi_yaml)};
}

/* Explorer requests decoded at once: fewer than the HTTP threads, so that
 * one is always left for translation requests and answers. */
enum { MAX_EXPLORING = HTTP_THREADS - 1 };

/* The whole body of an explorer request is in: it is decoded here, on this
 * HTTP thread, with a session of its own; one at a time, others get a 503. */
static enum MHD_Result explore(request *r)
{
    server *s = r->server;
    const serve_config *c = s->config;
    start_answering(r);
    if (r->too_large)
        return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                      "the body is over %zu bytes (--max-body)", c->max_body);
    if (s->keys)
        return refuse(r, MHD_HTTP_FORBIDDEN, NULL, NULL,
                      "the explorer is off while API keys are required (--api-keys)");
    if (atomic_fetch_add(&s->exploring, 1) >= MAX_EXPLORING) {
        atomic_fetch_sub(&s->exploring, 1);
        return refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, MHD_HTTP_HEADER_RETRY_AFTER, "1",
                      "the explorer is decoding another request; retry in a moment");
    }
    int status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    char *json = serve_explore(c->models, c->model_count, r->path, r->body ? r->body : "",
                               r->length, &status);
    atomic_fetch_sub(&s->exploring, 1);
    r->fields.count = status == MHD_HTTP_OK;  /* the log line's sentence: one decoded */
    return respond(r, status, json, NULL, NULL);
}

/* ---- the request's first call: routes ---------------------------------------- */

static bool is_draining(server *s)
{
    pthread_mutex_lock(&s->lock);
    bool draining = s->draining;
    pthread_mutex_unlock(&s->lock);
    return draining;
}

static enum MHD_Result wrong_method(request *r, const char *allowed)
{
    return refuse(r, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW, allowed,
                  "%s takes %s, not %s", r->path, allowed, r->method);
}

/* GET /v1/stats: what each model's loop holds now. */
static char *stats_json(const server *s)
{
    const serve_config *c = s->config;
    serve_loop_counts *counts = calloc((size_t)c->model_count, sizeof *counts);
    const char **names = calloc((size_t)c->model_count, sizeof *names);
    char *json = NULL;
    if (counts && names) {
        for (int i = 0; i < c->model_count; i++) {
            names[i] = c->models[i].name;
            serve_loop_stats(s->loops[i], &counts[i]);
        }
        json = serve_stats_json(names, counts, c->model_count);
    }
    free(counts);
    free(names);
    return json;
}

/* GET /metrics: serve/metrics.h. */
static char *metrics_text(server *s)
{
    const serve_config *c = s->config;
    serve_model_metrics *models = calloc((size_t)c->model_count, sizeof *models);
    char *text = NULL;
    if (models) {
        for (int i = 0; i < c->model_count; i++) {
            models[i].name = c->models[i].name;
            models[i].loop = serve_loop_metrics_of(s->loops[i]);
            serve_loop_stats(s->loops[i], &models[i].now);
        }
        text = serve_metrics_text(&s->metrics, models, c->model_count);
    }
    free(models);
    return text;
}

static enum MHD_Result get(request *r)
{
    server *s = r->server;
    if (strcmp(r->method, MHD_HTTP_METHOD_GET))
        return wrong_method(r, MHD_HTTP_METHOD_GET);
    if (!strcmp(r->path, "/v1/models")) {
        char *json = strdup(s->models_json);
        return respond(r, MHD_HTTP_OK, json, NULL, NULL);
    }
    if (!strcmp(r->path, "/v1/explorer"))
        return respond(r, MHD_HTTP_OK, strdup(s->explorer_json), NULL, NULL);
    if (!strcmp(r->path, "/languages"))
        return respond(r, MHD_HTTP_OK, strdup(s->languages_json), NULL, NULL);
    if (!strcmp(r->path, "/frontend/settings"))
        return respond(r, MHD_HTTP_OK, strdup(s->settings_json), NULL, NULL);
    if (!strcmp(r->path, "/v1/stats"))
        return respond(r, MHD_HTTP_OK, stats_json(s), NULL, NULL);
    if (!strcmp(r->path, "/metrics"))
        return respond_as(r, MHD_HTTP_OK, metrics_text(s), "text/plain; version=0.0.4", NULL,
                          NULL);
    if (is_draining(s))
        return refuse_draining(r);
    return respond(r, MHD_HTTP_OK, strdup("{\"status\":\"ok\"}"), NULL, NULL);
}

/* A POST to a JSON endpoint: accepted before the drain, of JSON, and of a
 * size within --max-body when it says its size. */
static enum MHD_Result route_post(request *r)
{
    const serve_config *c = r->server->config;
    if (strcmp(r->method, MHD_HTTP_METHOD_POST))
        return wrong_method(r, MHD_HTTP_METHOD_POST);
    if (!r->counted)
        return refuse_draining(r);
    serve_refusal no;
    if (!is_libre_post(r->path) && !serve_guard_json(r->connection, &no))
        return refuse_closing(r, &no);
    const char *length = MHD_lookup_connection_value(r->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > c->max_body) {
        r->close = true;
        return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                      "the body is %s bytes, over %zu (--max-body)", length, c->max_body);
    }
    return MHD_YES;
}

/* Answers at once, or returns MHD_YES to read the body of a POST. */
static enum MHD_Result route(request *r, const char *version)
{
    serve_refusal no;
    if (!serve_guard_headers(r->connection, version, &r->server->hosts, &no))
        return refuse_closing(r, &no);
    if (r->server->config->cors && !strcmp(r->method, MHD_HTTP_METHOD_OPTIONS))
        return preflight(r);
    serve_asset asset;
    if (serve_explorer_asset(r->path, &asset))
        return send_asset(r, &asset);
    if (!strcmp(r->path, "/openapi.yaml") && (asset = openapi_asset(), true))
        return send_asset(r, &asset);
    if (!strcmp(r->path, "/healthz") || !strcmp(r->path, "/v1/models") ||
        !strcmp(r->path, "/v1/explorer") || !strcmp(r->path, "/v1/stats") ||
        !strcmp(r->path, "/metrics") || !strcmp(r->path, "/languages") ||
        !strcmp(r->path, "/frontend/settings"))
        return get(r);
    if (strcmp(r->path, "/v1/translate") && !serve_explorer_endpoint(r->path) &&
        !is_libre_post(r->path))
        return refuse(r, MHD_HTTP_NOT_FOUND, NULL, NULL,
                      "no such path: %s (there are POST /v1/translate, GET /v1/models, "
                      "GET /v1/stats, GET /metrics, GET /healthz, GET /openapi.yaml; "
                      "LibreTranslate's POST "
                      "/translate, POST /detect, GET /languages, GET /frontend/settings; and the "
                      "explorer: GET /, GET /v1/explorer, POST /v1/explore, POST /v1/beam)",
                      r->path);
    return route_post(r);
}

/* ---- libmicrohttpd's callbacks ------------------------------------------------ */

static void take_body(request *r, const char *data, size_t size)
{
    size_t room = r->server->config->max_body;
    if (r->too_large || size > room - r->length) {
        r->too_large = true;
        free(r->body);
        r->body = NULL;
        return;
    }
    if (r->length + size > r->capacity) {
        size_t grown = r->capacity ? 2 * r->capacity : 4096;
        grown = grown < r->length + size ? r->length + size : grown;
        char *body = realloc(r->body, grown);
        if (!body) {  /* answered as too large: no room for it */
            r->too_large = true;
            return;
        }
        r->body = body;
        r->capacity = grown;
    }
    memcpy(r->body + r->length, data, size);
    r->length += size;
}

/* A request whose headers are in; counted in in_flight unless it comes
 * during the drain. */
static request *new_request(server *s, struct MHD_Connection *c, const char *url,
                            const char *method)
{
    request *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    *r = (request){.server = s, .connection = c, .start = ted_seconds(),
                   .link = info ? info->socket_context : NULL};
    snprintf(r->method, sizeof r->method, "%s", method);
    serve_utf8_clean(url, r->path, sizeof r->path);
    pthread_mutex_lock(&s->lock);
    r->counted = !s->draining;
    s->in_flight += r->counted;
    pthread_mutex_unlock(&s->lock);
    return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **context)
{
    request *r = *context;
    if (!r) {
        if (!(r = new_request(cls, c, url, method)))
            return MHD_NO;
        *context = r;
        return route(r, version);
    }
    if (r->status) {
        /* Answered already (a refusal before the body), yet called again: it
         * happens only while the daemon stops, when MHD_queue_response
         * returns MHD_YES without taking the answer (the 503 of a request
         * that came during the drain). Going on would decode the request
         * and suspend its connection, and MHD_stop_daemon aborts the
         * process on a suspended connection: the connection is closed. */
        *upload_size = 0;
        return MHD_NO;
    }
    if (*upload_size > 0) {
        take_body(r, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->job)  /* resumed: the job is done, or was refused */
        return after_job(r);
    if (!strcmp(r->path, "/translate"))
        return libre_translate(r);
    if (!strcmp(r->path, "/detect"))
        return libre_detect(r);
    return serve_explorer_endpoint(r->path) ? explore(r) : translate(r);
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
static void completed(void *cls, struct MHD_Connection *c, void **context,
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

/* A client's address as the caps on connections count it: IPv4, or the
 * /64 network of IPv6 (one host's share), an IPv4-mapped address as IPv4. */
static void client_key(const struct sockaddr *address, unsigned char key[CLIENT_KEY])
{
    memset(key, 0, CLIENT_KEY);
    if (address && address->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)address)->sin_addr, 4);
    } else if (address && address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        bool mapped = IN6_IS_ADDR_V4MAPPED(v6);
        key[0] = mapped ? 4 : 6;
        memcpy(key + 1, v6->s6_addr + (mapped ? 12 : 0), mapped ? 4 : 8);
    }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    server *s = cls;
    tracked *t = *socket_context;
    pthread_mutex_lock(&s->lock);
    if (code == MHD_CONNECTION_NOTIFY_STARTED && (t = calloc(1, sizeof *t))) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *client =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *t = (tracked){.fd = info ? info->connect_fd : -1, .waiting_since = ted_seconds(),
                       .next = s->connections};
        client_key(client ? client->client_addr : NULL, t->client);
        if (s->connections)
            s->connections->prev = t;
        s->connections = t;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && t) {
        *(t->prev ? &t->prev->next : &s->connections) = t->next;
        if (t->next)
            t->next->prev = t->prev;
        free(t);
        t = NULL;
    }
    *socket_context = t;
    pthread_mutex_unlock(&s->lock);
}

/* Called when a request line has come: the connection is no longer idle. */
static void *request_begins(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)uri;
    server *s = cls;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pthread_mutex_lock(&s->lock);
    if (info && info->socket_context)
        ((tracked *)info->socket_context)->receiving = true;
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- the caps on connections ----------------------------------------------------- */

/* Closes the connection that has waited longest, of the client `key`
 * (NULL: of any client): an idle one if there is one, else one still
 * sending its request; never one being answered. False when none is left.
 * The lock is held. */
static bool evict(server *s, const unsigned char *key)
{
    tracked *victim = NULL;
    for (tracked *t = s->connections; t; t = t->next) {
        if (t->cut || t->answering || t->fd < 0 || (key && memcmp(t->client, key, CLIENT_KEY)))
            continue;
        if (!victim || (victim->receiving && !t->receiving) ||
            (victim->receiving == t->receiving && t->waiting_since < victim->waiting_since))
            victim = t;
    }
    if (!victim)
        return false;
    shutdown(victim->fd, SHUT_RDWR);
    victim->cut = true;
    s->evicted++;
    return true;
}

/* libmicrohttpd's accept policy: a new connection is taken when it finds
 * room under --max-connections and --max-connections-per-client, making
 * room by closing the longest-waiting idle connection (of the same client
 * when that client is at its cap). */
static enum MHD_Result admit(void *cls, const struct sockaddr *address, socklen_t length)
{
    (void)length;
    server *s = cls;
    unsigned char key[CLIENT_KEY];
    client_key(address, key);
    pthread_mutex_lock(&s->lock);
    int total = 0, mine = 0;
    for (const tracked *t = s->connections; t; t = t->next)
        if (!t->cut) {
            total++;
            mine += !memcmp(t->client, key, CLIENT_KEY);
        }
    bool room = mine >= s->config->max_client_connections ? evict(s, key)
                : total >= s->max_connections              ? evict(s, NULL)
                                                           : true;
    s->turned_away += !room;
    pthread_mutex_unlock(&s->lock);
    return room ? MHD_YES : MHD_NO;
}

/* libmicrohttpd's own messages: why it cannot start, kept for the error
 * (only the starting thread calls it then); later ones (a client gone
 * mid-answer...) are left out, the request's log line says enough. */
static void log_library(void *cls, const char *format, va_list args)
{
    server *s = cls;
    if (atomic_load(&s->listening))
        return;
    vsnprintf(s->why_not, sizeof s->why_not, format, args);
    s->why_not[strcspn(s->why_not, "\n")] = '\0';
}

/* ---- the watchdog ------------------------------------------------------------ */

/* Whether the client's bytes wait in the socket, sent but not yet read:
 * then the server is behind, not the client. */
static bool unread(int fd)
{
    int bytes = 0;
    return ioctl(fd, FIONREAD, &bytes) == 0 && bytes > 0;
}

/* Cuts the connections that took over --timeout to send their request
 * (headers and body): a slow client must not hold a connection forever;
 * closes those that sent no request line for --idle-timeout. Neither while
 * bytes the client sent wait unread: the server is behind then. */
static void cut_late_connections(server *s)
{
    const serve_config *config = s->config;
    double limit = config->timeout, t = ted_seconds();
    double idle = config->idle_timeout < config->timeout ? config->idle_timeout : limit;
    for (tracked *c = s->connections; c; c = c->next) {
        if (c->answering || c->cut || c->fd < 0)
            continue;
        if (t - c->waiting_since <= (c->receiving ? limit : idle) || unread(c->fd))
            continue;
        shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
        if (c->receiving)
            fprintf(stderr, "ted serve: cut a connection: no whole request in %d s (--timeout)\n",
                    config->timeout);
    }
}

/* Says, at most once a second, how many connections were closed or
 * refused to keep within the caps. */
static void log_turned_away(server *s)
{
    double t = ted_seconds();
    if ((!s->evicted && !s->turned_away) || t - s->logged_at < 1.0)
        return;
    fprintf(stderr, "ted serve: at the connection caps (--max-connections %d, "
            "--max-connections-per-client %d): closed %d waiting connections, refused %d\n",
            s->max_connections, s->config->max_client_connections, s->evicted, s->turned_away);
    s->evicted = s->turned_away = 0;
    s->logged_at = t;
}

static void *watchdog_main(void *arg)
{
    server *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        cut_late_connections(s);
        log_turned_away(s);
        struct timespec until = ted_deadline(CLOCK_MONOTONIC, WATCH_MS);
        pthread_cond_timedwait(&s->stop_watch, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- starting and stopping ----------------------------------------------------- */

/* Connections the process can hold: its file limit raised to the most it
 * may, minus room for the model files and the threads; --max-connections
 * when that is fewer. */
static int connection_limit(const serve_config *c)
{
    struct rlimit files;
    rlim_t limit = 1000;
    if (!getrlimit(RLIMIT_NOFILE, &files)) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
        getrlimit(RLIMIT_NOFILE, &files);
        limit = files.rlim_cur > 2 * FD_RESERVE ? files.rlim_cur - FD_RESERVE : FD_RESERVE;
    }
    limit = limit > 100000 ? 100000 : limit;
    return c->max_connections > 0 && (rlim_t)c->max_connections < limit ? c->max_connections
                                                                       : (int)limit;
}

/* libmicrohttpd's own cap is twice ours (admit), which it splits among
 * its threads: so that no thread stops taking connections while the
 * process has room for them. */
/* The listening socket of `address`, bound and listening, or -1 with the
 * reason in s->why_not. Bound here, before libmicrohttpd's threads start,
 * so that the port the system chooses for --port 0 is known (and written
 * into s->hosts) before any thread can read it. As libmicrohttpd binds
 * its own: the address reusable at once after a restart, an IPv6 socket
 * for IPv6 alone. */
static int bind_socket(server *s, const struct addrinfo *address)
{
    int fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    address->ai_protocol);
    int on = 1;
    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0 &&
        (address->ai_family != AF_INET6 ||
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) == 0) &&
        bind(fd, address->ai_addr, address->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0)
        return fd;
    snprintf(s->why_not, sizeof s->why_not, "%s", strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The port `fd` listens on (--port 0: the one the system chose). */
static unsigned bound_port(int fd, unsigned asked)
{
    struct sockaddr_storage a;
    socklen_t length = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &length) != 0)
        return asked;
    if (a.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    return ntohs(((struct sockaddr_in *)&a)->sin_port);
}

static struct MHD_Daemon *start_daemon(server *s, int fd, bool v6)
{
    const serve_config *c = s->config;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (v6)
        flags |= MHD_USE_IPv6;
    s->max_connections = connection_limit(c);
    return MHD_start_daemon(
        flags, (uint16_t)s->hosts.port, admit, s, handle, s, MHD_OPTION_EXTERNAL_LOGGER,
        log_library, s, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)HTTP_THREADS, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(2 * s->max_connections + 2 * HTTP_THREADS), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)c->timeout, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_URI_LOG_CALLBACK,
        request_begins, s, MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
}

static ted_status listen_on(server *s, ted_error *err)
{
    const serve_config *c = s->config;
    char port[8];
    snprintf(port, sizeof port, "%d", c->port);
    struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *address = NULL;
    int e = getaddrinfo(c->host, port, &hints, &address);
    if (e)
        return ted_fail(err, TED_ERR_IO, "--host %s: %s", c->host, gai_strerror(e));
    int fd = bind_socket(s, address);
    bool v6 = address->ai_family == AF_INET6;
    freeaddrinfo(address);
    /* the hosts a request may name, the port included, before the first
     * request can come */
    unsigned bound = fd >= 0 ? bound_port(fd, (unsigned)c->port) : (unsigned)c->port;
    s->hosts = (serve_hosts){c->host, bound, c->allowed_hosts, c->allowed_host_count};
    s->daemon = fd >= 0 ? start_daemon(s, fd, v6) : NULL;
    if (!s->daemon) {
        if (fd >= 0)
            close(fd);
        return ted_fail(err, TED_ERR_IO, "cannot listen on %s port %d: %s", c->host, c->port,
                        s->why_not[0] ? s->why_not : "libmicrohttpd cannot start");
    }
    atomic_store(&s->listening, true);
    fprintf(stderr, "ted serve: listening on http://%s%s%s:%u\n", v6 ? "[" : "", c->host,
            v6 ? "]" : "", bound);
    return TED_OK;
}

static ted_status start_loops(server *s, ted_error *err)
{
    const serve_config *c = s->config;
    const char **names = ted_alloc(c->model_count, sizeof *names, "models", err);
    const ted_model **models = ted_alloc(c->model_count, sizeof *models, "models", err);
    s->loops = ted_alloc(c->model_count, sizeof *s->loops, "models", err);
    ted_status status = names && models && s->loops ? TED_OK : TED_ERR_NOMEM;
    for (int i = 0; !status && i < c->model_count; i++) {
        names[i] = c->models[i].name;
        models[i] = c->models[i].model;
        status = serve_loop_start(models[i], c->max_batch, c->max_queue, c->threads,
                                  &s->loops[i], err);
        if (status)
            ted_fail_context(err, "model %s", names[i]);
    }
    if (!status && (!(s->models_json = serve_models_json(names, models, c->model_count)) ||
                    !(s->explorer_json = serve_explorer_models(c->models, c->model_count))))
        status = ted_fail(err, TED_ERR_NOMEM, "out of memory describing the models");
    free(names);
    free(models);
    return status;
}

/* The models' languages and routes, the detector among the languages
 * translated from. */
static ted_status start_languages(server *s, ted_error *err)
{
    const serve_config *c = s->config;
    ted_status status = serve_routes_new(c->models, c->model_count, &s->routes, err);
    const char *const *sources;
    int count = status ? 0 : serve_routes_sources(s->routes, &sources);
    if (!status)
        status = serve_detector_new(sources, count, &s->detector, err);
    if (status)
        return status;
    s->libre = (libre_server){s->routes, s->detector, s->keys != NULL, c->alternatives_limit};
    if (!(s->languages_json = serve_languages_json(s->routes)) ||
        !(s->settings_json = libre_settings_json(&s->libre)))
        return ted_fail(err, TED_ERR_NOMEM, "out of memory describing the languages");
    return TED_OK;
}

/* Blocks until SIGTERM or SIGINT; returns its name. */
static const char *wait_for_signal(const sigset_t *signals)
{
    int signal = 0;
    while (sigwait(signals, &signal))
        ;
    return signal == SIGTERM ? "SIGTERM" : "SIGINT";
}

/* Stops taking requests; returns once every accepted one is answered. A
 * second SIGTERM or SIGINT meanwhile ends the process at once. */
static void drain(server *s, const char *why, const sigset_t *signals)
{
    pthread_mutex_lock(&s->lock);
    s->draining = true;
    fprintf(stderr, "ted serve: %s: answering the %d requests accepted, then stopping\n", why,
            s->in_flight);
    while (s->in_flight > 0) {
        pthread_mutex_unlock(&s->lock);
        struct timespec tick = {0, 20 * 1000000L};
        int again = sigtimedwait(signals, NULL, &tick);
        pthread_mutex_lock(&s->lock);
        if (again == SIGTERM || again == SIGINT) {
            fprintf(stderr, "ted serve: %s again: stopping now, %d requests unanswered\n",
                    again == SIGTERM ? "SIGTERM" : "SIGINT", s->in_flight);
            _exit(1);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

static void stop(server *s, bool watching)
{
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->stop_watch);
    pthread_mutex_unlock(&s->lock);
    if (watching)
        pthread_join(s->watchdog, NULL);
    for (int i = 0; s->loops && i < s->config->model_count; i++)
        serve_loop_stop(s->loops[i]);
    free(s->loops);
    free(s->models_json);
    free(s->explorer_json);
    serve_routes_free(s->routes);
    serve_detector_free(s->detector);
    serve_keys_free(s->keys);
    free(s->languages_json);
    free(s->settings_json);
    pthread_cond_destroy(&s->stop_watch);
    pthread_mutex_destroy(&s->lock);
}

static void init_server(server *s, const serve_config *config)
{
    *s = (server){.config = config};
    serve_http_metrics_init(&s->metrics);
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&s->stop_watch, &monotonic);
    pthread_condattr_destroy(&monotonic);
}

ted_status serve_run(const serve_config *config, ted_error *err)
{
    /* The files first, while SIGTERM and SIGINT still end the process. */
    serve_keys *keys = NULL;
    ted_status loaded = config->api_keys ? serve_keys_load(config->api_keys, &keys, err) : TED_OK;
    if (loaded)
        return ted_fail_context(err, "--api-keys");
    /* Every thread started from here on leaves SIGTERM and SIGINT to sigwait. */
    sigset_t signals, before;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, &before);
    signal(SIGPIPE, SIG_IGN);
    server s;
    init_server(&s, config);
    s.keys = keys;
    ted_status status = start_loops(&s, err);
    if (!status)
        status = start_languages(&s, err);
    bool watching = !status && !pthread_create(&s.watchdog, NULL, watchdog_main, &s);
    if (!status && !watching)
        status = ted_fail(err, TED_ERR_NOMEM, "cannot start the watchdog thread");
    if (!status)
        status = listen_on(&s, err);
    if (!status)
        drain(&s, wait_for_signal(&signals), &signals);
    stop(&s, watching);
    struct timespec none = {0, 0};
    while (sigtimedwait(&signals, NULL, &none) > 0)
        ;  /* a signal that came once every request was answered: nothing left to stop */
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    return status;
}
