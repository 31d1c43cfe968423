/* The languages of the models served, and routes between them
 * (serve/languages.h). */
#include "serve/languages.h"

#include <cJSON.h>
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ted/util.h"

/* ---- ISO codes ------------------------------------------------------------------ */

bool serve_iso_code(const char *code, char *out)
{
    return ted_language_iso(code, out, SERVE_ISO_SIZE);
}

const char *serve_language_name(const char *iso)
{
    static _Thread_local char compound[SERVE_ISO_SIZE + 96];
    const char *name = ted_language_name(iso);
    if (name)
        return name;
    const char *dash = strchr(iso, '-');
    char language[SERVE_ISO_SIZE];
    if (!dash || dash - iso >= (ptrdiff_t)sizeof language)
        return iso;
    memcpy(language, iso, (size_t)(dash - iso));
    language[dash - iso] = '\0';
    name = ted_language_name(language);
    if (!name)
        return iso;
    snprintf(compound, sizeof compound, "%.80s (%s)", name, dash + 1);
    return compound;
}

/* ---- the models' languages ------------------------------------------------------ */

typedef char iso_code[SERVE_ISO_SIZE];

/* One side of a model: its codes as it spells them, and as ISO codes. */
typedef struct side {
    int count;
    const char *const *codes;  /* (count), in the model */
    iso_code *iso;             /* (count) */
} side;

typedef struct model_languages {
    const ted_model *model;
    side source, target;
    bool multilingual;  /* more than one language on a side */
} model_languages;

struct serve_routes {
    int count;
    model_languages *models;  /* (count) */
    iso_code *languages;      /* (language_count): every ISO code, sorted */
    const char **language_pointers;  /* (language_count): to each of `languages` */
    int language_count;
    const char **sources;     /* (source_count): those translated from, into `languages` */
    int source_count;
};

/* The model's language codes on one side, as it spells them
 * (ted_model_languages). */
static int model_codes(const serve_model *m, bool target, const char *const **codes)
{
    return ted_model_languages(m->model, target ? TED_SIDE_TARGET : TED_SIDE_SOURCE, codes);
}

/* Writes `language`-`rest` of `code` to `out`, `language` lowercased
 * ("zh" and "zho_Hant": "zh-Hant"); false when the code has no script or
 * region, or the name does not fit. */
static bool name_with_rest(const char *language, const char *code, char *out)
{
    ted_code_parts parts = ted_code_split(code);
    char name[SERVE_ISO_SIZE];
    int n = snprintf(name, sizeof name, "%s-%.*s", language, (int)parts.rest_length, parts.rest);
    if (!parts.rest_length || n >= (int)sizeof name)
        return false;
    for (int i = 0; name[i] != '-'; i++)
        name[i] = (char)tolower((unsigned char)name[i]);
    memcpy(out, name, sizeof name);
    return true;
}

/* Whether iso[i] is also the name of another code of the side. */
static bool shares_name(const side *s, int i)
{
    for (int k = 0; k < s->count; k++)
        if (k != i && !strcmp(s->iso[k], s->iso[i]))
            return true;
    return false;
}

/* Names the codes of a side that share an ISO code by it and their script
 * or region, BCP 47's spelling, as LibreTranslate's clients give them
 * ("zh-Hans", "zh-Hant"); those that still share one, by their own
 * language ("pes-Arab", "prs-Arab"); any left, by the code itself. */
static void name_sharers(side *s)
{
    bool *shared = calloc((size_t)s->count, sizeof *shared);
    for (int pass = 0; shared && pass < 3; pass++) {
        for (int i = 0; i < s->count; i++)
            shared[i] = shares_name(s, i);
        for (int i = 0; i < s->count; i++) {
            if (!shared[i])
                continue;
            ted_code_parts parts = ted_code_split(s->codes[i]);
            char own[SERVE_ISO_SIZE];
            snprintf(own, sizeof own, "%.*s", (int)parts.language_length, parts.language);
            bool named = pass == 0 ? name_with_rest(s->iso[i], s->codes[i], s->iso[i])
                         : pass == 1 ? name_with_rest(own, s->codes[i], s->iso[i]) : false;
            if (!named)
                snprintf(s->iso[i], sizeof s->iso[i], "%s", s->codes[i]);
        }
    }
    free(shared);
}

/* Fills one side: each code and its ISO code (see name_sharers). */
static ted_status read_side(const serve_model *m, bool target, side *s, ted_error *err)
{
    s->count = model_codes(m, target, &s->codes);
    s->iso = s->count ? ted_alloc(s->count, sizeof *s->iso, "languages", err) : NULL;
    if (s->count && !s->iso)
        return TED_ERR_NOMEM;
    for (int i = 0; i < s->count; i++)
        if (!serve_iso_code(s->codes[i], s->iso[i]))
            return ted_fail(err, TED_ERR_INPUT, "model %s: language code \"%.40s\" is not one",
                            m->name, s->codes[i]);
    name_sharers(s);
    return TED_OK;
}

static int side_index(const side *s, const char *iso)
{
    for (int i = 0; i < s->count; i++)
        if (!strcasecmp(s->iso[i], iso) || !strcmp(s->codes[i], iso))
            return i;
    return -1;
}

bool serve_routes_name(const serve_routes *r, const char *code, char *out)
{
    for (int m = 0; m < r->count; m++)
        for (int side_at = 0; side_at < 2; side_at++) {
            const side *s = side_at ? &r->models[m].target : &r->models[m].source;
            int i = side_index(s, code);
            if (i >= 0) {
                memcpy(out, s->iso[i], SERVE_ISO_SIZE);
                return true;
            }
        }
    return serve_iso_code(code, out);
}

/* ---- routes ------------------------------------------------------------------------ */

/* The leg of model m from `source` to `target` (ISO codes); false when m
 * does not translate that pair. */
static bool leg_of(const serve_routes *r, int m, const char *source, const char *target,
                   serve_leg *leg)
{
    const model_languages *l = &r->models[m];
    int s = side_index(&l->source, source), t = side_index(&l->target, target);
    if (s < 0 || t < 0 || !strcmp(l->source.iso[s], l->target.iso[t]) ||
        !ted_model_translates(l->model, l->source.codes[s], l->target.codes[t]))
        return false;
    *leg = (serve_leg){m, l->source.count > 1 ? l->source.codes[s] : NULL,
                       l->target.count > 1 ? l->target.codes[t] : NULL};
    return true;
}

/* The preferred model for a pair: bilingual ones first, each kind in the
 * order of -m. */
static bool best_leg(const serve_routes *r, const char *source, const char *target,
                     serve_leg *leg)
{
    for (int pass = 0; pass < 2; pass++)
        for (int m = 0; m < r->count; m++)
            if (r->models[m].multilingual == (pass == 1) && leg_of(r, m, source, target, leg))
                return true;
    return false;
}

bool serve_route_find(const serve_routes *r, const char *source, const char *target,
                      serve_route *route)
{
    char s[SERVE_ISO_SIZE], t[SERVE_ISO_SIZE];
    if (!serve_routes_name(r, source, s) || !serve_routes_name(r, target, t) || !strcmp(s, t))
        return false;
    route->legs = 1;
    if (best_leg(r, s, t, &route->leg[0]))
        return true;
    route->legs = 2;
    return strcmp(s, "en") && strcmp(t, "en") && best_leg(r, s, "en", &route->leg[0]) &&
           best_leg(r, "en", t, &route->leg[1]);
}

const char *serve_model_code(const serve_routes *r, int model, bool target, const char *code)
{
    const side *s = target ? &r->models[model].target : &r->models[model].source;
    char iso[SERVE_ISO_SIZE];
    int i = side_index(s, code);
    if (i < 0 && serve_iso_code(code, iso))
        i = side_index(s, iso);
    return i >= 0 ? s->codes[i] : code;
}

/* ---- building them ----------------------------------------------------------------- */

static int by_code(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Every ISO code of every model, once, sorted. */
static ted_status collect_languages(serve_routes *r, ted_error *err)
{
    int total = 0;
    for (int m = 0; m < r->count; m++)
        total += r->models[m].source.count + r->models[m].target.count;
    r->languages = ted_alloc(total ? total : 1, sizeof *r->languages, "languages", err);
    r->sources = ted_alloc(total ? total : 1, sizeof *r->sources, "languages", err);
    if (!r->languages || !r->sources)
        return TED_ERR_NOMEM;
    for (int m = 0; m < r->count; m++)
        for (int side_at = 0; side_at < 2; side_at++) {
            const side *s = side_at ? &r->models[m].target : &r->models[m].source;
            for (int i = 0; i < s->count; i++) {
                int k = 0;
                while (k < r->language_count && strcmp(r->languages[k], s->iso[i]))
                    k++;
                if (k == r->language_count)
                    memcpy(r->languages[r->language_count++], s->iso[i], sizeof(iso_code));
            }
        }
    qsort(r->languages, (size_t)r->language_count, sizeof *r->languages, by_code);
    r->language_pointers = ted_alloc(total ? total : 1, sizeof *r->language_pointers,
                                     "languages", err);
    for (int i = 0; r->language_pointers && i < r->language_count; i++)
        r->language_pointers[i] = r->languages[i];
    return r->language_pointers ? TED_OK : TED_ERR_NOMEM;
}

/* The languages some route leads out of. */
static void collect_sources(serve_routes *r)
{
    for (int i = 0; i < r->language_count; i++)
        for (int k = 0; k < r->language_count; k++) {
            serve_route route;
            if (serve_route_find(r, r->languages[i], r->languages[k], &route)) {
                r->sources[r->source_count++] = r->languages[i];
                break;
            }
        }
}

ted_status serve_routes_new(const serve_model *models, int count, serve_routes **out,
                            ted_error *err)
{
    serve_routes *r = ted_alloc(1, sizeof *r, "languages", err);
    *out = NULL;
    if (!r)
        return TED_ERR_NOMEM;
    *r = (serve_routes){.count = count};
    r->models = ted_alloc(count > 0 ? count : 1, sizeof *r->models, "languages", err);
    ted_status status = r->models ? TED_OK : TED_ERR_NOMEM;
    for (int m = 0; !status && m < count; m++) {
        model_languages *l = &r->models[m];
        l->model = models[m].model;
        status = read_side(&models[m], false, &l->source, err);
        if (!status)
            status = read_side(&models[m], true, &l->target, err);
        l->multilingual = l->source.count > 1 || l->target.count > 1;
    }
    if (!status)
        status = collect_languages(r, err);
    if (status) {
        serve_routes_free(r);
        return status;
    }
    collect_sources(r);
    *out = r;
    return TED_OK;
}

void serve_routes_free(serve_routes *r)
{
    if (!r)
        return;
    for (int m = 0; r->models && m < r->count; m++) {
        free(r->models[m].source.iso);
        free(r->models[m].target.iso);
    }
    free(r->models);
    free(r->languages);
    free(r->language_pointers);
    free(r->sources);
    free(r);
}

int serve_routes_sources(const serve_routes *r, const char *const **codes)
{
    *codes = r->sources;
    return r->source_count;
}

int serve_routes_languages(const serve_routes *r, const char *const **codes)
{
    *codes = r->language_pointers;
    return r->language_count;
}

/* {"code", "name", "targets"} of language i. */
static cJSON *language_json(const serve_routes *r, int i)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *targets = o ? cJSON_CreateArray() : NULL;
    bool ok = targets && cJSON_AddItemToObject(o, "targets", targets);
    if (!ok)
        cJSON_Delete(targets);
    ok = ok && cJSON_AddStringToObject(o, "code", r->languages[i]) &&
         cJSON_AddStringToObject(o, "name", serve_language_name(r->languages[i]));
    for (int k = 0; ok && k < r->language_count; k++) {
        serve_route route;
        if (serve_route_find(r, r->languages[i], r->languages[k], &route))
            ok = cJSON_AddItemToArray(targets, cJSON_CreateString(r->languages[k]));
    }
    if (ok)
        return o;
    cJSON_Delete(o);
    return NULL;
}

char *serve_languages_json(const serve_routes *r)
{
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; list && i < r->language_count; i++) {
        cJSON *item = language_json(r, i);
        if (!item || !cJSON_AddItemToArray(list, item)) {
            cJSON_Delete(item);
            cJSON_Delete(list);
            list = NULL;
        }
    }
    char *text = list ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    return text;
}
