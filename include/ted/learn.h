/* The learning tools' trace of a decode (ted step, ted attention, ted
 * serve's explorer, the Python package's Translator.trace): a greedy
 * decode through the public session API that records, at every step, the
 * probabilities of the next token and every head's attention weights;
 * how the tools show a token and a word of the config; and the
 * computation of each step in the words of multi-head attention. The
 * structs are a view the caller reads (the Python package mirrors them
 * field for field, tests/python checks their sizes). */
#ifndef TED_LEARN_H
#define TED_LEARN_H

#include <stdbool.h>
#include <stddef.h>

#include "ted/ted.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the trace ---- */
/* The decoding trace of the learning tools (ted step, ted attention, ted
 * serve's explorer): a greedy decode through the public session API
 * (encode once, then step() a token at a time), tokens optionally forced,
 * that records at every step the probabilities of the next token and
 * every head's attention weights. No stdio: the front ends print. */



/* Which rule of the decoding (docs/decoding.md#rules-on-the-scores, the
 * config's banned_ids, a forced token) changed a candidate's score at a
 * step, as the library's rule functions record it while they apply it. */
typedef enum ted_learn_rule {
    TED_LEARN_RULE_NONE,            /* no rule changed it */
    TED_LEARN_RULE_BANNED_ID,       /* the config's banned_ids (transformers'
                                     * suppress_tokens, one-token bad_words_ids) */
    TED_LEARN_RULE_REPETITION,      /* repetition_penalty: already in the history */
    TED_LEARN_RULE_NGRAM,           /* no_repeat_ngram_size */
    TED_LEARN_RULE_SOURCE_NGRAM,    /* encoder_no_repeat_ngram_size */
    TED_LEARN_RULE_BAD_WORDS,       /* a sequence of the rules' bad_words */
    TED_LEARN_RULE_MIN_LENGTH,      /* EOS before min_length */
    TED_LEARN_RULE_MIN_NEW_TOKENS,  /* EOS before min_new_tokens */
    TED_LEARN_RULE_FORCED_BOS,      /* the config's forced_bos_id, taken first */
    TED_LEARN_RULE_FORCED_LANGUAGE, /* the target language's code, taken first */
    TED_LEARN_RULE_FORCED,          /* a token the learner forced */
} ted_learn_rule;

/* What a rule did to one token's score. */
typedef struct ted_learn_change {
    ted_learn_rule rule;
    int at;       /* where the rule found its reason: NGRAM: the position in the
                   * history (0: the decoder's start token) of the earlier n-gram's
                   * first token; SOURCE_NGRAM: the source position of the n-gram's
                   * first token; BAD_WORDS: the index in bad_words of the
                   * sequence's first id; REPETITION: the token's first position
                   * in the history; else 0 */
    float score;  /* the score after every rule: -infinity when banned */
} ted_learn_change;

typedef struct ted_learn_candidate {
    int id;
    float p;       /* softmax of the logits */
    float logit;
} ted_learn_candidate;

/* One decoder step: the token read, the token taken, and what the model saw. */
typedef struct ted_learn_step {
    int input;               /* the token fed (BOS at the first step) */
    int chosen;              /* the token taken: the best one, or the forced one */
    bool forced;
    ted_learn_candidate best;    /* the token greedy decoding takes: the most likely
                                  * of those the rules leave */
    ted_learn_candidate taken;   /* the chosen token's probability and logit */
    ted_learn_candidate *top;    /* (top_k), most likely first by the model's own
                                  * probability, those a rule banned included */
    float *self;             /* (decoder_layers, heads, step + 1): masked self-attention,
                              * NULL once forgotten (ted_learn_forget_attention) */
    float *cross;            /* (decoder_layers, heads, source_len): encoder-decoder, or
                              * NULL once forgotten */
    ted_learn_change *changes;   /* (top_k): what the rules on the scores did to each of
                                  * top (ted_learn_change_words says why) */
    ted_learn_change taken_change;  /* what a rule did to the chosen token; a forced one:
                                     * the FORCED rule that took it */
} ted_learn_step;

typedef struct ted_learn_trace {
    const ted_model *model;
    const ted_config *config;
    ted_session *session;
    int *source;             /* (source_len) source ids, BOS ... EOS as the config wants */
    int source_len;
    int *prefix;             /* (prefix_len) target tokens forced first (the source's
                              * prefix_ids: a forced target-language code) */
    int prefix_len;
    int max_steps;           /* steps allowed, EOS counted */
    int top_k;               /* at most the target vocabulary */
    const float *encoder;    /* (encoder_layers, heads, source_len, source_len): the
                              * session's own, valid until the next ted_learn_advance; NULL
                              * after ted_learn_start_steps */
    bool encoder_kept;
    ted_learn_step *steps;       /* (max_steps), `count` of them done */
    int count;
    bool finished;           /* EOS taken or max_steps reached */
    float *probs;            /* (tgt_vocab_size): scratch, the softmax of a step's logits */
    float *allowed;          /* (tgt_vocab_size): scratch, its logits, banned tokens at -inf */
    int *top_ids;            /* (top_k): scratch */
    ted_logits_rules rules;  /* on every step's scores (ted_learn_use_rules) */
    int *history;            /* (max_steps): the tokens chosen, for the rules */
    ted_learn_change *marks; /* (tgt_vocab_size): scratch, what the rules did to each */
} ted_learn_trace;

/* Encodes `source` (from ted_prepare_source; its ids are copied) with the
 * attention weights kept. `max_length` > 0 caps the steps (else the
 * model's rule). A blank source is refused: TED_ERR_INPUT "the sentence
 * is empty". Whatever it returns, ted_learn_end() frees the trace. */
TED_API ted_status ted_learn_start(ted_learn_trace *t, const ted_model *model,
                                   const ted_source *source, int max_length, int top_k,
                                   ted_error *err);
/* ted_learn_start for a front end that shows the steps only (ted step): the
 * encoder's attention weights are not kept (t->encoder NULL), so that the
 * trace holds what the steps show: on a long sentence those
 * (encoder_layers, heads, source_len^2) floats are most of its memory. */
TED_API ted_status ted_learn_start_steps(ted_learn_trace *t, const ted_model *model,
                                         const ted_source *source, int max_length, int top_k,
                                         ted_error *err);
/* Runs one decoder step; `force` >= 0 takes that token instead of the
 * best, as the source's prefix does at the first steps. */
TED_API ted_status ted_learn_advance(ted_learn_trace *t, int force, ted_error *err);
TED_API void ted_learn_end(ted_learn_trace *t);

/* Frees the attention weights of 0-based step `step` (its self and cross
 * become NULL): a front end that shows each step as it runs (ted step)
 * keeps one step's weights at a time, not the (steps^2) of all of them.
 * ted_learn_self_row, ted_learn_cross_row and ted_learn_explain_step then no longer
 * read that step. */
TED_API void ted_learn_forget_attention(ted_learn_trace *t, int step);

/* The most target tokens one forced word becomes. */
enum { TED_LEARN_FORCE_PIECES = TED_WORD_PIECES_MAX };

/* Target tokens taken instead of the model's choice, one a step from
 * `step` on: a token of the target vocabulary, or the tokens a word
 * becomes (ted_learn_add_forced). */
typedef struct ted_learn_forced {
    int step;                     /* 1-based: the step of ids[0] */
    int count;                    /* 1 .. TED_LEARN_FORCE_PIECES */
    int ids[TED_LEARN_FORCE_PIECES];  /* (count) target ids */
} ted_learn_forced;

/* The token forced at 0-based step `step` among forced[0..count), or -1. */
TED_API int ted_learn_forced_at(const ted_learn_forced *forced, int count, int step);

/* Why ted_learn_add_forced refuses a token. */
typedef enum ted_learn_force_refusal {
    TED_LEARN_FORCE_ADDED,              /* not refused: added */
    TED_LEARN_FORCE_NOT_IN_VOCABULARY,  /* the token is not in the target vocabulary */
    TED_LEARN_FORCE_STEP_TAKEN,         /* another token is forced at that step */
} ted_learn_force_refusal;

/* Resolves `text` as a learner types it into target tokens: the token of
 * the target vocabulary spelled so ("▁noire", "</s>"), else the tokens the
 * target tokenizer splits it into (a SentencePiece model's word "noire"
 * is its word-initial piece "▁noire"; a rarer word several pieces), none
 * of them unknown and at most TED_LEARN_FORCE_PIECES. False when it names no
 * such tokens; f->step is left as it was. */
TED_API bool ted_learn_resolve_forced(const ted_model *model, const char *text,
                                      ted_learn_forced *f);

/* The one policy of forced tokens: `token` (ted_learn_resolve_forced) at
 * 1-based `step` joins forced[0..*count) (room for one more), its tokens
 * at step, step + 1, ..., when it names target tokens and no token is
 * forced at those steps yet. */
TED_API ted_learn_force_refusal ted_learn_add_forced(const ted_model *model,
                                                     ted_learn_forced *forced, int *count,
                                                     int step, const char *token);

/* Runs the steps left until decoding is over, taking forced[i].id at
 * step forced[i].step (ted_learn_forced_at) and the best token elsewhere. */
TED_API ted_status ted_learn_run(ted_learn_trace *t, const ted_learn_forced *forced, int count,
                                 ted_error *err);

/* The translation so far (the chosen tokens up to EOS), malloc'ed. */
TED_API char *ted_learn_translation(const ted_learn_trace *t);

/* Weights of one attention row, for layer `layer` and head `head`
 * (head == heads: the mean over heads), written to out[0..keys). */
TED_API void ted_learn_encoder_row(const ted_learn_trace *t, int layer, int head, int query,
                                   float *out);
TED_API void ted_learn_self_row(const ted_learn_trace *t, int step, int layer, int head,
                                float *out);
TED_API void ted_learn_cross_row(const ted_learn_trace *t, int step, int layer, int head,
                                 float *out);

/* ---- what the rules on the scores did ---- */

/* The rules a trace applies to its steps' scores, as greedy decoding with
 * them does (the chosen token is the best one they leave); a trace starts
 * with the model's (ted_translate_model_options). Copied; call it before
 * the first ted_learn_advance. */
TED_API void ted_learn_use_rules(ted_learn_trace *t, const ted_logits_rules *rules);

/* Why the rule of `change` changed `token`'s score at 0-based step `step`,
 * in a learner's words ("banned: would repeat the 3-gram 'le chat noir'",
 * "penalised ×1.2: already generated"); "" when no rule changed it.
 * Returns buf (size >= 8), cut to fit. */
TED_API const char *ted_learn_change_words(const ted_learn_trace *t, int step, int token,
                                           const ted_learn_change *change, char *buf,
                                           size_t size);

/* ---- the relative position bias ---- */
/* T5's relative position bias as the learning tools show it: each score
 * q_i . k_j of a self-attention gets B[bucket(j - i), head], a learned
 * table of the stack (every layer of a stack reads the same one); the
 * encoder-decoder attention adds none. */

/* The attentions of a trace. */
typedef enum ted_learn_attention {
    TED_LEARN_ENCODER_SELF,  /* the encoder's self-attention: buckets both ways */
    TED_LEARN_DECODER_SELF,  /* the decoder's masked self-attention: keys up to the query */
    TED_LEARN_CROSS,         /* encoder-decoder attention: no bias */
} ted_learn_attention;

typedef struct ted_learn_position_bias {
    const float *table;   /* (buckets, heads): the bias of each bucket for each head, the
                           * model's own (relative_attention_bias.weight) */
    int buckets;
    int heads;
    int max_distance;     /* distances from this one on share the last bucket */
    bool bidirectional;   /* half the buckets for keys after the query */
} ted_learn_position_bias;

/* The bias that layer `layer` of attention `which` adds: false (and *out
 * zeroed) when it adds none, a model without relative positions, the
 * encoder-decoder attention or a layer out of range. */
TED_API bool ted_learn_position_bias_of(const ted_learn_trace *t, ted_learn_attention which,
                                        int layer, ted_learn_position_bias *out);

/* The bucket of each key 0..keys-1 for the query at position `query` in
 * layer `layer` of attention `which`, written to out (keys): the row of
 * B it adds. False when that attention adds no bias. */
TED_API bool ted_learn_buckets(const ted_learn_trace *t, ted_learn_attention which, int layer,
                               int query, int keys, int *out);

/* ---- tokens and config words as shown ---- */
/* How the learning tools show a token (in the explanation's words, the
 * same in ted step and in the explorer, on the terminal, and in the pages
 * ted attention writes) and a word of the config. */



/* UNK, PAD, BOS or EOS. */
TED_API bool ted_learn_is_special(const ted_config *c, int id);

/* A token as shown: spaces as '␣', control bytes and bytes that are not
 * UTF-8 as '?', "" as '∅'; one too long for `size` bytes is cut between
 * two characters and ends in '…'. Returns buf (size >= 8). */
TED_API const char *ted_learn_show_token(const char *token, char *buf, size_t size);

/* A word of config.yaml as the learning tools show it: the word of value
 * `value` of key `dotted_key` (ted_config_word), an activation as it is
 * usually written ("ReLU"), a tokenizer by what its tokens are ("words");
 * a word without a label as config.yaml spells it. */
TED_API const char *ted_learn_shown_word(const char *dotted_key, int value);

/* ---- the computation explained ---- */
/* The computation of the encoder and of each step of a trace, in the
 * words of multi-head attention with the model's real sizes (Embedding
 * Size, Number of Heads, Query Size, the logical split, merge heads, Add &
 * Norm, the final Linear and Softmax), each operation with the shape it
 * gives: what `ted step --explain` prints and what ted serve's explorer
 * shows, given one piece at a time to `emit`. */


typedef enum ted_learn_explain_kind {
    TED_LEARN_EXPLAIN_PART,     /* a part of the computation: `title`, then `words` */
    TED_LEARN_EXPLAIN_HEADING,  /* a layer or a step within it: `title`, then `words` */
    TED_LEARN_EXPLAIN_LINE,     /* one operation in `words`, the shape it gives in `shape` */
} ted_learn_explain_kind;

typedef void ted_learn_explain_fn(void *data, ted_learn_explain_kind kind, const char *title,
                              const char *words, const char *shape);

/* The encoder's computation, once per sentence. */
TED_API void ted_learn_explain_encoder(const ted_learn_trace *t, ted_learn_explain_fn *emit,
                                       void *data);
/* Step `step` (0-based, already run): the decoder's computation and the
 * final Linear + Softmax. */
TED_API void ted_learn_explain_step(const ted_learn_trace *t, int step,
                                    ted_learn_explain_fn *emit, void *data);

#ifdef __cplusplus
}
#endif

#endif
