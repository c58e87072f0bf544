/*
 * clock.c - calibration of the cycle counter against CLOCK_MONOTONIC.
 *
 * x86-64: the TSC is used only when CPUID says it is invariant (constant
 * rate, runs in deep C-states: leaf 0x80000007, EDX bit 8); its rate is
 * measured over ~2 ms.  aarch64: CNTVCT_EL0 ticks at the rate in
 * CNTFRQ_EL0, which is exact and noise-free where it is right, but it is
 * whatever the firmware wrote: Linux takes the rate from the device tree
 * where firmware left it wrong, while user space still reads the
 * register.  So the register's rate is checked against one measured over
 * ~1 ms and the measured one is used when they differ by more than 1/8
 * (a wrong register is off by a factor, a measurement on a loaded machine
 * by far less).  Anything else falls back to clock_gettime.
 */
#include "clock.h"
#include "div128.h"
#include "mqs.h"

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

#if defined(__x86_64__) || defined(__aarch64__)
/* A counter read paired with CLOCK_MONOTONIC: the counter read between
 * two monotonic reads, the narrowest of five tries, the pair's time
 * taken at the middle.  A thread preempted between a monotonic read and
 * the counter read paired with it (a loaded machine, a host's vCPU
 * taken away, qemu translating the code in between) would pair values
 * milliseconds apart, and a rate measured over 1-2 ms from such a pair
 * can be off by a factor: under qemu on a loaded host the runtime's
 * clock ran 15-25 % fast until it was re-anchored. */
static void clock_pair(uint64_t *ns, uint64_t *cyc)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = mqs__mono_ns(), c = mqs__cycles(), b = mqs__mono_ns();
        if (b - a < best) {
            best = b - a;
            *ns = a + (b - a) / 2;
            *cyc = c;
        }
    }
}

/* Measure the counter against CLOCK_MONOTONIC for window_ns: returns
 * the multiplier (ns << 32 per count; 0 if the counter did not advance)
 * and leaves the end of the window in c's base. */
static uint64_t clock_measure(mqs__clock_t *c, uint64_t window_ns)
{
    uint64_t n0 = 0, c0 = 0, n1 = 0, c1 = 0;
    clock_pair(&n0, &c0);
    do
        clock_pair(&n1, &c1);
    while (n1 - n0 < window_ns);
    c->base_cyc = c1;
    c->base_ns = n1;
    if (c1 <= c0)
        return 0;
    return mqs__div128((unsigned __int128)(n1 - n0) << 32, c1 - c0);
}
#endif

uint64_t mqs__clock_choose_mult(uint64_t reg_hz, uint64_t measured)
{
    if (reg_hz == 0)
        return measured;
    uint64_t reg = mqs__div128((unsigned __int128)1000000000u << 32, reg_hz);
    uint64_t diff = reg > measured ? reg - measured : measured - reg;
    return measured && diff > measured / 8 ? measured : reg;
}

void mqs__clock_init(mqs__clock_t *c)
{
    memset(c, 0, sizeof *c);
#if defined(__x86_64__)
    if (!tsc_invariant())
        return;
    c->mult = clock_measure(c, 2000000);
    c->counter = c->mult != 0;
#elif defined(__aarch64__)
    uint64_t frq;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(frq));
    c->mult = mqs__clock_choose_mult(frq, clock_measure(c, 1000000));
    c->counter = c->mult != 0;
#endif
}

uint64_t mqs_now_ns(void)
{
    return mqs__mono_ns();
}
