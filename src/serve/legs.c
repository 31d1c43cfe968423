/* The legs of a translation request (serve/legs.h). */
#include "serve/legs.h"

#include "serve/fields.h"
#include "ted/util.h"

/* A job that goes to no loop (nothing to decode, or refused): answered as
 * a decoded job is, once its connection, suspended here, is resumed. */
static enum MHD_Result answer_later(request *r)
{
    MHD_suspend_connection(r->connection);
    MHD_resume_connection(r->connection);
    return MHD_YES;
}

/* Hands the job to the loop, with the connection suspended until it is
 * done (http_resume); a refusal is answered once the connection is
 * resumed (serve/answer.h). The request came before any drain (route), so
 * it is decoded even during one. */
static enum MHD_Result submit(request *r, serve_loop *loop)
{
    r->job->done = http_resume;
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
 * Events, goes out as its sentences decode (serve/stream.h); a refusal is
 * answered as a job's (answer_later). */
static enum MHD_Result stream(request *r, serve_loop *loop)
{
    if (!(r->stream = serve_stream_new(r->job, r->fields.scores)))
        return http_respond(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, NULL);
    serve_admission admission = serve_stream_submit(r->stream, loop);
    if (admission != SERVE_ACCEPTED) {
        r->refused = admission == SERVE_QUEUE_FULL ? MHD_HTTP_TOO_MANY_REQUESTS
                                                   : MHD_HTTP_CONTENT_TOO_LARGE;
        return answer_later(r);
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
        return answer_later(r);
    return submit(r, r->server->loops[leg->model]);
}

