/*
 * The model configuration: the words of config.yaml's keys as enums, the
 * bounds on its values, and ted_config_view, what a program reads of a
 * config field by field (the config itself is opaque: ted_config_json
 * gives every key). docs/model-format.md documents every key.
 */
#ifndef TED_CONFIG_H
#define TED_CONFIG_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TED_CONFIG_PATH_SIZE 256

typedef enum ted_activation {
    TED_ACTIVATION_RELU,
    TED_ACTIVATION_GELU,  /* exact: x * (1 + erf(x / sqrt 2)) / 2 */
    TED_ACTIVATION_SILU,  /* x * sigmoid(x), "swish" */
    TED_ACTIVATION_GELU_TANH,  /* the tanh approximation: x * (1 + tanh(sqrt(2 / pi) *
                                * (x + 0.044715 x^3))) / 2 (Hugging Face's gelu_new) */
} ted_activation;

/* The feed-forward network's form (model.feed_forward). */
typedef enum ted_feed_forward_form {
    TED_FEED_FORWARD_PLAIN,  /* Linear2(activation(Linear1 x)) (the paper) */
    TED_FEED_FORWARD_GATED,  /* Linear2(activation(Linear1 x) * Up x) (T5 v1.1's gated-gelu) */
} ted_feed_forward_form;

/* The normalization (model.norm). */
typedef enum ted_norm_type {
    TED_NORM_LAYER,  /* LayerNorm: mean and variance, gamma and beta */
    TED_NORM_RMS,    /* RMSNorm: root mean square, gamma only (T5) */
} ted_norm_type;

typedef enum ted_tensor_names {
    TED_NAMES_TUTORIAL,  /* PyTorch's translation tutorial (Seq2SeqTransformer) */
    TED_NAMES_MARIAN,    /* Hugging Face MarianMTModel */
} ted_tensor_names;

typedef enum ted_attention_projection {
    TED_PROJECTION_PACKED,    /* one in_proj_weight (3 * d_model, d_model): W^Q, W^K, W^V */
    TED_PROJECTION_SEPARATE,  /* q_proj, k_proj, v_proj of (d_model, d_model) each */
} ted_attention_projection;

typedef enum ted_positional_layout {
    TED_POSITIONS_INTERLEAVED,  /* sin at even, cos at odd dimensions (the paper, PyTorch) */
    TED_POSITIONS_CONCATENATED, /* all sines, then all cosines (Marian) */
    TED_POSITIONS_FAIRSEQ,      /* all sines, then all cosines, of the frequencies
                                 * 10000^(-i / (d_model/2 - 1)) (M2M-100, NLLB) */
    TED_POSITIONS_LEARNED,      /* a table of the weights file per stack (mBART) */
    TED_POSITIONS_RELATIVE,     /* none added to the embeddings: a learned bias per
                                 * bucket of key - query distance and head, added to the
                                 * attention scores (T5) */
    TED_POSITIONS_MARIAN,       /* fairseq's sines and cosines, added to every token
                                 * (Marian's own models) */
} ted_positional_layout;

/* The first sublayer of each decoder layer (model.decoder_layer). */
typedef enum ted_decoder_layer_type {
    TED_DECODER_LAYER_ATTENTION,  /* masked multi-head self-attention (the paper) */
    TED_DECODER_LAYER_SSRU,       /* a simpler simple recurrent unit (Marian's
                                  * transformer-decoder-autoreg: rnn, dec-cell: ssru) */
} ted_decoder_layer_type;

typedef enum ted_tokenizer_kind {
    TED_TOKENIZER_WHITESPACE,  /* tokens are separated by spaces and tabs */
    TED_TOKENIZER_CHAR,        /* every UTF-8 character is a token */
    TED_TOKENIZER_SENTENCEPIECE, /* a SentencePiece model's pieces */
    TED_TOKENIZER_BPE,         /* byte-level BPE (GPT-2, BART): vocabulary and merges */
} ted_tokenizer_kind;

typedef enum ted_text_normalizer {
    TED_NORMALIZE_NONE,   /* the text as given */
    TED_NORMALIZE_MOSES,  /* Moses' punctuation normalizer (as MarianTokenizer with sacremoses) */
} ted_text_normalizer;

/* The source language, for the language rules of the Moses normalizer;
 * sacremoses treats every other language as none. */
typedef enum ted_language {
    TED_LANGUAGE_NONE,
    TED_LANGUAGE_EN,
    TED_LANGUAGE_DE,
    TED_LANGUAGE_ES,
    TED_LANGUAGE_FR,
    TED_LANGUAGE_CS,
    TED_LANGUAGE_CZ,
} ted_language;

/* Where the source language's code token goes in a source
 * (tokenizer.source_language_token). */
typedef enum ted_source_code_place {
    TED_SOURCE_CODE_NONE,   /* nowhere: the model names no source language by a token */
    TED_SOURCE_CODE_FIRST,  /* before the text (NLLB, M2M-100, mBART-50) */
    TED_SOURCE_CODE_LAST,   /* after EOS (NLLB's legacy behaviour) */
} ted_source_code_place;

/* How the target language's code token selects the target language
 * (tokenizer.target_language_token). */
typedef enum ted_target_code_place {
    TED_TARGET_CODE_NONE,    /* it does not: the model names no target language by a token */
    TED_TARGET_CODE_FORCED,  /* forced as the first target token after the decoder start
                              * (NLLB, M2M-100, mBART-50) */
    TED_TARGET_CODE_SOURCE,  /* put at the start of the source (Marian's >>fra<<) */
} ted_target_code_place;

/* tokenizer.languages: the bytes its codes fill (each NUL-terminated) and
 * the longest code, NUL included; a bilingual model's source_lang and
 * target_lang take codes as long. */
#define TED_LANGUAGES_SIZE 16384
#define TED_LANGUAGE_CODE_SIZE 64

/* How beam search compares hypotheses of different lengths: their summed
 * log-probability divided by a length penalty lp(length) = */
typedef enum ted_length_normalization {
    TED_LENGTH_GNMT,   /* ((5 + length) / 6)^alpha (Wu et al., GNMT) */
    TED_LENGTH_POWER,  /* length^alpha (Hugging Face transformers) */
} ted_length_normalization;

/* When beam search stops a sentence: transformers' generate() early_stopping
 * (BeamHypotheses.is_done), checked after every step once beam_size
 * hypotheses are finished; `worst` is the lowest score among the beam_size
 * best finished ones, `best` the log-prob of the step's best candidate,
 * `length` its tokens (EOS counted). */
typedef enum ted_early_stopping {
    TED_EARLY_STOPPING_FALSE,  /* "false": once best / lp(length) <= worst (a heuristic:
                                * with alpha > 0 a longer hypothesis could still win) */
    TED_EARLY_STOPPING_TRUE,   /* "true": at once */
    TED_EARLY_STOPPING_NEVER,  /* "never": once best / lp(max_length) <= worst when
                                * alpha > 0, best / lp(length) otherwise: nothing open
                                * can win any more */
    TED_EARLY_STOPPING_MARIAN, /* "marian": as Marian's beam search, every hypothesis
                                * that finishes narrows its sentence's beam by one;
                                * the sentence stops when none stays open */
} ted_early_stopping;

#define TED_MAX_BANNED_IDS 16

/* A model's configuration (ted_model_config): opaque, read through
 * ted_config_get_view, ted_config_json (every key) and the calls of ted.h. */
typedef struct ted_config ted_config;

/* The architecture (config.yaml's model:), as docs/model-format.md names it. */
typedef struct ted_config_architecture {
    int d_model;              /* Embedding Size */
    int heads;                /* Number of Heads */
    int query_size;           /* Query Size: the width of one head's queries, keys and
                               * values (model.head_size, else d_model / heads) */
    int encoder_layers;
    int decoder_layers;
    int d_ff;                 /* inner size of the feed-forward network */
    int src_vocab_size;
    int tgt_vocab_size;
    int max_positions;        /* longest sequence the positional encoding covers */
    ted_activation activation;
    ted_positional_layout positional_layout;
    bool norm_first;          /* pre-norm (true) or the paper's post-norm (false) */
    bool scale_embedding;     /* embeddings times sqrt(d_model) */
    bool tied_output;         /* the final Linear's weight is the target embedding */
} ted_config_architecture;

/* The tokenizer (config.yaml's tokenizer:): its kind and special ids. */
typedef struct ted_config_tokens {
    ted_tokenizer_kind tokenizer;
    int unk_id, pad_id, bos_id, eos_id;
    int decoder_start_id;     /* the first decoder input */
    bool source_bos;          /* BOS before each source */
    bool source_eos;          /* EOS after each source */
} ted_config_tokens;

/* The files config.yaml names, relative to the model directory (or
 * absolute); "" where it names none. */
typedef struct ted_config_files {
    const char *weights;
    const char *src_vocab, *tgt_vocab;
    const char *src_spm, *tgt_spm;  /* sentencepiece */
    const char *merges;             /* bpe */
    const char *shortlist;
} ted_config_files;

/* What a program reads of a config field by field; the strings point into
 * the config and live as long as it. The language codes are
 * ted_model_languages', every other key is in ted_config_json. */
typedef struct ted_config_view {
    ted_config_architecture model;
    ted_config_tokens tokens;
    ted_config_files files;
} ted_config_view;

#ifdef __cplusplus
}
#endif

#endif
