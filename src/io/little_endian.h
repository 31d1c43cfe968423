/* Little-endian integers read from bytes at any alignment: the byte order
 * of safetensors, NumPy's zip archives and Marian's binary files. */
#ifndef TED_IO_LITTLE_ENDIAN_H
#define TED_IO_LITTLE_ENDIAN_H

#include <stdint.h>

/* p[0..2) */
static inline uint16_t ted_le_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* p[0..4) */
static inline uint32_t ted_le_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* p[0..4), two's complement */
static inline int32_t ted_le_i32(const unsigned char *p)
{
    return (int32_t)ted_le_u32(p);
}

/* p[0..8) */
static inline uint64_t ted_le_u64(const unsigned char *p)
{
    return (uint64_t)ted_le_u32(p) | (uint64_t)ted_le_u32(p + 4) << 32;
}

#endif
