/* How ted serve serves: its models, where it listens, and the bounds of
 * the command line (ted serve --help), as the command line sets them
 * (cli/serve.c) and the service's parts read them (serve/server.h,
 * serve/http.h). */
#ifndef TED_SERVE_CONFIG_H
#define TED_SERVE_CONFIG_H

#include <stddef.h>

#include "serve/model.h"

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

#endif
