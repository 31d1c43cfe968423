/* libFuzzer harness: ted_vocab_parse on arbitrary bytes. A vocabulary that
 * parses must map every token back to its id, and the special-token check
 * must run on it without harm. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/config.h"
#include "io/vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ted_vocab vocab;
    ted_error err = {0};
    ted_status status = ted_vocab_parse((const char *)data, size, "vocab.src", &vocab, &err);
    if (status != TED_OK) {
        REQUIRE(vocab.tokens == NULL && vocab.slots == NULL && vocab.size == 0);
        REQUIRE(err.message[0] != '\0');
        return 0;
    }
    REQUIRE(vocab.size >= 1);
    for (int id = 0; id < vocab.size; id++) {
        const char *token = ted_vocab_token(&vocab, id);
        REQUIRE(token && token[0] != '\0');
        size_t n = strlen(token);
        REQUIRE(!memchr(token, '\n', n));  /* a CR may stay: "x\r\r\n" is "x\r" */
        REQUIRE(ted_vocab_lookup(&vocab, token, n) == id);
    }
    REQUIRE(ted_vocab_token(&vocab, -1) == NULL && ted_vocab_token(&vocab, vocab.size) == NULL);
    /* The input itself, whole, looked up as one token. */
    int id = ted_vocab_lookup(&vocab, (const char *)data, size);
    REQUIRE(id >= -1 && id < vocab.size);
    ted_config config = {.unk_id = 0, .pad_id = 1, .bos_id = 2, .eos_id = 3};
    ted_error special = {0};
    status = ted_vocab_check_specials(&vocab, &config, "vocab.src", &special);
    REQUIRE(status == TED_OK || (status == TED_ERR_VOCAB && special.message[0] != '\0'));
    ted_vocab_free(&vocab);
    REQUIRE(vocab.tokens == NULL && vocab.size == 0);
    return 0;
}
