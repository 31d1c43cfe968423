/* SipHash-1-3 (Aumasson and Bernstein; one compression round per 8-byte
 * block, three finalization rounds), keyed once per process from the
 * kernel's random source. */
#include "core/hash.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t key[2];  /* the process's key */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* From /dev/urandom; should it be unreadable, from the clock and addresses,
 * which still differ from run to run. */
static void draw_key(void)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t got = read(fd, key, sizeof key);
        close(fd);
        if (got == (ssize_t)sizeof key)
            return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    key[0] = (uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)(uintptr_t)&now;
    key[1] = (uint64_t)now.tv_sec * 0xbf58476d1ce4e5b9u ^ (uint64_t)(uintptr_t)&key;
}

static inline uint64_t rotate(uint64_t x, int bits) { return (x << bits) | (x >> (64 - bits)); }

typedef struct sip_state {
    uint64_t v0, v1, v2, v3;
} sip_state;

static inline void sip_round(sip_state *s)
{
    s->v0 += s->v1; s->v1 = rotate(s->v1, 13); s->v1 ^= s->v0; s->v0 = rotate(s->v0, 32);
    s->v2 += s->v3; s->v3 = rotate(s->v3, 16); s->v3 ^= s->v2;
    s->v0 += s->v3; s->v3 = rotate(s->v3, 21); s->v3 ^= s->v0;
    s->v2 += s->v1; s->v1 = rotate(s->v1, 17); s->v1 ^= s->v2; s->v2 = rotate(s->v2, 32);
}

static inline void absorb(sip_state *s, uint64_t block, int rounds)
{
    s->v3 ^= block;
    for (int i = 0; i < rounds; i++)
        sip_round(s);
    s->v0 ^= block;
}

static uint64_t load_le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint64_t ted_siphash(const uint64_t k[2], int compression_rounds, int final_rounds,
                     const void *bytes, size_t length)
{
    const unsigned char *p = bytes;
    sip_state s = {k[0] ^ 0x736f6d6570736575u, k[1] ^ 0x646f72616e646f6du,
                   k[0] ^ 0x6c7967656e657261u, k[1] ^ 0x7465646279746573u};
    size_t whole = length - length % 8;
    for (size_t i = 0; i < whole; i += 8)
        absorb(&s, load_le(p + i, 8), compression_rounds);
    absorb(&s, load_le(p + whole, length % 8) | (uint64_t)(length & 0xff) << 56,
           compression_rounds);
    s.v2 ^= 0xff;
    for (int i = 0; i < final_rounds; i++)
        sip_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t ted_hash(const void *bytes, size_t length)
{
    pthread_once(&key_once, draw_key);
    return ted_siphash(key, 1, 3, bytes, length);
}
