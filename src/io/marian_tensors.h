/* A Marian model's tensors under ted's names (io/marian_model.h). */
#ifndef TED_IO_MARIAN_TENSORS_H
#define TED_IO_MARIAN_TENSORS_H

#include "io/marian_file.h"
#include "io/safetensors.h"
#include "ted/config.h"
#include "ted/ted.h"

/* A Marian model's tensors as ted loads them. */
typedef struct ted_marian_weights {
    ted_safetensors tensors;  /* ted's names; the values in `values` */
    float *values;            /* one block, malloc'ed: the caller frees it */
    char model_type[32];      /* the container and the matrices' type, for ted info */
} ted_marian_weights;

/* Every tensor the config `c` needs, from `file` (`path` in messages),
 * into weights->tensors and weights->values (float32, one block), and what the
 * matrices were stored as into weights->model_type. A tensor missing, of
 * another shape or of a type ted cannot read fails naming it. */
ted_status ted_marian_tensors(const ted_marian_file *file, const ted_config *c,
                              const char *path, ted_marian_weights *weights, ted_error *err);

#endif
