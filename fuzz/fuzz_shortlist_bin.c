/* libFuzzer harness: ted_shortlist_bin_parse (io/shortlist_bin.h) on
 * arbitrary bytes, for a model of 40 source and 60 target tokens. The
 * harness writes the right checksum into a copy of the input first (a
 * fuzzer would seldom find it), so the checks past it are reached; the
 * input as given is parsed too. A shortlist that parses holds each source's
 * list strictly increasing, inside the target vocabulary, after the
 * frequent ids 0 .. firstNum - 1. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/shortlist.h"
#include "io/shortlist_bin.h"

enum { SRC_VOCAB = 40, TGT_VOCAB = 60 };

static void parse(const uint8_t *data, size_t size)
{
    ted_shortlist list;
    ted_error err = {0};
    ted_status status = ted_shortlist_bin_parse(data, size, "lex.bin", SRC_VOCAB, TGT_VOCAB,
                                                &list, &err);
    if (status != TED_OK) {
        REQUIRE(list.offsets == NULL && list.targets == NULL);
        REQUIRE(status == TED_ERR_FORMAT || status == TED_ERR_NOMEM);
        REQUIRE(err.message[0] != '\0');
        return;
    }
    REQUIRE(list.binary && list.pad_multiple == 8 && list.pad_from == list.frequent_count);
    REQUIRE(list.frequent_count >= 0 && list.frequent_count <= TGT_VOCAB);
    for (int i = 0; i < list.frequent_count; i++)
        REQUIRE(list.frequent[i] == i);
    REQUIRE(list.offsets[0] == list.frequent_count);
    for (int s = 0; s < SRC_VOCAB; s++) {
        REQUIRE(list.offsets[s] <= list.offsets[s + 1]);
        for (int k = list.offsets[s]; k < list.offsets[s + 1]; k++) {
            REQUIRE(list.targets[k] >= 0 && list.targets[k] < TGT_VOCAB);
            REQUIRE(k == list.offsets[s] || list.targets[k - 1] < list.targets[k]);
        }
    }
    REQUIRE((size_t)(list.offsets[SRC_VOCAB] - list.frequent_count) * 4 <= size);
    ted_shortlist_free(&list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse(data, size);
    if (size < 16)
        return 0;
    uint8_t *fixed = malloc(size);
    REQUIRE(fixed);
    memcpy(fixed, data, size);
    uint64_t sum = ted_shortlist_bin_checksum(fixed, size);
    for (int i = 0; i < 8; i++)
        fixed[8 + i] = (uint8_t)(sum >> (8 * i));
    parse(fixed, size);
    free(fixed);
    return 0;
}
