/* The decoding trace of the learning tools (ted step, ted attention, ted
 * serve's explorer): a greedy decode through the public session API
 * (encode once, then step() a token at a time), tokens optionally forced,
 * that records at every step the probabilities of the next token and
 * every head's attention weights. No stdio: the front ends print. */
#ifndef TED_LEARN_TRACE_H
#define TED_LEARN_TRACE_H

#include <stdbool.h>

#include "ted/ted.h"

typedef struct learn_candidate {
    int id;
    float p;       /* softmax of the logits */
    float logit;
} learn_candidate;

/* One decoder step: the token read, the token taken, and what the model saw. */
typedef struct learn_step {
    int input;               /* the token fed (BOS at the first step) */
    int chosen;              /* the token taken: the best one, or the forced one */
    bool forced;
    learn_candidate best;    /* the model's most likely token */
    learn_candidate taken;   /* the chosen token's probability and logit */
    learn_candidate *top;    /* (top_k), most likely first */
    float *self;             /* (decoder_layers, heads, step + 1): masked self-attention,
                              * NULL once forgotten (learn_forget_attention) */
    float *cross;            /* (decoder_layers, heads, source_len): encoder-decoder, or
                              * NULL once forgotten */
} learn_step;

typedef struct learn_trace {
    const ted_model *model;
    const ted_config *config;
    ted_session *session;
    int *source;             /* (source_len) source ids, BOS ... EOS as the config wants */
    int source_len;
    int *prefix;             /* (prefix_len) target tokens forced first (the source's
                              * prefix_ids: a forced target-language code) */
    int prefix_len;
    int max_steps;           /* steps allowed, EOS counted */
    int top_k;               /* at most the tokens that are not banned */
    const float *encoder;    /* (encoder_layers, heads, source_len, source_len): the
                              * session's own, valid until the next learn_advance; NULL
                              * after learn_start_steps */
    bool encoder_kept;
    learn_step *steps;       /* (max_steps), `count` of them done */
    int count;
    bool finished;           /* EOS taken or max_steps reached */
    float *probs;            /* (tgt_vocab_size): scratch, the softmax of a step's logits */
    float *allowed;          /* (tgt_vocab_size): scratch, its logits, banned tokens at -inf */
    int *top_ids;            /* (top_k): scratch */
} learn_trace;

/* Encodes `source` (from ted_prepare_source; its ids are copied) with the
 * attention weights kept. `max_length` > 0 caps the steps (else the
 * model's rule). A blank source is refused: TED_ERR_INPUT "the sentence
 * is empty". Whatever it returns, learn_end() frees the trace. */
ted_status learn_start(learn_trace *t, const ted_model *model, const ted_source *source,
                       int max_length, int top_k, ted_error *err);
/* learn_start for a front end that shows the steps only (ted step): the
 * encoder's attention weights are not kept (t->encoder NULL), so that the
 * trace holds what the steps show: on a long sentence those
 * (encoder_layers, heads, source_len^2) floats are most of its memory. */
ted_status learn_start_steps(learn_trace *t, const ted_model *model, const ted_source *source,
                             int max_length, int top_k, ted_error *err);
/* Runs one decoder step; `force` >= 0 takes that token instead of the
 * best, as the source's prefix does at the first steps. */
ted_status learn_advance(learn_trace *t, int force, ted_error *err);
void learn_end(learn_trace *t);

/* Frees the attention weights of 0-based step `step` (its self and cross
 * become NULL): a front end that shows each step as it runs (ted step)
 * keeps one step's weights at a time, not the (steps^2) of all of them.
 * learn_self_row, learn_cross_row and learn_explain_step then no longer
 * read that step. */
void learn_forget_attention(learn_trace *t, int step);

/* The most target tokens one forced word becomes. */
enum { LEARN_FORCE_PIECES = TED_WORD_PIECES_MAX };

/* Target tokens taken instead of the model's choice, one a step from
 * `step` on: a token of the target vocabulary, or the tokens a word
 * becomes (learn_add_forced). */
typedef struct learn_forced {
    int step;                     /* 1-based: the step of ids[0] */
    int count;                    /* 1 .. LEARN_FORCE_PIECES */
    int ids[LEARN_FORCE_PIECES];  /* (count) target ids */
} learn_forced;

/* The token forced at 0-based step `step` among forced[0..count), or -1. */
int learn_forced_at(const learn_forced *forced, int count, int step);

/* Why learn_add_forced refuses a token. */
typedef enum learn_force_refusal {
    LEARN_FORCE_ADDED,              /* not refused: added */
    LEARN_FORCE_NOT_IN_VOCABULARY,  /* the token is not in the target vocabulary */
    LEARN_FORCE_STEP_TAKEN,         /* another token is forced at that step */
} learn_force_refusal;

/* Resolves `text` as a learner types it into target tokens: the token of
 * the target vocabulary spelled so ("▁noire", "</s>"), else the tokens the
 * target tokenizer splits it into (a SentencePiece model's word "noire"
 * is its word-initial piece "▁noire"; a rarer word several pieces), none
 * of them unknown and at most LEARN_FORCE_PIECES. False when it names no
 * such tokens; f->step is left as it was. */
bool learn_resolve_forced(const ted_model *model, const char *text, learn_forced *f);

/* The one policy of forced tokens: `token` (learn_resolve_forced) at
 * 1-based `step` joins forced[0..*count) (room for one more), its tokens
 * at step, step + 1, ..., when it names target tokens and no token is
 * forced at those steps yet. */
learn_force_refusal learn_add_forced(const ted_model *model, learn_forced *forced, int *count,
                                     int step, const char *token);

/* Runs the steps left until decoding is over, taking forced[i].id at
 * step forced[i].step (learn_forced_at) and the best token elsewhere. */
ted_status learn_run(learn_trace *t, const learn_forced *forced, int count, ted_error *err);

/* The translation so far (the chosen tokens up to EOS), malloc'ed. */
char *learn_translation(const learn_trace *t);

/* Weights of one attention row, for layer `layer` and head `head`
 * (head == heads: the mean over heads), written to out[0..keys). */
void learn_encoder_row(const learn_trace *t, int layer, int head, int query, float *out);
void learn_self_row(const learn_trace *t, int step, int layer, int head, float *out);
void learn_cross_row(const learn_trace *t, int step, int layer, int head, float *out);

#endif
