/*
 * watchdog.c - the stall watchdog: a runnable task that a policy never
 * runs is reported by the policy's and the task's name, and the process
 * aborts, instead of the program hanging in a join that never returns.
 *
 * What counts as a stall.  The core knows, for every live task, whether
 * it is queued and on which worker's run queue (queued_on) and since when
 * (se.queued_at_ns); it does not know the policy's order.  A long wait is
 * not by itself a fault: a realtime task may rightly hold a worker for
 * ever, and a task that runs without scheduling points holds its worker
 * whatever the policy does.  So a task T queued on worker q is reported
 * only when all of these hold:
 *   - q has kept reaching scheduling points (its checks, below, came at
 *     least every 2 * stall_ns / 8) for longer than stall_ns while T was
 *     queued: the policy was asked again and again and never chose T;
 *   - at q's latest check q was idle, or ran a task no more urgent than T
 *     (priority level >= T's): nothing that outranks T explains the wait.
 * A worker the host does not run (an overloaded machine) or that runs a
 * task without scheduling points has a gap in its checks, which restarts
 * its record, so neither is mistaken for a policy fault: the watchdog
 * never names a long runner.  With preemption on, a task computing in
 * the program's own code is stopped at ticks, so its worker keeps
 * reaching scheduling points and the tasks queued behind it are judged
 * as on any busy worker (a stop asks the policy, which should pick them);
 * one that cannot be stopped (a library's loop, a disabled section)
 * leaves the same gap as with preemption off.
 *
 * Cost.  Nothing on the yield path: each worker records a check (three
 * relaxed stores) from the core's periodic housekeeping branch, which runs
 * at most once a millisecond, and from its idle loop; an idle worker parks
 * for at most stall_ns / 8 while the watchdog is on so that its checks
 * keep coming.  Every stall_ns / 8 one worker (whichever wins a CAS on the
 * runtime's next-scan time) walks the lists of live tasks that the core
 * keeps anyway for shutdown reports, taking each queued task's run-queue
 * lock only to read its queued_at_ns consistently.
 *
 * Rejected: a per-rq list of queued tasks maintained by the core (an
 * insertion and removal on every enqueue and pick, the hot path); a
 * timestamp per pick compared against every queued task (a store per
 * pick); a watchdog thread per runtime (a thread that sleeps and wakes
 * only to look, where the workers already wake for housekeeping); leaving
 * detection to the destroy's deadlock check (a join waits on the task, so
 * the program hangs before destroy is reached).
 */
#include "internal.h"

/* Checks at least every interval; a gap of two intervals restarts the
 * record; a scan every interval. */
#define WATCHDOG_DIVISOR 8

static uint64_t watchdog_interval(const mqs_runtime_t *rt)
{
    return (uint64_t)rt->stall_ns / WATCHDOG_DIVISOR;
}

/* Worker w reached a check at time now. */
static void watchdog_record(struct mqs_worker *w, uint64_t now)
{
    uint64_t last = atomic_load_explicit(&w->wd.last, memory_order_relaxed);
    if (last == 0 || (int64_t)(now - last) > 2 * (int64_t)watchdog_interval(w->rt))
        atomic_store_explicit(&w->wd.since, now, memory_order_relaxed);
    atomic_store_explicit(&w->wd.prio,
                          w->curr ? w->curr->se.prio : MQS_PRIO_NONE,
                          memory_order_relaxed);
    atomic_store_explicit(&w->wd.last, now, memory_order_release);
}

/* How long t has waited on worker q's queue while q kept scheduling and
 * ran nothing more urgent than t; 0 when that does not apply. */
static uint64_t watchdog_stalled_for(mqs_runtime_t *rt, struct mqs_task *t,
                                     uint64_t now, int *qout)
{
    if (atomic_load_explicit(&t->state, memory_order_relaxed) != MQS__RUNNABLE)
        return 0;
    int q = atomic_load_explicit(&t->queued_on, memory_order_relaxed);
    if (q < 0 || q >= rt->nworkers)
        return 0;
    struct mqs_worker *w = rt->workers[q];
    uint64_t last = atomic_load_explicit(&w->wd.last, memory_order_acquire);
    uint64_t since = atomic_load_explicit(&w->wd.since, memory_order_relaxed);
    unsigned ran = atomic_load_explicit(&w->wd.prio, memory_order_relaxed);
    if (last == 0 || (int64_t)(now - last) > 2 * (int64_t)watchdog_interval(rt))
        return 0; /* q is not scheduling now: a long run or the host */
    mqs__spin_lock(w->rq.lock);
    MQS__CHK_TOOK(&w->rq);
    bool queued = atomic_load_explicit(&t->queued_on, memory_order_relaxed) == q;
    /* Only a task queued under this lock has its stamp written under it:
     * a waker stamps queued_at_ns before it takes the target's lock. */
    uint64_t at = queued ? t->se.queued_at_ns : 0;
    unsigned prio = queued ? t->se.prio : 0;
    MQS__CHK_RELEASE(&w->rq);
    mqs__spin_unlock(w->rq.lock);
    uint64_t from = at > since ? at : since;
    if (!queued || prio > ran || (int64_t)(now - from) <= rt->stall_ns)
        return 0;
    *qout = q;
    return now - from;
}

static _Noreturn void watchdog_report(mqs_runtime_t *rt, struct mqs_task *t,
                                      int q, uint64_t waited)
{
    unsigned ran = atomic_load_explicit(&rt->workers[q]->wd.prio,
                                        memory_order_relaxed);
    char what[48];
    if (ran == MQS_PRIO_NONE)
        snprintf(what, sizeof what, "idled");
    else
        snprintf(what, sizeof what, "ran priority level %u", ran);
    mqs__panic("policy %s: task %s (priority level %u) has been runnable on "
               "worker %d's queue for %llu ms and was never run, while that "
               "worker kept scheduling and %s (stall watchdog, stall_ns=%lld: "
               "the policy lost the task or never picks it)",
               rt->policy->name, t->name, t->se.prio, q,
               (unsigned long long)(waited / 1000000), what,
               (long long)rt->stall_ns);
}

struct wd_scan {
    mqs_runtime_t *rt;
    uint64_t now;
};

static void watchdog_scan_one(struct mqs_task *t, void *ctx)
{
    struct wd_scan *sc = ctx;
    int q = -1;
    uint64_t waited = watchdog_stalled_for(sc->rt, t, sc->now, &q);
    if (waited)
        watchdog_report(sc->rt, t, q, waited);
}

static void watchdog_scan(mqs_runtime_t *rt, uint64_t now)
{
    struct wd_scan sc = {rt, now};
    mqs__tasks_each(rt, watchdog_scan_one, &sc);
}

void mqs__watchdog_check(struct mqs_worker *w)
{
    mqs_runtime_t *rt = w->rt;
    if (MQS__LIKELY(rt->stall_ns == 0))
        return;
    uint64_t now = w->now;
    watchdog_record(w, now);
    uint64_t due = atomic_load_explicit(&rt->wd_next_scan, memory_order_relaxed);
    if (now < due ||
        !atomic_compare_exchange_strong(&rt->wd_next_scan, &due,
                                        now + watchdog_interval(rt)))
        return;
    watchdog_scan(rt, now);
}

uint64_t mqs__watchdog_park_ns(const mqs_runtime_t *rt, uint64_t timeout_ns)
{
    if (rt->stall_ns == 0)
        return timeout_ns;
    uint64_t cap = watchdog_interval(rt);
    return timeout_ns < cap ? timeout_ns : cap;
}

#undef WATCHDOG_DIVISOR
