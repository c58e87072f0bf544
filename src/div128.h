/*
 * div128.h - 128-by-64-bit division without the compiler's helpers.
 *
 * Why.  A `/` on an `unsigned __int128` is a call to libgcc's (or
 * compiler-rt's) __udivti3, and a signed one to __divti3.  Those helpers
 * are linked into the program's own .text, where the preemption handler
 * (src/preempt.c) may stop a task; a stop inside one that the runtime
 * called with a spin lock held outside in_runtime would leave the lock
 * held by a task that the next one on the worker waits for.  So the
 * runtime divides with these instead, and the ctest no_compiler_helpers
 * (tests/no_compiler_helpers.cmake) fails on any helper libmqs.a
 * references.  Products of two 64-bit values need no helper (one mul /
 * umulh instruction) and stay plain `__int128` arithmetic.
 *
 * mqs__div128(n, d) is exactly (uint64_t)(n / d): the low 64 bits of the
 * quotient, what the casts it replaces kept.  x86-64 divides in one divq;
 * elsewhere (aarch64 has no 128-by-64 divide) mqs__div128_soft does the
 * long division in 64-bit steps (Hacker's Delight, 2nd ed., 9-4 divlu).
 * test_units checks the soft path against the compiler's division on
 * every build.
 */
#ifndef MQS_DIV128_H
#define MQS_DIV128_H

#include <stdint.h>

/* (hi:lo) / d for hi < d (the quotient fits in 64 bits), d != 0. */
static inline uint64_t mqs__div128_soft(uint64_t hi, uint64_t lo, uint64_t d)
{
    const uint64_t b = (uint64_t)1 << 32;
    /* Normalise: the divisor's top bit set keeps each estimate q of a
     * 32-bit digit within 2 of the true one.  A builtin, not a helper:
     * clz (aarch64) and bsr (x86-64) are instructions. */
    int s = __builtin_clzll(d);
    d <<= s;
    uint64_t dn1 = d >> 32, dn0 = d & 0xffffffffu;
    uint64_t n32 = s ? (hi << s) | (lo >> (64 - s)) : hi;
    uint64_t n10 = lo << s;
    uint64_t n1 = n10 >> 32, n0 = n10 & 0xffffffffu;
    uint64_t q1 = n32 / dn1, rhat = n32 - q1 * dn1;
    while (q1 >= b || q1 * dn0 > b * rhat + n1) {
        q1--;
        rhat += dn1;
        if (rhat >= b)
            break;
    }
    uint64_t n21 = n32 * b + n1 - q1 * d; /* modulo 2^64, as intended */
    uint64_t q0 = n21 / dn1;
    rhat = n21 - q0 * dn1;
    while (q0 >= b || q0 * dn0 > b * rhat + n0) {
        q0--;
        rhat += dn1;
        if (rhat >= b)
            break;
    }
    return q1 * b + q0;
}

/* (uint64_t)(n / d), d != 0. */
static inline uint64_t mqs__div128(unsigned __int128 n, uint64_t d)
{
    uint64_t hi = (uint64_t)(n >> 64), lo = (uint64_t)n;
    if (hi == 0)
        return lo / d;
    /* The quotient's high word is hi / d; the cast drops it, and what is
     * left divides as (hi % d):lo, whose quotient fits. */
    hi %= d;
#if defined(__x86_64__)
    uint64_t q, r;
    __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(d));
    (void)r;
    return q;
#else
    return mqs__div128_soft(hi, lo, d);
#endif
}

/* (int64_t)(n / d) for a signed n, d > 0: C's division truncates toward
 * zero, so the magnitude divides and the sign follows (the low 64 bits
 * of -q are minus those of q, so the cast's truncation agrees too). */
static inline int64_t mqs__sdiv128(__int128 n, uint64_t d)
{
    unsigned __int128 m = n < 0 ? -(unsigned __int128)n : (unsigned __int128)n;
    uint64_t q = mqs__div128(m, d);
    return (int64_t)(n < 0 ? -q : q);
}

#endif /* MQS_DIV128_H */
