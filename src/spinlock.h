/*
 * spinlock.h - the lock under every run queue, timer heap and wait queue.
 *
 * Test-and-test-and-set with a pause in the wait loop.  Critical sections
 * in mqs are a handful of list operations, never a blocking call, so a
 * spinning waiter loses less than a futex round trip would cost.  A ticket
 * or MCS lock would add fairness under heavy contention; per-worker queues
 * keep contention low enough that the one atomic exchange of TTAS wins on
 * the uncontended path, which is the path yields take.
 */
#ifndef MQS_SPINLOCK_H
#define MQS_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct mqs__spinlock {
    atomic_uint v;
} mqs__spinlock_t;

static inline void mqs__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static inline void mqs__spin_init(mqs__spinlock_t *l)
{
    atomic_init(&l->v, 0);
}

static inline bool mqs__spin_trylock(mqs__spinlock_t *l)
{
    return atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
           atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0;
}

static inline void mqs__spin_lock(mqs__spinlock_t *l)
{
    while (atomic_exchange_explicit(&l->v, 1, memory_order_acquire) != 0)
        while (atomic_load_explicit(&l->v, memory_order_relaxed) != 0)
            mqs__cpu_relax();
}

static inline void mqs__spin_unlock(mqs__spinlock_t *l)
{
    atomic_store_explicit(&l->v, 0, memory_order_release);
}

static inline bool mqs__spin_held(mqs__spinlock_t *l)
{
    return atomic_load_explicit(&l->v, memory_order_relaxed) != 0;
}

#endif
