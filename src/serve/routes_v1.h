/* POST /v1/translate: its body parsed (serve/request.h), its key checked
 * and its route found (a model, or two through English); its legs then
 * go through serve/legs.h. */
#ifndef TED_SERVE_ROUTES_V1_H
#define TED_SERVE_ROUTES_V1_H

#include "serve/http.h"

/* The whole body of a /v1/translate is in: parse, check, route, decode. */
enum MHD_Result http_translate(request *r);

#endif
