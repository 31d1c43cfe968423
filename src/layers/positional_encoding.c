#include "layers/positional_encoding.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* sin and cos of pos * frequency for consecutive positions, by rotating
 * the previous pair by one step: four products instead of two library
 * calls per value, which makes a 5000-position table cheap to build at
 * load. The rotation runs in double and restarts from exact values every
 * RESTART positions, so its error stays far below float precision. */
enum { RESTART = 64 };

/* table (count, d_model): the sine and cosine of pos * frequency_i with
 * frequency_i = 10000^(-i * step) for i < d_model / 2; interleaved: the
 * sine at dimension 2i and the cosine at 2i + 1, else all sines first,
 * then all cosines. */
static void sinusoids(float *table, int count, int d_model, double step, bool interleaved)
{
    int half = d_model / 2;
    for (int i = 0; i < half; i++) {
        double frequency = exp(-(i * step) * log(10000.0));
        double step_sin = sin(frequency), step_cos = cos(frequency);
        int sin_at = interleaved ? 2 * i : i;
        int cos_at = interleaved ? 2 * i + 1 : half + i;
        double s = 0.0, c = 1.0;
        for (int pos = 0; pos < count; pos++) {
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

/* The fill of each sinusoidal kind: the paper's exponent step 2 / d_model,
 * or fairseq's 1 / (d_model / 2 - 1). */
static void fill_interleaved(float *table, int count, int d_model)
{
    sinusoids(table, count, d_model, 2.0 / d_model, true);
}

static void fill_concatenated(float *table, int count, int d_model)
{
    sinusoids(table, count, d_model, 2.0 / d_model, false);
}

static void fill_fairseq(float *table, int count, int d_model)
{
    sinusoids(table, count, d_model, 1.0 / (d_model / 2 - 1), false);
}

/* fairseq's sinusoids as Marian computes them (marian-dev
 * src/tensors/cpu/tensor_operators.cpp, SinusoidalPositionEmbeddings):
 * every operation in float, the angle pos * exp(-i * log(10000) / (half -
 * 1)) rounded to a float before its sine and cosine, whose rounding moves
 * them up to a few millionths from the exact values that fill_fairseq
 * gives; an int8 product's quantization of the sum can turn on that. */
static void fill_marian(float *table, int count, int d_model)
{
    int half = d_model / 2;
    float increment = logf(10000.0f) / ((float)d_model / 2.0f - 1.0f);
    for (int i = 0; i < half; i++) {
        float frequency = expf((float)i * -increment);
        for (int pos = 0; pos < count; pos++) {
            float angle = (float)pos * frequency;
            table[(size_t)pos * d_model + i] = sinf(angle);
            table[(size_t)pos * d_model + half + i] = cosf(angle);
        }
    }
}

/* x (d_model) += the table's row of `position`. */
static void add_row(float *x, const float *table, int position, int d_model)
{
    const float *pe = table + (size_t)position * d_model;
    for (int i = 0; i < d_model; i++)
        x[i] += pe[i];
}

/* The add of the kinds that give every token its position. */
static void add_every_row(float *x, const float *table, int first_position, int count,
                          int d_model, ted_padding_position padding)
{
    (void)padding;
    for (int p = 0; p < count; p++)
        add_row(x + (size_t)p * d_model, table, first_position + p, d_model);
}

/* fairseq's add: a padding token's row stays as it is. */
static void add_but_padding(float *x, const float *table, int first_position, int count,
                            int d_model, ted_padding_position padding)
{
    for (int p = 0; p < count; p++)
        if (padding.ids[p] != padding.id)
            add_row(x + (size_t)p * d_model, table, first_position + p, d_model);
}

const ted_position_kind ted_interleaved_positions = {"interleaved", fill_interleaved,
                                                     add_every_row};
const ted_position_kind ted_concatenated_positions = {"concatenated", fill_concatenated,
                                                      add_every_row};
const ted_position_kind ted_fairseq_positions = {"fairseq", fill_fairseq, add_but_padding};
const ted_position_kind ted_learned_positions = {"learned", NULL, add_every_row};
const ted_position_kind ted_marian_positions = {"marian", fill_marian, add_every_row};

/* The relative kind's fill and add: the embeddings take no position. */
static void fill_nothing(float *table, int count, int d_model)
{
    (void)table, (void)count, (void)d_model;
}

static void add_nothing(float *x, const float *table, int first_position, int count,
                        int d_model, ted_padding_position padding)
{
    (void)x, (void)table, (void)first_position, (void)count, (void)d_model, (void)padding;
}

const ted_position_kind ted_relative_positions = {"relative", fill_nothing, add_nothing};
