/* The LibreTranslate API of ted serve: POST /translate, POST /detect,
 * GET /languages, GET /frontend/settings, with LibreTranslate's request
 * fields (serve/fields.h), answers and status codes (docs/serving.md,
 * "The LibreTranslate API"). The decoding itself goes through the same
 * jobs and loops as POST /v1/translate. */
#ifndef TED_SERVE_LIBRE_H
#define TED_SERVE_LIBRE_H

#include <stdbool.h>

#include "serve/detect.h"
#include "serve/fields.h"
#include "serve/job.h"
#include "serve/languages.h"

/* What the LibreTranslate layer knows of the server. */
typedef struct libre_server {
    const serve_routes *routes;
    serve_detector *detector;        /* NULL: no language has a profile */
    bool keys;                       /* --api-keys: a key is required */
} libre_server;

/* A POST /translate on its way: its texts split into lines (each line a
 * sentence, as ted translate reads them), its route, and the language
 * detected for "source": "auto". */
typedef struct libre_request {
    libre_fields fields;
    char *buffer;          /* the lines, each NUL-terminated */
    const char **lines;    /* (line_count) */
    int line_count;
    int *first;            /* (q_count + 1): text i is lines first[i] .. first[i + 1] - 1 */
    serve_route route;
    bool detected;         /* "source": "auto" */
    serve_guess guess;     /* what was detected */
} libre_request;

/* Checks the fields of a POST /translate (read into lr->fields), as
 * LibreTranslate does, detects the source language for "auto", finds the
 * route and splits the texts into lines. False with the refusal (400, or
 * 500 out of memory). */
bool libre_plan(const libre_server *server, libre_request *lr, serve_refusal *no);

/* The choice of decoding options for a leg: the model's defaults; on the
 * last leg with `alternatives` N > 0, beam search of max(N + 1, the
 * model's beam) keeping N + 1 hypotheses. */
frontend_choice libre_leg_choice(const libre_request *lr, const ted_model *model, bool last);

/* {"translatedText", ["detectedLanguage"], ["alternatives"]} from the last
 * leg's job: a text's lines joined by "\n"; its alternatives the other
 * hypotheses, joined likewise, each once and none equal to the
 * translation or empty. malloc'ed; NULL when out of memory. */
char *libre_answer(const libre_request *lr, const serve_job *job);

void libre_request_free(libre_request *lr);

/* POST /detect: [{"confidence", "language"}] for the fields' q (its texts
 * joined), every language detected, most likely first. NULL with the
 * refusal filled. */
char *libre_detect_json(const libre_server *server, const libre_fields *fields,
                        serve_refusal *no);

/* GET /frontend/settings. malloc'ed; NULL when out of memory. */
char *libre_settings_json(const libre_server *server);

#endif
