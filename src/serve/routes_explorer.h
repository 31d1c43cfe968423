/* The explorer's page and /openapi.yaml, from memory, and its decodes
 * (serve/explore.h), on the HTTP thread. */
#ifndef TED_SERVE_ROUTES_EXPLORER_H
#define TED_SERVE_ROUTES_EXPLORER_H

#include "serve/explore.h"
#include "serve/http.h"

/* A file of the page, with a policy that lets it reach this server only. */
enum MHD_Result http_send_asset(request *r, const serve_asset *asset);
serve_asset http_openapi_asset(void);
/* The whole body of an explorer request is in: it is decoded here, on this
 * HTTP thread, with a session of its own; one at a time, others get a 503. */
enum MHD_Result http_explore(request *r);

#endif
