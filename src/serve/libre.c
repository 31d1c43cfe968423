/* The LibreTranslate API (serve/libre.h). */
#include "serve/libre.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bytes of the texts the detector reads at most: enough for any
 * profile (libexttextcat reads a few hundred bytes for one). */
enum { DETECT_BYTES = 1 << 16 };

/* ---- detection ----------------------------------------------------------------------- */

/* The texts joined by "\n", at most DETECT_BYTES (cut between characters
 * or not: the detector reads bytes); malloc'ed. */
static char *joined(const libre_fields *f, size_t *length)
{
    char *text = malloc(DETECT_BYTES + 1);
    size_t at = 0;
    for (int i = 0; text && i < f->q_count && at < DETECT_BYTES; i++) {
        size_t n = strlen(f->q[i]);
        n = n < DETECT_BYTES - at ? n : DETECT_BYTES - at;
        memcpy(text + at, f->q[i], n);
        at += n;
        if (at < DETECT_BYTES)
            text[at++] = '\n';
    }
    if (text)
        text[at] = '\0';
    *length = at;
    return text;
}

/* Every language detected, most likely first: (count) malloc'ed, NULL
 * when out of memory. Without a detector the only language translated
 * from, when there is one, at 100. */
static serve_guess *guesses_of(const libre_server *s, const libre_fields *f, int *count)
{
    const char *const *sources;
    int languages = serve_detector_languages(s->detector);
    int source_count = serve_routes_sources(s->routes, &sources);
    serve_guess *guesses = calloc(languages ? (size_t)languages : 1, sizeof *guesses);
    *count = 0;
    if (!guesses)
        return NULL;
    if (!s->detector) {
        if (source_count == 1)
            guesses[(*count)++] = (serve_guess){sources[0], 100.0};
        return guesses;
    }
    size_t length;
    char *text = joined(f, &length);
    *count = text ? serve_detect(s->detector, text, length, guesses) : 0;
    free(text);
    if (*count)
        return guesses;
    free(guesses);
    return NULL;
}

/* "source": "auto": the most likely language from which a route leads to
 * the target. */
static bool detect_source(const libre_server *s, libre_request *lr, serve_refusal *no)
{
    int count;
    serve_guess *guesses = guesses_of(s, &lr->fields, &count);
    if (!guesses)
        return serve_refuse(no, 500, "out of memory");
    const char *target = lr->fields.value[LIBRE_TARGET];
    for (int i = 0; i < count && !lr->detected; i++)
        if (serve_route_find(s->routes, guesses[i].language, target, &lr->route)) {
            lr->guess = guesses[i];
            lr->detected = true;
        }
    free(guesses);
    return lr->detected ||
           serve_refuse(no, 400, "cannot detect a language that this server translates into "
                                 "%.40s; give the source language", target);
}

/* ---- checking a request ---------------------------------------------------------------- */

static bool is_known(const serve_routes *routes, const char *code)
{
    const char *const *sources;
    int count = serve_routes_sources(routes, &sources);
    char iso[SERVE_ISO_SIZE];
    if (!serve_routes_name(routes, code, iso))
        return false;
    for (int i = 0; i < count; i++)
        if (!strcmp(sources[i], iso))
            return true;
    return false;
}

/* Whether `code` is a language of some model served, on either side. */
static bool is_served(const serve_routes *routes, const char *code)
{
    const char *const *languages;
    int count = serve_routes_languages(routes, &languages);
    char iso[SERVE_ISO_SIZE];
    if (!serve_routes_name(routes, code, iso))
        return false;
    for (int i = 0; i < count; i++)
        if (!strcmp(languages[i], iso))
            return true;
    return false;
}

/* The route, or the refusal LibreTranslate gives. */
static bool find_route(const libre_server *s, libre_request *lr, serve_refusal *no)
{
    const char *source = lr->fields.value[LIBRE_SOURCE], *target = lr->fields.value[LIBRE_TARGET];
    char shown[FIELD_NAME_SHOWN], from[SERVE_ISO_SIZE], to[SERVE_ISO_SIZE];
    bool automatic = !strcmp(source, "auto");
    if (!automatic && !is_known(s->routes, source))
        return serve_refuse(no, 400, "%s is not supported",
                            serve_utf8_clean(source, shown, sizeof shown));
    if (!is_served(s->routes, target))
        return serve_refuse(no, 400, "%s is not supported",
                            serve_utf8_clean(target, shown, sizeof shown));
    if (automatic)
        return detect_source(s, lr, no);
    if (serve_route_find(s->routes, source, target, &lr->route))
        return true;
    serve_routes_name(s->routes, source, from);
    serve_routes_name(s->routes, target, to);
    return serve_refuse(no, 400, "%s (%s) is not available as a target language from %s (%s)",
                        serve_language_name(to), to, serve_language_name(from), from);
}

bool libre_plan(const libre_server *s, libre_request *lr, serve_refusal *no)
{
    const libre_fields *f = &lr->fields;
    static const char *const required[] = {"q", "source", "target"};
    const char *given[] = {f->q_count && (f->q_list || f->q[0][0]) ? "" : NULL,
                           f->value[LIBRE_SOURCE], f->value[LIBRE_TARGET]};
    for (int i = 0; i < 3; i++)
        if (!given[i] || (i > 0 && !given[i][0]))
            return serve_refuse(no, 400, "Invalid request: missing %s parameter", required[i]);
    if (f->alternatives > s->alternatives_limit)
        return serve_refuse(no, 400, "Invalid request: alternatives parameter must be <= %d",
                            s->alternatives_limit);
    const char *format = f->value[LIBRE_FORMAT];
    char shown[FIELD_NAME_SHOWN];
    lr->format = DOCUMENT_TEXT;
    if (format && format[0] && !document_format_from_name(format, &lr->format))
        return serve_refuse(no, 400, "%s format is not supported",
                            serve_utf8_clean(format, shown, sizeof shown));
    return find_route(s, lr, no);
}

document_options libre_document_options(const libre_request *lr, const char *language)
{
    return (document_options){.format = lr->format, .split_sentences = true,
                              .language = language};
}

frontend_choice libre_leg_choice(const libre_request *lr, const ted_model *model, bool last)
{
    frontend_choice choice = {0};
    int n = lr->fields.alternatives;
    if (!last || n <= 0)
        return choice;
    n = n < FRONTEND_N_BEST_MAX ? n + 1 : FRONTEND_N_BEST_MAX;
    ted_decode_options d = ted_translate_model_options(model).decode;
    int beam = d.strategy == TED_DECODE_BEAM ? d.beam.beam_size : 1;
    choice.beam_given = choice.n_best_given = true;
    choice.beam = beam > n ? beam : n;
    choice.n_best = n;
    return choice;
}

void libre_request_free(libre_request *lr)
{
    libre_fields_free(&lr->fields);
    *lr = (libre_request){0};
}

/* ---- answers ----------------------------------------------------------------------------- */

/* Hypothesis k of text i: its document rebuilt with the k-th hypothesis
 * of each sentence. malloc'ed; NULL when out of memory. */
static char *hypothesis_text(const serve_documents *d, const serve_job *job, int i, int k)
{
    char *text = NULL;
    return serve_documents_render(d, job, i, k, &text, NULL) ? NULL : text;
}

static bool add_string(cJSON *list, const char *text)
{
    cJSON *item = text ? cJSON_CreateString(text) : NULL;
    if (item && cJSON_AddItemToArray(list, item))
        return true;
    cJSON_Delete(item);
    return false;
}

/* Text i's alternatives: hypotheses 2..n_best, each once, none empty or
 * equal to the translation; into `list`. */
static bool add_alternatives(const serve_documents *d, const serve_job *job, int i,
                             cJSON *list, const char *translation)
{
    for (int k = 1; k < job->options.decode.n_best; k++) {
        char *text = hypothesis_text(d, job, i, k);
        if (!text)
            return false;
        bool seen = !text[0] || !strcmp(text, translation);
        for (int a = 0; !seen && a < cJSON_GetArraySize(list); a++)
            seen = !strcmp(cJSON_GetArrayItem(list, a)->valuestring, text);
        bool ok = seen || add_string(list, text);
        free(text);
        if (!ok)
            return false;
    }
    return true;
}

static cJSON *guess_json(const serve_guess *g)
{
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddNumberToObject(o, "confidence", round(g->confidence * 10.0) / 10.0) &&
        cJSON_AddStringToObject(o, "language", g->language))
        return o;
    cJSON_Delete(o);
    return NULL;
}

/* Adds `item` to `to` under `key`, or as a list's next item (key NULL);
 * a NULL item is a failure. */
static bool put(cJSON *to, const char *key, cJSON *item)
{
    if (item && (key ? cJSON_AddItemToObject(to, key, item) : cJSON_AddItemToArray(to, item)))
        return true;
    cJSON_Delete(item);
    return false;
}

/* Each text's translation into `texts`, its alternatives into
 * `alternatives` (a list per text), its detected language into `detected`. */
static bool fill_texts(const libre_request *lr, const serve_documents *d, const serve_job *job,
                       cJSON *texts, cJSON *alternatives, cJSON *detected)
{
    for (int i = 0; i < lr->fields.q_count; i++) {
        char *translation = hypothesis_text(d, job, i, 0);
        cJSON *list = alternatives ? cJSON_CreateArray() : NULL;
        bool ok = translation && add_string(texts, translation) &&
                  (!alternatives || (put(alternatives, NULL, list) &&
                                     add_alternatives(d, job, i, list, translation))) &&
                  (!detected || put(detected, NULL, guess_json(&lr->guess)));
        free(translation);
        if (!ok)
            return false;
    }
    return true;
}

char *libre_answer(const libre_request *lr, const serve_documents *d, const serve_job *job)
{
    cJSON *texts = cJSON_CreateArray();
    cJSON *alternatives = lr->fields.alternatives > 0 ? cJSON_CreateArray() : NULL;
    cJSON *detected = lr->detected ? cJSON_CreateArray() : NULL;
    bool ok = texts && (alternatives || lr->fields.alternatives <= 0) &&
              (detected || !lr->detected) && fill_texts(lr, d, job, texts, alternatives, detected);
    cJSON *root = cJSON_CreateObject();
    cJSON *lists[] = {texts, detected, alternatives};
    const char *keys[] = {"translatedText", "detectedLanguage", "alternatives"};
    for (int k = 0; k < 3; k++) {
        cJSON *value = lists[k];
        if (!value)
            continue;
        if (!lr->fields.q_list) {  /* one text: its value, not a list of one */
            value = cJSON_DetachItemFromArray(lists[k], 0);
            cJSON_Delete(lists[k]);
        }
        ok = put(root, keys[k], value) && ok;  /* put frees what it cannot add */
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

/* ---- /detect and /frontend/settings ------------------------------------------------------- */

char *libre_detect_json(const libre_server *s, const libre_fields *f, serve_refusal *no)
{
    if (!f->q_count || (!f->q_list && !f->q[0][0])) {
        serve_refuse(no, 400, "Invalid request: missing q parameter");
        return NULL;
    }
    int count;
    serve_guess *guesses = guesses_of(s, f, &count);
    cJSON *list = guesses ? cJSON_CreateArray() : NULL;
    for (int i = 0; list && i < count; i++)
        if (!put(list, NULL, guess_json(&guesses[i]))) {
            cJSON_Delete(list);
            list = NULL;
        }
    free(guesses);
    char *text = list ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    if (!text)
        serve_refuse(no, 500, "out of memory");
    return text;
}

static cJSON *language_json(const char *code, const char *name)
{
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "code", code) && cJSON_AddStringToObject(o, "name", name))
        return o;
    cJSON_Delete(o);
    return NULL;
}

char *libre_settings_json(const libre_server *s)
{
    const char *const *sources, *const *all;
    int count = serve_routes_sources(s->routes, &sources);
    int languages = serve_routes_languages(s->routes, &all);
    serve_route route;
    const char *target = "en";  /* the first language the first source is translated into */
    for (int i = 0; count && i < languages; i++)
        if (serve_route_find(s->routes, sources[0], all[i], &route)) {
            target = all[i];
            break;
        }
    cJSON *root = cJSON_CreateObject(), *language = cJSON_CreateObject();
    bool ok = root && put(root, "language", language) &&
              cJSON_AddNumberToObject(root, "charLimit", -1) &&
              cJSON_AddNumberToObject(root, "frontendTimeout", 500) &&
              cJSON_AddBoolToObject(root, "apiKeys", s->keys) &&
              cJSON_AddBoolToObject(root, "keyRequired", s->keys) &&
              cJSON_AddBoolToObject(root, "suggestions", false) &&
              cJSON_AddBoolToObject(root, "filesTranslation", false) &&
              cJSON_AddArrayToObject(root, "supportedFilesFormat") &&
              put(language, "source", language_json("auto", "Auto Detect")) &&
              put(language, "target", language_json(target, serve_language_name(target)));
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}
