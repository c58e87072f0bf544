/*
 * bfs.c - the Brain Fuck Scheduler (Kolivas, 2009): one run queue for the
 * whole machine, ordered by virtual deadline, no balancing at all; tuned
 * for latency on desktops with few CPUs, where a global queue's lock is
 * cheap and an idle CPU can take any waiting task at once.
 *
 * Normal tasks: a task that starts a time slice gets rr_interval_ns of
 * real time and a virtual deadline now + rr_interval x prio_ratio(nice),
 * the ratio growing 10% per nice level (BFS's prio_ratios: 128 for nice
 * -20, x 11/10 per step; here divided by 128, so nice -20 waits one
 * rr_interval and nice 0 about 6.7).  The earliest deadline runs.  A
 * task that sleeps keeps its deadline and what is left of its slice, so
 * it wakes up ahead of the tasks that kept running (BFS's interactivity,
 * without a sleep heuristic); a task whose slice is spent starts a new
 * slice with a new deadline, and so does a yield (our choice: the queue
 * is ordered by deadline only, so a yielder that kept its deadline would
 * run on; a yield loop then ran each task for a whole rr_interval, which
 * the conformance suite's short share runs saw as starvation).  The cost
 * of that choice, measured: in a loop of 20 us steps, nice 0 got ~1000x
 * the CPU of nice 10 (each yield puts a task its whole offset ahead, so
 * the gap between two offsets is what a lower priority waits), against
 * about 10x, by the arithmetic of the offsets, for tasks that use whole
 * slices.  Also tried: moving the deadline
 * on by the part of the offset that was used; it made shares depend on
 * how the deadlines drifted from real time.  Runs are charged to the
 * slice less steal time (src/fair.h), so an OS preemption of the worker
 * does not eat a task's turn.  No task waits longer than the spread of
 * deadlines: one passed over by new arrivals runs by rr_interval x
 * ratio(19) (~40 rr_intervals) after its deadline was set.
 *
 * Lookup: BFS scanned the whole list for the earliest deadline.  Here the
 * queue is a red-black tree by deadline (src/rbtree.h), and pick walks it
 * in order for the first task allowed on this worker (affinity; a task
 * still on another worker's CPU is skipped), then looks up to BFS_SCAN
 * more tasks, within locality_ns of that deadline, for one that last ran
 * on this worker or never ran (cache locality: a task that ran elsewhere
 * is passed over for a local one with a deadline up to locality_ns
 * later), but only once: the next pick on any worker takes it.  Without
 * that bound, tasks that yield in a loop (their deadlines closer together
 * than any window) stayed with the worker they last ran on, and their
 * shares followed how many shared each worker.  So pick is O(log n) plus
 * the walk over tasks pinned elsewhere.
 *
 * Realtime and idle-class tasks are in one global priority array
 * (src/prio_array.h), before and after the tree; pick takes the most
 * urgent one allowed here.
 *
 * The core's shared-run-queue mode (MQS_POLICY_SHARED_RQ) gives every
 * worker's rq the same lock, so the global state (per runtime, after the
 * tunables) is guarded by it.  Each rq publishes the number of queued
 * tasks its worker may run (the tasks any worker may run plus a per-
 * worker count of tasks with a narrower mask), so that a worker with
 * nothing it could run parks.  The published level is the global best
 * (a hint).  No balance op: there is nothing to balance.
 *
 * Rejected: the O(n) list scan of the original (it was the design, but
 * the tree gives the same choice in O(log n) and the yield benchmark
 * runs 4096 tasks); per-worker queues with stealing (that is mq).
 */
#include <stddef.h>

#include "mqs/policy.h"
#include "kit.h"

#define BFS_SCAN 16
#define BFS_NICE 40

struct bfs_tunables {
    int64_t rr_interval_ns;
    int64_t locality_ns;
    int64_t steal_check_ns;
};

/* The per-runtime state: tunables first (the core writes them there). */
struct bfs_state {
    struct bfs_tunables tun;
    struct mqs__prio_array cls;      /* realtime and idle tasks           */
    struct mqs__rb_root tree;        /* normal tasks by virtual deadline  */
    unsigned nr_any;                 /* queued tasks any worker may run   */
    unsigned nr_pinned[MQS_MAX_WORKERS]; /* with a mask, per worker in it */
    uint64_t offset[BFS_NICE];       /* rr_interval x prio_ratio by nice  */
    uint64_t clock;                  /* latest time seen: deadlines' base */
    int nworkers;
};

static const struct mqs_tunable bfs_tunables[] = {
    {"rr_interval_ns", 100000, 1000000000, 6000000,
     offsetof(struct bfs_tunables, rr_interval_ns),
     "time slice; the deadline is now + rr_interval x ratio(nice)"},
    {"locality_ns", 0, 1000000000, 100000,
     offsetof(struct bfs_tunables, locality_ns),
     "a task that last ran here wins if its deadline is this close"},
    {"steal_check_ns", 0, 1000000000, 50000,
     offsetof(struct bfs_tunables, steal_check_ns),
     "runs this long are checked for OS preemption (steal); 0: off"},
    {NULL, 0, 0, 0, 0, NULL},
};

/* Entity: key = virtual deadline (ns); slice_ns = what is left of the
 * slice; p[0] = 1 once it was passed over for locality (BFS_PASSED). */
#define BFS_PASSED 0

static struct bfs_state *bfs(struct mqs_rq *rq)
{
    return mqs_policy_state(mqs_rq_runtime(rq));
}

static int bfs_init(mqs_runtime_t *rt, void *state)
{
    struct bfs_state *b = state;
    mqs__parr_init(&b->cls);
    mqs__rb_init(&b->tree);
    b->nworkers = mqs_nr_workers(rt);
    uint64_t ratio = 128;
    for (int i = 0; i < BFS_NICE; i++) {
        b->offset[i] = (uint64_t)b->tun.rr_interval_ns * ratio / 128;
        ratio = ratio * 11 / 10;
    }
    return 0;
}

/* Count se in (d = 1) or out (d = -1) of the per-worker totals. */
static void bfs_count(struct bfs_state *b, const struct mqs_sched_entity *se,
                      int d)
{
    if (se->any_worker) {
        b->nr_any += (unsigned)d;
        return;
    }
    for (int w = 0; w < b->nworkers; w++)
        if (mqs_mask_isset(&se->affinity, w))
            b->nr_pinned[w] += (unsigned)d;
}

static void bfs_publish(mqs_runtime_t *rt, struct bfs_state *b)
{
    unsigned best = mqs__parr_best(&b->cls);
    if (b->tree.n && MQS__FAIR_LEVEL < best)
        best = MQS__FAIR_LEVEL;
    for (int w = 0; w < b->nworkers; w++)
        mqs_rq_publish(mqs_rq_of(rt, w), b->nr_any + b->nr_pinned[w], best);
}

/* A new slice and deadline.  Deadlines are set from the latest time any
 * caller has seen: the workers' clocks step when they are re-anchored to
 * CLOCK_MONOTONIC (every millisecond) and differ from the one outside
 * the runtime, and a step back would hand the next few yielders earlier
 * deadlines than the tasks before them, so they would run again at once. */
static void bfs_renew(struct bfs_state *b, struct mqs_sched_entity *se,
                      uint64_t now)
{
    if (mqs__fair_before(b->clock, now))
        b->clock = now;
    se->slice_ns = b->tun.rr_interval_ns;
    se->key = b->clock + b->offset[se->nice + 20];
}

static void bfs_insert(struct bfs_state *b, struct mqs_sched_entity *se)
{
    mqs__fair_insert(&b->tree, se, NULL);
}

static void bfs_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        int flags)
{
    struct bfs_state *b = bfs(rq);
    if (se->cls != MQS_CLASS_NORMAL) {
        mqs__fair_class_add(&b->cls, se, flags, b->tun.rr_interval_ns);
    } else {
        if ((flags & (MQS_ENQ_NEW | MQS_ENQ_YIELD)) || se->slice_ns <= 0 ||
            se->key == 0)
            bfs_renew(b, se, mqs_sched_clock());
        bfs_insert(b, se);
    }
    bfs_count(b, se, 1);
    bfs_publish(mqs_rq_runtime(rq), b);
}

static void bfs_remove(struct bfs_state *b, struct mqs_sched_entity *se)
{
    if (se->cls != MQS_CLASS_NORMAL)
        mqs__parr_del(&b->cls, se, se->prio);
    else
        mqs__rb_erase(&b->tree, &se->rb, NULL);
    bfs_count(b, se, -1);
}

static void bfs_dequeue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        int flags)
{
    (void)flags;
    struct bfs_state *b = bfs(rq);
    bfs_remove(b, se);
    bfs_publish(mqs_rq_runtime(rq), b);
}

/* May this worker run se now: allowed here, and not still on another
 * worker's CPU (the one on this worker's is the task stopping here). */
static bool bfs_can_run(const struct mqs_sched_entity *se, int self,
                        const struct mqs_sched_entity *mine)
{
    return mqs_se_allowed(se, self) && (se == mine || mqs_se_movable(se));
}

/* The most urgent realtime (below = 100) or idle (below = 141) task this
 * worker may run. */
static struct mqs_sched_entity *
bfs_pick_class(struct bfs_state *b, int self,
               const struct mqs_sched_entity *mine, unsigned below)
{
    for (unsigned lvl = mqs__parr_best(&b->cls); lvl < below;
         lvl = mqs__parr_next(&b->cls, lvl + 1)) {
        struct mqs_list *pos;
        mqs__list_for_each(pos, &b->cls.q[lvl])
        {
            struct mqs_sched_entity *se =
                mqs_se_entry(pos, struct mqs_sched_entity, node);
            if (bfs_can_run(se, self, mine))
                return se;
        }
    }
    return NULL;
}

/* Would running se here keep its cache (it last ran here, or never ran)? */
static bool bfs_local(const struct mqs_sched_entity *se, int self)
{
    return se->last_worker == self || se->last_worker < 0;
}

/* The earliest deadline this worker may run, or a task that last ran
 * here within locality_ns and BFS_SCAN steps of it; the earliest is
 * passed over so at most once (then whoever picks next takes it). */
static struct mqs_sched_entity *
bfs_pick_tree(struct bfs_state *b, int self,
              const struct mqs_sched_entity *mine)
{
    struct mqs_sched_entity *first = NULL;
    int scanned = 0;
    for (struct mqs_rb_node *n = mqs__rb_first(&b->tree); n;
         n = mqs__rb_next(n)) {
        struct mqs_sched_entity *se = mqs__fair_se(n);
        if (!bfs_can_run(se, self, mine))
            continue;
        if (!first) {
            first = se;
            if (bfs_local(se, self) || b->tun.locality_ns == 0 ||
                se->p[BFS_PASSED])
                break;
            continue;
        }
        if (++scanned > BFS_SCAN ||
            !mqs__fair_before(se->key,
                              first->key + (uint64_t)b->tun.locality_ns))
            break;
        if (bfs_local(se, self)) {
            first->p[BFS_PASSED] = 1;
            return se;
        }
    }
    if (first)
        first->p[BFS_PASSED] = 0;
    return first;
}

/* The task now running on rq's worker (the one stopping, during pick). */
static const struct mqs_sched_entity *bfs_mine(struct mqs_rq *rq)
{
    return mqs_rq_curr(rq);
}

static struct mqs_sched_entity *bfs_pick(struct mqs_rq *rq)
{
    struct bfs_state *b = bfs(rq);
    int self = mqs_rq_worker(rq);
    const struct mqs_sched_entity *mine = bfs_mine(rq);
    struct mqs_sched_entity *se =
        bfs_pick_class(b, self, mine, MQS_PRIO_NORMAL_MIN);
    if (!se)
        se = bfs_pick_tree(b, self, mine);
    if (!se)
        se = bfs_pick_class(b, self, mine, MQS_PRIO_LEVELS);
    if (se) {
        bfs_remove(b, se);
        bfs_publish(mqs_rq_runtime(rq), b);
    }
    return se;
}

/* Yield fast path: no realtime task queued; se goes back into the tree
 * at its deadline, and what pick would take (usually se) comes out.  The counts change
 * (and are published) only when the two differ in affinity. */
static struct mqs_sched_entity *bfs_yield(struct mqs_rq *rq,
                                          struct mqs_sched_entity *se)
{
    struct bfs_state *b = bfs(rq);
    if (se->cls != MQS_CLASS_NORMAL ||
        mqs__parr_best(&b->cls) < MQS_PRIO_NORMAL_MIN)
        return NULL;
    bfs_renew(b, se, mqs_rq_clock(rq));
    bfs_insert(b, se);
    struct mqs_sched_entity *next = bfs_pick_tree(b, mqs_rq_worker(rq), se);
    mqs__rb_erase(&b->tree, &next->rb, NULL);
    if (next != se && !(se->any_worker && next->any_worker)) {
        bfs_count(b, se, 1);
        bfs_count(b, next, -1);
        bfs_publish(mqs_rq_runtime(rq), b);
    }
    return next;
}

/* Charge the run (less steal time) to the slice: a spent slice starts a
 * new one with a new deadline; a part of a slice moves the deadline on by
 * the same part of the task's offset (see the top of the file). */
static void bfs_put_prev(struct mqs_rq *rq, struct mqs_sched_entity *se,
                         uint64_t ran)
{
    struct bfs_state *b = bfs(rq);
    uint64_t now = mqs_rq_clock(rq);
    if (se->cls == MQS_CLASS_FIFO)
        return;
    uint64_t cpu = mqs__fair_charge_run(se, ran, b->tun.steal_check_ns);
    se->slice_ns -= (int64_t)cpu;
    if (se->cls != MQS_CLASS_NORMAL)
        return;
    if (se->slice_ns <= 0)
        bfs_renew(b, se, now);
}

/* The woken task preempts when its deadline is earlier (BFS preempted the
 * CPU running the latest deadline; here only the waker's own worker is
 * asked). */
static bool bfs_wake_preempt(struct mqs_rq *rq, struct mqs_sched_entity *curr,
                             struct mqs_sched_entity *woken)
{
    (void)rq;
    if (curr->cls != MQS_CLASS_NORMAL || woken->cls != MQS_CLASS_NORMAL)
        return woken->prio < curr->prio;
    return mqs__fair_before(woken->key, curr->key);
}

const struct mqs_policy mqs_policy_bfs = {
    .name = "bfs",
    .description = "BFS: one global queue by virtual deadline, "
                   "cache-locality preference, no balancing",
    .flags = MQS_POLICY_SHARED_RQ,
    .rt_size = sizeof(struct bfs_state),
    .tunables = bfs_tunables,
    .init = bfs_init,
    .enqueue = bfs_enqueue,
    .dequeue = bfs_dequeue,
    .pick = bfs_pick,
    .put_prev = bfs_put_prev,
    .yield = bfs_yield,
    .tick = mqs__fair_tick,
    .wake_preempt = bfs_wake_preempt,
};

#undef BFS_SCAN
#undef BFS_NICE
#undef BFS_PASSED
