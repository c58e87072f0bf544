/*
 * timer.c - per-worker timer heaps: sleep and every timed wait.
 *
 * A task that waits with a deadline goes into the binary min-heap of the
 * worker it blocks on, keyed by deadline, its slot index kept in the task
 * so a cancel is O(log n).  The owning worker expires due timers at every
 * scheduling point (it already reads the clock there): mqs__timer_expire
 * hands each task whose timer won back to the scheduling point, which
 * queues it (this file calls nothing above it) and parks no longer
 * than its earliest deadline, published in `next` for a lock-free check.
 * A task woken by its wait queue cancels its own timer when it runs
 * again, under the heap lock; the timer side decides the race with a CAS
 * on the task state while holding the same lock, so a task never runs
 * (and never exits) while its timer still points at it.
 *
 * Rejected: a timer wheel (cheaper inserts, but coarse and with a
 * periodic sweep even when idle); one global heap (a shared lock on every
 * sleep); lazy cancellation (the heap would outlive tasks it points to).
 */
#include <stdlib.h>

#include "internal.h"
#include "plist.h"

/* The timer's claim on t, with the heap lock held after it removed t:
 * the same BLOCKED -> WAKING CAS as a waker's (waitq.c), so exactly one
 * of them wakes it.  True if the timer won and must wake t. */
static bool timer_claim(struct mqs_task *t)
{
    int expect = MQS__BLOCKED;
    if (!atomic_compare_exchange_strong(&t->state, &expect, MQS__WAKING))
        return false;
    t->wait_result = t->wait_q ? MQS_ETIMEDOUT : 0;
    return true;
}

static void heap_place(struct mqs__timer_heap *h, unsigned i, struct mqs_task *t)
{
    h->v[i] = t;
    t->timer_index = (int)i;
}

static void sift_up(struct mqs__timer_heap *h, unsigned i)
{
    struct mqs_task *t = h->v[i];
    while (i > 0) {
        unsigned parent = (i - 1) / 2;
        if (h->v[parent]->timer_deadline <= t->timer_deadline)
            break;
        heap_place(h, i, h->v[parent]);
        i = parent;
    }
    heap_place(h, i, t);
}

static void sift_down(struct mqs__timer_heap *h, unsigned i)
{
    struct mqs_task *t = h->v[i];
    for (;;) {
        unsigned c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n &&
            h->v[c + 1]->timer_deadline < h->v[c]->timer_deadline)
            c++;
        if (h->v[c]->timer_deadline >= t->timer_deadline)
            break;
        heap_place(h, i, h->v[c]);
        i = c;
    }
    heap_place(h, i, t);
}

static void publish_next(struct mqs__timer_heap *h)
{
    atomic_store(&h->next, h->n ? h->v[0]->timer_deadline : UINT64_MAX);
}

static void heap_remove(struct mqs__timer_heap *h, unsigned i)
{
    struct mqs_task *gone = h->v[i];
    gone->timer_index = -1;
    h->n--;
    if (i == h->n)
        return;
    heap_place(h, i, h->v[h->n]);
    if (i > 0 && h->v[(i - 1) / 2]->timer_deadline > h->v[i]->timer_deadline)
        sift_up(h, i);
    else
        sift_down(h, i);
}

int mqs__timer_reserve(struct mqs_worker *w)
{
    struct mqs__timer_heap *h = &w->timers;
    int rc = 0;
    mqs__spin_lock(&h->lock);
    if (h->n == h->cap) {
        unsigned cap = h->cap ? h->cap * 2 : 64;
        struct mqs_task **v = mqs__realloc(h->v, cap * sizeof *v);
        if (v) {
            h->v = v;
            h->cap = cap;
        } else {
            rc = MQS_ENOMEM;
        }
    }
    mqs__spin_unlock(&h->lock);
    return rc;
}

void mqs__timer_add(struct mqs_worker *w, struct mqs_task *t)
{
    struct mqs__timer_heap *h = &w->timers;
    mqs__spin_lock(&h->lock);
    if (h->n == h->cap)
        mqs__panic("timer heap of worker %d full for task %s: the block "
                   "did not reserve its slot", w->index, t->name);
    t->timer_worker = w->index;
    h->v[h->n] = t;
    t->timer_index = (int)h->n;
    h->n++;
    sift_up(h, h->n - 1);
    publish_next(h);
    mqs__spin_unlock(&h->lock);
}

void mqs__timer_cancel(mqs_runtime_t *rt, struct mqs_task *t)
{
    struct mqs__timer_heap *h = &rt->workers[t->timer_worker]->timers;
    mqs__spin_lock(&h->lock);
    if (t->timer_index >= 0) {
        heap_remove(h, (unsigned)t->timer_index);
        publish_next(h);
    }
    mqs__spin_unlock(&h->lock);
}

/* Pop one due timer and claim its task; NULL when none is due.  The
 * timer of the task that is blocking right now (curr, still on its stack)
 * waits for the next scheduling point, when its context is saved. */
static struct mqs_task *pop_due(struct mqs__timer_heap *h, uint64_t now,
                                struct mqs_task *curr, bool *more)
{
    struct mqs_task *won = NULL;
    mqs__spin_lock(&h->lock);
    while (h->n && h->v[0]->timer_deadline <= now && !won &&
           h->v[0] != curr) {
        struct mqs_task *t = h->v[0];
        heap_remove(h, 0);
        if (timer_claim(t))
            won = t;
    }
    *more = h->n && h->v[0]->timer_deadline <= now && h->v[0] != curr;
    publish_next(h);
    mqs__spin_unlock(&h->lock);
    return won;
}

struct mqs_task *mqs__timer_expire(struct mqs_worker *w, uint64_t now,
                                   bool *more)
{
    struct mqs_task *t = pop_due(&w->timers, now, w->curr, more);
    if (!t)
        return NULL;
    mqs__waitq_claimed_unlink(t);
    /* Not mqs__wake: this runs inside a scheduling point, which must
     * not start another one; the caller queues it. */
    while (atomic_load_explicit(&t->on_cpu, memory_order_acquire))
        mqs__cpu_relax();
    MQS__STAT_ADD(t->events.wakeups, 1);
    atomic_store_explicit(&t->state, MQS__RUNNABLE, memory_order_relaxed);
    t->se.woke_at_ns = now;
    return t;
}

void mqs__timer_heap_free(struct mqs__timer_heap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
