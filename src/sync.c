/*
 * sync.c - condition variable, counting semaphore, wait group and
 * barrier: the objects that block only the calling task (the mutex is in
 * mutex.c).
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
#include "plist.h"

_Static_assert(sizeof(struct mqs__waitq) <= sizeof(mqs__waitq_storage_t),
               "struct mqs__waitq must fit in mqs__waitq_storage_t");
_Static_assert(_Alignof(struct mqs__waitq) <= _Alignof(mqs__waitq_storage_t),
               "mqs__waitq_storage_t is not aligned enough");

#define SYNC_WQ(storage) ((struct mqs__waitq *)(storage))


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
    if (!mqs__mutex_owned_by(m, self))
        return MQS_EPERM;
    struct cond_impl *ci = COND(c);
    uint64_t deadline = timed && timeout_ns ? mqs__deadline(timeout_ns) : 0;
    MQS__WAITQ_LOCK(&ci->q);
    ci->window++;
    mqs__waitq_unlock(&ci->q);
    /* A waiter on the mutex is woken as a synchronous wake-up: this
     * task blocks next (unless a signal is already owed to it), so the
     * waiter may take this worker rather than wait for another. */
    int unlocked = mqs__mutex_unlock_flags(m, MQS_ENQ_SYNC);
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
