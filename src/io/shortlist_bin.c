/* Marian's binary lexical shortlist (io/shortlist_bin.h). */
#include "io/shortlist_bin.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "io/little_endian.h"

/* A batch's union grows to a multiple of this (generate's intgemm
 * padding). */
#define BIN_PAD_MULTIPLE 8

bool ted_shortlist_bin_is(const void *bytes, size_t size)
{
    return size >= 8 && ted_le_u64(bytes) == TED_SHORTLIST_BIN_MAGIC;
}

uint64_t ted_shortlist_bin_checksum(const void *bytes, size_t size)
{
    const unsigned char *p = bytes;
    uint64_t seed = 0;
    for (size_t at = 16; size >= 8 && at <= size - 8; at += 8)
        seed ^= ted_le_u64(p + at) + 0x9e3779b9u + (seed << 6) + (seed >> 2);
    return seed;
}

/* The header's fields, checked against the file's size and the model. */
typedef struct bin_header {
    uint64_t first_num, best_num, offsets, list_size;
} bin_header;

static ted_status read_header(const unsigned char *p, size_t size, const char *name,
                              int src_vocab, bin_header *h, ted_error *err)
{
    if (size < TED_SHORTLIST_BIN_HEADER_BYTES || !ted_shortlist_bin_is(p, size))
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: not a Marian binary shortlist (%zu bytes, no 48-byte header "
                        "with its magic)",
                        name, size);
    h->first_num = ted_le_u64(p + 16);
    h->best_num = ted_le_u64(p + 24);
    h->offsets = ted_le_u64(p + 32);
    h->list_size = ted_le_u64(p + 40);
    size_t room = size - TED_SHORTLIST_BIN_HEADER_BYTES;
    if (h->offsets > room / 8 || h->list_size > (room - h->offsets * 8) / 4 ||
        room != h->offsets * 8 + h->list_size * 4)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: the header's %llu offsets and %llu target ids do not make the "
                        "file's %zu bytes (cut short or corrupted)",
                        name, (unsigned long long)h->offsets,
                        (unsigned long long)h->list_size, size);
    uint64_t sum = ted_shortlist_bin_checksum(p, size), stored = ted_le_u64(p + 8);
    if (sum != stored)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: checksum %016llx, the header says %016llx: the shortlist is "
                        "corrupted",
                        name, (unsigned long long)sum, (unsigned long long)stored);
    if (h->offsets != (uint64_t)src_vocab + 1)
        return ted_fail(err, TED_ERR_FORMAT,
                        "%s: made for a source vocabulary of %llu tokens, but the model's has "
                        "%d",
                        name, (unsigned long long)(h->offsets ? h->offsets - 1 : 0), src_vocab);
    if (h->list_size > (uint64_t)INT_MAX - (uint64_t)INT_MAX / 2)
        return ted_fail(err, TED_ERR_FORMAT, "%s: %llu target ids, more than ted holds", name,
                        (unsigned long long)h->list_size);
    return TED_OK;
}

/* The offsets: from 0, never falling, to the list size. */
static ted_status read_offsets(const unsigned char *p, const bin_header *h, const char *name,
                               int base, ted_shortlist *out, ted_error *err)
{
    uint64_t previous = 0;
    for (uint64_t s = 0; s < h->offsets; s++) {
        uint64_t offset = ted_le_u64(p + TED_SHORTLIST_BIN_HEADER_BYTES + 8 * s);
        bool last = s + 1 == h->offsets;
        if ((s == 0 && offset != 0) || offset < previous || offset > h->list_size ||
            (last && offset != h->list_size))
            return ted_fail(err, TED_ERR_FORMAT,
                            "%s: offset %llu of source id %llu is out of order (offsets rise "
                            "from 0 to the list size %llu)",
                            name, (unsigned long long)offset, (unsigned long long)s,
                            (unsigned long long)h->list_size);
        out->offsets[s] = base + (int)offset;
        previous = offset;
    }
    return TED_OK;
}

/* The target ids: inside the vocabulary, each list rising. */
static ted_status read_lists(const unsigned char *ids, const char *name, int base,
                             ted_shortlist *out, ted_error *err)
{
    for (int s = 0; s < out->src_vocab; s++) {
        for (int k = out->offsets[s]; k < out->offsets[s + 1]; k++) {
            uint32_t id = ted_le_u32(ids + 4 * (size_t)(k - base));
            if (id >= (uint32_t)out->tgt_vocab)
                return ted_fail(err, TED_ERR_FORMAT,
                                "%s: target id %u in the list of source id %d is outside the "
                                "target vocabulary (0..%d)",
                                name, (unsigned)id, s, out->tgt_vocab - 1);
            if (k > out->offsets[s] && (int)id <= out->targets[k - 1])
                return ted_fail(err, TED_ERR_FORMAT,
                                "%s: the list of source id %d is not sorted (%d, then %u)",
                                name, s, out->targets[k - 1], (unsigned)id);
            out->targets[k] = (int)id;
        }
    }
    return TED_OK;
}

ted_status ted_shortlist_bin_parse(const void *bytes, size_t size, const char *name,
                                   int src_vocab, int tgt_vocab, ted_shortlist *out,
                                   ted_error *err)
{
    memset(out, 0, sizeof *out);
    if (src_vocab < 0 || tgt_vocab <= 0)
        return ted_fail(err, TED_ERR_ARGUMENT, "%s: vocabulary sizes %d and %d", name,
                        src_vocab, tgt_vocab);
    bin_header h = {0};
    ted_status s = read_header(bytes, size, name, src_vocab, &h, err);
    if (s)
        return s;
    int first = h.first_num < (uint64_t)tgt_vocab ? (int)h.first_num : tgt_vocab;
    out->src_vocab = src_vocab;
    out->tgt_vocab = tgt_vocab;
    out->offsets = malloc(((size_t)src_vocab + 1) * sizeof(int));
    out->targets = malloc(((size_t)first + (size_t)h.list_size + 1) * sizeof(int));
    if (!out->offsets || !out->targets) {
        free(out->offsets);
        free(out->targets);
        memset(out, 0, sizeof *out);
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory for %llu target ids", name,
                        (unsigned long long)h.list_size);
    }
    for (int i = 0; i < first; i++)
        out->targets[i] = i;
    const unsigned char *p = bytes;
    s = read_offsets(p, &h, name, first, out, err);
    if (!s)
        s = read_lists(p + TED_SHORTLIST_BIN_HEADER_BYTES + 8 * h.offsets, name, first, out,
                       err);
    if (s) {
        free(out->offsets);
        free(out->targets);
        memset(out, 0, sizeof *out);
        return s;
    }
    out->frequent = out->targets;
    out->frequent_count = first;
    out->binary = true;
    out->pad_multiple = BIN_PAD_MULTIPLE;
    out->pad_from = first;
    return TED_OK;
}
