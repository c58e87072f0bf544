/*
 * sched.c - the scheduling point: what happens when a task stops (yield,
 * block, exit), the periodic housekeeping that rides on it, and the
 * wake-up call that may be one.
 *
 * A scheduling point runs on the stack of the task that stops.  It reads
 * the clock once, hands due timers' tasks to placement, lets the policy
 * account the run (put_prev), re-queues the task when it yielded, asks
 * the policy for the next task (pick) and switches straight to it
 * (switch.h).  Only when there is nothing to run does it switch to the
 * worker's own loop context (worker.c).  So a yield between two tasks is
 * one lock round trip, two policy calls and one context switch, and the
 * worker loop is not on that path.  The lock round trip is two plain
 * stores when the worker's lock is biased to it (rq.c).
 *
 * A run that lasted 5 us or more is checked for time the worker's thread
 * spent off its CPU (thread CPU time against wall time since the last
 * sample, a system call, at most every 50 us): policies see it as
 * se->stall_ns and may leave it uncharged, so a host preemption does not
 * cost the task it happened to hit its slice.
 *
 * Wake-ups race with blocking through the task state: a task sets itself
 * BLOCKED while holding its wait queue's lock and only then releases it;
 * the waker moves it BLOCKED -> WAKING with a CAS, so exactly one of the
 * wait queue and the timer wins, and it queues the task once its context
 * is saved (place.c).  A wake-up onto the waker's own worker of a task
 * the policy says should preempt makes the wake call a scheduling point
 * for the waker: that is why mqs__wake lives here and not in place.c.
 *
 * Layers, bottom up (docs/design.md has the table): base.c; the switch
 * (arch/, ctx.h, switch.h, switch.c); the run queue (rq.c); placement
 * (place.c), timers (timer.c) and child-first (runnext.c); this file;
 * the worker loop (worker.c); tasks (task.c); blocking objects.
 */
#include "internal.h"
#include "rq.h"
#include "switch.h"

/* pick with the rq lock taken here. */
struct mqs_task *mqs__pick_locked(struct mqs_worker *w)
{
    bool fast = mqs__own_lock(w);
    MQS__CHK_OP(&w->rq, "pick");
    struct mqs_task *t = mqs__checked_pick(w, w->rt->policy->pick(&w->rq));
    mqs__own_unlock(w, fast);
    return t;
}

/* The policy's balancing first, then a spawner parked on another
 * worker's run-next stack (child runs first, runnext.c). */
struct mqs_task *mqs__balance_and_pick(struct mqs_worker *w, int why)
{
    const struct mqs_policy *p = w->rt->policy;
    if (w->rt->nworkers == 1)
        return NULL;
    MQS__CHK_UNLOCKED_OP(w->rt, "balance");
    if (p->balance && p->balance(&w->rq, why) > 0) {
        struct mqs_task *t = mqs__pick_locked(w);
        if (t)
            return t;
    }
    struct mqs_task *t = mqs__runnext_steal(w);
    if (t)
        mqs__count_pulls(w, why, 1);
    return t;
}

/* Sample wall and thread CPU time together (stall detection); wall is
 * an exact read of w's clock. */
void mqs__stall_sample(struct mqs_worker *w, uint64_t wall)
{
    w->stall_wall0 = wall;
    w->stall_cpu0 = mqs__thread_cpu_ns();
}

/*
 * How long of a run that ended at w->now the worker's thread was off its
 * CPU.  Called only for runs of MQS_STALL_CHECK_NS or more, and at most
 * once per MQS_STALL_SPACING_NS (a system call is not free: ~0.3 us):
 * a stall makes the run it hits long, so the runs since the last sample
 * were short and stall-free (or, within the spacing, not measured) and
 * the sample's off-CPU time belongs to this run.  Samples are also taken
 * every millisecond (housekeeping) and renewed after the worker parks
 * (its parked time is no stall).
 */
static __attribute__((noinline)) uint64_t run_stall(struct mqs_worker *w,
                                                   uint64_t ran)
{
    uint64_t wall0 = w->stall_wall0, cpu0 = w->stall_cpu0, off = 0;
    /* Exact: under tick accounting w->now is the coarse clock, up to a
     * tick short of the samples' wall time. */
    uint64_t now = w->acct_tick ? mqs__clock_ns(&w->clock) : w->now;
    mqs__stall_sample(w, now);
    if (wall0 && now > wall0) {
        uint64_t wall = now - wall0, used = w->stall_cpu0 - cpu0;
        off = wall > used ? wall - used : 0;
    }
    return off < ran ? off : ran;
}

/* Queue every task whose timer is due by now (w's own heap). */
static void timers_expire(struct mqs_worker *w, uint64_t now)
{
    bool more = true;
    while (more) {
        struct mqs_task *t = mqs__timer_expire(w, now, &more);
        if (!t)
            break;
        mqs__enqueue_task(w->rt, t, MQS_ENQ_WAKEUP | MQS__ENQ_SRC_TIMER);
    }
}

/* Timers and the periodic balancer, due at this scheduling point? */
/* may_poll: false when the scheduling point blocks its task, which may
 * wait on a descriptor whose edge the poll would find: waking a task
 * still on this worker's CPU would wait for itself. */
static MQS__HOT void housekeeping(struct mqs_worker *w, bool may_poll)
{
    /* Timers are due by the monotonic clock that deadlines are set on:
     * the cycle-counter estimate only says when to look. */
    if (w->now >= atomic_load_explicit(&w->timers.next, memory_order_relaxed))
        timers_expire(w, w->now = mqs__clock_resync(&w->clock));
    if (w->now >= w->next_balance) {
        w->now = mqs__clock_resync(&w->clock);
        w->next_balance = w->now + 1000000;
        mqs__stall_sample(w, w->now);
        mqs__rq_hint_settle(w);
        mqs__watchdog_check(w); /* stall watchdog, when on */
        /* Descriptors ready while every worker runs (poll.c). */
        if (may_poll && atomic_load_explicit(&w->rt->poll.epfd,
                                             memory_order_acquire) >= 0)
            w->rt->poll.nowait(w->rt, MQS__POLL_EVENTS);
        /* Work has waited here all period while a worker idles: wake
         * it to steal.  (A queue that empties between the ticks, like a
         * ping-pong's, is served: kicking there only made the idle
         * worker revoke this lock's bias every period for nothing.) */
        unsigned empties = atomic_load_explicit(&w->rq.empties,
                                                memory_order_relaxed);
        if (atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed) &&
            empties == w->empties_seen)
            mqs__kick_idle(w->rt);
        w->empties_seen = empties;
        if (w->rt->policy->balance && w->rt->nworkers > 1) {
            MQS__CHK_UNLOCKED_OP(w->rt, "balance");
            w->rt->policy->balance(&w->rq, MQS_BALANCE_PERIODIC);
        }
        /* Spawners parked by child-first keep queued tasks waiting at
         * most this long (with nothing queued, they wait for no one). */
        if (atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed))
            mqs__runnext_flush(w);
    }
}

/* The same, for the worker loop (not on the yield path). */
void mqs__housekeeping(struct mqs_worker *w)
{
    housekeeping(w, true);
}

/* Re-queue a task that yielded: here if allowed, else where it may run.
 * Returns what the policy's yield fast path chose to run next, if it took
 * that path (never while the runtime stops). */
static MQS__HOT struct mqs_sched_entity *requeue_prev(struct mqs_worker *w,
                                             struct mqs_task *prev,
                                             uint64_t now, bool stopping,
                                             bool *was_preempted)
{
    const struct mqs_policy *p = w->rt->policy;
    mqs__apply_pending(prev);
    /* A preemption is no yield: the policy re-queues the task as one
     * that was stopped (a FIFO task keeps its place) and picks; the task
     * is pinned to this worker (preempt.c), whatever its mask says. */
    bool preempted = false;
    if (MQS__UNLIKELY(w->preempting)) {
        preempted = true;
        w->preempting = false;
        *was_preempted = true; /* for the trace's STOP */
    }
    if (MQS__UNLIKELY(!prev->se.any_worker && !preempted &&
                      !mqs_mask_isset(&prev->se.affinity, w->index))) {
        /* It cannot be queued elsewhere before its context is saved:
         * mqs__finish_switch places it once on_cpu is 0. */
        atomic_store_explicit(&prev->resched_move, true,
                              memory_order_relaxed);
        return NULL;
    }
    prev->se.queued_at_ns = now;
    if (p->yield && !stopping && !preempted) {
        atomic_store_explicit(&prev->queued_on, w->index,
                              memory_order_relaxed);
        MQS__CHK_COUNT(w->rt, w->index, 1);
        MQS__CHK_OP(&w->rq, "yield");
        struct mqs_sched_entity *next = p->yield(&w->rq, &prev->se);
        if (MQS__LIKELY(next != NULL))
            return next;
        atomic_store_explicit(&prev->queued_on, -1, memory_order_relaxed);
        MQS__CHK_COUNT(w->rt, w->index, -1);
    }
    mqs__rq_enqueue_locked(&w->rq, prev,
                           preempted ? MQS_ENQ_PREEMPTED : MQS_ENQ_YIELD);
    return NULL;
}

/* The trace's records of a switch (MQS_TRACE): prev's run ends, why
 * (MQS__TR_WHY_*: the switch's MQS__SW_*, or a preemption), next's
 * starts. */
static __attribute__((noinline)) void trace_switch(struct mqs_worker *w,
                                                   struct mqs_task *prev,
                                                   int why,
                                                   struct mqs_task *next)
{
    _Static_assert((int)MQS__TR_WHY_YIELD == (int)MQS__SW_YIELD &&
                       (int)MQS__TR_WHY_BLOCK == (int)MQS__SW_BLOCK &&
                       (int)MQS__TR_WHY_EXIT == (int)MQS__SW_EXIT &&
                       (int)MQS__TR_WHY_MOVE == (int)MQS__SW_MOVE &&
                       (int)MQS__TR_WHY_CHILD == (int)MQS__SW_CHILD,
                   "a stop's reasons are the switch's");
    mqs__trace_stop(w, prev, why);
    if (next)
        mqs__trace_start(w, next);
}

void mqs__schedule(struct mqs_worker *w, struct mqs_task *prev, int why)
{
    const struct mqs_policy *p = w->rt->policy;
    /* Inside the runtime from here to the return into prev's code; the
     * depth is prev's own and comes back with it on whichever worker
     * resumes it (the context switched to restores its own). */
    unsigned depth = w->in_runtime;
    w->in_runtime = depth + 1;
    atomic_signal_fence(memory_order_seq_cst);
    mqs__sched_clock(w);
    int64_t run = (int64_t)(w->now - prev->se.exec_start_ns);
    prev->se.stall_ns =
        MQS__UNLIKELY(run >= (int64_t)MQS_STALL_CHECK_NS) &&
                (int64_t)(w->now - w->stall_wall0) >=
                    (int64_t)MQS_STALL_SPACING_NS
            ? run_stall(w, (uint64_t)run)
            : 0;
    /* prev's run ends here: timers and balancing below are the
     * scheduler's time, not prev's (nor the next task's). */
    uint64_t end = w->now;
    housekeeping(w, why != MQS__SW_BLOCK);
    /* Child first: a parked spawner resumes as its child blocks or ends;
     * a yield hands the parked ones to the policy (runnext.c). */
    struct mqs_task *parked = NULL;
    bool woken = false;
    if (why != MQS__SW_YIELD) {
        bool from_slot; /* its address taken here only, off the yield path */
        parked = mqs__runnext_pop(w, &from_slot);
        woken = from_slot;
    }
    else if (MQS__UNLIKELY(mqs__runnext_any(&w->runnext)))
        mqs__runnext_flush(w);
    /* In a register from here on: the stores below could alias w->now. */
    uint64_t now = w->now;
    bool fast_lock = mqs__own_lock(w);
    /* A lock taken the slow way may have been waited for, milliseconds
     * when its holder lost its CPU: that wait is no task's run (it hid
     * host preemptions from the next task's stall check), so the next
     * run starts after it.  The time taken again, off the biased path
     * (a clock read, or the tick's time under tick accounting). */
    if (!fast_lock)
        now = mqs__sched_clock(w);
    uint64_t ran = mqs__account_run(w, prev, end);
    if (p->put_prev) {
        MQS__CHK_OP(&w->rq, "put_prev");
        p->put_prev(&w->rq, &prev->se, ran);
    }
    /* The hand-off's wakee: the policy sets it running, or has it
     * queued and picked as any wake-up.  (`why` first: a yield pops
     * nothing and reads no flag.) */
    if (why != MQS__SW_YIELD && woken && p->run_woken) {
        MQS__CHK_OP(&w->rq, "run_woken");
        if (!p->run_woken(&w->rq, &parked->se)) {
            mqs__rq_enqueue_locked(&w->rq, parked, MQS_ENQ_WAKEUP |
                                                       MQS_ENQ_SYNC |
                                                       MQS_ENQ_TASK);
            parked = NULL;
        }
    }
    /* A stopping runtime sends every worker back to its loop. */
    bool stopping = atomic_load_explicit(&w->rt->stopping,
                                         memory_order_relaxed);
    bool move = false;
    struct mqs_sched_entity *fast = NULL;
    bool preempted = false;
    if (why == MQS__SW_YIELD) {
        atomic_store_explicit(&prev->state, MQS__RUNNABLE,
                              memory_order_relaxed);
        fast = requeue_prev(w, prev, now, stopping, &preempted);
        move = !fast && atomic_load_explicit(&prev->resched_move,
                                             memory_order_relaxed);
    }
#ifdef MQS_CONTRACT_CHECKS
    if (!fast && !parked && !stopping)
        MQS__CHK_OP(&w->rq, "pick");
#endif
    struct mqs_task *next = fast       ? mqs__checked_pick(w, fast)
                            : parked   ? parked
                            : stopping ? NULL
                                       : mqs__checked_pick(w, p->pick(&w->rq));
    mqs__own_unlock(w, fast_lock);
    if (next == prev) {
        mqs__account_start(w, prev, now);
        atomic_signal_fence(memory_order_seq_cst);
        w->in_runtime = depth;
        return;
    }
    if (!next && why != MQS__SW_YIELD && !stopping)
        next = mqs__balance_and_pick(w, MQS_BALANCE_NEWIDLE);
    if (MQS__UNLIKELY(w->trace))
        trace_switch(w, prev,
                     move         ? MQS__TR_WHY_MOVE
                     : preempted  ? MQS__TR_WHY_PREEMPT
                                  : why,
                     next);
    MQS__STAT_ADD(w->stats.switches, 1);
    w->prev = prev;
    w->prev_why = move ? MQS__SW_MOVE : why;
    if (next)
        mqs__account_start(w, next, now);
    else
        w->curr = NULL;
    w = mqs__switch_to(w, prev, next);
    mqs__finish_switch(w);
    atomic_signal_fence(memory_order_seq_cst);
    w->in_runtime = depth;
}

/* ------------------------------------------------------------------ */
/* Waking                                                              */
/* ------------------------------------------------------------------ */

void mqs__wake(struct mqs_task *t)
{
    mqs__wake_flags(t, 0);
}

/* flags: MQS_ENQ_SYNC when the waker is likely to block soon (a pipe or
 * channel partner: Linux's WF_SYNC heuristic for pipes), so placement may
 * keep the woken task on the waker's worker. */
void mqs__wake_flags(struct mqs_task *t, int flags)
{
    mqs_runtime_t *rt = t->rt;
    while (atomic_load_explicit(&t->on_cpu, memory_order_acquire))
        mqs__cpu_relax();
    MQS__STAT_ADD(t->events.wakeups, 1);
    atomic_store_explicit(&t->state, MQS__RUNNABLE, memory_order_relaxed);
    struct mqs_worker *self = mqs__worker_self();
    if (self && self->rt == rt && self->curr) {
        flags |= MQS_ENQ_TASK;
        t->se.woke_at_ns = self->now;
        /* A partner about to block: t runs when it does (runnext.c). */
        if ((flags & MQS_ENQ_SYNC) && mqs__wake_next(self, t)) {
            MQS__STAT_ADD(self->stats.wakeups_local, 1);
            return;
        }
    }
    /* A more urgent task woken onto this very worker runs now: the wake
     * call is a scheduling point for the waker.  (t must not be touched
     * after the enqueue: it may already run elsewhere.) */
    if (mqs__enqueue_task(rt, t, MQS_ENQ_WAKEUP | flags)) {
        self = mqs__worker_self();
        mqs__schedule(self, self->curr, MQS__SW_YIELD);
    } else if (self && self->curr && self->in_runtime == 0 &&
               mqs__shuffle_coin(self, 2)) {
        /* Random-schedule mode: the waker, in its own code (not inside
         * a scheduling point or an exit), yields as a preempting
         * wake-up would have made it. */
        mqs__schedule(self, self->curr, MQS__SW_YIELD);
    }
}
