/* The languages ted serve translates: each model's language codes (as the
 * model spells them: "eng_Latn", "en_XX", "__fr__", "fra" for >>fra<<, "en")
 * mapped to the ISO 639-1 codes LibreTranslate's clients use (libted's
 * ted_language_iso), and the
 * routes between them over the models served (docs/serving.md, "Languages
 * and routes"). */
#ifndef TED_SERVE_LANGUAGES_H
#define TED_SERVE_LANGUAGES_H

#include <stdbool.h>

#include "serve/model.h"

enum { SERVE_ISO_SIZE = 64 };  /* an ISO code, with a script or region ("zh-Hant") */

/* The code ted serve names a model's language code by: its ISO code
 * (ted_language_iso: "eng_Latn" -> "en", "yue_Hant" -> "yue"); false when
 * the code is empty or too long. Writes `out` (SERVE_ISO_SIZE bytes). A
 * side whose codes share an ISO code names each with its script or region
 * too ("zh-Hans", "zh-Hant": serve_routes_new). */
bool serve_iso_code(const char *code, char *out);

typedef struct serve_routes serve_routes;

/* The name /languages gives the language `code` (a name of /languages, in
 * any case; a model's own code; else serve_iso_code's), written to `out`
 * (SERVE_ISO_SIZE bytes); false when `code` is empty or too long. */
bool serve_routes_name(const serve_routes *routes, const char *code, char *out);

/* The English name of an ISO code ("French"), with the script or region
 * of a code that has one ("zh-Hant": "Chinese (Hant)"); the code itself
 * when the table has none (ted_language_name). Valid until the thread's
 * next call. */
const char *serve_language_name(const char *iso);

/* One leg of a route: a model and the languages it translates between,
 * as that model spells them (NULL: its only language on that side). */
typedef struct serve_leg {
    int model;
    const char *source, *target;
} serve_leg;

/* How a pair is translated: one leg, or two through English. */
typedef struct serve_route {
    int legs;
    serve_leg leg[2];
} serve_route;

/* The languages of every model served. */
ted_status serve_routes_new(const serve_model *models, int count, serve_routes **out,
                            ted_error *err);
void serve_routes_free(serve_routes *routes);

/* The route from `source` to `target` (ISO codes, or a model's own
 * spellings): a model that translates the pair (ted_model_translates), bilingual models before
 * multilingual ones, each kind in the order of -m; else through English,
 * the first leg into English and the second out of it chosen the same
 * way. False when no model or pair of models translates it. */
bool serve_route_find(const serve_routes *routes, const char *source, const char *target,
                      serve_route *route);

/* The model's own spelling of a language given as an ISO code or as the
 * model spells it, on the source (target false) or target side; `code`
 * itself when the model names no such language (ted then says which it
 * knows). */
const char *serve_model_code(const serve_routes *routes, int model, bool target,
                             const char *code);

/* The ISO codes the server translates from (the sources of some route),
 * in the order of /languages; `*codes` points into the routes. */
int serve_routes_sources(const serve_routes *routes, const char *const **codes);

/* Every ISO code of the models served, sorted; `*codes` points into the
 * routes. */
int serve_routes_languages(const serve_routes *routes, const char *const **codes);

/* GET /languages: [{"code", "name", "targets"}], every language of a
 * model, sorted by code; targets: those some route reaches from it.
 * malloc'ed; NULL when out of memory. */
char *serve_languages_json(const serve_routes *routes);

#endif
