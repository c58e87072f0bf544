/*
 * fair.h - the frame that the tree-based fair policies (cfs, eevdf)
 * share around their trees (and the run of yielders beside them): the
 * class order, load tracking per queue, realtime pulls and the load
 * balancer.  Each policy keeps its normal
 * tasks in its own order in `tree` and supplies the few callbacks that
 * depend on that order; everything below is written once.
 *
 * Class order (docs/design.md): realtime FIFO/RR levels 0..99 and the idle
 * level 140 live in one O(1) priority array (src/prio_array.h) beside the
 * tree; pick tries realtime (pulling a more urgent one from another queue
 * first, as mq does, so invariant 2 holds across workers), then the tree,
 * then idle.  A queue publishes its most urgent realtime or idle level,
 * and MQS__FAIR_LEVEL (139) for "a normal task waits": nice does not
 * order normal tasks here (virtual time does), so publishing the best
 * nice would make every checkpoint of a lower-nice task a reschedule.
 *
 * Load: the queue's signal (src/load_avg.h) accumulates with the weight
 * of its normal tasks, queued and running; entities join it when queued
 * and leave it when they stop without being re-queued.  The core tells a
 * policy that a task stopped (put_prev) before it knows whether the task
 * blocks, so leaving is lazy: put_prev marks the entity `stopped`; a
 * re-queue (yield) clears the mark, any other op first settles it (the
 * entity leaves).  A yield therefore costs no load arithmetic but the
 * signals' own updates, and those only when a period boundary (about a
 * millisecond) has passed since the last (mqs__fair_stop): inside a
 * period an update would only add time to the sum, which the next one
 * adds as well.  The queue's average is published (pub_load) for
 * remote balancers, which read it without the lock.
 *
 * Balancing (Linux's load_balance, reduced to one level): the balancer
 * looks for the queue with the highest published load that has tasks
 * waiting, and moves up to half the difference in load.  The periodic
 * balancer needs the busiest to exceed its own load by 17% (Linux's
 * imbalance_pct), moves only tasks whose load fits what is left to move
 * (so one heavy task does not bounce between two queues), and leaves
 * cache-hot tasks (stopped within migration_cost_ns) where they are; an
 * idle or newly idle worker takes at least one task, hot or not: an idle
 * worker costs more than a cold cache.
 *
 * Rejected: publishing nice levels (above); eager leave in put_prev (two
 * multiplies and a signal update per yield for nothing); balancing by
 * queue length, as mq does (the point of PELT is to weigh tasks by how
 * runnable they are).
 *
 * Entity slots: when it last stopped and the weight it joined the load
 * with (a priority change between stopping and re-queueing must not
 * unbalance the sums) belong to this frame, kept in se->node2 (a policy
 * link these policies do not use: mqs__fair_slot); the policies use
 * p[0..3], key and slice_ns.  node2 and p[0..3] share the entity's
 * line 1 with node (the run's link); the load signal, which a yield
 * checks, is on line 2 (mqs/policy.h): a yield touches those two lines
 * and line 0, and tree nodes only in the tree.
 */
#ifndef MQS_FAIR_H
#define MQS_FAIR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "mqs/policy.h"
#include "bitmap.h"
#include "list.h"
#include "div128.h"
#include "load_avg.h"
#include "prio_array.h"
#include "rbtree.h"

#define MQS__FAIR_LEVEL (MQS_PRIO_IDLE - 1)
#define MQS__FAIR_P_LAST 0 /* slot: when it last stopped running       */
#define MQS__FAIR_P_W 1    /* slot: the weight it joined the load with */
#define MQS__FAIR_STEAL_MAX 8
/* Periodic passes that found an imbalance and moved nothing, after which
 * cache-hot tasks may move (Linux: nr_balance_failed > cache_nice_tries,
 * whose default is 1). */
#define MQS__FAIR_HOT_TRIES 2

/* The start of a fair policy's per-rq state.  Everything under rq lock,
 * except pub_load (atomic, read by other workers) and next_balance
 * (owning worker only). */
struct mqs__fair_rq {
    struct mqs__prio_array cls;      /* realtime and idle-class tasks    */
    struct mqs__rb_root tree;        /* normal tasks, the policy's order */
    struct mqs_list run;             /* more, behind the tree (cfs): below */
    unsigned run_n;
    uint64_t seq;                    /* insertions so far (cfs: ties)     */
    uint64_t run_max;                /* greatest key appended to the run  */
    uint64_t run_slack;              /* order tolerance (cfs: tunable)    */
    struct mqs_sched_entity *curr;   /* normal task running here, or NULL */
    struct mqs_sched_entity *stopped; /* stopped; leaves unless re-queued */
    uint64_t weight;                 /* weight of tree, curr and stopped */
    struct mqs_load_avg load;        /* the queue's load signal          */
    _Atomic uint64_t pub_load;       /* load.avg, for remote balancers   */
    uint64_t next_balance;
    unsigned balance_failed;         /* periodic passes in a row: none moved */
};

_Static_assert(sizeof(struct mqs_list) >= 2 * sizeof(uint64_t),
               "two slots fit in se->node2");

/* The frame's entity slot i (MQS__FAIR_P_*), in se->node2's bytes. */
static inline uint64_t mqs__fair_slot(const struct mqs_sched_entity *se, int i)
{
    uint64_t v;
    memcpy(&v, (const char *)&se->node2 + i * sizeof v, sizeof v);
    return v;
}

static inline void mqs__fair_set_slot(struct mqs_sched_entity *se, int i,
                                      uint64_t v)
{
    memcpy((char *)&se->node2 + i * sizeof v, &v, sizeof v);
}

static inline struct mqs__fair_rq *mqs__fair(struct mqs_rq *rq)
{
    return mqs_rq_state(rq);
}

/* Linux's SCHED_TUNABLESCALING_LOG: latencies grow with 1 + log2(ncpu),
 * since more CPUs share the work of one period. */
static inline int64_t mqs__fair_scale(const mqs_runtime_t *rt, int64_t v,
                                      bool scale)
{
    int n = mqs_nr_workers(rt), f = 1;
    while (scale && n > 1) {
        n >>= 1;
        f++;
    }
    return v * f;
}

/* Real time ns of an entity of weight w in virtual time (nice 0 = 1). */
static inline uint64_t mqs__fair_vtime(uint64_t ns, uint32_t w)
{
    return w == 1024 ? ns : mqs__div128((unsigned __int128)ns << 10, w);
}

/* Virtual times wrap in theory: compare them as distances. */
static inline bool mqs__fair_before(uint64_t a, uint64_t b)
{
    return (int64_t)(a - b) < 0;
}

static inline struct mqs_sched_entity *mqs__fair_se(const struct mqs_rb_node *n)
{
    return mqs_se_entry(n, struct mqs_sched_entity, rb);
}

/* Tree order of cfs, eevdf (virtual runtime) and bfs (deadline): se->key,
 * copied into the node when it is inserted (mqs__fair_insert). */
static inline bool mqs__fair_less(const struct mqs_rb_node *a,
                                  const struct mqs_rb_node *b)
{
    return mqs__fair_before(a->key, b->key);
}

/* Always inlined, so that aug is a constant in the tree code (as an
 * out-of-line function shared by cfs and eevdf it was a variable: calls
 * through a pointer for eevdf, tests of it for cfs). */
static inline __attribute__((always_inline)) void
mqs__fair_insert(struct mqs__rb_root *t, struct mqs_sched_entity *se,
                 mqs__rb_aug_fn aug)
{
    se->rb.key = se->key;
    mqs__rb_insert(t, &se->rb, mqs__fair_less, aug);
}

/* The same for a yielder, whose place is likely near the end. */
static inline __attribute__((always_inline)) void
mqs__fair_insert_last(struct mqs__rb_root *t, struct mqs_sched_entity *se,
                      mqs__rb_aug_fn aug)
{
    se->rb.key = se->key;
    mqs__rb_insert_last(t, &se->rb, mqs__fair_less, aug);
}

/* The run of yielders beside the tree (cfs, eevdf). */
#include "fair_run.h"

/* min_vruntime: follows min(running, leftmost), forwards only. */
static inline uint64_t mqs__fair_min_vruntime(const struct mqs__fair_rq *f,
                                              const struct mqs_sched_entity *curr,
                                              uint64_t min_v)
{
    struct mqs_sched_entity *first = mqs__fair_first(f);
    uint64_t v;
    if (curr)
        v = first && mqs__fair_before(first->key, curr->key) ? first->key
                                                             : curr->key;
    else if (first)
        v = first->key;
    else
        return min_v;
    return mqs__fair_before(min_v, v) ? v : min_v;
}

static inline void mqs__fair_publish(struct mqs_rq *rq)
{
    struct mqs__fair_rq *f = mqs__fair(rq);
    unsigned best = mqs__parr_best(&f->cls);
    if (mqs__fair_nr(f) && MQS__FAIR_LEVEL < best)
        best = MQS__FAIR_LEVEL;
    mqs_rq_publish(rq, f->cls.nr + mqs__fair_nr(f), best);
}

static inline void mqs__fair_init(struct mqs__fair_rq *f)
{
    mqs__parr_init(&f->cls);
    mqs__rb_init(&f->tree);
    mqs__list_init(&f->run);
    f->run_n = 0;
}

/* ----- realtime and idle classes ----- */

/* Queue a realtime or idle-class task: an RR or idle task with its slice
 * spent gets a new one; a preempted FIFO task keeps its place. */
static inline void mqs__fair_class_add(struct mqs__prio_array *a,
                                       struct mqs_sched_entity *se, int flags,
                                       int64_t rr_slice)
{
    bool head = false;
    if (se->cls == MQS_CLASS_FIFO)
        head = (flags & MQS_ENQ_PREEMPTED) != 0;
    else if (se->slice_ns <= 0)
        se->slice_ns = rr_slice;
    mqs__parr_add(a, se, se->prio, head);
}

static inline void mqs__fair_class_put_prev(struct mqs_sched_entity *se,
                                            uint64_t ran)
{
    if (se->cls != MQS_CLASS_FIFO)
        se->slice_ns -= (int64_t)ran;
}

/* Every class but FIFO gives up the worker when its slice is spent. */
static inline int64_t mqs__fair_tick(struct mqs_rq *rq,
                                     struct mqs_sched_entity *se,
                                     uint64_t now)
{
    (void)rq;
    if (se->cls == MQS_CLASS_FIFO)
        return MQS_SLICE_NONE;
    return se->slice_ns - (int64_t)(now - se->exec_start_ns);
}

/* Is a realtime task queued here, or (by the runtime-wide hint) on any
 * queue?  Then a yield takes the slow path, whose pick pulls it. */
static inline bool mqs__fair_rt_waiting(struct mqs_rq *rq)
{
    const _Atomic uint64_t *hint = mqs_level_hint(mqs_rq_runtime(rq));
    uint64_t w0 = atomic_load_explicit(&hint[0], memory_order_relaxed);
    uint64_t w1 = atomic_load_explicit(&hint[1], memory_order_relaxed);
    const struct mqs__prio_array *cls = &mqs__fair(rq)->cls;
    return w0 || (w1 & mqs__below_mask(MQS_PRIO_NORMAL_MIN, 1)) ||
           (cls->nr && mqs__parr_best(cls) < MQS_PRIO_NORMAL_MIN);
}

struct mqs__fair_rt_req {
    unsigned below; /* levels more urgent than this */
    int dest;
};

static inline int mqs__fair_take_rt(struct mqs_rq *victim, void *arg,
                                    struct mqs_sched_entity **out, int max)
{
    struct mqs__fair_rq *f = mqs__fair(victim);
    const struct mqs__fair_rt_req *req = arg;
    int n = 0;
    for (unsigned lvl = mqs__parr_best(&f->cls); lvl < req->below && n < max;
         lvl = mqs__parr_next(&f->cls, lvl + 1)) {
        struct mqs_list *pos, *tmp;
        mqs__list_for_each_safe(pos, tmp, &f->cls.q[lvl])
        {
            struct mqs_sched_entity *se =
                mqs_se_entry(pos, struct mqs_sched_entity, node);
            if (n < max && mqs_se_allowed(se, req->dest) &&
                mqs_se_movable(se)) {
                mqs__parr_del(&f->cls, se, lvl);
                out[n++] = se;
            }
        }
    }
    mqs__fair_publish(victim);
    return n;
}

/* A realtime task more urgent than `below` queued on another worker,
 * taken for this one; NULL when the hint says there is none or every
 * candidate is busy or not allowed here. */
static inline struct mqs_sched_entity *mqs__fair_pull_rt(struct mqs_rq *rq,
                                                         unsigned below)
{
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    if (mqs_best_prio_anywhere(rt) >= below)
        return NULL;
    int self = mqs_rq_worker(rq), n = mqs_nr_workers(rt);
    struct mqs__fair_rt_req req = {below, self};
    for (int i = 1; i < n; i++) {
        struct mqs_rq *v = mqs_rq_of(rt, (self + i) % n);
        struct mqs_sched_entity *se;
        if (mqs_rq_best_prio(v) < below &&
            mqs_rq_steal(rq, v, MQS_PULL_PRIORITY, mqs__fair_take_rt, &req,
                         &se, 1))
            return se;
    }
    return NULL;
}

/* The realtime part of pick: a more urgent realtime task from elsewhere,
 * else the local one; NULL when no realtime task is to run. */
static inline struct mqs_sched_entity *mqs__fair_pick_rt(struct mqs_rq *rq)
{
    struct mqs__fair_rq *f = mqs__fair(rq);
    unsigned lvl = mqs__parr_best(&f->cls);
    unsigned below = lvl < MQS_PRIO_NORMAL_MIN ? lvl : MQS_PRIO_NORMAL_MIN;
    struct mqs_sched_entity *se = mqs__fair_pull_rt(rq, below);
    if (se || lvl >= MQS_PRIO_NORMAL_MIN)
        return se;
    se = mqs__parr_first(&f->cls, lvl);
    mqs__parr_del(&f->cls, se, lvl);
    mqs__fair_publish(rq);
    return se;
}

/* The idle-class part of pick (after realtime and the tree). */
static inline struct mqs_sched_entity *mqs__fair_pick_idle(struct mqs_rq *rq)
{
    struct mqs_sched_entity *se = mqs__parr_pop(&mqs__fair(rq)->cls);
    if (se)
        mqs__fair_publish(rq);
    return se;
}

/* ----- load ----- */

static inline void mqs__fair_load_rq(struct mqs__fair_rq *f, uint64_t now)
{
    if (mqs__load_update(&f->load, now, f->weight, 1))
        atomic_store_explicit(&f->pub_load, f->load.avg, memory_order_relaxed);
}

/* When an update of la would next cross a period boundary (and so
 * change its average).  Inside a period an update only adds the runnable
 * time to the sum, and adding it later, in one piece, gives the same sum
 * as long as the weight it is counted with stays the same. */
static inline uint64_t mqs__fair_load_due(const struct mqs_load_avg *la)
{
    return la->last_ns +
           ((uint64_t)(MQS__LOAD_PERIOD - la->contrib) << MQS__LOAD_UNIT_SHIFT);
}

/* se->due_ns, kept with the signal: a yield reads this word on the
 * entity's first line instead of the signal's own line. */
static inline void mqs__fair_load_se_due(struct mqs_sched_entity *se)
{
    se->due_ns = mqs__fair_load_due(&se->load);
}

/* A normal entity joins the queue's load; was_runnable says whether the
 * time since its last update was spent queued (migrated) or asleep. */
static inline void mqs__fair_load_join(struct mqs__fair_rq *f,
                                       struct mqs_sched_entity *se,
                                       uint64_t now, bool was_runnable)
{
    mqs__fair_load_rq(f, now);
    if (se->load.last_ns == 0)
        mqs__load_init_full(&se->load, now, se->weight);
    else
        mqs__load_update(&se->load, now, was_runnable, se->weight);
    mqs__fair_load_se_due(se);
    mqs__load_attach(&f->load, &se->load, se->weight);
    mqs__fair_set_slot(se, MQS__FAIR_P_W, se->weight);
    f->weight += se->weight;
    atomic_store_explicit(&f->pub_load, f->load.avg, memory_order_relaxed);
}

static inline void mqs__fair_load_leave(struct mqs__fair_rq *f,
                                        struct mqs_sched_entity *se,
                                        uint64_t now)
{
    mqs__fair_load_rq(f, now);
    uint64_t w = mqs__fair_slot(se, MQS__FAIR_P_W);
    mqs__load_update(&se->load, now, 1, w);
    mqs__fair_load_se_due(se);
    mqs__load_detach(&f->load, &se->load, w);
    f->weight -= w;
    atomic_store_explicit(&f->pub_load, f->load.avg, memory_order_relaxed);
}

/* A stopped entity that was not re-queued leaves the load; returns it
 * (the policy drops it from its own sums too) or NULL. */
static inline struct mqs_sched_entity *mqs__fair_settle(struct mqs__fair_rq *f,
                                                        uint64_t now)
{
    struct mqs_sched_entity *se = f->stopped;
    if (se) {
        f->stopped = NULL;
        mqs__fair_load_leave(f, se, now);
    }
    return se;
}

/* May a stopped entity go back into the tree as it is (a yield, with its
 * class and weight unchanged)?  Then it stays in the load. */
static inline bool mqs__fair_requeue(struct mqs__fair_rq *f,
                                     struct mqs_sched_entity *se)
{
    if (f->stopped != se || se->cls != MQS_CLASS_NORMAL ||
        mqs__fair_slot(se, MQS__FAIR_P_W) != se->weight)
        return false;
    f->stopped = NULL;
    return true;
}

/* put_prev of a normal entity: charge its signal, mark it stopped.  The
 * queue's and the entity's signals are brought up to date only when a
 * period boundary passed (about once a millisecond): until then neither
 * average would change, and the time stays owed to the next update with
 * the same runnable weight (a yield leaves both weights as they are; a
 * join or leave updates the signals first, mqs__fair_load_join/leave). */
static inline void mqs__fair_stop(struct mqs__fair_rq *f,
                                  struct mqs_sched_entity *se, uint64_t now)
{
    mqs__fair_settle(f, now);
    if (now >= mqs__fair_load_due(&f->load))
        mqs__fair_load_rq(f, now);
    if (now >= se->due_ns) {
        mqs__load_update(&se->load, now, 1, se->weight);
        mqs__fair_load_se_due(se);
    }
    mqs__fair_set_slot(se, MQS__FAIR_P_LAST, now);
    f->curr = NULL;
    f->stopped = se;
}

#define MQS__FAIR_SHORT_NS 100000

/* What to charge for a run of ran ns, from the core's own measurement of
 * it: se->stall_ns, the part of this very run that the worker's thread
 * spent off its CPU (sched.c, from runs of MQS_STALL_CHECK_NS; it agreed
 * with /proc/<tid>/schedstat's wait within a microsecond in the runs we
 * compared).  A run of check_ns or more whose CPU part is short, under
 * half the slice it started with (se->slice_ns, not yet charged) or
 * MQS__FAIR_SHORT_NS, is a voluntary run that the OS stretched: only
 * the CPU part is charged.  Without this one OS preemption in a yield
 * loop charges a task milliseconds of virtual time for a 100 ns run,
 * and with n tasks queued it then waits n times that for the others to
 * catch up.  A run with more CPU than that is a slice and is charged in
 * full, so that shares stay exact in run_ns, the wall time the core
 * accounts: correcting slices too made 3 s windows of nice 0 vs 5 under
 * eevdf read 2.2 to 2.9 for 3.06 on a loaded host (OS preemptions fall
 * in step with the slice pattern, not evenly).  check_ns <= 0: off.
 *
 * The frame's own estimate before this one (thread CPU time against wall
 * time since the last long run) was wrong in the runs that starved a
 * task: its marks were reset only by runs of check_ns or more, so the
 * window it compared thread CPU time with wall time over reached back to
 * the last such run, tens of milliseconds, through idle spins, parks and
 * other tasks' runs; in the conformance share loop it read the thread as
 * on its CPU (CPU time >= wall time, or > 100 us of it) for 4 ms runs
 * that schedstat showed waiting 4 ms, and charged them in full: a 4 ms
 * lead over the 100 ns runs of its queue-mates, three quarters of the
 * task's turns in a 25 ms window.  A fixed 100 us line on the CPU part
 * also missed: some stalled yield-loop runs showed 100-130 us of CPU
 * (what used it is not known).  cfs, eevdf and bfs use this. */
static inline uint64_t mqs__fair_charge_run(const struct mqs_sched_entity *se,
                                            uint64_t ran, int64_t check_ns)
{
    if (check_ns <= 0 || ran < (uint64_t)check_ns || se->stall_ns == 0)
        return ran;
    uint64_t cpu = se->stall_ns < ran ? ran - se->stall_ns : 0;
    uint64_t line = se->slice_ns > 2 * MQS__FAIR_SHORT_NS
                        ? (uint64_t)se->slice_ns / 2
                        : MQS__FAIR_SHORT_NS;
    return cpu < line ? cpu : ran;
}

/* ----- balancing ----- */

struct mqs__fair_take_req {
    int dest;
    bool fit;           /* move only tasks whose load fits what is left */
    uint64_t want, now, hot_ns;
    /* Remove queued normal se from victim's tree and sums (lock held). */
    void (*unlink)(struct mqs_rq *victim, struct mqs_sched_entity *se,
                   uint64_t now);
};

static inline bool mqs__fair_can_take(const struct mqs__fair_take_req *req,
                                      const struct mqs_sched_entity *se,
                                      uint64_t moved)
{
    if (!mqs_se_allowed(se, req->dest) || !mqs_se_movable(se))
        return false;
    if (req->hot_ns &&
        (int64_t)(req->now - mqs__fair_slot(se, MQS__FAIR_P_LAST)) <
            (int64_t)req->hot_ns)
        return false;
    return !req->fit || se->load.avg <= req->want - moved;
}

static inline int mqs__fair_take(struct mqs_rq *victim, void *arg,
                                 struct mqs_sched_entity **out, int max)
{
    struct mqs__fair_take_req *req = arg;
    struct mqs__fair_rq *f = mqs__fair(victim);
    uint64_t moved = 0;
    int n = 0;
    struct mqs_sched_entity *se = mqs__fair_walk(f, NULL), *next;
    for (; se && n < max && moved < req->want; se = next) {
        next = mqs__fair_walk(f, se);
        if (!mqs__fair_can_take(req, se, moved))
            continue;
        moved += se->load.avg ? se->load.avg : 1;
        req->unlink(victim, se, req->now);
        out[n++] = se;
    }
    mqs__fair_publish(victim);
    return n;
}

/* The other queue with tasks waiting and the highest published load. */
static inline int mqs__fair_busiest(mqs_runtime_t *rt, int self,
                                    uint64_t *load)
{
    int best = -1;
    *load = 0;
    for (int i = 0; i < mqs_nr_workers(rt); i++) {
        struct mqs_rq *v = mqs_rq_of(rt, i);
        if (i == self || mqs_rq_nr_queued(v) == 0)
            continue;
        uint64_t l = atomic_load_explicit(&mqs__fair(v)->pub_load,
                                          memory_order_relaxed);
        if (best < 0 || l > *load) {
            best = i;
            *load = l;
        }
    }
    return best;
}

/* The balance op of a fair policy: interval and hot_ns are its tunables,
 * unlink its tree removal. */
static inline int mqs__fair_balance(struct mqs_rq *rq, int why,
                                    int64_t interval, int64_t hot_ns,
                                    void (*unlink)(struct mqs_rq *,
                                                   struct mqs_sched_entity *,
                                                   uint64_t))
{
    struct mqs__fair_rq *f = mqs__fair(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    uint64_t now = mqs_rq_clock(rq), busy;
    bool periodic = why == MQS_BALANCE_PERIODIC;
    if (periodic && now < f->next_balance)
        return 0;
    if (periodic)
        f->next_balance = now + (uint64_t)interval;
    uint64_t mine = atomic_load_explicit(&f->pub_load, memory_order_relaxed);
    int victim = mqs__fair_busiest(rt, mqs_rq_worker(rq), &busy);
    if (victim < 0 || (periodic && busy * 100 <= mine * 117)) {
        if (periodic)
            f->balance_failed = 0; /* balanced: nothing failed */
        return 0;
    }
    /* Cache-hot tasks stay, unless passes in a row found the imbalance
     * and moved nothing: in a yield loop every task ran within
     * migration_cost_ns, and a 3:1 split of 4096 tasks stayed for the
     * whole run (one worker's tasks got a third of the other's turns). */
    bool hot_ok = f->balance_failed >= MQS__FAIR_HOT_TRIES;
    struct mqs__fair_take_req req = {
        mqs_rq_worker(rq), periodic, busy > mine ? (busy - mine) / 2 : 0,
        now, periodic && !hot_ok ? (uint64_t)hot_ns : 0, unlink};
    if (req.want == 0)
        req.want = 1;
    struct mqs_sched_entity *got[MQS__FAIR_STEAL_MAX];
    int n = mqs_rq_steal(rq, mqs_rq_of(rt, victim), why, mqs__fair_take, &req,
                         got, periodic ? MQS__FAIR_STEAL_MAX : 1);
    if (periodic)
        f->balance_failed = n > 0 ? 0 : f->balance_failed + 1;
    return mqs_rq_add_stolen_all(rq, got, n);
}

#undef MQS__FAIR_SHORT_NS

#endif
