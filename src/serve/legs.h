/* The legs of a translation request, POST /v1/translate
 * (serve/routes_v1.h) or LibreTranslate's POST /translate
 * (serve/routes_libre.h), once its route is found: a leg is one model's
 * translation, two legs a route through English. Each leg's job is made
 * from the texts (the client's, or the previous leg's translations; read
 * as documents with serve/documents.h), checked against
 * --max-request-tokens and handed to its model's decoding loop
 * (serve/loop.h), the connection suspended until the job is done
 * (http_resume); or, with "stream": true, answered as it decodes
 * (serve/stream.h). serve/answer.h takes the request from there. */
#ifndef TED_SERVE_LEGS_H
#define TED_SERVE_LEGS_H

#include "serve/http.h"

/* Makes the job of the current leg (r->leg) from `texts` (count) and
 * hands it to its model's loop; a job with nothing to decode, or one the
 * loop refuses, is answered once the connection resumes. Every leg but the
 * last keeps one hypothesis per sentence. */
enum MHD_Result http_start_leg(request *r, const char *const *texts, int count);

#endif
