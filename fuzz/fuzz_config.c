/* libFuzzer harness: ted_config_parse on arbitrary text. A config that
 * parses must satisfy every rule docs/model-format.md states, and what
 * ted_config_write_yaml prints of it must parse back to the same config. */
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/config.h"

static void require_path(const char *path)
{
    size_t n = strnlen(path, TED_CONFIG_PATH_SIZE);
    REQUIRE(n > 0 && n < TED_CONFIG_PATH_SIZE);
    REQUIRE(path[0] != '/');
    for (size_t start = 0; start < n;) {
        size_t end = start;
        while (end < n && path[end] != '/')
            end++;
        REQUIRE(!(end - start == 2 && path[start] == '.' && path[start + 1] == '.'));
        start = end + 1;
    }
}

/* The printed config, parsed again and printed again, reads the same. */
static void require_round_trip(const ted_config *c)
{
    char *first = NULL, *second = NULL;
    size_t first_size = 0, second_size = 0;
    FILE *out = open_memstream(&first, &first_size);
    REQUIRE(out && ted_config_write_yaml(out, c, NULL) == TED_OK);
    fclose(out);
    ted_config again;
    ted_error err = {0};
    REQUIRE(ted_config_parse(first, first_size, "printed.yaml", &again, &err) == TED_OK);
    out = open_memstream(&second, &second_size);
    REQUIRE(out && ted_config_write_yaml(out, &again, NULL) == TED_OK);
    fclose(out);
    REQUIRE(first_size == second_size && memcmp(first, second, first_size) == 0);
    free(first);
    free(second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ted_config config;
    memset(&config, 0xAB, sizeof config);
    ted_error err = {0};
    ted_status status = ted_config_parse((const char *)data, size, "config.yaml", &config, &err);
    if (status != TED_OK) {
        REQUIRE(status == TED_ERR_CONFIG || status == TED_ERR_NOMEM);
        REQUIRE(err.message[0] != '\0');
        return 0;
    }
    const ted_config *c = &config;
    REQUIRE(c->d_model >= 2 && c->d_model <= 65536 && c->d_model % 2 == 0);
    REQUIRE(c->heads >= 1 && c->heads <= 1024 && c->d_model % c->heads == 0);
    REQUIRE(c->encoder_layers >= 1 && c->encoder_layers <= 256);
    REQUIRE(c->decoder_layers >= 1 && c->decoder_layers <= 256);
    REQUIRE(c->d_ff >= 1 && c->d_ff <= 1048576);
    REQUIRE(c->src_vocab_size >= 4 && c->src_vocab_size <= 16777216);
    REQUIRE(c->tgt_vocab_size >= 4 && c->tgt_vocab_size <= 16777216);
    REQUIRE(c->max_positions >= 1 && c->max_positions <= 1048576);
    REQUIRE(c->layer_norm_eps > 0.0f && c->layer_norm_eps <= FLT_MAX);
    REQUIRE(c->activation <= TED_ACTIVATION_SILU);
    REQUIRE(c->tokenizer <= TED_TOKENIZER_SENTENCEPIECE);
    REQUIRE(c->normalize <= TED_NORMALIZE_MOSES);
    REQUIRE(c->length_normalization <= TED_LENGTH_POWER);
    REQUIRE(c->early_stopping <= TED_EARLY_STOPPING_NEVER);
    int ids[4] = {c->unk_id, c->pad_id, c->bos_id, c->eos_id};
    for (int i = 0; i < 4; i++) {
        REQUIRE(ids[i] >= 0 && ids[i] < c->src_vocab_size && ids[i] < c->tgt_vocab_size);
        for (int j = 0; j < i; j++)
            REQUIRE(ids[i] != ids[j] || (i == 2 && j == 1));  /* BOS may be PAD */
    }
    REQUIRE(c->banned_id_count >= 0 && c->banned_id_count <= TED_MAX_BANNED_IDS);
    for (int i = 0; i < c->banned_id_count; i++)
        REQUIRE(c->banned_ids[i] >= 0 && c->banned_ids[i] < c->tgt_vocab_size);
    REQUIRE(c->max_length >= 0 && c->max_length <= 1048576);
    REQUIRE(c->max_length_offset >= 0 && c->max_length_offset <= 1048576);
    REQUIRE(c->beam_size >= 1 && c->beam_size < c->tgt_vocab_size);
    REQUIRE(!(c->sample && c->beam_size > 1));
    REQUIRE(c->length_penalty >= 0.0f && c->length_penalty <= FLT_MAX);
    REQUIRE(c->temperature > 0.0f && c->temperature <= FLT_MAX);
    REQUIRE(c->top_k >= 0);
    REQUIRE(c->top_p > 0.0f && c->top_p <= 1.0f);
    require_path(c->weights);
    require_path(c->src_vocab);
    require_path(c->tgt_vocab);
    require_round_trip(c);
    return 0;
}
