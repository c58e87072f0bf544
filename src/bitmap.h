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

/* Is any bit below `limit` set in a 3-word (192-bit) map?  (For priority
 * maps: is anything more urgent than level `limit` there?) */
static inline bool mqs__bit_any_below3(const uint64_t *map, unsigned limit)
{
    return ((map[0] & mqs__below_mask(limit, 0)) |
            (map[1] & mqs__below_mask(limit, 1)) |
            (map[2] & mqs__below_mask(limit, 2))) != 0;
}

static inline unsigned mqs__bit_count(const uint64_t *map, unsigned words)
{
    unsigned n = 0;
    for (unsigned i = 0; i < words; i++)
        n += (unsigned)__builtin_popcountll(map[i]);
    return n;
}

#endif
