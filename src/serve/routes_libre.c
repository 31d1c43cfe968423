/* LibreTranslate's API on ted serve (serve/routes_libre.h). */
#include "serve/routes_libre.h"

#include <stdlib.h>
#include <string.h>

#include "serve/legs.h"

/* Reads the fields of a LibreTranslate POST and checks its key; false
 * when it is refused (`*answer`). */
static bool libre_admit(request *r, libre_fields *f, enum MHD_Result *answer)
{
    serve_refusal no;
    http_start_answering(r);
    if (r->too_large) {
        *answer = http_refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                              "the body is over %zu bytes (--max-body)",
                              r->server->config->max_body);
        return false;
    }
    if (!libre_read_fields(r->connection, r->body ? r->body : "", r->length, f, &no)) {
        *answer = http_refuse(r, no.status, NULL, NULL, "%s", no.message);
        return false;
    }
    return http_key_allowed(r, f->value[LIBRE_API_KEY], answer);
}

/* POST /translate. */
enum MHD_Result http_libre_translate(request *r)
{
    enum MHD_Result answer;
    serve_refusal no;
    if (!(r->libre = calloc(1, sizeof *r->libre)))
        return http_refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "out of memory");
    if (!libre_admit(r, &r->libre->fields, &answer))
        return answer;
    if (!libre_plan(&r->server->libre, r->libre, &no))
        return http_refuse(r, no.status, NULL, NULL, "%s", no.message);
    r->route = r->libre->route;
    return http_start_leg(r, r->libre->fields.q, r->libre->fields.q_count);
}

/* POST /detect. */
enum MHD_Result http_libre_detect(request *r)
{
    libre_fields f;
    enum MHD_Result answer;
    serve_refusal no;
    if (!libre_admit(r, &f, &answer)) {
        libre_fields_free(&f);
        return answer;
    }
    char *json = libre_detect_json(&r->server->libre, &f, &no);
    libre_fields_free(&f);
    return json ? http_respond(r, MHD_HTTP_OK, json, NULL, NULL)
                : http_refuse(r, no.status, NULL, NULL, "%s", no.message);
}

bool http_is_libre_post(const char *path)
{
    return !strcmp(path, "/translate") || !strcmp(path, "/detect");
}
