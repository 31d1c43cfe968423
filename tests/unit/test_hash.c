/* The keyed hash of the vocabulary table (core/hash.c) against the
 * published SipHash test vectors. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "core/hash.h"

/* The reference key 00 01 .. 0f and messages 00 01 .. (n - 1), from the
 * SipHash paper (Aumasson and Bernstein, appendix A) and its reference
 * implementation's vectors.h (SipHash-2-4, 64-bit output). */
static void reference_input(uint64_t key[2], unsigned char *message, size_t n)
{
    unsigned char k[16];
    for (int i = 0; i < 16; i++)
        k[i] = (unsigned char)i;
    memcpy(key, k, 16);  /* little-endian words, as the reference loads them */
    for (size_t i = 0; i < n; i++)
        message[i] = (unsigned char)i;
}

Test(hash, siphash_2_4_reference_vectors)
{
    static const struct {
        size_t length;
        uint64_t hash;
    } vectors[] = {
        {0, 0x726fdb47dd0e0e31u},
        {1, 0x74f839c593dc67fdu},
        {7, 0xab0200f58b01d137u},
        {8, 0x93f5f5799a932462u},
        {15, 0xa129ca6149be45e5u},
        {63, 0x958a324ceb064572u},
    };
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        uint64_t key[2];
        unsigned char message[64];
        reference_input(key, message, vectors[i].length);
        uint64_t got = ted_siphash(key, 2, 4, message, vectors[i].length);
        cr_assert_eq(got, vectors[i].hash, "length %zu: got %016llx, want %016llx",
                     vectors[i].length, (unsigned long long)got,
                     (unsigned long long)vectors[i].hash);
    }
}

Test(hash, process_key_is_stable_and_spreads)
{
    cr_assert_eq(ted_hash("token", 5), ted_hash("token", 5));
    cr_assert_neq(ted_hash("token", 5), ted_hash("tokem", 5));
    cr_assert_neq(ted_hash("", 0), ted_hash("\0", 1), "the length is part of the hash");
}

/* ---- hash flooding -------------------------------------------------------
 * A vocabulary whose tokens all fall in one slot of an unkeyed hash table
 * (built here against FNV-1a, the classic choice) turns each insertion into
 * a walk over every token before it: 65 536 such tokens took 17 s to load
 * with FNV-1a and linear probing. Under a keyed hash they are ordinary
 * tokens. */

#include <time.h>

#include "io/vocab.h"

enum { FLOOD_TOKENS = 65536, FLOOD_SLOT_BITS = 17 /* the table of 65 536 tokens */ };

static uint64_t fnv1a_step(uint64_t h, unsigned char byte)
{
    return (h ^ byte) * 1099511628211u;
}

enum { PREFIX = 10, TOKEN = PREFIX + 1, LINE = TOKEN + 1 };

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Appends to `text` lines of TOKEN bytes whose FNV-1a hash has its low
 * FLOOD_SLOT_BITS bits zero: PREFIX random letters, then the one last byte
 * that clears the low 8 bits of the state, kept when bits 8..16 are zero too
 * and that byte is printable. (26^10 prefixes: no two tokens repeat.) */
static size_t colliding_tokens(char *text, int count)
{
    size_t n = 0;
    uint64_t seed = 1;
    for (int found = 0; found < count;) {
        char *token = text + n;
        uint64_t h = 14695981039346656037u;
        for (int i = 0; i < PREFIX; i++) {
            token[i] = (char)('a' + splitmix64(&seed) % 26);
            h = fnv1a_step(h, (unsigned char)token[i]);
        }
        unsigned char last = (unsigned char)(h & 0xff);
        if ((h & ((1u << FLOOD_SLOT_BITS) - 1) & ~0xffu) || last < 0x21 || last > 0x7e)
            continue;
        token[PREFIX] = (char)last;
        token[TOKEN] = '\n';
        n += LINE;
        found++;
    }
    return n;
}

Test(hash, vocabulary_built_to_collide_loads_quickly)
{
    char *text = malloc((size_t)FLOOD_TOKENS * LINE + 1);
    cr_assert_not_null(text);
    size_t length = colliding_tokens(text, FLOOD_TOKENS);
    /* the construction is right: every token's FNV-1a slot is 0 */
    for (size_t at = 0; at < length; at += LINE) {
        uint64_t h = 14695981039346656037u;
        for (int i = 0; i < TOKEN; i++)
            h = fnv1a_step(h, (unsigned char)text[at + i]);
        cr_assert_eq(h & ((1u << FLOOD_SLOT_BITS) - 1), 0, "token at %zu", at);
    }

    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    ted_vocab vocab;
    ted_error err = {0};
    ted_status status = ted_vocab_parse(text, length, "flood.vocab", &vocab, &err);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) * 1e-9;
    cr_assert_eq(status, TED_OK, "%s", err.message);
    cr_assert_lt(seconds, 5.0, "a vocabulary built to collide took %.1f s to load", seconds);
    for (int id = 0; id < FLOOD_TOKENS; id += 4099)
        cr_assert_eq(ted_vocab_lookup(&vocab, text + (size_t)id * LINE, TOKEN), id);
    ted_vocab_free(&vocab);
    free(text);
}
