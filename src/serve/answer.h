/* The end of a translation request: once its connection is resumed
 * (http_resume, by the decoding thread when the job is done, or at once
 * for a job refused or with nothing to decode), its answer (JSON of
 * /v1/translate, routed or not, of documents, or of LibreTranslate), or
 * the next leg of a route through English (serve/legs.h); and, for every
 * request, its log line once it is over. */
#ifndef TED_SERVE_ANSWER_H
#define TED_SERVE_ANSWER_H

#include "serve/http.h"

/* A resumed request whose job is done or refused: the answer, or the next
 * leg over its translations. */
enum MHD_Result http_answer(request *r);

/* libmicrohttpd's MHD_RequestCompletedCallback: the request is over
 * (answered, or its connection closed): one log line, and its memory
 * freed. */
void http_completed(void *cls, struct MHD_Connection *c, void **context,
                    enum MHD_RequestTerminationCode why);

#endif
