/* config.yaml -> ted_config (libyaml). */
#ifndef TED_IO_CONFIG_H
#define TED_IO_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "ted/ted.h"

/* The configuration as the library reads it: every key of config.yaml
 * (docs/model-format.md) and the sizes derived from it. */
struct ted_config {
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
};

/* Reads and validates a config file (docs/model-format.md). Unknown keys,
 * duplicate keys, wrong types, impossible values and missing required keys
 * are TED_ERR_CONFIG errors naming the file, the line and the key
 * ("config.yaml:7: model.heads: 3 does not divide d_model 512"); a file that
 * cannot be read is TED_ERR_IO, one over 1 MiB TED_ERR_CONFIG. `*config` is
 * written only on success. Whether the files it names exist is left to the
 * model loader. */
ted_status ted_config_load(const char *path, ted_config *config, ted_error *err);

/* The same, from `length` bytes in memory (no NUL terminator needed);
 * `name` stands for the file in messages. */
ted_status ted_config_parse(const char *text, size_t length, const char *name,
                            ted_config *config, ted_error *err);

/* The types of the values ted_config_visit hands over, and what `value`
 * points to for each. */
typedef enum ted_value_type {
    TED_VALUE_INT,       /* const int * */
    TED_VALUE_BOOL,      /* const bool * */
    TED_VALUE_FLOAT,     /* const float * */
    TED_VALUE_WORD,      /* const char *: the word of the field's enum ("gelu"), NULL when
                          * the field holds no word's index */
    TED_VALUE_PATH,      /* const char *: a path relative to the model directory */
    TED_VALUE_INT_LIST,  /* const int *: the first of `count` ints */
    TED_VALUE_CODE,      /* const char *: a language code ("en") */
    TED_VALUE_CODE_LIST, /* const char *: `count` language codes, each NUL-terminated,
                          * one after another */
} ted_value_type;

/* One key of config.yaml and its value in a config: `section` is "model",
 * "tokenizer" or "decoding", NULL for a top-level key ("weights"); `key` is
 * the key's name in its section ("heads"); `count` is the number of values
 * of a list (0 to the field's capacity), 1 for every other type. */
typedef void ted_config_visit_fn(void *data, const char *section, const char *key,
                                 ted_value_type type, const void *value, int count);

/* Calls `fn` with `data` once for each key of config.yaml, in the order of
 * the reader's table: the keys of a section one after another, the
 * sections in the order config.yaml has them. An optional path left empty
 * (src_spm, tgt_spm) is skipped. */
void ted_config_visit(const ted_config *config, ted_config_visit_fn *fn, void *data);

/* The word config.yaml spells for `value` of the key named `dotted_key`
 * ("model.activation", 1 -> "gelu"); NULL when the key takes no word or
 * `value` is none of its words. */
const char *ted_config_word(const char *dotted_key, int value);

/* The shortest decimal text that reads back as `value`, with a point in its
 * mantissa as YAML 1.1 floats have (0.6, 1.0, 1.0e-05): how config.yaml
 * spells a float. 32 bytes of `text` hold any. */
void ted_config_format_float(float value, char *text, size_t size);

/* The keys config.yaml knows, in the table's order: ted_config_key_name
 * writes key `index` (0 to ted_config_key_count() - 1) dotted, "model" for a
 * section, "model.d_model" for a key in one, "weights" at the top level, to
 * `name` of `size` bytes (TED_ERR_ARGUMENT when it does not fit). */
int ted_config_key_count(void);
ted_status ted_config_key_name(int index, char *name, size_t size, ted_error *err);

#endif
