/*
 * sync.c - mutex, condition variable, counting semaphore, wait group and
 * barrier: the objects that block only the calling task.
 *
 * Every object is a small word of state plus a wait queue (waitq.c): a
 * spinlock, a waiter count and intrusive lists ordered by priority level
 * then arrival.  The pattern is the same everywhere: a lock-free fast path
 * where one exists, and a slow path that decides to wait while holding the
 * wait queue's lock, then calls mqs__block(), which queues the task and
 * drops the lock in one step.  A waker takes the same lock, so it either
 * sees the waiter queued or the waiter sees the waker's state change: no
 * wake-up is lost.  Wakers pop under the lock and call mqs__wake() only
 * after unlocking, because a wake-up may switch to the woken task.  When a
 * call wakes many (broadcast, barrier, wait group reaching zero) it pops
 * them all under one lock hold and chains them through t->wait_data,
 * which a woken waiter of these objects never reads; the chain is woken
 * after unlocking, reading each link before the wake that may run it.
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
 * Condition variable.  A waiter must release the mutex and become
 * waitable atomically with respect to signal, but mqs__block() releases
 * only the wait queue's lock, and unlocking the mutex may wake a task, which
 * is forbidden under a spinlock.  So a waiter registers under the cond's
 * lock first (window++), unlocks the mutex, then takes the cond's lock
 * again and either consumes a token left by a signal that found it in the
 * window, or leaves the window and blocks.  Signal prefers a queued waiter;
 * with none, it turns one window entry into a token.  No signal is lost and
 * none wakes two tasks.  Rejected: a sequence number compared after the
 * window (wakes every task in the window for one signal); wait morphing
 * (moving waiters to the mutex queue) needs a core call we do not have.
 * The two counters live in the cond's opaque storage beside the wait queue.
 *
 * Semaphore.  Waiting takes a unit with a CAS when the count is positive.
 * Post, under the lock, hands the unit straight to the most urgent waiter
 * instead of incrementing, so priority order holds and nobody steals it;
 * the count grows only when nobody waits (which the waiter rechecks under
 * the same lock before blocking).
 *
 * Wait group and barrier are counters under the wait queue's lock; the
 * event that completes them wakes every waiter of that round at once.
 *
 * Callers: the blocking calls (lock, timedlock, cond waits, sem wait and
 * timedwait, waitgroup wait, barrier wait) are task only (MQS_EPERM).  The
 * others may also be called from threads that are not tasks: sem post,
 * trywait, cond signal and broadcast, waitgroup add and done, init and
 * destroy.  mqs_mutex_trylock and unlock need an owner task, so from a
 * non-task they return MQS_EPERM.
 */
#include <stdint.h>

#include "internal.h"

_Static_assert(sizeof(struct mqs__waitq) <= sizeof(mqs__waitq_storage_t),
               "struct mqs__waitq must fit in mqs__waitq_storage_t");
_Static_assert(_Alignof(struct mqs__waitq) <= _Alignof(mqs__waitq_storage_t),
               "mqs__waitq_storage_t is not aligned enough");
_Static_assert(_Alignof(struct mqs_task) >= 8,
               "the mutex keeps flag bits in the low bits of the owner");

#define SYNC_WQ(storage) ((struct mqs__waitq *)(storage))

/* mqs__block result that means "woken, compete again" (mutex only). */
#define M_RETRY 1

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* Pop every waiter of q with `result` (q->lock held) and chain them
 * through wait_data; wake_chain() wakes them after the lock is dropped. */
static struct mqs_task *pop_all(struct mqs__waitq *q, int result)
{
    struct mqs_task *head = NULL, **tail = &head, *t;
    while ((t = mqs__waitq_pop(q, result)) != NULL) {
        *tail = t;
        tail = (struct mqs_task **)&t->wait_data;
    }
    *tail = NULL;
    return head;
}

static void wake_chain(struct mqs_task *t)
{
    while (t) {
        struct mqs_task *next = t->wait_data;
        mqs__wake(t);
        t = next;
    }
}

/* ------------------------------------------------------------------ */
/* Mutex                                                               */
/* ------------------------------------------------------------------ */

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
static int m_unlock(mqs_mutex_t *m, int wake_flags)
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
    return m_unlock(m, 0);
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

/* ------------------------------------------------------------------ */
/* Condition variable                                                  */
/* ------------------------------------------------------------------ */

/* The cond's storage: its wait queue, then the waiters between
 * registering and queueing (window) and the signals owed to them. */
struct cond_impl {
    struct mqs__waitq q;
    uint32_t window;
    uint32_t tokens;
};
_Static_assert(sizeof(struct cond_impl) <= sizeof(mqs__waitq_storage_t),
               "struct cond_impl must fit in mqs_cond_t");

#define COND(c) ((struct cond_impl *)&(c)->q)

int mqs_cond_init(mqs_cond_t *c)
{
    if (!c)
        return MQS_EINVAL;
    struct cond_impl *ci = COND(c);
    mqs__waitq_init(&ci->q);
    ci->window = 0;
    ci->tokens = 0;
    return 0;
}

int mqs_cond_destroy(mqs_cond_t *c)
{
    if (!c)
        return MQS_EINVAL;
    struct cond_impl *ci = COND(c);
    MQS__WAITQ_LOCK(&ci->q);
    bool busy = ci->q.nwait > 0 || ci->window > 0;
    mqs__waitq_unlock(&ci->q);
    return busy ? MQS_EBUSY : 0;
}

/* Second half of a wait, mutex released: take a token or block. */
static int cond_block(struct cond_impl *ci, uint64_t deadline, bool timed)
{
    MQS__WAITQ_LOCK(&ci->q);
    if (ci->tokens > 0) {
        ci->tokens--;
        mqs__waitq_unlock(&ci->q);
        return 0;
    }
    ci->window--;
    if (timed && deadline == 0) { /* zero timeout: do not block */
        mqs__waitq_unlock(&ci->q);
        return MQS_ETIMEDOUT;
    }
    return mqs__block(&ci->q, deadline, "cond", ci);
}

static int cond_wait_common(mqs_cond_t *c, mqs_mutex_t *m, uint64_t timeout_ns,
                     bool timed)
{
    if (!c || !m)
        return MQS_EINVAL;
    struct mqs_task *self = mqs__current();
    if (!self)
        return MQS_EPERM;
    if (m_owner(m_load(m)) != (uintptr_t)self)
        return MQS_EPERM;
    struct cond_impl *ci = COND(c);
    uint64_t deadline = timed && timeout_ns ? mqs__deadline(timeout_ns) : 0;
    MQS__WAITQ_LOCK(&ci->q);
    ci->window++;
    mqs__waitq_unlock(&ci->q);
    /* A waiter on the mutex is woken as a synchronous wake-up: this
     * task blocks next (unless a signal is already owed to it), so the
     * waiter may take this worker rather than wait for another. */
    int unlocked = m_unlock(m, MQS_ENQ_SYNC);
    int rc = cond_block(ci, deadline, timed);
    int relocked = mqs_mutex_lock(m);
    if (unlocked != 0 || (relocked != 0 && relocked != MQS_EOWNERDEAD))
        mqs__panic("cond %p: task '%s' could not cycle its mutex (%d, %d)",
                   (void *)c, self->name, unlocked, relocked);
    if (relocked == MQS_EOWNERDEAD)
        return MQS_EOWNERDEAD;
    /* Any other result is a wake-up (signal, broadcast, or a spurious
     * one, which callers of a condition wait must expect anyway). */
    return rc == MQS_ETIMEDOUT || rc == MQS_ENOMEM ? rc : 0;
}

int mqs_cond_wait(mqs_cond_t *c, mqs_mutex_t *m)
{
    return cond_wait_common(c, m, 0, false);
}

int mqs_cond_timedwait(mqs_cond_t *c, mqs_mutex_t *m, uint64_t timeout_ns)
{
    return cond_wait_common(c, m, timeout_ns, true);
}

int mqs_cond_signal(mqs_cond_t *c)
{
    if (!c)
        return MQS_EINVAL;
    struct cond_impl *ci = COND(c);
    MQS__WAITQ_LOCK(&ci->q);
    struct mqs_task *t = mqs__waitq_pop(&ci->q, 0);
    if (!t && ci->window > 0) {
        ci->window--;
        ci->tokens++;
    }
    mqs__waitq_unlock(&ci->q);
    if (t)
        mqs__wake(t);
    return 0;
}

int mqs_cond_broadcast(mqs_cond_t *c)
{
    if (!c)
        return MQS_EINVAL;
    struct cond_impl *ci = COND(c);
    MQS__WAITQ_LOCK(&ci->q);
    struct mqs_task *chain = pop_all(&ci->q, 0);
    ci->tokens += ci->window;
    ci->window = 0;
    mqs__waitq_unlock(&ci->q);
    wake_chain(chain);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Semaphore                                                           */
/* ------------------------------------------------------------------ */

int mqs_sem_init(mqs_sem_t *s, unsigned initial)
{
    if (!s)
        return MQS_EINVAL;
    __atomic_store_n(&s->count, initial, __ATOMIC_RELAXED);
    mqs__waitq_init(SYNC_WQ(&s->q));
    return 0;
}

int mqs_sem_destroy(mqs_sem_t *s)
{
    if (!s)
        return MQS_EINVAL;
    struct mqs__waitq *q = SYNC_WQ(&s->q);
    MQS__WAITQ_LOCK(q);
    bool busy = q->nwait > 0;
    mqs__waitq_unlock(q);
    return busy ? MQS_EBUSY : 0;
}

/* Take a unit if there is one, lock-free. */
static bool sem_take(mqs_sem_t *s)
{
    uint64_t c = __atomic_load_n(&s->count, __ATOMIC_RELAXED);
    while (c > 0)
        if (__atomic_compare_exchange_n(&s->count, &c, c - 1, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return true;
    return false;
}

int mqs_sem_trywait(mqs_sem_t *s)
{
    if (!s)
        return MQS_EINVAL;
    return sem_take(s) ? 0 : MQS_EAGAIN;
}

static int sem_wait_common(mqs_sem_t *s, uint64_t timeout_ns, bool timed)
{
    if (!s)
        return MQS_EINVAL;
    if (!mqs__current())
        return MQS_EPERM;
    if (sem_take(s))
        return 0;
    if (timed && timeout_ns == 0)
        return MQS_ETIMEDOUT;
    uint64_t deadline = timed ? mqs__deadline(timeout_ns) : 0;
    struct mqs__waitq *q = SYNC_WQ(&s->q);
    MQS__WAITQ_LOCK(q);
    if (sem_take(s)) { /* a post came before we took the lock */
        mqs__waitq_unlock(q);
        return 0;
    }
    /* 0: post handed us its unit. */
    return mqs__block(q, deadline, "semaphore", s);
}

int mqs_sem_wait(mqs_sem_t *s)
{
    return sem_wait_common(s, 0, false);
}

int mqs_sem_timedwait(mqs_sem_t *s, uint64_t timeout_ns)
{
    return sem_wait_common(s, timeout_ns, true);
}

int mqs_sem_post(mqs_sem_t *s)
{
    if (!s)
        return MQS_EINVAL;
    struct mqs__waitq *q = SYNC_WQ(&s->q);
    MQS__WAITQ_LOCK(q);
    struct mqs_task *t = mqs__waitq_pop(q, 0);
    int rc = 0;
    if (!t) {
        if (__atomic_load_n(&s->count, __ATOMIC_RELAXED) == UINT64_MAX)
            rc = MQS_EINVAL;
        else
            __atomic_fetch_add(&s->count, 1, __ATOMIC_RELEASE);
    }
    mqs__waitq_unlock(q);
    if (t)
        mqs__wake(t);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Wait group                                                          */
/* ------------------------------------------------------------------ */

int mqs_waitgroup_init(mqs_waitgroup_t *wg)
{
    if (!wg)
        return MQS_EINVAL;
    __atomic_store_n(&wg->count, 0, __ATOMIC_RELAXED);
    mqs__waitq_init(SYNC_WQ(&wg->q));
    return 0;
}

int mqs_waitgroup_destroy(mqs_waitgroup_t *wg)
{
    if (!wg)
        return MQS_EINVAL;
    struct mqs__waitq *q = SYNC_WQ(&wg->q);
    MQS__WAITQ_LOCK(q);
    bool busy = q->nwait > 0;
    mqs__waitq_unlock(q);
    return busy ? MQS_EBUSY : 0;
}

int mqs_waitgroup_add(mqs_waitgroup_t *wg, int64_t n)
{
    if (!wg)
        return MQS_EINVAL;
    struct mqs__waitq *q = SYNC_WQ(&wg->q);
    MQS__WAITQ_LOCK(q);
    int64_t c = wg->count, next;
    if (__builtin_add_overflow(c, n, &next) || next < 0) {
        mqs__waitq_unlock(q);
        return MQS_EINVAL;
    }
    /* Release: work done before done() is visible to wait()'s fast path. */
    __atomic_store_n(&wg->count, next, __ATOMIC_RELEASE);
    struct mqs_task *chain = next == 0 && c != 0 ? pop_all(q, 0) : NULL;
    mqs__waitq_unlock(q);
    wake_chain(chain);
    return 0;
}

int mqs_waitgroup_done(mqs_waitgroup_t *wg)
{
    return mqs_waitgroup_add(wg, -1);
}

int mqs_waitgroup_wait(mqs_waitgroup_t *wg)
{
    if (!wg)
        return MQS_EINVAL;
    if (!mqs__current())
        return MQS_EPERM;
    if (__atomic_load_n(&wg->count, __ATOMIC_ACQUIRE) == 0)
        return 0;
    struct mqs__waitq *q = SYNC_WQ(&wg->q);
    MQS__WAITQ_LOCK(q);
    if (wg->count == 0) {
        mqs__waitq_unlock(q);
        return 0;
    }
    return mqs__block(q, 0, "waitgroup", wg);
}

/* ------------------------------------------------------------------ */
/* Barrier                                                             */
/* ------------------------------------------------------------------ */

int mqs_barrier_init(mqs_barrier_t *b, unsigned count)
{
    if (!b || count < 1)
        return MQS_EINVAL;
    b->count = count;
    b->arrived = 0;
    b->generation = 0;
    mqs__waitq_init(SYNC_WQ(&b->q));
    return 0;
}

int mqs_barrier_destroy(mqs_barrier_t *b)
{
    if (!b)
        return MQS_EINVAL;
    struct mqs__waitq *q = SYNC_WQ(&b->q);
    MQS__WAITQ_LOCK(q);
    bool busy = b->arrived > 0 || q->nwait > 0;
    mqs__waitq_unlock(q);
    return busy ? MQS_EBUSY : 0;
}

int mqs_barrier_wait(mqs_barrier_t *b)
{
    if (!b)
        return MQS_EINVAL;
    if (!mqs__current())
        return MQS_EPERM;
    struct mqs__waitq *q = SYNC_WQ(&b->q);
    MQS__WAITQ_LOCK(q);
    if (++b->arrived < b->count) {
        int rc = mqs__block(q, 0, "barrier", b);
        return rc < 0 ? rc : 0;
    }
    /* The last arrival ends the generation and is its serial task. */
    b->arrived = 0;
    b->generation++;
    struct mqs_task *chain = pop_all(q, 0);
    mqs__waitq_unlock(q);
    wake_chain(chain);
    return 1;
}
