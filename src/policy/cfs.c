/*
 * cfs.c - the Completely Fair Scheduler (Molnar, Linux 2.6.23, 2007) as
 * it stood before EEVDF replaced it: every normal task accrues virtual
 * runtime, its run time scaled by nice-0 weight / its weight (Linux's
 * sched_prio_to_weight table, mqs_nice_weight), and each worker runs the
 * task with the least virtual runtime, kept leftmost in a red-black tree
 * (src/rbtree.h).  Equal virtual time for all means CPU in proportion to
 * weight.
 *
 * Slices: a latency target (latency_ns) is divided among the runnable
 * tasks of a queue by weight, but no slice is shorter than min_gran_ns:
 * past latency/min_gran tasks the period grows instead (Linux's
 * sched_nr_latency).  A checkpoint reschedules once the slice is spent.
 * Both grow with 1 + log2(workers) (Linux's default tunable scaling), as
 * does wakeup_gran_ns; docs/design.md's "20 ms x (1 + log2 ncpu)" is the
 * default latency_ns of 20 ms with that scaling.
 *
 * min_vruntime follows the smallest virtual runtime of the queue (the
 * running task and the leftmost), never backwards.  Placement: a new
 * task starts at min_vruntime (behind the tasks already there, which
 * leave in order of arrival among equals); a waking task keeps its
 * virtual runtime but no less than
 * min_vruntime - latency/2 (GENTLE_FAIR_SLEEPERS: a sleeper gets at most
 * half a latency period of credit, so sleeping long buys nothing more).
 * A task moved between queues keeps its distance to min_vruntime (its
 * home queue's published min_vruntime is read when it is placed).
 *
 * Wake-up preemption: the woken task runs at once only when the running
 * task's virtual runtime is ahead of it by more than wakeup_gran_ns in
 * the woken task's virtual time (Linux's wakeup_preempt_entity), so that
 * a stream of wake-ups does not shred the running task's slice.
 *
 * Balancing (src/fair.h): by per-entity load (src/load_avg.h, Turner's
 * PELT, half-life 32 ms), with migration-cost hysteresis: the periodic
 * balancer leaves tasks that ran within migration_cost_ns.
 *
 * Yield: the task goes back into the tree at its virtual runtime and the
 * leftmost runs; with one task it keeps running.  (Linux instead marks
 * the yielder as skip buddy for one pick; with virtual time charged at
 * every switch, re-insertion is already fair, and it needs no state.)
 * A yielder goes to the back: onto the run beside the tree (src/fair.h)
 * when its key is within order_slack_ns of the run's greatest, else into
 * the tree from the rightmost up (mqs__rb_insert_last).  The run makes a
 * yield O(1) and keeps it off the nodes of tasks that have not run for a
 * while: at 2048 tasks on one worker a yield cost 120 ns with the tree
 * alone and 42-45 ns with the run (the tree is still where wake-ups and
 * new tasks go, and where yielders land after a long run).  The price is
 * that yielders may leave up to order_slack_ns (0.5 ms) of virtual time
 * out of order; virtual times themselves stay exact.  The yield op does
 * the re-queue and the pick without touching counts or the published
 * summary; test_policy_fair_yield checks it step by step against enqueue
 * + pick.
 *
 * Realtime and idle-class tasks: src/fair.h, before and after the tree.
 *
 * Rejected: Linux's START_DEBIT (a new task starts one virtual slice
 * late, so that forking does not buy CPU): with a batch of tasks spawned
 * at once, the first ran alone for up to a latency period before the
 * others caught up, which the conformance suite's short share runs saw as
 * starvation.  Linux's second tick check (preempt when the running task is
 * ahead of the leftmost by a slice): tick runs without the queue lock
 * and may not read the tree; the slice alone bounds the run.  Group
 * scheduling (no cgroups here).
 */
#include <stddef.h>

#include "mqs/policy.h"
#include "kit.h"

#define CFS_VBASE (UINT64_C(1) << 40) /* start of virtual time: headroom */
#define CFS_SLICE_SHIFT 16

struct cfs_tunables {
    int64_t latency_ns;
    int64_t min_gran_ns;
    int64_t wakeup_gran_ns;
    int64_t migration_cost_ns;
    int64_t balance_ns;
    int64_t rr_slice_ns;
    int64_t scaling;
    int64_t steal_check_ns;
    int64_t order_slack_ns;
};

static const struct mqs_tunable cfs_tunables[] = {
    {"latency_ns", 100000, 10000000000, 20000000,
     offsetof(struct cfs_tunables, latency_ns),
     "target period in which every runnable task runs once (x scaling)"},
    {"min_gran_ns", 10000, 1000000000, 2500000,
     offsetof(struct cfs_tunables, min_gran_ns),
     "shortest slice; past latency/min_gran tasks the period grows"},
    {"wakeup_gran_ns", 0, 1000000000, 1000000,
     offsetof(struct cfs_tunables, wakeup_gran_ns),
     "lead in virtual time a woken task needs to preempt"},
    {"migration_cost_ns", 0, 1000000000, 500000,
     offsetof(struct cfs_tunables, migration_cost_ns),
     "a task that ran this recently is cache-hot: not moved periodically"},
    {"balance_ns", 100000, 1000000000, 4000000,
     offsetof(struct cfs_tunables, balance_ns), "periodic balancing interval"},
    {"rr_slice_ns", 100000, 1000000000, 100000000,
     offsetof(struct cfs_tunables, rr_slice_ns),
     "SCHED_RR and idle-class time slice"},
    {"scaling", 0, 1, 1, offsetof(struct cfs_tunables, scaling),
     "1: latency and granularities x (1 + log2 workers); 0: as given"},
    {"steal_check_ns", 0, 1000000000, 50000,
     offsetof(struct cfs_tunables, steal_check_ns),
     "runs this long are checked for OS preemption (steal); 0: off"},
    {"order_slack_ns", 0, 10000000, 500000,
     offsetof(struct cfs_tunables, order_slack_ns),
     "virtual time by which yielders may leave out of order (0: exact)"},
    {NULL, 0, 0, 0, 0, NULL},
};

struct cfs_rq {
    struct mqs__fair_rq f;        /* first: the frame src/fair.h reads */
    uint64_t min_vruntime;        /* rq lock                           */
    _Atomic uint64_t pub_min_v;   /* min_vruntime, for placement elsewhere */
    int64_t latency, min_gran, wakeup_gran; /* scaled tunables         */
    int64_t nr_latency;
    int64_t slice_nr;             /* cfs_slice's cache: length, weight, */
    uint64_t slice_w;             /* and period / weight (fixed point)  */
    uint64_t slice_per_w;
    const struct cfs_tunables *tun;
};

/* Entity: key = virtual runtime (in its home queue's time), p[0] = home
 * worker + 1 (0 = never queued under cfs). */

static struct cfs_rq *cfs(struct mqs_rq *rq)
{
    return mqs_rq_state(rq);
}

static void cfs_init_rq(struct mqs_rq *rq)
{
    struct cfs_rq *c = cfs(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    c->tun = mqs_policy_state(rt);
    bool scale = c->tun->scaling != 0;
    mqs__fair_init(&c->f);
    c->f.run_slack = (uint64_t)c->tun->order_slack_ns;
    c->min_vruntime = CFS_VBASE;
    atomic_init(&c->pub_min_v, CFS_VBASE);
    c->latency = mqs__fair_scale(rt, c->tun->latency_ns, scale);
    c->min_gran = mqs__fair_scale(rt, c->tun->min_gran_ns, scale);
    c->wakeup_gran = mqs__fair_scale(rt, c->tun->wakeup_gran_ns, scale);
    c->nr_latency = c->latency / c->min_gran;
    if (c->nr_latency < 1)
        c->nr_latency = 1;
}

/* Both stores are made whether or not the minimum moved: in a yield
 * loop it moves at about one pick in ten, in no pattern, and the test
 * that skipped them was a mispredicted branch that cost 1.5 ns of a
 * 35 ns yield (16 tasks, one worker).  Remote readers of pub_min_v are
 * placements of tasks whose home this is; where those are frequent
 * (chat over channels, one room on two workers) the stores at every
 * pick cost 1-2%. */
static void cfs_update_min(struct cfs_rq *c, const struct mqs_sched_entity *curr)
{
    uint64_t v = mqs__fair_min_vruntime(&c->f, curr, c->min_vruntime);
    c->min_vruntime = v;
    atomic_store_explicit(&c->pub_min_v, v, memory_order_relaxed);
}

/* A stopped task that did not come back leaves (mqs__fair_settle), and
 * min_vruntime follows it first: put_prev leaves that to here and to the
 * pick, which a yield runs at once (the minimum after the pick is the
 * same either way; an emptied queue's is where the task stopped). */
static void cfs_settle(struct cfs_rq *c, uint64_t now)
{
    if (c->f.stopped)
        cfs_update_min(c, c->f.stopped);
    mqs__fair_settle(&c->f, now);
}

/* The slice of se, running with the tree's tasks: its weight's share of
 * the period (latency, or nr x min_gran past nr_latency tasks).  The
 * period / total weight factor is cached for the queue's length and
 * weight, which a yield does not change: then a slice is a multiply. */
static int64_t cfs_slice(struct cfs_rq *c, const struct mqs_sched_entity *se)
{
    int64_t nr = (int64_t)mqs__fair_nr(&c->f) + 1;
    uint64_t w = c->f.weight > se->weight ? c->f.weight : se->weight;
    if (nr != c->slice_nr || w != c->slice_w) {
        int64_t period = nr > c->nr_latency ? nr * c->min_gran : c->latency;
        if (period > (INT64_C(1) << 46)) /* 19 hours: keeps the product */
            period = INT64_C(1) << 46;
        c->slice_nr = nr;
        c->slice_w = w;
        c->slice_per_w = ((uint64_t)period << CFS_SLICE_SHIFT) / w;
    }
    return (int64_t)((se->weight * c->slice_per_w) >> CFS_SLICE_SHIFT);
}

/* Rebase a virtual runtime kept in another queue's time onto this one. */
static void cfs_rebase(struct mqs_rq *rq, struct mqs_sched_entity *se)
{
    struct cfs_rq *c = cfs(rq);
    int home = (int)se->p[0] - 1, self = mqs_rq_worker(rq);
    if (home >= 0 && home != self) {
        struct cfs_rq *o = cfs(mqs_rq_of(mqs_rq_runtime(rq), home));
        se->key = se->key -
                  atomic_load_explicit(&o->pub_min_v, memory_order_relaxed) +
                  c->min_vruntime;
    }
    se->p[0] = (uint64_t)self + 1;
}

static void cfs_place(struct mqs_rq *rq, struct mqs_sched_entity *se,
                      int flags)
{
    struct cfs_rq *c = cfs(rq);
    if (se->p[0] == 0 || (flags & MQS_ENQ_NEW)) {
        se->p[0] = (uint64_t)mqs_rq_worker(rq) + 1;
        se->key = c->min_vruntime;
        return;
    }
    cfs_rebase(rq, se);
    /* sleeper credit: at most half a latency period */
    uint64_t floor = c->min_vruntime - (uint64_t)(c->latency / 2);
    if (mqs__fair_before(se->key, floor))
        se->key = floor;
}

static void cfs_insert(struct cfs_rq *c, struct mqs_sched_entity *se)
{
    mqs__fair_stamp(&c->f, se);
    mqs__fair_insert(&c->f.tree, se, NULL);
}

static void cfs_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        int flags)
{
    struct cfs_rq *c = cfs(rq);
    uint64_t now = mqs_sched_clock();
    if (mqs__fair_requeue(&c->f, se)) { /* a yield */
        mqs__fair_add_last(&c->f, se, NULL, true);
        mqs__fair_publish(rq);
        return;
    }
    cfs_settle(c, now);
    if (se->cls != MQS_CLASS_NORMAL) {
        mqs__fair_class_add(&c->f.cls, se, flags, c->tun->rr_slice_ns);
    } else {
        /* Placement reads min_vruntime: bring it up to the queue's first
         * (put_prev no longer does, and a yielder re-queued before the
         * pick is only in the queue). */
        cfs_update_min(c, c->f.curr);
        cfs_place(rq, se, flags);
        mqs__fair_load_join(&c->f, se, now,
                            !(flags & (MQS_ENQ_WAKEUP | MQS_ENQ_NEW)));
        cfs_insert(c, se);
    }
    mqs__fair_publish(rq);
}

/* Remove a queued normal task (dequeue, or taken by a balancer). */
static void cfs_unlink(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       uint64_t now)
{
    struct cfs_rq *c = cfs(rq);
    mqs__fair_del(&c->f, se, NULL);
    mqs__fair_load_leave(&c->f, se, now);
}

static void cfs_dequeue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        int flags)
{
    (void)flags;
    struct cfs_rq *c = cfs(rq);
    uint64_t now = mqs_sched_clock();
    cfs_settle(c, now);
    if (se->cls != MQS_CLASS_NORMAL)
        mqs__parr_del(&c->f.cls, se, se->prio);
    else
        cfs_unlink(rq, se, now);
    mqs__fair_publish(rq);
}

/* se, out of the tree, runs (it stays in the load, as curr). */
static struct mqs_sched_entity *cfs_run(struct cfs_rq *c,
                                        struct mqs_sched_entity *se)
{
    c->f.curr = se;
    se->slice_ns = cfs_slice(c, se);
    return se;
}

/* Run the leftmost: it leaves the tree. */
static struct mqs_sched_entity *cfs_take_first(struct cfs_rq *c)
{
    struct mqs_sched_entity *se = mqs__fair_first(&c->f);
    mqs__fair_del(&c->f, se, NULL);
    cfs_update_min(c, se);
    return cfs_run(c, se);
}

static struct mqs_sched_entity *cfs_pick(struct mqs_rq *rq)
{
    struct cfs_rq *c = cfs(rq);
    uint64_t now = mqs_rq_clock(rq);
    cfs_settle(c, now);
    struct mqs_sched_entity *se = mqs__fair_pick_rt(rq);
    if (se)
        return se;
    if (mqs__fair_nr(&c->f)) {
        se = cfs_take_first(c);
        mqs__fair_publish(rq);
        return se;
    }
    return mqs__fair_pick_idle(rq);
}

/* Yield fast path: no realtime task waits anywhere; se goes back at the
 * back (the run, src/fair.h, or the tree) and the first leaves, as
 * enqueue + pick would do, without the settle and publish around them:
 * the count and the published summary are what they were. */
static struct mqs_sched_entity *cfs_yield(struct mqs_rq *rq,
                                          struct mqs_sched_entity *se)
{
    struct cfs_rq *c = cfs(rq);
    if (se->cls != MQS_CLASS_NORMAL || mqs__fair_rt_waiting(rq) ||
        !mqs__fair_requeue(&c->f, se))
        return NULL;
    mqs__fair_add_last(&c->f, se, NULL, true);
    return cfs_take_first(c);
}

static void cfs_put_prev(struct mqs_rq *rq, struct mqs_sched_entity *se,
                         uint64_t ran)
{
    if (se->cls != MQS_CLASS_NORMAL) {
        mqs__fair_class_put_prev(se, ran);
        return;
    }
    struct cfs_rq *c = cfs(rq);
    uint64_t now = mqs_rq_clock(rq);
    uint64_t cpu = mqs__fair_charge_run(se, ran, c->tun->steal_check_ns);
    se->key += mqs__fair_vtime(cpu, se->weight);
    se->slice_ns -= (int64_t)cpu;
    cfs_settle(c, now);
    mqs__fair_stop(&c->f, se, now);
}

/* The hand-off (MQS_POLICY_WAKE_NEXT): the woken se runs now, as the
 * pick after its enqueue(MQS_ENQ_WAKEUP) would have run it with nothing
 * else queued: placed (sleeper credit), in the load, the running entity
 * with its slice, and never in the tree.  With anything queued here
 * (a remote wake-up since) the tree decides: enqueue and pick. */
static bool cfs_run_woken(struct mqs_rq *rq, struct mqs_sched_entity *se)
{
    struct cfs_rq *c = cfs(rq);
    if (se->cls != MQS_CLASS_NORMAL || mqs__fair_nr(&c->f) || c->f.cls.nr)
        return false;
    uint64_t now = mqs_rq_clock(rq);
    cfs_settle(c, now);
    cfs_update_min(c, c->f.curr);
    cfs_place(rq, se, MQS_ENQ_WAKEUP);
    mqs__fair_load_join(&c->f, se, now, false);
    cfs_update_min(c, se);
    cfs_run(c, se);
    return true;
}

/* The woken task preempts only past the wake-up granularity. */
static bool cfs_wake_preempt(struct mqs_rq *rq, struct mqs_sched_entity *curr,
                             struct mqs_sched_entity *woken)
{
    if (curr->cls != MQS_CLASS_NORMAL || woken->cls != MQS_CLASS_NORMAL)
        return woken->prio < curr->prio;
    int64_t ran = (int64_t)(mqs_rq_clock(rq) - curr->exec_start_ns);
    uint64_t cv = curr->key + mqs__fair_vtime(ran > 0 ? (uint64_t)ran : 0,
                                              curr->weight);
    uint64_t gran = mqs__fair_vtime((uint64_t)cfs(rq)->wakeup_gran,
                                    woken->weight);
    return (int64_t)(cv - woken->key) > (int64_t)gran;
}

static int cfs_balance(struct mqs_rq *rq, int why)
{
    const struct cfs_tunables *t = cfs(rq)->tun;
    return mqs__fair_balance(rq, why, t->balance_ns, t->migration_cost_ns,
                             cfs_unlink);
}

const struct mqs_policy mqs_policy_cfs = {
    .name = "cfs",
    .description = "CFS: virtual runtime by weight in a per-worker rbtree, "
                   "latency target, sleeper credit, PELT load balancing",
    .flags = MQS_POLICY_WAKE_NEXT,
    .rq_size = sizeof(struct cfs_rq),
    .rt_size = sizeof(struct cfs_tunables),
    .tunables = cfs_tunables,
    .init_rq = cfs_init_rq,
    .enqueue = cfs_enqueue,
    .dequeue = cfs_dequeue,
    .pick = cfs_pick,
    .put_prev = cfs_put_prev,
    .yield = cfs_yield,
    .tick = mqs__fair_tick,
    .wake_preempt = cfs_wake_preempt,
    .balance = cfs_balance,
    .run_woken = cfs_run_woken,
};

#undef CFS_VBASE
#undef CFS_SLICE_SHIFT
