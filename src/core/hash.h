/* A keyed hash for tables whose keys come from files (vocabularies): the
 * key is drawn at random once per process, so no file can be built to make
 * its tokens collide (hash flooding). */
#ifndef TED_CORE_HASH_H
#define TED_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-c-d of the `length` bytes at `bytes` under the 128-bit key `k`:
 * c compression rounds per 8-byte block, d finalization rounds. */
uint64_t ted_siphash(const uint64_t k[2], int compression_rounds, int final_rounds,
                     const void *bytes, size_t length);

/* SipHash-1-3 of the `length` bytes at `bytes` under the process's key. */
uint64_t ted_hash(const void *bytes, size_t length);

#endif
