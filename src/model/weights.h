/* Binding the tensors of a model's safetensors file to its weight pointers. */
#ifndef TED_MODEL_WEIGHTS_H
#define TED_MODEL_WEIGHTS_H

#include "model/model.h"

/* ted_weights_bind, which fills a model's weights, is declared in
 * model/model.h, where the loader (model.c) calls it. */

/* What the float matrix whose data begins at `data` is to m: the weight of
 * one of its Linear layers but the output layer (a packed Q/K/V
 * projection's as a whole), the output layer's weight (a tied embedding
 * too), or neither (an embedding, a table). */
typedef enum ted_linear_role {
    TED_LINEAR_NONE,
    TED_LINEAR_INNER,   /* ted quantize --dtype int4 stores these as int4 */
    TED_LINEAR_OUTPUT,
} ted_linear_role;

/* *role = what `data` is to m (above). Fails only without memory for the
 * list. */
ted_status ted_weights_linear_role(const ted_model *m, const void *data, ted_linear_role *role,
                                   ted_error *err);

/* ---- the mapped layout (docs/model-format.md#the-mapped-layout) ----------
 * A weights file whose header's "__metadata__" holds "ted_layout":
 * "mapped" stores each int8 Linear weight in the groups the int8 products
 * read (kernels.h's ted_pack_i8: a U8 tensor (groups, ceil(in / 4), 64),
 * 64-byte aligned), so loading copies nothing. The metadata also names the
 * packing's parameters (below); a file whose parameters differ from this
 * build's is refused. */
#define TED_LAYOUT_KEY "ted_layout"
#define TED_LAYOUT_MAPPED "mapped"

typedef struct ted_layout_param {
    const char *key;  /* in "__metadata__", the value a decimal string */
    int value;        /* what this build's kernels read */
} ted_layout_param;

enum { TED_LAYOUT_PARAMS = 3 };
extern const ted_layout_param ted_layout_params[TED_LAYOUT_PARAMS];

#endif
