/*
 * The model configuration: what config.yaml says, after validation, and
 * the sizes derived from it. docs/model-format.md documents every key.
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

typedef struct ted_config {
    /* model: the architecture */
    int d_model;              /* Embedding Size */
    int heads;                /* Number of Heads */
    int head_size;            /* the width of one head when config.yaml sets it (T5's
                               * d_kv: heads * head_size may differ from d_model); 0:
                               * d_model / heads */
    int query_size;           /* Query Size: the width of one head's queries, keys and
                               * values, head_size or d_model / heads. Derived when the
                               * config is read, never written to config.yaml. */
    int encoder_layers;
    int decoder_layers;
    int d_ff;                 /* inner size of the feed-forward network */
    int src_vocab_size;
    int tgt_vocab_size;
    ted_activation activation;
    ted_feed_forward_form feed_forward;
    bool linear_bias;         /* the attention's and feed-forward's Linears have biases */
    bool scale_attention;     /* scores q.k / sqrt(query_size) (true) or q.k (T5) */
    ted_norm_type norm;
    bool norm_first;          /* pre-norm (true) or the paper's post-norm (false) */
    float layer_norm_eps;
    int max_positions;        /* longest sequence the positional encoding covers */
    bool scale_embedding;     /* multiply embeddings by sqrt(d_model) */
    ted_positional_layout positional_layout;
    int relative_buckets;     /* relative: the buckets of key - query distances */
    int relative_max_distance;  /* relative: the distance from which all share a bucket */
    int position_offset;      /* the position of the first token: the row of the
                               * positional encoding it takes (M2M-100, mBART: 2) */
    bool embedding_norm;      /* a LayerNorm after embeddings + positions, in both
                               * stacks (mBART's layernorm_embedding) */
    bool encoder_final_norm;  /* a LayerNorm after the last encoder layer */
    bool decoder_final_norm;  /* a LayerNorm after the last decoder layer */
    ted_tensor_names tensor_names;  /* how the weights file names its tensors */
    ted_attention_projection attention_projection;
    bool shared_embeddings;   /* source and target embeddings are one table */
    bool tied_output;         /* the final Linear's weight is the target embedding */
    bool output_bias;         /* the final Linear has a bias */
    bool scale_output;        /* the decoder's output times d_model^-0.5 before the final
                               * Linear (T5 with tied embeddings) */
    ted_decoder_layer_type decoder_layer;
    bool zero_start_embedding;  /* the decoder's first input is a zero vector, not the
                                 * embedding of decoder_start_id (Marian) */

    /* weights: the safetensors file, relative to the model directory */
    char weights[TED_CONFIG_PATH_SIZE];

    /* tokenizer */
    ted_tokenizer_kind tokenizer;
    bool lowercase;
    ted_text_normalizer normalize;  /* applied to source text before tokenizing */
    ted_language source_language;   /* the normalizer's language rules */
    char src_vocab[TED_CONFIG_PATH_SIZE];
    char tgt_vocab[TED_CONFIG_PATH_SIZE];
    char src_spm[TED_CONFIG_PATH_SIZE];  /* sentencepiece: the SentencePiece models */
    char tgt_spm[TED_CONFIG_PATH_SIZE];
    char merges[TED_CONFIG_PATH_SIZE];   /* bpe: the merges, one "LEFT RIGHT" a line */
    bool add_prefix_space;    /* bpe: a space before the source text, as GPT-2's option */
    bool clean_up_text;       /* sentencepiece: output text trimmed and cleaned up as
                               * transformers' decode() does (" ." -> "."); false:
                               * SentencePiece's own text (Marian's) */
    int unk_id, pad_id, bos_id, eos_id;
    bool source_bos;          /* put BOS before each source */
    bool source_eos;          /* put EOS after each source */
    /* A multilingual model's language codes, each a token of the vocabulary
     * as the model spells it ("eng_Latn", "__fr__", "en_XX", ">>fra<<"):
     * language_count NUL-terminated codes, one after another. */
    char languages[TED_LANGUAGES_SIZE];
    int language_count;
    ted_source_code_place source_language_token;
    ted_target_code_place target_language_token;
    int decoder_start_id;     /* the first decoder input (default: bos_id) */
    int forced_bos_id;        /* forced as the first target token after the decoder's
                                 start (BART's <s>); -1: none */
    char source_lang[TED_LANGUAGE_CODE_SIZE];  /* a bilingual model's languages ("en", */
    char target_lang[TED_LANGUAGE_CODE_SIZE];  /* "fr"); "": not named */
    /* The target language when none is given (a code of `languages`, with
     * target_language_token forced: a generation config's
     * forced_bos_token_id); "": none, a target must be given. */
    char default_target_lang[TED_LANGUAGE_CODE_SIZE];
    /* The top-level `languages`: what the model was trained to translate,
     * served_language_count items, each NUL-terminated, one after another:
     * a code ("eng_Latn": from and into every other such code) or a
     * direction ("eng_Latn > fra_Latn"), spelled as tokenizer.languages, or
     * as source_lang and target_lang spell them; none: every language of
     * each side, in every direction. */
    char served_languages[TED_LANGUAGES_SIZE];
    int served_language_count;

    /* decoding: at most min(max_length, source tokens + max_length_offset)
     * target tokens are generated, EOS counted; 0 disables either bound. */
    int max_length;
    int max_length_offset;
    float max_length_factor;  /* > 0: also at most this many times the source tokens
                               * (Marian's max-length-factor) */
    /* The default strategy (docs/decoding.md); ted translate's options
     * override it. beam_size > 1: beam search; sample: sampling (not both). */
    int beam_size;            /* 1: greedy */
    float length_penalty;     /* alpha of the length normalization; 0: none */
    ted_length_normalization length_normalization;
    ted_early_stopping early_stopping;  /* when beam search stops a sentence */
    bool forced_eos;          /* an EOS follows the length limit (transformers'
                               * forced_eos_token_id): beam search counts it in the
                               * length of a hypothesis cut there, with log-prob 0 */
    int banned_ids[TED_MAX_BANNED_IDS];  /* target ids never generated */
    int banned_id_count;
    /* a vocabulary shortlist file, relative to the model directory; "": none */
    char shortlist[TED_CONFIG_PATH_SIZE];
    bool sample;
    float temperature;
    int top_k;                /* 0: no cut */
    float top_p;              /* 1: no cut */
    /* the rules on every strategy's scores (ted_logits_rules) */
    float repetition_penalty; /* 1: none */
    int no_repeat_ngram_size; /* 0: off */
    int encoder_no_repeat_ngram_size; /* 0: off */
    int min_length;           /* 0: off */
} ted_config;

#ifdef __cplusplus
}
#endif

#endif
