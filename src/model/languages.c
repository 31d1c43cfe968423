/* The languages of a model and of one sentence (model/model.h,
 * ted_model_languages, ted_model_find_language, ted_model_translates): a
 * multilingual model names its languages by tokens of its vocabulary
 * (tokenizer.languages), users by those codes or their ISO 639 codes
 * (io/language.h), and the config's top-level `languages` says which of
 * them, and which directions, the model was trained for: only those are
 * translated. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/language.h"
#include "model/model.h"

/* ---- the model's languages ------------------------------------------------ */

/* Writes `token` as users spell it to `out` (as long as `token`, NUL
 * included): Marian's ">>fra<<" is "fra", MADLAD-400's "<2fr>" is "fr",
 * every other code itself. */
static void spell_code(const char *token, char *out)
{
    size_t n = strlen(token);
    if (n > 4 && strncmp(token, ">>", 2) == 0 && strcmp(token + n - 2, "<<") == 0) {
        memcpy(out, token + 2, n - 4);
        out[n - 4] = '\0';
        return;
    }
    if (n > 3 && strncmp(token, "<2", 2) == 0 && token[n - 1] == '>') {
        memcpy(out, token + 2, n - 3);
        out[n - 3] = '\0';
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

static ted_status alloc_side(ted_language_side *t, int n, ted_error *err)
{
    int size = n > 0 ? n : 1;
    t->codes = ted_alloc(size, sizeof *t->codes, "language codes", err);
    t->tokens = ted_alloc(size, sizeof *t->tokens, "language codes", err);
    t->ids = ted_alloc(size, sizeof *t->ids, "language codes", err);
    return t->codes && t->tokens && t->ids ? TED_OK : TED_ERR_NOMEM;
}

static void free_side(ted_language_side *t)
{
    free(t->codes);
    free(t->tokens);
    free(t->ids);
    *t = (ted_language_side){0};
}

/* The codes of tokenizer.languages with their tokens' ids. */
static ted_status load_coded_side(ted_model *m, ted_side side, ted_error *err)
{
    ted_language_side *t = &m->all_languages[side];
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
        t->tokens[i] = token;
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
    ted_language_side *t = &m->all_languages[side];
    const char *plain = side == TED_SIDE_SOURCE ? c->source_lang : c->target_lang;
    bool coded = side_is_coded(c, side);
    int n = coded ? c->language_count : plain[0] ? 1 : 0;
    if (n == 0)
        return TED_OK;
    if (alloc_side(t, n, err))
        return TED_ERR_NOMEM;
    if (coded)
        return load_coded_side(m, side, err);
    t->codes[0] = t->tokens[0] = plain;
    t->ids[0] = -1;
    t->count = 1;
    return TED_OK;
}

/* Whether `token` is an item of the top-level languages as a plain code
 * (`end` 0), a direction's source (1) or a direction's target (2). */
static bool listed(const ted_config *c, const char *token, int end)
{
    const char *item = c->served_languages;
    size_t n = strlen(token);
    for (int i = 0; i < c->served_language_count; i++, item += strlen(item) + 1) {
        size_t first = strcspn(item, " ");
        bool direction = item[first] != '\0';
        if (direction != (end != 0))
            continue;
        const char *part = end == 2 ? item + first + 3 : item;
        size_t length = end == 2 ? strlen(part) : first;
        if (length == n && !memcmp(part, token, n))
            return true;
    }
    return false;
}

static bool direction_listed(const ted_config *c, const char *source, const char *target)
{
    const char *item = c->served_languages;
    size_t n = strlen(source);
    for (int i = 0; i < c->served_language_count; i++, item += strlen(item) + 1)
        if (strcspn(item, " ") == n && !memcmp(item, source, n) && item[n] &&
            !strcmp(item + n + 3, target))
            return true;
    return false;
}

/* A language translated from or into every other such one: a plain code
 * of the list, or the one language of a side no code token names. */
static bool is_plain(const ted_model *m, ted_side side, const char *token)
{
    return !side_is_coded(&m->config, side) || listed(&m->config, token, 0);
}

/* languages[side]: the codes of all_languages[side] the list names. */
static ted_status serve_side(ted_model *m, ted_side side, ted_error *err)
{
    const ted_language_side *all = &m->all_languages[side];
    ted_language_side *t = &m->languages[side];
    if (all->count == 0)
        return TED_OK;
    if (alloc_side(t, all->count, err))
        return TED_ERR_NOMEM;
    for (int i = 0; i < all->count; i++) {
        const char *token = all->tokens[i];
        if (!is_plain(m, side, token) && !listed(&m->config, token, side == TED_SIDE_SOURCE ? 1 : 2))
            continue;
        t->codes[t->count] = all->codes[i];
        t->tokens[t->count] = token;
        t->ids[t->count++] = all->ids[i];
    }
    if (t->count == 0)
        return ted_fail(err, TED_ERR_CONFIG, "config.yaml: languages: the model translates %s "
                        "none of its languages", side == TED_SIDE_SOURCE ? "from" : "into");
    return TED_OK;
}

/* m->directions, from the top-level languages. */
static ted_status load_directions(ted_model *m, ted_error *err)
{
    const ted_language_side *s = &m->languages[TED_SIDE_SOURCE], *t = &m->languages[TED_SIDE_TARGET];
    size_t cells = (size_t)s->count * (size_t)t->count;
    m->directions = ted_alloc(cells ? cells : 1, sizeof *m->directions, "directions", err);
    if (!m->directions)
        return TED_ERR_NOMEM;
    for (int i = 0; i < s->count; i++)
        for (int k = 0; k < t->count; k++) {
            bool plain = is_plain(m, TED_SIDE_SOURCE, s->tokens[i]) &&
                         is_plain(m, TED_SIDE_TARGET, t->tokens[k]);
            m->directions[(size_t)i * t->count + k] =
                strcmp(s->codes[i], t->codes[k]) != 0 &&
                (plain || direction_listed(&m->config, s->tokens[i], t->tokens[k]));
        }
    return TED_OK;
}

/* The codes of tokenizer.languages as users spell them (m->spelled_codes). */
static ted_status spell_codes(ted_model *m, ted_error *err)
{
    const ted_config *c = &m->config;
    if (c->language_count == 0)
        return TED_OK;
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
    return TED_OK;
}

ted_status ted_model_load_languages(ted_model *m, ted_error *err)
{
    ted_status s = spell_codes(m, err);
    for (int side = 0; !s && side < 2; side++)
        s = load_side(m, (ted_side)side, err);
    if (m->config.served_language_count == 0) {
        for (int side = 0; !s && side < 2; side++) {
            const ted_language_side *all = &m->all_languages[side];
            ted_language_side *t = &m->languages[side];
            if (all->count && !(s = alloc_side(t, all->count, err))) {
                memcpy(t->codes, all->codes, (size_t)all->count * sizeof *t->codes);
                memcpy(t->tokens, all->tokens, (size_t)all->count * sizeof *t->tokens);
                memcpy(t->ids, all->ids, (size_t)all->count * sizeof *t->ids);
                t->count = all->count;
            }
        }
        return s;
    }
    for (int side = 0; !s && side < 2; side++)
        s = serve_side(m, (ted_side)side, err);
    return s ? s : load_directions(m, err);
}

void ted_model_free_languages(ted_model *m)
{
    for (int side = 0; side < 2; side++) {
        free_side(&m->languages[side]);
        free_side(&m->all_languages[side]);
    }
    free(m->directions);
    m->directions = NULL;
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

/* Whether the model translates source language s into target language t
 * (indices of languages[]; -1: none named on that side). */
static bool translates(const ted_model *m, int s, int t)
{
    if (!m->directions || s < 0 || t < 0)
        return true;
    return m->directions[(size_t)s * m->languages[TED_SIDE_TARGET].count + t];
}

/* ---- one sentence's languages --------------------------------------------- */

/* Codes for a message, cut to fit: "fra, spa, deu" or
 * "ace_Arab, ace_Latn, ... (202 in all)". */
typedef struct code_list {
    char text[640];
} code_list;

/* Appends `code` to `out` (", " before all but the first); false when it
 * does not fit. */
static bool add_code(code_list *out, size_t *at, const char *code)
{
    size_t n = strlen(code), room = sizeof out->text - 24;  /* for the count at the end */
    if (*at + n + 2 > room)
        return false;
    if (*at) {
        memcpy(out->text + *at, ", ", 2);
        *at += 2;
    }
    memcpy(out->text + *at, code, n + 1);
    *at += n;
    return true;
}

/* The codes of `t` that `keep` (may be NULL: all) marks. */
static code_list list_codes_where(const ted_language_side *t, const bool *keep)
{
    code_list out = {""};
    size_t at = 0;
    int total = 0;
    for (int i = 0; i < t->count; i++)
        total += !keep || keep[i];
    for (int i = 0; i < t->count; i++) {
        if (keep && !keep[i])
            continue;
        if (!add_code(&out, &at, t->codes[i])) {
            snprintf(out.text + at, sizeof out.text - at, "%s... (%d in all)", at ? ", " : "",
                     total);
            return out;
        }
    }
    return out;
}

static code_list list_codes(const ted_language_side *t) { return list_codes_where(t, NULL); }

static bool same_text(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return false;
    return true;
}

/* Whether a code's part after its language is a script (four letters,
 * "Latn"), not a region ("US", "419"). */
static bool is_script(const char *rest, size_t n)
{
    if (n != 4)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalpha((unsigned char)rest[i]))
            return false;
    return true;
}

/* Whether the script or region `g` a code is given with (may be empty)
 * allows a code with `p`: the same one (pass 0), or one of another kind
 * (pass 1: "en-US" is eng_Latn, "zh-Hant" is not zho_Hans). */
static bool rest_allows(ted_code_parts g, ted_code_parts p, int pass)
{
    if (!g.rest_length || same_text(p.rest, p.rest_length, g.rest, g.rest_length))
        return true;
    return pass == 1 && (!p.rest_length || is_script(p.rest, p.rest_length) !=
                                               is_script(g.rest, g.rest_length));
}

/* Marks in `match` the codes of `t` that name the language `given` by its
 * ISO 639 code ("fr", "fra", "fre" for "fra_Latn"), narrowed by the script
 * or region `given` names after '-' or '_' (rest_allows: "zh-Hant":
 * zho_Hant). Returns how many; `*first` the first. */
static int match_iso(const ted_language_side *t, const char *given, bool *match, int *first)
{
    char want[TED_LANGUAGE_CODE_SIZE], iso[TED_LANGUAGE_CODE_SIZE];
    ted_code_parts g = ted_code_split(given);
    int count = 0;
    *first = -1;
    for (int pass = 0; pass < 2 && count == 0; pass++) {
        for (int i = 0; i < t->count; i++) {
            ted_code_parts p = ted_code_split(t->codes[i]);
            match[i] = ted_language_iso(given, want, sizeof want) &&
                       ted_language_iso(t->codes[i], iso, sizeof iso) && !strcmp(want, iso) &&
                       rest_allows(g, p, pass);
            if (match[i] && count++ == 0)
                *first = i;
        }
    }
    return count;
}

/* The case-insensitive edit distance of a (an bytes) and b (bn bytes),
 * both shorter than TED_LANGUAGE_CODE_SIZE. */
static int distance(const char *a, size_t an, const char *b, size_t bn)
{
    int row[TED_LANGUAGE_CODE_SIZE + 1];
    for (size_t k = 0; k <= bn; k++)
        row[k] = (int)k;
    for (size_t i = 1; i <= an; i++) {
        int diagonal = row[0];
        row[0] = (int)i;
        for (size_t k = 1; k <= bn; k++) {
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[k - 1]);
            int best = diagonal + cost;
            if (row[k] + 1 < best)
                best = row[k] + 1;
            if (row[k - 1] + 1 < best)
                best = row[k - 1] + 1;
            diagonal = row[k];
            row[k] = best;
        }
    }
    return row[bn];
}

/* " (nearest: fra_Latn, fur_Latn)": the codes of `t` at most a third of
 * `given`'s length from it, or from their language part (ignoring case),
 * up to three, nearest first; "" when none is. */
static code_list nearest_codes(const ted_language_side *t, const char *given)
{
    code_list out = {""};
    size_t n = strlen(given), at = 0, most = n / 3;
    if (n >= TED_LANGUAGE_CODE_SIZE)
        return out;
    int shown = 0;
    for (size_t d = 0; d <= most && shown < 3; d++)
        for (int i = 0; i < t->count && shown < 3; i++) {
            ted_code_parts p = ted_code_split(t->codes[i]);
            size_t whole = distance(given, n, t->codes[i], strlen(t->codes[i]));
            size_t part = distance(given, n, p.language, p.language_length);
            if ((whole < part ? whole : part) == d && add_code(&out, &at, t->codes[i]))
                shown++;
        }
    if (shown) {
        code_list with = {""};
        snprintf(with.text, sizeof with.text, " (nearest: %.600s)", out.text);
        return with;
    }
    return out;
}

static const char *side_name(ted_side side)
{
    return side == TED_SIDE_SOURCE ? "source" : "target";
}

static const char *side_way(ted_side side)
{
    return side == TED_SIDE_SOURCE ? "from" : "into";
}

/* The error for `given`, which no code of languages[side] names: a code
 * of the vocabulary the model was not trained for, or an unknown one. */
static ted_status no_language(const ted_model *m, ted_side side, const char *given,
                              ted_error *err)
{
    const ted_language_side *t = &m->languages[side], *all = &m->all_languages[side];
    if (t->count == 0)
        return ted_fail(err, TED_ERR_INPUT, "unknown %s language \"%.64s\": the model names no "
                        "%s languages", side_name(side), given, side_name(side));
    bool *match = ted_alloc(all->count ? all->count : 1, sizeof *match, "languages", err);
    if (!match)
        return TED_ERR_NOMEM;
    int found = -1;
    for (int i = 0; i < all->count && found < 0; i++)
        if (!strcmp(all->codes[i], given))
            found = i;
    code_list named = {""};
    if (found < 0 && match_iso(all, given, match, &found) > 0)
        snprintf(named.text, sizeof named.text, " (%.600s)", list_codes_where(all, match).text);
    free(match);
    if (found >= 0)
        return ted_fail(err, TED_ERR_INPUT, "%s language \"%.64s\"%s: the model was not "
                        "trained to translate %s it; it translates %s %s", side_name(side),
                        given, named.text, side_way(side), side_way(side), list_codes(t).text);
    return ted_fail(err, TED_ERR_INPUT, "unknown %s language \"%.64s\"%s; the model's: %s",
                    side_name(side), given, nearest_codes(t, given).text, list_codes(t).text);
}

/* `*index`: the code of languages[side] that `given` names (ted_model_find_language). */
static ted_status find_code(const ted_model *m, ted_side side, const char *given, int *index,
                            ted_error *err)
{
    const ted_language_side *t = &m->languages[side];
    for (int i = 0; i < t->count; i++)
        if (!strcmp(t->codes[i], given)) {
            *index = i;
            return TED_OK;
        }
    bool *match = ted_alloc(t->count ? t->count : 1, sizeof *match, "languages", err);
    if (!match)
        return TED_ERR_NOMEM;
    int count = match_iso(t, given, match, index);
    ted_status s = TED_OK;
    if (count > 1)
        s = ted_fail(err, TED_ERR_INPUT, "%s language \"%.64s\" is ambiguous: it may be %s; "
                     "give one", side_name(side), given, list_codes_where(t, match).text);
    free(match);
    if (count == 0)
        return no_language(m, side, given, err);
    return s;
}

ted_status ted_model_find_language(const ted_model *m, ted_side side, const char *given,
                                   const char **code, ted_error *err)
{
    TED_REQUIRE(code, err);
    *code = NULL;
    TED_REQUIRE(m, err);
    TED_REQUIRE(given, err);
    if (side != TED_SIDE_SOURCE && side != TED_SIDE_TARGET)
        return ted_fail(err, TED_ERR_ARGUMENT, "ted_model_find_language: side %d is neither "
                        "TED_SIDE_SOURCE nor TED_SIDE_TARGET", (int)side);
    int index = -1;
    ted_status s = find_code(m, side, given, &index, err);
    if (!s)
        *code = m->languages[side].codes[index];
    return s;
}

/* `*index`: the language `code` of one side (NULL: the side's only
 * language, or the model's default target language); -1 when the side
 * names none, or a Marian model's text names its own. */
static ted_status find_language(const ted_model *m, ted_side side, const char *code, int *index,
                                ted_error *err)
{
    const ted_language_side *t = &m->languages[side];
    *index = -1;
    if (!code && side == TED_SIDE_TARGET && m->config.default_target_lang[0])
        code = m->config.default_target_lang;
    /* Marian's code is optional, as MarianTokenizer has it: the text may
     * begin with its own (">>fra<< text"), or name none */
    bool optional = side == TED_SIDE_TARGET &&
                    m->config.target_language_token == TED_TARGET_CODE_SOURCE;
    if (!code && t->count > 1 && !optional)
        return ted_fail(err, TED_ERR_INPUT,
                        "no %s language given, and the model translates %s %d languages: %s",
                        side_name(side), side_way(side), t->count, list_codes(t).text);
    if (!code) {
        *index = t->count == 1 && !optional ? 0 : -1;
        return TED_OK;
    }
    return find_code(m, side, code, index, err);
}

/* The languages of one sentence as indices of languages[], checked to be
 * a direction the model translates. */
static ted_status find_pair(const ted_model *m, const ted_languages *languages, int *source,
                            int *target, ted_error *err)
{
    ted_status s = find_language(m, TED_SIDE_SOURCE, languages ? languages->source : NULL,
                                 source, err);
    if (!s)
        s = find_language(m, TED_SIDE_TARGET, languages ? languages->target : NULL, target,
                          err);
    if (s || translates(m, *source, *target))
        return s;
    const ted_language_side *t = &m->languages[TED_SIDE_TARGET];
    bool *reached = ted_alloc(t->count, sizeof *reached, "languages", err);
    if (!reached)
        return TED_ERR_NOMEM;
    for (int k = 0; k < t->count; k++)
        reached[k] = translates(m, *source, k);
    const char *from = m->languages[TED_SIDE_SOURCE].codes[*source];
    s = ted_fail(err, TED_ERR_INPUT, "the model does not translate %s into %s; from %s it "
                 "translates into %s", from, t->codes[*target], from,
                 list_codes_where(t, reached).text);
    free(reached);
    return s;
}

bool ted_model_translates(const ted_model *m, const char *source, const char *target)
{
    int s, t;
    ted_languages languages = {source, target};
    return m && find_pair(m, &languages, &s, &t, NULL) == TED_OK;
}

ted_status ted_language_prefix(const ted_model *m, const ted_languages *languages, int *id,
                               ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(id, err);
    *id = -1;
    int source, target;
    ted_status s = find_pair(m, languages, &source, &target, err);
    if (!s && target >= 0 && m->config.target_language_token == TED_TARGET_CODE_FORCED)
        *id = m->languages[TED_SIDE_TARGET].ids[target];
    return s;
}

ted_status ted_language_ids(const ted_model *m, const ted_languages *languages, int *source_id,
                            int *target_id, ted_error *err)
{
    int source, target;
    ted_status s = find_pair(m, languages, &source, &target, err);
    *source_id = !s && source >= 0 ? m->languages[TED_SIDE_SOURCE].ids[source] : -1;
    *target_id = !s && target >= 0 ? m->languages[TED_SIDE_TARGET].ids[target] : -1;
    return s;
}

bool ted_model_language_token(const ted_model *model, int id, bool target)
{
    bool forced = model->config.target_language_token == TED_TARGET_CODE_FORCED;
    for (int side = TED_SIDE_SOURCE; side <= TED_SIDE_TARGET; side++) {
        const ted_language_side *l = &model->all_languages[side];
        if ((side == TED_SIDE_TARGET && forced) != target)
            continue;  /* that side's codes are tokens of the other vocabulary */
        for (int i = 0; i < l->count; i++)
            if (l->ids[i] == id && id >= 0)
                return true;
    }
    return false;
}
