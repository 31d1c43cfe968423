/* ted serve: the HTTP service (libmicrohttpd) in front of the decoding
 * loops (serve/loop.h). docs/serving.md describes the API, the limits and
 * what happens past them. */
#ifndef TED_SERVE_SERVER_H
#define TED_SERVE_SERVER_H

#include <stddef.h>

#include "serve/config.h"
#include "ted/ted.h"

/* Serves until SIGTERM or SIGINT, then answers every request it accepted
 * (new ones get 503) and returns TED_OK; a second SIGTERM or SIGINT while
 * it answers them ends the process at once (exit status 1). Once it listens, the first line
 * on standard error is "ted serve: listening on http://HOST:PORT"; then
 * one line per request. Fails (TED_ERR_IO) when it cannot listen. */
ted_status serve_run(const serve_config *config, ted_error *err);

#endif
