/* The explorer's routes on ted serve (serve/routes_explorer.h). */
#include "serve/routes_explorer.h"

#include <string.h>


/* A file of the page, with a policy that lets it reach this server only. */
enum MHD_Result http_send_asset(request *r, const serve_asset *asset)
{
    if (strcmp(r->method, MHD_HTTP_METHOD_GET))
        return http_refuse(r, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW,
                           MHD_HTTP_METHOD_GET, "%s takes GET, not %s", r->path, r->method);
    struct MHD_Response *answer = MHD_create_response_from_buffer(
        asset->size, (void *)asset->data, MHD_RESPMEM_PERSISTENT);
    if (!answer)
        return MHD_NO;
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CONTENT_TYPE, asset->content_type);
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(answer, "Content-Security-Policy", serve_explorer_policy);
    MHD_add_response_header(answer, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(answer, "Referrer-Policy", "no-referrer");
    http_add_cors(r, answer);
    http_start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, MHD_HTTP_OK, answer);
    MHD_destroy_response(answer);
    r->status = MHD_HTTP_OK;
    return queued;
}

/* docs/openapi.yaml, built into the program (serve/openapi_asset.S). */
extern const unsigned char serve_openapi_yaml[], serve_openapi_yaml_end[];

serve_asset http_openapi_asset(void)
{
    return (serve_asset){"/openapi.yaml", "application/yaml; charset=utf-8", serve_openapi_yaml,
                         (size_t)(serve_openapi_yaml_end - serve_openapi_yaml)};
}

/* Explorer requests decoded at once: fewer than the HTTP threads, so that
 * one is always left for translation requests and answers. */
enum { MAX_EXPLORING = HTTP_THREADS - 1 };

/* The whole body of an explorer request is in: it is decoded here, on this
 * HTTP thread, with a session of its own; one at a time, others get a 503. */
enum MHD_Result http_explore(request *r)
{
    server *s = r->server;
    const serve_config *c = s->config;
    http_start_answering(r);
    if (r->too_large)
        return http_refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                           "the body is over %zu bytes (--max-body)", c->max_body);
    if (s->keys)
        return http_refuse(r, MHD_HTTP_FORBIDDEN, NULL, NULL,
                           "the explorer is off while API keys are required (--api-keys)");
    if (atomic_fetch_add(&s->exploring, 1) >= MAX_EXPLORING) {
        atomic_fetch_sub(&s->exploring, 1);
        return http_refuse(r, MHD_HTTP_SERVICE_UNAVAILABLE, MHD_HTTP_HEADER_RETRY_AFTER, "1",
                           "the explorer is decoding another request; retry in a moment");
    }
    int status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    char *json = serve_explore(c->models, c->model_count, s->pools, r->path,
                               r->body ? r->body : "", r->length, &status);
    atomic_fetch_sub(&s->exploring, 1);
    r->fields.count = status == MHD_HTTP_OK;  /* the log line's sentence: one decoded */
    return http_respond(r, status, json, NULL, NULL);
}
