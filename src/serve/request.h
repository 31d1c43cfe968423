/* The JSON of ted serve: POST /v1/translate bodies in, answers and errors
 * out (docs/serving.md lists every field). */
#ifndef TED_SERVE_REQUEST_H
#define TED_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "frontend/options.h"
#include "serve/job.h"

typedef struct serve_request {
    struct cJSON *root;        /* the parsed body; the strings below live in it */
    const char *model;         /* NULL: the first model served */
    const char **texts;        /* (count) */
    int count;
    frontend_choice choice;
    bool scores;
} serve_request;

/* How ted serve names the options in its messages: by their JSON fields
 * (sampling as "sample": true). */
extern const frontend_option_names serve_field_names;

/* Parses a body: a JSON object of known fields, each of its type. Returns
 * false with the reason in `message` (a 400 answer). */
bool serve_parse_request(const char *body, size_t length, serve_request *request,
                         char *message, size_t size);
void serve_request_free(serve_request *request);

/* {"translations": [...]}: a string per text, or with n-best lists or
 * scores a list per text of {"text", "score", "log_prob"
 * [, "token_log_probs"]}. malloc'ed; NULL when out of memory. */
char *serve_answer(const serve_job *job, bool scores);

/* {"error": "message"}, malloc'ed; NULL when out of memory. */
char *serve_error_json(const char *message);

/* The models served, for GET /v1/models: {"models": [{"name", "config",
 * "parameters"}]}; the config as config.yaml has it. malloc'ed. */
char *serve_models_json(const char *const *names, const ted_model *const *models, int count);

#endif
