/* ted step: watch the model translate one token at a time. Each step is one
 * ted_session_step(): the prefix so far, the token taken, the top-k
 * candidates and the encoder-decoder attention of that step over the
 * source, per head on request; --explain tells each step's computation in
 * the words of multi-head attention, with the model's real sizes. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/text.h"
#include "frontend/options.h"
#include "ted/learn.h"

static const char usage[] =
    "usage: ted step -m DIR [OPTIONS] TEXT\n"
    "\n"
    "Translates TEXT greedily, one decoder step at a time. Each step shows the\n"
    "prefix so far, the token taken (the most likely one, unless forced), the\n"
    "most likely candidates with their probabilities (softmax of the logits) and\n"
    "the encoder-decoder attention of that step over the source tokens, averaged\n"
    "over the heads.\n"
    "\n"
    "On a terminal, Enter runs the next step, a token typed at the prompt is\n"
    "taken instead of the model's choice, and q quits. When standard input is not\n"
    "a terminal, or with --auto, every step runs without waiting.\n"
    "\n"
    "A TOKEN (of --force or the prompt) is a token of the target vocabulary as it\n"
    "spells it, or a word as written: a SentencePiece model's 'noire' is its\n"
    "word-initial piece '▁noire', and a word of several pieces takes one step\n"
    "for each.\n"
    "\n"
    "options:\n"
    "  -m, --model DIR       the model directory\n"
    "  --auto                run every step without waiting; also prints each\n"
    "                        attention row as numbers:\n"
    "                          step N: attention layer L mean: W1 W2 ...\n"
    "                          step N: attention layer L head H: W1 W2 ...\n"
    "  --force [N:]TOKEN     take TOKEN at step N instead of the model's choice\n"
    "                        (its pieces at steps N, N+1, ...; default N: the\n"
    "                        step after the previous --force, or 1);\n"
    "                        may be repeated\n"
    "  --heads               show every head's attention, not only their mean\n"
    "  --layer N             the decoder layer whose attention is shown (default:\n"
    "                        the last)\n"
    "  --top K               candidates shown per step (default 5)\n"
    "  --explain             tell each step's computation: embedding size, heads,\n"
    "                        query size, the shapes of Q, K, V, the logical split,\n"
    "                        the scores, merge heads, Add & Norm, feed-forward,\n"
    "                        Linear + Softmax\n"
    "  --max-length N        at most N steps (default: the model's decoding rule)\n"
    "  --no-repeat-ngram-size N, --encoder-no-repeat-ngram-size N,\n"
    "  --repetition-penalty R, --min-length N, --min-new-tokens N, --bad-words-ids IDS\n"
    "                        the rules on the scores, as ted translate takes them\n"
    "                        (default: the model's config); each candidate a rule\n"
    "                        changed says which and why (\"banned: would repeat the\n"
    "                        2-gram 'le chat'\"), and the token taken is the best\n"
    "                        one they leave\n"
    "  --no-color            no colours (colours are used only on a terminal, and\n"
    "                        not when the NO_COLOR variable is set)\n"
    "  --source-lang CODE    the source language (`ted info` lists a model's)\n"
    "  --target-lang CODE    the target language, required when the model\n"
    "                        translates into several\n"
    "  -h, --help            show this help\n"
    "\n"
    "Lines that scripts can read: 'source: TOKENS', 'step N: prefix TOKENS',\n"
    "'step N: chosen 'TOKEN' p=P' (with '(forced ...)' when forced), and at the\n"
    "end 'translation: TEXT'.\n";

typedef struct style {
    const char *heading, *chosen, *forced, *special, *bar, *dim, *reset;
} style;

static const style plain = {"", "", "", "", "", "", ""};
static const style colored = {"\033[1;36m", "\033[1;32m", "\033[1;33m", "\033[35m",
                              "\033[34m", "\033[2m", "\033[0m"};

typedef struct step_options {
    const char *model_dir;
    bool auto_run, heads, explain, no_color;
    int layer;       /* 1-based; 0: the last */
    int top_k;
    int max_length;
    ted_learn_forced *forced;      /* (forced_count) */
    const char **forced_text;  /* (forced_count): each one's TOKEN, for messages */
    int forced_count;
    frontend_choice rules;  /* the rules on the scores and the languages given */
    ted_logits_rules chosen_rules;  /* the model's, with those given */
} step_options;

typedef struct stepper {
    ted_learn_trace t;
    step_options *o;
    style st;
    bool interactive;
    ted_learn_forced typed;  /* the pieces of a word typed at the prompt, left to take */
    int layer;       /* 0-based decoder layer shown */
    int source_width;
    float *row;      /* (source_len) scratch */
} stepper;

/* A token, coloured when special; quoted with '' when `quoted`. */
static void put_token(const stepper *s, int id, bool target, bool quoted, const char *colour)
{
    char buf[256];
    const char *text = target ? ted_target_token(s->t.model, id) : ted_source_token(s->t.model, id);
    const char *c = ted_learn_is_special(s->t.config, id) ? s->st.special : colour;
    printf("%s%s%s%s%s", quoted ? "'" : "", c, ted_learn_show_token(text, buf, sizeof buf),
           *c ? s->st.reset : "", quoted ? "'" : "");
}

static int shown_width(const stepper *s, int id, bool target)
{
    char buf[256];
    const char *text = target ? ted_target_token(s->t.model, id) : ted_source_token(s->t.model, id);
    return cli_width(ted_learn_show_token(text, buf, sizeof buf));
}

static void pad_to(int used, int width)
{
    for (; used < width; used++)
        putchar(' ');
}

static void print_header(stepper *s)
{
    const ted_config_architecture c = ted_config_get_view(s->t.config).model;
    printf("%sted step%s: %s\n", s->st.heading, s->st.reset, s->o->model_dir);
    printf("model: Embedding Size %d, Number of Heads %d (Query Size %d), %d encoder + %d "
           "decoder layers, target vocabulary %d\n",
           c.d_model, c.heads, c.query_size, c.encoder_layers, c.decoder_layers,
           c.tgt_vocab_size);
    printf("source:");
    for (int i = 0; i < s->t.source_len; i++) {
        putchar(' ');
        put_token(s, s->t.source[i], false, false, "");
    }
    printf("\n%s(%d source tokens; at most %d steps; attention shown: decoder layer %d of %d)%s\n",
           s->st.dim, s->t.source_len, s->t.max_steps, s->layer + 1, c.decoder_layers,
           s->st.reset);
}

/* ---- --explain ------------------------------------------------------------ */

/* Prints one piece of a shared explanation (ted_learn_explain_encoder,
 * ted_learn_explain_step): headings in colour, each operation's words with
 * its shape in a column. */
static void print_explanation(void *data, ted_learn_explain_kind kind, const char *title,
                              const char *words, const char *shape)
{
    const stepper *s = data;
    if (kind != TED_LEARN_EXPLAIN_LINE) {
        printf("%s%s%s%s%s\n", kind == TED_LEARN_EXPLAIN_PART ? "\n" : "  ", s->st.heading, title,
               s->st.reset, words);
        return;
    }
    int w = cli_width(words);
    printf("    %s", words);
    if (*shape) {
        if (w > 60) {
            putchar('\n');
            w = -4;
        }
        pad_to(w, 62);
        printf(" %s%s%s", s->st.dim, shape, s->st.reset);
    }
    putchar('\n');
}

/* ---- one step's display -------------------------------------------------- */

/* A probability: 0.9731, or 3.2e-05 when below 0.0001; padded to 7
 * columns when `pad`. */
static void print_p(float p, bool pad)
{
    if (p >= 0.0001f || p == 0)
        printf(pad ? "%-7.4f" : "%.4f", p);
    else
        printf("%.1e", p);
}

/* One candidate's line: rank, token, p, bar, and what a rule did to it
 * (ted_learn_change_words), when one changed it. */
static void print_candidate(const stepper *s, int step, int i, int width)
{
    const ted_learn_step *st = &s->t.steps[step];
    const ted_learn_candidate *k = &st->top[i];
    char words[512];
    ted_learn_change_words(&s->t, step, k->id, &st->changes[i], words, sizeof words);
    bool taken = k->id == st->chosen;
    printf("  %2d. ", i + 1);
    put_token(s, k->id, true, false, taken ? (st->forced ? s->st.forced : s->st.chosen) : "");
    pad_to(shown_width(s, k->id, true), width);
    printf("  ");
    bool bar = cli_bar_columns(k->p, 24) > 0;
    print_p(k->p, bar || *words);
    int used = 0;
    if (bar) {
        printf("  %s", taken ? s->st.chosen : s->st.bar);
        used = cli_bar(stdout, k->p, 24);
        printf("%s", s->st.reset);
    }
    if (*words) {
        pad_to(bar ? used : -2, 24);
        bool penalised = st->changes[i].rule == TED_LEARN_RULE_REPETITION;
        printf("   %s%s%s", penalised ? s->st.dim : s->st.forced, words, s->st.reset);
    }
    putchar('\n');
}

static void print_candidates(const stepper *s, int step)
{
    const ted_learn_step *st = &s->t.steps[step];
    int width = 6;
    for (int i = 0; i < s->t.top_k; i++) {
        int w = shown_width(s, st->top[i].id, true);
        width = w > width ? w : width;
    }
    printf("  %stop %d%s\n", s->st.dim, s->t.top_k, s->st.reset);
    for (int i = 0; i < s->t.top_k; i++)
        print_candidate(s, step, i, width);
}

/* ' ', ░, ▒, ▓, █ for a weight in [0, 1]. */
static const char *shade(float w)
{
    static const char *const shades[5] = {" ", "\xe2\x96\x91", "\xe2\x96\x92", "\xe2\x96\x93",
                                          "\xe2\x96\x88"};
    int i = (int)(w * 4 + 0.5f);
    return shades[i < 0 ? 0 : i > 4 ? 4 : i];
}

static void print_attention(const stepper *s, int step)
{
    const ted_config_architecture c = ted_config_get_view(s->t.config).model;
    const ted_learn_step *st = &s->t.steps[step];
    int S = s->t.source_len, h = c.heads;
    printf("  %sencoder-decoder attention while choosing %s", s->st.dim, s->st.reset);
    put_token(s, st->chosen, true, true, "");
    printf("%s: the query of %s", s->st.dim, s->st.reset);
    put_token(s, st->input, true, true, "");
    printf("%s over the source (decoder layer %d of %d, %s)%s\n", s->st.dim, s->layer + 1,
           c.decoder_layers, s->o->heads ? "each head and their mean" : "mean of the heads",
           s->st.reset);
    float *heads = NULL;
    if (s->o->heads) {
        heads = malloc((size_t)h * S * sizeof *heads);
        if (!heads) {
            cli_error("step: out of memory");
            exit(1);
        }
        for (int k = 0; k < h; k++)
            ted_learn_cross_row(&s->t, step, s->layer, k, heads + (size_t)k * S);
        printf("      ");
        pad_to(0, s->source_width);
        printf("  mean                  ");
        for (int k = 0; k < h; k++) {
            char name[32];
            snprintf(name, sizeof name, "head %d", k + 1);
            printf("  %6s", name);
        }
        putchar('\n');
    }
    ted_learn_cross_row(&s->t, step, s->layer, h, s->row);
    for (int j = 0; j < S; j++) {
        printf("      ");
        put_token(s, s->t.source[j], false, false, "");
        pad_to(shown_width(s, s->t.source[j], false), s->source_width);
        printf("  %.3f", s->row[j]);
        int used = 0;
        if (heads || cli_bar_columns(s->row[j], 14) > 0) {
            printf(" %s", s->st.bar);
            used = cli_bar(stdout, s->row[j], 14);
            printf("%s", s->st.reset);
        }
        if (heads) {
            pad_to(used, 15);
            for (int k = 0; k < h; k++) {
                float w = heads[(size_t)k * S + j];
                printf("  %s%s%s%.3f", s->st.bar, shade(w), s->st.reset, w);
            }
        }
        putchar('\n');
    }
    free(heads);
}

/* The numbers of each attention row, for scripts: enough digits for a row
 * to sum to 1 within 1e-5. */
static void print_attention_rows(const stepper *s, int step)
{
    int S = s->t.source_len, h = ted_config_get_view(s->t.config).model.heads;
    for (int k = s->o->heads ? 0 : h; k <= h; k++) {
        ted_learn_cross_row(&s->t, step, s->layer, k, s->row);
        if (k == h)
            printf("step %d: attention layer %d mean:", step + 1, s->layer + 1);
        else
            printf("step %d: attention layer %d head %d:", step + 1, s->layer + 1, k + 1);
        for (int j = 0; j < S; j++)
            printf(" %.7f", s->row[j]);
        putchar('\n');
    }
}

static void print_step(const stepper *s, int step)
{
    const ted_learn_step *st = &s->t.steps[step];
    printf("\n%sstep %d%s: prefix", s->st.heading, step + 1, s->st.reset);
    for (int i = 0; i <= step; i++) {
        putchar(' ');
        put_token(s, s->t.steps[i].input, true, false, "");
    }
    putchar('\n');
    if (s->o->explain)
        ted_learn_explain_step(&s->t, step, print_explanation, (void *)s);
    printf("%sstep %d%s: chosen ", s->st.heading, step + 1, s->st.reset);
    put_token(s, st->chosen, true, true, st->forced ? s->st.forced : s->st.chosen);
    printf(" p=");
    print_p(st->taken.p, false);
    if (st->forced) {
        printf(" %s(forced; the model's choice: ", s->st.forced);
        printf("%s", s->st.reset);
        put_token(s, st->best.id, true, true, "");
        printf(" p=%.4f%s)%s", st->best.p, s->st.forced, s->st.reset);
    }
    putchar('\n');
    ted_learn_rule rule = st->taken_change.rule;
    if (rule == TED_LEARN_RULE_FORCED_BOS || rule == TED_LEARN_RULE_FORCED_LANGUAGE) {
        char words[256];
        printf("  %s%s%s\n", s->st.forced,
               ted_learn_change_words(&s->t, step, st->chosen, &st->taken_change, words,
                                      sizeof words),
               s->st.reset);
    }
    print_candidates(s, step);
    print_attention(s, step);
    if (!s->interactive)
        print_attention_rows(s, step);
    fflush(stdout);
}

static void print_end(stepper *s, bool stopped)
{
    char *text = ted_learn_translation(&s->t);
    if (!text) {
        cli_error("step: out of memory");
        exit(1);
    }
    printf("\n%stranslation%s:%s%s\n", s->st.heading, s->st.reset, *text ? " " : "", text);
    const ted_learn_step *last = s->t.count > 0 ? &s->t.steps[s->t.count - 1] : NULL;
    if (stopped)
        printf("%s(stopped after %d step%s)%s\n", s->st.dim, s->t.count,
               s->t.count == 1 ? "" : "s", s->st.reset);
    else if (last && last->chosen == ted_config_get_view(s->t.config).tokens.eos_id)
        printf("%s(%d steps, the last one chose the end of sentence)%s\n", s->st.dim, s->t.count,
               s->st.reset);
    else
        printf("%s(%d steps: the most the decoding rule allows)%s\n", s->st.dim, s->t.count,
               s->st.reset);
    free(text);
}

/* ---- the loop ------------------------------------------------------------ */

/* Reads what the learner types before step `step`: returns 1 to run the
 * step (with *force set), 0 to quit. */
static int prompt(stepper *s, int step, int *force, char **line, size_t *capacity)
{
    for (;;) {
        int planned = ted_learn_forced_at(&s->typed, 1, step);
        const char *from = "the word typed";
        if (planned < 0) {
            planned = ted_learn_forced_at(s->o->forced, s->o->forced_count, step);
            from = "--force";
        }
        printf("\n%s[step %d] Enter: run it", s->st.dim, step + 1);
        if (planned >= 0)
            printf(" (takes '%s', from %s)", ted_target_token(s->t.model, planned), from);
        printf(" · type a token to take it instead · q: quit >%s ", s->st.reset);
        fflush(stdout);
        size_t length;
        if (!cli_read_line(stdin, line, capacity, &length))
            return 0;
        char *p = *line + strspn(*line, " \t");
        size_t n = strlen(p);
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            p[--n] = '\0';
        if (n == 0) {
            *force = planned;
            return 1;
        }
        if (!strcmp(p, "q") || !strcmp(p, "quit"))
            return 0;
        ted_learn_forced typed = {.step = step + 1};
        if (ted_learn_resolve_forced(s->t.model, p, &typed)) {
            s->typed = typed;  /* the rest of its pieces are the next steps' */
            *force = typed.ids[0];
            return 1;
        }
        printf("%s'%s' is not in the target vocabulary, nor a word of its tokens; Enter "
               "takes the model's choice%s\n",
               s->st.forced, p, s->st.reset);
    }
}

/* Encodes the sentence and checks the options against it: 0, or 1 after
 * printing what is wrong. */
static int begin_steps(stepper *s, const ted_model *model, const cli_sentence *sentence)
{
    step_options *o = s->o;
    if (cli_learn_begin(&s->t, model, sentence, o->max_length, o->top_k, false))
        return 1;
    ted_learn_use_rules(&s->t, &o->chosen_rules);
    const ted_config_architecture c = ted_config_get_view(s->t.config).model;
    for (int i = 0; i < o->forced_count; i++)
        if (o->forced[i].step + o->forced[i].count - 1 > s->t.max_steps)
            return cli_error("step: --force %d:%s: this sentence has at most %d steps%s",
                             o->forced[i].step, o->forced_text[i], s->t.max_steps,
                             o->forced[i].count > 1 ? " (the word is several tokens, one a "
                                                      "step)" : "");
    if (o->layer > c.decoder_layers)
        return cli_error("step: --layer %d: the model has %d decoder layers", o->layer,
                         c.decoder_layers);
    s->layer = o->layer > 0 ? o->layer - 1 : c.decoder_layers - 1;
    s->row = malloc((size_t)s->t.source_len * sizeof *s->row);
    if (!s->row)
        return cli_error("step: out of memory");
    s->source_width = 5;
    for (int j = 0; j < s->t.source_len; j++) {
        int w = shown_width(s, s->t.source[j], false);
        s->source_width = w > s->source_width ? w : s->source_width;
    }
    return 0;
}

/* Each step as it runs: the forced token or the learner's choice at a
 * terminal, the step, its display. */
static int run_steps(stepper *s, const ted_model *model, const cli_sentence *sentence)
{
    step_options *o = s->o;
    if (begin_steps(s, model, sentence))
        return 1;
    print_header(s);
    if (o->explain)
        ted_learn_explain_encoder(&s->t, print_explanation, s);
    char *line = NULL;
    size_t capacity = 0;
    bool stopped = false;
    int status = 0;
    while (!s->t.finished) {
        int force = ted_learn_forced_at(&s->typed, 1, s->t.count);
        if (force < 0)
            force = ted_learn_forced_at(o->forced, o->forced_count, s->t.count);
        if (s->interactive && !prompt(s, s->t.count, &force, &line, &capacity)) {
            stopped = true;
            break;
        }
        if ((status = cli_learn_next(&s->t, "step", force)))
            break;
        print_step(s, s->t.count - 1);
        ted_learn_forget_attention(&s->t, s->t.count - 1);  /* shown: not read again */
    }
    free(line);
    if (!status)
        print_end(s, stopped);
    if (!status && !stopped)
        for (int i = 0; i < o->forced_count; i++)
            if (o->forced[i].step > s->t.count)
                fprintf(stderr, "ted: step: decoding ended at step %d, before --force %d:%s\n",
                        s->t.count, o->forced[i].step, o->forced_text[i]);
    return status;
}

/* "[N:]TOKEN": TOKEN at step N, or at the step after the previous one. */
static bool add_forced(step_options *o, const ted_model *model, const char *value)
{
    const ted_learn_forced *last = o->forced_count > 0 ? &o->forced[o->forced_count - 1] : NULL;
    int step = last ? last->step + last->count : 1;
    const char *token = value, *colon = strchr(value, ':');
    if (colon && colon > value && colon[1] != '\0' &&
        strspn(value, "0123456789") == (size_t)(colon - value)) {
        char digits[16];
        size_t n = (size_t)(colon - value);
        if (n >= sizeof digits || (memcpy(digits, value, n), digits[n] = '\0',
                                   !cli_parse_int(digits, 1, 1 << 20, &step))) {
            cli_error("step: --force '%s': the step must be a whole number from 1", value);
            return false;
        }
        token = colon + 1;
    }
    o->forced_text[o->forced_count] = token;
    switch (ted_learn_add_forced(model, o->forced, &o->forced_count, step, token)) {
    case TED_LEARN_FORCE_NOT_IN_VOCABULARY:
        cli_error("step: --force '%s': '%s' is not in the target vocabulary, nor a word "
                  "of its tokens", value, token);
        return false;
    case TED_LEARN_FORCE_STEP_TAKEN:
        cli_error("step: --force '%s': step %d is already forced", value, step);
        return false;
    case TED_LEARN_FORCE_ADDED:
        break;
    }
    return true;
}

/* What the command line gives before the model is loaded: the --force
 * values are read into tokens once it is. */
typedef struct step_args {
    step_options o;
    const char **forces;  /* (argc) */
    int force_count;
} step_args;

/* The rules on the scores (ted translate's options of the same names),
 * checked with the rest by frontend_choose_options once the model is
 * loaded. */
static bool rule_option(cli_args *a, const char *option, frontend_choice *d)
{
    int max = 1 << 20;
    if (!strcmp(option, "--no-repeat-ngram-size"))
        d->no_repeat_ngram_size_given = cli_take_int(a, option, 0, max, &d->no_repeat_ngram_size);
    else if (!strcmp(option, "--encoder-no-repeat-ngram-size"))
        d->encoder_ngram_given = cli_take_int(a, option, 0, max, &d->encoder_ngram);
    else if (!strcmp(option, "--min-length"))
        d->min_length_given = cli_take_int(a, option, 0, max, &d->min_length);
    else if (!strcmp(option, "--min-new-tokens"))
        d->min_new_tokens_given = cli_take_int(a, option, 0, max, &d->min_new_tokens);
    else if (!strcmp(option, "--bad-words-ids"))
        cli_take_bad_words(a, option, d);
    else if (strcmp(option, "--repetition-penalty"))
        return cli_language_option(a, option, &d->languages);
    else if (cli_take_value(a, option)) {
        char *end;
        d->repetition_penalty = strtof(a->value, &end);
        d->repetition_penalty_given = end != a->value && *end == '\0';
        if (!d->repetition_penalty_given) {
            cli_error("step: %s '%s': expected a number", option, a->value);
            a->failed = true;
        }
    }
    return true;
}

static bool step_option(cli_args *a, const char *option, void *options)
{
    step_args *s = options;
    step_options *o = &s->o;
    if (!strcmp(option, "--force")) {
        if (cli_take_value(a, option))
            s->forces[s->force_count++] = a->value;
    } else if (!strcmp(option, "--top")) {
        cli_take_int(a, option, 1, 1000, &o->top_k);
    } else if (!strcmp(option, "--layer")) {
        cli_take_int(a, option, 1, 1000, &o->layer);
    } else if (!strcmp(option, "--max-length")) {
        cli_take_int(a, option, 1, 1 << 20, &o->max_length);
    } else if (!strcmp(option, "--auto")) {
        o->auto_run = true;
    } else if (!strcmp(option, "--heads")) {
        o->heads = true;
    } else if (!strcmp(option, "--explain")) {
        o->explain = true;
    } else if (!strcmp(option, "--no-color") || !strcmp(option, "--no-colour")) {
        o->no_color = true;
    } else {
        return rule_option(a, option, &o->rules);
    }
    return true;
}

static int check_step(const cli_args *a, void *options)
{
    (void)options;
    if (!cli_require_model(a))
        return 1;
    return cli_one_sentence(a);
}

static int step_command(ted_model *model, const cli_args *a, void *options)
{
    step_args *args = options;
    step_options *o = &args->o;
    for (int i = 0; i < args->force_count; i++)
        if (!add_forced(o, model, args->forces[i]))
            return 1;
    ted_translate_options chosen;
    ted_error err = {0};
    if (frontend_choose_options(model, &o->rules, cli_option_names, &chosen, &err))
        return cli_error("step: %s", err.message);
    o->chosen_rules = chosen.decode.rules;
    o->model_dir = a->model_dir;
    stepper s = {.o = o};
    s.interactive = !o->auto_run && isatty(STDIN_FILENO);
    const char *no_color = getenv("NO_COLOR");
    bool color = !o->no_color && isatty(STDOUT_FILENO) && !(no_color && *no_color);
    s.st = color ? colored : plain;
    cli_sentence sentence;
    int status = cli_sentence_prepare(&sentence, model, "step", a->operands[0], &o->rules.languages);
    if (!status)
        status = run_steps(&s, model, &sentence);
    free(s.row);
    ted_learn_end(&s.t);
    cli_sentence_free(&sentence);
    return status;
}

int cli_step(int argc, char **argv)
{
    static const cli_command command = {"step", usage, step_option, check_step, step_command,
                                        false};
    size_t room = argc > 0 ? (size_t)argc : 1;
    step_args s = {.o = {.top_k = 5}};
    s.forces = calloc(room, sizeof *s.forces);
    s.o.forced = calloc(room, sizeof *s.o.forced);
    s.o.forced_text = calloc(room, sizeof *s.o.forced_text);
    int status = s.forces && s.o.forced && s.o.forced_text ? cli_run(&command, &s, argc, argv)
                                                           : cli_error("out of memory");
    free(s.forces);
    free(s.o.forced);
    free(s.o.forced_text);
    return status;
}
