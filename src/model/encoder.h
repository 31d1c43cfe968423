/* The encoder stack: Input Embedding + Positional Encoding, then N
 * identical layers of (multi-head self-attention, Add & Norm,
 * feed-forward, Add & Norm), then the optional final LayerNorm. */
#ifndef TED_MODEL_ENCODER_H
#define TED_MODEL_ENCODER_H

#include "model/activations.h"
#include "model/model.h"

/* What a pass of the encoder over (batch, seq) source positions reads and
 * writes besides the model. */
typedef struct ted_encoder_state {
    const float *positions;       /* (at least seq, d_model): the positional encoding,
                                   * from the row of the first token's position */
    const int *source_lengths;    /* (batch): each row's tokens; the rest is padding,
                                   * which no query attends to */
    ted_activations activations;  /* rows = batch * seq; activations.x ends as the
                                   * memory, (batch, seq, d_model) */
    ted_kv_cache layer_kv;        /* one layer's K and V, (batch, heads, seq, query_size)
                                   * each, which every layer in turn reuses */
    float *kept_attention;        /* NULL, or (encoder_layers, batch, heads, seq, seq)
                                   * receiving the attention weights */
} ted_encoder_state;

/* source_ids (batch, seq) -> the memory (batch, seq, d_model) in
 * st->activations.x. */
void ted_encoder_forward(const ted_model *m, const int *source_ids, int batch, int seq,
                         ted_encoder_state *st);

#endif
