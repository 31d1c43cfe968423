/* libFuzzer harness: a SentencePiece model file, loaded from memory
 * (ted_spm_load_bytes: the normalization tables checked, then the library),
 * then used as ted uses it: a few fixed texts segmented into pieces and the
 * pieces turned back into text, and a fixed list of pieces decoded. A model
 * that is refused must say so naming the file; one that loads must never
 * read outside its bytes (ASan and UBSan watch ted's side, a segfault the
 * library's). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/sentencepiece.h"

/* Texts with what normalization tables match: capitals, ligatures,
 * combining accents, wide forms, runs of spaces, byte-fallback material. */
static const char *const texts[] = {
    "The cat sees a small bird.",
    "A \xef\xac\x81ne caf\xc3\xa9, na\x69\xcc\x88ve \xe2\x80\x94 \xf0\x9f\x98\x80 ss",
    "  leading   and trailing spaces  ",
    "\xef\xbc\xa1\xef\xbc\xa2 \xe3\x80\x80 \xe2\x85\xa0 \xc2\xbd \xe2\x84\xa2",
    "\xe2\x96\x81 <unk> <s> </s> <0x41> \xef\xbf\xbd",
    "x",
};

static const char *const pieces[] = {"\xe2\x96\x81The", "\xe2\x96\x81", "<unk>", "<0x41>",
                                     "<0xC3>", "<0xA9>", "s", "</s>", "\xe2\x96\x81\x63\x61t"};

/* Segments `text`, checks the pieces are `count` non-empty strings back to
 * back, and decodes them. */
static void segment(const ted_spm *spm, const char *text)
{
    char *block = NULL;
    int count = 0;
    ted_error err = {0};
    if (ted_spm_encode(spm, text, strlen(text), &block, &count, &err) != TED_OK) {
        REQUIRE(block == NULL && count == 0 && err.message[0]);
        return;
    }
    REQUIRE(count >= 0);
    const char **list = malloc(((size_t)count + 1) * sizeof *list);
    REQUIRE(list);
    const char *at = block;
    for (int i = 0; i < count; i++) {
        list[i] = at;
        at += strlen(at) + 1;
    }
    free(ted_spm_decode(spm, list, count));
    free(list);
    free(block);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ted_spm *spm = NULL;
    ted_error err = {0};
    if (ted_spm_load_bytes("fuzz.spm", (const char *)data, size, &spm, &err) != TED_OK) {
        REQUIRE(spm == NULL && strncmp(err.message, "fuzz.spm: ", 10) == 0);
        return 0;
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        segment(spm, texts[i]);
    free(ted_spm_decode(spm, pieces, (int)(sizeof pieces / sizeof pieces[0])));
    ted_spm_free(spm);
    return 0;
}
