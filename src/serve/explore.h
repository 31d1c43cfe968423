/* The explorer of ted serve: a page that follows one sentence through the
 * model (GET /, built into the program from src/serve/explorer/) and the
 * JSON it reads (docs/learning.md):
 *   GET  /v1/explorer  the models: architecture, sizes, example sentences
 *   POST /v1/explore   a greedy decode, tokens optionally forced: every
 *                      step's top-k and attention weights, and the
 *                      computation in the words of multi-head attention
 *   POST /v1/beam      a beam search, step by step, and its final ranking
 * The explorer decodes on the HTTP thread with a session of its own (the
 * models are read-only), within the EXPLORE_MAX_ limits of frontend/limits.h. */
#ifndef TED_SERVE_EXPLORE_H
#define TED_SERVE_EXPLORE_H

#include <stdbool.h>
#include <stddef.h>

#include "frontend/limits.h"
#include "serve/model.h"

/* One file of the page. */
typedef struct serve_asset {
    const char *path;          /* "/", "/explorer.js", "/explorer.css" */
    const char *content_type;
    const unsigned char *data;
    size_t size;
} serve_asset;

/* Whether a file of the page is served at `path`, and which. */
bool serve_explorer_asset(const char *path, serve_asset *asset);

/* The Content-Security-Policy of the page: nothing but this server. */
extern const char serve_explorer_policy[];

/* Whether `path` is a POST endpoint of the explorer. */
bool serve_explorer_endpoint(const char *path);

/* GET /v1/explorer. malloc'ed; NULL when out of memory. */
char *serve_explorer_models(const serve_model *models, int count);

/* Answers a POST to an explorer endpoint: the answer's JSON, malloc'ed,
 * with its HTTP status in *status (an error is {"error": "..."} naming the
 * field at fault); NULL when out of memory. The decode computes on the
 * pool of the model it names, threads[i] for models[i] (threads NULL: the
 * process's pool). */
char *serve_explore(const serve_model *models, int count, ted_threads *const *threads,
                    const char *path, const char *body, size_t length, int *status);

#endif
