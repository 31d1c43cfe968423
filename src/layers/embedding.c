#include "layers/embedding.h"

#include <stddef.h>

void ted_embed(float *x, const float *table, const int *ids, int count, int d_model,
               float scale)
{
    for (int t = 0; t < count; t++) {
        const float *row = table + (size_t)ids[t] * d_model;
        float *xr = x + (size_t)t * d_model;
        for (int i = 0; i < d_model; i++)
            xr[i] = row[i] * scale;
    }
}
