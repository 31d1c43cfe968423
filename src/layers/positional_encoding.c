#include "layers/positional_encoding.h"

#include <math.h>
#include <stddef.h>

void ted_positional_encoding_table(float *table, int max_positions, int d_model,
                                   ted_positional_layout layout)
{
    int half = d_model / 2;
    for (int pos = 0; pos < max_positions; pos++) {
        float *row = table + (size_t)pos * d_model;
        for (int i = 0; i < half; i++) {
            double angle = pos * exp(-(2.0 * i) * log(10000.0) / d_model);
            int sin_at = layout == TED_POSITIONS_INTERLEAVED ? 2 * i : i;
            int cos_at = layout == TED_POSITIONS_INTERLEAVED ? 2 * i + 1 : half + i;
            row[sin_at] = (float)sin(angle);
            row[cos_at] = (float)cos(angle);
        }
    }
}

void ted_add_positional_encoding(float *x, const float *table, int first_position, int count,
                                 int d_model)
{
    for (int p = 0; p < count; p++) {
        const float *pe = table + (size_t)(first_position + p) * d_model;
        float *xr = x + (size_t)p * d_model;
        for (int i = 0; i < d_model; i++)
            xr[i] += pe[i];
    }
}
