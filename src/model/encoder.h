/* The encoder stack: Input Embedding + Positional Encoding, then N
 * identical layers of (multi-head self-attention, Add & Norm,
 * feed-forward, Add & Norm), then the optional final LayerNorm. */
#ifndef TED_MODEL_ENCODER_H
#define TED_MODEL_ENCODER_H

#include "model/activations.h"
#include "model/model.h"

/* source_ids (batch, seq) -> the memory (batch, seq, d_model) in a->x.
 * positions: the positional encoding of positions [0, seq), (seq, d_model).
 * source_lengths (batch): the tokens of each row; the rest is padding, which
 * no query attends to. self_cache: room for the K and V of one layer,
 * (batch, heads, seq, query_size) each. kept_attention: NULL, or
 * (encoder_layers, batch, heads, seq, seq) receiving the weights. */
void ted_encoder_forward(const ted_model *m, const int *source_ids, const int *source_lengths,
                         int batch, int seq, const float *positions, ted_activations *a,
                         ted_kv_cache self_cache, float *kept_attention);

#endif
