/* What `ted step`, `ted attention` and the explorer of `ted serve` share: a
 * greedy decode through the public session API (encode once, then step() a
 * token at a time) that records, at every step, the probabilities of the
 * next token and every head's attention weights; the explanation of each
 * step's computation; and the small text helpers the commands print with. */
#ifndef TED_CLI_LEARN_H
#define TED_CLI_LEARN_H

#include <stdbool.h>
#include <stdio.h>

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
    float *self;             /* (decoder_layers, heads, step + 1): masked self-attention */
    float *cross;            /* (decoder_layers, heads, source_len): encoder-decoder */
} learn_step;

typedef struct learn_trace {
    const ted_model *model;
    const ted_config *config;
    ted_session *session;
    const char *command;     /* "step" or "attention", for messages */
    int *source;             /* source ids, wrapped in BOS ... EOS if the model wants it */
    int source_len;
    int max_steps;           /* steps allowed, EOS counted */
    int top_k;               /* at most the tokens that are not banned */
    float *encoder;          /* (encoder_layers, heads, source_len, source_len) */
    learn_step *steps;       /* (max_steps), `count` of them done */
    int count;
    bool finished;           /* EOS taken or max_steps reached */
    float *probs;            /* (tgt_vocab_size): scratch, the softmax of a step's logits */
    float *allowed;          /* (tgt_vocab_size): scratch, its logits, banned tokens at -inf */
    int *top_ids;            /* (top_k): scratch */
} learn_trace;

/* Tokenizes `text` and encodes it with the attention weights kept.
 * `max_length` > 0 caps the steps (else the model's rule). `*unknown`
 * receives the number of words not in the source vocabulary. */
ted_status learn_start(learn_trace *t, const ted_model *model, const char *text,
                       int max_length, int top_k, int *unknown, ted_error *err);
/* Runs one decoder step; `force` >= 0 takes that token instead of the best. */
ted_status learn_advance(learn_trace *t, int force, ted_error *err);

/* As learn_start, learn_advance, for the commands: reports unknown words on
 * stderr, and prints the error. Tokenizes `text`, encodes it with the
 * attention weights kept. `max_length` > 0 caps the steps (else the model's
 * rule). Returns 0, or 1 after printing the error. */
int learn_begin(learn_trace *t, const ted_model *model, const char *command, const char *text,
                int max_length, int top_k);
/* Runs one decoder step; `force` >= 0 takes that token instead of the best.
 * Returns 0, or 1 after printing the error. */
int learn_next(learn_trace *t, int force);
void learn_end(learn_trace *t);

/* The computation of the encoder and of each step, in the words of
 * multi-head attention with the model's real sizes (Embedding Size, Number
 * of Heads, Query Size, the logical split, merge heads, Add & Norm, the
 * final Linear and Softmax): what `ted step --explain` prints and what
 * ted serve's explorer shows, given one piece at a time to `emit`. */
typedef enum learn_explain_kind {
    LEARN_EXPLAIN_PART,     /* a part of the computation: `title`, then `words` */
    LEARN_EXPLAIN_HEADING,  /* a layer or a step within it: `title`, then `words` */
    LEARN_EXPLAIN_LINE,     /* one operation in `words`, the shape it gives in `shape` */
} learn_explain_kind;

typedef void learn_explain_fn(void *data, learn_explain_kind kind, const char *title,
                              const char *words, const char *shape);

/* The encoder's computation, once per sentence. */
void learn_explain_encoder(const learn_trace *t, learn_explain_fn *emit, void *data);
/* Step `step` (0-based, already run): the decoder's computation and the
 * final Linear + Softmax. */
void learn_explain_step(const learn_trace *t, int step, learn_explain_fn *emit, void *data);

/* The translation so far (the chosen tokens up to EOS), malloc'ed. */
char *learn_translation(const learn_trace *t);

/* Weights of one attention row, for layer `layer` and head `head`
 * (head == heads: the mean over heads), written to out[0..keys). */
void learn_encoder_row(const learn_trace *t, int layer, int head, int query, float *out);
void learn_self_row(const learn_trace *t, int step, int layer, int head, float *out);
void learn_cross_row(const learn_trace *t, int step, int layer, int head, float *out);

bool learn_is_special(const ted_config *c, int id);
/* A token as shown: spaces as '␣', control bytes and bytes that are not
 * UTF-8 as '?', "" as '∅'; one too long for `size` bytes is cut between
 * two characters and ends in '…'. Returns buf (size >= 8). */
const char *learn_show(const char *token, char *buf, size_t size);
/* Display width in terminal columns (UTF-8 code points). */
int learn_width(const char *s);
/* Prints s, then spaces up to `width` columns. */
void learn_pad(FILE *out, const char *s, int width);
/* A bar of at most `width` columns for a value in [0, 1], in eighths of a
 * block. Returns the columns it took. */
int learn_bar_columns(double value, int width);
int learn_bar(FILE *out, double value, int width);

/* Writes s with &, <, >, " and ' escaped (HTML, XML). */
void learn_xml_escaped(FILE *out, const char *s);
/* Writes s as a JSON string, quotes included. */
void learn_json_string(FILE *out, const char *s);

/* Parses "N" as an int in [min, max], for --layer and --head. */
bool learn_parse_int(const char *text, int min, int max, int *out);

#endif
