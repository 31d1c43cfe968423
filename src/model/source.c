/* A source sentence made ready for the encoder (ted_prepare_source): the
 * ids of the config's tokenizer, wrapped in BOS ... EOS when the config
 * asks, with the language code tokens where the config puts them, and the
 * checks every front end makes before it decodes.
 *
 * The one place the language code tokens go: a multilingual model names its
 * languages by tokens of its vocabulary (tokenizer.languages). The source
 * language's token goes before the text or after EOS
 * (source_language_token first, last); the target language's is forced as
 * the first target token (target_language_token forced, NLLB, M2M-100,
 * mBART-50) or put at the start of the source (source, Marian's >>fra<<);
 * which codes a sentence may take is model/languages.c's.
 *
 * And every other way between text and ids: one side's tokenizer
 * (ted_encode_source, ted_encode_target), the text of target ids
 * (ted_decode_target), a token's id and back, the tokens of a word. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/tokenizer.h"
#include "model/model.h"

/* ---- the source ------------------------------------------------------------ */

bool ted_source_is_blank(const ted_model *m, int count)
{
    return count <= m->config.source_bos + m->config.source_eos;
}

/* The ids of a target code put at the start of the source: its token as
 * the source tokenizer splits the token's text, as transformers
 * tokenizes a text that begins with it (MADLAD-400's "<2fr>", a piece of
 * its SentencePiece model: "\u2581" then "<2fr>"; Marian's ">>fra<<": its
 * one token); the code's id alone when the split does not end with it. */
static ted_status code_pieces(const ted_model *m, int target_id, ted_token_ids *out,
                              ted_error *err)
{
    const ted_language_side *t = &m->languages[TED_SIDE_TARGET];
    *out = (ted_token_ids){NULL, 0, 0};
    for (int i = 0; i < t->count; i++) {
        if (t->ids[i] != target_id || !t->tokens[i])
            continue;
        ted_tokenizer bare = m->source_tokenizer;
        bare.wrap = false;
        ted_status s = ted_tokenize(&bare, t->tokens[i], strlen(t->tokens[i]), out, err);
        if (s || (out->count > 0 && out->ids[out->count - 1] == target_id))
            return s;
        free(out->ids);
        break;
    }
    if (!(out->ids = ted_alloc(1, sizeof(int), "source ids", err)))
        return TED_ERR_NOMEM;
    out->ids[0] = target_id;
    out->count = 1;
    return TED_OK;
}

/* The prefix of the target: a target code forced as its first token, else
 * forced_bos_id, else none. */
static ted_status place_prefix(const ted_model *m, int target_id, ted_source *out,
                               ted_error *err)
{
    const ted_config *c = &m->config;
    int forced = target_id >= 0 && c->target_language_token == TED_TARGET_CODE_FORCED
                     ? target_id
                     : c->forced_bos_id;
    if (forced < 0)
        return TED_OK;
    if (!(out->prefix_ids = ted_alloc(1, sizeof(int), "target prefix", err)))
        return TED_ERR_NOMEM;
    out->prefix_ids[0] = forced;
    out->prefix_count = 1;
    return TED_OK;
}

/* Puts the code tokens `source_id` and `target_id` (-1: none) where the
 * config says: before or after the ids of `out`, or as its prefix; without
 * a forced code, forced_bos_id is the prefix. */
static ted_status place_codes(const ted_model *m, int source_id, int target_id, ted_source *out,
                              ted_error *err)
{
    const ted_config *c = &m->config;
    ted_token_ids code = {NULL, 0, 0};
    ted_status s = TED_OK;
    if (target_id >= 0 && c->target_language_token == TED_TARGET_CODE_SOURCE)
        s = code_pieces(m, target_id, &code, err);
    if (!s)
        s = place_prefix(m, target_id, out, err);
    bool before = source_id >= 0 && c->source_language_token == TED_SOURCE_CODE_FIRST;
    bool after = source_id >= 0 && c->source_language_token == TED_SOURCE_CODE_LAST;
    int first = code.count + before, added = first + after;
    int *ids = !s && added > 0 ? ted_alloc((size_t)out->count + added, sizeof(int),
                                           "source ids", err)
                               : NULL;
    if (!s && added > 0 && !ids)
        s = TED_ERR_NOMEM;
    if (s || added == 0) {
        free(code.ids);
        return s;
    }
    if (code.count > 0)
        memcpy(ids, code.ids, (size_t)code.count * sizeof(int));
    if (before)
        ids[code.count] = source_id;
    if (out->count > 0)
        memcpy(ids + first, out->ids, (size_t)out->count * sizeof(int));
    if (after)
        ids[first + out->count] = source_id;
    free(code.ids);
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
    ted_status s = ted_language_ids(m, l, &source_id, &target_id, err);
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

/* ---- text and ids ---------------------------------------------------------- */

/* Text -> ids with one side's tokenizer. */
static ted_status encode(const ted_tokenizer *t, const char *text, int **ids, int *count,
                         int *unknown, ted_error *err)
{
    ted_token_ids out = {NULL, 0, 0};
    ted_status s = ted_tokenize(t, text, strlen(text), &out, err);
    *ids = out.ids;
    *count = out.count;
    if (unknown)
        *unknown = out.unknown;
    return s;
}

ted_status ted_encode_source(const ted_model *m, const char *text, int **ids, int *count,
                             int *unknown, ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(text, err);
    TED_REQUIRE(ids, err);
    TED_REQUIRE(count, err);
    return encode(&m->source_tokenizer, text, ids, count, unknown, err);
}

ted_status ted_encode_target(const ted_model *m, const char *text, int **ids, int *count,
                             int *unknown, ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(text, err);
    TED_REQUIRE(ids, err);
    TED_REQUIRE(count, err);
    return encode(&m->target_tokenizer, text, ids, count, unknown, err);
}

/* A target-language code forced as a target token (target_language_token
 * forced) selects the language and is no word of the text. */
static bool is_forced_code(const ted_model *m, int id)
{
    const ted_language_side *t = &m->languages[TED_SIDE_TARGET];
    if (m->config.target_language_token != TED_TARGET_CODE_FORCED)
        return false;
    for (int i = 0; i < t->count; i++)
        if (t->ids[i] == id)
            return true;
    return false;
}

char *ted_decode_target(const ted_model *m, const int *ids, int count)
{
    if (!m || (count > 0 && !ids))
        return NULL;
    if (m->config.target_language_token != TED_TARGET_CODE_FORCED)
        return ted_detokenize(&m->config, &m->tgt_vocab, m->tgt_spm, ids, count);
    int *words = malloc((count > 0 ? (size_t)count : 1) * sizeof *words), n = 0;
    if (!words)
        return NULL;
    for (int i = 0; i < count; i++)
        if (!is_forced_code(m, ids[i]))
            words[n++] = ids[i];
    char *text = ted_detokenize(&m->config, &m->tgt_vocab, m->tgt_spm, words, n);
    free(words);
    return text;
}

const char *ted_target_token(const ted_model *m, int id)
{
    const char *t = m ? ted_vocab_token(&m->tgt_vocab, id) : NULL;
    return t ? t : "";
}

const char *ted_source_token(const ted_model *m, int id)
{
    const char *t = m ? ted_vocab_token(&m->src_vocab, id) : NULL;
    return t ? t : "";
}

int ted_target_id(const ted_model *m, const char *token)
{
    return m && token ? ted_vocab_lookup(&m->tgt_vocab, token, strlen(token)) : -1;
}

ted_status ted_target_word(const ted_model *m, const char *word, int *ids, int max, int *count,
                           ted_error *err)
{
    TED_REQUIRE(m, err);
    TED_REQUIRE(word, err);
    TED_REQUIRE(ids, err);
    TED_REQUIRE(count, err);
    int id = ted_target_id(m, word);
    if (id >= 0 && max >= 1) {
        ids[0] = id;
        *count = 1;
        return TED_OK;
    }
    int *pieces = NULL, n = 0, unknown = 0;
    if (ted_encode_target(m, word, &pieces, &n, &unknown, err) != TED_OK)
        return err->status;
    for (int i = 0; i < n; i++)
        unknown += pieces[i] == m->config.unk_id;
    ted_status status = TED_OK;
    if (n == 0 || unknown > 0 || n > max)
        status = ted_fail(err, TED_ERR_INPUT,
                          "\"%s\" is not in the target vocabulary, and %s", word,
                          n == 0 ? "makes no token" : unknown > 0 ? "has a piece it lacks"
                                                                  : "makes too many pieces");
    else
        memcpy(ids, pieces, (size_t)n * sizeof *ids);
    *count = status == TED_OK ? n : 0;
    free(pieces);
    return status;
}
