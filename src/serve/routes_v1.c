/* POST /v1/translate (serve/routes_v1.h). */
#include "serve/routes_v1.h"

#include <stdlib.h>
#include <string.h>

#include "serve/fields.h"
#include "serve/legs.h"
#include "ted/util.h"

static int find_model(const serve_config *c, const char *name)
{
    for (int i = 0; i < c->model_count; i++)
        if (!name || !strcmp(c->models[i].name, name))
            return i;
    return -1;
}

/* The route of a /v1/translate: the model named (or, without languages,
 * the first), with its languages; or the route that source_lang and
 * target_lang lead to. False with the refusal. */
static bool v1_route(request *r, serve_refusal *no)
{
    const serve_config *c = r->server->config;
    const serve_request *f = &r->fields;
    const char *source = f->choice.languages.source, *target = f->choice.languages.target;
    const serve_routes *routes = r->server->routes;
    char a[FIELD_NAME_SHOWN], b[FIELD_NAME_SHOWN];
    if (f->model || !source || !target) {
        int m = find_model(c, f->model);
        if (m < 0)
            return serve_refuse(no, MHD_HTTP_NOT_FOUND,
                                "model \"%s\" is not served here (GET /v1/models lists them)",
                                serve_utf8_clean(f->model, a, sizeof a));
        r->route = (serve_route){
            1, {{m, source ? serve_model_code(routes, m, false, source) : NULL,
                 target ? serve_model_code(routes, m, true, target) : NULL}}};
        return true;
    }
    r->routed = true;
    return serve_route_find(routes, source, target, &r->route) ||
           serve_refuse(no, MHD_HTTP_BAD_REQUEST,
                        "no model here translates %s into %s, directly or through English "
                        "(GET /languages lists the pairs)",
                        serve_utf8_clean(source, a, sizeof a), serve_utf8_clean(target, b, sizeof b));
}

/* The whole body of a /v1/translate is in: parse, check, route, decode. */
enum MHD_Result http_translate(request *r)
{
    const serve_config *c = r->server->config;
    http_start_answering(r);
    if (r->too_large)
        return http_refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                           "the body is over %zu bytes (--max-body)", c->max_body);
    char message[TED_ERROR_MESSAGE_SIZE];
    if (!serve_parse_request(r->body ? r->body : "", r->length, &r->fields, message,
                             sizeof message))
        return http_refuse(r, MHD_HTTP_BAD_REQUEST, NULL, NULL, "%s", message);
    enum MHD_Result answer;
    if (!http_key_allowed(r, r->fields.api_key, &answer))
        return answer;
    serve_refusal no;
    if (!v1_route(r, &no))
        return http_refuse(r, no.status, NULL, NULL, "%s", no.message);
    return http_start_leg(r, r->fields.texts, r->fields.count);
}
