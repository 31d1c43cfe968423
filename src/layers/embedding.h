/* Token embeddings: a lookup of each id's row, scaled by sqrt(d_model)
 * when the model was trained that way (the paper, PyTorch's tutorial). */
#ifndef TED_LAYERS_EMBEDDING_H
#define TED_LAYERS_EMBEDDING_H

#include "kernels/kernels.h"

/* ids (count) -> x (count, d_model) = table[id] * scale, an int8 row
 * dequantized first (row * its scale). table (vocab_size, d_model); every
 * id must be < vocab_size. */
void ted_embed(float *x, ted_matrix table, const int *ids, int count, int d_model,
               float scale);

#endif
