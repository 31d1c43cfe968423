/* ted serve's translation requests: POST /v1/translate parsed, its key
 * checked and its route found (a model, or two through English); then for
 * it and for LibreTranslate's POST /translate (serve/routes_libre.h), each
 * leg's job made and handed to its model's decoding loop (serve/loop.h),
 * the connection suspended until the job is done, and the answer. */
#ifndef TED_SERVE_ROUTES_V1_H
#define TED_SERVE_ROUTES_V1_H

#include "serve/http.h"

/* The whole body of a /v1/translate is in: parse, check, route, decode. */
enum MHD_Result http_translate(request *r);
/* A job is done: the answer, or the next leg over its translations. */
enum MHD_Result http_after_job(request *r);
/* Makes the job of the current leg from `texts` (count) and hands it to
 * its model's loop; with nothing to decode, goes on at once. Every leg
 * but the last keeps one hypothesis per sentence. */
enum MHD_Result http_start_leg(request *r, const char *const *texts, int count);
/* Whether a request with API key `key` may go on (--api-keys); when not,
 * `*answer` is its refusal: 403 without a valid key, 429 over its limit. */
bool http_key_allowed(request *r, const char *key, enum MHD_Result *answer);

#endif
