/*
 * waitq.c - blocking a task on a wait queue, with an optional deadline,
 * and waking it.  Every synchronisation object (sync.c, chan.c) and join
 * are built on these calls.
 *
 * A wait queue is a spinlock and a priority-sorted list in the shape of
 * Linux's plist (lib/plist.c).  The node list (`head`, through each
 * task's wait_node) holds every waiter ordered by priority level
 * (se.prio, lower is more urgent), FIFO within a level, so the most
 * urgent waiter is the first node and popping it is O(1).  The level list
 * (`levels`, through wait_level_node) holds only the first waiter of each
 * distinct level, in the same order; every other waiter's
 * wait_level_node is self-linked.  Insertion walks the level list, not
 * the waiters: from its tail, since a new waiter is most often at the
 * least urgent level present, so it is O(1) there and at most the number
 * of distinct levels (<= MQS_PRIO_LEVELS) anywhere; the new task goes in
 * front of the first node of the next less urgent level (or at the tail),
 * and joins the level list only if its level was not there.  Removal from
 * anywhere (pop, a timer, a cancel) is O(1): when the first of a level
 * leaves, the node after it, if of the same level, takes its place in the
 * level list.  The level of a waiter is its se.prio when it queued; a
 * priority change applies only when the task is next queued to run
 * (task_ctl.c), so it cannot move under the sorted lists.
 *
 * Rejected: one list walked past every waiter at least as urgent (what
 * this replaced: quadratic in the waiters of a level, so 16000 tasks took
 * 22-27 s to block on one semaphore, against 0.2 s now); a list head per
 * level with a bitmap in each queue (O(1) everywhere, but 141 heads, over
 * 2 KiB, embedded in every mutex, semaphore and task's join queue: too
 * big); a heap (no FIFO among equals without a sequence number, and
 * O(log n) pops).
 *
 * Exactly one party wakes a blocked task.  Candidates are whoever pops it
 * from the wait queue, its timer, and mqs__waitq_cancel; each must move
 * the task's state from BLOCKED to WAKING with a CAS, and the loser backs
 * off: a popper that loses picks the next waiter, a timer or a cancel
 * that loses does nothing.  The timer's winner then unlinks the task from
 * its wait queue.  Only then is the task queued to run (mqs__wake), after
 * its context is saved.  The one exception: a waiter with no timer
 * (wait_timed false) can be claimed only under its queue's lock (poppers
 * hold it; a cancel takes it before its CAS and unlinks there), so a
 * popper claims it with a plain store.
 */
#include "internal.h"
#include "plist.h"

void mqs__waitq_init(struct mqs__waitq *q)
{
    mqs__spin_init(&q->lock);
    q->nwait = 0;
    mqs__list_init(&q->head);
    mqs__list_init(&q->levels);
}

uint64_t mqs__deadline(uint64_t timeout_ns)
{
    uint64_t now = mqs_now_ns();
    return timeout_ns > UINT64_MAX - now ? UINT64_MAX - 1 : now + timeout_ns;
}

int mqs__block(struct mqs__waitq *q, uint64_t deadline_ns, const char *what,
               const void *obj)
{
    struct mqs_worker *w = mqs__worker_self();
    struct mqs_task *t = w->curr;
    if (deadline_ns && mqs__timer_reserve(w) != 0) {
        if (q)
            mqs__waitq_unlock(q);
        return MQS_ENOMEM;
    }
    /* Inside the runtime until the task runs its own code again: between
     * the unlock and the switch it is BLOCKED but still running. */
    mqs__rt_enter(w);
    __atomic_store_n(&t->wait_q, q, __ATOMIC_RELAXED); /* read by a cancel */
    t->wait_what = what;
    t->wait_obj = obj;
    t->wait_result = 0;
    t->wait_timed = deadline_ns != 0;
    if (q)
        mqs__waitq_insert(q, t);
    atomic_store_explicit(&t->state, MQS__BLOCKED, memory_order_release);
    if (deadline_ns) {
        t->timer_deadline = deadline_ns;
        mqs__timer_add(w, t);
    }
    if (q)
        mqs__waitq_unlock(q);
    t->se.slept_at_ns = w->now;
    mqs__schedule(w, t, MQS__SW_BLOCK);
    /* Running again: whoever woke us set wait_result. */
    if (deadline_ns)
        mqs__timer_cancel(t->rt, t);
    __atomic_store_n(&t->wait_q, NULL, __ATOMIC_RELAXED);
    t->wait_what = NULL;
    t->wait_obj = NULL;
    mqs__rt_leave(mqs__worker_self()); /* maybe another worker now */
    return t->wait_result;
}

struct mqs_task *mqs__waitq_pop(struct mqs__waitq *q, int result)
{
    struct mqs_task *t;
    while ((t = mqs__waitq_first(q)) != NULL) {
        mqs__waitq_unlink(q, t);
        if (!t->wait_timed) {
            /* No timer, and a cancel claims under this lock: nobody
             * else can claim t, so no CAS (a locked instruction right
             * after a switch's stores waits for them to drain: the
             * two of a pipe round trip were 9% of it). */
            atomic_store_explicit(&t->state, MQS__WAKING,
                                  memory_order_relaxed);
            t->wait_result = result;
            return t;
        }
        int expect = MQS__BLOCKED;
        if (atomic_compare_exchange_strong(&t->state, &expect, MQS__WAKING)) {
            t->wait_result = result;
            return t;
        }
        /* Its timer won: it will not take what we hand out. */
    }
    return NULL;
}

bool mqs__waitq_cancel(struct mqs_task *t, int result)
{
    /* On a queue, claimed under its lock: an untimed waiter's poppers
     * claim it there without a CAS (mqs__waitq_pop).  The queue is read
     * before the lock, so it is checked again under it: t, woken
     * meanwhile, may be blocking elsewhere now (its queue must outlive
     * the call: destroy cancels tasks whose objects are all alive).  A
     * task that ends a wait with no queue and starts one on a queue
     * between the two reads is the caller's to exclude: destroy cancels
     * only once every task stays blocked (runtime.c, settled). */
    for (;;) {
        if (atomic_load_explicit(&t->state, memory_order_acquire) !=
            MQS__BLOCKED)
            return false;
        struct mqs__waitq *q = __atomic_load_n(&t->wait_q, __ATOMIC_ACQUIRE);
        if (q) {
            mqs__waitq_lock_in(q);
            if (__atomic_load_n(&t->wait_q, __ATOMIC_RELAXED) != q) {
                mqs__waitq_unlock(q);
                continue;
            }
        }
        int expect = MQS__BLOCKED;
        bool won = atomic_compare_exchange_strong(&t->state, &expect,
                                                  MQS__WAKING);
        if (won) {
            if (q && t->wait_linked)
                mqs__waitq_unlink(q, t);
            t->wait_result = result;
        }
        if (q)
            mqs__waitq_unlock(q);
        return won;
    }
}
