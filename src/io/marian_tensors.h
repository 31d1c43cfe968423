/* A Marian model's tensors under ted's names (io/marian_model.h). */
#ifndef TED_IO_MARIAN_TENSORS_H
#define TED_IO_MARIAN_TENSORS_H

#include "io/marian_file.h"
#include "io/marian_model.h"

/* Every tensor the config `c` needs, from `file` (`path` in messages),
 * into model->tensors and model->values (float32, one block), and what the
 * matrices were stored as into model->model_type. A tensor missing, of
 * another shape or of a type ted cannot read fails naming it. */
ted_status ted_marian_tensors(const ted_marian_file *file, const ted_config *c,
                              const char *path, ted_marian_model *model, ted_error *err);

#endif
