/* The fields of a LibreTranslate request (POST /translate, /detect), read
 * where LibreTranslate reads them: from a JSON body when the Content-Type
 * is application/json; otherwise from the query string and a form body
 * (application/x-www-form-urlencoded or multipart/form-data), the query
 * string first. The one reader of those fields for every endpoint. */
#ifndef TED_SERVE_FIELDS_H
#define TED_SERVE_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include "serve/request.h"

struct MHD_Connection;

typedef enum libre_field {
    LIBRE_SOURCE,
    LIBRE_TARGET,
    LIBRE_FORMAT,
    LIBRE_API_KEY,
    LIBRE_ALTERNATIVES,
    LIBRE_Q,  /* the texts: `q` below */
    LIBRE_FIELD_COUNT,
} libre_field;

typedef struct libre_fields {
    const char *value[LIBRE_FIELD_COUNT];  /* NULL: not given (or JSON null) */
    const char **q;                        /* (q_count) the texts */
    int q_count;
    bool q_list;                           /* q came as a list */
    int alternatives;                      /* 0 when not given; below 0 counts as 0 */
    struct cJSON *root;                    /* a JSON body: the strings live in it */
    char *owned[LIBRE_FIELD_COUNT];        /* form and query values, malloc'ed */
} libre_fields;

/* Reads the fields of the request on `c` with its whole body. False with
 * the refusal filled: 415 for a body that is neither JSON nor a form, 400
 * for malformed JSON, a NUL character, a field of the wrong type or an
 * `alternatives` that is not a number. */
bool libre_read_fields(struct MHD_Connection *c, const char *body, size_t length,
                       libre_fields *fields, serve_refusal *no);

/* The fields of a JSON body alone (libre_read_fields for a request whose
 * Content-Type is application/json). */
bool libre_read_json(const char *body, size_t length, libre_fields *fields, serve_refusal *no);

void libre_fields_free(libre_fields *fields);

#endif
