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

Test(config, every_key_is_read)
{
    ted_config c = parse_ok(
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
        "  max_length_offset: 50\n");
    cr_assert_eq(c.d_model, 64);
    cr_assert_eq(c.heads, 4);
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
                          "config.yaml:7: model.activation: \"swish\" is not one of relu, gelu, silu");
    expect_replaced_error("  d_ff: 2048\n", "  d_ff: 2048\n  positional_encoding: learned\n",
                          "config.yaml:7: model.positional_encoding: \"learned\" is not one of "
                          "interleaved, concatenated");
    expect_replaced_error("tokenizer:\n", "tokenizer:\n  type: bpe\n",
                          "config.yaml:11: tokenizer.type: \"bpe\" is not one of "
                          "whitespace, char, sentencepiece");
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
