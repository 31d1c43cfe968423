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
#include <stdio.h>

#include "ted/config.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TED_VERSION "0.1.0"

/* Marks the library's interface: libted.so is built with
 * -fvisibility=hidden, so it exports these functions and nothing else. */
#if defined(__GNUC__)
#define TED_API __attribute__((visibility("default")))
#else
#define TED_API
#endif

/* The version of the library that runs, TED_VERSION as it was built
 * ("MAJOR.MINOR.PATCH"; libted.so.MAJOR is the soname): a program or
 * binding compares it with the TED_VERSION it was compiled against. */
TED_API const char *ted_version(void);

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
    TED_ERR_CANCELLED, /* a decode stopped because its ted_cancel was requested */
} ted_status;

#define TED_ERROR_MESSAGE_SIZE 1024

/* The decoding options of a translation, one row each of the library's
 * option table (src/model/options.c): its key (ted_option_key), the kind
 * and range of its value, the strategy it applies to. A failed check
 * names the option in ted_error.option, and its message spells it by the
 * key, which a front end swaps for its own spelling
 * (ted_error_spell_options). */
typedef enum ted_option {
    TED_OPTION_NONE = 0,             /* a failure about no one option */
    TED_OPTION_BEAM_SIZE,            /* "beam_size": beam search, 1..TED_BEAM_SIZE_MAX */
    TED_OPTION_SAMPLE,               /* "sample": sampling rather than greedy search */
    TED_OPTION_N_BEST,               /* "n_best": 1..TED_N_BEST_MAX */
    TED_OPTION_LENGTH_PENALTY,       /* "length_penalty": >= 0 */
    TED_OPTION_LENGTH_NORMALIZATION, /* "length_normalization": a word */
    TED_OPTION_EARLY_STOPPING,       /* "early_stopping": a word */
    TED_OPTION_TEMPERATURE,          /* "temperature": > 0 */
    TED_OPTION_TOP_K,                /* "top_k": 0..TED_TOP_K_MAX */
    TED_OPTION_TOP_P,                /* "top_p": > 0 and <= 1 */
    TED_OPTION_SEED,                 /* "seed": any uint64 */
    TED_OPTION_MAX_LENGTH,           /* "max_length": 1..TED_MAX_LENGTH_MAX */
    TED_OPTION_REPETITION_PENALTY,   /* "repetition_penalty": >= 0 (0 and 1: off) */
    TED_OPTION_NO_REPEAT_NGRAM_SIZE, /* "no_repeat_ngram_size": 0..TED_MAX_LENGTH_MAX */
    TED_OPTION_MIN_LENGTH,           /* "min_length": 0..TED_MAX_LENGTH_MAX */
    TED_OPTION_MIN_NEW_TOKENS,       /* "min_new_tokens": 0..TED_MAX_LENGTH_MAX */
    TED_OPTION_BAD_WORDS_IDS,        /* "bad_words_ids": token sequences, each id a
                                      * target token (ted_logits_rules.bad_words) */
    TED_OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE, /* "encoder_no_repeat_ngram_size":
                                              * 0..TED_MAX_LENGTH_MAX */
    TED_OPTION_COUNT
} ted_option;

#define TED_BEAM_SIZE_MAX 1024
#define TED_N_BEST_MAX 1024
#define TED_TOP_K_MAX 16777216
#define TED_MAX_LENGTH_MAX (1 << 20)
/* The ints of ted_logits_rules.bad_words, the -1 after each sequence
 * counted: the rule runs over every sequence at every step of every
 * hypothesis, and a by-value array keeps the options a plain value. */
#define TED_BAD_WORDS_MAX 256

typedef struct ted_error {
    ted_status status;
    char message[TED_ERROR_MESSAGE_SIZE];
    ted_option option; /* the option at fault, or TED_OPTION_NONE */
} ted_error;

/* A short name of the status ("I/O error", "bad weights"...). */
TED_API const char *ted_status_name(ted_status status);

/* Frees an array or string that ted allocated and handed over (ids, a
 * text): a program or binding with a C runtime of its own frees through
 * here. NULL does nothing. */
TED_API void ted_free(void *p);

/* ------------------------------------------------------------------------ */
/* Model                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct ted_model ted_model;

/* Loads DIR/config.yaml, the weights it names (memory-mapped) and the
 * vocabularies. Every tensor is checked by name, dtype and shape. */
TED_API ted_status ted_model_load(const char *model_dir, ted_model **model, ted_error *err);
TED_API void ted_model_free(ted_model *model);

/* The model's config (opaque; lives as long as the model): its fields
 * through ted_config_get_view, every key through ted_config_json. */
TED_API const ted_config *ted_model_config(const ted_model *model);

/* The architecture, special ids and files of `config` (ted/config.h); all
 * zero with "" files when `config` is NULL. */
TED_API ted_config_view ted_config_get_view(const ted_config *config);

/* For a directory as Marian saves a model (no config.yaml: model*.npz or
 * model*.bin read as shipped, docs/marian.md), its container and matrix
 * type ("npz, float32", "bin, intgemm8"); NULL for ted's own format. */
TED_API const char *ted_model_marian_type(const ted_model *model);

/* The config as one line of JSON: an object with config.yaml's keys and
 * values, the defaults included (sections "model", "tokenizer", "decoding"
 * as objects, "weights" a string; floats spelled as config.yaml spells
 * them; the words true and false of early_stopping as JSON booleans, as
 * YAML reads them), for bindings and tools. Returns a malloc'ed string the
 * caller frees (ted_free), or NULL when `config` is NULL or out of memory. */
TED_API char *ted_config_json(const ted_config *config);

/* Writes `config` to `out` as config.yaml: every key with its value (the
 * defaults too), sections model, tokenizer and decoding and the top-level
 * weights, in the order docs/model-format.md lists them (`ted info
 * --config`). What it writes reads back as the same config. A failed
 * write (`out` is flushed) is TED_ERR_IO; a value no config holds (a
 * word's enum out of its range, a list longer than its field, a path that
 * is not UTF-8) is TED_ERR_ARGUMENT naming the key. */
TED_API ted_status ted_config_write_yaml(FILE *out, const ted_config *config, ted_error *err);

/* The files of a model directory as its config names them, relative to
 * the directory: the weights, config.yaml, the vocabularies and the
 * SentencePiece models, each once (ted quantize copies them; ted shortlist
 * -o never writes over one). */
enum { TED_MODEL_FILES = 6 };

typedef struct ted_model_files {
    const char *name[TED_MODEL_FILES];
    int count;
} ted_model_files;

TED_API void ted_model_list_files(const ted_config *c, ted_model_files *files);

/* The weights are memory-mapped, not copied: should another program cut
 * the file short while a model is loaded, reading a weight raises SIGBUS.
 * A program may call this once to have that reported instead as one line on
 * standard error naming the file, and exit status 1 (the ted program
 * does). It installs a SIGBUS handler for the whole process. */
TED_API ted_status ted_report_weight_faults(ted_error *err);

/* Restricts the final Linear + Softmax of every decode that starts after
 * this call to a vocabulary shortlist (docs/decoding.md#vocabulary-shortlist):
 * per batch, to the union of the targets the shortlist file `path` lists
 * for the batch's source tokens, its frequent targets, EOS, UNK, the
 * target-language codes and the forced prefixes. The logits of every other
 * target are -infinity, so the softmax is over the union. The config's
 * decoding.shortlist sets one at load. NULL removes it. Call it before
 * any session of the model decodes (it changes the model). Fails
 * (TED_ERR_FORMAT, naming the file and line) on a bad file, which leaves
 * the model without a shortlist. */
TED_API ted_status ted_model_set_shortlist(ted_model *model, const char *path, ted_error *err);

/* Reads every tensor of the weights file and fails (TED_ERR_WEIGHTS, naming
 * the tensor and the element) at the first NaN or infinity. Loading checks
 * the vectors (biases, LayerNorms) only: the matrices are nearly all of the
 * file, which loading maps rather than reads (docs/model-format.md). */
TED_API ted_status ted_model_check_weights(const ted_model *model, ted_error *err);

/* The two sides of a translation. */
typedef enum ted_side { TED_SIDE_SOURCE, TED_SIDE_TARGET } ted_side;

/* The codes of the languages the model translates from (TED_SIDE_SOURCE)
 * or into (TED_SIDE_TARGET), as users spell them ("eng_Latn", "en_XX",
 * "fr", "fra" for Marian's >>fra<<): a multilingual model's
 * tokenizer.languages on each side a code token names, else a bilingual
 * model's source_lang or target_lang. `*codes` (may be NULL) points into
 * the model. Returns the count (0: the model names none on that side). */
TED_API int ted_model_languages(const ted_model *model, ted_side side, const char *const **codes);

/* The languages of one sentence, as ted_model_languages spells them; a
 * NULL field: the model's only language on that side (none, or an error
 * when the model names several; but a Marian model's target code, which
 * goes into the source, is optional: its text may begin with its own,
 * ">>fra<< text", as MarianTokenizer reads it). */
typedef struct ted_languages {
    const char *source;
    const char *target;
} ted_languages;

/* Whether the model translates from `source` into `target` (as
 * ted_model_find_language finds them; NULL: the side's only language, or
 * the default target): the directions of the config's top-level
 * `languages` ("eng_Latn > fra_Latn"), every pair of its codes, or every
 * pair of the model's languages when the config has no such key. */
TED_API bool ted_model_translates(const ted_model *model, const char *source, const char *target);

/* `*code`: the code, as ted_model_languages spells it (it points into the
 * model), of the language `given` on one side: the code itself, or the
 * language's ISO 639-1, 639-3 or 639-2/B code ("fr", "fra" or "fre" for
 * "fra_Latn"), a script or region after '-' or '_' choosing among codes of
 * one language ("zh-Hant" for "zho_Hant"). TED_ERR_INPUT when the side
 * has no such language (the message suggests the nearest codes, or says
 * the model was not trained for a code its vocabulary has) or several
 * (the message names them). */
TED_API ted_status ted_model_find_language(const ted_model *model, ted_side side, const char *given,
                                           const char **code, ted_error *err);

/* The ISO code of a language code as models spell it: its language part
 * (before '_' or '-', without ">>...<<", "__...__" or "<2...>") as ISO 639-1 when it
 * is an ISO 639-1, 639-3 or 639-2/B code or an individual language of a
 * macrolanguage ("eng_Latn", "__en__", "en_XX": "en"; "arb_Arab": "ar"),
 * else that part lowercased ("yue_Hant": "yue"). Writes `iso` (`size`
 * bytes; TED_LANGUAGE_CODE_SIZE hold any); false when the code has no
 * language part or it does not fit. */
TED_API bool ted_language_iso(const char *code, char *iso, size_t size);

/* The English name of an ISO code ("fr" or "fra": "French"), NULL when
 * the table (Debian's iso-codes) has none. */
TED_API const char *ted_language_name(const char *iso);

/* The parts of a language code: its language (before the first '_' or
 * '-', without ">>...<<", "__...__" or "<2...>" around the code) and what follows
 * the separator, a script or a region ("eng_Latn": "eng", "Latn";
 * "zh-Hant": "zh", "Hant"; "__fr__": "fr", ""). The pointers are into
 * `code`, with their lengths. */
typedef struct ted_code_parts {
    const char *language, *rest;
    size_t language_length, rest_length;
} ted_code_parts;
TED_API ted_code_parts ted_code_split(const char *code);

/* Whether `id` is a language code token (tokenizer.languages) of the
 * source vocabulary (`target` false: a code put in the source) or of the
 * target vocabulary (`target` true: a target code the model forces as its
 * first token). */
TED_API bool ted_model_language_token(const ted_model *model, int id, bool target);

/* One tensor of the weights file, for `ted info` and tools. */
typedef struct ted_tensor_info {
    const char *name;
    const char *dtype;  /* "F32", "F16" or "BF16" */
    int ndim;
    int64_t shape[4];
    size_t bytes;       /* bytes in the file */
} ted_tensor_info;

TED_API int ted_model_tensor_count(const ted_model *model);
TED_API ted_tensor_info ted_model_tensor(const ted_model *model, int index);

/* ------------------------------------------------------------------------ */
/* Text <-> token ids                                                        */
/* ------------------------------------------------------------------------ */

/* Splits `text` as the config's tokenizer says and maps each token to its
 * source vocabulary id (unknown tokens to unk_id), wrapping the result in
 * BOS ... EOS when the config asks for it. `*ids` is malloc'ed; the caller
 * frees it. `unknown` (may be NULL) receives the number of unknown tokens. */
TED_API ted_status ted_encode_source(const ted_model *model, const char *text, int **ids,
                                     int *count, int *unknown, ted_error *err);

/* A source sentence ready for the encoder: what every front end (ted
 * translate, ted serve, the learning tools) makes of a text before it
 * decodes it. */
typedef struct ted_source {
    int *ids;      /* (count) malloc'ed: BOS ... EOS as the config wants, and the
                    * language code tokens where the config puts them */
    int count;
    int unknown;   /* tokens mapped to unk_id */
    bool blank;    /* nothing to translate (no tokens, or BOS EOS alone): a blank
                    * source translates to the empty string without the model */
    int *prefix_ids;   /* (prefix_count) malloc'ed or NULL: the target tokens the
                        * sentence must begin with (a forced target-language code),
                        * for ted_batch.prefix_ids */
    int prefix_count;
} ted_source;

/* Tokenizes `text` (ted_encode_source), puts the language code tokens
 * where the config says (tokenizer.source_language_token and
 * target_language_token: in the source, or as the prefix) and checks it:
 * TED_ERR_INPUT "N tokens, more than the model's max_positions (M)" for a
 * source the encoder cannot take, an unknown language code (the message
 * lists the model's), no target language for a model that translates into
 * several. `languages` may be NULL (both fields NULL). A blank source is
 * no error. On failure `*out` holds no ids. */
TED_API ted_status ted_prepare_source(const ted_model *model, const char *text,
                                      const ted_languages *languages, ted_source *out,
                                      ted_error *err);
/* Frees the ids and the prefix and zeroes `*source` (NULL or zeroed:
 * nothing to do). */
TED_API void ted_source_free(ted_source *source);

/* Splits `text` as the tokenizer says and maps each token to its target
 * vocabulary id, without BOS or EOS (for teacher forcing and scoring). */
TED_API ted_status ted_encode_target(const ted_model *model, const char *text, int **ids,
                                     int *count, int *unknown, ted_error *err);

/* Maps target ids to text, joined by spaces (or nothing, for the character
 * tokenizer). Stops at EOS; BOS, padding and the target-language codes a
 * model forces (tokenizer.target_language_token forced) are skipped. Returns a malloc'ed
 * string the caller frees, or NULL when out of memory. */
TED_API char *ted_decode_target(const ted_model *model, const int *ids, int count);

/* The token of a target id ("" when out of range). */
TED_API const char *ted_target_token(const ted_model *model, int id);
/* The token of a source id ("" when out of range). */
TED_API const char *ted_source_token(const ted_model *model, int id);
/* The id of a target token, or -1 when it is not in the vocabulary. */
TED_API int ted_target_id(const ted_model *model, const char *token);
/* The target ids that write `word` as a person types it (a token to force
 * at a step: ted step --force, the explorer, Python's trace): the token
 * itself when the target vocabulary has it ("▁noire"; a word of a
 * word-level vocabulary), else the pieces the target tokenizer makes of it
 * ("noire" -> "▁noire"; a longer word several pieces, one a step). Writes
 * `*count` ids to `ids` (room for `max`). TED_ERR_INPUT, naming the word,
 * when it makes no piece, an unknown one or more than `max`. The front
 * ends force at most TED_WORD_PIECES_MAX pieces for one word. */
#define TED_WORD_PIECES_MAX 32
TED_API ted_status ted_target_word(const ted_model *model, const char *word, int *ids, int max,
                                   int *count, ted_error *err);

/* ------------------------------------------------------------------------ */
/* Decoding session                                                          */
/* ------------------------------------------------------------------------ */

typedef struct ted_session ted_session;

TED_API ted_status ted_session_new(const ted_model *model, ted_session **session, ted_error *err);
TED_API void ted_session_free(ted_session *session);

/* Runs the encoder over a batch of source sentences (token ids, already
 * wrapped in BOS ... EOS if the model wants that) and computes the
 * encoder-decoder attention keys and values once for the whole decode.
 * Resets the decoder: the next step() is position 0. `max_steps` bounds the
 * number of step() calls that follow: the self-attention caches grow with
 * the steps taken, up to it. */
TED_API ted_status ted_session_encode(ted_session *session, const int *const *source_ids,
                                      const int *source_lengths, int batch, int max_steps,
                                      ted_error *err);

/* Feeds one target token per active sentence (at position 0 the config's
 * decoder_start_id: BOS unless it says otherwise) through the decoder and
 * returns the logits that predict the next token:
 * `*logits` points to (batch, target_vocab) floats owned by the session,
 * valid until the next call (`logits` may be NULL). */
TED_API ted_status ted_session_step(ted_session *session, const int *tokens, const float **logits,
                                    ted_error *err);

/* Keeps the rows `rows[0..count)` of the batch, in that order, with their
 * caches: row i of the new batch is old row rows[i]. A row may repeat (beam
 * search) and rows may be dropped (finished sentences). When `count` is
 * larger than the session's buffers hold, they grow (one allocation and a
 * copy of the kept rows; later batches reuse the room). */
TED_API ted_status ted_session_select(ted_session *session, const int *rows, int count,
                                      ted_error *err);

/* Continuous batching: the rows of `joining`, a session of the same model
 * that was encoded and has not stepped (e.g. on another thread, while this
 * one stepped), become rows batch .. batch + count - 1 of `session`, each
 * at position 0 (its first step() feeds the decoder start), with room for
 * joining's max_steps, while the rows already there keep their positions and caches.
 * Every row then decodes at its own position, over its own prefix and
 * source, exactly as it would alone; step() feeds all rows together and
 * select() keeps or drops any of them. The buffers grow when the rows, a
 * longer source or more steps outgrow them (each at least twofold, so rows
 * joining one at a time move the caches a few times only). `joining` is
 * left with no rows, ready for its next encode(). `session` may be empty
 * (new, or emptied by ted_session_clear()): its buffers are then laid out
 * as wide as they have been, so that later rows join without moving the
 * caches. Refused while either keeps attention weights (an empty session:
 * while ted_session_keep_attention() asks for them). */
TED_API ted_status ted_session_join(ted_session *session, ted_session *joining, ted_error *err);

/* Drops every row of the batch (all sentences finished). Buffers of up to
 * 8 MiB stay for the next encode() or join(); larger ones are freed. */
TED_API void ted_session_clear(ted_session *session);

/* The model the session decodes with. */
TED_API const ted_model *ted_session_model(const ted_session *session);
TED_API int ted_session_batch(const ted_session *session);
/* Number of tokens fed by step() since encode(): the most of any row,
 * every row's unless rows joined later. */
TED_API int ted_session_position(const ted_session *session);
/* The target tokens the last step scored when the model has a shortlist
 * (the subset of the rows' sources), 0 when it scored the whole
 * vocabulary. */
TED_API int ted_session_shortlist_size(const ted_session *session);

/* What a server asks of a session that lives as long as the server: the
 * bytes its buffers take (0 when it holds none); ted_session_empty drops
 * every row as ted_session_clear does but keeps the buffers whatever their
 * size (a running batch, which empties and refills under load, keeps the
 * room its rows grew to: moving rows into new buffers costs a copy and the
 * first touch of every page); ted_session_release drops every row and
 * frees the buffers whatever their size (an idle server's sessions). */
TED_API size_t ted_session_buffer_bytes(const ted_session *session);
TED_API void ted_session_empty(ted_session *session);
TED_API void ted_session_release(ted_session *session);

/* ------------------------------------------------------------------------ */
/* Cancellation                                                              */
/* ------------------------------------------------------------------------ */

/* A flag that stops decodes: a session that watches one fails its next
 * encode() or step() with TED_ERR_CANCELLED once a stop is requested (so
 * ted_decode stops between decoding steps), and the translate functions
 * given one (ted_translate_call) stop so between steps and between
 * batches, their workers included. The caller owns it; it must outlive
 * the sessions and calls that watch it. */
typedef struct ted_cancel ted_cancel;

TED_API ted_status ted_cancel_new(ted_cancel **cancel, ted_error *err);
TED_API void ted_cancel_free(ted_cancel *cancel);
/* Requests the stop. Any thread may call it, and so may a signal handler
 * (one lock-free atomic store). NULL does nothing. */
TED_API void ted_cancel_request(ted_cancel *cancel);
/* Withdraws the request, for the flag to serve another call. */
TED_API void ted_cancel_reset(ted_cancel *cancel);
/* Whether a stop is requested (false for NULL). */
TED_API bool ted_cancel_requested(const ted_cancel *cancel);

/* From now on, `session`'s encode() and step() fail with TED_ERR_CANCELLED
 * ("cancelled before step N") while `cancel` is requested, and leave the
 * session as it was: it may be freed, cleared or encoded again. NULL:
 * watch none (the default). */
TED_API void ted_session_watch(ted_session *session, const ted_cancel *cancel);

/* Attention weights, for learning and inspection. When enabled, encode()
 * and step() keep every layer's weights for every head; when disabled
 * (the default) nothing is copied or stored. Takes effect at the next
 * encode(). */
TED_API void ted_session_keep_attention(ted_session *session, bool keep);
/* With attention kept, whether encode() keeps the encoder's weights too
 * (the default: kept), from the next encode(). A trace that shows the
 * decoder's steps only (ted step) leaves out their (encoder_layers, heads,
 * source_len, source_len) floats, most of what keeping attention costs on
 * a long sentence. */
TED_API void ted_session_keep_encoder_attention(ted_session *session, bool keep);

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

TED_API ted_status ted_session_attention(const ted_session *session, ted_attention_kind kind,
                                         int layer, int row, ted_attention_view *view,
                                         ted_error *err);

/* ------------------------------------------------------------------------ */
/* The final Softmax: from a row of logits to the next token                */
/* ------------------------------------------------------------------------ */

/* Every strategy chooses from one row of scores over the target vocabulary
 * (logits, or their log-softmax) as these functions do, and so can a
 * strategy of your own over ted_session_step(). */

/* Sets the scores of the tokens the model never generates (config.yaml
 * decoding.banned_ids, e.g. a Marian model's padding) to -infinity, in one
 * row of target_vocab scores. Greedy decoding, beam search and sampling
 * call it on every row, so no strategy ever produces a banned token. The
 * log-probabilities they report stay the model's own log-softmax of the
 * logits, as with a sampling temperature or cut. */
TED_API void ted_ban_tokens(const ted_model *model, float *scores);

/* The index of the largest of the n values of x, the first on ties: the
 * token greedy decoding picks from a row of logits. */
TED_API int ted_argmax(const float *x, int n);

/* The k largest of the n scores, largest first, ties to the lower id:
 * ids[0..k) and, when values is not NULL, values[0..k). k above n is cut
 * to n; returns the number written. */
TED_API int ted_top_k(const float *scores, int n, int k, int *ids, float *values);

/* ------------------------------------------------------------------------ */
/* Decoding: a batch of sources to hypotheses                               */
/* ------------------------------------------------------------------------ */

/* One output of a decoding strategy. The log-probabilities are the model's:
 * log-softmax of the logits, whatever the strategy (sampling temperature and
 * cuts do not change them), so scores compare across strategies; beam
 * search with a rule on (ted_logits_rules) reports them after the rules,
 * which it ranks by, as transformers does. */
typedef struct ted_hypothesis {
    int *ids;          /* (length) target ids, EOS included when produced; malloc'ed */
    float *log_probs;  /* (length) log P(ids[t] | source, ids[0..t)), 0 for a
                        * forced prefix token (ted_batch.prefix_ids); malloc'ed */
    int length;
    double log_prob;   /* the sum of log_probs */
    double score;      /* what ranks hypotheses: log_prob, or for beam search
                        * log_prob / lp(length) (ted_beam_params; length + 1 for a
                        * hypothesis cut at its limit when the config has
                        * forced_eos) */
} ted_hypothesis;

/* Frees ids and log_probs of `count` hypotheses and zeroes them. */
TED_API void ted_hypotheses_free(ted_hypothesis *hypotheses, int count);

/* The number of target tokens (EOS counted) the config allows for a source
 * of `source_tokens` ids (2 * source_tokens + 10 when the config sets no
 * bound), never more than max_positions; `max_length` > 0 overrides the
 * config's bounds. */
TED_API int ted_max_target_length(const ted_model *model, int source_tokens, int max_length);

typedef enum ted_decoding_strategy {
    TED_DECODE_GREEDY = 0,  /* each step, the most likely token that is not banned */
    TED_DECODE_BEAM,        /* the beam_size best open hypotheses per sentence */
    TED_DECODE_SAMPLE,      /* each step, a token drawn from the softmax */
} ted_decoding_strategy;

typedef struct ted_beam_params {
    int beam_size;         /* open hypotheses kept per sentence (default 4) */
    float length_penalty;  /* alpha of the length penalty lp(length) that divides a
                            * finished hypothesis' log-prob (default 0.6; 0: none) */
    /* lp (default TED_LENGTH_GNMT): TED_LENGTH_GNMT: ((5 + length) / 6)^alpha;
     * TED_LENGTH_POWER: length^alpha, as Hugging Face transformers.
     * length: the tokens generated, EOS counted. */
    ted_length_normalization length_normalization;
    /* When a sentence stops (ted_early_stopping, in ted/config.h; default
     * TED_EARLY_STOPPING_FALSE, transformers' default). */
    ted_early_stopping early_stopping;
} ted_beam_params;

TED_API ted_beam_params ted_beam_default_params(void);

typedef struct ted_sampling_params {
    float temperature;  /* logits are divided by it before the softmax (default 1; > 0) */
    int top_k;          /* draw among the k most likely tokens only (default 0: all) */
    float top_p;        /* then among the fewest most likely tokens whose probability
                         * reaches p (nucleus; default 1: all; 0 < p <= 1) */
    uint64_t seed;      /* with the stream, fixes every draw (default 0) */
} ted_sampling_params;

TED_API ted_sampling_params ted_sampling_default_params(void);

/* The rules every strategy applies to each step's scores before it
 * chooses, as transformers' generate() applies its logits processors and
 * in their order (docs/decoding.md#rules-on-the-scores): the repetition
 * penalty, then the n-grams, then the bad words, then the least lengths.
 * A hypothesis' history is the decoder's start token and its tokens so
 * far. Zeroes leave every rule off. */
typedef struct ted_logits_rules {
    float repetition_penalty;  /* a token of the history has its score divided by it
                                * where positive, multiplied where negative, once
                                * (0 and 1: off) */
    int no_repeat_ngram_size;  /* n: a token that would repeat an n-gram of the history
                                * is banned (0: off) */
    int encoder_no_repeat_ngram_size;  /* n: a token that would repeat an n-gram of the
                                        * source ids is banned (0: off) */
    int min_length;            /* EOS is banned while a hypothesis has fewer tokens,
                                * EOS counted (0: off) */
    int min_new_tokens;        /* EOS is banned while a hypothesis has fewer tokens,
                                * EOS not counted (0: off) */
    /* Token sequences never generated (transformers' bad_words_ids): each
     * sequence's target ids, then -1. A sequence of one token bans it at
     * every step (but EOS alone, which transformers drops); a longer one
     * bans its last token after a history that ends with the others. */
    int bad_words[TED_BAD_WORDS_MAX];
    int bad_words_length;      /* the ints of bad_words used, each -1 counted (0: off) */
} ted_logits_rules;

/* Applies `rules` to one row of target_vocab `scores` (the logits, or
 * for beam search their log-softmax) of a hypothesis whose tokens so far
 * are ids[0..length); encoder_no_repeat_ngram_size needs the source
 * (ted_apply_logits_rules_source), and is off here. */
TED_API void ted_apply_logits_rules(const ted_model *model, const ted_logits_rules *rules,
                                    const int *ids, int length, float *scores);

/* The ids a sentence's encoder reads (ted_source.ids), for the rules that
 * look at them. */
typedef struct ted_rules_source {
    const int *ids;  /* (count) */
    int count;
} ted_rules_source;

/* ted_apply_logits_rules for a hypothesis of the sentence whose encoder
 * reads `source` (NULL: none): every rule, in transformers' order. */
TED_API void ted_apply_logits_rules_source(const ted_model *model,
                                           const ted_logits_rules *rules,
                                           const ted_rules_source *source, const int *ids,
                                           int length, float *scores);

/* How to decode (docs/decoding.md). */
typedef struct ted_decode_options {
    ted_decoding_strategy strategy;  /* default TED_DECODE_GREEDY */
    ted_beam_params beam;            /* for TED_DECODE_BEAM */
    ted_sampling_params sampling;    /* for TED_DECODE_SAMPLE */
    int n_best;       /* hypotheses per sentence (default 1): at most the beam size for
                       * beam search, samples for sampling, 1 for greedy */
    bool tokens_only; /* greedy, and sampling with n_best 1: the hypotheses' tokens
                       * alone, their log_probs, log_prob and score left 0, and no
                       * step computes the log-softmax over the vocabulary (the
                       * tokens are the same); beam search and sampling's n-best rank
                       * by the scores and keep them (default false) */
    ted_logits_rules rules;  /* on every strategy's scores (default: none) */
} ted_decode_options;

/* What a decode works on: `count` sources, as ted_prepare_source makes them. */
typedef struct ted_batch {
    const int *const *source_ids;  /* (count): each source's ids */
    const int *source_lengths;     /* (count) */
    const int *max_lengths;        /* (count): target tokens allowed, EOS counted
                                    * (ted_max_target_length), each >= 1 */
    /* Target tokens each sentence must begin with, e.g. the target-language
     * token of a multilingual model; NULL: none. Forced tokens are counted
     * in the length and add a log-prob of 0 (transformers' generate()
     * scores its forced_bos_token_id so); they draw nothing from a
     * sampling stream. */
    const int *const *prefix_ids;  /* (count), NULL or each (prefix_lengths[i]) */
    const int *prefix_lengths;     /* (count) */
    /* Sampling: sentence i draws from the random stream (seed, streams[i]),
     * so its samples do not depend on the rest of the batch; NULL: stream i. */
    const uint64_t *streams;       /* (count) */
    int count;
} ted_batch;

/* What one step of beam search did with a candidate (ted_beam_trace). */
typedef enum ted_beam_fate {
    TED_BEAM_PRUNED,    /* not among the best: dropped */
    TED_BEAM_OPEN,      /* kept in the beam: extended at the next step */
    TED_BEAM_FINISHED,  /* ended (EOS, or the length limit), ranked by its score */
} ted_beam_fate;

typedef struct ted_beam_candidate {
    int parent;        /* the open hypothesis it extends: its index among the
                        * sentence's open candidates of the step before, in
                        * their order there (0 at the first step) */
    int token;
    double log_prob;   /* of the whole hypothesis */
    double score;      /* finished: log_prob / lp(length) (as ted_hypothesis.score);
                        * otherwise log_prob */
    ted_beam_fate fate;
} ted_beam_candidate;

/* One step of one sentence. The candidates are every open hypothesis
 * extended by each of its best beam_size + 1 tokens that are not banned,
 * ranked by log-prob (the order beam search ranks them in). */
typedef struct ted_beam_step {
    int sentence;
    int length;                            /* tokens of each candidate, EOS counted */
    const ted_beam_candidate *candidates;  /* (count), valid during the call */
    int count;
    bool stops;  /* the sentence is done after this step: no open candidate is
                  * extended (those marked open are dropped when the search
                  * stops early) */
} ted_beam_step;

/* Beam search reports every step of every sentence, once decided, to
 * step() (for learning and inspection; it changes nothing in the search). */
typedef struct ted_beam_trace {
    void (*step)(void *data, const ted_beam_step *step);
    void *data;
} ted_beam_trace;

/* Decodes a batch through the session with the options' strategy:
 * encodes the sources once, then steps until every sentence is done.
 * `out[i * n_best + k]` receives sentence i's k-th best hypothesis (by
 * score).
 * - Greedy: each step, every unfinished sentence takes its most likely
 *   token that is not banned; sentence i stops at EOS or after
 *   max_lengths[i] tokens.
 * - Sampling: each step, every unfinished sample draws its next token from
 *   softmax(logits / temperature), cut to top_k and then top_p; sentence i
 *   draws n_best samples from its stream, returned highest log-prob first.
 *   top_k 1 is greedy decoding.
 * - Beam search: every step extends each open hypothesis by every token;
 *   the candidates are ranked by total log-prob. Those among the best
 *   beam_size that end in EOS are finished and kept aside; the best
 *   beam_size others stay open. Once beam_size hypotheses are finished,
 *   sentence i stops as early_stopping says; at max_lengths[i] tokens it
 *   stops, and unless early_stopping says it is done, its best beam_size
 *   candidates that do not end in EOS finish too (transformers' finalize).
 *   1 <= n_best <= beam_size < target vocabulary size. With length_penalty
 *   0, beam_size 1 and no repetition penalty the result is greedy
 *   decoding's.
 * `trace` (may be NULL) sees beam search's steps. On failure `out` holds
 * nothing to free. */
TED_API ted_status ted_decode(ted_session *session, const ted_batch *batch,
                              const ted_decode_options *options, const ted_beam_trace *trace,
                              ted_hypothesis *out, ted_error *err);

/* ------------------------------------------------------------------------ */
/* Translation                                                              */
/* ------------------------------------------------------------------------ */

typedef struct ted_translate_options {
    ted_decode_options decode;
    int batch_size;   /* sentences decoded together, at most (default 32) */
    int max_batch_tokens;  /* > 0: a batch holds at most this many source tokens,
                            * padding counted: sentences x the longest one (a longer
                            * sentence goes alone); 0 (the default): no bound */
    int workers;      /* batches decoded at once, each on a thread of its own with a
                       * session of its own (default 1) */
    int max_length;   /* cap on generated tokens; 0: the config's rule */
    uint64_t first_index;  /* the index of sources[0] in the whole input: sentence i
                            * samples from random stream first_index + i */
    /* Called (when not NULL) after each batch with the sentences done so far
     * and the total, from one translating thread at a time. */
    void (*progress)(void *data, int done, int total);
    void *progress_data;
    ted_languages languages;  /* of every sentence (ted_prepare_source); NULL fields
                               * by default */
} ted_translate_options;

/* Greedy decoding, 32 sentences a batch, one worker, the config's length
 * rule. */
TED_API ted_translate_options ted_translate_default_options(void);

/* The workers (ted_translate_options.workers) that make the best use of
 * `cpus` CPUs for this model: a model whose decoder layer (two attentions
 * and the feed-forward network) holds under 8 million weights, up to
 * Transformer-base's 4.2 million, decodes a batch per CPU, each on one
 * thread; a larger one, whose products are large enough to share among
 * threads, one batch at a time over all the threads (ted_set_threads). */
TED_API int ted_translate_workers(const ted_model *model, int cpus);

/* The defaults with the model's config.yaml `decoding:` section applied:
 * beam_size > 1 selects beam search, sample: true sampling, and the
 * length penalty and normalization, temperature, top_k and top_p become the
 * params. */
TED_API ted_translate_options ted_translate_model_options(const ted_model *model);

/* Checks options against the model: a batch size and n-best list of at
 * least 1, the strategy's parameters in range, an n-best list the strategy
 * can give (TED_ERR_ARGUMENT names the value at fault, and err->option
 * the option: ted_translate_options_check_given with nothing given). The
 * translate functions check their options so; a program may check
 * earlier. */
TED_API ted_status ted_translate_options_check(const ted_model *model,
                                               const ted_translate_options *options,
                                               ted_error *err);

/* ted_translate_options_check, for options a user gave over the model's
 * defaults: `given` holds bit (1u << o) of each ted_option the user set
 * (TED_OPTION_SAMPLE: sampling asked for). Every rule of the option table,
 * in this order: beam_size and sample not both given; each value given,
 * or applying to the strategy, within its range; an option of one
 * strategy (length_penalty, temperature...) not given with another; a
 * beam narrower than the target vocabulary; n_best > 1 only from beam
 * search or sampling, and at most the beam. The largest whole numbers
 * (TED_BEAM_SIZE_MAX...) cap the values given; a value the caller set
 * itself needs only be at least the least (ted_translate_options_check).
 * A failure is TED_ERR_ARGUMENT
 * with err->option set and a message that spells options by their keys
 * ("n_best 2 needs beam search (beam_size 2 or more) or sample"). */
TED_API ted_status ted_translate_options_check_given(const ted_model *model,
                                                     const ted_translate_options *options,
                                                     unsigned given, ted_error *err);

/* The key of an option in the table ("beam_size"), NULL for
 * TED_OPTION_NONE and values out of range. */
TED_API const char *ted_option_key(ted_option option);

/* The range of a whole number or a number: *min, *max, and whether *min
 * itself is allowed (top_p: > 0, length_penalty: >= 0; max may be
 * infinity). False for an option of another kind. */
TED_API bool ted_option_bounds(ted_option option, double *min, double *max, bool *min_included);

/* The word of `value` of length_normalization or early_stopping
 * (ted_length_normalization, ted_early_stopping), as config.yaml's
 * decoding keys spell it: 0, 1, ... until NULL are the option's words.
 * NULL for a value out of range or an option that takes no word. */
TED_API const char *ted_option_word(ted_option option, int value);

/* The words of `option`, each between two `quote`s, as a sentence says
 * them: "false, true or never". Writes at most `size` bytes, NUL included,
 * and returns the length of the whole text (as snprintf). */
TED_API size_t ted_option_words_text(ted_option option, const char *quote, char *out, size_t size);

/* Swaps, in err->message, each option key standing as a word for
 * spelling[option] (where not NULL): "--beam" for "beam_size" on a
 * command line. `spelling` has TED_OPTION_COUNT entries. */
TED_API void ted_error_spell_options(ted_error *err, const char *const *spelling);

/* Translates `count` sentences; `outputs[i]` receives a malloc'ed string,
 * the best hypothesis. `options` NULL: ted_translate_model_options().
 * `unknown[i]` (array may be NULL) receives the number of source words
 * that were not in the vocabulary. */
TED_API ted_status ted_translate(const ted_model *model, const char *const *sources, int count,
                                 const ted_translate_options *options, char **outputs, int *unknown,
                                 ted_error *err);

typedef struct ted_translation {
    char *text;                 /* malloc'ed: the hypothesis as text */
    ted_hypothesis hypothesis;  /* its ids and log-probabilities */
} ted_translation;

/* As ted_translate, with options->decode.n_best hypotheses per sentence:
 * `outputs[i * n_best + k]` receives sentence i's k-th best. A blank
 * sentence gives empty hypotheses (length 0, log-prob 0). */
TED_API ted_status ted_translate_n_best(const ted_model *model, const char *const *sources,
                                        int count, const ted_translate_options *options,
                                        ted_translation *outputs, int *unknown, ted_error *err);

/* As ted_translate_n_best, for sources already made ids by
 * ted_prepare_source() with options->languages: sentence i is
 * ids[i][0..lengths[i]), and every sentence begins with the prefix those
 * languages give. Sentences of similar length are decoded together,
 * batch_size at a time, through ted_decode(). */
TED_API ted_status ted_translate_ids(const ted_model *model, const int *const *ids,
                                     const int *lengths, int count,
                                     const ted_translate_options *options,
                                     ted_translation *outputs, ted_error *err);

/* A translation that a ted_cancel can stop: its options (NULL:
 * ted_translate_model_options()) and the flag it watches (NULL: none). */
typedef struct ted_translate_call {
    const ted_translate_options *options;
    const ted_cancel *cancel;
} ted_translate_call;

/* ted_translate_n_best and ted_translate_ids with call->options; once
 * call->cancel is requested they stop between decoding steps and between
 * batches and return TED_ERR_CANCELLED, with `outputs` holding nothing to
 * free. */
TED_API ted_status ted_translate_n_best_cancellable(const ted_model *model,
                                                    const char *const *sources, int count,
                                                    const ted_translate_call *call,
                                                    ted_translation *outputs, int *unknown,
                                                    ted_error *err);
TED_API ted_status ted_translate_ids_cancellable(const ted_model *model, const int *const *ids,
                                                 const int *lengths, int count,
                                                 const ted_translate_call *call,
                                                 ted_translation *outputs, ted_error *err);

/* Frees the texts and hypotheses of `count` translations and zeroes them. */
TED_API void ted_translations_free(ted_translation *translations, int count);

/* The CPUs this process may use: those of its affinity mask
 * (sched_getaffinity, as taskset or a cpuset sets it), capped by the CPU
 * quota of its control group rounded up (cgroup v2 cpu.max, v1
 * cpu.cfs_quota_us / cpu.cfs_period_us, as a container's --cpus sets it);
 * at least 1. */
TED_API int ted_usable_cpus(void);

/* Sets the number of threads of the process's pool, which the matrix
 * products of every thread not bound to a pool of its own use
 * (ted_threads_use), and returns it: `threads`, at most ted_usable_cpus() (threads beyond the
 * CPUs would only wait for each other); 0 or less: ted_usable_cpus(). */
TED_API int ted_set_threads(int threads);

/* A pool of compute threads that the caller owns: the matrix products,
 * the attention and the choices of the computations bound to it run on
 * its threads (the calling thread counts as one), beside those of other
 * pools. Two models in one process, each with its pool, compute at once,
 * each on its own share; without one, every computation runs on the
 * process's pool (ted_set_threads), one caller at a time (the others
 * compute on their own thread meanwhile). Waiting threads spin only while
 * the threads of every pool have CPUs of their own. */
typedef struct ted_threads ted_threads;

/* `threads` threads (at most ted_usable_cpus(); 0 or less:
 * ted_usable_cpus()); TED_ERR_NOMEM when it cannot be made. */
TED_API ted_status ted_threads_new(int threads, ted_threads **pool, ted_error *err);

/* Stops its threads and frees it; no thread may be bound to it any more
 * (ted_threads_use). NULL is ignored. */
TED_API void ted_threads_free(ted_threads *pool);

/* The threads it runs (the calling thread counted). */
TED_API int ted_threads_count(const ted_threads *pool);

/* Binds the calling thread to `pool`: from now on its computations (its
 * sessions' encode and step, ted_decode, ted_translate and the workers it
 * starts) run on `pool`; NULL: on the process's pool. Returns the pool the
 * thread was bound to before (NULL: the process's), for the caller to
 * bind again when it is done. */
TED_API ted_threads *ted_threads_use(ted_threads *pool);

/* The kernels that run: "avx512", "avx2" or "portable" (TED_CPU forces one). */
TED_API const char *ted_cpu_kernels(void);

#ifdef __cplusplus
}
#endif

#endif
