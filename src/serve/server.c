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
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve/answer.h"
#include "serve/connections.h"
#include "serve/detect.h"
#include "serve/explore.h"
#include "serve/http.h"
#include "serve/routes_explorer.h"
#include "serve/routes_libre.h"
#include "serve/routes_v1.h"
#include "serve/watchdog.h"
#include "ted/util.h"

static bool is_draining(server *s)
{
    pthread_mutex_lock(&s->lock);
    bool draining = s->draining;
    pthread_mutex_unlock(&s->lock);
    return draining;
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
        return http_wrong_method(r, MHD_HTTP_METHOD_GET);
    if (!strcmp(r->path, "/v1/models")) {
        char *json = strdup(s->models_json);
        return http_respond(r, MHD_HTTP_OK, json, NULL, NULL);
    }
    if (!strcmp(r->path, "/v1/explorer"))
        return http_respond(r, MHD_HTTP_OK, strdup(s->explorer_json), NULL, NULL);
    if (!strcmp(r->path, "/languages"))
        return http_respond(r, MHD_HTTP_OK, strdup(s->languages_json), NULL, NULL);
    if (!strcmp(r->path, "/frontend/settings"))
        return http_respond(r, MHD_HTTP_OK, strdup(s->settings_json), NULL, NULL);
    if (!strcmp(r->path, "/v1/stats"))
        return http_respond(r, MHD_HTTP_OK, stats_json(s), NULL, NULL);
    if (!strcmp(r->path, "/metrics"))
        return http_respond_as(r, MHD_HTTP_OK, metrics_text(s), "text/plain; version=0.0.4", NULL,
                               NULL);
    if (is_draining(s))
        return http_refuse_draining(r);
    return http_respond(r, MHD_HTTP_OK, strdup("{\"status\":\"ok\"}"), NULL, NULL);
}

/* A POST to a JSON endpoint: accepted before the drain, of JSON, and of a
 * size within --max-body when it says its size. */
static enum MHD_Result route_post(request *r)
{
    const serve_config *c = r->server->config;
    if (strcmp(r->method, MHD_HTTP_METHOD_POST))
        return http_wrong_method(r, MHD_HTTP_METHOD_POST);
    if (!r->counted)
        return http_refuse_draining(r);
    serve_refusal no;
    if (!http_is_libre_post(r->path) && !serve_guard_json(r->connection, &no))
        return http_refuse_closing(r, &no);
    const char *length = MHD_lookup_connection_value(r->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > c->max_body) {
        r->close = true;
        return http_refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                           "the body is %s bytes, over %zu (--max-body)", length, c->max_body);
    }
    return MHD_YES;
}

/* Answers at once, or returns MHD_YES to read the body of a POST. */
static enum MHD_Result route(request *r, const char *version)
{
    serve_refusal no;
    if (!serve_guard_headers(r->connection, version, &r->server->hosts, &no))
        return http_refuse_closing(r, &no);
    if (r->server->config->cors && !strcmp(r->method, MHD_HTTP_METHOD_OPTIONS))
        return http_preflight(r);
    serve_asset asset;
    if (serve_explorer_asset(r->path, &asset))
        return http_send_asset(r, &asset);
    if (!strcmp(r->path, "/openapi.yaml") && (asset = http_openapi_asset(), true))
        return http_send_asset(r, &asset);
    if (!strcmp(r->path, "/healthz") || !strcmp(r->path, "/v1/models") ||
        !strcmp(r->path, "/v1/explorer") || !strcmp(r->path, "/v1/stats") ||
        !strcmp(r->path, "/metrics") || !strcmp(r->path, "/languages") ||
        !strcmp(r->path, "/frontend/settings"))
        return get(r);
    /* /v1/generate: /v1/translate under a task-neutral name (ted generate) */
    if (strcmp(r->path, "/v1/translate") && strcmp(r->path, "/v1/generate") &&
        !serve_explorer_endpoint(r->path) && !http_is_libre_post(r->path))
        return http_refuse(r, MHD_HTTP_NOT_FOUND, NULL, NULL,
                           "no such path: %s (there are POST /v1/translate, POST /v1/generate, "
                           "GET /v1/models, GET /v1/stats, GET /metrics, GET /healthz, "
                           "GET /openapi.yaml; LibreTranslate's POST /translate, POST /detect, "
                           "GET /languages, GET /frontend/settings; and the explorer: GET /, "
                           "GET /v1/explorer, POST /v1/explore, POST /v1/beam)",
                           r->path);
    return route_post(r);
}

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
    if (r->job)  /* resumed (http_resume): its job is done, or was refused */
        return http_answer(r);
    if (!strcmp(r->path, "/translate"))
        return http_libre_translate(r);
    if (!strcmp(r->path, "/detect"))
        return http_libre_detect(r);
    return serve_explorer_endpoint(r->path) ? http_explore(r) : http_translate(r);
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

/* libmicrohttpd's own cap is twice ours (admit), which it splits among
 * its threads: so that no thread stops taking connections while the
 * process has room for them. */
static struct MHD_Daemon *start_daemon(server *s, int fd, bool v6)
{
    const serve_config *c = s->config;
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (v6)
        flags |= MHD_USE_IPv6;
    s->max_connections = connection_limit(c);
    return MHD_start_daemon(
        flags, (uint16_t)s->hosts.port, http_admit, s, handle, s, MHD_OPTION_EXTERNAL_LOGGER,
        log_library, s, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)HTTP_THREADS, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(2 * s->max_connections + 2 * HTTP_THREADS), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)c->timeout, MHD_OPTION_NOTIFY_COMPLETED, http_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, http_on_connection, s, MHD_OPTION_URI_LOG_CALLBACK,
        http_request_begins, s, MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
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
    s->pools = ted_alloc(c->model_count, sizeof *s->pools, "models", err);
    ted_status status = names && models && s->loops && s->pools ? TED_OK : TED_ERR_NOMEM;
    for (int i = 0; !status && i < c->model_count; i++) {
        names[i] = c->models[i].name;
        models[i] = c->models[i].model;
        status = serve_loop_start(models[i], c->max_batch, c->max_queue, c->threads,
                                  &s->loops[i], err);
        if (status)
            ted_fail_context(err, "model %s", names[i]);
        else
            s->pools[i] = serve_loop_threads(s->loops[i]);
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
    free(s->pools);
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
    bool watching = !status && !pthread_create(&s.watchdog, NULL, http_watchdog_main, &s);
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
