/* Marian's binary lexical shortlist (`lex.<first>.<best>.<pair>.s2t.bin`,
 * what Firefox Translations ships and `marian-conv --shortlist FILE FIRST
 * BEST THRESHOLD --dump-shortlist OUT` writes): the layout of marian-dev's
 * src/data/shortlist.h (BinaryShortlistGenerator::Header) and
 * shortlist.cpp (import, load, contentCheck, generate), little-endian:
 *
 *   u64 magic 0xF11A48D5013417F5
 *   u64 checksum
 *   u64 firstNum      the most frequent target ids 0 .. firstNum - 1,
 *                     which every batch keeps
 *   u64 bestNum       the longest list (what import kept per source id)
 *   u64 offsets count the source vocabulary's size + 1
 *   u64 list size     the number of target ids below
 *   offsets count u64: source s lists ids[offsets[s] .. offsets[s + 1])
 *   list size u32:     the target ids, each list sorted
 *
 * and nothing after. The checksum is util::hashMem<uint64_t, uint64_t>
 * (src/common/hash.h) over the u64 words from byte 16 on ((size - 16) / 8
 * of them: a trailing half word is left out): from seed 0, each word w
 * gives seed ^= w + 0x9e3779b9 + (seed << 6) + (seed >> 2) (Boost's
 * hash_combine with std::hash<uint64_t>, the identity in libstdc++).
 *
 * A batch's targets (BinaryShortlistGenerator::generate): the first
 * firstNum ids, the lists of the batch's source ids, the source ids
 * themselves when source and target share one vocabulary, then, until
 * their count is a multiple of 8, the smallest ids from firstNum up not
 * yet taken. */
#ifndef TED_IO_SHORTLIST_BIN_H
#define TED_IO_SHORTLIST_BIN_H

#include <stddef.h>
#include <stdint.h>

#include "io/shortlist.h"
#include "ted/ted.h"

#define TED_SHORTLIST_BIN_MAGIC 0xF11A48D5013417F5ull
#define TED_SHORTLIST_BIN_HEADER_BYTES 48

/* Whether `bytes` start with the binary shortlist's magic. */
bool ted_shortlist_bin_is(const void *bytes, size_t size);

/* hashMem's checksum of the u64 words from byte 16 of `bytes` on. */
uint64_t ted_shortlist_bin_checksum(const void *bytes, size_t size);

/* Parses a binary shortlist for a model of these vocabulary sizes into
 * `out` (binary, pad_multiple 8, pad_from firstNum; add_sources is the
 * model's to set). Fails (TED_ERR_FORMAT, naming `name`) on a bad magic,
 * a size other than the header's, a checksum that differs, a source
 * vocabulary other than `src_vocab`, offsets that do not start at 0, rise
 * and end at the list size, a target id outside `tgt_vocab`, or a list not
 * strictly increasing (naming the source id). */
ted_status ted_shortlist_bin_parse(const void *bytes, size_t size, const char *name,
                                   int src_vocab, int tgt_vocab, ted_shortlist *out,
                                   ted_error *err);

#endif
