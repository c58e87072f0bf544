/*
 * sched_clock.h - the time of a scheduling point: a clock read, or under
 * tick accounting the monitor's coarse time (docs/design.md, "One clock
 * per comparison").  Included by internal.h after the structs it reads.
 */
#ifndef MQS_SCHED_CLOCK_H
#define MQS_SCHED_CLOCK_H

/* The monitor's time at its last look (rt->pre.jiffy), never behind w's
 * last scheduling point: the coarse time of tick accounting. */
static inline uint64_t mqs__coarse_time(const struct mqs_worker *w)
{
    uint64_t j = atomic_load_explicit(&w->rt->pre.jiffy,
                                      memory_order_relaxed);
    return j > w->now ? j : w->now;
}

/*
 * The time of a scheduling point on w (owner only).  Exact (a clock read)
 * unless w does tick accounting (acct_tick != 0: the policy allows it,
 * preemption is on, MQS_ACCOUNTING is not "exact"); then the monitor's
 * time at its last look (pre.jiffy), never behind w's last exact read.
 * A run is then charged the ticks it straddles: 0 for most short runs, a
 * tick for some, right on average.  A timer of w that may come due
 * within a tick takes the exact read, so timers keep their precision.
 */
static inline uint64_t mqs__sched_time(const struct mqs_worker *w)
{
    if (!w->acct_tick)
        return mqs__clock_ns(&w->clock);
    uint64_t now = mqs__coarse_time(w);
    if (now + w->acct_tick >=
        atomic_load_explicit(&w->timers.next, memory_order_relaxed))
        now = mqs__clock_ns(&w->clock);
    return now;
}

/* The time a policy's tick op is given at a checkpoint or a stop on w
 * (owner only), exact the time there: the clock se.exec_start_ns was
 * taken from.  Under tick accounting that start is the coarse time, and
 * comparing it with an exact read charged a run the time since the last
 * tick before it began: mq's short slices then ran out at every
 * checkpoint until the monitor's next look (a task making 2 KiB records
 * with a checkpoint each switched about ten times as often as under
 * exact accounting: 21 000 against 1 850 switches/s).  So the coarse
 * time, which never falls behind w's last scheduling point. */
static inline uint64_t mqs__tick_time(const struct mqs_worker *w,
                                      uint64_t exact)
{
    return w->acct_tick ? mqs__coarse_time(w) : exact;
}

/* mqs__sched_time, as the time of the scheduling point starting on w.
 * Under tick accounting every MQS__ACCT_EXACT_EVERY-th point reads the
 * clock as well, to see whether the monitor is late: it is a normal
 * thread, and on an overloaded host it can miss its looks for tens of
 * milliseconds; timers and balancing of a worker that never parks must
 * not wait for it.  Only a clock more than MQS__ACCT_LATE_TICKS ticks
 * ahead of the coarse time is taken.  A read taken at every such point
 * made accounting count points, not time: it charged its lump (the time
 * since the last look) to the run it ended, so each run had the same
 * chance of a charge whatever its length, and a task yielding every
 * 100 us got twice the CPU of two yielding every 10 us on one worker
 * (exact accounting: a third each); and, the reads coming every 61
 * points of a round that repeats, the same task was the one left alone
 * in the active array at each round's end, 61 steps more a round
 * (counts 7 100 / 4 554 / 4 346 of three equal tasks in 0.3 s).  The
 * monitor's looks are the tick that samples time (preempt.c). */
#define MQS__ACCT_EXACT_EVERY 61
#define MQS__ACCT_LATE_TICKS 3
static inline uint64_t mqs__sched_clock(struct mqs_worker *w)
{
    uint64_t now = mqs__sched_time(w);
    if (w->acct_tick && ++w->acct_points == MQS__ACCT_EXACT_EVERY) {
        w->acct_points = 0;
        uint64_t c = mqs__clock_ns(&w->clock);
        if (c > now + MQS__ACCT_LATE_TICKS * w->acct_tick)
            now = c;
    }
    return w->now = now;
}

#endif
