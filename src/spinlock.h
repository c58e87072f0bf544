/*
 * spinlock.h - the lock under every run queue, timer heap and wait queue.
 *
 * Test-and-test-and-set with a pause in the wait loop.  Critical sections
 * in mqs are a handful of list operations, never a blocking call, so a
 * spinning waiter loses less than a futex round trip would cost.  A ticket
 * or MCS lock would add fairness under heavy contention; per-worker queues
 * keep contention low enough that the one atomic exchange of TTAS wins on
 * the uncontended path.
 *
 * Run-queue locks can also be *biased* to their owning worker, which then
 * enters with two plain stores instead of the exchange (the exchange is a
 * full fence: in a yield loop it cost ~4 ns of ~19, waiting for the
 * context switch's stores to drain).  The owner announces itself in
 * `owner_in` and then checks `v`; a non-owner takes `v` with the exchange,
 * sees `biased`, and makes the owner's announcement visible with
 * membarrier(2) (an asymmetric Dekker pair: the heavy fence is paid only
 * by the rare side) before waiting for `owner_in` to clear, and then
 * clears `biased` itself, so a stream of remote wake-ups pays membarrier
 * once.  Its `notes` tell the owner, which keeps out of the bias path
 * until it has read them under `v` and biases again only after a quiet
 * spell with no remote locker (rq.c and rq.h, which own the owner side).
 * Every lock carries the three bias bytes so that code holding only a
 * `mqs__spinlock_t *` (a run queue's `lock` pointer) locks correctly
 * whatever it points at; on other locks `biased` stays 0 and they cost one
 * extra load of a byte on a line just taken.
 *
 * Rejected: a lock-free inbox for remote wake-ups (defers enqueue, so the
 * policy and the published summaries would lag the real queue, and
 * thieves still need the lock); holding the lock across a task's whole
 * run (a long-running task would lock thieves out).
 */
#ifndef MQS_SPINLOCK_H
#define MQS_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct mqs__spinlock {
    atomic_uchar v;        /* 1 while held through the exchange          */
    atomic_uchar biased;   /* owner may enter without it; written with v
                              held: set by the owner, cleared by it or by
                              a revoker once the owner is out           */
    atomic_uchar owner_in; /* the owner is inside through the bias       */
    atomic_uchar notes;    /* MQS__LOCK_*; written with v held           */
} mqs__spinlock_t;

/* notes: a non-owner took the lock; a non-owner asks to drop the bias. */
#define MQS__LOCK_REMOTE 1u
#define MQS__LOCK_UNBIAS 2u

/* The non-owner side of a biased lock, with v held (base.c): returns
 * true once the owner is out, false when `wait` is false and it stayed in
 * for a while (the caller then gives the lock up). */
bool mqs__spin_revoke(mqs__spinlock_t *l, bool wait);

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
    atomic_init(&l->biased, 0);
    atomic_init(&l->owner_in, 0);
    atomic_init(&l->notes, 0);
}

/* Take v, ignoring any bias: for the owner, or inside the helpers. */
static inline void mqs__spin_acquire(mqs__spinlock_t *l)
{
    while (atomic_exchange_explicit(&l->v, 1, memory_order_acquire) != 0)
        while (atomic_load_explicit(&l->v, memory_order_relaxed) != 0)
            mqs__cpu_relax();
}

/* v is held by a caller that may not be the owner: note it, and wait the
 * owner out of a biased lock.  False: wait was false and it did not
 * leave. */
static inline bool mqs__spin_settle(mqs__spinlock_t *l, bool wait)
{
    if (__builtin_expect(
            atomic_load_explicit(&l->biased, memory_order_relaxed), 0))
        return mqs__spin_revoke(l, wait);
    unsigned n = atomic_load_explicit(&l->notes, memory_order_relaxed);
    if (!(n & MQS__LOCK_REMOTE))
        atomic_store_explicit(&l->notes, (unsigned char)(n | MQS__LOCK_REMOTE),
                              memory_order_relaxed);
    return true;
}

static inline bool mqs__spin_trylock(mqs__spinlock_t *l)
{
    if (atomic_load_explicit(&l->v, memory_order_relaxed) != 0 ||
        atomic_exchange_explicit(&l->v, 1, memory_order_acquire) != 0)
        return false;
    if (mqs__spin_settle(l, false))
        return true;
    atomic_store_explicit(&l->v, 0, memory_order_release);
    return false;
}

static inline void mqs__spin_lock(mqs__spinlock_t *l)
{
    mqs__spin_acquire(l);
    mqs__spin_settle(l, true);
}

static inline void mqs__spin_unlock(mqs__spinlock_t *l)
{
    atomic_store_explicit(&l->v, 0, memory_order_release);
}

static inline bool mqs__spin_held(mqs__spinlock_t *l)
{
    return atomic_load_explicit(&l->v, memory_order_relaxed) != 0 ||
           atomic_load_explicit(&l->owner_in, memory_order_relaxed) != 0;
}

#endif
