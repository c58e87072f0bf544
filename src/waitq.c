/*
 * waitq.c - blocking a task on a wait queue, with an optional deadline,
 * and waking it.  Every synchronisation object (sync.c, chan.c) and join
 * are built on these four calls.
 *
 * A wait queue is a spinlock and a list of waiting tasks ordered by
 * priority level, FIFO within a level, so wake-ups honour priority with
 * an O(1) pop; insertion walks past the more urgent waiters (short lists
 * in practice; a per-level bitmap would make it O(1) at 141 list heads
 * per object, too big to embed in a mutex).
 *
 * Exactly one party wakes a blocked task.  Candidates are whoever pops it
 * from the wait queue and its timer; each must move the task's state from
 * BLOCKED to WAKING with a CAS, and the loser backs off: a popper that
 * loses picks the next waiter, a timer that loses does nothing.  The
 * timer's winner then unlinks the task from its wait queue.  Only then is
 * the task queued to run (mqs__wake), after its context is saved.
 */
#include "internal.h"

void mqs__waitq_init(struct mqs__waitq *q)
{
    mqs__spin_init(&q->lock);
    q->nwait = 0;
    mqs__list_init(&q->head);
}

/* Insert t after every waiter at least as urgent. */
static void waitq_insert(struct mqs__waitq *q, struct mqs_task *t)
{
    struct mqs_list *pos;
    mqs__list_for_each(pos, &q->head)
    {
        struct mqs_task *o = mqs_se_entry(pos, struct mqs_task, wait_node);
        if (o->se.prio > t->se.prio)
            break;
    }
    mqs__list_add_before(pos, &t->wait_node);
    t->wait_linked = true;
    q->nwait++;
}

static void waitq_unlink(struct mqs__waitq *q, struct mqs_task *t)
{
    mqs__list_del(&t->wait_node);
    t->wait_linked = false;
    q->nwait--;
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
    /* Inside the runtime until the task runs its own code again: between
     * the unlock and the switch it is BLOCKED but still running. */
    mqs__rt_enter(w);
    t->wait_q = q;
    t->wait_what = what;
    t->wait_obj = obj;
    t->wait_result = 0;
    if (q)
        waitq_insert(q, t);
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
    t->wait_q = NULL;
    t->wait_what = NULL;
    t->wait_obj = NULL;
    mqs__rt_leave(mqs__worker_self()); /* maybe another worker now */
    return t->wait_result;
}

struct mqs_task *mqs__waitq_first(struct mqs__waitq *q)
{
    if (mqs__list_empty(&q->head))
        return NULL;
    return mqs_se_entry(q->head.next, struct mqs_task, wait_node);
}

struct mqs_task *mqs__waitq_pop(struct mqs__waitq *q, int result)
{
    struct mqs_task *t;
    while ((t = mqs__waitq_first(q)) != NULL) {
        waitq_unlink(q, t);
        int expect = MQS__BLOCKED;
        if (atomic_compare_exchange_strong(&t->state, &expect, MQS__WAKING)) {
            t->wait_result = result;
            return t;
        }
        /* Its timer won: it will not take what we hand out. */
    }
    return NULL;
}

/* Called by the timer code with the heap lock held, after it removed t:
 * returns true if the timer won and must wake t. */
bool mqs__timer_claim(struct mqs_task *t);
bool mqs__timer_claim(struct mqs_task *t)
{
    int expect = MQS__BLOCKED;
    if (!atomic_compare_exchange_strong(&t->state, &expect, MQS__WAKING))
        return false;
    t->wait_result = t->wait_q ? MQS_ETIMEDOUT : 0;
    return true;
}

/* The timer won: take t off its wait queue (no heap lock held). */
void mqs__timer_unlink(struct mqs_task *t);
void mqs__timer_unlink(struct mqs_task *t)
{
    struct mqs__waitq *q = t->wait_q;
    if (!q)
        return;
    mqs__waitq_lock_in(q);
    if (t->wait_linked)
        waitq_unlink(q, t);
    mqs__waitq_unlock(q);
}
