/* The JSON of ted serve: POST /v1/translate bodies in, answers and errors
 * out (docs/serving.md lists every field). */
#ifndef TED_SERVE_REQUEST_H
#define TED_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "document/document.h"
#include "frontend/limits.h"
#include "frontend/options.h"
#include "serve/job.h"
#include "serve/loop.h"

typedef struct serve_request {
    struct cJSON *root;        /* the parsed body; the strings below live in it */
    const char *model;         /* NULL: the first model served, or the route's */
    const char *api_key;       /* NULL: none */
    const char **texts;        /* (count) */
    int count;
    frontend_choice choice;
    bool scores;
    bool split_sentences;    /* each text a paragraph (serve/documents.h) */
    document_format format;  /* DOCUMENT_HTML: each text an HTML page */
    bool stream;               /* the answer as Server-Sent Events (serve/stream.h) */
} serve_request;

/* How ted serve names the options in its messages: by their JSON fields
 * (sampling as "sample": true). */
extern const frontend_option_names serve_field_names;

/* The setting of word option `option` that JSON value `v` gives (one of
 * ted_option_word's words as a string, or a word JSON reads as true or
 * false as that literal) into *value; false for none. */
bool serve_option_word(ted_option option, const struct cJSON *v, int *value);

/* The words of `option` as a request gives them: 'false, true or "never"'. */
void serve_option_words(ted_option option, char *out, size_t size);

/* bad_words_ids: [[5, 17], [9]], each list a sequence of target ids, added
 * to d's; false when `v` is not such lists or they are too many. */
bool serve_read_bad_words(const struct cJSON *v, frontend_choice *d);

/* Parses a body: a JSON object of known fields, each of its type. Returns
 * false with the reason in `message` (a 400 answer). */
bool serve_parse_request(const char *body, size_t length, serve_request *request,
                         char *message, size_t size);
void serve_request_free(serve_request *request);

/* Why a request is refused: the HTTP status (0: none) and the message of
 * its {"error": "..."}, which names the field or header at fault. */
typedef struct serve_refusal {
    int status;
    char message[TED_ERROR_MESSAGE_SIZE];
} serve_refusal;

/* Records the refusal; returns false, so that a check reads
 * `return serve_refuse(no, 400, "...")`. */
bool serve_refuse(serve_refusal *no, int status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* The one rule on NUL characters, for every field of every endpoint (JSON,
 * query string, form): a C string would end there, so a field holding one
 * is refused, 400 "FIELD: a NUL character (U+0000); no field may hold
 * one". `field` names it as the client wrote it (cut and made valid UTF-8
 * here); returns false. */
bool serve_refuse_nul(serve_refusal *no, const char *field, size_t length);

/* Whether a JSON body holds a NUL character, raw or escaped as \u0000 (cJSON
 * would cut the string there); if so, the refusal names the field whose
 * string holds it: "text[2]" (an item of a list), "q", "a field's name", or
 * "the body" outside any field. */
bool serve_json_nul(const char *body, size_t length, serve_refusal *no);

enum { FIELD_NAME_SHOWN = 65 };  /* at most 64 bytes, and the NUL */

/* Copies `text` into `out` (`size` bytes with the NUL) as valid UTF-8: each
 * byte that begins no character becomes U+FFFD, a character cut short by
 * the end of `text` is left out, and the copy stops before a character
 * that does not fit, never in its middle. Returns `out`. */
char *serve_utf8_clean(const char *text, char *out, size_t size);

/* {"translations": [...]}: a string per text, or with n-best lists or
 * scores a list per text of {"text", "score", "log_prob"
 * [, "token_log_probs"]}. malloc'ed; NULL when out of memory. */
char *serve_answer(const serve_job *job, bool scores);

/* One leg of the way a request was translated: the model and the
 * languages it translated between. */
typedef struct serve_leg_report {
    const char *model, *source_lang, *target_lang;
} serve_leg_report;

/* serve_answer with "route": [{"model", "source_lang", "target_lang"}],
 * the legs the texts went through (two when through English). */
char *serve_answer_routed(const serve_job *job, bool scores, const serve_leg_report *legs,
                          int count);

/* The rows x steps a job may decode at most: the sum over its sentences
 * to decode (a blank one, done at once, decodes nothing) of the rows each takes (n_best samples when sampling, the beam's width
 * in beam search, else 1) times its max length (ted_max_target_length).
 * What its caches may hold at worst is proportional to it. */
long long serve_job_tokens(const serve_job *job);

/* True when the job is within `budget` tokens (serve_job_tokens); else
 * false with the reason in `message` (a 413 answer). */
bool serve_job_within_budget(const serve_job *job, long long budget, char *message,
                             size_t size);

/* {"error": "message"}, malloc'ed; NULL when out of memory. The message is
 * made valid UTF-8 first (serve_utf8_clean): an error may quote client bytes. */
char *serve_error_json(const char *message);

/* The models served, for GET /v1/models: {"models": [{"name", "config",
 * "parameters"}]}; the config as config.yaml has it. malloc'ed. */
char *serve_models_json(const char *const *names, const ted_model *const *models, int count);

/* GET /v1/stats: {"models": [{"name", "rows", "encoding_rows", "waiting",
 * "sentences", "dropped"}]}, what each model's loop holds now
 * (serve_loop_counts). malloc'ed; NULL when out of memory. */
char *serve_stats_json(const char *const *names, const serve_loop_counts *counts, int count);

#endif
