/* POST /v1/translate, and the legs of every translation job (serve/routes_v1.h). */
#include "serve/routes_v1.h"

#include <stdlib.h>
#include <string.h>

#include "serve/fields.h"
#include "ted/util.h"

/* The answer of a job whose sentences are all done, or that the loop refused. */
static enum MHD_Result answer_job(request *r)
{
    const serve_job *job = r->job;
    if (r->refused == MHD_HTTP_TOO_MANY_REQUESTS)
        return http_refuse(r, r->refused, MHD_HTTP_HEADER_RETRY_AFTER, "1",
                           "the queue of model \"%s\" is full (--max-queue %d sentences); "
                           "retry later",
                           r->server->config->models[r->model].name, r->server->config->max_queue);
    if (r->refused)
        return http_refuse(r, r->refused, NULL, NULL,
                           "%d sentences to translate; a request holds at most %d (--max-queue)",
                           job->unfinished, r->server->config->max_queue);
    if (job->status)
        return http_refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "%s",
                           job->error.message);
    if (r->libre)
        return http_respond(r, MHD_HTTP_OK, libre_answer(r->libre, &r->documents, job), NULL, NULL);
    if (r->documents.documents)
        return http_respond(r, MHD_HTTP_OK, serve_documents_answer(&r->documents, job), NULL, NULL);
    if (!r->routed)
        return http_respond(r, MHD_HTTP_OK, serve_answer(job, r->fields.scores), NULL, NULL);
    const ted_languages *asked = &r->fields.choice.languages;
    serve_leg_report legs[2];
    for (int i = 0; i < r->route.legs; i++)
        legs[i] = (serve_leg_report){r->server->config->models[r->route.leg[i].model].name,
                                     i == 0 ? asked->source : "en",
                                     i + 1 == r->route.legs ? asked->target : "en"};
    char *json = serve_answer_routed(job, r->fields.scores, legs, r->route.legs);
    return http_respond(r, MHD_HTTP_OK, json, NULL, NULL);
}

/* Called by the decoding thread once every sentence of the job is done. */
static void job_done(serve_job *job, void *data)
{
    (void)job;
    request *r = data;
    MHD_resume_connection(r->connection);
}

/* Hands the job to the loop, with the connection suspended until it is
 * done; a refusal is answered once the connection is resumed. The request
 * came before any drain (route), so it is decoded even during one. */
static enum MHD_Result submit(request *r, serve_loop *loop)
{
    r->job->done = job_done;
    r->job->done_data = r;
    MHD_suspend_connection(r->connection);
    serve_admission admission = serve_loop_submit(loop, r->job);
    if (admission != SERVE_ACCEPTED) {
        r->refused = admission == SERVE_QUEUE_FULL ? MHD_HTTP_TOO_MANY_REQUESTS
                                                   : MHD_HTTP_CONTENT_TOO_LARGE;
        MHD_resume_connection(r->connection);
    }
    return MHD_YES;
}

/* "stream": true: the job goes to the loop, and the answer, Server-Sent
 * Events, goes out as its sentences decode (serve/stream.h). */
static enum MHD_Result stream(request *r, serve_loop *loop)
{
    if (!(r->stream = serve_stream_new(r->job, r->fields.scores)))
        return http_respond(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, NULL);
    serve_admission admission = serve_stream_submit(r->stream, loop);
    if (admission != SERVE_ACCEPTED) {
        r->refused = admission == SERVE_QUEUE_FULL ? MHD_HTTP_TOO_MANY_REQUESTS
                                                   : MHD_HTTP_CONTENT_TOO_LARGE;
        return answer_job(r);
    }
    struct MHD_Response *answer = serve_stream_response(r->stream, r->connection);
    if (!answer)
        return MHD_NO;
    http_start_answering(r);
    enum MHD_Result queued = MHD_queue_response(r->connection, MHD_HTTP_OK, answer);
    MHD_destroy_response(answer);
    r->status = MHD_HTTP_OK;
    return queued;
}

static int find_model(const serve_config *c, const char *name)
{
    for (int i = 0; i < c->model_count; i++)
        if (!name || !strcmp(c->models[i].name, name))
            return i;
    return -1;
}

/* Whether the current leg's job is made of the request's texts read as
 * documents (serve/documents.h), and how they are read (*o): on the first
 * leg of a LibreTranslate /translate, always (sentences split, as
 * LibreTranslate does, in its "format"); of a /v1/translate, with
 * "split_sentences" or "format": "html". `language`: the source's code. */
static bool wants_documents(const request *r, const char *language, document_options *o)
{
    const serve_request *f = &r->fields;
    if (r->leg > 0)
        return false;
    *o = r->libre ? libre_document_options(r->libre, language)
                  : (document_options){.format = f->format, .split_sentences = true,
                                       .language = language};
    return r->libre || f->split_sentences || f->format == DOCUMENT_HTML;
}

/* The job of the current leg: `texts` (count), or their documents'
 * sentences (wants_documents). */
static ted_status job_of_texts(request *r, const ted_model *model,
                               const ted_translate_options *options, const char *const *texts,
                               int count, ted_error *err)
{
    const serve_request *f = &r->fields;
    document_options o;
    if (!wants_documents(r, frontend_source_language(model, &options->languages), &o))
        return serve_job_new(model, options, texts, count, &r->job, err);
    if (!r->libre && (f->scores || options->decode.n_best > 1))
        return ted_fail(err, TED_ERR_ARGUMENT, "%s applies to single sentences, not with %s",
                        f->scores ? "scores" : "n_best",
                        f->format == DOCUMENT_HTML ? "\"format\": \"html\""
                                                   : "\"split_sentences\": true");
    ted_status s = serve_documents_parse(texts, count, &o, &r->documents, err);
    if (!s && (s = serve_job_new(model, options, r->documents.sentences, r->documents.total,
                                 &r->job, err)))
        serve_documents_name_sentence(&r->documents, err);
    if (!s && r->libre)
        r->fields.count = r->documents.total;  /* the log line's sentences */
    return s;
}

enum MHD_Result http_after_job(request *r);

/* A leg whose job cannot be made. On a later leg the texts are the
 * previous leg's translations, not the client's: one longer than the
 * model's max_positions is the route's failure (422, naming the leg and
 * the text it came from), not a bad request. */
static enum MHD_Result refuse_leg(request *r, ted_error *err)
{
    if (err->status == TED_ERR_NOMEM)
        return http_refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "%s", err->message);
    if (r->leg == 0 || err->status != TED_ERR_INPUT)
        return http_refuse(r, MHD_HTTP_BAD_REQUEST, NULL, NULL, "%s", err->message);
    if (r->documents.documents)
        serve_documents_name_sentence(&r->documents, err);
    return http_refuse(r, MHD_HTTP_UNPROCESSABLE_CONTENT, NULL, NULL,
                       "the route goes through English, and its leg %d of %d, model \"%s\", cannot "
                       "take the English translation of %s; a lower max_length (or temperature) "
                       "keeps that translation shorter",
                       r->leg + 1, r->route.legs,
                       r->server->config->models[r->route.leg[r->leg].model].name, err->message);
}

/* Makes the job of the current leg from `texts` (count) and hands it to
 * its model's loop; with nothing to decode, goes on at once. Every leg
 * but the last keeps one hypothesis per sentence. */
enum MHD_Result http_start_leg(request *r, const char *const *texts, int count)
{
    const serve_config *c = r->server->config;
    const serve_leg *leg = &r->route.leg[r->leg];
    bool last = r->leg + 1 == r->route.legs;
    const ted_model *model = c->models[leg->model].model;
    frontend_choice choice = r->libre ? libre_leg_choice(r->libre, model, last) : r->fields.choice;
    choice.n_best_given = choice.n_best_given && last;
    choice.languages = (ted_languages){leg->source, leg->target};
    ted_translate_options options;
    ted_error err = {0};
    char message[TED_ERROR_MESSAGE_SIZE];
    r->model = leg->model;
    if (frontend_choose_options(model, &choice, serve_field_names, &options, &err) ||
        job_of_texts(r, model, &options, texts, count, &err))
        return refuse_leg(r, &err);
    if (!serve_job_within_budget(r->job, c->max_request_tokens, message, sizeof message))
        return http_refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL, "%s", message);
    r->job->log_probs = last && (r->fields.scores || options.decode.n_best > 1);
    const union MHD_ConnectionInfo *socket =
        MHD_get_connection_info(r->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    r->job->client_fd = socket ? socket->connect_fd : -1;
    if (r->fields.stream) {
        if (r->route.legs > 1 || r->documents.documents)
            return http_refuse(r, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                               "\"stream\" applies to sentences one model translates, not with %s",
                               r->documents.documents ? "documents" : "a route through English");
        return stream(r, r->server->loops[leg->model]);
    }
    if (r->job->unfinished == 0)
        return http_after_job(r);
    return submit(r, r->server->loops[leg->model]);
}

/* A job is done: the answer, or the next leg over its translations. */
enum MHD_Result http_after_job(request *r)
{
    if (!r->refused && serve_job_is_cancelled(r->job))
        return MHD_NO;  /* its client left: the connection closes unanswered */
    if (r->refused || r->job->status || r->leg + 1 == r->route.legs)
        return answer_job(r);
    serve_job *previous = r->job;
    const char **texts = serve_job_best(previous);
    r->job = NULL;
    r->leg++;
    enum MHD_Result answer =
        texts ? http_start_leg(r, texts, previous->count)
              : http_refuse(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "out of memory");
    free(texts);
    serve_job_free(previous);
    return answer;
}

/* Whether a request with API key `key` may go on (--api-keys); when not,
 * `*answer` is its refusal: 403 without a valid key, 429 over its limit. */
bool http_key_allowed(request *r, const char *key, enum MHD_Result *answer)
{
    int retry = 1;
    serve_key_verdict verdict =
        r->server->keys ? serve_keys_check(r->server->keys, key, ted_seconds(), &retry) : SERVE_KEY_OK;
    char after[16];
    snprintf(after, sizeof after, "%d", retry);
    if (verdict == SERVE_KEY_MISSING)
        *answer = http_refuse(r, MHD_HTTP_FORBIDDEN, NULL, NULL,
                              "this server requires an API key: give it in the api_key field");
    else if (verdict == SERVE_KEY_INVALID)
        *answer = http_refuse(r, MHD_HTTP_FORBIDDEN, NULL, NULL, "Invalid API key");
    else if (verdict == SERVE_KEY_LIMITED)
        *answer = http_refuse(r, MHD_HTTP_TOO_MANY_REQUESTS, MHD_HTTP_HEADER_RETRY_AFTER, after,
                              "Slowdown: this key's requests per minute are spent; retry in %d s",
                              retry);
    return verdict == SERVE_KEY_OK;
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
