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
    ted_kv_cache self;   /* the prefix's K and V: row b holds steps[b] positions
                          * (self.lengths), self.length the most of them */
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

/* The same for rows that join a batch: the memory (count, seq, d_model)
 * of new batch rows first .. first + count - 1 into those rows of
 * caches[l].cross, whose capacity (at least seq) and length stay. */
void ted_decoder_cache_joining_memory(const ted_model *m, const float *memory, int first,
                                      int count, int seq, ted_decoder_cache *caches,
                                      float *projected);

/* One step: row b feeds tokens[b] at its own position steps[b] -> logits
 * (batch, tgt_vocab_size). Each layer's K and V of row b join its self
 * cache at position steps[b], and row b attends over its own positions
 * 0..steps[b]; then every steps[b] advances by one. positions: the
 * positional encoding table, (at least the largest steps[b] + 1,
 * d_model). source_lengths (batch) masks the memory's padding. */
void ted_decoder_step(const ted_model *m, const int *tokens, int batch, const float *positions,
                      int *steps, const int *source_lengths, ted_decoder_cache *caches,
                      ted_activations *a, ted_step_attention kept, float *logits);

#endif
