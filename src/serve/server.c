/* The HTTP service (serve/server.h) on libmicrohttpd.
 *
 * A pool of HTTP threads reads requests. A translation request is parsed,
 * tokenized and handed to its model's decoding loop; its connection is
 * suspended meanwhile (no HTTP thread waits for it) and resumed by the
 * decoding thread once every sentence is translated, and the answer goes
 * out. A watchdog cuts connections that take longer than --timeout to
 * send a request. SIGTERM or SIGINT starts draining: new requests get
 * 503, and the service stops once every accepted request is answered.
 * The explorer (serve/explore.h) is answered on the HTTP thread: its page
 * from memory, its decodes with a session of their own. */
#include "serve/server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "core/alloc.h"
#include "core/error.h"
#include "serve/explore.h"
#include "serve/loop.h"
#include "serve/request.h"

enum { HTTP_THREADS = 2, FD_RESERVE = 64, WATCH_MS = 200 };

/* A connection, for the watchdog. */
typedef struct tracked {
    int fd;
    double waiting_since;  /* when it began waiting for its next request */
    bool answering;        /* its request is read; the answer is on its way */
    bool cut;
    struct tracked *prev, *next;
} tracked;

typedef struct server {
    const serve_config *config;
    serve_loop **loops;          /* (model_count) */
    char *models_json;           /* GET /v1/models */
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;
    pthread_cond_t answered;     /* in_flight fell */
    pthread_cond_t stop_watch;
    int in_flight;               /* translation requests accepted, not yet answered */
    atomic_int exploring;        /* explorer requests being decoded (on HTTP threads) */
    bool draining, stopping;
    atomic_bool listening;       /* libmicrohttpd's messages are left out from then on */
    char why_not[256];           /* libmicrohttpd's last message before that */
    tracked *connections;
    pthread_t watchdog;
} server;

/* One HTTP request. */
typedef struct request {
    server *server;
    struct MHD_Connection *connection;
    tracked *link;
    char method[16];     /* for the log: GET, POST... */
    char path[80];
    double start;
    char *body;
    size_t length, capacity;
    bool too_large;
    serve_request fields;
    int model;           /* which of the models served */
    serve_job *job;
    bool counted;        /* in server->in_flight */
    int refused;         /* 429 or 413: the loop refused the job after it was suspended */
    int status;          /* the status answered; 0: none */
} request;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- answers ----------------------------------------------------------------- */

static void start_answering(request *r)
{
    pthread_mutex_lock(&r->server->lock);
    if (r->link)
        r->link->answering = true;
    pthread_mutex_unlock(&r->server->lock);
}

/* Queues `json` (malloc'ed; NULL: out of memory, a 500) with `status`,
 * and a header when `header` is not NULL. */
static enum MHD_Result respond(request *r, int status, char *json, const char *header,
                               const char *value)
{
    static const char no_memory[] = "{\"error\":\"out of memory\"}";
    struct MHD_Response *answer =
        json ? MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(sizeof no_memory - 1, (void *)no_memory,
                                               MHD_RESPMEM_PERSISTENT);
    if (!answer) {
        free(json);
        return MHD_NO;
    }
    status = json ? status : MHD_HTTP_INTERNAL_SERVER_ERROR;
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    if (header && json)
        MHD_add_response_header(answer, header, value);
    start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, (unsigned)status, answer);
    MHD_destroy_response(answer);
    r->status = status;
    return queued;
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

static enum MHD_Result refuse_draining(request *r)
{
    return refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
                  "the server is shutting down; send the request to another one");
}

/* The answer of a job whose sentences are all done. */
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
    return respond(r, MHD_HTTP_OK, serve_answer(job, r->fields.scores), NULL, NULL);
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
 * done; a refusal is answered once the connection is resumed. */
static enum MHD_Result submit(request *r, serve_loop *loop)
{
    server *s = r->server;
    pthread_mutex_lock(&s->lock);
    bool draining = s->draining;
    r->counted = !draining;
    s->in_flight += r->counted;
    pthread_mutex_unlock(&s->lock);
    if (draining)
        return refuse_draining(r);
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

static int find_model(const serve_config *c, const char *name)
{
    for (int i = 0; i < c->model_count; i++)
        if (!name || !strcmp(c->models[i].name, name))
            return i;
    return -1;
}

/* The whole body is in: parse, check, tokenize, decode. */
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
    int m = r->model = find_model(c, r->fields.model);
    if (m < 0)
        return refuse(r, MHD_HTTP_NOT_FOUND, NULL, NULL,
                      "model \"%.100s\" is not served here (GET /v1/models lists them)",
                      r->fields.model);
    const ted_model *model = c->models[m].model;
    ted_translate_options options;
    ted_error err = {0};
    if (frontend_choose_options(model, &r->fields.choice, &serve_field_names, &options,
                                     &err) ||
        serve_job_new(model, &options, r->fields.texts, r->fields.count, &r->job, &err))
        return refuse(r,
                      err.status == TED_ERR_NOMEM ? MHD_HTTP_INTERNAL_SERVER_ERROR
                                                  : MHD_HTTP_BAD_REQUEST,
                      NULL, NULL, "%s", err.message);
    if (!serve_job_within_budget(r->job, c->max_request_tokens, message, sizeof message))
        return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL, "%s", message);
    r->job->log_probs = r->fields.scores || options.decode.n_best > 1;
    if (r->job->unfinished == 0)
        return answer_job(r);
    return submit(r, r->server->loops[m]);
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
    start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, MHD_HTTP_OK, answer);
    MHD_destroy_response(answer);
    r->status = MHD_HTTP_OK;
    return queued;
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
        return respond(r, MHD_HTTP_OK,
                       serve_explorer_models(s->config->models, s->config->model_count), NULL,
                       NULL);
    if (is_draining(s))
        return refuse_draining(r);
    return respond(r, MHD_HTTP_OK, strdup("{\"status\":\"ok\"}"), NULL, NULL);
}

/* Answers at once, or returns MHD_YES to read the body of a translation. */
static enum MHD_Result route(request *r)
{
    const serve_config *c = r->server->config;
    serve_asset asset;
    if (serve_explorer_asset(r->path, &asset))
        return send_asset(r, &asset);
    if (!strcmp(r->path, "/healthz") || !strcmp(r->path, "/v1/models") ||
        !strcmp(r->path, "/v1/explorer"))
        return get(r);
    if (strcmp(r->path, "/v1/translate") && !serve_explorer_endpoint(r->path))
        return refuse(r, MHD_HTTP_NOT_FOUND, NULL, NULL,
                      "no such path: %s (there are POST /v1/translate, GET /v1/models, "
                      "GET /healthz, and the explorer: GET /, GET /v1/explorer, "
                      "POST /v1/explore, POST /v1/beam)",
                      r->path);
    if (strcmp(r->method, MHD_HTTP_METHOD_POST))
        return wrong_method(r, MHD_HTTP_METHOD_POST);
    if (is_draining(r->server))
        return refuse_draining(r);
    const char *length = MHD_lookup_connection_value(r->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > c->max_body)
        return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                      "the body is %s bytes, over %zu (--max-body)", length, c->max_body);
    return MHD_YES;
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

static request *new_request(server *s, struct MHD_Connection *c, const char *url,
                            const char *method)
{
    request *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    *r = (request){.server = s, .connection = c, .start = now(),
                   .link = info ? info->socket_context : NULL};
    snprintf(r->method, sizeof r->method, "%s", method);
    snprintf(r->path, sizeof r->path, "%s", url);
    return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **context)
{
    (void)version;
    request *r = *context;
    if (!r) {
        if (!(r = new_request(cls, c, url, method)))
            return MHD_NO;
        *context = r;
        return route(r);
    }
    if (*upload_size > 0) {
        take_body(r, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->job)  /* resumed: the job is done, or was refused */
        return answer_job(r);
    return serve_explorer_endpoint(r->path) ? explore(r) : translate(r);
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
    char status[16];
    snprintf(status, sizeof status, r->status ? "%d" : "cut", r->status);
    int sentences = r->fields.count;
    fprintf(stderr, "ted serve: %s %s %s %d sentence%s %.1f ms\n", r->method, r->path, status,
            sentences, sentences == 1 ? "" : "s", (now() - r->start) * 1e3);
    pthread_mutex_lock(&s->lock);
    s->in_flight -= r->counted;
    if (r->counted)
        pthread_cond_broadcast(&s->answered);
    if (r->link) {
        r->link->answering = false;
        r->link->waiting_since = now();
    }
    pthread_mutex_unlock(&s->lock);
    serve_job_free(r->job);
    serve_request_free(&r->fields);
    free(r->body);
    free(r);
    *context = NULL;
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
        *t = (tracked){.fd = info ? info->connect_fd : -1, .waiting_since = now(),
                       .next = s->connections};
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

/* Cuts the connections that took over --timeout to send their request
 * (headers and body): a slow client must not hold a connection forever. */
static void cut_late_connections(server *s)
{
    double limit = s->config->timeout, t = now();
    for (tracked *c = s->connections; c; c = c->next)
        if (!c->answering && !c->cut && c->fd >= 0 && t - c->waiting_since > limit) {
            shutdown(c->fd, SHUT_RDWR);
            c->cut = true;
            fprintf(stderr, "ted serve: cut a connection: no whole request in %d s (--timeout)\n",
                    s->config->timeout);
        }
}

static void *watchdog_main(void *arg)
{
    server *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        cut_late_connections(s);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WATCH_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&s->stop_watch, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* ---- starting and stopping ----------------------------------------------------- */

/* Connections the process can hold: its file limit raised to the most it
 * may, minus room for the model files and the threads. */
static unsigned connection_limit(void)
{
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files))
        return 1000;
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NOFILE, &files);
    rlim_t limit = files.rlim_cur > 2 * FD_RESERVE ? files.rlim_cur - FD_RESERVE : FD_RESERVE;
    return limit > 100000 ? 100000u : (unsigned)limit;
}

static struct MHD_Daemon *start_daemon(server *s, const struct addrinfo *address)
{
    const serve_config *c = s->config;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (address->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(
        flags, (uint16_t)c->port, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, log_library,
        s, MHD_OPTION_SOCK_ADDR, address->ai_addr, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)HTTP_THREADS, MHD_OPTION_CONNECTION_LIMIT, connection_limit(),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->timeout, MHD_OPTION_NOTIFY_COMPLETED,
        completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
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
    s->daemon = start_daemon(s, address);
    bool v6 = address->ai_family == AF_INET6;
    freeaddrinfo(address);
    if (!s->daemon)
        return ted_fail(err, TED_ERR_IO, "cannot listen on %s port %d: %s", c->host, c->port,
                        s->why_not[0] ? s->why_not : "libmicrohttpd cannot start");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    atomic_store(&s->listening, true);
    fprintf(stderr, "ted serve: listening on http://%s%s%s:%u\n", v6 ? "[" : "", c->host,
            v6 ? "]" : "", info ? info->port : (unsigned)c->port);
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
        status = serve_loop_start(models[i], c->max_batch, c->max_queue, &s->loops[i], err);
        if (status)
            ted_fail_context(err, "model %s", names[i]);
    }
    if (!status && !(s->models_json = serve_models_json(names, models, c->model_count)))
        status = ted_fail(err, TED_ERR_NOMEM, "out of memory describing the models");
    free(names);
    free(models);
    return status;
}

/* Blocks until SIGTERM or SIGINT; returns its name. */
static const char *wait_for_signal(const sigset_t *signals)
{
    int signal = 0;
    while (sigwait(signals, &signal))
        ;
    return signal == SIGTERM ? "SIGTERM" : "SIGINT";
}

/* Stops taking requests; returns once every accepted one is answered. */
static void drain(server *s, const char *why)
{
    pthread_mutex_lock(&s->lock);
    s->draining = true;
    fprintf(stderr, "ted serve: %s: answering the %d requests accepted, then stopping\n", why,
            s->in_flight);
    while (s->in_flight > 0)
        pthread_cond_wait(&s->answered, &s->lock);
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
    pthread_cond_destroy(&s->answered);
    pthread_cond_destroy(&s->stop_watch);
    pthread_mutex_destroy(&s->lock);
}

static void init_server(server *s, const serve_config *config)
{
    *s = (server){.config = config};
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->answered, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&s->stop_watch, &monotonic);
    pthread_condattr_destroy(&monotonic);
}

ted_status serve_run(const serve_config *config, ted_error *err)
{
    /* Every thread started from here on leaves SIGTERM and SIGINT to sigwait. */
    sigset_t signals, before;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, &before);
    signal(SIGPIPE, SIG_IGN);
    server s;
    init_server(&s, config);
    ted_status status = start_loops(&s, err);
    bool watching = !status && !pthread_create(&s.watchdog, NULL, watchdog_main, &s);
    if (!status && !watching)
        status = ted_fail(err, TED_ERR_NOMEM, "cannot start the watchdog thread");
    if (!status)
        status = listen_on(&s, err);
    if (!status)
        drain(&s, wait_for_signal(&signals));
    stop(&s, watching);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    return status;
}
