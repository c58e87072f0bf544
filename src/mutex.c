/*
 * mutex.c - the mutex: a word of state and a wait queue (waitq.c), in the
 * pattern sync.c's opening comment describes for every blocking object.
 *
 * Mutex.  `state` holds the owner task's address (tasks are at least
 * 8-byte aligned) with a WAITERS bit in the low bits.  Lock is one CAS
 * 0 -> self; unlock is one CAS self -> 0, which fails when WAITERS is set
 * and sends the unlocker to the slow path.  While the mutex is held, only
 * the holder of the wait queue's lock changes `state`, so the slow paths
 * can reason under that lock.  A waiter records when it first started
 * waiting (t->wait_value).  Unlock looks at the most urgent waiter: if it
 * has waited MQS_MUTEX_STARVE_NS, ownership is handed to it (state becomes
 * its address, so nobody can barge in; the woken task returns owning the
 * mutex); otherwise the mutex is released and the waiter woken to compete
 * again, and a task arriving meanwhile may take it (Go's sync.Mutex normal
 * and starvation modes, decided per unlock here).  Rejected: always
 * handing off (every contended unlock then costs a full switch before
 * anyone can enter: convoys); a separate owner field (the owner in the
 * state word makes EPERM/EDEADLK checks free and the fast path one CAS).
 *
 * Robustness.  An address identifies its task only while the task lives:
 * a task that exited holding a mutex used to leave it "owned" by whatever
 * task was next spawned on the same stack (MQS_EDEADLK from its lock, 0
 * from an unlock of a mutex it never locked), and its waiters asleep for
 * ever.  So every task keeps the mutexes it holds on a list (held_mutexes,
 * linked through the mutex's held_next/held_prev), added when a lock
 * returns owning it, removed by unlock before it releases the state; both
 * are plain stores by the owner, which alone touches those fields while it
 * owns the mutex.  The exit (mqs__mutex_release_dead) releases each mutex
 * still on the list under its wait queue's lock: to the first waiter,
 * woken with MQS_EOWNERDEAD and owning it, or, with nobody waiting, to no
 * one with the OWNERDEAD bit set, which the next lock or trylock clears
 * as it takes the mutex and reports as MQS_EOWNERDEAD.  No exited task is
 * ever an owner, so comparing the state's owner with the caller's
 * address is an exact identity check.  Rejected: a generation number in
 * each task compared by lock and unlock (catches the reuse, but leaves the
 * mutex held for ever and its waiters blocked); pthreads' "consistent"
 * call and unrecoverable state (one more call and state for little: the
 * task told MQS_EOWNERDEAD owns the mutex and decides what to do).
 *
 *
 * Callers: lock and timedlock are task only (MQS_EPERM); trylock and
 * unlock need an owner task, so from a non-task they return MQS_EPERM;
 * init and destroy may be called from any thread.
 */
#include <stdint.h>

#include "internal.h"
#include "plist.h"

_Static_assert(_Alignof(struct mqs_task) >= 8,
               "the mutex keeps flag bits in the low bits of the owner");

#define SYNC_WQ(storage) ((struct mqs__waitq *)(storage))

/* mqs__block result that means "woken, compete again". */
#define M_RETRY 1

#define M_WAITERS UINT64_C(1)
#define M_OWNERDEAD UINT64_C(2) /* only with no owner: last one exited */
#define M_FLAGS UINT64_C(7)

static inline uint64_t m_owner(uint64_t s)
{
    return s & ~M_FLAGS;
}

static inline uint64_t m_load(const mqs_mutex_t *m)
{
    return __atomic_load_n(&m->state, __ATOMIC_ACQUIRE);
}

static inline bool m_cas(mqs_mutex_t *m, uint64_t *expect, uint64_t want)
{
    return __atomic_compare_exchange_n(&m->state, expect, want, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* The owner's list of the mutexes it holds: plain stores, owner only. */
static inline void held_add(struct mqs_task *self, mqs_mutex_t *m)
{
    m->held_prev = NULL;
    m->held_next = self->held_mutexes;
    if (m->held_next)
        m->held_next->held_prev = m;
    self->held_mutexes = m;
}

static inline void held_del(struct mqs_task *self, mqs_mutex_t *m)
{
    if (m->held_prev)
        m->held_prev->held_next = m->held_next;
    else
        self->held_mutexes = m->held_next;
    if (m->held_next)
        m->held_next->held_prev = m->held_prev;
}

int mqs_mutex_init(mqs_mutex_t *m)
{
    if (!m)
        return MQS_EINVAL;
    __atomic_store_n(&m->state, 0, __ATOMIC_RELAXED);
    mqs__waitq_init(SYNC_WQ(&m->q));
    m->held_next = m->held_prev = NULL;
    return 0;
}

int mqs_mutex_destroy(mqs_mutex_t *m)
{
    if (!m)
        return MQS_EINVAL;
    struct mqs__waitq *q = SYNC_WQ(&m->q);
    MQS__WAITQ_LOCK(q);
    bool busy = m_owner(m_load(m)) != 0 || q->nwait > 0;
    mqs__waitq_unlock(q);
    return busy ? MQS_EBUSY : 0;
}

/* Take an unowned mutex whose state was s, keeping WAITERS and clearing
 * OWNERDEAD: what the taker returns (0 or MQS_EOWNERDEAD) on success. */
static bool m_take(mqs_mutex_t *m, uint64_t *s, uint64_t me, int *rc)
{
    if (!m_cas(m, s, me | (*s & M_WAITERS)))
        return false;
    *rc = (*s & M_OWNERDEAD) ? MQS_EOWNERDEAD : 0;
    return true;
}

/* One attempt to take an unowned mutex: 0 or MQS_EOWNERDEAD owning it
 * (and on self's list), else MQS_EBUSY. */
static int m_try(mqs_mutex_t *m, struct mqs_task *self)
{
    uint64_t s = m_load(m);
    int rc;
    while (m_owner(s) == 0)
        if (m_take(m, &s, (uintptr_t)self, &rc)) {
            held_add(self, m);
            return rc;
        }
    return MQS_EBUSY;
}

int mqs_mutex_trylock(mqs_mutex_t *m)
{
    if (!m)
        return MQS_EINVAL;
    struct mqs_task *self = mqs__current();
    if (!self)
        return MQS_EPERM;
    return m_try(m, self);
}

/*
 * Slow path: under the wait queue's lock, either take the mutex or set
 * WAITERS (so the owner's unlock comes through this lock) and block.
 * Returns 0 or MQS_EOWNERDEAD owning the mutex (taken here or handed
 * off), M_RETRY, or MQS_ETIMEDOUT.
 */
static int m_lock_slow(mqs_mutex_t *m, struct mqs_task *self,
                       uint64_t deadline)
{
    struct mqs__waitq *q = SYNC_WQ(&m->q);
    MQS__WAITQ_LOCK(q);
    uint64_t s = m_load(m);
    int rc;
    for (;;) {
        if (m_owner(s) == 0) {
            if (m_take(m, &s, (uintptr_t)self, &rc))
                break;
        } else if ((s & M_WAITERS) || m_cas(m, &s, s | M_WAITERS)) {
            return mqs__block(q, deadline, "mutex", m);
        }
    }
    mqs__waitq_unlock(q);
    return rc;
}

static int m_lock(mqs_mutex_t *m, uint64_t timeout_ns, bool timed)
{
    if (!m)
        return MQS_EINVAL;
    struct mqs_task *self = mqs__current();
    if (!self)
        return MQS_EPERM;
    uint64_t me = (uintptr_t)self, s = 0;
    if (MQS__LIKELY(m_cas(m, &s, me))) {
        held_add(self, m);
        return 0;
    }
    if (m_owner(s) == me)
        return MQS_EDEADLK;
    if (timed && timeout_ns == 0) {
        int rc = m_try(m, self);
        return rc == MQS_EBUSY ? MQS_ETIMEDOUT : rc;
    }
    uint64_t deadline = timed ? mqs__deadline(timeout_ns) : 0;
    self->wait_value = mqs_now_ns(); /* starvation clock: first wait */
    int rc;
    while ((rc = m_lock_slow(m, self, deadline)) == M_RETRY)
        ;
    if (rc != 0 && rc != MQS_EOWNERDEAD)
        return rc;
    if (m_owner(m_load(m)) != me)
        mqs__panic("mutex %p: task '%s' woken as owner but not owning it",
                   (void *)m, self->name);
    held_add(self, m);
    return rc;
}

int mqs_mutex_lock(mqs_mutex_t *m)
{
    return m_lock(m, 0, false);
}

int mqs_mutex_timedlock(mqs_mutex_t *m, uint64_t timeout_ns)
{
    return m_lock(m, timeout_ns, true);
}

/*
 * Slow unlock: WAITERS was set.  Hand off to a starved first waiter, or
 * release and wake the first waiter to compete.  Returns the task to wake
 * (after q->lock is dropped) or NULL.
 */
static struct mqs_task *m_unlock_slow(mqs_mutex_t *m, struct mqs__waitq *q)
{
    struct mqs_task *t = mqs__waitq_first(q);
    bool handoff = t && mqs_now_ns() - t->wait_value >= MQS_MUTEX_STARVE_NS;
    t = mqs__waitq_pop(q, handoff ? 0 : M_RETRY);
    uint64_t waiters = q->nwait > 0 ? M_WAITERS : 0;
    uint64_t next = (t && handoff) ? (uintptr_t)t | waiters : waiters;
    __atomic_store_n(&m->state, next, __ATOMIC_RELEASE);
    return t;
}

/* Unlock; a waiter woken goes out with wake_flags (MQS_ENQ_SYNC from a
 * condition wait, whose caller blocks next). */
int mqs__mutex_unlock_flags(mqs_mutex_t *m, int wake_flags)
{
    if (!m)
        return MQS_EINVAL;
    struct mqs_task *self = mqs__current();
    uint64_t me = (uintptr_t)self, s = me;
    if (!self)
        return MQS_EPERM;
    /* Only the owner changes the owner bits while it owns the mutex, so
     * this load is exact about whether we do; leave the list before the
     * state lets another task take the mutex and its held_* fields. */
    if (m_owner(m_load(m)) != me)
        return MQS_EPERM;
    held_del(self, m);
    if (MQS__LIKELY(__atomic_compare_exchange_n(&m->state, &s, 0, false,
                                                __ATOMIC_RELEASE,
                                                __ATOMIC_RELAXED)))
        return 0;
    /* Held by us with WAITERS set: only q->lock holders change it now. */
    struct mqs__waitq *q = SYNC_WQ(&m->q);
    MQS__WAITQ_LOCK(q);
    struct mqs_task *t = m_unlock_slow(m, q);
    mqs__waitq_unlock(q);
    if (t)
        mqs__wake_flags(t, wake_flags);
    return 0;
}

int mqs_mutex_unlock(mqs_mutex_t *m)
{
    return mqs__mutex_unlock_flags(m, 0);
}

void mqs__mutex_release_dead(struct mqs_task *t)
{
    mqs_mutex_t *m;
    while ((m = t->held_mutexes) != NULL) {
        held_del(t, m);
        /* Owned by t: only q->lock holders change the state now. */
        struct mqs__waitq *q = SYNC_WQ(&m->q);
        mqs__waitq_lock_in(q);
        struct mqs_task *w = mqs__waitq_pop(q, MQS_EOWNERDEAD);
        uint64_t waiters = q->nwait > 0 ? M_WAITERS : 0;
        uint64_t next = w ? (uintptr_t)w | waiters : M_OWNERDEAD | waiters;
        __atomic_store_n(&m->state, next, __ATOMIC_RELEASE);
        mqs__waitq_unlock(q);
        if (w)
            mqs__wake(w);
    }
}

bool mqs__mutex_owned_by(const mqs_mutex_t *m, const struct mqs_task *t)
{
    return m_owner(m_load(m)) == (uintptr_t)t;
}
