/* What the rules on the scores did to a candidate, in a learner's words
 * (ted/learn.h). The rules themselves, and the record of what each one
 * changed and where it found why, are greedy decoding's own
 * (model/decoding.c); this file only puts a record into words. */
#include "ted/learn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/config.h"

/* A text written a piece at a time into buf (size), cut to fit. */
typedef struct words {
    char *buf;
    size_t size, used;
} words;

static void say(words *w, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void say(words *w, const char *format, ...)
{
    if (w->used + 1 >= w->size)
        return;
    va_list args;
    va_start(args, format);
    int n = vsnprintf(w->buf + w->used, w->size - w->used, format, args);
    va_end(args);
    if (n < 0)
        return;
    if ((size_t)n < w->size - w->used) {
        w->used += (size_t)n;
        return;
    }
    w->used = w->size - 1;  /* cut: drop a character cut short at the end */
    while (w->used > 0 && ((unsigned char)w->buf[w->used - 1] & 0xc0) == 0x80)
        w->used--;
    if (w->used > 0 && ((unsigned char)w->buf[w->used - 1] & 0xc0) == 0xc0)
        w->used--;
    w->buf[w->used] = '\0';
}

/* A target or source token as shown, after a space unless `first`. */
static void say_token(words *w, const ted_learn_trace *t, int id, bool target, bool first)
{
    char shown[96];
    const char *text = target ? ted_target_token(t->model, id) : ted_source_token(t->model, id);
    say(w, "%s%s", first ? "" : " ", ted_learn_show_token(text ? text : "", shown, sizeof shown));
}

/* Token p of the history at step `step` (p <= step): the decoder's start
 * token, then the tokens chosen; it is what step p read. */
static int history_token(const ted_learn_trace *t, int p)
{
    return t->steps[p].input;
}

/* "would repeat the 3-gram 'le chat noir'": the n - 1 tokens of the
 * history from `at`, then `token`. */
static void say_ngram(words *w, const ted_learn_trace *t, int step, int token, int at)
{
    int n = t->rules.no_repeat_ngram_size;
    say(w, "banned: would repeat the %d-gram '", n);
    for (int j = 0; j < n - 1 && at + j <= step; j++)
        say_token(w, t, history_token(t, at + j), true, j == 0);
    say_token(w, t, token, true, n == 1);
    say(w, "'");
}

/* "would repeat the source's 2-gram 'the cat'": source[at .. at + n). */
static void say_source_ngram(words *w, const ted_learn_trace *t, int at)
{
    int n = t->rules.encoder_no_repeat_ngram_size;
    say(w, "banned: would repeat the source's %d-gram '", n);
    for (int j = 0; j < n && at + j < t->source_len; j++)
        say_token(w, t, t->source[at + j], false, j == 0);
    say(w, "'");
}

/* The sequence of bad_words from index `at`, up to its -1. */
static void say_bad_words(words *w, const ted_learn_trace *t, int at)
{
    const ted_logits_rules *r = &t->rules;
    int end = at;
    while (end < r->bad_words_length && end < TED_BAD_WORDS_MAX && r->bad_words[end] >= 0)
        end++;
    if (end - at == 1) {
        say(w, "banned: a bad word (bad_words_ids)");
        return;
    }
    say(w, "banned: would complete the bad words '");
    for (int j = at; j < end; j++)
        say_token(w, t, r->bad_words[j], true, j == at);
    say(w, "' (bad_words_ids)");
}

const char *ted_learn_change_words(const ted_learn_trace *t, int step, int token,
                                   const ted_learn_change *change, char *buf, size_t size)
{
    words w = {buf, size, 0};
    if (size > 0)
        buf[0] = '\0';
    switch (change ? change->rule : TED_LEARN_RULE_NONE) {
    case TED_LEARN_RULE_NONE: break;
    case TED_LEARN_RULE_BANNED_ID:
        say(&w, "suppressed: the model never generates it (banned_ids, transformers' "
                "suppress_tokens)");
        break;
    case TED_LEARN_RULE_REPETITION:
        say(&w, "penalised \xc3\x97%g: already %s", t->rules.repetition_penalty,
            change->at == 0 ? "in the history (the decoder's start token)" : "generated");
        if (change->at > 0)
            say(&w, " at step %d", change->at);
        break;
    case TED_LEARN_RULE_NGRAM: say_ngram(&w, t, step, token, change->at); break;
    case TED_LEARN_RULE_SOURCE_NGRAM: say_source_ngram(&w, t, change->at); break;
    case TED_LEARN_RULE_BAD_WORDS: say_bad_words(&w, t, change->at); break;
    case TED_LEARN_RULE_MIN_LENGTH:
        say(&w, "banned: end of sentence before min_length %d", t->rules.min_length);
        break;
    case TED_LEARN_RULE_MIN_NEW_TOKENS:
        say(&w, "banned: end of sentence before min_new_tokens %d", t->rules.min_new_tokens);
        break;
    case TED_LEARN_RULE_FORCED_BOS: say(&w, "forced: BOS first (forced_bos_id)"); break;
    case TED_LEARN_RULE_FORCED_LANGUAGE:
        say(&w, "forced: the target language's code first");
        break;
    case TED_LEARN_RULE_FORCED: say(&w, "forced: taken instead of the model's choice"); break;
    }
    return buf;
}
