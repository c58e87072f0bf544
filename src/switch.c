/*
 * switch.c - the first thing that runs on a context after a switch to it:
 * the context switched away from is saved now, so it may be run, placed
 * or freed by others (on_cpu goes to 0), and what its switch asked for
 * (a move to another worker, an exit's release) is done here, on the new
 * context's stack.  Its common case (a task queued again or waiting:
 * on_cpu 0 and nothing else) is inline in switch.h, mqs__finish_switch;
 * this is the whole of it, for the rest.
 */
#include "internal.h"
#include "switch.h"

void mqs__finish_switch_slow(struct mqs_worker *w)
{
    struct mqs_task *prev = w->prev;
#if defined(MQS_TSAN)
    /* Blocked across the switch (switch.h): deliverable again, to the
     * fiber that runs now. */
    pthread_sigmask(SIG_SETMASK, &w->pre.mask, NULL);
#endif
    if (!prev)
        return;
    if (MQS__UNLIKELY(w->urg_blocked))
        mqs__preempt_unblock(w); /* prev stopped in its handler */
    w->prev = NULL;
    int why = w->prev_why;
    bool detached = prev->detached; /* prev may be freed once off-CPU */
    if (MQS__UNLIKELY(prev->late_wake)) {
        /* Blocked where a waker may leave it its wake-up (on_cpu 2,
         * mqs__wake_leave): one exchange, and prev is not touched after
         * it unless the wake-up is this switch's to do. */
        if (atomic_exchange_explicit(&prev->on_cpu, 0,
                                     memory_order_acq_rel) == 2) {
            MQS__STAT_ADD(w->stats.wakes_left, 1);
            mqs__wake_nostop(w->rt, prev, MQS__ENQ_SRC_LEFT);
        }
        return;
    }
    atomic_store_explicit(&prev->on_cpu, 0, memory_order_release);
    if (MQS__LIKELY(why <= MQS__SW_BLOCK))
        return; /* queued again, or waiting: nothing left to do */
    if (why == MQS__SW_MOVE) {
        /* It yielded on a worker its affinity no longer allows; its
         * context is saved now, so it can be placed elsewhere. */
        atomic_store_explicit(&prev->resched_move, false,
                              memory_order_relaxed);
        mqs__enqueue_task(w->rt, prev, MQS_ENQ_MIGRATED);
    } else if (why == MQS__SW_CHILD) {
        /* The parked spawner may move now: an idle worker may take it,
         * as it would have taken the child before child-first. */
        mqs__kick_idle(w->rt);
    } else if (why == MQS__SW_EXIT) {
        MQS__STAT_ADD(w->stats.exits, 1);
        if (detached)
            mqs__task_release(prev);
        if (++w->live_units > 2 * MQS__LIVE_BATCH) {
            w->live_units -= MQS__LIVE_BATCH;
            mqs__live_put(w->rt, MQS__LIVE_BATCH);
        }
    }
}
