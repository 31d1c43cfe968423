/* libFuzzer harness: ted_tokenize and ted_detokenize. The first byte picks
 * the tokenizer settings, the rest is the text; a fixed vocabulary holds
 * ASCII words, UTF-8 words, single characters and a space. Every id must be
 * a vocabulary id, the count bounded by the characters, and the ids, with
 * out-of-range ones mixed in, must turn back into a string. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/config.h"
#include "io/tokenizer.h"

static const char vocab_text[] =
    "<unk>\n<pad>\n<bos>\n<eos>\nthe\ncat\nle\nchat\n.\n,\n \na\nb\nc\nx\n\xc3\xa9\n"
    "\xc3\xa9t\xc3\xa9\n\xe2\x82\xac\n\xf0\x9f\x98\x80\n\xc3\xa0\n\xc3\xbe\nA\n\t\n"
    "\xc2\xa0\nn't\n";

static ted_vocab vocab;

static void load_vocab(void)
{
    if (vocab.tokens)
        return;
    ted_error err = {0};
    if (ted_vocab_parse(vocab_text, sizeof vocab_text - 1, "vocab", &vocab, &err) != TED_OK)
        abort();
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* What detokenizing the ids of `text` must give when every token is known:
 * the words joined by single spaces (whitespace) or the characters but CR
 * and LF (char), "<pad>" and "<bos>" left out, up to the first "<eos>". */
static char *expected_text(const ted_config *config, const char *text, size_t length)
{
    char *out = malloc(length + 1);
    REQUIRE(out);
    size_t used = 0;
    if (config->tokenizer == TED_TOKENIZER_CHAR) {
        for (size_t i = 0; i < length; i++)
            if (text[i] != '\r' && text[i] != '\n')
                out[used++] = text[i];
        out[used] = '\0';
        return out;
    }
    for (size_t i = 0; i < length;) {
        while (i < length && is_space(text[i]))
            i++;
        size_t start = i;
        while (i < length && !is_space(text[i]))
            i++;
        size_t n = i - start;
        if (n == 0)
            break;
        if (n == 5 && memcmp(text + start, "<eos>", 5) == 0)
            break;
        if (n == 5 && (!memcmp(text + start, "<pad>", 5) || !memcmp(text + start, "<bos>", 5)))
            continue;
        if (used > 0)
            out[used++] = ' ';
        memcpy(out + used, text + start, n);
        used += n;
    }
    out[used] = '\0';
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_vocab();
    if (size == 0)
        return 0;
    ted_config config = {
        .tokenizer = (data[0] & 1) ? TED_TOKENIZER_CHAR : TED_TOKENIZER_WHITESPACE,
        .lowercase = (data[0] & 2) != 0,
        .source_bos = (data[0] & 4) != 0,
        .source_eos = (data[0] & 8) != 0,
        .unk_id = 0, .pad_id = 1, .bos_id = 2, .eos_id = 3,
        .src_vocab_size = vocab.size, .tgt_vocab_size = vocab.size,
    };
    /* The text is copied to a buffer of its own size, so ASan sees any
     * read past its end. */
    size_t length = size - 1;
    char *text = malloc(length ? length : 1);
    REQUIRE(text);
    memcpy(text, data + 1, length);
    ted_tokenizer tokenizer = {&config, &vocab, NULL, true, NULL};
    ted_token_ids out = {NULL, -1, -1};
    ted_error err = {0};
    ted_status status = ted_tokenize(&tokenizer, text, length, &out, &err);
    int *ids = out.ids, count = out.count, unknown = out.unknown;
    if (status != TED_OK) {
        REQUIRE(status == TED_ERR_INPUT && ids == NULL && err.message[0] != '\0');
        free(text);
        return 0;
    }
    int wrap = config.source_bos + config.source_eos;
    REQUIRE(count >= wrap && (size_t)(count - wrap) <= length);
    REQUIRE(unknown >= 0 && unknown <= count - wrap);
    int unk_seen = 0;
    for (int i = 0; i < count; i++) {
        REQUIRE(ids[i] >= 0 && ids[i] < vocab.size);
        unk_seen += ids[i] == config.unk_id;
    }
    REQUIRE(unk_seen >= unknown);  /* "<unk>" itself is a known token */
    if (config.source_bos)
        REQUIRE(ids[0] == config.bos_id);
    if (config.source_eos)
        REQUIRE(ids[count - 1] == config.eos_id);
    char *back = ted_detokenize(&config, &vocab, NULL, ids, count);
    REQUIRE(back);
    if (unknown == 0 && !config.lowercase) {
        char *expected = expected_text(&config, text, length);
        REQUIRE(strcmp(back, expected) == 0);
        free(expected);
    }
    free(back);
    /* Arbitrary ids, in range or not, from the text's bytes. */
    int n = (int)length;
    int *raw = malloc((size_t)(n ? n : 1) * sizeof *raw);
    REQUIRE(raw);
    for (int i = 0; i < n; i++) {
        unsigned char c = data[1 + i];
        raw[i] = c == 0xFF ? INT_MAX : c == 0xFE ? INT_MIN : (int)(c % 32) - 3;
    }
    back = ted_detokenize(&config, &vocab, NULL, raw, n);
    REQUIRE(back);
    free(back);
    free(raw);
    free(ids);
    free(text);
    return 0;
}
