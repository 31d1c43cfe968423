/* A source sentence made ready for the encoder (ted_prepare_source): the
 * ids of the config's tokenizer, wrapped in BOS ... EOS when the config
 * asks, with the language code tokens where the config puts them, and the
 * checks every front end makes before it decodes.
 *
 * The one place of the language codes: a multilingual model names its
 * languages by tokens of its vocabulary (tokenizer.languages). The source
 * language's token goes before the text or after EOS
 * (source_language_token first, last); the target language's is forced as
 * the first target token (target_language_token forced, NLLB, M2M-100,
 * mBART-50) or put at the start of the source (source, Marian's >>fra<<). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "model/model.h"

/* ---- the model's languages ------------------------------------------------ */

/* Writes `token` as users spell it to `out` (as long as `token`, NUL
 * included): Marian's ">>fra<<" is "fra", every other code itself. */
static void spell_code(const char *token, char *out)
{
    size_t n = strlen(token);
    if (n > 4 && strncmp(token, ">>", 2) == 0 && strcmp(token + n - 2, "<<") == 0) {
        memcpy(out, token + 2, n - 4);
        out[n - 4] = '\0';
        return;
    }
    memcpy(out, token, n + 1);
}

/* The vocabulary a side's code token belongs to: the source's, but for a
 * target code forced as a target token. */
static const ted_vocab *code_vocab(const ted_model *m, ted_side side, const char **name)
{
    bool forced = side == TED_SIDE_TARGET &&
                  m->config.target_language_token == TED_TARGET_CODE_FORCED;
    *name = forced ? m->config.tgt_vocab : m->config.src_vocab;
    return forced ? &m->tgt_vocab : &m->src_vocab;
}

static bool side_is_coded(const ted_config *c, ted_side side)
{
    return side == TED_SIDE_SOURCE ? c->source_language_token != TED_SOURCE_CODE_NONE
                                   : c->target_language_token != TED_TARGET_CODE_NONE;
}

/* The codes of tokenizer.languages with their tokens' ids. */
static ted_status load_coded_side(ted_model *m, ted_side side, ted_error *err)
{
    ted_language_side *t = &m->languages[side];
    const char *vocab_name;
    const ted_vocab *vocab = code_vocab(m, side, &vocab_name);
    const char *token = m->config.languages, *spelled = m->spelled_codes;
    for (int i = 0; i < m->config.language_count; i++) {
        int id = ted_vocab_lookup(vocab, token, strlen(token));
        if (id < 0)
            return ted_fail(err, TED_ERR_VOCAB,
                            "config.yaml: tokenizer.languages: \"%s\" is not a token of %s",
                            token, vocab_name);
        t->codes[i] = spelled;
        t->ids[i] = id;
        t->count++;
        token += strlen(token) + 1;
        spelled += strlen(spelled) + 1;
    }
    return TED_OK;
}

static ted_status load_side(ted_model *m, ted_side side, ted_error *err)
{
    const ted_config *c = &m->config;
    ted_language_side *t = &m->languages[side];
    const char *plain = side == TED_SIDE_SOURCE ? c->source_lang : c->target_lang;
    bool coded = side_is_coded(c, side);
    int n = coded ? c->language_count : plain[0] ? 1 : 0;
    if (n == 0)
        return TED_OK;
    t->codes = ted_alloc(n, sizeof *t->codes, "language codes", err);
    t->ids = ted_alloc(n, sizeof *t->ids, "language codes", err);
    if (!t->codes || !t->ids)
        return TED_ERR_NOMEM;
    if (coded)
        return load_coded_side(m, side, err);
    t->codes[0] = plain;
    t->ids[0] = -1;
    t->count = 1;
    return TED_OK;
}

ted_status ted_model_load_languages(ted_model *m, ted_error *err)
{
    const ted_config *c = &m->config;
    if (c->language_count > 0) {
        m->spelled_codes = ted_alloc(1, sizeof c->languages, "language codes", err);
        if (!m->spelled_codes)
            return TED_ERR_NOMEM;
        const char *token = c->languages;
        char *spelled = m->spelled_codes;
        for (int i = 0; i < c->language_count; i++) {
            spell_code(token, spelled);
            token += strlen(token) + 1;
            spelled += strlen(spelled) + 1;
        }
    }
    ted_status s = load_side(m, TED_SIDE_SOURCE, err);
    return s ? s : load_side(m, TED_SIDE_TARGET, err);
}

void ted_model_free_languages(ted_model *m)
{
    for (int side = 0; side < 2; side++) {
        free(m->languages[side].codes);
        free(m->languages[side].ids);
        m->languages[side] = (ted_language_side){0};
    }
    free(m->spelled_codes);
    m->spelled_codes = NULL;
}

int ted_model_languages(const ted_model *m, ted_side side, const char *const **codes)
{
    if (codes)
        *codes = NULL;
    if (!m || (side != TED_SIDE_SOURCE && side != TED_SIDE_TARGET))
        return 0;
    if (codes)
        *codes = m->languages[side].codes;
    return m->languages[side].count;
}

/* ---- one sentence's languages --------------------------------------------- */

/* The codes of a side for a message, cut to fit: "fra, spa, deu" or
 * "ace_Arab, ace_Latn, ... (202 in all)". */
typedef struct code_list {
    char text[640];
} code_list;

static code_list list_codes(const ted_language_side *t)
{
    code_list out = {""};
    size_t at = 0, room = sizeof out.text - 24;  /* for the count at the end */
    for (int i = 0; i < t->count; i++) {
        size_t n = strlen(t->codes[i]);
        if (at + n + 2 > room) {
            snprintf(out.text + at, sizeof out.text - at, "... (%d in all)", t->count);
            return out;
        }
        memcpy(out.text + at, t->codes[i], n);
        at += n;
        if (i + 1 < t->count) {
            memcpy(out.text + at, ", ", 2);
            at += 2;
        }
        out.text[at] = '\0';
    }
    return out;
}

/* `*id`: the token of the language `code` of one side (NULL: the side's
 * only language, or the model's default target language), -1 when the side names none, its code has no token, or
 * a Marian model's text names its own. */
static ted_status find_language(const ted_model *m, ted_side side, const char *code, int *id,
                                ted_error *err)
{
    const ted_language_side *t = &m->languages[side];
    const char *name = side == TED_SIDE_SOURCE ? "source" : "target";
    *id = -1;
    if (!code && side == TED_SIDE_TARGET && m->config.default_target_lang[0])
        code = m->config.default_target_lang;
    /* Marian's code is optional, as MarianTokenizer has it: the text may
     * begin with its own (">>fra<< text"), or name none */
    bool optional = side == TED_SIDE_TARGET &&
                    m->config.target_language_token == TED_TARGET_CODE_SOURCE;
    if (!code && t->count > 1 && !optional)
        return ted_fail(err, TED_ERR_INPUT,
                        "no %s language given, and the model translates %s %d languages: %s",
                        name, side == TED_SIDE_SOURCE ? "from" : "into", t->count,
                        list_codes(t).text);
    if (!code) {
        *id = t->count == 1 && !optional ? t->ids[0] : -1;
        return TED_OK;
    }
    for (int i = 0; i < t->count; i++) {
        if (strcmp(t->codes[i], code) == 0) {
            *id = t->ids[i];
            return TED_OK;
        }
    }
    if (t->count == 0)
        return ted_fail(err, TED_ERR_INPUT, "unknown %s language \"%.64s\": the model names no "
                        "%s languages", name, code, name);
    return ted_fail(err, TED_ERR_INPUT, "unknown %s language \"%.64s\"; the model's: %s", name,
                    code, list_codes(t).text);
}

ted_status ted_language_prefix(const ted_model *m, const ted_languages *languages, int *id,
                               ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(id, err);
    *id = -1;
    int target;
    ted_status s = find_language(m, TED_SIDE_TARGET, languages ? languages->target : NULL,
                                 &target, err);
    if (!s && m->config.target_language_token == TED_TARGET_CODE_FORCED)
        *id = target;
    return s;
}

/* ---- the source ------------------------------------------------------------ */

bool ted_source_is_blank(const ted_model *m, int count)
{
    return count <= m->config.source_bos + m->config.source_eos;
}

/* Puts the code tokens `source_id` and `target_id` (-1: none) where the
 * config says: before or after the ids of `out`, or as its prefix. */
static ted_status place_codes(const ted_model *m, int source_id, int target_id, ted_source *out,
                              ted_error *err)
{
    const ted_config *c = &m->config;
    int front[2], first = 0, last = -1;
    if (target_id >= 0 && c->target_language_token == TED_TARGET_CODE_SOURCE)
        front[first++] = target_id;
    if (source_id >= 0 && c->source_language_token == TED_SOURCE_CODE_FIRST)
        front[first++] = source_id;
    if (source_id >= 0 && c->source_language_token == TED_SOURCE_CODE_LAST)
        last = source_id;
    if (target_id >= 0 && c->target_language_token == TED_TARGET_CODE_FORCED) {
        if (!(out->prefix_ids = ted_alloc(1, sizeof(int), "target prefix", err)))
            return TED_ERR_NOMEM;
        out->prefix_ids[0] = target_id;
        out->prefix_count = 1;
    }
    int added = first + (last >= 0);
    if (added == 0)
        return TED_OK;
    int *ids = ted_alloc((size_t)out->count + added, sizeof(int), "source ids", err);
    if (!ids)
        return TED_ERR_NOMEM;
    memcpy(ids, front, (size_t)first * sizeof(int));
    if (out->count > 0)
        memcpy(ids + first, out->ids, (size_t)out->count * sizeof(int));
    if (last >= 0)
        ids[first + out->count] = last;
    free(out->ids);
    out->ids = ids;
    out->count += added;
    return TED_OK;
}

ted_status ted_prepare_source(const ted_model *m, const char *text,
                              const ted_languages *languages, ted_source *out, ted_error *err)
{
    TED_REQUIRE(out, err);
    *out = (ted_source){0};
    TED_REQUIRE(m, err);
    TED_REQUIRE(text, err);
    const ted_config *c = ted_model_config(m);
    const ted_languages none = {NULL, NULL};
    const ted_languages *l = languages ? languages : &none;
    int source_id, target_id;
    ted_status s = find_language(m, TED_SIDE_SOURCE, l->source, &source_id, err);
    if (!s)
        s = find_language(m, TED_SIDE_TARGET, l->target, &target_id, err);
    if (!s)
        s = ted_encode_source(m, text, &out->ids, &out->count, &out->unknown, err);
    if (!s) {
        out->blank = ted_source_is_blank(m, out->count);
        s = place_codes(m, source_id, target_id, out, err);
    }
    if (!s && out->count > c->max_positions)
        s = ted_fail(err, TED_ERR_INPUT, "%d tokens, more than the model's max_positions (%d)",
                     out->count, c->max_positions);
    if (s)
        ted_source_free(out);
    return s;
}

void ted_source_free(ted_source *source)
{
    if (!source)
        return;
    free(source->ids);
    free(source->prefix_ids);
    *source = (ted_source){0};
}
