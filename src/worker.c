/*
 * worker.c - the worker loop: what a worker's own context does between
 * tasks.  It runs only when a scheduling point found nothing to run (or
 * the runtime stops): it looks at its queue, steals, spins for
 * idle_spin_ns (stealing again whenever kicked: a busy worker kicks an
 * idle one when work piles up), and finally parks on its futex until
 * kicked or its next timer is due.  The top of the core: it calls the
 * scheduling point's helpers (sched.c), the switch (switch.h) and the
 * run queue (rq.h).
 *
 * Rejected: a scheduler thread per worker that every task switches back
 * to (simple, but doubles the switches: here a yield goes task to task,
 * and the loop is not on that path); signal IPIs to wake workers
 * (futexes are cheaper and need no handler).
 */
#include "internal.h"
#include "rq.h"
#include "switch.h"

static bool has_work(struct mqs_worker *w)
{
    return atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed) ||
           atomic_load_explicit(&w->rt->stopping, memory_order_relaxed) ||
           mqs__clock_ns(&w->clock) >=
               atomic_load_explicit(&w->timers.next, memory_order_relaxed);
}

/* Steal, spin for idle_spin_ns (stealing again whenever kicked: a busy
 * worker kicks an idle one when work piles up), then park until kicked or
 * the next timer.  Returns a task stolen for this worker, or NULL to look
 * at the local queue again. */
static struct mqs_task *idle_wait(struct mqs_worker *w)
{
    uint64_t t0 = mqs__clock_ns(&w->clock);
    unsigned seen = atomic_load(&w->park_futex);
    mqs__bias_drop(w);
    mqs__rq_hint_settle(w);
    mqs__publish_idle(w->rt, w->index, true);
    struct mqs_task *t = mqs__balance_and_pick(w, MQS_BALANCE_IDLE);
    while (!t && mqs__clock_ns(&w->clock) - t0 < (uint64_t)w->rt->idle_spin_ns) {
        /* While a task waits on a descriptor, the spin asks epoll too:
         * its edge would otherwise wait for the spin's end and the park
         * (the spin is what makes it early; the ask is a no-op without
         * such a task, and one worker at a time, poll.c). */
        mqs__poll_nowait(w->rt, MQS__POLL_EVENTS);
        if (has_work(w))
            goto out;
        unsigned now_seen = atomic_load_explicit(&w->park_futex,
                                                 memory_order_relaxed);
        if (now_seen != seen) {
            seen = now_seen;
            t = mqs__balance_and_pick(w, MQS_BALANCE_IDLE);
            continue;
        }
        for (int i = 0; i < 32; i++)
            mqs__cpu_relax();
    }
    if (t)
        goto out;
    atomic_store(&w->parked, 1);
    /* A waker may have claimed this worker's idle mark (placement claims
     * it before queueing there) and then queued nothing here, or queued
     * work that another worker stole: mark it again before parking, or
     * the worker sleeps unmarked, no placement picks it, and destroy's
     * check that every worker idles never passes.  A claim whose enqueue
     * is still coming finds has_work() below or kicks the futex. */
    mqs__publish_idle(w->rt, w->index, true);
    if (!has_work(w) && atomic_load(&w->park_futex) == seen) {
        uint64_t next = atomic_load(&w->timers.next);
        uint64_t now = mqs__clock_ns(&w->clock);
        MQS__STAT_ADD(w->stats.parks, 1);
        if (w->trace)
            mqs__trace_put(w->trace, MQS__TR_PARK, 0, 0, 0);
        uint64_t wait = mqs__watchdog_park_ns(
            w->rt, next == UINT64_MAX ? UINT64_MAX
                                      : (next > now ? next - now : 0));
        /* One idle worker waits in the poller instead (poll.c). */
        if (!mqs__poll_park(w, seen, wait))
            mqs__futex_wait(&w->park_futex, seen, wait);
        /* Parked time is no stall: a fresh sample, so that the first run
         * after the park is checked against it (with none, it was not
         * checked at all; an idle spin keeps the old sample, its time
         * is on the CPU). */
        w->now = mqs__clock_ns(&w->clock);
        mqs__stall_sample(w, w->now);
        if (w->trace)
            mqs__trace_put(w->trace, MQS__TR_UNPARK, 0, 0, 0);
    }
    atomic_store(&w->parked, 0);
    /* Pairs with the monitor's store of its own parked flag before it
     * reads every worker's (seq_cst both): one of the two sees the other. */
    mqs__preempt_monitor_wake(w->rt);
out:
    MQS__STAT_ADD(w->stats.idle_ns, mqs__clock_ns(&w->clock) - t0);
    mqs__publish_idle(w->rt, w->index, false);
    return t;
}

void mqs__worker_loop(struct mqs_worker *w)
{
    w->bias_ok = w->rt->bias_ok;
    w->bias_quiet_since = mqs__clock_ns(&w->clock);
    for (;;) {
        /* The loop is the runtime (set again after each return to it,
         * which comes with the depth of the task that left). */
        w->in_runtime = 1;
        atomic_signal_fence(memory_order_seq_cst);
        atomic_store_explicit(&w->rq.curr_level, MQS_PRIO_NONE,
                              memory_order_relaxed);
        mqs__finish_switch(w);
        if (atomic_load(&w->rt->stopping))
            return;
        w->now = mqs__clock_ns(&w->clock);
        mqs__housekeeping(w);
        struct mqs_task *next = mqs__pick_locked(w);
        if (!next) {
            mqs__live_put(w->rt, w->live_units);
            w->live_units = 0;
            next = idle_wait(w);
        }
        if (!next)
            continue;
        MQS__STAT_ADD(w->stats.switches, 1);
        w->now = mqs__clock_ns(&w->clock);
        if (MQS__UNLIKELY(w->trace))
            mqs__trace_start(w, next);
        mqs__account_start(w, next, w->now);
        w = mqs__switch_to(w, NULL, next);
    }
}
