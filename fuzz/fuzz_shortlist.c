/* libFuzzer harness: ted_shortlist_parse on arbitrary bytes, for a model of
 * 40 source and 60 target tokens. A shortlist that parses must hold only
 * ids inside those vocabularies, its lists in order. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "io/shortlist.h"

enum { SRC_VOCAB = 40, TGT_VOCAB = 60 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ted_shortlist list;
    ted_error err = {0};
    ted_status status = ted_shortlist_parse((const char *)data, size, "lex.txt", SRC_VOCAB,
                                            TGT_VOCAB, &list, &err);
    if (status != TED_OK) {
        REQUIRE(list.offsets == NULL && list.targets == NULL);
        REQUIRE(status == TED_ERR_FORMAT || status == TED_ERR_NOMEM);
        REQUIRE(err.message[0] != '\0');
        return 0;
    }
    REQUIRE(list.frequent_count >= 0 && list.offsets[0] >= list.frequent_count);
    for (int i = 0; i < list.frequent_count; i++)
        REQUIRE(list.frequent[i] >= 0 && list.frequent[i] < TGT_VOCAB);
    for (int s = 0; s < SRC_VOCAB; s++) {
        REQUIRE(list.offsets[s] <= list.offsets[s + 1]);
        for (int k = list.offsets[s]; k < list.offsets[s + 1]; k++)
            REQUIRE(list.targets[k] >= 0 && list.targets[k] < TGT_VOCAB);
    }
    REQUIRE((size_t)list.offsets[SRC_VOCAB] <= size / 2 + 1);
    ted_shortlist_free(&list);
    REQUIRE(list.offsets == NULL && list.targets == NULL);
    return 0;
}
