#include "layers/output.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

void ted_output_logits(float *logits, const float *x, const ted_output_weights *out, int rows,
                       int d_model, int tgt_vocab)
{
    ted_linear(logits, x, out->weight, out->bias, rows, d_model, tgt_vocab);
}

/* Rounds a byte count up to whole floats' alignment of 64 bytes. */
static size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

size_t ted_output_gather_bytes(const ted_output_weights *out, int count, int d_model)
{
    size_t n = (size_t)count, d = (size_t)d_model;
    size_t bias = out->bias ? aligned(n * sizeof(float)) : 0;
    if (out->weight.i8 || out->weight.i8_packed)
        return aligned(n * d) + aligned(n * sizeof(float)) + bias;
    return aligned(ted_panels_floats(count, d_model) * sizeof(float)) + bias +
           d * sizeof(float);
}

/* The float rows into panels (kernels.h), one row at a time through `row`
 * (d_model). */
static void gather_panels(float *panels, const ted_output_subset *subset, ted_matrix W,
                          int d_model, float *row)
{
    const int P = TED_PANEL_COLUMNS;
    memset(panels, 0, ted_panels_floats(subset->count, d_model) * sizeof(float));
    for (int i = 0; i < subset->count; i++) {
        ted_matrix_row(row, W, subset->ids[i], d_model, 1.0f);
        float *panel = panels + (size_t)(i / P) * P * d_model + i % P;
        for (int c = 0; c < d_model; c++)
            panel[(size_t)c * P] = row[c];
    }
}

void ted_output_gather(ted_output_subset *subset, const ted_output_weights *out, int d_model,
                       void *storage)
{
    char *at = storage;
    size_t n = (size_t)subset->count, d = (size_t)d_model;
    ted_matrix W = out->weight;
    if (W.i8 || W.i8_packed) {
        int8_t *q = (int8_t *)at;
        float *scale = (float *)(at + aligned(n * d));
        for (size_t i = 0; i < n; i++) {
            ted_matrix_i8_row(q + i * d, W, subset->ids[i], d_model);
            scale[i] = W.scale[subset->ids[i]];
        }
        subset->rows.weight = (ted_matrix){.i8 = q, .scale = scale};
        at += aligned(n * d) + aligned(n * sizeof(float));
    } else {
        float *panels = (float *)at;
        at += aligned(ted_panels_floats(subset->count, d_model) * sizeof(float));
        float *row = (float *)(at + (out->bias ? aligned(n * sizeof(float)) : 0));
        gather_panels(panels, subset, W, d_model, row);
        subset->rows.weight = (ted_matrix){.panels = panels};
    }
    float *bias = out->bias ? (float *)at : NULL;
    for (size_t i = 0; bias && i < n; i++)
        bias[i] = out->bias[subset->ids[i]];
    subset->rows.bias = bias;
}

void ted_output_logits_subset(const float *x, const ted_output_subset *subset, int rows,
                              int d_model)
{
    ted_linear(subset->scores, x, subset->rows.weight, subset->rows.bias, rows, d_model,
               subset->count);
}

void ted_output_spread_subset(float *logits, const ted_output_subset *subset, int rows,
                              int tgt_vocab)
{
    int n = subset->count;
    for (int r = 0; r < rows; r++) {
        float *row = logits + (size_t)r * tgt_vocab;
        const float *kept = subset->scores + (size_t)r * n;
        for (int v = 0; v < tgt_vocab; v++)
            row[v] = -INFINITY;
        for (int i = 0; i < n; i++)
            row[subset->ids[i]] = kept[i];
    }
}
