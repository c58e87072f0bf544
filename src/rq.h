/*
 * rq.h - the run queue layer's calls for the layers above it (placement,
 * schedule, the worker loop): the owner side of the biased lock, inline
 * because a yield takes it once, and the queue-level steps that several
 * of those layers take.  rq.c has the design.
 */
#ifndef MQS_RQ_H
#define MQS_RQ_H

#include "internal.h"

/* mqs_best_prio_anywhere, inline for the core's hot paths (a wake-up
 * that hands the worker over checks it twice): the three words are read
 * at once, and the common answer, nothing queued anywhere, takes no
 * loop. */
static MQS__HOT unsigned mqs__best_prio_anywhere(const mqs_runtime_t *rt)
{
    _Static_assert(MQS_LEVEL_HINT_WORDS == 3, "one load per word below");
    uint64_t b0 = atomic_load_explicit(&rt->level_bits[0], memory_order_relaxed);
    uint64_t b1 = atomic_load_explicit(&rt->level_bits[1], memory_order_relaxed);
    uint64_t b2 = atomic_load_explicit(&rt->level_bits[2], memory_order_relaxed);
    if (MQS__LIKELY(!(b0 | b1 | b2)))
        return MQS_PRIO_NONE;
    return b0   ? (unsigned)__builtin_ctzll(b0)
           : b1 ? 64 + (unsigned)__builtin_ctzll(b1)
                : 128 + (unsigned)__builtin_ctzll(b2);
}

/* The slow half of mqs__own_lock: a plain acquire, then the bias upkeep. */
void mqs__own_lock_slow(struct mqs_worker *w);

/* Lock w's own rq from w.  Returns true when it entered through the bias
 * (two plain stores, no atomic read-modify-write); pass the result to
 * mqs__own_unlock. */
static MQS__HOT bool mqs__own_lock(struct mqs_worker *w)
{
    mqs__spinlock_t *l = w->rq.lock;
    if (MQS__LIKELY(atomic_load_explicit(&l->biased, memory_order_relaxed))) {
        atomic_store_explicit(&l->owner_in, 1, memory_order_relaxed);
        /* Compiler order only: the hardware order of the store above and
         * the loads below is what a revoker's membarrier provides. */
        atomic_signal_fence(memory_order_seq_cst);
        if (MQS__LIKELY(
                (atomic_load_explicit(&l->v, memory_order_acquire) |
                 atomic_load_explicit(&l->notes, memory_order_relaxed)) == 0)) {
            MQS__CHK_TOOK(&w->rq);
            return true;
        }
        atomic_store_explicit(&l->owner_in, 0, memory_order_release);
    }
    if (MQS__UNLIKELY(!w->bias_ok))
        mqs__spin_acquire(l); /* never biased (a shared queue): plain */
    else
        mqs__own_lock_slow(w);
    MQS__CHK_TOOK(&w->rq);
    return false;
}

static MQS__HOT void mqs__own_unlock(struct mqs_worker *w, bool fast)
{
    MQS__CHK_RELEASE(&w->rq);
    if (fast)
        atomic_store_explicit(&w->rq.lock->owner_in, 0, memory_order_release);
    else
        mqs__spin_unlock(w->rq.lock);
}

/* Going idle: drop the bias, so wake-ups onto this worker (the common
 * remote lock of an idle worker) take the plain path. */
void mqs__bias_drop(struct mqs_worker *w);
/* The owner settles its rq's hint count (mqs_rq_publish): only an
 * emptied queue can hold a stale one.  No lock held. */
void mqs__rq_hint_settle(struct mqs_worker *w);
/* Count n tasks pulled by w for balancing reason `why` (MQS_BALANCE_*;
 * anything else counts as a priority pull). */
void mqs__count_pulls(struct mqs_worker *w, int why, int n);
/* Queue t on rq through the policy's enqueue; rq's lock held. */
void mqs__rq_enqueue_locked(struct mqs_rq *rq, struct mqs_task *t, int flags);

#endif
