/* The decoder stack, one position at a time: Output Embedding + Positional
 * Encoding, then N identical layers of (masked multi-head self-attention,
 * Add & Norm, encoder-decoder attention, Add & Norm, feed-forward,
 * Add & Norm), the optional final LayerNorm, and the final Linear. */
#ifndef TED_MODEL_DECODER_H
#define TED_MODEL_DECODER_H

#include "model/activations.h"
#include "model/model.h"

/* What one decoder layer keeps from step to step. */
typedef struct ted_decoder_cache {
    ted_kv_cache self;   /* the prefix's K and V: length = the next position */
    ted_kv_cache cross;  /* the memory's K and V: length = source_len */
} ted_decoder_cache;

/* Attention weights of the last step, when kept (else NULL):
 * self (decoder_layers, batch, heads, self.capacity),
 * cross (decoder_layers, batch, heads, cross.capacity). */
typedef struct ted_step_attention {
    float *self;
    float *cross;
} ted_step_attention;

/* The K and V of every layer's encoder-decoder attention, computed from the
 * memory (batch, seq, d_model) once per source into caches[l].cross, whose
 * length becomes seq. projected: scratch of (batch * seq, 2 * d_model). */
void ted_decoder_cache_memory(const ted_model *m, const float *memory, int batch, int seq,
                              ted_decoder_cache *caches, float *projected);

/* One step: tokens (batch), at position caches[0].self.length -> logits
 * (batch, tgt_vocab_size). Appends each layer's K and V to its self cache.
 * positions: the positional encoding table, (at least position + 1,
 * d_model). source_lengths (batch) masks the memory's padding. */
void ted_decoder_step(const ted_model *m, const int *tokens, int batch, const float *positions,
                      const int *source_lengths, ted_decoder_cache *caches, ted_activations *a,
                      ted_step_attention kept, float *logits);

#endif
