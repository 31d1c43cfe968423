/* The LibreTranslate API of ted serve: POST /translate, POST /detect,
 * GET /languages, GET /frontend/settings, with LibreTranslate's request
 * fields (serve/fields.h), answers and status codes (docs/serving.md,
 * "The LibreTranslate API"). The decoding itself goes through the same
 * jobs and loops as POST /v1/translate. */
#ifndef TED_SERVE_LIBRE_H
#define TED_SERVE_LIBRE_H

#include <stdbool.h>

#include "serve/detect.h"
#include "serve/documents.h"
#include "serve/fields.h"
#include "serve/job.h"
#include "serve/languages.h"

/* The default of --alternatives-limit: the most `alternatives` a request
 * may ask for (LibreTranslate's --alternatives-limit). N alternatives are
 * a beam of N + 1 on the model's one beam search thread, which every
 * other beam search request of that model waits for. */
#define LIBRE_ALTERNATIVES_LIMIT 10

/* What the LibreTranslate layer knows of the server. */
typedef struct libre_server {
    const serve_routes *routes;
    serve_detector *detector;        /* NULL: no language has a profile */
    bool keys;                       /* --api-keys: a key is required */
    int alternatives_limit;          /* --alternatives-limit */
} libre_server;

/* A POST /translate on its way: its format, its route, and the language
 * detected for "source": "auto". Its texts are documents
 * (serve/documents.h), cut into sentences as LibreTranslate cuts them, or
 * HTML pages with "format": "html". */
typedef struct libre_request {
    libre_fields fields;
    document_format format;  /* "format": "text" (the default) or "html" */
    serve_route route;
    bool detected;           /* "source": "auto" */
    serve_guess guess;       /* what was detected */
} libre_request;

/* Checks the fields of a POST /translate (read into lr->fields), as
 * LibreTranslate does (`alternatives` up to the server's limit), detects
 * the source language for "auto" and finds the route. False with the
 * refusal (400, or 500 out of memory). */
bool libre_plan(const libre_server *server, libre_request *lr, serve_refusal *no);

/* The choice of decoding options for a leg: the model's defaults; on the
 * last leg with `alternatives` N > 0, beam search of max(N + 1, the
 * model's beam) keeping N + 1 hypotheses. */
frontend_choice libre_leg_choice(const libre_request *lr, const ted_model *model, bool last);

/* How the request's texts are read as documents: sentences split, in its
 * format; `language` the source language's code for ICU (NULL: "en"). */
document_options libre_document_options(const libre_request *lr, const char *language);

/* {"translatedText", ["detectedLanguage"], ["alternatives"]} from the last
 * leg's job, whose sentences are d's (the request's texts as documents):
 * each text rebuilt around its sentences' best translations; its
 * alternatives the text rebuilt with the sentences' k-th hypotheses, each
 * once and none equal to the translation or empty. malloc'ed; NULL when
 * out of memory. */
char *libre_answer(const libre_request *lr, const serve_documents *d, const serve_job *job);

void libre_request_free(libre_request *lr);

/* POST /detect: [{"confidence", "language"}] for the fields' q (its texts
 * joined), every language detected, most likely first. NULL with the
 * refusal filled. */
char *libre_detect_json(const libre_server *server, const libre_fields *fields,
                        serve_refusal *no);

/* GET /frontend/settings. malloc'ed; NULL when out of memory. */
char *libre_settings_json(const libre_server *server);

#endif
