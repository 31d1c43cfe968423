/* LibreTranslate's POST /translate (its texts go through the legs of
 * serve/legs.h) and POST /detect, their fields read by serve/libre.h. */
#ifndef TED_SERVE_ROUTES_LIBRE_H
#define TED_SERVE_ROUTES_LIBRE_H

#include "serve/http.h"

/* POST /translate. */
enum MHD_Result http_libre_translate(request *r);
/* POST /detect. */
enum MHD_Result http_libre_detect(request *r);
bool http_is_libre_post(const char *path);

#endif
