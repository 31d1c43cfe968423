/* The explorer of ted serve (serve/explore.h): its page, built into the
 * program, and its JSON endpoints. The decoding is the library's and the
 * commands' own (learn/trace.h for greedy steps, learn/explain.h for the
 * explanation, ted_decode with a beam trace for beam search); this file
 * checks the requests and writes the answers. */
#include "serve/explore.h"

#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve/request.h"
#include "ted/learn.h"
#include "ted/util.h"

/* ---- the page ----------------------------------------------------------------- */

/* src/serve/explorer_assets.S: the files of src/serve/explorer/. */
extern const unsigned char serve_explorer_html[], serve_explorer_html_end[];
extern const unsigned char serve_explorer_js[], serve_explorer_js_end[];
extern const unsigned char serve_explorer_css[], serve_explorer_css_end[];

const char serve_explorer_policy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

bool serve_explorer_asset(const char *path, serve_asset *asset)
{
    static const struct {
        const char *path, *content_type;
        const unsigned char *start, *end;
    } files[] = {
        {"/", "text/html; charset=utf-8", serve_explorer_html, serve_explorer_html_end},
        {"/explorer.js", "text/javascript; charset=utf-8", serve_explorer_js,
         serve_explorer_js_end},
        {"/explorer.css", "text/css; charset=utf-8", serve_explorer_css, serve_explorer_css_end},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!strcmp(path, files[i].path)) {
            *asset = (serve_asset){files[i].path, files[i].content_type, files[i].start,
                                   (size_t)(files[i].end - files[i].start)};
            return true;
        }
    return false;
}

bool serve_explorer_endpoint(const char *path)
{
    return !strcmp(path, "/v1/explore") || !strcmp(path, "/v1/beam");
}

/* ---- JSON helpers --------------------------------------------------------------- */

/* A number with `digits` significant digits: short in the answer, and
 * within half a unit of the last digit of the float it comes from. */
static cJSON *rounded(double value, int digits)
{
    if (!isfinite(value))
        return cJSON_CreateNull();
    char text[48];
    snprintf(text, sizeof text, "%.*g", digits, value);
    return cJSON_CreateNumber(strtod(text, NULL));
}

static void add_rounded(cJSON *object, const char *name, double value, int digits)
{
    cJSON_AddItemToObject(object, name, rounded(value, digits));
}

/* Attention weights: 8 significant digits, so a row sums to 1 within 1e-6. */
static cJSON *weights_row(const float *w, int n)
{
    cJSON *row = cJSON_CreateArray();
    for (int j = 0; row && j < n; j++)
        cJSON_AddItemToArray(row, rounded(w[j], 8));
    return row;
}

/* {"id": ID, "token": "TOKEN"}, and "language": true for a language code. */
static cJSON *token_json(const ted_model *model, int id, bool target)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddStringToObject(o, "token",
                            target ? ted_target_token(model, id) : ted_source_token(model, id));
    if (ted_model_language_token(model, id, target))
        cJSON_AddBoolToObject(o, "language", true);
    return o;
}

static char *error_answer(int *status, int code, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static char *error_answer(int *status, int code, const char *format, ...)
{
    char message[TED_ERROR_MESSAGE_SIZE];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    *status = code;
    return serve_error_json(message);
}

/* The answer's text (freeing `root`), status 200. */
static char *answer(cJSON *root, int *status)
{
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    *status = 200;
    return text;
}

/* ---- GET /v1/explorer ------------------------------------------------------------- */

static cJSON *architecture_json(const ted_config_view *c)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "norm", c->model.norm_first ? "pre-norm" : "post-norm");
    static const char *const positional[] = {
        [TED_POSITIONS_INTERLEAVED] = "interleaved (sine, cosine, sine...)",
        [TED_POSITIONS_CONCATENATED] = "concatenated (all sines, then all cosines)",
        [TED_POSITIONS_FAIRSEQ] = "fairseq (all sines, then all cosines)",
        [TED_POSITIONS_LEARNED] = "learned (a table per stack)",
        [TED_POSITIONS_RELATIVE] = "relative (a bias of the attention scores per stack)",
        [TED_POSITIONS_MARIAN] = "marian (fairseq's sines and cosines on every token)",
    };
    cJSON_AddStringToObject(a, "positional_encoding", positional[c->model.positional_layout]);
    cJSON_AddStringToObject(a, "activation",
                            ted_learn_shown_word("model.activation", (int)c->model.activation));
    cJSON_AddBoolToObject(a, "tied_output", c->model.tied_output);
    cJSON_AddBoolToObject(a, "scale_embedding", c->model.scale_embedding);
    cJSON_AddStringToObject(a, "tokenizer",
                            ted_learn_shown_word("tokenizer.type", (int)c->tokens.tokenizer));
    return a;
}

static cJSON *sizes_json(const ted_config_architecture *c)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "d_model", c->d_model);
    cJSON_AddNumberToObject(s, "heads", c->heads);
    cJSON_AddNumberToObject(s, "query_size", c->query_size);
    cJSON_AddNumberToObject(s, "encoder_layers", c->encoder_layers);
    cJSON_AddNumberToObject(s, "decoder_layers", c->decoder_layers);
    cJSON_AddNumberToObject(s, "d_ff", c->d_ff);
    cJSON_AddNumberToObject(s, "src_vocab_size", c->src_vocab_size);
    cJSON_AddNumberToObject(s, "tgt_vocab_size", c->tgt_vocab_size);
    return s;
}

enum { EXAMPLES = 8, EXAMPLE_BYTES = 300, EXAMPLES_READ = 65536 };

/* The first bytes of the model directory's test.LANGUAGE, NUL-terminated:
 * a regular file only (a FIFO would block, a link to /dev/zero never end),
 * and no more than EXAMPLES_READ bytes of it. NULL when there is none. */
static char *read_examples(const char *dir, const char *language, size_t *length)
{
    char path[4096];
    int fd;
    ted_error err = {0};
    if (!dir || strchr(language, '/') ||
        snprintf(path, sizeof path, "%s/test.%s", dir, language) >= (int)sizeof path ||
        ted_open_regular(path, &fd, &err))
        return NULL;
    char *text = malloc(EXAMPLES_READ + 1);
    size_t n = 0;
    for (ssize_t got = 1; text && n < EXAMPLES_READ && got > 0; n += got > 0 ? (size_t)got : 0)
        got = read(fd, text + n, EXAMPLES_READ - n);
    close(fd);
    if (text)
        text[n] = '\0';
    *length = n;
    return text;
}

/* The first lines of the model directory's test.LANGUAGE, when it has
 * one: up to EXAMPLES lines of at most EXAMPLE_BYTES, as valid UTF-8. */
static cJSON *examples_json(const char *dir, const char *language)
{
    cJSON *list = cJSON_CreateArray();
    size_t length = 0;
    char *text = read_examples(dir, language, &length), clean[3 * EXAMPLE_BYTES + 1];
    int n = 0;
    for (char *line = text; list && line && n < EXAMPLES && line < text + length;) {
        char *end = line + strcspn(line, "\n");
        bool whole = *end == '\n' || (end == text + length && length < EXAMPLES_READ);
        *end = '\0';
        size_t bytes = strcspn(line, "\r");
        line[bytes] = '\0';
        if (whole && bytes > 0 && bytes <= EXAMPLE_BYTES) {
            cJSON_AddItemToArray(list, cJSON_CreateString(serve_utf8_clean(line, clean,
                                                                            sizeof clean)));
            n++;
        }
        line = end + 1;
    }
    free(text);
    return list;
}

/* {SOURCE: [TARGET, ...]}: the targets the model translates each source
 * language into (ted_model_translates); NULL when it translates each into
 * every other. */
static cJSON *directions_json(const ted_model *model)
{
    const char *const *sources, *const *targets;
    int source_count = ted_model_languages(model, TED_SIDE_SOURCE, &sources);
    int target_count = ted_model_languages(model, TED_SIDE_TARGET, &targets);
    cJSON *o = cJSON_CreateObject();
    bool every = true;
    for (int i = 0; o && i < source_count; i++) {
        cJSON *list = cJSON_AddArrayToObject(o, sources[i]);
        for (int k = 0; list && k < target_count; k++) {
            bool translated = ted_model_translates(model, sources[i], targets[k]);
            if (translated)
                cJSON_AddItemToArray(list, cJSON_CreateString(targets[k]));
            every = every && (translated || !strcmp(sources[i], targets[k]));
        }
    }
    if (!every)
        return o;
    cJSON_Delete(o);
    return NULL;
}

/* {"source": [codes], "target": [codes]}, with "directions" {...} when
 * the model translates less than every pair: ted_model_languages,
 * ted_model_translates. */
static cJSON *languages_json(const ted_model *model)
{
    cJSON *o = cJSON_CreateObject();
    for (int side = TED_SIDE_SOURCE; o && side <= TED_SIDE_TARGET; side++) {
        const char *const *codes;
        int n = ted_model_languages(model, (ted_side)side, &codes);
        cJSON *list = cJSON_AddArrayToObject(o, side == TED_SIDE_SOURCE ? "source" : "target");
        for (int i = 0; list && i < n; i++)
            cJSON_AddItemToArray(list, cJSON_CreateString(codes[i]));
    }
    cJSON *directions = o ? directions_json(model) : NULL;
    if (directions)
        cJSON_AddItemToObject(o, "directions", directions);
    return o;
}

/* The examples of a source language: test.CODE ("test.eng_Latn"), else
 * test.ISO ("test.en"). */
static cJSON *language_examples(const char *dir, const char *code)
{
    cJSON *list = examples_json(dir, code);
    char iso[TED_LANGUAGE_CODE_SIZE];
    if (cJSON_GetArraySize(list) == 0 && ted_language_iso(code, iso, sizeof iso) &&
        strcmp(iso, code)) {
        cJSON_Delete(list);
        list = examples_json(dir, iso);
    }
    return list;
}

/* "examples": the first lines of the model directory's test file of its
 * first source language (test.en for a model that names none), and
 * "examples_by_language": {CODE: [...]} of each source language. */
static void add_examples(cJSON *m, const serve_model *model)
{
    const char *const *codes;
    int n = ted_model_languages(model->model, TED_SIDE_SOURCE, &codes);
    cJSON *by = cJSON_AddObjectToObject(m, "examples_by_language");
    for (int i = 0; by && i < n; i++)
        cJSON_AddItemToObject(by, codes[i], language_examples(model->dir, codes[i]));
    cJSON *first = n ? cJSON_GetObjectItemCaseSensitive(by, codes[0]) : NULL;
    cJSON_AddItemToObject(m, "examples", first ? cJSON_Duplicate(first, true)
                                               : examples_json(model->dir, "en"));
}

char *serve_explorer_models(const serve_model *models, int count)
{
    cJSON *root = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(root, "models");
    for (int i = 0; list && i < count; i++) {
        const ted_config_view c = ted_config_get_view(ted_model_config(models[i].model));
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "name", models[i].name);
        cJSON_AddItemToObject(m, "architecture", architecture_json(&c));
        cJSON_AddItemToObject(m, "sizes", sizes_json(&c.model));
        cJSON_AddItemToObject(m, "languages", languages_json(models[i].model));
        add_examples(m, &models[i]);
        cJSON_AddItemToArray(list, m);
    }
    cJSON_AddNumberToObject(root, "max_source_tokens", EXPLORE_MAX_SOURCE_TOKENS);
    cJSON_AddNumberToObject(root, "max_beam", EXPLORE_MAX_BEAM);
    int status;
    return answer(root, &status);
}

/* ---- reading a request ---------------------------------------------------------- */

typedef struct explore_request {
    cJSON *root;
    const serve_model *model;
    const char *source;
    ted_learn_forced *forced;  /* (forced_count) */
    int forced_count;
    int top_k;
    frontend_choice choice;  /* beam search's options, and the languages of both */
} explore_request;

/* A client's string as a message quotes it: its first bytes, valid UTF-8. */
typedef struct quoted {
    char text[FIELD_NAME_SHOWN];
} quoted;

static quoted shown(const char *text)
{
    quoted q;
    serve_utf8_clean(text, q.text, sizeof q.text);
    return q;
}

static bool whole_number(const cJSON *v, int min, int max, int *out)
{
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < min ||
        v->valuedouble > max)
        return false;
    *out = (int)v->valuedouble;
    return true;
}

/* forced: [{"step": N, "token": "TOKEN"}, ...], N from 1, one token per
 * step (ted_learn_add_forced). */
static bool read_forced(const cJSON *v, const ted_model *model, explore_request *r,
                        serve_refusal *no)
{
    int n = cJSON_GetArraySize(v);
    if (!cJSON_IsArray(v) || n > EXPLORE_MAX_STEPS)
        return serve_refuse(no, 400, "forced: expected a list of at most %d {\"step\", \"token\"}",
                      EXPLORE_MAX_STEPS);
    if (!(r->forced = calloc((size_t)(n > 0 ? n : 1), sizeof *r->forced)))
        return serve_refuse(no, 400, "out of memory");
    const cJSON *item;
    cJSON_ArrayForEach(item, v)
    {
        int i = r->forced_count, step;
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(item, "step");
        const cJSON *token = cJSON_GetObjectItemCaseSensitive(item, "token");
        if (!cJSON_IsObject(item) || cJSON_GetArraySize(item) != 2 ||
            !whole_number(at, 1, EXPLORE_MAX_STEPS, &step) || !cJSON_IsString(token))
            return serve_refuse(no, 400, "forced[%d]: expected {\"step\": a whole number from 1 to "
                          "%d, \"token\": a string}", i, EXPLORE_MAX_STEPS);
        const char *text = token->valuestring;
        switch (ted_learn_add_forced(model, r->forced, &r->forced_count, step, text)) {
        case TED_LEARN_FORCE_NOT_IN_VOCABULARY:
            return serve_refuse(no, 400, "forced[%d].token: \"%s\" is not in the target "
                          "vocabulary", i, shown(token->valuestring).text);
        case TED_LEARN_FORCE_STEP_TAKEN:
            return serve_refuse(no, 400, "forced[%d].step: step %d is already forced", i, step);
        case TED_LEARN_FORCE_ADDED:
            break;
        }
    }
    return true;
}

/* A word option (length_normalization, early_stopping), as POST
 * /translate takes it (serve_option_word). */
static bool read_word(const cJSON *v, ted_option option, int *value, serve_refusal *no)
{
    if (serve_option_word(option, v, value))
        return true;
    char words[128];
    serve_option_words(option, words, sizeof words);
    return serve_refuse(no, 400, "%s: expected %s", ted_option_key(option), words);
}

/* The rules on the scores (POST /v1/translate's fields of the same names),
 * in both endpoints; checked with the rest by frontend_choose_options.
 * False when `name` is none of them. */
static bool read_rule(const cJSON *v, const char *name, frontend_choice *d, bool *ok)
{
    static const struct {
        const char *name;
        size_t value, given;
    } rules[] = {
#define RULE(key, member, flag) {key, offsetof(frontend_choice, member), offsetof(frontend_choice, flag)}
        RULE("no_repeat_ngram_size", no_repeat_ngram_size, no_repeat_ngram_size_given),
        RULE("encoder_no_repeat_ngram_size", encoder_ngram, encoder_ngram_given),
        RULE("min_length", min_length, min_length_given),
        RULE("min_new_tokens", min_new_tokens, min_new_tokens_given),
#undef RULE
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (!strcmp(name, rules[i].name)) {
            *(bool *)((char *)d + rules[i].given) = true;
            *ok = whole_number(v, 0, EXPLORE_MAX_STEPS, (int *)((char *)d + rules[i].value));
            return true;
        }
    if (!strcmp(name, "bad_words_ids")) {
        *ok = serve_read_bad_words(v, d);
        return true;
    }
    if (strcmp(name, "repetition_penalty"))
        return false;
    d->repetition_penalty_given = true;
    d->repetition_penalty = (float)v->valuedouble;
    *ok = cJSON_IsNumber(v);
    return true;
}

static bool read_field(const cJSON *v, explore_request *r, bool beam, serve_refusal *no)
{
    const char *name = v->string;
    bool ok;
    if (read_rule(v, name, &r->choice, &ok)) {
        if (!strcmp(name, "repetition_penalty"))
            return ok || serve_refuse(no, 400, "%s: expected a number", name);
        if (!strcmp(name, "bad_words_ids"))
            return ok || serve_refuse(no, 400, "%s: expected lists of token ids, in all fewer "
                                      "than %d ids and lists", name, TED_BAD_WORDS_MAX);
        return ok || serve_refuse(no, 400, "%s: expected a whole number from 0 to %d", name,
                                  EXPLORE_MAX_STEPS);
    }
    if (!strcmp(name, "model"))
        return true;  /* read first */
    if (!strcmp(name, "source")) {
        r->source = cJSON_GetStringValue(v);
        return (r->source && strlen(r->source) <= EXPLORE_MAX_SOURCE_BYTES) ||
               serve_refuse(no, 400, "source: expected a string of at most %d bytes",
                      EXPLORE_MAX_SOURCE_BYTES);
    }
    bool source_lang = !strcmp(name, "source_lang");
    if (source_lang || !strcmp(name, "target_lang")) {
        const char **code = source_lang ? &r->choice.languages.source
                                        : &r->choice.languages.target;
        *code = cJSON_GetStringValue(v);
        return *code || serve_refuse(no, 400, "%s: expected a string", name);
    }
    if (!beam && !strcmp(name, "forced"))
        return read_forced(v, r->model->model, r, no);
    if (!beam && !strcmp(name, "top_k"))
        return whole_number(v, 1, EXPLORE_MAX_TOP_K, &r->top_k) ||
               serve_refuse(no, 400, "top_k: expected a whole number from 1 to %d",
                      EXPLORE_MAX_TOP_K);
    if (beam && !strcmp(name, "beam")) {
        r->choice.beam_given = true;
        return whole_number(v, 1, EXPLORE_MAX_BEAM, &r->choice.beam) ||
               serve_refuse(no, 400, "beam: expected a whole number from 1 to %d", EXPLORE_MAX_BEAM);
    }
    if (beam && !strcmp(name, "length_penalty")) {
        r->choice.length_penalty_given = true;
        r->choice.length_penalty = (float)v->valuedouble;
        return cJSON_IsNumber(v) || serve_refuse(no, 400, "length_penalty: expected a number");
    }
    if (beam && !strcmp(name, "length_normalization")) {
        r->choice.normalization_given = true;
        return read_word(v, TED_OPTION_LENGTH_NORMALIZATION, (int *)&r->choice.normalization,
                         no);
    }
    if (beam && !strcmp(name, "early_stopping")) {
        r->choice.early_stopping_given = true;
        return read_word(v, TED_OPTION_EARLY_STOPPING, (int *)&r->choice.early_stopping, no);
    }
    return serve_refuse(no, 400, "unknown field \"%s\"", shown(name).text);
}

/* The model a request names ("model"), or the first one served. */
static bool read_model(const serve_model *models, int count, explore_request *r,
                       serve_refusal *no)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(r->root, "model");
    if (name && !cJSON_IsString(name))
        return serve_refuse(no, 400, "model: expected a string");
    for (int i = 0; i < count && !r->model; i++)
        if (!name || !strcmp(models[i].name, name->valuestring))
            r->model = &models[i];
    return r->model || serve_refuse(no, 404, "model \"%s\" is not served here (GET /v1/models "
                              "lists them)", shown(name->valuestring).text);
}

/* Parses the body of /v1/explore or /v1/beam: false when it is refused. */
static bool read_request(const serve_model *models, int count, const char *body, size_t length,
                         bool beam, explore_request *r, serve_refusal *no)
{
    *r = (explore_request){.top_k = 5};
    const char *end = NULL;
    r->root = cJSON_ParseWithLengthOpts(body, length, &end, false);
    size_t at = end ? (size_t)(end - body) : 0;
    while (r->root && at < length && strchr(" \t\r\n", body[at]))
        at++;
    if (serve_json_nul(body, length, no))
        return false;
    if (!r->root || at < length)
        return serve_refuse(no, 400, "malformed JSON at byte %zu", at);
    if (!cJSON_IsObject(r->root))
        return serve_refuse(no, 400, "the body is not a JSON object");
    if (!read_model(models, count, r, no))
        return false;
    const cJSON *v;
    cJSON_ArrayForEach(v, r->root)
    {
        for (const cJSON *w = r->root->child; w != v; w = w->next)
            if (!strcmp(w->string, v->string))
                return serve_refuse(no, 400, "field \"%s\" given twice", shown(v->string).text);
        if (!read_field(v, r, beam, no))
            return false;
    }
    return r->source || serve_refuse(no, 400, "source: missing (the sentence to translate)");
}

static void free_request(explore_request *r)
{
    cJSON_Delete(r->root);
    free(r->forced);
}

/* The request's source, tokenized once (ted_prepare_source) and within
 * the explorer's limits: false when it is refused, with no ids left. */
static bool prepare_source(const explore_request *r, ted_source *source, serve_refusal *no)
{
    ted_error err = {0};
    if (ted_prepare_source(r->model->model, r->source, &r->choice.languages, source, &err))
        return serve_refuse(no, err.status == TED_ERR_NOMEM ? 500 : 400, "source: %.900s",
                      err.message);
    int count = source->count;
    bool blank = source->blank;
    if (!blank && count <= EXPLORE_MAX_SOURCE_TOKENS)
        return true;
    ted_source_free(source);
    if (blank)
        return serve_refuse(no, 400, "source: the sentence is empty");
    return serve_refuse(no, 400, "source: %d tokens, more than the explorer's %d", count,
                  EXPLORE_MAX_SOURCE_TOKENS);
}

/* The most steps of a source: the model's rule, within the explorer's cap. */
static int explore_steps(const ted_model *model, int source_len)
{
    int steps = ted_max_target_length(model, source_len, 0);
    return steps < EXPLORE_MAX_STEPS ? steps : EXPLORE_MAX_STEPS;
}

/* ---- POST /v1/explore ------------------------------------------------------------- */

/* ted_learn_explain_fn: the explanation as a list of {kind, title, words, shape}. */
static void explanation_piece(void *data, ted_learn_explain_kind kind, const char *title,
                              const char *words, const char *shape)
{
    static const char *const kinds[] = {"part", "heading", "line"};
    cJSON *piece = cJSON_CreateObject();
    cJSON_AddStringToObject(piece, "kind", kinds[kind]);
    cJSON_AddStringToObject(piece, "title", title);
    cJSON_AddStringToObject(piece, "words", words);
    cJSON_AddStringToObject(piece, "shape", shape);
    cJSON_AddItemToArray(data, piece);
}

static cJSON *candidate_json(const ted_learn_trace *t, const ted_learn_candidate *k)
{
    cJSON *o = token_json(t->model, k->id, true);
    add_rounded(o, "p", k->p, 7);
    add_rounded(o, "logit", k->logit, 7);
    return o;
}

/* The candidate, and what a rule did to it at 0-based step `step`:
 * "rule" (the kind), "why" (ted_learn_change_words), "banned", and
 * "score" (its score after the rules) when it was penalised. */
static cJSON *changed_json(const ted_learn_trace *t, int step, const ted_learn_candidate *k,
                           const ted_learn_change *change)
{
    static const char *const kinds[] = {
        [TED_LEARN_RULE_NONE] = "none",
        [TED_LEARN_RULE_BANNED_ID] = "banned_ids",
        [TED_LEARN_RULE_REPETITION] = "repetition_penalty",
        [TED_LEARN_RULE_NGRAM] = "no_repeat_ngram_size",
        [TED_LEARN_RULE_SOURCE_NGRAM] = "encoder_no_repeat_ngram_size",
        [TED_LEARN_RULE_BAD_WORDS] = "bad_words_ids",
        [TED_LEARN_RULE_MIN_LENGTH] = "min_length",
        [TED_LEARN_RULE_MIN_NEW_TOKENS] = "min_new_tokens",
        [TED_LEARN_RULE_FORCED_BOS] = "forced_bos",
        [TED_LEARN_RULE_FORCED_LANGUAGE] = "forced_language",
        [TED_LEARN_RULE_FORCED] = "forced",
    };
    cJSON *o = candidate_json(t, k);
    if (change->rule == TED_LEARN_RULE_NONE || (unsigned)change->rule >= sizeof kinds / sizeof *kinds)
        return o;
    char words[512];
    cJSON_AddStringToObject(o, "rule", kinds[change->rule]);
    cJSON_AddStringToObject(o, "why", ted_learn_change_words(t, step, k->id, change, words,
                                                             sizeof words));
    bool banned = change->score == -INFINITY && change->rule < TED_LEARN_RULE_FORCED_BOS;
    cJSON_AddBoolToObject(o, "banned", banned);
    if (!banned)
        add_rounded(o, "score", change->score, 7);
    return o;
}

/* The rules the trace applies, as the request fields spell them (0: off). */
static cJSON *rules_json(const ted_logits_rules *r)
{
    cJSON *o = cJSON_CreateObject();
    add_rounded(o, "repetition_penalty", r->repetition_penalty, 7);
    cJSON_AddNumberToObject(o, "no_repeat_ngram_size", r->no_repeat_ngram_size);
    cJSON_AddNumberToObject(o, "encoder_no_repeat_ngram_size", r->encoder_no_repeat_ngram_size);
    cJSON_AddNumberToObject(o, "min_length", r->min_length);
    cJSON_AddNumberToObject(o, "min_new_tokens", r->min_new_tokens);
    cJSON *lists = cJSON_AddArrayToObject(o, "bad_words_ids"), *list = NULL;
    for (int i = 0; lists && i < r->bad_words_length && i < TED_BAD_WORDS_MAX; i++) {
        if (r->bad_words[i] < 0) {
            list = NULL;
            continue;
        }
        if (!list)
            cJSON_AddItemToArray(lists, list = cJSON_CreateArray());
        cJSON_AddItemToArray(list, cJSON_CreateNumber(r->bad_words[i]));
    }
    return o;
}

/* (layers, heads, keys) weights as nested lists. */
static cJSON *attention_json(const float *w, int layers, int heads, int keys)
{
    cJSON *list = cJSON_CreateArray();
    for (int l = 0; l < layers; l++) {
        cJSON *layer = cJSON_CreateArray();
        for (int h = 0; h < heads; h++)
            cJSON_AddItemToArray(layer, weights_row(w + ((size_t)l * heads + h) * keys, keys));
        cJSON_AddItemToArray(list, layer);
    }
    return list;
}

static cJSON *encoder_json(const ted_learn_trace *t)
{
    const ted_config_architecture c = ted_config_get_view(t->config).model;
    int S = t->source_len;
    cJSON *list = cJSON_CreateArray();
    for (int l = 0; l < c.encoder_layers; l++) {
        cJSON *layer = cJSON_CreateArray();
        for (int h = 0; h < c.heads; h++) {
            cJSON *rows = cJSON_CreateArray();
            for (int i = 0; i < S; i++)
                cJSON_AddItemToArray(
                    rows, weights_row(t->encoder + (((size_t)l * c.heads + h) * S + i) * S, S));
            cJSON_AddItemToArray(layer, rows);
        }
        cJSON_AddItemToArray(list, layer);
    }
    return list;
}

/* The text of the tokens chosen up to step i (0-based), as the
 * translation reads (ted_decode_target). */
static cJSON *text_so_far(const ted_learn_trace *t, int i)
{
    int *ids = malloc((size_t)(i + 1) * sizeof *ids);
    for (int k = 0; ids && k <= i; k++)
        ids[k] = t->steps[k].chosen;
    char *text = ids ? ted_decode_target(t->model, ids, i + 1) : NULL;
    cJSON *o = cJSON_CreateString(text ? text : "");
    free(text);
    free(ids);
    return o;
}

/* The bucket of each key for one query ((keys) ints), or NULL. */
static cJSON *buckets_json(const ted_learn_trace *t, ted_learn_attention which, int query,
                           int keys)
{
    int *b = malloc((size_t)(keys > 0 ? keys : 1) * sizeof *b);
    cJSON *row = NULL;
    if (b && ted_learn_buckets(t, which, 0, query, keys, b))
        row = cJSON_CreateIntArray(b, keys);
    free(b);
    return row;
}

/* A stack's relative position bias: {buckets, heads, max_distance,
 * bidirectional, table[head][bucket]}, and for the encoder the bucket of
 * every (query, key) pair; NULL without one. */
static cJSON *position_bias_json(const ted_learn_trace *t, ted_learn_attention which)
{
    ted_learn_position_bias b;
    if (!ted_learn_position_bias_of(t, which, 0, &b))
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "buckets", b.buckets);
    cJSON_AddNumberToObject(o, "heads", b.heads);
    cJSON_AddNumberToObject(o, "max_distance", b.max_distance);
    cJSON_AddBoolToObject(o, "bidirectional", b.bidirectional);
    cJSON *table = cJSON_AddArrayToObject(o, "table");
    for (int h = 0; table && h < b.heads; h++) {
        cJSON *row = cJSON_CreateArray();
        for (int k = 0; k < b.buckets; k++)
            cJSON_AddItemToArray(row, cJSON_CreateNumber(b.table[(size_t)k * b.heads + h]));
        cJSON_AddItemToArray(table, row);
    }
    if (which == TED_LEARN_ENCODER_SELF) {
        cJSON *pairs = cJSON_AddArrayToObject(o, "pairs");
        for (int i = 0; pairs && i < t->source_len; i++)
            cJSON_AddItemToArray(pairs, buckets_json(t, which, i, t->source_len));
    }
    return o;
}

static cJSON *step_json(const ted_learn_trace *t, int i)
{
    const ted_config_architecture c = ted_config_get_view(t->config).model;
    const ted_learn_step *s = &t->steps[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "input", token_json(t->model, s->input, true));
    cJSON_AddItemToObject(o, "chosen", changed_json(t, i, &s->taken, &s->taken_change));
    cJSON_AddBoolToObject(o, "forced", s->forced);
    cJSON_AddItemToObject(o, "best", candidate_json(t, &s->best));
    cJSON_AddItemToObject(o, "text", text_so_far(t, i));
    cJSON *top = cJSON_AddArrayToObject(o, "top");
    for (int k = 0; top && k < t->top_k; k++)
        cJSON_AddItemToArray(top, changed_json(t, i, &s->top[k], &s->changes[k]));
    cJSON_AddItemToObject(o, "self", attention_json(s->self, c.decoder_layers, c.heads, i + 1));
    cJSON_AddItemToObject(o, "cross",
                          attention_json(s->cross, c.decoder_layers, c.heads, t->source_len));
    cJSON *buckets = buckets_json(t, TED_LEARN_DECODER_SELF, i, i + 1);
    if (buckets)
        cJSON_AddItemToObject(o, "self_buckets", buckets);
    cJSON *explain = cJSON_AddArrayToObject(o, "explain");
    if (explain)
        ted_learn_explain_step(t, i, explanation_piece, explain);
    return o;
}

static cJSON *trace_json(const explore_request *r, const ted_learn_trace *t, int unknown)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", r->model->name);
    cJSON *source = cJSON_AddObjectToObject(root, "source");
    cJSON_AddStringToObject(source, "text", r->source);
    cJSON_AddNumberToObject(source, "unknown", unknown);
    cJSON *tokens = cJSON_AddArrayToObject(source, "tokens");
    for (int j = 0; tokens && j < t->source_len; j++)
        cJSON_AddItemToArray(tokens, token_json(t->model, t->source[j], false));
    cJSON_AddNumberToObject(root, "max_steps", t->max_steps);
    cJSON_AddNumberToObject(root, "top_k", t->top_k);
    cJSON_AddItemToObject(root, "rules", rules_json(&t->rules));
    cJSON_AddItemToObject(root, "encoder", encoder_json(t));
    cJSON *bias = position_bias_json(t, TED_LEARN_ENCODER_SELF);
    if (bias) {
        cJSON *both = cJSON_AddObjectToObject(root, "position_bias");
        cJSON_AddItemToObject(both, "encoder", bias);
        cJSON_AddItemToObject(both, "decoder", position_bias_json(t, TED_LEARN_DECODER_SELF));
    }
    cJSON *explain = cJSON_AddArrayToObject(root, "explain_encoder");
    if (explain)
        ted_learn_explain_encoder(t, explanation_piece, explain);
    cJSON *steps = cJSON_AddArrayToObject(root, "steps");
    for (int i = 0; steps && i < t->count; i++)
        cJSON_AddItemToArray(steps, step_json(t, i));
    char *text = ted_learn_translation(t);
    cJSON_AddStringToObject(root, "translation", text ? text : "");
    free(text);
    int eos_id = ted_config_get_view(t->config).tokens.eos_id;
    bool eos = t->count > 0 && t->steps[t->count - 1].chosen == eos_id;
    cJSON_AddStringToObject(root, "end", eos ? "eos" : "length");
    return root;
}

static char *explore(const explore_request *r, int *status)
{
    serve_refusal no;
    ted_source source = {0};
    if (!prepare_source(r, &source, &no))
        return error_answer(status, no.status, "%s", no.message);
    const ted_model *model = r->model->model;
    ted_translate_options options;
    ted_error err = {0};
    if (frontend_choose_options(model, &r->choice, serve_field_names, &options, &err)) {
        ted_source_free(&source);
        return error_answer(status, 400, "%s", err.message);
    }
    ted_learn_trace t;
    ted_status s = ted_learn_start(&t, model, &source, explore_steps(model, source.count), r->top_k,
                               &err);
    ted_learn_use_rules(&t, &options.decode.rules);
    if (!s)
        s = ted_learn_run(&t, r->forced, r->forced_count, &err);
    for (int i = 0; !s && i < r->forced_count; i++)
        if (r->forced[i].step > t.count) {
            int steps = t.count;
            ted_learn_end(&t);
            ted_source_free(&source);
            return error_answer(status, 400, "forced[%d].step: %d is past the end of the "
                                "decode (%d steps)", i, r->forced[i].step, steps);
        }
    char *text = s ? error_answer(status, s == TED_ERR_NOMEM ? 500 : 400, "source: %s",
                                  err.message)
                   : answer(trace_json(r, &t, source.unknown), status);
    ted_learn_end(&t);
    ted_source_free(&source);
    return text;
}

/* ---- POST /v1/beam -------------------------------------------------------------- */

/* What the trace of a beam search gathers: every step's candidates, and
 * the ids of the open hypotheses so far, to spell out the finished ones. */
typedef struct beam_record {
    const ted_model *model;
    cJSON *steps;
    cJSON *finished;     /* every finished hypothesis, in the order they finished */
    int **open, **next;  /* (beam + 1): ids of the open hypotheses, (max_steps) each;
                          * next[beam]: room for a finished one */
    int beam;
} beam_record;

static const char *fate_name(ted_beam_fate fate)
{
    return fate == TED_BEAM_OPEN ? "open" : fate == TED_BEAM_FINISHED ? "finished" : "pruned";
}

/* ted_beam_trace: one step of the (only) sentence. */
static void record_step(void *data, const ted_beam_step *step)
{
    beam_record *b = data;
    cJSON *o = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(o, "candidates");
    cJSON_AddNumberToObject(o, "length", step->length);
    cJSON_AddBoolToObject(o, "stops", step->stops);
    int opened = 0, L = step->length;
    for (int k = 0; k < step->count; k++) {
        const ted_beam_candidate *c = &step->candidates[k];
        cJSON *item = token_json(b->model, c->token, true);
        cJSON_AddNumberToObject(item, "parent", c->parent);
        add_rounded(item, "log_prob", c->log_prob, 9);
        add_rounded(item, "score", c->score, 9);
        cJSON_AddStringToObject(item, "fate", fate_name(c->fate));
        cJSON_AddItemToArray(list, item);
        int *ids = c->fate == TED_BEAM_OPEN && opened < b->beam ? b->next[opened++]
                   : c->fate == TED_BEAM_FINISHED               ? b->next[b->beam]
                                                                : NULL;
        if (!ids)
            continue;
        if (L > 1)
            memcpy(ids, b->open[c->parent], (size_t)(L - 1) * sizeof *ids);
        ids[L - 1] = c->token;
        if (c->fate == TED_BEAM_FINISHED) {
            char *text = ted_decode_target(b->model, ids, L);
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "text", text ? text : "");
            free(text);
            cJSON_AddNumberToObject(f, "length", L);
            cJSON *pieces = cJSON_AddArrayToObject(f, "tokens");
            for (int t = 0; pieces && t < L; t++)
                cJSON_AddItemToArray(pieces, cJSON_CreateString(ted_target_token(b->model, ids[t])));
            cJSON_AddNumberToObject(f, "step", cJSON_GetArraySize(b->steps));
            cJSON_AddNumberToObject(f, "candidate", k);
            add_rounded(f, "log_prob", c->log_prob, 9);
            add_rounded(f, "score", c->score, 9);
            cJSON_AddItemToArray(b->finished, f);
        }
    }
    int **swap = b->open;  /* this step's open hypotheses are the next one's parents */
    b->open = b->next;
    b->next = swap;
    cJSON_AddItemToArray(b->steps, o);
}

/* The finished hypotheses by score, best first; the earlier finished first
 * on equal scores, as beam search ranks them. */
static cJSON *ranking_json(const cJSON *finished)
{
    int n = cJSON_GetArraySize(finished);
    cJSON **items = calloc((size_t)(n > 0 ? n : 1), sizeof *items), *list = cJSON_CreateArray();
    if (!items)
        return list;
    for (int i = 0; i < n; i++) {
        cJSON *item = cJSON_Duplicate(cJSON_GetArrayItem(finished, i), true);
        double score = cJSON_GetObjectItem(item, "score")->valuedouble;
        int at = i;
        while (at > 0 && score > cJSON_GetObjectItem(items[at - 1], "score")->valuedouble) {
            items[at] = items[at - 1];
            at--;
        }
        items[at] = item;
    }
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(list, items[i]);
    free(items);
    return list;
}

static void free_record(beam_record *b)
{
    for (int k = 0; b->open && k <= b->beam; k++) {
        free(b->open[k]);
        free(b->next ? b->next[k] : NULL);
    }
    free(b->open);
    free(b->next);
    cJSON_Delete(b->steps);
    cJSON_Delete(b->finished);
}

static bool new_record(beam_record *b, const ted_model *model, int beam, int max_steps)
{
    *b = (beam_record){.model = model, .beam = beam};
    b->steps = cJSON_CreateArray();
    b->finished = cJSON_CreateArray();
    b->open = calloc((size_t)beam + 1, sizeof *b->open);
    b->next = calloc((size_t)beam + 1, sizeof *b->next);
    bool ok = b->steps && b->finished && b->open && b->next;
    for (int k = 0; ok && k <= beam; k++)
        ok = (b->open[k] = malloc((size_t)max_steps * sizeof(int))) &&
             (b->next[k] = malloc((size_t)max_steps * sizeof(int)));
    return ok;
}

static cJSON *beam_json(const explore_request *r, const ted_beam_params *p, beam_record *b,
                        const ted_hypothesis *best)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", r->model->name);
    cJSON_AddStringToObject(root, "source", r->source);
    cJSON_AddNumberToObject(root, "beam", p->beam_size);
    add_rounded(root, "length_penalty", p->length_penalty, 7);
    const char *normalization =
        ted_option_word(TED_OPTION_LENGTH_NORMALIZATION, p->length_normalization);
    const char *stopping = ted_option_word(TED_OPTION_EARLY_STOPPING, p->early_stopping);
    cJSON_AddStringToObject(root, "length_normalization", normalization ? normalization : "");
    cJSON_AddStringToObject(root, "early_stopping", stopping ? stopping : "");
    cJSON_AddItemToObject(root, "steps", b->steps);
    b->steps = NULL;
    cJSON_AddItemToObject(root, "ranking", ranking_json(b->finished));
    char *text = ted_decode_target(r->model->model, best->ids, best->length);
    cJSON *o = cJSON_AddObjectToObject(root, "best");
    cJSON_AddStringToObject(o, "text", text ? text : "");
    free(text);
    add_rounded(o, "log_prob", best->log_prob, 9);
    add_rounded(o, "score", best->score, 9);
    return root;
}

/* Beam search of `source`, its prefix forced, with the model's options
 * and the request's (beam size 4 unless given), traced. */
static char *traced_beam_search(const explore_request *r, const ted_source *source,
                                int *status)
{
    const ted_model *model = r->model->model;
    frontend_choice choice = r->choice;
    choice.beam_given = true;
    choice.beam = r->choice.beam_given ? r->choice.beam : 4;
    ted_translate_options options;
    ted_error err = {0};
    if (frontend_choose_options(model, &choice, serve_field_names, &options, &err))
        return error_answer(status, 400, "%s", err.message);
    int max_length = explore_steps(model, source->count);
    const ted_beam_params *params = &options.decode.beam;
    beam_record record;
    ted_beam_trace trace = {record_step, &record};
    ted_session *session = NULL;
    ted_hypothesis best = {0};
    const int *sources[1] = {source->ids}, *prefixes[1] = {source->prefix_ids};
    ted_batch batch = {.source_ids = sources, .source_lengths = &source->count,
                       .max_lengths = &max_length, .count = 1,
                       .prefix_ids = source->prefix_ids ? prefixes : NULL,
                       .prefix_lengths = &source->prefix_count};
    options.decode.n_best = 1;
    ted_status s = new_record(&record, model, params->beam_size, max_length) ? TED_OK
                                                                             : TED_ERR_NOMEM;
    if (!s)
        s = ted_session_new(model, &session, &err);
    if (!s)
        s = ted_decode(session, &batch, &options.decode, &trace, &best, &err);
    char *text = s == TED_ERR_NOMEM ? error_answer(status, 500, "out of memory")
                 : s                ? error_answer(status, 400, "%s", err.message)
                                    : answer(beam_json(r, params, &record, &best), status);
    ted_hypotheses_free(&best, 1);
    ted_session_free(session);
    free_record(&record);
    return text;
}

static char *beam_search(const explore_request *r, int *status)
{
    serve_refusal no;
    ted_source source = {0};
    char *text = prepare_source(r, &source, &no)
                     ? traced_beam_search(r, &source, status)
                     : error_answer(status, no.status, "%s", no.message);
    ted_source_free(&source);
    return text;
}

char *serve_explore(const serve_model *models, int count, ted_threads *const *threads,
                    const char *path, const char *body, size_t length, int *status)
{
    bool beam = !strcmp(path, "/v1/beam");
    explore_request r;
    serve_refusal no;
    if (!read_request(models, count, body, length, beam, &r, &no)) {
        free_request(&r);
        return error_answer(status, no.status, "%s", no.message);
    }
    ted_threads *before = ted_threads_use(threads ? threads[r.model - models] : NULL);
    char *text = beam ? beam_search(&r, status) : explore(&r, status);
    ted_threads_use(before);
    free_request(&r);
    return text;
}
