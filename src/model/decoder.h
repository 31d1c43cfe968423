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
    float *inputs;       /* (batch, self.capacity, d_model): the layer's input at each
                          * position, from which each step projects the self cache's K
                          * and V again (ted_model.reprojects_self_kv); else NULL */
} ted_decoder_cache;

/* Attention weights of the last step, when kept (else NULL):
 * self (decoder_layers, batch, heads, self.capacity),
 * cross (decoder_layers, batch, heads, cross.capacity). */
typedef struct ted_step_attention {
    float *self;
    float *cross;
} ted_step_attention;

/* What a decoder step reads and writes besides the model and its tokens:
 * row b of the batch is at its own position steps[b]. */
typedef struct ted_decoder_state {
    const float *positions;       /* (at least the largest steps[b] + 1, d_model): the
                                   * positional encoding, from the row of the first
                                   * token's position */
    int *steps;                   /* (batch): each row's next position */
    const int *source_lengths;    /* (batch): masks the memory's padding */
    ted_decoder_cache *caches;    /* (decoder_layers) */
    ted_activations activations;  /* rows = batch */
    ted_step_attention kept;      /* NULLs, or the last step's weights */
    const ted_output_subset *subset;  /* a vocabulary shortlist's final Linear, or NULL:
                                       * the whole vocabulary's */
    float *prefix_kv;             /* (self.capacity, 2 * heads * query_size): one row's K
                                   * and V projected again, with caches[l].inputs; else
                                   * NULL */
} ted_decoder_state;

/* A decoder layer kind: one step of layer `w` of model `m`, in place on
 * st->activations.x (batch, 1, d_model); shape: (batch, 1, heads,
 * query_size); cache: the layer's, whose self cache receives the step's K
 * and V; kept: the layer's share of st->kept. */
typedef struct ted_decoder_layer_kind {
    const char *name;  /* "self-attention" */
    void (*step)(const ted_model *m, const ted_decoder_layer *w, ted_attention_shape shape,
                 ted_decoder_state *st, const ted_decoder_cache *cache,
                 ted_step_attention kept);
} ted_decoder_layer_kind;


/* The K and V of every layer's encoder-decoder attention, computed from the
 * memory (batch, seq, d_model) once per source into caches[l].cross, whose
 * length becomes seq. projected: scratch of (batch * seq, 2 * d_model). */
void ted_decoder_cache_memory(const ted_model *m, const float *memory, int batch, int seq,
                              ted_decoder_cache *caches, float *projected);

/* One step: row b feeds tokens[b] at its own position st->steps[b] ->
 * logits (batch, tgt_vocab_size), or with st->subset set its scores
 * alone (ted_output_logits_subset; logits untouched). Each layer's K and V of row b join its
 * self cache at position steps[b], and row b attends over its own
 * positions 0..steps[b]; then every steps[b] advances by one. */
void ted_decoder_step(const ted_model *m, const int *tokens, int batch, ted_decoder_state *st,
                      float *logits);

#endif
