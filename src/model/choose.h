/* The final Softmax's choice: from a row of logits to the next token.
 *
 * Every way ted picks a token goes through here: greedy decoding and
 * sampling (model/independent.c) and the running batch of ted serve. A
 * choice reads one row of logits (target_vocab), bans the tokens the model
 * never generates (ted_ban_tokens), applies the decoding's rules
 * (ted_apply_logits_rules, on the logits), and takes the best allowed token, or
 * draws one from softmax(logits / temperature) cut to top_k and top_p, or
 * takes the token a target prefix forces. The log-probability reported is
 * the model's own log-softmax of the logits, whatever the choice.
 *
 * The choices of one step are spread over the thread pool. Those that
 * share a random generator (the samples of one sentence) are made on one
 * thread, in their order, so a sentence's draws do not depend on the
 * other sentences of the batch or on the number of threads. */
#ifndef TED_MODEL_CHOOSE_H
#define TED_MODEL_CHOOSE_H

#include "layers/output.h"
#include "model/decoding.h"

/* One row's choice, for one or more tokens. */
typedef struct ted_choice {
    int row;          /* the row of logits it reads */
    int draws;        /* tokens chosen from that row: 1, or a sentence's samples at its
                       * first step (its one row then starts every sample) */
    int forced;       /* the token every draw takes (a target prefix), or -1 */
    const ted_sampling_params *sampling;  /* NULL: the best allowed token */
    ted_rng *rng;     /* sampling: the sentence's generator, one draw per token */
    const ted_logits_rules *rules;  /* NULL: none */
    const int *history;  /* (history_length): the hypothesis' tokens so far, for the rules */
    int history_length;
    ted_rules_source source;  /* the sentence's source ids, for the rules */
    int *tokens;      /* (draws): the tokens chosen */
    float *log_probs; /* (draws): their log-probabilities; NULL: not wanted */
} ted_choice;

/* Scratch for the choices of a step: a row's scores for each task of
 * the thread pool. */
typedef struct ted_chooser {
    const ted_model *model;
    int tasks;
    float *log_probs;         /* (tasks, vocab): a row's log-softmax */
    float *allowed;           /* (tasks, vocab): its logits, banned tokens at -infinity */
    ted_draw_scratch *draw;   /* (tasks): room for one draw; NULL when nothing samples */
    const ted_output_subset *subset;  /* the step's shortlist, whose scores hold every
                                       * finite logit, or NULL: the whole rows */
} ted_chooser;

/* `sampling`: whether any choice will draw (sizes the draw scratch). */
ted_status ted_chooser_init(ted_chooser *c, const ted_model *m, bool sampling,
                            ted_error *err);
void ted_chooser_free(ted_chooser *c);

/* Whether the choice is made over c->subset's scores alone, without the
 * rows of logits. */
bool ted_choice_in_subset(const ted_chooser *c, const ted_choice *ch);

/* Makes `count` choices over `logits` ((rows, target_vocab)). Choices
 * that share a generator must be consecutive. With c->subset set, a best
 * token without rules passes over the subset's scores alone, and chooses
 * what the whole row would; only the other choices read `logits`. */
void ted_choose(ted_chooser *c, const float *logits, const ted_choice *choices, int count);

/* Sorts `count` hypotheses best first by score, keeping the order of
 * equal scores (the earlier sample first). */
void ted_hypotheses_sort(ted_hypothesis *h, int count);

#endif
