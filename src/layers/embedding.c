#include "layers/embedding.h"

#include <stddef.h>

void ted_embed(float *x, ted_matrix table, const int *ids, int count, int d_model, float scale)
{
    for (int t = 0; t < count; t++)
        ted_matrix_row(x + (size_t)t * d_model, table, ids[t], d_model, scale);
}
