/* The computation of the encoder and of each step of a trace, in the
 * words of multi-head attention with the model's real sizes (Embedding
 * Size, Number of Heads, Query Size, the logical split, merge heads, Add &
 * Norm, the final Linear and Softmax), each operation with the shape it
 * gives: what `ted step --explain` prints and what ted serve's explorer
 * shows, given one piece at a time to `emit`. */
#ifndef TED_LEARN_EXPLAIN_H
#define TED_LEARN_EXPLAIN_H

#include "learn/trace.h"

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

#endif
