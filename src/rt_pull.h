/*
 * rt_pull.h - the realtime pull of the priority-array policies (o1, ule,
 * and ws's realtime side): before a worker runs a task, it takes a more
 * urgent realtime task that waits on another worker and may run here
 * (invariant 2, docs/design.md), and a yield leaves its fast path while the
 * runtime-wide hint shows one.
 * Also the take and the victim search that the pull shares with those
 * policies' balancers (a balancer pulls too, by load).
 *
 * Design.  The hint is the core's bitmap of the levels that some queue
 * publishes as its best (mqs_level_hint).  A realtime level below `below`
 * in it means a queue's most urgent waiting task is realtime and beats
 * what this worker would run; only then are the queues' published best
 * levels read, and only a queue that publishes such a level is locked
 * (trylock, through mqs_rq_steal: a busy lock is skipped, and the next
 * pick or balancing step tries again).  The hint costs the fast path the
 * two words that hold levels 0..99, one cache line, relaxed loads: a
 * stale word sends one yield down the slow path for nothing, or lets one
 * yield run before the pull, which the next scheduling point makes up
 * ("beyond one balancing step", the invariant's allowance).  The pulled
 * task is returned to run at once, not queued here, as mq and fair.h do.
 *
 * Linux 2.6.0 and FreeBSD 2003 ULE had no such pull (Linux added RT
 * push/pull in 2.6.25), so each policy has rt_pull=0|1 to turn it off.
 * Rejected: a push at wake-up (the waker would pick a victim worker and
 * preempt it: more cross-worker traffic, and the pick-time pull already
 * meets the invariant within one scheduling point); a scan of the queues
 * at every pick without the hint (the 2001 MQ scheduler's cost at low
 * task counts).  fair.h has its own copy of the pull (mqs__fair_pull_rt)
 * that could move here.
 *
 * Locking: mqs__rt_pull_take runs with the victim's lock held (from a
 * policy's take callback); the others take no lock themselves.
 */
#ifndef MQS_RT_PULL_H
#define MQS_RT_PULL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "mqs/policy.h"
#include "bitmap.h"
#include "list.h"
#include "prio_array.h"

/* What a take may move from a victim's priority array. */
struct mqs__rt_pull_req {
    unsigned below;      /* only levels more urgent than this         */
    int dest;            /* the worker they go to                     */
    uint64_t hot_before; /* skip tasks queued after this (UINT64_MAX: none) */
    bool tail;           /* least recently queued of each level first */
};

/* Move up to max - n tasks that req allows from a into out[n..], level by
 * level, most urgent first; returns the new n.  The victim's lock is
 * held; the caller fixes its own counts and publishes. */
static inline int mqs__rt_pull_take(struct mqs__prio_array *a,
                                    const struct mqs__rt_pull_req *req,
                                    struct mqs_sched_entity **out, int n,
                                    int max)
{
    for (unsigned lvl = mqs__parr_best(a); lvl < req->below && n < max;
         lvl = mqs__parr_next(a, lvl + 1)) {
        struct mqs_list *q = &a->q[lvl];
        struct mqs_list *pos = req->tail ? q->prev : q->next, *step;
        for (; pos != q && n < max; pos = step) {
            step = req->tail ? pos->prev : pos->next;
            struct mqs_sched_entity *se =
                mqs_se_entry(pos, struct mqs_sched_entity, node);
            if (!mqs_se_allowed(se, req->dest) || !mqs_se_movable(se) ||
                se->queued_at_ns > req->hot_before)
                continue;
            mqs__parr_del(a, se, lvl);
            out[n++] = se;
        }
    }
    return n;
}

/* The hint words a policy's pick and yield read: rt's, or with the pull
 * off two words that stay zero (so the fast path has no branch on the
 * tunable). */
__attribute__((unused)) static const _Atomic uint64_t mqs__rt_pull_off[2];

static inline const _Atomic uint64_t *mqs__rt_pull_hint(mqs_runtime_t *rt,
                                                        bool on)
{
    return on ? mqs_level_hint(rt) : mqs__rt_pull_off;
}

/* The victim of a balancer: the other worker with the most tasks queued
 * (by published counts), -1 when none has any; *hi is its count, *lo the
 * fewest queued on any worker, this one included. */
static inline int mqs__rt_pull_busiest(mqs_runtime_t *rt, int self,
                                       unsigned *hi, unsigned *lo)
{
    int best = -1, n = mqs_nr_workers(rt);
    *hi = 0;
    *lo = UINT32_MAX;
    for (int i = 0; i < n; i++) {
        unsigned q = mqs_rq_nr_queued(mqs_rq_of(rt, i));
        if (i != self && q > *hi) {
            *hi = q;
            best = i;
        }
        *lo = q < *lo ? q : *lo;
    }
    return best;
}

/* Does the hint show a queue whose best waiting task is realtime and more
 * urgent than level `below` (any realtime one for a normal or idle level)?
 * Two relaxed loads from one cache line; for a normal level the masks are
 * constants. */
static inline bool mqs__rt_pull_due(const _Atomic uint64_t *hint,
                                    unsigned below)
{
    uint64_t w0 = atomic_load_explicit(&hint[0], memory_order_relaxed);
    uint64_t w1 = atomic_load_explicit(&hint[1], memory_order_relaxed);
    if (below >= MQS_PRIO_NORMAL_MIN)
        return (w0 | (w1 & mqs__below_mask(MQS_PRIO_NORMAL_MIN, 1))) != 0;
    return ((w0 & mqs__below_mask(below, 0)) |
            (w1 & mqs__below_mask(below, 1))) != 0;
}

/* A realtime task more urgent than `local` (the best level this worker
 * would run, MQS_PRIO_NONE for none) from another worker, taken for this
 * one through the policy's take callback (which is handed a struct
 * mqs__rt_pull_req); NULL when the hint (mqs__rt_pull_hint: off, or
 * rt's) shows none or none could be had. */
typedef int (*mqs__rt_pull_take_fn)(struct mqs_rq *victim, void *req,
                                    struct mqs_sched_entity **out, int max);

static inline struct mqs_sched_entity *
mqs__rt_pull(struct mqs_rq *rq, const _Atomic uint64_t *hint, unsigned local,
             mqs__rt_pull_take_fn take)
{
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    unsigned below = local < MQS_PRIO_NORMAL_MIN ? local : MQS_PRIO_NORMAL_MIN;
    if (!mqs__rt_pull_due(hint, below))
        return NULL;
    int self = mqs_rq_worker(rq), n = mqs_nr_workers(rt);
    struct mqs__rt_pull_req req = {below, self, UINT64_MAX, false};
    for (int i = 1; i < n; i++) {
        struct mqs_rq *v = mqs_rq_of(rt, (self + i) % n);
        struct mqs_sched_entity *se;
        if (mqs_rq_best_prio(v) < below &&
            mqs_rq_steal(rq, v, MQS_PULL_PRIORITY, take, &req, &se, 1))
            return se;
    }
    return NULL;
}

#endif
