/* config.yaml: every key read into its field, every default, and every way
 * a file can be wrong, each with the exact message a user would see. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/config.h"

#define NAME "config.yaml"

/* The smallest valid config; line numbers below count from its first line:
 * model: 1, d_model 2, heads 3, encoder_layers 4, decoder_layers 5, d_ff 6,
 * src_vocab_size 7, tgt_vocab_size 8, weights 9, tokenizer 10,
 * src_vocab 11, tgt_vocab 12. */
#define MINIMAL                  \
    "model:\n"                   \
    "  d_model: 512\n"           \
    "  heads: 8\n"               \
    "  encoder_layers: 6\n"      \
    "  decoder_layers: 6\n"      \
    "  d_ff: 2048\n"             \
    "  src_vocab_size: 32000\n"  \
    "  tgt_vocab_size: 32000\n"  \
    "weights: model.safetensors\n" \
    "tokenizer:\n"               \
    "  src_vocab: vocab.src\n"   \
    "  tgt_vocab: vocab.tgt\n"

static ted_status parse(const char *text, ted_config *config, ted_error *err)
{
    return ted_config_parse(text, strlen(text), NAME, config, err);
}

/* `text` with its first `old` replaced by `new`; the caller frees it. */
static char *replace(const char *text, const char *old, const char *new)
{
    const char *at = strstr(text, old);
    cr_assert_not_null(at, "\"%s\" is not in the config", old);
    size_t head = (size_t)(at - text), old_len = strlen(old), new_len = strlen(new);
    size_t tail = strlen(at + old_len);
    char *out = malloc(head + new_len + tail + 1);
    cr_assert_not_null(out);
    memcpy(out, text, head);
    memcpy(out + head, new, new_len);
    memcpy(out + head + new_len, at + old_len, tail + 1);
    return out;
}

static void expect_error_in(const char *text, ted_status status, const char *message)
{
    ted_config config;
    ted_error err = {0};
    cr_assert_eq(parse(text, &config, &err), status, "for:\n%s\nmessage: %s", text, err.message);
    cr_assert_eq(err.status, status);
    cr_assert_str_eq(err.message, message);
}

static void expect_error(const char *text, const char *message)
{
    expect_error_in(text, TED_ERR_CONFIG, message);
}

/* MINIMAL with `old` replaced by `new` must fail with `message`. */
static void expect_replaced_error(const char *old, const char *new, const char *message)
{
    char *text = replace(MINIMAL, old, new);
    expect_error(text, message);
    free(text);
}

static ted_config parse_ok(const char *text)
{
    ted_config config;
    ted_error err = {0};
    cr_assert_eq(parse(text, &config, &err), TED_OK, "message: %s", err.message);
    return config;
}

Test(config, query_size_is_derived_from_d_model_and_heads)
{
    ted_config c = parse_ok(MINIMAL);
    cr_assert_eq(c.query_size, 64);
    char *text = replace(MINIMAL, "heads: 8", "heads: 16");
    c = parse_ok(text);
    cr_assert_eq(c.query_size, 32);
    free(text);
}

/* Keys of every section, set away from their defaults. */
static const char every_kind_of_key[] =
    "model:\n"
    "  d_model: 64\n"
    "  heads: 4\n"
    "  encoder_layers: 3\n"
    "  decoder_layers: 2\n"
    "  d_ff: 256\n"
    "  src_vocab_size: 100\n"
    "  tgt_vocab_size: 120\n"
    "  activation: gelu\n"
    "  norm_first: true\n"
    "  layer_norm_eps: 1.0e-6\n"
    "  max_positions: 512\n"
    "  scale_embedding: false\n"
    "  positional_encoding: concatenated\n"
    "  encoder_final_norm: false\n"
    "  decoder_final_norm: false\n"
    "weights: weights/model.safetensors\n"
    "tokenizer:\n"
    "  type: char\n"
    "  lowercase: true\n"
    "  src_vocab: src.txt\n"
    "  tgt_vocab: tgt.txt\n"
    "  unk_id: 3\n"
    "  pad_id: 0\n"
    "  bos_id: 1\n"
    "  eos_id: 2\n"
    "  source_bos: false\n"
    "  source_eos: false\n"
    "decoding:\n"
    "  max_length: 200\n"
    "  max_length_offset: 50\n";

Test(config, query_size_is_no_key_a_file_sets)
{
    expect_replaced_error("  heads: 8\n", "  heads: 8\n  query_size: 64\n",
                          "config.yaml:4: model.query_size: unknown key");
}

Test(config, every_key_is_read)
{
    ted_config c = parse_ok(every_kind_of_key);
    cr_assert_eq(c.d_model, 64);
    cr_assert_eq(c.heads, 4);
    cr_assert_eq(c.query_size, 16);
    cr_assert_eq(c.encoder_layers, 3);
    cr_assert_eq(c.decoder_layers, 2);
    cr_assert_eq(c.d_ff, 256);
    cr_assert_eq(c.src_vocab_size, 100);
    cr_assert_eq(c.tgt_vocab_size, 120);
    cr_assert_eq(c.activation, TED_ACTIVATION_GELU);
    cr_assert(c.norm_first);
    cr_assert_float_eq(c.layer_norm_eps, 1.0e-6f, 1e-12);
    cr_assert_eq(c.max_positions, 512);
    cr_assert(!c.scale_embedding);
    cr_assert_eq(c.positional_layout, TED_POSITIONS_CONCATENATED);
    cr_assert(!c.encoder_final_norm);
    cr_assert(!c.decoder_final_norm);
    cr_assert_str_eq(c.weights, "weights/model.safetensors");
    cr_assert_eq(c.tokenizer, TED_TOKENIZER_CHAR);
    cr_assert(c.lowercase);
    cr_assert_str_eq(c.src_vocab, "src.txt");
    cr_assert_str_eq(c.tgt_vocab, "tgt.txt");
    cr_assert_eq(c.unk_id, 3);
    cr_assert_eq(c.pad_id, 0);
    cr_assert_eq(c.bos_id, 1);
    cr_assert_eq(c.eos_id, 2);
    cr_assert(!c.source_bos && !c.source_eos);
    cr_assert_eq(c.max_length, 200);
    cr_assert_eq(c.max_length_offset, 50);
}

Test(config, optional_keys_take_their_defaults)
{
    ted_config c = parse_ok(MINIMAL);
    cr_assert_eq(c.d_model, 512);
    cr_assert_eq(c.heads, 8);
    cr_assert_eq(c.activation, TED_ACTIVATION_RELU);
    cr_assert(!c.norm_first);
    cr_assert_float_eq(c.layer_norm_eps, 1e-5f, 1e-12);
    cr_assert_eq(c.max_positions, 5000);
    cr_assert(c.scale_embedding);
    cr_assert_eq(c.positional_layout, TED_POSITIONS_INTERLEAVED);
    cr_assert(c.encoder_final_norm);
    cr_assert(c.decoder_final_norm);
    cr_assert_str_eq(c.weights, "model.safetensors");
    cr_assert_eq(c.tokenizer, TED_TOKENIZER_WHITESPACE);
    cr_assert(!c.lowercase);
    cr_assert_eq(c.unk_id, 0);
    cr_assert_eq(c.pad_id, 1);
    cr_assert_eq(c.bos_id, 2);
    cr_assert_eq(c.eos_id, 3);
    cr_assert(c.source_bos && c.source_eos);
    cr_assert_eq(c.max_length, 0);
    cr_assert_eq(c.max_length_offset, 0);
    cr_assert_eq(c.beam_size, 1);
    cr_assert_float_eq(c.length_penalty, 0.6f, 0.0);
    cr_assert(!c.sample);
    cr_assert_float_eq(c.temperature, 1.0f, 0.0);
    cr_assert_eq(c.top_k, 0);
    cr_assert_float_eq(c.top_p, 1.0f, 0.0);
    /* the keys Marian models set */
    cr_assert_eq(c.tensor_names, TED_NAMES_TUTORIAL);
    cr_assert_eq(c.attention_projection, TED_PROJECTION_PACKED);
    cr_assert(!c.shared_embeddings && !c.tied_output && c.output_bias);
    cr_assert_str_eq(c.src_spm, "");
    cr_assert_str_eq(c.tgt_spm, "");
    cr_assert_eq(c.normalize, TED_NORMALIZE_NONE);
    cr_assert_eq(c.length_normalization, TED_LENGTH_GNMT);
    cr_assert_eq(c.early_stopping, TED_EARLY_STOPPING_FALSE);  /* transformers' default */
    cr_assert(!c.forced_eos);
    cr_assert_eq(c.banned_id_count, 0);
}

Test(config, flow_style_quoted_keys_and_empty_decoding_are_accepted)
{
    ted_config c = parse_ok(
        "model: {d_model: 8, heads: 2, encoder_layers: 1, decoder_layers: 1, d_ff: 1,\n"
        "        src_vocab_size: 4, tgt_vocab_size: 4}\n"
        "\"weights\": 'w.safetensors'\n"
        "tokenizer: {src_vocab: a, tgt_vocab: a}\n"
        "decoding:\n");
    cr_assert_eq(c.d_model, 8);
    cr_assert_eq(c.src_vocab_size, 4);
    cr_assert_str_eq(c.weights, "w.safetensors");
    cr_assert_eq(c.max_length, 0);
}

Test(config, largest_allowed_sizes_are_accepted)
{
    char *a = replace(MINIMAL, "d_model: 512", "d_model: 65536");
    char *b = replace(a, "heads: 8", "heads: 1024");
    char *c = replace(b, "encoder_layers: 6", "encoder_layers: 256");
    char *d = replace(c, "d_ff: 2048", "d_ff: 1048576");
    char *e = replace(d, "src_vocab_size: 32000", "src_vocab_size: 16777216");
    ted_config config = parse_ok(e);
    cr_assert_eq(config.d_model, 65536);
    cr_assert_eq(config.heads, 1024);
    cr_assert_eq(config.encoder_layers, 256);
    cr_assert_eq(config.d_ff, 1048576);
    cr_assert_eq(config.src_vocab_size, 16777216);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
}

Test(config, heads_must_divide_d_model)
{
    expect_replaced_error("heads: 8", "heads: 3",
                          "config.yaml:3: model.heads: 3 does not divide d_model 512");
}

Test(config, d_model_must_be_even)
{
    char *text = replace(MINIMAL, "d_model: 512", "d_model: 511");
    char *odd = replace(text, "heads: 8", "heads: 7");
    expect_error(odd, "config.yaml:2: model.d_model: 511 is odd; the sinusoidal positional "
                      "encoding pairs each sine with a cosine");
    free(text);
    free(odd);
}

Test(config, unknown_keys_are_refused)
{
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  dff: 1\n",
                          "config.yaml:7: model.dff: unknown key");
    expect_replaced_error("weights:", "extra: 1\nweights:", "config.yaml:9: extra: unknown key");
    /* a model key is not a top-level key */
    expect_replaced_error("weights:", "heads: 8\nweights:", "config.yaml:9: heads: unknown key");
}

Test(config, duplicate_keys_are_refused)
{
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  heads: 8\n",
                          "config.yaml:7: model.heads: duplicate key (first at line 3)");
    char *text = malloc(strlen(MINIMAL) + 64);
    cr_assert_not_null(text);
    sprintf(text, "%sweights: other.safetensors\n", MINIMAL);
    expect_error(text, "config.yaml:13: weights: duplicate key (first at line 9)");
    free(text);
}

Test(config, integers_must_be_plain_decimal_numbers)
{
    expect_replaced_error("d_ff: 2048", "d_ff: big",
                          "config.yaml:6: model.d_ff: expected an integer, got \"big\"");
    expect_replaced_error("d_ff: 2048", "d_ff: \"2048\"",
                          "config.yaml:6: model.d_ff: expected an integer, got \"2048\"");
    expect_replaced_error("d_ff: 2048", "d_ff: 1.5",
                          "config.yaml:6: model.d_ff: expected an integer, got \"1.5\"");
    expect_replaced_error("d_ff: 2048", "d_ff: 0x10",
                          "config.yaml:6: model.d_ff: expected an integer, got \"0x10\"");
    expect_replaced_error("d_ff: 2048", "d_ff:",
                          "config.yaml:6: model.d_ff: expected an integer, got \"\"");
    expect_replaced_error("d_ff: 2048", "d_ff: -x",
                          "config.yaml:6: model.d_ff: expected an integer, got \"-x\"");
    expect_replaced_error("d_ff: 2048", "d_ff: 02048",
                          "config.yaml:6: model.d_ff: 02048: leading zeros are not allowed");
}

Test(config, integers_beyond_int_range_are_refused)
{
    expect_replaced_error("d_ff: 2048", "d_ff: 99999999999999999999999",
                          "config.yaml:6: model.d_ff: 99999999999999999999999 is out of range "
                          "(must be 1 to 1048576)");
    expect_replaced_error("d_model: 512", "d_model: 2147483648",
                          "config.yaml:2: model.d_model: 2147483648 is out of range "
                          "(must be 2 to 65536)");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  max_positions: -2147483649\n",
                          "config.yaml:7: model.max_positions: -2147483649 is out of range "
                          "(must be 1 to 1048576)");
}

Test(config, sizes_must_be_positive)
{
    expect_replaced_error("d_model: 512", "d_model: 0",
                          "config.yaml:2: model.d_model: 0 is out of range (must be 2 to 65536)");
    expect_replaced_error("heads: 8", "heads: 0",
                          "config.yaml:3: model.heads: 0 is out of range (must be 1 to 1024)");
    expect_replaced_error("heads: 8", "heads: -8",
                          "config.yaml:3: model.heads: -8 is out of range (must be 1 to 1024)");
    expect_replaced_error("encoder_layers: 6", "encoder_layers: 0",
                          "config.yaml:4: model.encoder_layers: 0 is out of range "
                          "(must be 1 to 256)");
    expect_replaced_error("decoder_layers: 6", "decoder_layers: -1",
                          "config.yaml:5: model.decoder_layers: -1 is out of range "
                          "(must be 1 to 256)");
    expect_replaced_error("src_vocab_size: 32000", "src_vocab_size: 3",
                          "config.yaml:7: model.src_vocab_size: 3 is out of range "
                          "(must be 4 to 16777216)");
}

Test(config, absurd_sizes_are_refused)
{
    expect_replaced_error("d_model: 512", "d_model: 65538",
                          "config.yaml:2: model.d_model: 65538 is out of range "
                          "(must be 2 to 65536)");
    expect_replaced_error("heads: 8", "heads: 1025",
                          "config.yaml:3: model.heads: 1025 is out of range (must be 1 to 1024)");
    expect_replaced_error("encoder_layers: 6", "encoder_layers: 257",
                          "config.yaml:4: model.encoder_layers: 257 is out of range "
                          "(must be 1 to 256)");
    expect_replaced_error("d_ff: 2048", "d_ff: 1048577",
                          "config.yaml:6: model.d_ff: 1048577 is out of range "
                          "(must be 1 to 1048576)");
    expect_replaced_error("tgt_vocab_size: 32000", "tgt_vocab_size: 16777217",
                          "config.yaml:8: model.tgt_vocab_size: 16777217 is out of range "
                          "(must be 4 to 16777216)");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  max_positions: 1048577\n",
                          "config.yaml:7: model.max_positions: 1048577 is out of range "
                          "(must be 1 to 1048576)");
}

Test(config, decoding_limits_are_bounded)
{
    char *text = malloc(strlen(MINIMAL) + 64);
    cr_assert_not_null(text);
    sprintf(text, "%sdecoding:\n  max_length: -1\n", MINIMAL);
    expect_error(text, "config.yaml:14: decoding.max_length: -1 is out of range "
                       "(must be 0 to 1048576)");
    sprintf(text, "%sdecoding:\n  max_length_offset: 1048577\n", MINIMAL);
    expect_error(text, "config.yaml:14: decoding.max_length_offset: 1048577 is out of range "
                       "(must be 0 to 1048576)");
    sprintf(text, "%sdecoding:\n  max_length_offset: x\n", MINIMAL);
    expect_error(text,
                 "config.yaml:14: decoding.max_length_offset: expected an integer, got \"x\"");
    sprintf(text, "%sdecoding: 5\n", MINIMAL);
    expect_error(text, "config.yaml:13: decoding: expected a mapping of keys");
    free(text);
}

Test(config, decoding_strategy_keys_are_read)
{
    char *text = malloc(strlen(MINIMAL) + 256);
    cr_assert_not_null(text);
    sprintf(text, "%sdecoding:\n  beam_size: 5\n  length_penalty: 1.25\n  temperature: 0.7\n"
                  "  top_k: 40\n  top_p: 0.9\n",
            MINIMAL);
    ted_config c = parse_ok(text);
    cr_assert_eq(c.beam_size, 5);
    cr_assert_float_eq(c.length_penalty, 1.25f, 0.0);
    cr_assert(!c.sample);
    cr_assert_float_eq(c.temperature, 0.7f, 0.0);
    cr_assert_eq(c.top_k, 40);
    cr_assert_float_eq(c.top_p, 0.9f, 0.0);
    sprintf(text, "%sdecoding:\n  sample: true\n  length_penalty: 0\n  top_p: 1\n", MINIMAL);
    c = parse_ok(text);
    cr_assert(c.sample);
    cr_assert_eq(c.beam_size, 1);
    cr_assert_float_eq(c.length_penalty, 0.0f, 0.0);
    cr_assert_float_eq(c.top_p, 1.0f, 0.0);
    sprintf(text, "%sdecoding:\n  beam_size: 1024\n  length_penalty: -0.0\n", MINIMAL);
    c = parse_ok(text);
    cr_assert_eq(c.beam_size, 1024);
    cr_assert(c.length_penalty == 0.0f && !signbit(c.length_penalty));
    free(text);
}

Test(config, decoding_strategy_keys_are_checked)
{
    char *text = malloc(strlen(MINIMAL) + 128);
    cr_assert_not_null(text);
    static const struct {
        const char *keys;
        const char *message;
    } bad[] = {
        {"  beam_size: 0\n", "config.yaml:14: decoding.beam_size: 0 is out of range (must be 1 "
                             "to 1024)"},
        {"  beam_size: 1025\n", "config.yaml:14: decoding.beam_size: 1025 is out of range "
                                "(must be 1 to 1024)"},
        {"  length_penalty: -0.5\n", "config.yaml:14: decoding.length_penalty: -0.5 must be a "
                                     "finite float >= 0"},
        {"  length_penalty: nan\n", "config.yaml:14: decoding.length_penalty: nan must be a "
                                    "finite float >= 0"},
        {"  temperature: 0\n", "config.yaml:14: decoding.temperature: 0 must be a positive "
                               "finite float"},
        {"  top_k: -1\n", "config.yaml:14: decoding.top_k: -1 is out of range (must be 0 to "
                          "16777216)"},
        {"  top_p: 0\n", "config.yaml:14: decoding.top_p: 0 must be a positive finite float"},
        {"  top_p: 1.01\n", "config.yaml:14: decoding.top_p: 1.01 is out of range (must be at "
                            "most 1)"},
        {"  sample: yes\n", "config.yaml:14: decoding.sample: expected true or false, got "
                            "\"yes\""},
        {"  beam_size: 4\n  sample: true\n", "config.yaml:15: decoding.sample: true with "
                                             "beam_size 4; sampling and beam search exclude "
                                             "each other"},
        {"  beam_size: 2\n  n_best: 2\n", "config.yaml:15: decoding.n_best: unknown key"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        sprintf(text, "%sdecoding:\n%s", MINIMAL, bad[k].keys);
        expect_error(text, bad[k].message);
    }
    /* the beam must be smaller than the target vocabulary */
    char *small = replace(MINIMAL, "tgt_vocab_size: 32000", "tgt_vocab_size: 8");
    sprintf(text, "%sdecoding:\n  beam_size: 8\n", small);
    expect_error(text, "config.yaml:14: decoding.beam_size: 8 is not below tgt_vocab_size 8");
    free(small);
    free(text);
}

Test(config, booleans_are_true_or_false)
{
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  norm_first: yes\n",
                          "config.yaml:7: model.norm_first: expected true or false, got \"yes\"");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  norm_first: 1\n",
                          "config.yaml:7: model.norm_first: expected true or false, got \"1\"");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  norm_first: \"true\"\n",
                          "config.yaml:7: model.norm_first: expected true or false, got \"true\"");
}

Test(config, layer_norm_eps_must_be_positive_and_finite)
{
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: 0\n",
                          "config.yaml:7: model.layer_norm_eps: 0 must be a positive finite float");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: -1e-5\n",
                          "config.yaml:7: model.layer_norm_eps: -1e-5 must be a positive "
                          "finite float");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: nan\n",
                          "config.yaml:7: model.layer_norm_eps: nan must be a positive "
                          "finite float");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: 1e300\n",
                          "config.yaml:7: model.layer_norm_eps: 1e300 must be a positive "
                          "finite float");
    /* too small for a float: it would become 0 */
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: 1e-60\n",
                          "config.yaml:7: model.layer_norm_eps: 1e-60 must be a positive "
                          "finite float");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: .inf\n",
                          "config.yaml:7: model.layer_norm_eps: expected a number, got \".inf\"");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: 1e-5x\n",
                          "config.yaml:7: model.layer_norm_eps: expected a number, got \"1e-5x\"");
}

Test(config, choices_name_the_allowed_words)
{
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  activation: swish\n",
                          "config.yaml:7: model.activation: \"swish\" is not one of relu, gelu, "
                          "silu, gelu_tanh");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  positional_encoding: rotary\n",
                          "config.yaml:7: model.positional_encoding: \"rotary\" is not one of "
                          "interleaved, concatenated, fairseq, learned, relative, marian");
    expect_replaced_error("tokenizer:\n", "tokenizer:\n  type: wordpiece\n",
                          "config.yaml:11: tokenizer.type: \"wordpiece\" is not one of "
                          "whitespace, char, sentencepiece, bpe");
}

Test(config, paths_must_stay_inside_the_model_directory)
{
    expect_replaced_error("weights: model.safetensors", "weights: \"\"",
                          "config.yaml:9: weights: \"\": the path is empty");
    expect_replaced_error("weights: model.safetensors", "weights: /etc/passwd",
                          "config.yaml:9: weights: \"/etc/passwd\": the path must be relative "
                          "to the model directory");
    expect_replaced_error("weights: model.safetensors", "weights: ../model.safetensors",
                          "config.yaml:9: weights: \"../model.safetensors\": the path must not "
                          "contain \"..\"");
    expect_replaced_error("src_vocab: vocab.src", "src_vocab: a/../../b",
                          "config.yaml:11: tokenizer.src_vocab: \"a/../../b\": the path must "
                          "not contain \"..\"");
    expect_replaced_error("tgt_vocab: vocab.tgt", "tgt_vocab: a/..",
                          "config.yaml:12: tokenizer.tgt_vocab: \"a/..\": the path must not "
                          "contain \"..\"");
    expect_replaced_error("weights: model.safetensors", "weights: \"a\\0b\"",
                          "config.yaml:9: weights: \"a\": the path contains a NUL byte");
}

Test(config, dots_inside_a_name_are_not_a_parent_directory)
{
    char *text = replace(MINIMAL, "weights: model.safetensors", "weights: ..hidden/x..y");
    ted_config c = parse_ok(text);
    cr_assert_str_eq(c.weights, "..hidden/x..y");
    free(text);
}

Test(config, paths_must_fit_the_config_field)
{
    char longest[TED_CONFIG_PATH_SIZE + 16];
    memset(longest, 'a', TED_CONFIG_PATH_SIZE - 1);
    strcpy(longest + TED_CONFIG_PATH_SIZE - 1, "");
    char line[TED_CONFIG_PATH_SIZE + 32];
    snprintf(line, sizeof line, "weights: %s", longest);
    char *text = replace(MINIMAL, "weights: model.safetensors", line);
    ted_config c = parse_ok(text);
    cr_assert_eq(strlen(c.weights), TED_CONFIG_PATH_SIZE - 1);
    free(text);

    strcat(longest, "b");
    snprintf(line, sizeof line, "weights: %s", longest);
    text = replace(MINIMAL, "weights: model.safetensors", line);
    ted_config unused;
    ted_error err = {0};
    cr_assert_eq(parse(text, &unused, &err), TED_ERR_CONFIG);
    cr_assert(strncmp(err.message, "config.yaml:9: weights: \"aaaa", 29) == 0, "%s", err.message);
    cr_assert(strstr(err.message, "\": the path is too long"), "%s", err.message);
    free(text);
}

Test(config, special_ids_must_differ)
{
    expect_replaced_error("tokenizer:\n", "tokenizer:\n  eos_id: 2\n",
                          "config.yaml:11: tokenizer.eos_id: 2 is also bos_id; the special ids "
                          "must differ");
    /* the clash is named on the key the file sets, not on the default */
    expect_replaced_error("tokenizer:\n", "tokenizer:\n  unk_id: 3\n",
                          "config.yaml:11: tokenizer.unk_id: 3 is also eos_id; the special ids "
                          "must differ");
}

Test(config, special_ids_must_be_in_both_vocabularies)
{
    expect_replaced_error("tokenizer:\n", "tokenizer:\n  unk_id: -1\n",
                          "config.yaml:11: tokenizer.unk_id: -1 is out of range (must be >= 0)");
    char *small = replace(MINIMAL, "tgt_vocab_size: 32000", "tgt_vocab_size: 10");
    char *text = replace(small, "tokenizer:\n", "tokenizer:\n  pad_id: 10\n");
    expect_error(text, "config.yaml:11: tokenizer.pad_id: 10 is not below tgt_vocab_size 10");
    free(text);
    expect_replaced_error("tokenizer:\n", "tokenizer:\n  bos_id: 32000\n",
                          "config.yaml:11: tokenizer.bos_id: 32000 is not below "
                          "src_vocab_size 32000");
    free(small);
}

Test(config, missing_required_keys_are_named)
{
    expect_replaced_error("  heads: 8\n", "",
                          "config.yaml:1: model.heads: missing required key");
    expect_replaced_error("weights: model.safetensors\n", "",
                          "config.yaml:1: weights: missing required key");
    expect_replaced_error("  tgt_vocab: vocab.tgt\n", "",
                          "config.yaml:10: tokenizer.tgt_vocab: missing required key");
    expect_error("weights: w\n", "config.yaml:1: model: missing required key");
    expect_replaced_error("tokenizer:\n  src_vocab: vocab.src\n  tgt_vocab: vocab.tgt\n", "",
                          "config.yaml:1: tokenizer: missing required key");
    expect_replaced_error("tokenizer:\n  src_vocab: vocab.src\n  tgt_vocab: vocab.tgt\n",
                          "tokenizer:\n",
                          "config.yaml:10: tokenizer.src_vocab: missing required key");
}

Test(config, values_of_the_wrong_shape_are_refused)
{
    expect_replaced_error("d_model: 512", "d_model: [512]",
                          "config.yaml:2: model.d_model: expected a single value, got a list");
    expect_replaced_error("weights: model.safetensors", "weights: {a: b}",
                          "config.yaml:9: weights: expected a single value, got a mapping");
    expect_replaced_error("model:\n", "model: 5\nx:\n",
                          "config.yaml:1: model: expected a mapping of keys");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  ? [a]\n  : 1\n",
                          "config.yaml:7: model: expected a key name, got a list");
}

Test(config, document_must_be_one_mapping)
{
    expect_error("", "config.yaml:1: empty document");
    expect_error("# nothing but a comment\n\n", "config.yaml:1: empty document");
    expect_error("- model\n- weights\n", "config.yaml:1: the top level must be a mapping of keys");
    expect_error("\n\njust text\n", "config.yaml:3: the top level must be a mapping of keys");
    char *text = malloc(strlen(MINIMAL) + 64);
    cr_assert_not_null(text);
    sprintf(text, "%s---\nmodel: {}\n", MINIMAL);
    expect_error(text, "config.yaml:13: a config holds one YAML document, not several");
    free(text);
}

Test(config, yaml_syntax_errors_give_the_line)
{
    expect_replaced_error("heads: 8", "heads: 8: 9",
                          "config.yaml:3: YAML syntax error: mapping values are not allowed "
                          "in this context");
    expect_replaced_error("d_ff: 2048", "d_ff: [2048",
                          "config.yaml:7: YAML syntax error: did not find expected ',' or ']' "
                          "while parsing a flow sequence");
    expect_replaced_error("d_ff: 2048", "d_ff: *nowhere",
                          "config.yaml:6: YAML syntax error: found undefined alias");
}

Test(config, encoding_errors_give_the_line)
{
    expect_replaced_error("heads: 8", "heads: \xff",
                          "config.yaml:3: YAML syntax error: invalid leading UTF-8 octet");
    char *text = malloc(strlen(MINIMAL) + 1);
    cr_assert_not_null(text);
    strcpy(text, MINIMAL);
    text[strlen("model:\n  d_model: 512\n  hea")] = '\0';
    ted_config config;
    ted_error err = {0};
    cr_assert_eq(ted_config_parse(text, strlen(MINIMAL), NAME, &config, &err), TED_ERR_CONFIG);
    cr_assert_str_eq(err.message,
                     "config.yaml:3: YAML syntax error: control characters are not allowed");
    free(text);
}

/* Deep nesting and aliases are the classic ways to make a YAML reader
 * blow its stack, its memory or its time; all must end in a plain error. */
Test(config, hostile_documents_fail_cleanly, .timeout = 10)
{
    size_t depth = 1000000;
    char *deep = malloc(depth + 16);
    cr_assert_not_null(deep);
    memcpy(deep, "model: ", 7);
    memset(deep + 7, '[', depth);
    deep[7 + depth] = '\0';
    expect_error(deep, "config.yaml:1: nested deeper than 8 levels");
    memset(deep + 7, '{', depth);
    expect_error(deep, "config.yaml:1: nested deeper than 8 levels");
    free(deep);
    expect_error("a:\n b:\n  c:\n   d:\n    e:\n     f:\n      g:\n       h:\n        i: 1\n",
                 "config.yaml:9: nested deeper than 8 levels");

    expect_error("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                 "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                 "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                 "d: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
                 "config.yaml:1: a: unknown key");
    expect_error("model: &m {d_model: *m}\n",
                 "config.yaml:1: model.d_model: expected a single value, got a mapping");
}

Test(config, oversized_text_is_not_a_config)
{
    size_t size = 1024 * 1024 + 1;
    char *text = malloc(size);
    cr_assert_not_null(text);
    memset(text, '#', size);
    ted_config config;
    ted_error err = {0};
    cr_assert_eq(ted_config_parse(text, size, NAME, &config, &err), TED_ERR_CONFIG);
    cr_assert_str_eq(err.message, "config.yaml: 1048577 bytes is larger than 1 MiB; "
                                  "not a config file");
    free(text);
}

#define TEMP_FILE_NAME "config.yaml"
#include "temp_file.h"

Test(config, load_reads_a_file, .init = make_temp_dir, .fini = remove_temp_dir)
{
    write_temp_file(MINIMAL, strlen(MINIMAL));
    ted_config c;
    ted_error err = {0};
    cr_assert_eq(ted_config_load(temp_path, &c, &err), TED_OK, "%s", err.message);
    cr_assert_eq(c.d_model, 512);
    cr_assert_str_eq(c.tgt_vocab, "vocab.tgt");
}

Test(config, load_names_the_file_in_messages, .init = make_temp_dir, .fini = remove_temp_dir)
{
    char *text = replace(MINIMAL, "heads: 8", "heads: 5");
    write_temp_file(text, strlen(text));
    free(text);
    ted_config c;
    ted_error err = {0};
    cr_assert_eq(ted_config_load(temp_path, &c, &err), TED_ERR_CONFIG);
    char expected[256];
    snprintf(expected, sizeof expected, "%s:3: model.heads: 5 does not divide d_model 512",
             temp_path);
    cr_assert_str_eq(err.message, expected);
}

Test(config, load_refuses_missing_files_and_directories, .init = make_temp_dir,
     .fini = remove_temp_dir)
{
    ted_config c;
    ted_error err = {0};
    char expected[256];
    cr_assert_eq(ted_config_load(temp_path, &c, &err), TED_ERR_IO);
    snprintf(expected, sizeof expected, "%s: cannot open: No such file or directory", temp_path);
    cr_assert_str_eq(err.message, expected);
    cr_assert_eq(ted_config_load(temp_dir, &c, &err), TED_ERR_IO);
    snprintf(expected, sizeof expected, "%s: not a regular file", temp_dir);
    cr_assert_str_eq(err.message, expected);
}

Test(config, load_refuses_files_over_one_mebibyte, .init = make_temp_dir,
     .fini = remove_temp_dir)
{
    write_temp_file("", 0);
    cr_assert_eq(truncate(temp_path, 1024 * 1024 + 1), 0);
    ted_config c;
    ted_error err = {0};
    cr_assert_eq(ted_config_load(temp_path, &c, &err), TED_ERR_CONFIG);
    char expected[256];
    snprintf(expected, sizeof expected, "%s: 1048577 bytes is larger than 1 MiB; "
             "not a config file", temp_path);
    cr_assert_str_eq(err.message, expected);
}

Test(config, load_of_an_empty_file_is_an_empty_document, .init = make_temp_dir,
     .fini = remove_temp_dir)
{
    write_temp_file("", 0);
    ted_config c;
    ted_error err = {0};
    cr_assert_eq(ted_config_load(temp_path, &c, &err), TED_ERR_CONFIG);
    char expected[256];
    snprintf(expected, sizeof expected, "%s:1: empty document", temp_path);
    cr_assert_str_eq(err.message, expected);
}

/* ---- decoding.banned_ids, tokenizer.normalize, length_normalization ---- */

/* MINIMAL followed by `decoding`, the text of a decoding section. */
static ted_config parse_decoding(const char *decoding)
{
    char *text = malloc(strlen(MINIMAL) + strlen(decoding) + 16);
    cr_assert_not_null(text);
    sprintf(text, "%sdecoding:\n%s", MINIMAL, decoding);
    ted_config c = parse_ok(text);
    free(text);
    return c;
}

static void expect_decoding_error(const char *decoding, const char *message)
{
    char *text = malloc(strlen(MINIMAL) + strlen(decoding) + 16);
    cr_assert_not_null(text);
    sprintf(text, "%sdecoding:\n%s", MINIMAL, decoding);
    expect_error(text, message);
    free(text);
}

Test(config, banned_ids_are_read_in_flow_and_block_style)
{
    ted_config c = parse_decoding("  banned_ids: [31999, 0, 7]\n");
    cr_assert_eq(c.banned_id_count, 3);
    cr_assert_eq(c.banned_ids[0], 31999);
    cr_assert_eq(c.banned_ids[1], 0);
    cr_assert_eq(c.banned_ids[2], 7);
    c = parse_decoding("  banned_ids:\n    - 5\n    - !!int 6\n  beam_size: 4\n");
    cr_assert_eq(c.banned_id_count, 2);
    cr_assert_eq(c.banned_ids[0], 5);
    cr_assert_eq(c.banned_ids[1], 6);
    cr_assert_eq(c.beam_size, 4);
    c = parse_decoding("  banned_ids: []\n");
    cr_assert_eq(c.banned_id_count, 0);
    c = parse_decoding("  banned_ids:\n  #  - 5\n");
    cr_assert_eq(c.banned_id_count, 0);
    c = parse_decoding("  banned_ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n");
    cr_assert_eq(c.banned_id_count, 16);
    cr_assert_eq(c.banned_ids[15], 16);
}

Test(config, banned_ids_must_be_target_ids)
{
    expect_decoding_error("  banned_ids: [5, 32000]\n",
                          "config.yaml:14: decoding.banned_ids: 32000 is not below "
                          "tgt_vocab_size 32000");
    expect_decoding_error("  banned_ids:\n    - 5\n    - -1\n",
                          "config.yaml:16: decoding.banned_ids: -1 is out of range "
                          "(must be >= 0)");
    expect_decoding_error("  banned_ids: [5, x]\n",
                          "config.yaml:14: decoding.banned_ids: expected an integer, got \"x\"");
    expect_decoding_error("  banned_ids: [5, \"6\"]\n",
                          "config.yaml:14: decoding.banned_ids: expected an integer, got \"6\"");
    expect_decoding_error("  banned_ids: [5, [6]]\n",
                          "config.yaml:14: decoding.banned_ids: expected an integer, got a list");
    expect_decoding_error("  banned_ids: 5\n",
                          "config.yaml:14: decoding.banned_ids: expected a list of integers, "
                          "got \"5\"");
    expect_decoding_error("  banned_ids: {a: 5}\n",
                          "config.yaml:14: decoding.banned_ids: expected a list of integers, "
                          "got a mapping");
}

Test(config, at_most_sixteen_banned_ids)
{
    cr_assert_eq(TED_MAX_BANNED_IDS, 16);
    expect_decoding_error("  banned_ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, "
                          "17]\n",
                          "config.yaml:14: decoding.banned_ids: at most 16 values are allowed, "
                          "got 17");
}

Test(config, normalize_and_length_normalization_are_words)
{
    char *text = replace(MINIMAL, "tokenizer:\n", "tokenizer:\n  normalize: moses\n");
    ted_config c = parse_ok(text);
    cr_assert_eq(c.normalize, TED_NORMALIZE_MOSES);
    free(text);
    c = parse_decoding("  length_normalization: power\n");
    cr_assert_eq(c.length_normalization, TED_LENGTH_POWER);
    expect_replaced_error("tokenizer:\n", "tokenizer:\n  normalize: nfkc\n",
                          "config.yaml:11: tokenizer.normalize: \"nfkc\" is not one of none, "
                          "moses");
    expect_decoding_error("  length_normalization: average\n",
                          "config.yaml:14: decoding.length_normalization: \"average\" is not "
                          "one of gnmt, power");
}

Test(config, early_stopping_is_a_word_forced_eos_a_bool)
{
    static const struct {
        const char *word;
        ted_early_stopping value;
    } words[] = {{"false", TED_EARLY_STOPPING_FALSE},
                 {"true", TED_EARLY_STOPPING_TRUE},
                 {"never", TED_EARLY_STOPPING_NEVER},
                 {"marian", TED_EARLY_STOPPING_MARIAN}};
    char line[64];
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        snprintf(line, sizeof line, "  early_stopping: %s\n", words[i].word);
        cr_assert_eq(parse_decoding(line).early_stopping, words[i].value, "%s", words[i].word);
    }
    cr_assert(parse_decoding("  forced_eos: true\n").forced_eos);
    expect_decoding_error("  early_stopping: sometimes\n",
                          "config.yaml:14: decoding.early_stopping: \"sometimes\" is not one of "
                          "false, true, never, marian");
    expect_decoding_error("  forced_eos: 0\n",
                          "config.yaml:14: decoding.forced_eos: expected true or false, got "
                          "\"0\"");
}

/* ---- explicit tags --------------------------------------------------------- */

Test(config, a_tag_of_another_type_is_refused)
{
    expect_replaced_error("d_model: 512", "d_model: !!str 512",
                          "config.yaml:2: model.d_model: expected an integer, got \"512\" "
                          "tagged !!str");
    expect_replaced_error("d_model: 512", "d_model: !!float 512",
                          "config.yaml:2: model.d_model: expected an integer, got \"512\" "
                          "tagged !!float");
    expect_replaced_error("d_model: 512", "d_model: !local 512",
                          "config.yaml:2: model.d_model: expected an integer, got \"512\" "
                          "tagged !local");
    /* an alias has the tag of its anchor */
    expect_replaced_error("d_model: 512\n  heads: 8", "d_model: &d !!str 512\n  heads: *d",
                          "config.yaml:2: model.d_model: expected an integer, got \"512\" "
                          "tagged !!str");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  norm_first: !!str true\n",
                          "config.yaml:7: model.norm_first: expected true or false, got "
                          "\"true\" tagged !!str");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: !!str 1e-5\n",
                          "config.yaml:7: model.layer_norm_eps: expected a number, got "
                          "\"1e-5\" tagged !!str");
    expect_replaced_error("weights: model.safetensors", "weights: !!int 5",
                          "config.yaml:9: weights: expected a path, got \"5\" tagged !!int");
    expect_decoding_error("  banned_ids: [5, !!str 6]\n",
                          "config.yaml:14: decoding.banned_ids: expected an integer, got \"6\" "
                          "tagged !!str");
}

Test(config, the_tag_of_the_expected_type_is_accepted)
{
    char *a = replace(MINIMAL, "d_model: 512", "d_model: !!int 512");
    char *b = replace(a, "weights: model.safetensors", "weights: !!str model.safetensors");
    char *c = replace(b, "tokenizer:\n", "tokenizer:\n  lowercase: !!bool true\n"
                                         "  type: !<tag:yaml.org,2002:str> char\n");
    char *d = replace(c, "  d_ff: 2048\n", "  d_ff: 2048\n  layer_norm_eps: !!float 1e-6\n");
    ted_config config = parse_ok(d);
    cr_assert_eq(config.d_model, 512);
    cr_assert_str_eq(config.weights, "model.safetensors");
    cr_assert(config.lowercase);
    cr_assert_eq(config.tokenizer, TED_TOKENIZER_CHAR);
    cr_assert_float_eq(config.layer_norm_eps, 1e-6f, 0.0);
    free(a);
    free(b);
    free(c);
    free(d);
}

/* ---- the key table --------------------------------------------------------- */

Test(config, keys_are_named_dotted)
{
    int count = ted_config_key_count();
    cr_assert_gt(count, 40);
    char name[64];
    ted_error err = {0};
    cr_assert_eq(ted_config_key_name(0, name, sizeof name, &err), TED_OK);
    cr_assert_str_eq(name, "model");
    cr_assert_eq(ted_config_key_name(1, name, sizeof name, &err), TED_OK);
    cr_assert_str_eq(name, "model.d_model");
    cr_assert_eq(ted_config_key_name(count - 1, name, sizeof name, &err), TED_OK);
    cr_assert_str_eq(name, "languages");
    cr_assert_eq(ted_config_key_name(count, name, sizeof name, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_config_key_name(1, name, 13, &err), TED_ERR_ARGUMENT);
    cr_assert_str_eq(err.message, "ted_config_key_name: model.d_model needs 14 bytes");
}

/* docs/model-format.md, read from the repository root (where the tests run):
 * its "## config.yaml" part, up to the next "## " heading. */
static char *read_config_docs(void)
{
    FILE *file = fopen("docs/model-format.md", "rb");
    cr_assert_not_null(file, "docs/model-format.md: cannot open (run from the repository root)");
    static char text[256 * 1024];
    size_t n = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[n] = '\0';
    char *start = strstr(text, "\n## config.yaml\n");
    cr_assert_not_null(start, "docs/model-format.md has no \"## config.yaml\" part");
    char *end = strstr(start + 1, "\n## ");
    if (end)
        end[1] = '\0';
    return start + 1;
}

typedef struct documented_keys {
    char names[128][64];
    int count;
    char headings[32][64];
    int heading_count;
} documented_keys;

/* Whether `name` is a key of config.yaml ("model.heads"), or the section
 * of some ("model"). */
static bool is_key_or_section(const char *name, bool section)
{
    char key[64];
    size_t length = strlen(name);
    for (int i = 0; i < ted_config_key_count(); i++) {
        cr_assert_eq(ted_config_key_name(i, key, sizeof key, NULL), TED_OK);
        bool match = section ? strncmp(key, name, length) == 0 && key[length] == '.'
                             : strcmp(key, name) == 0;
        if (match)
            return true;
    }
    return false;
}

static bool is_key(const char *name) { return is_key_or_section(name, false); }

static bool is_section(const char *name) { return is_key_or_section(name, true); }

/* A row of a key table, "| `heads` | int | ...", under "### model" is
 * model.heads; under a heading that is no section ("### weights"), a
 * top-level key. Key tables are those whose header row is "| key | ...". */
static void read_key_row(documented_keys *d, const char *line, const char *heading)
{
    const char *name = line + strlen("| `");
    size_t length = strcspn(name, "`");
    cr_assert_lt(length, 40, "docs/model-format.md: no key name in: %.60s", line);
    cr_assert_lt(d->count, 128);
    bool in_section = is_section(heading);  /* so shorter than a key name */
    snprintf(d->names[d->count++], 64, "%.23s%s%.*s", in_section ? heading : "",
             in_section ? "." : "", (int)length, name);
}

static documented_keys documented_config_keys(void)
{
    documented_keys d = {.count = 0};
    char heading[64] = "";
    bool in_key_table = false;
    for (char *line = read_config_docs(); line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strncmp(line, "### ", 4) == 0) {
            snprintf(heading, sizeof heading, "%s", line + 4);
            cr_assert_lt(d.heading_count, 32);
            snprintf(d.headings[d.heading_count++], 64, "%s", heading);
        }
        if (strncmp(line, "| key |", 7) == 0)
            in_key_table = true;
        else if (line[0] != '|')
            in_key_table = false;
        else if (in_key_table && strncmp(line, "| `", 3) == 0)
            read_key_row(&d, line, heading);
        line = next;
    }
    return d;
}

static bool listed(const char (*names)[64], int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

Test(config, every_key_is_documented)
{
    documented_keys d = documented_config_keys();
    cr_assert_gt(d.count, 0, "docs/model-format.md: no key table found");
    char name[64];
    for (int i = 0; i < ted_config_key_count(); i++) {
        cr_assert_eq(ted_config_key_name(i, name, sizeof name, NULL), TED_OK);
        if (!is_section(name))
            cr_expect(listed(d.names, d.count, name),
                      "%s is a config key, but docs/model-format.md has no row for it", name);
        else
            cr_expect(listed(d.headings, d.heading_count, name),
                      "%s is a config section, but docs/model-format.md has no \"### %s\"",
                      name, name);
    }
}

Test(config, every_documented_key_exists)
{
    documented_keys d = documented_config_keys();
    for (int i = 0; i < d.count; i++)
        cr_expect(is_key(d.names[i]),
                  "docs/model-format.md documents %s, which is no config key", d.names[i]);
}

/* ---- the language keys of tokenizer ---------------------------------------- */

/* MINIMAL with `lines` added to its tokenizer section (from line 13). */
static char *with_tokenizer_lines(const char *lines)
{
    char *text = malloc(strlen(MINIMAL) + strlen(lines) + 1);
    cr_assert_not_null(text);
    sprintf(text, "%s%s", MINIMAL, lines);
    return text;
}

Test(config, language_codes_are_read_as_the_model_spells_them)
{
    char *text = with_tokenizer_lines("  languages: [eng_Latn, \">>fra<<\", __fr__]\n"
                                      "  source_language_token: first\n"
                                      "  target_language_token: forced\n"
                                      "  decoder_start_id: 3\n");
    ted_config c = parse_ok(text);
    free(text);
    cr_assert_eq(c.language_count, 3);
    cr_assert_eq(memcmp(c.languages, "eng_Latn\0>>fra<<\0__fr__\0", 25), 0);
    cr_assert_eq(c.source_language_token, TED_SOURCE_CODE_FIRST);
    cr_assert_eq(c.target_language_token, TED_TARGET_CODE_FORCED);
    cr_assert_eq(c.decoder_start_id, 3);
    text = with_tokenizer_lines("  languages:\n    - en_XX\n  source_language_token: last\n"
                                "  target_lang: fr\n");
    c = parse_ok(text);
    free(text);
    cr_assert_eq(c.language_count, 1);
    cr_assert_str_eq(c.languages, "en_XX");
    cr_assert_eq(c.source_language_token, TED_SOURCE_CODE_LAST);
    cr_assert_eq(c.target_language_token, TED_TARGET_CODE_NONE);
    cr_assert_str_eq(c.target_lang, "fr");
    cr_assert_str_eq(c.source_lang, "");
}

static void expect_tokenizer_error(const char *lines, const char *message);
static char *written(const ted_config *config);

/* MINIMAL naming three languages, with `lines` after it (line 17 on). */
#define THREE_LANGUAGES                                        \
    "  languages: [eng_Latn, fra_Latn, spa_Latn]\n"             \
    "  source_language_token: first\n"                          \
    "  target_language_token: forced\n"                         \
    "  default_target_lang: fra_Latn\n"

Test(config, the_languages_translated_are_codes_and_directions)
{
    char *text = with_tokenizer_lines(THREE_LANGUAGES
                                      "languages:\n  - spa_Latn\n  - eng_Latn > fra_Latn\n"
                                      "  - ' fra_Latn\t>  eng_Latn '\n");
    ted_config c = parse_ok(text);
    free(text);
    cr_assert_eq(c.served_language_count, 3);
    cr_assert_eq(memcmp(c.served_languages,
                        "spa_Latn\0eng_Latn > fra_Latn\0fra_Latn > eng_Latn\0", 50), 0);
    char *yaml = written(&c);
    ted_config again = parse_ok(yaml);
    free(yaml);
    cr_assert_eq(again.served_language_count, 3);
    cr_assert_eq(memcmp(again.served_languages, c.served_languages, 50), 0);
}

Test(config, the_languages_translated_are_checked)
{
    static const struct {
        const char *lines, *message;
    } cases[] = {
        {"languages: [eng_Latn > deu_Latn]\n", "config.yaml:17: languages: \"deu_Latn\" is no "
         "code of tokenizer.languages, nor source_lang or target_lang"},
        {"languages: [eng_Latn>fra_Latn]\n", "config.yaml:17: languages: \"eng_Latn>fra_Latn\" "
         "is no code of tokenizer.languages, nor source_lang or target_lang"},
        {"languages: [eng_Latn, eng_Latn]\n", "config.yaml:17: languages: \"eng_Latn\" is "
         "listed twice"},
        {"languages: [eng_Latn > eng_Latn]\n", "config.yaml:17: languages: \"eng_Latn > "
         "eng_Latn\": a direction goes from one language into another"},
        {"languages: [eng_Latn > fra_Latn > spa_Latn]\n", "config.yaml:17: languages: "
         "\"eng_Latn > fra_Latn > spa_Latn\": expected a language code or a direction, "
         "\"SOURCE > TARGET\""},
        {"languages: [eng_Latn < fra_Latn]\n", "config.yaml:17: languages: \"eng_Latn < "
         "fra_Latn\": expected a language code or a direction, \"SOURCE > TARGET\""},
        {"languages: []\n", "config.yaml:17: languages: names no language; without the key "
         "the model translates between every code of tokenizer.languages"},
        {"languages: [eng_Latn > spa_Latn]\n", "config.yaml:16: tokenizer.default_target_lang: "
         "\"fra_Latn\" is no target of the top-level languages"},
        {"languages: {eng_Latn: fra_Latn}\n", "config.yaml:17: languages: expected a list of "
         "language codes, got a mapping"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char lines[512];
        snprintf(lines, sizeof lines, "%s%s", THREE_LANGUAGES, cases[i].lines);
        expect_tokenizer_error(lines, cases[i].message);
    }
}

Test(config, the_decoder_starts_from_bos_unless_the_config_says)
{
    ted_config c = parse_ok(MINIMAL);
    cr_assert_eq(c.decoder_start_id, c.bos_id);
    char *text = with_tokenizer_lines("  bos_id: 7\n");
    c = parse_ok(text);
    free(text);
    cr_assert_eq(c.decoder_start_id, 7);
}

static void expect_tokenizer_error(const char *lines, const char *message)
{
    char *text = with_tokenizer_lines(lines);
    expect_error(text, message);
    free(text);
}

Test(config, language_keys_are_checked)
{
    expect_tokenizer_error("  languages: [a, a]\n  source_language_token: first\n",
                           "config.yaml:13: tokenizer.languages: \"a\" is listed twice");
    expect_tokenizer_error("  languages: [a, 'b c']\n",
                           "config.yaml:13: tokenizer.languages: \"b c\": a language code "
                           "holds no spaces or control characters");
    expect_tokenizer_error("  languages: ['']\n",
                           "config.yaml:13: tokenizer.languages: \"\": a language code must "
                           "not be empty");
    expect_tokenizer_error("  languages: en\n",
                           "config.yaml:13: tokenizer.languages: expected a list of language "
                           "codes, got \"en\"");
    expect_tokenizer_error("  languages: [[en]]\n",
                           "config.yaml:13: tokenizer.languages: expected a language code, "
                           "got a list");
    expect_tokenizer_error("  languages: [en, fr]\n",
                           "config.yaml:13: tokenizer.languages: 2 codes, but "
                           "source_language_token and target_language_token are none: no "
                           "token of the text names a language");
    expect_tokenizer_error("  target_language_token: forced\n",
                           "config.yaml:13: tokenizer.target_language_token: forced, but "
                           "tokenizer.languages names no codes");
    expect_tokenizer_error("  source_language_token: middle\n",
                           "config.yaml:13: tokenizer.source_language_token: \"middle\" is "
                           "not one of none, first, last");
    expect_tokenizer_error("  decoder_start_id: 32000\n",
                           "config.yaml:13: tokenizer.decoder_start_id: 32000 is not below "
                           "tgt_vocab_size 32000");
    expect_tokenizer_error("  source_lang: [en]\n",
                           "config.yaml:13: tokenizer.source_lang: expected a single value, "
                           "got a list");
    expect_tokenizer_error("  target_lang: \"f r\"\n",
                           "config.yaml:13: tokenizer.target_lang: \"f r\": a language code "
                           "holds no spaces or control characters");
    expect_tokenizer_error("  languages: [t8, t9]\n  source_language_token: first\n"
                           "  default_target_lang: t8\n",
                           "config.yaml:15: tokenizer.default_target_lang: \"t8\", but "
                           "target_language_token is not forced");
    expect_tokenizer_error("  languages: [t8, t9]\n  target_language_token: forced\n"
                           "  default_target_lang: t7\n",
                           "config.yaml:15: tokenizer.default_target_lang: \"t7\" is not a "
                           "code of tokenizer.languages");
}

Test(config, language_codes_fill_at_most_their_field)
{
    /* 2000 codes of 9 bytes with their NULs: more than TED_LANGUAGES_SIZE */
    size_t size = 2000 * 12 + 64;
    char *lines = malloc(size);
    cr_assert_not_null(lines);
    size_t at = (size_t)sprintf(lines, "  languages: [");
    for (int i = 0; i < 2000; i++)
        at += (size_t)sprintf(lines + at, "%sxx_%05d", i ? ", " : "", i);
    sprintf(lines + at, "]\n  source_language_token: first\n");
    char message[128];
    snprintf(message, sizeof message,
             "config.yaml:13: tokenizer.languages: the codes take more than %d bytes",
             TED_LANGUAGES_SIZE);
    expect_tokenizer_error(lines, message);
    free(lines);
}

/* ---- ted_config_write_yaml -------------------------------------------------- */

/* What MINIMAL is with every default spelled out: Transformer-base as
 * docs/model-format.md shows it. */
static const char minimal_written[] =
    "model:\n"
    "  d_model: 512\n"
    "  heads: 8\n"
    "  head_size: 0\n"
    "  encoder_layers: 6\n"
    "  decoder_layers: 6\n"
    "  d_ff: 2048\n"
    "  src_vocab_size: 32000\n"
    "  tgt_vocab_size: 32000\n"
    "  activation: relu\n"
    "  feed_forward: plain\n"
    "  linear_bias: true\n"
    "  scale_attention: true\n"
    "  norm: layer\n"
    "  norm_first: false\n"
    "  layer_norm_eps: 1.0e-05\n"
    "  max_positions: 5000\n"
    "  scale_embedding: true\n"
    "  positional_encoding: interleaved\n"
    "  position_offset: 0\n"
    "  relative_buckets: 32\n"
    "  relative_max_distance: 128\n"
    "  embedding_norm: false\n"
    "  encoder_final_norm: true\n"
    "  decoder_final_norm: true\n"
    "  tensor_names: tutorial\n"
    "  attention_projection: packed\n"
    "  shared_embeddings: false\n"
    "  tied_output: false\n"
    "  output_bias: true\n"
    "  scale_output: false\n"
    "  decoder_layer: self-attention\n"
    "  zero_start_embedding: false\n"
    "weights: model.safetensors\n"
    "tokenizer:\n"
    "  type: whitespace\n"
    "  lowercase: false\n"
    "  normalize: none\n"
    "  source_language: none\n"
    "  src_vocab: vocab.src\n"
    "  tgt_vocab: vocab.tgt\n"
    "  add_prefix_space: false\n"
    "  clean_up_text: true\n"
    "  unk_id: 0\n"
    "  pad_id: 1\n"
    "  bos_id: 2\n"
    "  eos_id: 3\n"
    "  source_bos: true\n"
    "  source_eos: true\n"
    "  source_language_token: none\n"
    "  target_language_token: none\n"
    "  decoder_start_id: 2\n"
    "  forced_bos_id: -1\n"
    "decoding:\n"
    "  max_length: 0\n"
    "  max_length_offset: 0\n"
    "  max_length_factor: 0.0\n"
    "  beam_size: 1\n"
    "  length_penalty: 0.6\n"
    "  length_normalization: gnmt\n"
    "  early_stopping: false\n"
    "  forced_eos: false\n"
    "  banned_ids: []\n"
    "  sample: false\n"
    "  temperature: 1.0\n"
    "  top_k: 0\n"
    "  top_p: 1.0\n"
    "  repetition_penalty: 1.0\n"
    "  no_repeat_ngram_size: 0\n"
    "  encoder_no_repeat_ngram_size: 0\n"
    "  min_length: 0\n";

/* Every key set away from its default; paths YAML must quote. */
#define EVERY_KEY                                           \
    "model:\n"                                              \
    "  d_model: 64\n"                                       \
    "  heads: 4\n"                                          \
    "  encoder_layers: 3\n"                                 \
    "  decoder_layers: 2\n"                                 \
    "  d_ff: 256\n"                                         \
    "  src_vocab_size: 100\n"                               \
    "  tgt_vocab_size: 100\n"                               \
    "  activation: silu\n"                                  \
    "  norm_first: true\n"                                  \
    "  layer_norm_eps: 1.4e-45\n"                           \
    "  max_positions: 512\n"                                \
    "  scale_embedding: false\n"                            \
    "  positional_encoding: concatenated\n"                 \
    "  encoder_final_norm: false\n"                         \
    "  decoder_final_norm: false\n"                         \
    "  tensor_names: marian\n"                              \
    "  attention_projection: separate\n"                    \
    "  shared_embeddings: true\n"                           \
    "  tied_output: true\n"                                 \
    "  output_bias: false\n"                                \
    "weights: \"a dir/b: c #d \\\"e\\\".safetensors\"\n"    \
    "tokenizer:\n"                                          \
    "  type: sentencepiece\n"                               \
    "  lowercase: true\n"                                   \
    "  normalize: moses\n"                                  \
    "  src_vocab: 'd\xc3\xa9j\xc3\xa0/vocab''s'\n"          \
    "  tgt_vocab: \"tab\\there\\u0085\"\n"                  \
    "  src_spm: \"true\"\n"                                 \
    "  tgt_spm: '- x'\n"                                    \
    "  merges: merges.txt\n"                                \
    "  add_prefix_space: true\n"                            \
    "  unk_id: 3\n"                                         \
    "  pad_id: 0\n"                                         \
    "  bos_id: 0\n"                                         \
    "  eos_id: 2\n"                                         \
    "  source_bos: false\n"                                 \
    "  source_eos: false\n"                                 \
    "  languages: [\">>fra<<\", eng_Latn, 'no', '#x']\n"     \
    "  source_language_token: last\n"                      \
    "  target_language_token: forced\n"                    \
    "  decoder_start_id: 99\n"                              \
    "  source_lang: en\n"                                   \
    "  target_lang: \"true\"\n"                             \
    "  default_target_lang: 'no'\n"                         \
    "decoding:\n"                                           \
    "  max_length: 200\n"                                   \
    "  max_length_offset: 50\n"                             \
    "  beam_size: 5\n"                                      \
    "  length_penalty: 3.4028235e38\n"                      \
    "  length_normalization: power\n"                       \
    "  early_stopping: never\n"                             \
    "  forced_eos: true\n"                                  \
    "  banned_ids: [99, 0, 99]\n"                           \
    "  shortlist: 'lex s2t.txt'\n"                          \
    "  temperature: 0.1\n"                                  \
    "  top_k: 40\n"                                         \
    "  top_p: 0.9\n"                                        \
    "  repetition_penalty: 1.3\n"                           \
    "  no_repeat_ngram_size: 3\n"                           \
    "  encoder_no_repeat_ngram_size: 2\n"                   \
    "  min_length: 56\n"                                    \
    "languages: ['no', \">>fra<<  >\teng_Latn\"]\n"

/* The text ted_config_write_yaml makes of `config`; the caller frees it. */
static char *written(const ted_config *config)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    cr_assert_not_null(out);
    ted_error err = {0};
    cr_assert_eq(ted_config_write_yaml(out, config, &err), TED_OK, "%s", err.message);
    cr_assert_eq(fclose(out), 0);
    return text;
}

/* `config` written to the scratch file and loaded back. */
static ted_config written_and_read(const ted_config *config)
{
    FILE *out = fopen(temp_path, "wb");
    cr_assert_not_null(out);
    ted_error err = {0};
    cr_assert_eq(ted_config_write_yaml(out, config, &err), TED_OK, "%s", err.message);
    cr_assert_eq(fclose(out), 0);
    ted_config back;
    cr_assert_eq(ted_config_load(temp_path, &back, &err), TED_OK, "%s", err.message);
    return back;
}

#define SAME(field) cr_assert(a->field == b->field, "%s differs", #field)
#define SAME_TEXT(field) cr_assert_str_eq(a->field, b->field, "%s differs", #field)

static void assert_same_config(const ted_config *a, const ted_config *b)
{
    SAME(d_model);
    SAME(heads);
    SAME(query_size);
    SAME(encoder_layers);
    SAME(decoder_layers);
    SAME(d_ff);
    SAME(src_vocab_size);
    SAME(tgt_vocab_size);
    SAME(activation);
    SAME(norm_first);
    SAME(layer_norm_eps);
    SAME(max_positions);
    SAME(scale_embedding);
    SAME(positional_layout);
    SAME(encoder_final_norm);
    SAME(decoder_final_norm);
    SAME(tensor_names);
    SAME(attention_projection);
    SAME(shared_embeddings);
    SAME(tied_output);
    SAME(output_bias);
    SAME_TEXT(weights);
    SAME(tokenizer);
    SAME(lowercase);
    SAME(normalize);
    SAME_TEXT(src_vocab);
    SAME_TEXT(tgt_vocab);
    SAME_TEXT(src_spm);
    SAME_TEXT(tgt_spm);
    SAME_TEXT(merges);
    SAME(add_prefix_space);
    SAME(forced_bos_id);
    SAME_TEXT(shortlist);
    SAME(unk_id);
    SAME(pad_id);
    SAME(bos_id);
    SAME(eos_id);
    SAME(source_bos);
    SAME(source_eos);
    SAME(language_count);
    cr_assert_eq(memcmp(a->languages, b->languages, sizeof a->languages), 0);
    SAME(source_language_token);
    SAME(target_language_token);
    SAME(decoder_start_id);
    SAME_TEXT(source_lang);
    SAME_TEXT(target_lang);
    SAME_TEXT(default_target_lang);
    SAME(max_length);
    SAME(max_length_offset);
    SAME(beam_size);
    SAME(length_penalty);
    SAME(length_normalization);
    SAME(early_stopping);
    SAME(forced_eos);
    SAME(banned_id_count);
    SAME(sample);
    SAME(temperature);
    SAME(top_k);
    SAME(top_p);
    SAME(repetition_penalty);
    SAME(no_repeat_ngram_size);
    SAME(encoder_no_repeat_ngram_size);
    SAME(min_length);
    for (int i = 0; i < a->banned_id_count; i++)
        SAME(banned_ids[i]);
}

Test(config, the_writer_spells_out_every_default)
{
    ted_config c = parse_ok(MINIMAL);
    char *text = written(&c);
    cr_assert_str_eq(text, minimal_written);
    free(text);
}

Test(config, the_writer_gives_back_every_key, .init = make_temp_dir, .fini = remove_temp_dir)
{
    ted_config c = parse_ok(EVERY_KEY);
    /* what the file says, read independently of the writer */
    cr_assert_str_eq(c.weights, "a dir/b: c #d \"e\".safetensors");
    cr_assert_str_eq(c.src_vocab, "d\xc3\xa9j\xc3\xa0/vocab's");
    cr_assert_str_eq(c.tgt_vocab, "tab\there\xc2\x85");
    cr_assert_str_eq(c.tgt_spm, "- x");
    cr_assert_str_eq(c.shortlist, "lex s2t.txt");
    cr_assert_float_eq(c.layer_norm_eps, 1.4e-45f, 0.0);
    cr_assert_gt(c.layer_norm_eps, 0.0f);
    cr_assert_eq(c.banned_id_count, 3);
    cr_assert_eq(c.language_count, 4);
    cr_assert_str_eq(c.languages, ">>fra<<");
    cr_assert_str_eq(c.source_lang, "en");
    cr_assert_str_eq(c.target_lang, "true");
    cr_assert_str_eq(c.default_target_lang, "no");
    cr_assert_eq(c.decoder_start_id, 99);
    ted_config back = written_and_read(&c);
    assert_same_config(&c, &back);
}

Test(config, the_shipped_configs_are_written_back_as_they_are, .init = make_temp_dir,
     .fini = remove_temp_dir)
{
    static const char *const paths[] = {"tests/data/tiny-model/config.yaml",
                                        "models/toy-en-fr/config.yaml"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        ted_config c;
        ted_error err = {0};
        cr_assert_eq(ted_config_load(paths[i], &c, &err), TED_OK, "%s", err.message);
        ted_config back = written_and_read(&c);
        assert_same_config(&c, &back);
    }
}

Test(config, write_errors_are_reported)
{
    FILE *full = fopen("/dev/full", "w");
    if (!full)
        cr_skip_test("no /dev/full");
    ted_config c = parse_ok(MINIMAL);
    ted_error err = {0};
    cr_assert_eq(ted_config_write_yaml(full, &c, &err), TED_ERR_IO);
    cr_assert_str_eq(err.message, "writing the config: No space left on device");
    fclose(full);
}

/* Learned tables and the embedding LayerNorm are tensors the tutorial's
 * names have none for; fairseq's frequencies need d_model/2 - 1 > 0. */
Test(config, position_keys_need_what_they_name)
{
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  positional_encoding: learned\n",
                          "config.yaml:7: model.positional_encoding: learned, but tensor_names "
                          "tutorial has no positional tables");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  embedding_norm: true\n",
                          "config.yaml:7: model.embedding_norm: true, but tensor_names tutorial "
                          "has no embedding LayerNorm");
    ted_config c = parse_ok(
        "model:\n  d_model: 8\n  heads: 2\n  encoder_layers: 1\n  decoder_layers: 1\n"
        "  d_ff: 16\n  src_vocab_size: 10\n  tgt_vocab_size: 10\n"
        "  positional_encoding: learned\n  position_offset: 2\n  embedding_norm: true\n"
        "  tensor_names: marian\n"
        "weights: model.safetensors\n"
        "tokenizer:\n  src_vocab: v.txt\n  tgt_vocab: v.txt\n");
    cr_assert_eq(c.positional_layout, TED_POSITIONS_LEARNED);
    cr_assert_eq(c.position_offset, 2);
    cr_assert(c.embedding_norm);
}

Test(config, t5_keys_need_what_they_name)
{
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  positional_encoding: relative\n",
                          "config.yaml:7: model.positional_encoding: relative, but tensor_names "
                          "tutorial has no relative bias tables");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  feed_forward: gated\n",
                          "config.yaml:7: model.feed_forward: gated, but tensor_names tutorial "
                          "has no second input Linear");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  positional_encoding: relative\n"
                          "  relative_buckets: 32\n  relative_max_distance: 16\n",
                          "config.yaml:9: model.relative_max_distance: 16 is not above "
                          "relative_buckets / 2 (16), where the buckets of exact distances end");
    expect_replaced_error("  heads: 8\n", "  heads: 7\n",
                          "config.yaml:3: model.heads: 7 does not divide d_model 512");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  norm: batch\n",
                          "config.yaml:7: model.norm: \"batch\" is not one of layer, rms");
}

Test(config, t5_keys_are_read)
{
    ted_config c = parse_ok(
        "model:\n  d_model: 24\n  heads: 7\n  head_size: 10\n  encoder_layers: 1\n"
        "  decoder_layers: 1\n  d_ff: 16\n  src_vocab_size: 10\n  tgt_vocab_size: 10\n"
        "  activation: gelu_tanh\n  feed_forward: gated\n  linear_bias: false\n"
        "  scale_attention: false\n  norm: rms\n  positional_encoding: relative\n"
        "  relative_buckets: 8\n  relative_max_distance: 20\n  tensor_names: marian\n"
        "  scale_output: true\n"
        "weights: model.safetensors\n"
        "tokenizer:\n  src_vocab: v.txt\n  tgt_vocab: v.txt\n");
    cr_assert_eq(c.query_size, 10, "head_size sets Query Size; heads need not divide d_model");
    cr_assert_eq(c.activation, TED_ACTIVATION_GELU_TANH);
    cr_assert_eq(c.feed_forward, TED_FEED_FORWARD_GATED);
    cr_assert_not(c.linear_bias);
    cr_assert_not(c.scale_attention);
    cr_assert_eq(c.norm, TED_NORM_RMS);
    cr_assert_eq(c.positional_layout, TED_POSITIONS_RELATIVE);
    cr_assert_eq(c.relative_buckets, 8);
    cr_assert_eq(c.relative_max_distance, 20);
    cr_assert(c.scale_output);
}

Test(config, a_value_no_config_holds_is_not_written)
{
    ted_config c = parse_ok(MINIMAL);
    c.positional_layout = (ted_positional_layout)6;
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    cr_assert_not_null(out);
    ted_error err = {0};
    cr_assert_eq(ted_config_write_yaml(out, &c, &err), TED_ERR_ARGUMENT);
    cr_assert_str_eq(err.message,
                     "writing model.positional_encoding: 6 is not the index of a word");
    c = parse_ok(MINIMAL);
    strcpy(c.src_vocab, "vocab.\xff");
    cr_assert_eq(ted_config_write_yaml(out, &c, &err), TED_ERR_ARGUMENT);
    cr_assert_str_eq(err.message, "writing tokenizer.src_vocab: not UTF-8 text, or out of memory");
    fclose(out);
    free(text);
}

Test(config, a_list_longer_than_its_field_is_not_written)
{
    ted_config c = parse_ok(MINIMAL);
    c.banned_id_count = TED_MAX_BANNED_IDS + 1;
    ted_error err = {0};
    cr_assert_eq(ted_config_write_yaml(stdout, &c, &err), TED_ERR_ARGUMENT);
    cr_assert_str_eq(err.message, "writing decoding.banned_ids: 17 values, at most 16 fit");
}

/* ---- ted_config_visit and ted_config_word ----------------------------------- */

typedef struct visited {
    int count;
    char names[96][64];  /* dotted */
    ted_value_type types[96];
    const void *values[96];
    int counts[96];
} visited;

static void note_key(void *data, const char *section, const char *key, ted_value_type type,
                     const void *value, int count)
{
    visited *v = data;
    cr_assert_lt(v->count, 96);
    snprintf(v->names[v->count], 64, "%s%s%s", section ? section : "", section ? "." : "", key);
    v->types[v->count] = type;
    v->values[v->count] = value;
    v->counts[v->count++] = count;
}

/* The index of `name` among the keys visited, or -1. */
static int visited_at(const visited *v, const char *name)
{
    for (int i = 0; i < v->count; i++)
        if (strcmp(v->names[i], name) == 0)
            return i;
    return -1;
}

Test(config, the_visit_hands_over_every_key_but_sections_in_the_tables_order)
{
    ted_config c = parse_ok(EVERY_KEY);
    visited v = {.count = 0};
    ted_config_visit(&c, note_key, &v);
    cr_assert_eq(v.count, ted_config_key_count() - 3);  /* model, tokenizer, decoding */
    char name[64];
    for (int i = 0, k = 0; i < ted_config_key_count(); i++) {
        cr_assert_eq(ted_config_key_name(i, name, sizeof name, NULL), TED_OK);
        if (!is_section(name))
            cr_assert_str_eq(v.names[k++], name);
    }
    int at = visited_at(&v, "model.heads");
    cr_assert(v.types[at] == TED_VALUE_INT && *(const int *)v.values[at] == 4);
    cr_assert_eq(v.counts[at], 1);
    at = visited_at(&v, "model.norm_first");
    cr_assert(v.types[at] == TED_VALUE_BOOL && *(const bool *)v.values[at]);
    at = visited_at(&v, "decoding.top_p");
    cr_assert(v.types[at] == TED_VALUE_FLOAT && *(const float *)v.values[at] == 0.9f);
    at = visited_at(&v, "model.activation");
    cr_assert_eq(v.types[at], TED_VALUE_WORD);
    cr_assert_str_eq(v.values[at], "silu");
    at = visited_at(&v, "weights");
    cr_assert_eq(v.types[at], TED_VALUE_PATH);
    cr_assert_str_eq(v.values[at], "a dir/b: c #d \"e\".safetensors");
    at = visited_at(&v, "decoding.banned_ids");
    cr_assert(v.types[at] == TED_VALUE_INT_LIST && v.counts[at] == 3);
    cr_assert_eq(((const int *)v.values[at])[2], 99);
    at = visited_at(&v, "tokenizer.languages");
    cr_assert(v.types[at] == TED_VALUE_CODE_LIST && v.counts[at] == 4);
    cr_assert_eq(memcmp(v.values[at], ">>fra<<\0eng_Latn\0no\0#x", 23), 0);
    at = visited_at(&v, "tokenizer.target_lang");
    cr_assert_eq(v.types[at], TED_VALUE_CODE);
    cr_assert_str_eq(v.values[at], "true");
    at = visited_at(&v, "languages");  /* the direction with one space either side of > */
    cr_assert(v.types[at] == TED_VALUE_CODE_LIST && v.counts[at] == 2);
    cr_assert_eq(memcmp(v.values[at], "no\0>>fra<< > eng_Latn", 22), 0);
}

Test(config, the_visit_skips_optional_paths_left_empty)
{
    ted_config c = parse_ok(MINIMAL);
    visited v = {.count = 0};
    ted_config_visit(&c, note_key, &v);
    cr_assert_eq(v.count, ted_config_key_count() - 3 - 9);
    cr_assert_eq(visited_at(&v, "languages"), -1);
    cr_assert_eq(visited_at(&v, "decoding.shortlist"), -1);
    cr_assert_eq(visited_at(&v, "tokenizer.src_spm"), -1);
    cr_assert_eq(visited_at(&v, "tokenizer.tgt_spm"), -1);
    cr_assert_eq(visited_at(&v, "tokenizer.merges"), -1);
    cr_assert_eq(visited_at(&v, "tokenizer.languages"), -1);
    cr_assert_eq(visited_at(&v, "tokenizer.source_lang"), -1);
    cr_assert_eq(visited_at(&v, "tokenizer.target_lang"), -1);
    cr_assert_eq(visited_at(&v, "tokenizer.default_target_lang"), -1);
    cr_assert_eq(visited_at(&v, "model.query_size"), -1);  /* derived, not a key */
    int at = visited_at(&v, "decoding.banned_ids");
    cr_assert_eq(v.counts[at], 0);
}

Test(config, a_value_no_config_holds_is_visited_as_none)
{
    ted_config c = parse_ok(MINIMAL);
    c.activation = (ted_activation)4;
    c.banned_id_count = -1;
    visited v = {.count = 0};
    ted_config_visit(&c, note_key, &v);
    cr_assert_null(v.values[visited_at(&v, "model.activation")]);
    cr_assert_eq(v.counts[visited_at(&v, "decoding.banned_ids")], 0);
    c.banned_id_count = TED_MAX_BANNED_IDS + 1;
    v.count = 0;
    ted_config_visit(&c, note_key, &v);
    cr_assert_eq(v.counts[visited_at(&v, "decoding.banned_ids")], TED_MAX_BANNED_IDS);
}

Test(config, words_are_named_by_their_dotted_key)
{
    cr_assert_str_eq(ted_config_word("model.activation", TED_ACTIVATION_GELU), "gelu");
    cr_assert_str_eq(ted_config_word("model.positional_encoding", TED_POSITIONS_CONCATENATED),
                     "concatenated");
    cr_assert_str_eq(ted_config_word("tokenizer.type", TED_TOKENIZER_SENTENCEPIECE),
                     "sentencepiece");
    cr_assert_str_eq(ted_config_word("tokenizer.source_language", TED_LANGUAGE_CZ), "cz");
    cr_assert_str_eq(ted_config_word("decoding.length_normalization", TED_LENGTH_POWER),
                     "power");
    cr_assert_null(ted_config_word("model.activation", 4));
    cr_assert_null(ted_config_word("model.activation", -1));
    cr_assert_null(ted_config_word("activation", 0));
    cr_assert_null(ted_config_word("model.heads", 0));
    cr_assert_null(ted_config_word(NULL, 0));
}

Test(config, floats_are_spelled_as_config_yaml_has_them)
{
    static const struct {
        float value;
        const char *text;
    } cases[] = {{0.6f, "0.6"}, {1.0f, "1.0"}, {1e-5f, "1.0e-05"}, {0.0f, "0.0"},
                 {3.4028235e38f, "3.4028235e+38"}, {1.4e-45f, "1.0e-45"}};
    char text[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ted_config_format_float(cases[i].value, text, sizeof text);
        cr_assert_str_eq(text, cases[i].text);
    }
}

/* The example at the top of the config.yaml part of the docs is what the
 * writer makes of Transformer-base: every key, at its default. */
Test(config, the_documented_example_lists_every_default)
{
    char *docs = read_config_docs();
    char *start = strstr(docs, "```yaml\n");
    cr_assert_not_null(start, "docs/model-format.md: no ```yaml example under config.yaml");
    start += strlen("```yaml\n");
    char *end = strstr(start, "```");
    cr_assert_not_null(end);
    *end = '\0';
    cr_assert_str_eq(start, minimal_written);
}
