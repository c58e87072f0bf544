/*
 * clock.h - the scheduler's clock: nanoseconds from the CPU's cycle
 * counter where it is invariant (x86-64 with the invariant-TSC bit,
 * aarch64's generic timer), else clock_gettime(CLOCK_MONOTONIC).
 *
 * A scheduling point reads the clock once (run-time and wait-time
 * accounting, slices, timers), unless its policy charges at the tick
 * (mqs__sched_clock in sched_clock.h).  clock_gettime through the vDSO costs
 * 15-40 ns, more than a whole yield is allowed; rdtsc costs a few.  The
 * counter is converted with a multiplier and shift calibrated against
 * CLOCK_MONOTONIC when a runtime is created, and kept in the runtime (and
 * copied into each worker), not in a global.
 */
#ifndef MQS_CLOCK_H
#define MQS_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

typedef struct mqs__clock {
    bool counter;       /* true: use the cycle counter                    */
    uint64_t base_cyc;  /* counter value at calibration                   */
    uint64_t base_ns;   /* CLOCK_MONOTONIC at calibration                 */
    uint64_t mult;      /* ns = base_ns + ((cyc - base_cyc) * mult >> 32) */
} mqs__clock_t;

static inline uint64_t mqs__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread: a system call (~0.2 us), so only for
 * rare checks (sched.c: was a long run really a stall?). */
static inline uint64_t mqs__thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mqs__cycles(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}

static inline uint64_t mqs__clock_ns(const mqs__clock_t *c)
{
    if (!c->counter)
        return mqs__mono_ns();
    uint64_t d = mqs__cycles() - c->base_cyc;
    return c->base_ns + (uint64_t)(((unsigned __int128)d * c->mult) >> 32);
}

/* Re-anchor the counter to CLOCK_MONOTONIC now, so calibration error
 * cannot accumulate (called every few ms and before timers run).  Returns
 * the monotonic time. */
static inline uint64_t mqs__clock_resync(mqs__clock_t *c)
{
    uint64_t ns = mqs__mono_ns();
    if (c->counter) {
        c->base_cyc = mqs__cycles();
        c->base_ns = ns;
    }
    return ns;
}

/* Calibrate (in clock.c); spends about 2 ms on x86-64, 1 on aarch64. */
void mqs__clock_init(mqs__clock_t *c);

/* The multiplier to use given a counter rate register (aarch64's
 * CNTFRQ_EL0, Hz; 0: none) and a measured multiplier (0: none): the
 * register's unless the measurement disagrees by more than 1/8. */
uint64_t mqs__clock_choose_mult(uint64_t reg_hz, uint64_t measured);

#endif
