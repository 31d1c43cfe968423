/*
 * ted — a Transformer Encoder-Decoder runtime.
 *
 * The public C API. A model (config + weights + vocabularies) is loaded once
 * and is read-only afterwards, so one model can serve many threads. Each
 * thread decodes through its own session, which owns every buffer and cache
 * a translation needs: encode a batch of sources once, then step() one
 * target token at a time.
 *
 * Every function that can fail returns a ted_status and, when `err` is not
 * NULL, writes a message naming the file, key or tensor at fault.
 */
#ifndef TED_TED_H
#define TED_TED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ted/config.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TED_VERSION "0.1.0"

typedef enum ted_status {
    TED_OK = 0,
    TED_ERR_IO,        /* a file could not be opened, read or mapped */
    TED_ERR_FORMAT,    /* a file's content is malformed or truncated */
    TED_ERR_CONFIG,    /* the config is invalid or inconsistent */
    TED_ERR_WEIGHTS,   /* a tensor is missing or has the wrong dtype/shape */
    TED_ERR_VOCAB,     /* a vocabulary file is invalid */
    TED_ERR_INPUT,     /* the text or token ids given are unusable */
    TED_ERR_NOMEM,     /* an allocation failed or a size would overflow */
    TED_ERR_ARGUMENT,  /* the caller passed an invalid argument */
} ted_status;

#define TED_ERROR_MESSAGE_SIZE 1024

typedef struct ted_error {
    ted_status status;
    char message[TED_ERROR_MESSAGE_SIZE];
} ted_error;

/* A short name of the status ("I/O error", "bad weights"...). */
const char *ted_status_name(ted_status status);

/* ------------------------------------------------------------------------ */
/* Model                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct ted_model ted_model;

/* Loads DIR/config.yaml, the weights it names (memory-mapped) and the
 * vocabularies. Every tensor is checked by name, dtype and shape. */
ted_status ted_model_load(const char *model_dir, ted_model **model, ted_error *err);
void ted_model_free(ted_model *model);

const ted_config *ted_model_config(const ted_model *model);

/* One tensor of the weights file, for `ted info` and tools. */
typedef struct ted_tensor_info {
    const char *name;
    const char *dtype;  /* "F32", "F16" or "BF16" */
    int ndim;
    int64_t shape[4];
    size_t bytes;       /* bytes in the file */
} ted_tensor_info;

int ted_model_tensor_count(const ted_model *model);
ted_tensor_info ted_model_tensor(const ted_model *model, int index);

/* ------------------------------------------------------------------------ */
/* Text <-> token ids                                                        */
/* ------------------------------------------------------------------------ */

/* Splits `text` as the config's tokenizer says and maps each token to its
 * source vocabulary id (unknown tokens to unk_id), wrapping the result in
 * BOS ... EOS when the config asks for it. `*ids` is malloc'ed; the caller
 * frees it. `unknown` (may be NULL) receives the number of unknown tokens. */
ted_status ted_encode_source(const ted_model *model, const char *text, int **ids,
                             int *count, int *unknown, ted_error *err);

/* Splits `text` as the tokenizer says and maps each token to its target
 * vocabulary id, without BOS or EOS (for teacher forcing and scoring). */
ted_status ted_encode_target(const ted_model *model, const char *text, int **ids, int *count,
                             int *unknown, ted_error *err);

/* Maps target ids to text, joined by spaces (or nothing, for the character
 * tokenizer). Stops at EOS; BOS and padding are skipped. Returns a malloc'ed
 * string the caller frees, or NULL when out of memory. */
char *ted_decode_target(const ted_model *model, const int *ids, int count);

/* The token of a target id ("" when out of range). */
const char *ted_target_token(const ted_model *model, int id);
/* The token of a source id ("" when out of range). */
const char *ted_source_token(const ted_model *model, int id);
/* The id of a target token, or -1 when it is not in the vocabulary. */
int ted_target_id(const ted_model *model, const char *token);

/* ------------------------------------------------------------------------ */
/* Decoding session                                                          */
/* ------------------------------------------------------------------------ */

typedef struct ted_session ted_session;

ted_status ted_session_new(const ted_model *model, ted_session **session, ted_error *err);
void ted_session_free(ted_session *session);

/* Runs the encoder over a batch of source sentences (token ids, already
 * wrapped in BOS ... EOS if the model wants that) and computes the
 * encoder-decoder attention keys and values once for the whole decode.
 * Resets the decoder: the next step() is position 0. `max_steps` bounds the
 * number of step() calls that follow (it sizes the self-attention cache). */
ted_status ted_session_encode(ted_session *session, const int *const *source_ids,
                              const int *source_lengths, int batch, int max_steps,
                              ted_error *err);

/* Feeds one target token per active sentence (BOS at position 0) through the
 * decoder and returns the logits that predict the next token:
 * `*logits` points to (batch, target_vocab) floats owned by the session,
 * valid until the next call. */
ted_status ted_session_step(ted_session *session, const int *tokens, const float **logits,
                            ted_error *err);

/* Keeps the rows `rows[0..count)` of the batch, in that order, with their
 * caches: row i of the new batch is old row rows[i]. A row may repeat (beam
 * search) and rows may be dropped (finished sentences); `count` may not
 * exceed the largest batch this session has encoded. */
ted_status ted_session_select(ted_session *session, const int *rows, int count,
                              ted_error *err);

int ted_session_batch(const ted_session *session);
/* Number of tokens fed by step() since encode(). */
int ted_session_position(const ted_session *session);
/* Source length of a row of the batch (its own, not the padded length). */
int ted_session_source_length(const ted_session *session, int row);

/* Attention weights, for learning and inspection. When enabled, encode()
 * and step() keep every layer's weights for every head; when disabled
 * (the default) nothing is copied or stored. Takes effect at the next
 * encode(). */
void ted_session_keep_attention(ted_session *session, bool keep);

typedef enum ted_attention_kind {
    TED_ENCODER_SELF_ATTENTION,  /* queries and keys: the padded source */
    TED_DECODER_SELF_ATTENTION,  /* the last step's query over positions 0..step */
    TED_CROSS_ATTENTION,         /* the last step's query over the padded source */
} ted_attention_kind;

/* Attention weights of one layer and batch row: the weight of head h,
 * query i on key j is weights[(h * queries + i) * stride + j], j < keys.
 * Keys past the row's own source length (padding) have weight 0. */
typedef struct ted_attention_view {
    const float *weights;
    int heads;
    int queries;
    int keys;
    int stride;
} ted_attention_view;

ted_status ted_session_attention(const ted_session *session, ted_attention_kind kind, int layer,
                                 int row, ted_attention_view *view, ted_error *err);

/* ------------------------------------------------------------------------ */
/* Greedy decoding and translation                                          */
/* ------------------------------------------------------------------------ */

/* Greedy decoding of a batch of sources: at every step each unfinished
 * sentence takes its most likely next token. Sentence i stops at EOS or
 * after max_lengths[i] tokens (EOS counted). `outputs[i]` receives a
 * malloc'ed array of `output_lengths[i]` ids, EOS included when produced. */
ted_status ted_greedy_decode(ted_session *session, const int *const *source_ids,
                             const int *source_lengths, const int *max_lengths, int batch,
                             int **outputs, int *output_lengths, ted_error *err);

/* The number of target tokens (EOS counted) the config allows for a source
 * of `source_tokens` ids; `max_length` > 0 overrides the config's cap. */
int ted_max_target_length(const ted_model *model, int source_tokens, int max_length);

typedef struct ted_translate_options {
    int batch_size;   /* sentences decoded together (default 32) */
    int max_length;   /* cap on generated tokens; 0: the config's rule */
} ted_translate_options;

ted_translate_options ted_translate_default_options(void);

/* Translates `count` sentences; `outputs[i]` receives a malloc'ed string.
 * `unknown[i]` (array may be NULL) receives the number of source words
 * that were not in the vocabulary. */
ted_status ted_translate(const ted_model *model, const char *const *sources, int count,
                         const ted_translate_options *options, char **outputs, int *unknown,
                         ted_error *err);

/* Sets the number of threads the matrix products use (process-wide). */
void ted_set_threads(int threads);

#ifdef __cplusplus
}
#endif

#endif
