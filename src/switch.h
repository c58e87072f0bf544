/*
 * switch.h - the switch layer: handing a worker from one context to
 * another, and the bookkeeping at each hand-over (the run that ends, the
 * run that starts, the check of what the policy picked).  Inline: every
 * yield passes here once, and the scheduling point (sched.c), child-first
 * (runnext.c), the worker loop (worker.c) and a new task's first run
 * (task.c) all use it.  What runs first
 * on the new context, mqs__finish_switch, is below, its rare cases in
 * switch.c.
 *
 * A task that stops is still on its stack until the switch away from it
 * has saved its registers; until then `on_cpu` is 1 and nobody else may
 * run it: a stealer skips it (mqs_se_movable), a waker spins on it before
 * queueing it (Linux's try_to_wake_up does the same).
 */
#ifndef MQS_SWITCH_H
#define MQS_SWITCH_H

#include "ctx.h"
#include "internal.h"

/* Does prev's stack die with this switch?  Only ASan asks (it drops the
 * fake stack); elsewhere the atomic load of the state is not paid. */
static MQS__HOT bool mqs__switch_dying(struct mqs_task *prev)
{
#if defined(MQS_ASAN)
    return prev && prev->state == MQS__DEAD;
#else
    (void)prev;
    return false;
#endif
}

/* Switch from the current context (task prev, or the loop when prev is
 * NULL) to `to` (a task, or the loop when NULL).  Returns when the
 * context is resumed, possibly on another worker. */
static MQS__HOT struct mqs_worker *mqs__switch_to(struct mqs_worker *w,
                                             struct mqs_task *prev,
                                             struct mqs_task *to)
{
    void **save = prev ? &prev->sp : &w->loop_sp;
#if defined(MQS_TSAN)
    /* TSan runs a signal's handler late, at its next interceptor or
     * atomic, with every signal blocked, and afterwards restores the mask
     * it saved in the fiber's state.  A stop from the preemption handler
     * handed that full mask to the next context (the kernel's delivery
     * blocks only SIGURG there, which mqs__finish_switch unblocks), and a
     * second signal taken at an interceptor inside a handler (the
     * preemption handler reads the clock) saves the full mask over the
     * one to restore.  Either way the thread could stay with every
     * signal blocked: its worker got no preemption and no signal at all.
     * So in TSan builds, and only there, the context switched to runs
     * under the worker's own mask, whatever the one switched from left.
     * SIGURG stays blocked across the switch itself, and the new context
     * unblocks it (mqs__finish_switch): TSan keeps a signal that arrives
     * between its last interceptor and the fiber switch pending on the
     * fiber switched from, to be run at that fiber's next interceptor;
     * a preemption request left there while the task switched to spun
     * was never seen, and the monitor, which sends one signal per
     * request, never sent another (a reader looping on system calls
     * kept its worker for 300 ms, the yielder beside it never ran).
     * The mask is set before TSan is told of the fiber switch, while
     * the fiber switched from is still TSan's current one: a signal
     * that came before it is run at the exit of this very interceptor
     * (inside the runtime: deferred, the monitor free to ask again),
     * and none comes after it.  (Set after the fiber switch, it left
     * that window open: the request stranded in about one run in five
     * of tests/test_io.c's deferred-stop case.) */
    pthread_sigmask(SIG_SETMASK, &w->pre.mask_switch, NULL);
#endif
    void *fake = NULL;
    if (to)
        mqs__switch_enter(mqs__switch_dying(prev) ? NULL : &fake,
                          to->stack_lo,
                          (size_t)((char *)to->stack_hi -
                                   (char *)to->stack_lo),
                          to->tsan_fiber);
    else
        mqs__switch_enter(&fake, w->loop_stack_lo, w->loop_stack_size,
                          w->tsan_fiber);
    /* errno belongs to the OS thread; each context keeps its own value
     * across the switch (on its own stack), whichever thread resumes it. */
    int err = *w->errno_p;
    w = mqs__ctx_switch(save, to ? to->sp : w->loop_sp, w);
    mqs__switch_leave(fake);
    *w->errno_p = err;
    return w;
}

/* Account the run that ends now for task t on worker w. */
static MQS__HOT uint64_t mqs__account_run(struct mqs_worker *w, struct mqs_task *t,
                                     uint64_t now)
{
    uint64_t ran = now - t->se.exec_start_ns;
    if ((int64_t)ran < 0)
        ran = 0;
    MQS__STAT_ADD(t->stats.run_ns, ran);
    MQS__STAT_ADD(w->stats.run_ns, ran);
    return ran;
}

/* Start running t on w at w->now. */
static MQS__HOT void mqs__account_start(struct mqs_worker *w, struct mqs_task *t,
                                   uint64_t now)
{
    uint64_t waited = now - t->se.queued_at_ns;
    if ((int64_t)waited > 0)
        MQS__STAT_ADD(t->stats.wait_ns, waited);
    MQS__STAT_ADD(t->stats.switches, 1);
    if (t->se.last_worker != w->index) {
        if (t->se.last_worker >= 0) {
            MQS__STAT_ADD(t->events.migrations, 1);
            MQS__STAT_ADD(w->stats.migrations, 1);
        }
        t->se.last_worker = w->index;
    }
    t->se.exec_start_ns = now;
    atomic_store_explicit(&w->rq.curr_level, t->se.level, memory_order_relaxed);
    atomic_store_explicit(&w->rq.curr_since, now, memory_order_relaxed);
    atomic_store_explicit(&w->rq.curr_id, t->id, memory_order_relaxed);
    atomic_store_explicit(&t->on_cpu, 1, memory_order_relaxed);
    atomic_store_explicit(&t->state, MQS__RUNNING, memory_order_relaxed);
    w->curr = t;
}

/* Check what pick returned: queued here (or stolen for us), allowed. */
static MQS__HOT struct mqs_task *mqs__checked_pick(struct mqs_worker *w,
                                     struct mqs_sched_entity *se)
{
    if (!se)
        return NULL;
    struct mqs_task *t = mqs_se_entry(se, struct mqs_task, se);
    int q = atomic_load_explicit(&t->queued_on, memory_order_relaxed);
    if (q == w->index) {
        atomic_store_explicit(&t->queued_on, -1, memory_order_relaxed);
        MQS__CHK_COUNT(w->rt, q, -1);
    } else if (q >= 0 && (w->rt->policy->flags & MQS_POLICY_SHARED_RQ)) {
        /* Queued through another worker, which may still be on its
         * stack (it yielded there and is mid-switch). */
        if (t != w->curr && !mqs_se_movable(se))
            mqs__panic("policy %s: pick on worker %d returned task %s, "
                       "which is still on worker %d's stack (shared queue: "
                       "skip tasks that are not mqs_se_movable)",
                       w->rt->policy->name, w->index, t->name, q);
        atomic_store_explicit(&t->queued_on, -1, memory_order_relaxed);
        MQS__CHK_COUNT(w->rt, q, -1);
    }
    else if (!(q == -1 && t->stolen))
        mqs__panic("policy %s: pick on worker %d returned task %s, which "
                   "is queued on %d, not here",
                   w->rt->policy->name, w->index, t->name, q);
    t->stolen = false;
    if (!mqs_se_allowed(se, w->index))
        mqs__panic("policy %s: pick on worker %d returned task %s outside "
                   "its affinity mask (invariant 4)",
                   w->rt->policy->name, w->index, t->name);
    return t;
}

/* The first call on a context switched to (every switch: the
 * scheduling point, child-first, the worker loop, a new task's first
 * run).  Its common case inline: prev was queued again or waits, and is
 * left nothing but its on_cpu; the rest (no prev, a move, an exit, a
 * wake-up left to the switch, a preemption's mask) and every TSan build
 * take mqs__finish_switch_slow (switch.c). */
static MQS__HOT void mqs__finish_switch(struct mqs_worker *w)
{
#if !defined(MQS_TSAN)
    struct mqs_task *prev = w->prev;
    if (MQS__LIKELY(prev && !w->urg_blocked && !prev->late_wake &&
                    w->prev_why <= MQS__SW_BLOCK)) {
        w->prev = NULL;
        atomic_store_explicit(&prev->on_cpu, 0, memory_order_release);
        return;
    }
#endif
    mqs__finish_switch_slow(w);
}

#endif
