/* Normalization kinds: how each row of the residual stream is normalized
 * over its d_model values. A model chooses its kind once, at load
 * (model.h's ted_layer_kinds); the layers call it through ted_normalize.
 *   LayerNorm:  y = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta
 *   RMSNorm:    y = x / sqrt(mean(x^2) + eps) * gamma  (T5: no mean, no beta) */
#ifndef TED_LAYERS_NORM_H
#define TED_LAYERS_NORM_H

#include <stdbool.h>

typedef struct ted_norm_weights {
    const float *weight;  /* gamma (d_model) */
    const float *bias;    /* beta (d_model); NULL for RMSNorm, which has none */
} ted_norm_weights;

/* x, y (rows, d_model); y may equal x. */
typedef void ted_normalize_fn(float *y, const float *x, const ted_norm_weights *weights,
                              int rows, int d_model, float eps);

typedef struct ted_norm_kind {
    const char *name;             /* "LayerNorm", "RMSNorm" */
    ted_normalize_fn *normalize;
} ted_norm_kind;

extern const ted_norm_kind ted_layer_norm_kind;  /* norm.c */
extern const ted_norm_kind ted_rms_norm_kind;    /* rms_norm.c */

/* The normalization of a model: its kind, its epsilon, and where Add &
 * Norm puts it (add_norm.h). */
typedef struct ted_norm {
    const ted_norm_kind *kind;
    float eps;
    bool first;  /* pre-norm (true) or the paper's post-norm (false) */
} ted_norm;

/* LayerNorm over each row. x, y (rows, d_model); y may equal x. */
void ted_layer_norm(float *y, const float *x, const ted_norm_weights *weights, int rows,
                    int d_model, float eps);

/* RMSNorm over each row; weights->bias is not read. x, y (rows, d_model);
 * y may equal x. */
void ted_rms_norm(float *y, const float *x, const ted_norm_weights *weights, int rows,
                  int d_model, float eps);

/* y = the model's normalization of x with `weights`. x, y (rows, d_model);
 * y may equal x. */
void ted_normalize(float *y, const float *x, const ted_norm_weights *weights,
                   const ted_norm *norm, int rows, int d_model);

#endif
