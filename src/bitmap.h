/*
 * bitmap.h - fixed-size bit arrays over 64-bit words, with find-first-set,
 * for priority bitmaps (the O(1) scheduler's 140-bit map) and worker masks.
 * Header-only; plain (non-atomic) words: callers hold the lock that guards
 * the map.
 */
#ifndef MQS_BITMAP_H
#define MQS_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

#define MQS__BITMAP_WORDS(nbits) (((nbits) + 63) / 64)

static inline void mqs__bit_set(uint64_t *map, unsigned bit)
{
    map[bit >> 6] |= UINT64_C(1) << (bit & 63);
}

static inline void mqs__bit_clear(uint64_t *map, unsigned bit)
{
    map[bit >> 6] &= ~(UINT64_C(1) << (bit & 63));
}

static inline bool mqs__bit_test(const uint64_t *map, unsigned bit)
{
    return (map[bit >> 6] >> (bit & 63)) & 1;
}

/* Index of the lowest set bit in map[0..words), or `none` when empty. */
static inline unsigned mqs__bit_first(const uint64_t *map, unsigned words,
                                      unsigned none)
{
    for (unsigned i = 0; i < words; i++)
        if (map[i])
            return i * 64 + (unsigned)__builtin_ctzll(map[i]);
    return none;
}

/* Index of the lowest set bit >= from, or `none`. */
static inline unsigned mqs__bit_next(const uint64_t *map, unsigned words,
                                     unsigned from, unsigned none)
{
    unsigned i = from >> 6;
    if (i >= words)
        return none;
    uint64_t w = map[i] & (~UINT64_C(0) << (from & 63));
    for (;;) {
        if (w)
            return i * 64 + (unsigned)__builtin_ctzll(w);
        if (++i >= words)
            return none;
        w = map[i];
    }
}

/* Mask of the bits of word `word` that lie below bit index `limit`. */
static inline uint64_t mqs__below_mask(unsigned limit, unsigned word)
{
    unsigned lo = word * 64;
    if (limit <= lo)
        return 0;
    if (limit >= lo + 64)
        return ~UINT64_C(0);
    return (UINT64_C(1) << (limit - lo)) - 1;
}

#endif
