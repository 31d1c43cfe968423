/* ted serve: the HTTP service (libmicrohttpd) in front of the decoding
 * loops (serve/loop.h). docs/serving.md describes the API, the limits and
 * what happens past them. */
#ifndef TED_SERVE_SERVER_H
#define TED_SERVE_SERVER_H

#include <stddef.h>

#include "serve/model.h"
#include "ted/ted.h"

typedef struct serve_config {
    const serve_model *models;  /* the first answers requests that name none */
    int model_count;
    const char *host;           /* an address or a name to listen on */
    int port;                   /* 0: a free port */
    int max_batch;              /* rows each model decodes together */
    int threads;                /* of the matrix products (ted_set_threads) */
    int max_queue;              /* sentences each model holds at once */
    size_t max_body;            /* bytes of a request body */
    long long max_request_tokens;  /* rows x steps a request may decode (serve_job_tokens) */
    int timeout;                /* seconds a connection has to send each request */
    int idle_timeout;           /* seconds a connection may wait between requests */
    int max_connections;        /* connections at once; 0: what the descriptors allow */
    int max_client_connections; /* connections at once from one client address */
    const char *const *allowed_hosts;  /* --allow-host NAMEs (allowed_host_count) */
    int allowed_host_count;
    const char *cors;           /* --cors: the origin allowed to read answers, "*" for
                                 * every one; NULL: none (no CORS headers) */
    const char *api_keys;       /* --api-keys FILE (serve/keys.h); NULL: no key needed */
    int alternatives_limit;     /* LibreTranslate's `alternatives` at most (serve/libre.h) */
} serve_config;

/* Serves until SIGTERM or SIGINT, then answers every request it accepted
 * (new ones get 503) and returns TED_OK; a second SIGTERM or SIGINT while
 * it answers them ends the process at once (exit status 1). Once it listens, the first line
 * on standard error is "ted serve: listening on http://HOST:PORT"; then
 * one line per request. Fails (TED_ERR_IO) when it cannot listen. */
ted_status serve_run(const serve_config *config, ted_error *err);

#endif
