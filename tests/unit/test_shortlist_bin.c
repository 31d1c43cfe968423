/* Marian's binary lexical shortlists built byte by byte (after marian-dev's
 * src/data/shortlist.cpp import): the lists read, the checksum against the
 * value Python's big integers give for the same words, and each
 * malformation refused with one message naming the file. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/shortlist.h"
#include "io/shortlist_bin.h"
#include "marian_files.h"

#define FILE_NAME "lex.bin"
#define SRC_VOCAB 3
#define TGT_VOCAB 10

/* Source 0 lists 2 5, source 1 nothing, source 2 lists 1 4 9; firstNum 2,
 * bestNum 3. Its checksum, by Python: 0x8a484261ef4780d1. */
static byte_buffer valid_file(const uint32_t ids[5], bool fix_checksum)
{
    static const uint64_t offsets[4] = {0, 2, 2, 5};
    byte_buffer b = {0};
    buf_le(&b, TED_SHORTLIST_BIN_MAGIC, 8);
    buf_le(&b, 0, 8);
    buf_le(&b, 2, 8);
    buf_le(&b, 3, 8);
    buf_le(&b, 4, 8);
    buf_le(&b, 5, 8);
    for (int i = 0; i < 4; i++)
        buf_le(&b, offsets[i], 8);
    for (int i = 0; i < 5; i++)
        buf_le(&b, ids[i], 4);
    if (fix_checksum) {
        uint64_t sum = ted_shortlist_bin_checksum(b.bytes, b.size);
        for (int i = 0; i < 8; i++)
            b.bytes[8 + i] = (unsigned char)(sum >> (8 * i));
    }
    return b;
}

static const uint32_t IDS[5] = {2, 5, 1, 4, 9};

static ted_status parse(const byte_buffer *b, int src_vocab, ted_shortlist *list,
                        ted_error *err)
{
    unsigned char *exact = buf_exact(b);
    ted_status status = ted_shortlist_parse((const char *)exact, b->size, FILE_NAME,
                                            src_vocab, TGT_VOCAB, list, err);
    free(exact);
    return status;
}

static void expect_refused(const byte_buffer *b, int src_vocab, const char *part)
{
    ted_shortlist list;
    ted_error err = {0};
    cr_assert_eq(parse(b, src_vocab, &list, &err), TED_ERR_FORMAT, "parsed");
    cr_assert(strstr(err.message, FILE_NAME) && strstr(err.message, part), "message: %s",
              err.message);
    cr_assert_null(strchr(err.message, '\n'));
    cr_assert_null(list.offsets);
    cr_assert_null(list.targets);
}

Test(shortlist_bin, checksum_is_marians_hash_combine)
{
    byte_buffer b = valid_file(IDS, false);
    cr_assert_eq(b.size, 100);
    cr_assert_eq(ted_shortlist_bin_checksum(b.bytes, b.size), 0x8a484261ef4780d1ull);
    free(b.bytes);
}

Test(shortlist_bin, reads_lists_and_the_frequent_ids)
{
    byte_buffer b = valid_file(IDS, true);
    ted_shortlist list;
    ted_error err = {0};
    cr_assert_eq(parse(&b, SRC_VOCAB, &list, &err), TED_OK, "%s", err.message);
    cr_assert(list.binary);
    cr_assert_eq(list.frequent_count, 2);
    cr_assert_eq(list.frequent[0], 0);
    cr_assert_eq(list.frequent[1], 1);
    cr_assert_eq(list.pad_multiple, 8);
    cr_assert_eq(list.pad_from, 2);
    cr_assert_not(list.add_sources, "the model decides");
    const int want[3][3] = {{2, 5}, {0}, {1, 4, 9}};
    const int lengths[3] = {2, 0, 3};
    for (int s = 0; s < SRC_VOCAB; s++) {
        cr_assert_eq(list.offsets[s + 1] - list.offsets[s], lengths[s], "source %d", s);
        for (int k = 0; k < lengths[s]; k++)
            cr_assert_eq(list.targets[list.offsets[s] + k], want[s][k]);
    }
    ted_shortlist_free(&list);
    free(b.bytes);
}

Test(shortlist_bin, refuses_corruption_and_other_vocabularies)
{
    byte_buffer b = valid_file(IDS, true);
    expect_refused(&b, SRC_VOCAB + 1, "source vocabulary of 3");
    b.bytes[60] ^= 1;  /* an offset: the checksum no longer holds */
    expect_refused(&b, SRC_VOCAB, "checksum");
    b.bytes[60] ^= 1;
    b.size -= 1;
    expect_refused(&b, SRC_VOCAB, "cut short");
    free(b.bytes);

    const uint32_t unsorted[5] = {5, 2, 1, 4, 9};
    b = valid_file(unsorted, true);
    expect_refused(&b, SRC_VOCAB, "source id 0 is not sorted");
    free(b.bytes);
    const uint32_t twice[5] = {2, 5, 4, 4, 9};
    b = valid_file(twice, true);
    expect_refused(&b, SRC_VOCAB, "source id 2 is not sorted");
    free(b.bytes);
    const uint32_t outside[5] = {2, 5, 1, 4, TGT_VOCAB};
    b = valid_file(outside, true);
    expect_refused(&b, SRC_VOCAB, "outside the target vocabulary");
    free(b.bytes);
}

Test(shortlist_bin, refuses_offsets_out_of_order)
{
    byte_buffer b = valid_file(IDS, false);
    b.bytes[48 + 8] = 3;  /* offsets 0 3 2 5 */
    uint64_t sum = ted_shortlist_bin_checksum(b.bytes, b.size);
    for (int i = 0; i < 8; i++)
        b.bytes[8 + i] = (unsigned char)(sum >> (8 * i));
    expect_refused(&b, SRC_VOCAB, "out of order");
    free(b.bytes);
}

Test(shortlist_bin, refuses_every_cut)
{
    byte_buffer b = valid_file(IDS, true);
    for (size_t size = 8; size < b.size; size++) {
        byte_buffer cut = {b.bytes, size, size};
        ted_shortlist list;
        ted_error err = {0};
        cr_assert_neq(parse(&cut, SRC_VOCAB, &list, &err), TED_OK, "cut to %zu parsed", size);
        cr_assert(strstr(err.message, FILE_NAME), "message: %s", err.message);
    }
    free(b.bytes);
}
