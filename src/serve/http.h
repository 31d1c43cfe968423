/* What the parts of ted serve's HTTP service share (serve/server.c and the
 * files it hands a request to): the server's state, one request's state,
 * and the answers every route sends (serve/http.c). The parts, each a job,
 * in the order a translation request goes through them (CONTRIBUTING.md,
 * "A request's path through ted serve"): serve/connections.c (the caps on
 * connections), serve/server.c (libmicrohttpd's access handler, the route
 * table, starting and stopping), serve/routes_v1.c (POST /v1/translate)
 * and serve/routes_libre.c (LibreTranslate's POST /translate and
 * /detect), serve/legs.c (each leg's job handed to its model's loop),
 * serve/answer.c (the answer once the job is done, and the log line);
 * beside them serve/routes_explorer.c (the explorer's page and decodes,
 * /openapi.yaml) and serve/watchdog.c (connections too slow or idle too
 * long). */
#ifndef TED_SERVE_HTTP_H
#define TED_SERVE_HTTP_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "serve/documents.h"
#include "serve/guard.h"
#include "serve/keys.h"
#include "serve/languages.h"
#include "serve/libre.h"
#include "serve/loop.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/config.h"
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
    ted_threads **pools;         /* (model_count): each loop's pool, for the explorer */
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

/* ---- answers (serve/http.c) ---- */

/* The request is being answered: the caps on connections never close it. */
void http_start_answering(request *r);

/* The CORS headers of an answer (--cors): Access-Control-Allow-Origin
 * when the request's Origin is the one allowed (or every one is). */
void http_add_cors(request *r, struct MHD_Response *answer);

/* Queues `body` (malloc'ed, of `type`; NULL: out of memory, a JSON 500)
 * with `status`, and a header when `header` is not NULL. */
enum MHD_Result http_respond_as(request *r, int status, char *body, const char *type,
                                const char *header, const char *value);

/* http_respond_as() with a JSON body. */
enum MHD_Result http_respond(request *r, int status, char *json, const char *header,
                             const char *value);

/* {"error": "..."} with `status`. */
enum MHD_Result http_refuse(request *r, int status, const char *header, const char *value,
                            const char *format, ...) __attribute__((format(printf, 5, 6)));

/* A refusal of the request's headers (serve/guard.h): the connection is
 * closed after it, since what follows on it cannot be trusted. */
enum MHD_Result http_refuse_closing(request *r, const serve_refusal *no);

/* 503 to a request that came during the drain. */
enum MHD_Result http_refuse_draining(request *r);

/* 405 to a request of another method than `allowed`. */
enum MHD_Result http_wrong_method(request *r, const char *allowed);

/* A CORS preflight (OPTIONS, with --cors): what a page may send. */
enum MHD_Result http_preflight(request *r);

/* Whether a request with API key `key` may go on (--api-keys); when not,
 * `*answer` is its refusal: 403 without a valid key, 429 over its limit. */
bool http_key_allowed(request *r, const char *key, enum MHD_Result *answer);

/* A serve_job's done callback (`data`: its request): resumes the
 * request's suspended connection, from the decoding thread once every
 * sentence of the job is done; libmicrohttpd then hands the request to
 * serve/answer.h (through handle). */
void http_resume(serve_job *job, void *data);

#endif
