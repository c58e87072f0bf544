/*
 * clock.c - calibration of the cycle counter against CLOCK_MONOTONIC.
 *
 * x86-64: the TSC is used only when CPUID says it is invariant (constant
 * rate, runs in deep C-states: leaf 0x80000007, EDX bit 8); its rate is
 * measured over ~2 ms.  aarch64: CNTVCT_EL0 always ticks at CNTFRQ_EL0.
 * Anything else falls back to clock_gettime.
 */
#include "clock.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

static bool tsc_invariant(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return false;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1;
}
#endif

void mqs__clock_init(mqs__clock_t *c)
{
    memset(c, 0, sizeof *c);
#if defined(__x86_64__)
    if (!tsc_invariant())
        return;
    uint64_t n0 = mqs__mono_ns(), c0 = mqs__cycles();
    uint64_t n1, c1;
    do {
        n1 = mqs__mono_ns();
        c1 = mqs__cycles();
    } while (n1 - n0 < 2000000);
    if (c1 <= c0)
        return;
    c->mult = (uint64_t)((((unsigned __int128)(n1 - n0)) << 32) / (c1 - c0));
    c->base_cyc = c1;
    c->base_ns = n1;
    c->counter = c->mult != 0;
#elif defined(__aarch64__)
    uint64_t frq;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(frq));
    if (frq == 0)
        return;
    c->mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / frq);
    c->base_ns = mqs__mono_ns();
    c->base_cyc = mqs__cycles();
    c->counter = true;
#endif
}
