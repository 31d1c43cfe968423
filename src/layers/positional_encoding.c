#include "layers/positional_encoding.h"

#include <math.h>
#include <stddef.h>

/* sin and cos of pos * frequency for consecutive positions, by rotating
 * the previous pair by one step: four products instead of two library
 * calls per value, which makes a 5000-position table cheap to build at
 * load. The rotation runs in double and restarts from exact values every
 * RESTART positions, so its error stays far below float precision. */
enum { RESTART = 64 };

void ted_positional_encoding_table(float *table, int max_positions, int d_model,
                                   ted_positional_layout layout)
{
    int half = d_model / 2;
    /* the exponent's step: 2/d (the paper), or 1/(d/2 - 1) (fairseq) */
    double step = layout == TED_POSITIONS_FAIRSEQ ? 1.0 / (half - 1) : 2.0 / d_model;
    for (int i = 0; i < half; i++) {
        double frequency = exp(-(i * step) * log(10000.0));
        double step_sin = sin(frequency), step_cos = cos(frequency);
        int sin_at = layout == TED_POSITIONS_INTERLEAVED ? 2 * i : i;
        int cos_at = layout == TED_POSITIONS_INTERLEAVED ? 2 * i + 1 : half + i;
        double s = 0.0, c = 1.0;
        for (int pos = 0; pos < max_positions; pos++) {
            if (pos % RESTART == 0) {
                s = sin(pos * frequency);
                c = cos(pos * frequency);
            }
            float *row = table + (size_t)pos * d_model;
            row[sin_at] = (float)s;
            row[cos_at] = (float)c;
            double next_s = s * step_cos + c * step_sin;
            c = c * step_cos - s * step_sin;
            s = next_s;
        }
    }
}

void ted_add_positional_encoding(float *x, const float *table, int first_position, int count,
                                 int d_model, ted_padding_position padding)
{
    for (int p = 0; p < count; p++) {
        if (padding.ids && padding.ids[p] == padding.id)
            continue;
        const float *pe = table + (size_t)(first_position + p) * d_model;
        float *xr = x + (size_t)p * d_model;
        for (int i = 0; i < d_model; i++)
            xr[i] += pe[i];
    }
}
