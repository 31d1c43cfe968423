/* The fields of LibreTranslate requests (serve/fields.h). */
#include "serve/fields.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const names[LIBRE_FIELD_COUNT] = {"source", "target", "format", "api_key",
                                                     "alternatives", "q"};

static int field_of(const char *name)
{
    for (int i = 0; i < LIBRE_FIELD_COUNT; i++)
        if (name && !strcmp(name, names[i]))
            return i;
    return -1;
}

/* The media type of the body: its Content-Type without parameters. */
typedef enum body_kind { BODY_NONE, BODY_JSON, BODY_FORM, BODY_OTHER } body_kind;

static body_kind kind_of(struct MHD_Connection *c)
{
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!type)
        return BODY_NONE;
    while (*type == ' ' || *type == '\t')
        type++;
    size_t n = strcspn(type, "; \t");
    if (n == 16 && !strncasecmp(type, "application/json", n))
        return BODY_JSON;
    if (n > 17 && !strncasecmp(type, "application/", 12) && !strncasecmp(type + n - 5, "+json", 5))
        return BODY_JSON;
    if ((n == 33 && !strncasecmp(type, "application/x-www-form-urlencoded", n)) ||
        (n == 19 && !strncasecmp(type, "multipart/form-data", n)))
        return BODY_FORM;
    return BODY_OTHER;
}

/* `alternatives` as Python's int() reads it: a whole number, in a string
 * or not (a JSON number is cut toward zero, true is 1). */
static bool read_alternatives(const char *text, const cJSON *v, int *out)
{
    if (v && (cJSON_IsNumber(v) || cJSON_IsBool(v))) {
        double d = cJSON_IsBool(v) ? cJSON_IsTrue(v) : v->valuedouble;
        *out = d > INT_MAX ? INT_MAX : d < INT_MIN ? INT_MIN : (int)d;
        return true;
    }
    if (!text)
        return false;
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (end == text || *end || errno || !isdigit((unsigned char)end[-1]))
        return false;
    *out = n > INT_MAX ? INT_MAX : n < INT_MIN ? INT_MIN : (int)n;
    return true;
}

/* ---- JSON bodies ------------------------------------------------------------------ */

static bool read_json_q(const cJSON *v, libre_fields *f, serve_refusal *no)
{
    if (cJSON_IsString(v)) {
        f->value[LIBRE_Q] = v->valuestring;
        return true;
    }
    if (!cJSON_IsArray(v))
        return serve_refuse(no, 400, "q: expected a string or a list of strings");
    int count = cJSON_GetArraySize(v);
    f->q_list = true;
    f->q = calloc(count > 0 ? (size_t)count : 1, sizeof *f->q);
    if (!f->q)
        return serve_refuse(no, 500, "out of memory");
    const cJSON *item;
    cJSON_ArrayForEach(item, v) {
        if (!cJSON_IsString(item))
            return serve_refuse(no, 400, "q[%d]: expected a string", f->q_count);
        f->q[f->q_count++] = item->valuestring;
    }
    return true;
}

static bool read_json_field(const cJSON *v, libre_fields *f, serve_refusal *no)
{
    int i = field_of(v->string);
    if (i < 0 || cJSON_IsNull(v) || f->value[i] || (i == LIBRE_Q && f->q_list))
        return true;  /* other fields are left for other servers, as LibreTranslate does */
    if (i == LIBRE_Q)
        return read_json_q(v, f, no);
    if (i == LIBRE_ALTERNATIVES) {
        f->value[i] = "";
        return read_alternatives(cJSON_IsString(v) ? v->valuestring : NULL, v,
                                 &f->alternatives) ||
               serve_refuse(no, 400, "Invalid request: alternatives parameter is not a number");
    }
    if (!cJSON_IsString(v))
        return serve_refuse(no, 400, "%s: expected a string", names[i]);
    f->value[i] = v->valuestring;
    return true;
}

static bool read_json(const char *body, size_t length, libre_fields *f, serve_refusal *no)
{
    const char *end = NULL;
    if (serve_json_nul(body, length, no))
        return false;
    f->root = cJSON_ParseWithLengthOpts(body, length, &end, false);
    size_t at = end ? (size_t)(end - body) : 0;
    while (f->root && at < length && strchr(" \t\r\n", body[at]))
        at++;
    if (!f->root || at < length)
        return serve_refuse(no, 400, "malformed JSON at byte %zu", at);
    if (!cJSON_IsObject(f->root))
        return serve_refuse(no, 400, "Invalid JSON format");
    const cJSON *v;
    cJSON_ArrayForEach(v, f->root) {
        if (!read_json_field(v, f, no))
            return false;
    }
    return true;
}

/* ---- query strings and forms ---------------------------------------------------------- */

typedef struct form_reader {
    libre_fields *fields;
    size_t length[LIBRE_FIELD_COUNT];
    bool closed[LIBRE_FIELD_COUNT];  /* its first value is read whole */
    bool nul, no_memory;
    serve_refusal *no;               /* a NUL character's refusal */
} form_reader;

/* Whether field `key` (`key_size` bytes) holds a NUL character, in its
 * value or its name, of any field, read or not: then the refusal names it. */
static bool holds_nul(form_reader *r, const char *key, size_t key_size, const char *value,
                      size_t size)
{
    if (key && memchr(key, '\0', key_size))
        serve_refuse_nul(r->no, "a field's name", 14);
    else if (value && memchr(value, '\0', size))
        serve_refuse_nul(r->no, key ? key : "", key ? key_size : 0);
    else
        return false;
    r->nul = true;
    return true;
}

/* Appends `size` bytes to the value of field i. */
static void append(form_reader *r, int i, const char *data, size_t size)
{
    char *grown = realloc(r->fields->owned[i], r->length[i] + size + 1);
    if (!grown) {
        r->no_memory = true;
        return;
    }
    memcpy(grown + r->length[i], data, size);
    r->length[i] += size;
    grown[r->length[i]] = '\0';
    r->fields->owned[i] = grown;
}

/* A field of the query string, of `key_size` and `value_size` bytes: a
 * NUL character in it (%00) is one of them. */
static enum MHD_Result visit_argument(void *data, enum MHD_ValueKind kind, const char *key,
                                      size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    form_reader *r = data;
    if (r->nul || holds_nul(r, key, key_size, value, value_size))
        return MHD_NO;
    int i = field_of(key);
    if (i >= 0 && !r->closed[i]) {
        append(r, i, value ? value : "", value ? value_size : 0);
        r->closed[i] = true;
    }
    return MHD_YES;
}

static enum MHD_Result visit_form(void *data, enum MHD_ValueKind kind, const char *key,
                                  const char *filename, const char *content_type,
                                  const char *transfer_encoding, const char *value,
                                  uint64_t offset, size_t size)
{
    (void)kind, (void)filename, (void)content_type, (void)transfer_encoding;
    form_reader *r = data;
    if (holds_nul(r, key, key ? strlen(key) : 0, value, value ? size : 0))
        return MHD_NO;
    int i = field_of(key);
    if (i < 0)
        return MHD_YES;
    if (offset == 0 && r->fields->owned[i])
        r->closed[i] = true;  /* a second value of the field: the first counts */
    if (!r->closed[i])
        append(r, i, value ? value : "", value ? size : 0);
    return r->nul || r->no_memory ? MHD_NO : MHD_YES;
}

static bool read_form(struct MHD_Connection *c, const char *body, size_t length,
                      form_reader *r, serve_refusal *no)
{
    bool given[LIBRE_FIELD_COUNT];
    memcpy(given, r->closed, sizeof given);
    struct MHD_PostProcessor *p = MHD_create_post_processor(c, 4096, visit_form, r);
    if (!p)
        return serve_refuse(no, 400, "the form's Content-Type lacks its boundary");
    enum MHD_Result read = MHD_post_process(p, body, length);
    MHD_destroy_post_processor(p);
    if (r->nul)
        return false;
    if (r->no_memory)
        return serve_refuse(no, 500, "out of memory");
    for (int i = 0; i < LIBRE_FIELD_COUNT; i++)
        r->closed[i] |= given[i];
    return read == MHD_YES || serve_refuse(no, 400, "malformed form body");
}

/* The query string, then a form body; q is one text. */
static bool read_values(struct MHD_Connection *c, const char *body, size_t length, bool form,
                        libre_fields *f, serve_refusal *no)
{
    form_reader r = {.fields = f, .no = no};
    MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, visit_argument, &r);
    if (r.nul || r.no_memory)
        return r.nul ? false : serve_refuse(no, 500, "out of memory");
    if (form && length && !read_form(c, body, length, &r, no))
        return false;
    for (int i = 0; i < LIBRE_FIELD_COUNT; i++)
        f->value[i] = f->owned[i];
    const char *alternatives = f->value[LIBRE_ALTERNATIVES];
    if (alternatives && !read_alternatives(alternatives, NULL, &f->alternatives))
        return serve_refuse(no, 400, "Invalid request: alternatives parameter is not a number");
    return true;
}

/* The texts as a list, also when q is one string. */
static bool finish(libre_fields *f, serve_refusal *no)
{
    if (!f->q_list && f->value[LIBRE_Q]) {
        if (!(f->q = malloc(sizeof *f->q)))
            return serve_refuse(no, 500, "out of memory");
        f->q[0] = f->value[LIBRE_Q];
        f->q_count = 1;
    }
    f->alternatives = f->alternatives < 0 ? 0 : f->alternatives;
    return true;
}

bool libre_read_json(const char *body, size_t length, libre_fields *f, serve_refusal *no)
{
    *f = (libre_fields){0};
    no->status = 0;
    return read_json(body, length, f, no) && finish(f, no);
}

bool libre_read_fields(struct MHD_Connection *c, const char *body, size_t length,
                       libre_fields *f, serve_refusal *no)
{
    body_kind kind = kind_of(c);
    if (kind == BODY_JSON)
        return libre_read_json(body, length, f, no);
    *f = (libre_fields){0};
    no->status = 0;
    if (kind == BODY_OTHER)
        return serve_refuse(no, 415, "the body must be application/json, "
                                     "application/x-www-form-urlencoded or multipart/form-data");
    return read_values(c, body, length, kind == BODY_FORM, f, no) && finish(f, no);
}

void libre_fields_free(libre_fields *f)
{
    cJSON_Delete(f->root);
    free(f->q);
    for (int i = 0; i < LIBRE_FIELD_COUNT; i++)
        free(f->owned[i]);
    *f = (libre_fields){0};
}
