/* The JSON of ted serve (serve/request.h), with cJSON. */
#include "serve/request.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ted/util.h"

const frontend_option_names serve_field_names = {
    [TED_OPTION_BEAM_SIZE] = "beam",
    [TED_OPTION_SAMPLE] = "\"sample\": true",
    [TED_OPTION_N_BEST] = "n_best",
    [TED_OPTION_LENGTH_PENALTY] = "length_penalty",
    [TED_OPTION_LENGTH_NORMALIZATION] = "length_normalization",
    [TED_OPTION_EARLY_STOPPING] = "early_stopping",
    [TED_OPTION_TEMPERATURE] = "temperature",
    [TED_OPTION_TOP_K] = "top_k",
    [TED_OPTION_TOP_P] = "top_p",
    [TED_OPTION_SEED] = "seed",
    [TED_OPTION_MAX_LENGTH] = "max_length",
    [TED_OPTION_REPETITION_PENALTY] = "repetition_penalty",
    [TED_OPTION_NO_REPEAT_NGRAM_SIZE] = "no_repeat_ngram_size",
    [TED_OPTION_MIN_LENGTH] = "min_length",
    [TED_OPTION_MIN_NEW_TOKENS] = "min_new_tokens",
    [TED_OPTION_BAD_WORDS_IDS] = "bad_words_ids",
    [TED_OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE] = "encoder_no_repeat_ngram_size",
};

/* A word of the option table that JSON reads as a literal is given as
 * that literal too: 1 for one JSON reads as true, 0 as false, else -1. */
static int json_truth(const char *word)
{
    cJSON *v = cJSON_Parse(word);
    int truth = v && cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? 1 : 0) : -1;
    cJSON_Delete(v);
    return truth;
}

bool serve_option_word(ted_option option, const cJSON *v, int *value)
{
    const char *word;
    for (int i = 0; (word = ted_option_word(option, i)); i++) {
        int truth = json_truth(word);
        if ((cJSON_IsString(v) && !strcmp(v->valuestring, word)) ||
            (truth >= 0 && cJSON_IsBool(v) && (cJSON_IsTrue(v) ? 1 : 0) == truth)) {
            *value = i;
            return true;
        }
    }
    return false;
}

void serve_option_words(ted_option option, char *out, size_t size)
{
    const char *word;
    int count = 0;
    while (ted_option_word(option, count))
        count++;
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; (word = ted_option_word(option, i)) && at < size; i++) {
        const char *quote = json_truth(word) >= 0 ? "" : "\"";
        const char *join = i == 0 ? "" : i + 1 < count ? ", " : " or ";
        int n = snprintf(out + at, size - at, "%s%s%s%s", join, quote, word, quote);
        at += n > 0 ? (size_t)n : 0;
    }
}

/* ---- reading a request --------------------------------------------------- */

typedef enum field_kind {
    FIELD_MODEL,          /* a string: the model's name */
    FIELD_STRING,         /* a string */
    FIELD_TEXT,           /* a list of strings */
    FIELD_WHOLE,          /* an int */
    FIELD_NUMBER,         /* a float */
    FIELD_FLAG,           /* true or false */
    FIELD_SEED,           /* a whole number >= 0, or its decimal digits as a string */
    FIELD_NORMALIZATION,  /* a word of length_normalization (ted_option_word) */
    FIELD_FORMAT,         /* "text" or "html" */
    FIELD_EARLY_STOPPING, /* a word of early_stopping, true and false as JSON's */
    FIELD_BAD_WORDS,      /* lists of token ids (frontend_add_bad_words) */
} field_kind;

/* A field of the body: where its value goes in serve_request, and where
 * its "given" flag does (0: none). */
typedef struct field {
    const char *name;
    field_kind kind;
    size_t value, given;
} field;

#define CHOICE(member) offsetof(serve_request, choice.member)

static const field fields[] = {
    {"model", FIELD_MODEL, 0, 0},
    {"source_lang", FIELD_STRING, CHOICE(languages.source), 0},
    {"target_lang", FIELD_STRING, CHOICE(languages.target), 0},
    {"api_key", FIELD_STRING, offsetof(serve_request, api_key), 0},
    {"text", FIELD_TEXT, 0, 0},
    {"beam", FIELD_WHOLE, CHOICE(beam), CHOICE(beam_given)},
    {"sample", FIELD_FLAG, CHOICE(sample), 0},
    {"length_penalty", FIELD_NUMBER, CHOICE(length_penalty), CHOICE(length_penalty_given)},
    {"length_normalization", FIELD_NORMALIZATION, CHOICE(normalization),
     CHOICE(normalization_given)},
    {"early_stopping", FIELD_EARLY_STOPPING, CHOICE(early_stopping), CHOICE(early_stopping_given)},
    {"temperature", FIELD_NUMBER, CHOICE(temperature), CHOICE(temperature_given)},
    {"top_k", FIELD_WHOLE, CHOICE(top_k), CHOICE(top_k_given)},
    {"top_p", FIELD_NUMBER, CHOICE(top_p), CHOICE(top_p_given)},
    {"seed", FIELD_SEED, CHOICE(seed), CHOICE(seed_given)},
    {"n_best", FIELD_WHOLE, CHOICE(n_best), CHOICE(n_best_given)},
    {"max_length", FIELD_WHOLE, CHOICE(max_length), CHOICE(max_length_given)},
    {"repetition_penalty", FIELD_NUMBER, CHOICE(repetition_penalty),
     CHOICE(repetition_penalty_given)},
    {"no_repeat_ngram_size", FIELD_WHOLE, CHOICE(no_repeat_ngram_size),
     CHOICE(no_repeat_ngram_size_given)},
    {"min_length", FIELD_WHOLE, CHOICE(min_length), CHOICE(min_length_given)},
    {"min_new_tokens", FIELD_WHOLE, CHOICE(min_new_tokens), CHOICE(min_new_tokens_given)},
    {"bad_words_ids", FIELD_BAD_WORDS, 0, 0},
    {"encoder_no_repeat_ngram_size", FIELD_WHOLE, CHOICE(encoder_ngram),
     CHOICE(encoder_ngram_given)},
    {"scores", FIELD_FLAG, offsetof(serve_request, scores), 0},
    {"split_sentences", FIELD_FLAG, offsetof(serve_request, split_sentences), 0},
    {"format", FIELD_FORMAT, offsetof(serve_request, format), 0},
    {"stream", FIELD_FLAG, offsetof(serve_request, stream), 0},
};
enum { FIELD_COUNT = sizeof fields / sizeof fields[0] };

/* 2^53: the largest seed a JSON number holds exactly. */
#define EXACT_SEED_MAX 9007199254740992.0

static bool read_seed(const cJSON *v, uint64_t *seed)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        *seed = (uint64_t)d;
        return d >= 0.0 && d <= EXACT_SEED_MAX && d == floor(d);
    }
    if (!cJSON_IsString(v) || v->valuestring[0] < '0' || v->valuestring[0] > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v->valuestring, &end, 10);
    *seed = (uint64_t)n;
    return !errno && *end == '\0';
}

static bool read_texts(const cJSON *v, serve_request *r, char *message, size_t size)
{
    if (!cJSON_IsArray(v)) {
        snprintf(message, size, "text: expected a list of strings");
        return false;
    }
    int count = cJSON_GetArraySize(v);
    r->texts = calloc(count > 0 ? (size_t)count : 1, sizeof *r->texts);
    if (!r->texts) {
        snprintf(message, size, "text: out of memory");
        return false;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, v) {
        if (!cJSON_IsString(item)) {
            snprintf(message, size, "text[%d]: expected a string", r->count);
            return false;
        }
        r->texts[r->count++] = item->valuestring;
    }
    return true;
}

/* What a field of `kind` takes, for its message; a word's options are
 * written into `words`. */
static const char *expected(field_kind kind, char *words, size_t size)
{
    switch (kind) {
    case FIELD_MODEL: return "a string";
    case FIELD_STRING: return "a string";
    case FIELD_TEXT: return "a list of strings";
    case FIELD_WHOLE: return "a whole number";
    case FIELD_NUMBER: return "a number";
    case FIELD_FLAG: return "true or false";
    case FIELD_SEED: return "a whole number from 0 to 2^53, or a string of digits";
    case FIELD_NORMALIZATION:
        serve_option_words(TED_OPTION_LENGTH_NORMALIZATION, words, size);
        return words;
    case FIELD_FORMAT: return "\"text\" or \"html\"";
    case FIELD_EARLY_STOPPING:
        serve_option_words(TED_OPTION_EARLY_STOPPING, words, size);
        return words;
    case FIELD_BAD_WORDS: return "lists of token ids, in all fewer than 256 ids and lists";
    }
    return "";
}

bool serve_read_bad_words(const cJSON *v, frontend_choice *d)
{
    const cJSON *list, *item;
    if (!cJSON_IsArray(v))
        return false;
    cJSON_ArrayForEach(list, v) {
        int ids[TED_BAD_WORDS_MAX], count = 0;
        if (!cJSON_IsArray(list))
            return false;
        cJSON_ArrayForEach(item, list) {
            double id = cJSON_IsNumber(item) ? item->valuedouble : -1;
            if (!(id >= 0 && id <= INT_MAX && id == floor(id)) || count == TED_BAD_WORDS_MAX)
                return false;
            ids[count++] = (int)id;
        }
        if (!frontend_add_bad_words(d, ids, count))
            return false;
    }
    return true;
}

/* Stores value `v` of field `f`; false when it has the wrong type. */
static bool store(const field *f, const cJSON *v, serve_request *r)
{
    char *at = (char *)r + f->value;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    switch (f->kind) {
    case FIELD_MODEL:
        r->model = cJSON_IsString(v) ? v->valuestring : NULL;
        return r->model != NULL;
    case FIELD_STRING:
        *(const char **)at = cJSON_IsString(v) ? v->valuestring : NULL;
        return *(const char **)at != NULL;
    case FIELD_TEXT:
        return false;  /* read_texts */
    case FIELD_WHOLE:
        *(int *)at = (int)(d >= INT_MIN && d <= INT_MAX ? d : 0);
        return d >= INT_MIN && d <= INT_MAX && d == floor(d);
    case FIELD_NUMBER:
        *(float *)at = (float)d;
        return cJSON_IsNumber(v);
    case FIELD_FLAG:
        *(bool *)at = cJSON_IsTrue(v);
        return cJSON_IsBool(v);
    case FIELD_SEED:
        return read_seed(v, (uint64_t *)at);
    case FIELD_NORMALIZATION:
        return serve_option_word(TED_OPTION_LENGTH_NORMALIZATION, v, (int *)at);
    case FIELD_FORMAT:
        return cJSON_IsString(v) && document_format_from_name(v->valuestring, (document_format *)at);
    case FIELD_EARLY_STOPPING:
        return serve_option_word(TED_OPTION_EARLY_STOPPING, v, (int *)at);
    case FIELD_BAD_WORDS:
        return serve_read_bad_words(v, &r->choice);
    }
    return false;
}

static bool read_field(const cJSON *v, serve_request *r, unsigned *seen, char *message,
                       size_t size)
{
    int i = 0;
    while (i < FIELD_COUNT && strcmp(fields[i].name, v->string))
        i++;
    if (i == FIELD_COUNT) {
        char name[FIELD_NAME_SHOWN];
        serve_utf8_clean(v->string, name, sizeof name);
        snprintf(message, size, "unknown field \"%s\"", name);
        return false;
    }
    const field *f = &fields[i];
    if (*seen & 1u << i) {
        snprintf(message, size, "field \"%s\" given twice", f->name);
        return false;
    }
    *seen |= 1u << i;
    if (f->kind == FIELD_TEXT)
        return read_texts(v, r, message, size);
    if (!store(f, v, r)) {
        char words[128];
        snprintf(message, size, "%s: expected %s", f->name,
                 expected(f->kind, words, sizeof words));
        return false;
    }
    if (f->given)
        *((bool *)((char *)r + f->given)) = true;
    return true;
}

/* ---- NUL characters ----------------------------------------------------------- */

bool serve_refuse_nul(serve_refusal *no, const char *name, size_t length)
{
    char bytes[FIELD_NAME_SHOWN], shown[FIELD_NAME_SHOWN];
    size_t n = length < sizeof bytes - 1 ? length : sizeof bytes - 1;
    memcpy(bytes, name, n);
    bytes[n] = '\0';
    return serve_refuse(no, 400, "%s: a NUL character (U+0000); no field may hold one",
                        serve_utf8_clean(bytes, shown, sizeof shown));
}

/* Where a scan of a JSON body is: the field of the top-level object being
 * read and, in a list that is its value, the item. */
typedef struct json_place {
    const char *key;   /* the field's name as written; NULL: no field yet */
    size_t key_length;
    int depth;         /* 1: in the top-level object or list */
    bool expect_key;   /* the next string at depth 1 is a field's name */
    bool list;         /* the value at depth 2 is a list */
    int item;          /* its item */
} json_place;

/* The end of the string whose text begins at `at` (its closing quote, or
 * `length`); *nul when it holds a NUL character, raw or as \u0000. */
static size_t string_end(const char *body, size_t length, size_t at, bool *nul)
{
    for (; at < length && body[at] != '"'; at++) {
        if (body[at] == '\0')
            *nul = true;
        if (body[at] != '\\' || ++at >= length)
            continue;
        if (body[at] == 'u' && at + 4 < length && !memcmp(body + at + 1, "0000", 4))
            *nul = true;
    }
    return at;
}

static bool refuse_at(const json_place *p, bool in_key, serve_refusal *no)
{
    char name[FIELD_NAME_SHOWN + 16];
    if (in_key)
        return serve_refuse_nul(no, "a field's name", 14);
    if (!p->key)
        return serve_refuse_nul(no, "the body", 8);
    size_t n = p->key_length < FIELD_NAME_SHOWN - 1 ? p->key_length : FIELD_NAME_SHOWN - 1;
    int length = p->depth >= 2 && p->list
                     ? snprintf(name, sizeof name, "%.*s[%d]", (int)n, p->key, p->item)
                     : snprintf(name, sizeof name, "%.*s", (int)n, p->key);
    return serve_refuse_nul(no, name, (size_t)length);
}

/* Moves the place past a structural character of JSON. */
static void step(json_place *p, char c)
{
    if (c == '{' || c == '[') {
        if (++p->depth == 1)
            p->expect_key = c == '{';
        else if (p->depth == 2) {
            p->list = c == '[';
            p->item = 0;
        }
    } else if (c == '}' || c == ']') {
        p->depth--;
    } else if (c == ',') {
        p->expect_key |= p->depth == 1;
        p->item += p->depth == 2;
    } else if (c == ':' && p->depth == 1) {
        p->expect_key = false;
    }
}

bool serve_json_nul(const char *body, size_t length, serve_refusal *no)
{
    json_place p = {0};
    for (size_t i = 0; i < length; i++) {
        if (body[i] == '\0')
            return !refuse_at(&p, false, no);
        if (body[i] != '"') {
            step(&p, body[i]);
            continue;
        }
        bool nul = false, in_key = p.depth == 1 && p.expect_key;
        size_t end = string_end(body, length, i + 1, &nul);
        if (nul)
            return !refuse_at(&p, in_key, no);
        if (in_key) {
            p.key = body + i + 1;
            p.key_length = end - (i + 1);
        }
        i = end;
    }
    return false;
}

static bool parse_object(const char *body, size_t length, serve_request *r, char *message,
                         size_t size)
{
    const char *end = NULL;
    r->root = cJSON_ParseWithLengthOpts(body, length, &end, false);
    size_t at = end ? (size_t)(end - body) : 0;
    while (r->root && at < length && strchr(" \t\r\n", body[at]))
        at++;
    if (!r->root || at < length) {
        snprintf(message, size, "malformed JSON at byte %zu", at);
        return false;
    }
    if (!cJSON_IsObject(r->root)) {
        snprintf(message, size, "the body is not a JSON object");
        return false;
    }
    return true;
}

bool serve_parse_request(const char *body, size_t length, serve_request *r, char *message,
                         size_t size)
{
    *r = (serve_request){0};
    serve_refusal no;
    if (serve_json_nul(body, length, &no)) {
        snprintf(message, size, "%s", no.message);
        return false;
    }
    if (!parse_object(body, length, r, message, size))
        return false;
    unsigned seen = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, r->root) {
        if (!read_field(v, r, &seen, message, size))
            return false;
    }
    if (!r->texts) {
        snprintf(message, size, "text: missing (a list of strings)");
        return false;
    }
    return true;
}

void serve_request_free(serve_request *r)
{
    cJSON_Delete(r->root);
    free(r->texts);
    *r = (serve_request){0};
}

/* ---- answers ---------------------------------------------------------------- */

/* Adds `item` to an object under `key`, or to an array (key NULL); a
 * NULL item, or one that cannot be added (then freed), is a failure. */
static bool add_item(cJSON *to, const char *key, cJSON *item)
{
    if (item && (key ? cJSON_AddItemToObject(to, key, item) : cJSON_AddItemToArray(to, item)))
        return true;
    cJSON_Delete(item);
    return false;
}

static cJSON *hypothesis_json(const ted_translation *t, bool scores)
{
    const ted_hypothesis *h = &t->hypothesis;
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "text", t->text) &&
              cJSON_AddNumberToObject(o, "score", h->score) &&
              cJSON_AddNumberToObject(o, "log_prob", h->log_prob);
    if (ok && scores) {
        cJSON *list = cJSON_AddArrayToObject(o, "token_log_probs");
        for (int k = 0; list && k < h->length; k++)
            if (!add_item(list, NULL, cJSON_CreateNumber(h->log_probs[k])))
                list = NULL;
        ok = list != NULL;
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* One text's answer: its translation, or the list of its hypotheses. */
static cJSON *text_json(const serve_job *job, int i, bool lists, bool scores)
{
    int n_best = job->options.decode.n_best;
    const ted_translation *t = job->outputs + (size_t)i * n_best;
    if (!lists)
        return cJSON_CreateString(t->text);
    cJSON *list = cJSON_CreateArray();
    for (int k = 0; list && k < n_best; k++)
        if (!add_item(list, NULL, hypothesis_json(&t[k], scores))) {
            cJSON_Delete(list);
            list = NULL;
        }
    return list;
}

static cJSON *leg_json(const serve_leg_report *leg)
{
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "model", leg->model) &&
        (!leg->source_lang || cJSON_AddStringToObject(o, "source_lang", leg->source_lang)) &&
        (!leg->target_lang || cJSON_AddStringToObject(o, "target_lang", leg->target_lang)))
        return o;
    cJSON_Delete(o);
    return NULL;
}

char *serve_answer(const serve_job *job, bool scores)
{
    return serve_answer_routed(job, scores, NULL, 0);
}

char *serve_answer_routed(const serve_job *job, bool scores, const serve_leg_report *legs,
                          int count)
{
    bool lists = scores || job->options.decode.n_best > 1;  /* as ted translate's n-best lines */
    cJSON *root = cJSON_CreateObject();
    cJSON *all = root ? cJSON_AddArrayToObject(root, "translations") : NULL;
    for (int i = 0; all && i < job->count; i++)
        if (!add_item(all, NULL, text_json(job, i, lists, scores)))
            all = NULL;
    cJSON *route = all && count ? cJSON_AddArrayToObject(root, "route") : NULL;
    for (int i = 0; route && i < count; i++)
        if (!add_item(route, NULL, leg_json(&legs[i])))
            route = NULL;
    char *text = all && (route || !count) ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

char *serve_error_json(const char *message)
{
    size_t size = 3 * strlen(message) + 1;  /* every byte may become U+FFFD */
    char *clean = malloc(size);
    cJSON *root = clean ? cJSON_CreateObject() : NULL;
    char *text = NULL;
    if (root && cJSON_AddStringToObject(root, "error", serve_utf8_clean(message, clean, size)))
        text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(clean);
    return text;
}

bool serve_refuse(serve_refusal *no, int status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(no->message, sizeof no->message, format, args);
    va_end(args);
    no->status = status;
    return false;
}

/* ---- UTF-8 ------------------------------------------------------------------- */

char *serve_utf8_clean(const char *text, char *out, size_t size)
{
    static const char replacement[] = "\xef\xbf\xbd";  /* U+FFFD */
    const unsigned char *s = (const unsigned char *)text;
    size_t n = strlen(text), at = 0;
    for (size_t i = 0; i < n;) {
        int length = ted_utf8_char(s + i, n - i, NULL);
        if (length < 0)
            break;  /* a character cut short at the end: left out */
        const char *piece = length ? text + i : replacement;
        size_t bytes = length ? (size_t)length : 3;
        if (at + bytes >= size)
            break;
        memcpy(out + at, piece, bytes);
        at += bytes;
        i += length ? (size_t)length : 1;
    }
    if (size)
        out[at] = '\0';
    return out;
}

/* ---- the models ---------------------------------------------------------- */

/* The model's config as JSON, with the keys and values of config.yaml
 * (ted_config_json). */
static cJSON *config_json(const ted_model *model)
{
    char *text = ted_config_json(ted_model_config(model));
    cJSON *json = text ? cJSON_Parse(text) : NULL;
    ted_free(text);
    return json;
}

static double parameter_count(const ted_model *model)
{
    double parameters = 0.0;
    for (int i = 0; i < ted_model_tensor_count(model); i++) {
        ted_tensor_info t = ted_model_tensor(model, i);
        double elements = 1.0;
        for (int d = 0; d < t.ndim; d++)
            elements *= (double)t.shape[d];
        parameters += elements;
    }
    return parameters;
}

static cJSON *model_json(const char *name, const ted_model *model)
{
    cJSON *m = cJSON_CreateObject();
    if (m && cJSON_AddStringToObject(m, "name", name) &&
        add_item(m, "config", config_json(model)) &&
        cJSON_AddNumberToObject(m, "parameters", parameter_count(model)))
        return m;
    cJSON_Delete(m);
    return NULL;
}

char *serve_models_json(const char *const *names, const ted_model *const *models, int count)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *list = root ? cJSON_AddArrayToObject(root, "models") : NULL;
    for (int i = 0; list && i < count; i++)
        if (!add_item(list, NULL, model_json(names[i], models[i])))
            list = NULL;
    char *text = list ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

/* ---- what the loops hold ----------------------------------------------------- */

static cJSON *counts_json(const char *name, const serve_loop_counts *c)
{
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "name", name) &&
        cJSON_AddNumberToObject(o, "rows", c->rows) &&
        cJSON_AddNumberToObject(o, "encoding_rows", c->encoding_rows) &&
        cJSON_AddNumberToObject(o, "waiting", c->waiting) &&
        cJSON_AddNumberToObject(o, "sentences", c->held) &&
        cJSON_AddNumberToObject(o, "dropped", (double)c->dropped))
        return o;
    cJSON_Delete(o);
    return NULL;
}

char *serve_stats_json(const char *const *names, const serve_loop_counts *counts, int count)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *list = root ? cJSON_AddArrayToObject(root, "models") : NULL;
    for (int i = 0; list && i < count; i++)
        if (!add_item(list, NULL, counts_json(names[i], &counts[i])))
            list = NULL;
    char *text = list ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

/* ---- the budget of a request ------------------------------------------------- */

long long serve_job_tokens(const serve_job *job)
{
    const ted_decode_options *o = &job->options.decode;
    long long rows = o->strategy == TED_DECODE_SAMPLE ? o->n_best
                     : o->strategy == TED_DECODE_BEAM ? o->beam.beam_size
                                                      : 1;
    long long tokens = 0;
    for (int i = 0; i < job->count; i++)
        if (serve_job_pending(job, i))  /* a blank text decodes nothing */
            tokens += rows * ted_max_target_length(job->model, job->lengths[i],
                                                   job->options.max_length);
    return tokens;
}

bool serve_job_within_budget(const serve_job *job, long long budget, char *message,
                             size_t size)
{
    long long tokens = serve_job_tokens(job);
    if (tokens <= budget)
        return true;
    snprintf(message, size,
             "the request may decode %lld tokens (hypotheses x max_length, summed over its "
             "texts); a request holds at most %lld (--max-request-tokens): lower n_best, "
             "beam or max_length, or send fewer texts",
             tokens, budget);
    return false;
}
