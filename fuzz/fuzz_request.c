/* libFuzzer harness: the bodies of ted serve's JSON API, as bytes in. The
 * first byte picks the endpoint, the rest is the body:
 *   0  POST /v1/translate: serve_parse_request, the model's name, the
 *      decoding options (frontend_choose_options) and the job
 *      (serve_job_new: tokenized, checked against max_positions), as
 *      server.c's translate() takes them; not decoded;
 *   1  POST /v1/explore and 2 POST /v1/beam: serve_explore, decode and all
 *      (at most EXPLORE_MAX_STEPS steps of a beam of EXPLORE_MAX_BEAM);
 *   3  POST /translate (LibreTranslate's) with a JSON body: the fields
 *      (libre_read_json), their checks, the detection of "auto" and the
 *      route (libre_plan), and the job of the first leg; not decoded.
 * Every answer must be JSON of the status's kind: 200 with an object, or a
 * 4xx with {"error": "..."}. The models: models/toy-en-fr (TED_FUZZ_MODEL
 * to change), loaded once, served as "toy" and "toy-2". */
#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "core/utf8.h"
#include "frontend/options.h"
#include "serve/documents.h"
#include "serve/explore.h"
#include "serve/fields.h"
#include "serve/job.h"
#include "serve/languages.h"
#include "serve/libre.h"
#include "serve/request.h"
#include "serve/server.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

static serve_model models[2];
static libre_server libre;  /* the routes between the models' languages, and the detector */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("TED_FUZZ_MODEL");
    ted_model *model = NULL;
    ted_error err = {0};
    if (ted_model_load(dir ? dir : "models/toy-en-fr", &model, &err) != TED_OK)
        abort();
    models[0] = (serve_model){"toy", model, NULL};
    models[1] = (serve_model){"toy-2", model, NULL};
    serve_routes *routes = NULL;
    serve_detector *detector = NULL;
    const char *const *sources = NULL;
    if (serve_routes_new(models, 2, &routes, &err) != TED_OK)
        abort();
    int count = serve_routes_sources(routes, &sources);
    if (serve_detector_new(sources, count, &detector, &err) != TED_OK)
        abort();
    libre = (libre_server){routes, detector, false, LIBRE_ALTERNATIVES_LIMIT};
    return 0;
}

/* Every byte of `text` belongs to a well-formed UTF-8 character. */
static bool is_utf8(const char *text)
{
    size_t n = strlen(text);
    for (size_t i = 0; i < n;) {
        int length = ted_utf8_char((const unsigned char *)text + i, n - i, NULL);
        if (length <= 0)
            return false;
        i += (size_t)length;
    }
    return true;
}

/* The answer `json` with HTTP status `status`: valid UTF-8, and 200 and an
 * object, or a 4xx and {"error": a non-empty string}. */
static void check_answer(char *json, int status)
{
    REQUIRE(json);
    REQUIRE(is_utf8(json));
    cJSON *root = cJSON_Parse(json);
    REQUIRE(root && cJSON_IsObject(root));
    if (status != 200) {
        REQUIRE(status >= 400 && status < 500);
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(root, "error");
        REQUIRE(cJSON_IsString(error) && error->valuestring[0]);
    }
    cJSON_Delete(root);
    free(json);
}

/* server.c's translate(), up to the decoding loop. */
static void translate(const char *body, size_t length)
{
    serve_request request;
    char message[TED_ERROR_MESSAGE_SIZE];
    if (!serve_parse_request(body, length, &request, message, sizeof message)) {
        check_answer(serve_error_json(message), 400);
        serve_request_free(&request);
        return;
    }
    const serve_model *m = NULL;
    for (int i = 0; i < 2 && !m; i++)
        if (!request.model || !strcmp(models[i].name, request.model))
            m = &models[i];
    ted_translate_options options;
    serve_job *job = NULL;
    ted_error err = {0};
    if (m && (frontend_choose_options(m->model, &request.choice, serve_field_names, &options,
                                      &err) ||
              serve_job_new(m->model, &options, request.texts, request.count, &job, &err))) {
        REQUIRE(job == NULL && err.message[0]);
        if (err.status != TED_ERR_NOMEM)
            check_answer(serve_error_json(err.message), 400);
    } else if (job) {
        REQUIRE(job->count == request.count && job->unfinished <= job->count);
        if (job->unfinished == 0)
            check_answer(serve_answer(job, request.scores), 200);
    }
    serve_job_free(job);
    serve_request_free(&request);
}

/* The first leg's job of a planned POST /translate, over its texts read as
 * documents (sentences split, in the request's format), as server.c's
 * start_leg() and job_of_texts() make it. */
static ted_status libre_job(const libre_request *lr, const ted_model *model,
                            serve_documents *documents, serve_job **job, ted_error *err)
{
    frontend_choice choice = libre_leg_choice(lr, model, lr->route.legs == 1);
    choice.languages = (ted_languages){lr->route.leg[0].source, lr->route.leg[0].target};
    ted_translate_options options;
    ted_status s = frontend_choose_options(model, &choice, serve_field_names, &options, err);
    if (s)
        return s;
    document_options read_as =
        libre_document_options(lr, frontend_source_language(model, &options.languages));
    s = serve_documents_parse(lr->fields.q, lr->fields.q_count, &read_as, documents, err);
    if (s)
        return s;
    return serve_job_new(model, &options, documents->sentences, documents->total, job, err);
}

/* server.c's libre_translate(), up to the decoding loop. */
static void translate_libre(const char *body, size_t length)
{
    libre_request lr = {0};
    serve_refusal no;
    if (!libre_read_json(body, length, &lr.fields, &no) || !libre_plan(&libre, &lr, &no)) {
        REQUIRE(no.status == 400 || no.status == 500);
        if (no.status == 400)
            check_answer(serve_error_json(no.message), 400);
        libre_request_free(&lr);
        return;
    }
    REQUIRE(lr.fields.q_count >= 1 && lr.route.legs >= 1);
    const ted_model *model = models[lr.route.leg[0].model].model;
    serve_documents documents = {0};
    serve_job *job = NULL;
    ted_error err = {0};
    if (libre_job(&lr, model, &documents, &job, &err)) {
        REQUIRE(job == NULL && err.message[0]);
        if (err.status != TED_ERR_NOMEM)
            check_answer(serve_error_json(err.message), 400);
    } else if (job->unfinished == 0 && lr.route.legs == 1) {
        check_answer(libre_answer(&lr, &documents, job), 200);
    }
    serve_job_free(job);
    serve_documents_free(&documents);
    libre_request_free(&lr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *body = (const char *)data + 1;
    size_t length = size - 1;
    static const char *const paths[] = {"/v1/explore", "/v1/beam"};
    if (data[0] % 4 == 0) {
        translate(body, length);
    } else if (data[0] % 4 == 3) {
        translate_libre(body, length);
    } else {
        int status = 0;
        char *json = serve_explore(models, 2, NULL, paths[data[0] % 4 - 1], body, length, &status);
        REQUIRE(status != 500 || json);
        if (status != 500)
            check_answer(json, status);
        else
            free(json);
    }
    return 0;
}
