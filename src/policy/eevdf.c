/*
 * eevdf.c - Earliest Eligible Virtual Deadline First (Stoica and
 * Abdel-Wahab, 1995), the fair class of Linux since 6.6 (Zijlstra, 2023),
 * which replaced CFS's heuristics (wake-up granularity, sleeper credit,
 * latency target) with two numbers per task.
 *
 * Every normal task has a virtual runtime v (run time x 1024 / weight,
 * as in CFS) and asks for a slice of base_slice_ns of real time at a
 * time, which ends at its virtual deadline d = v + base_slice x 1024 /
 * weight.  The queue's weighted average virtual runtime
 *
 *     V = sum(w_i v_i) / sum(w_i)   (over the queued and running tasks)
 *
 * is where an ideal fluid scheduler would have every task; lag_i = V -
 * v_i is what task i is owed.  A task is eligible when lag >= 0 (v <= V),
 * and the scheduler runs the eligible task with the earliest virtual
 * deadline.  So heavier tasks (nearer deadlines) run sooner, nobody runs
 * ahead of its share, and latency follows the slice, not heuristics.
 *
 * Data (Linux 6.6's layout): the tree is ordered by v and augmented with
 * each subtree's minimum deadline (src/rbtree.h's augment callback).
 * Eligible tasks are a prefix of the v order, so one descent finds the
 * answer in O(log n): at an eligible node, it and its whole left subtree
 * are candidates (the subtree's minimum deadline says whether to look
 * there), then go right; at an ineligible node go left.  Among equal
 * deadlines the first in v order wins, so that the common case needs no
 * descent: when the leftmost is eligible and holds the root's minimum
 * deadline (a round of equal weights), it is the answer.  V is kept as
 * sum((v_i - v0) w_i) and sum(w_i) against a base v0 (min_vruntime), so
 * eligibility is one multiply and compare, no division.
 *
 * Lag is preserved across sleep and migration: when a task leaves the
 * queue (blocks, or a balancer moves it) its lag is saved, clamped to
 * +-max(2 slices, 1 ms) of its virtual time (Linux's update_entity_lag);
 * when it is queued again it is placed at v = V - lag x (W + w) / W, the
 * correction that keeps V where it was once the task is counted (Linux's
 * place_entity).  No other decay: a task that slept keeps what it was
 * owed or owes, within the clamp.  A new task starts at V with half a
 * slice to its first deadline (PLACE_DEADLINE_INITIAL).
 *
 * Yield (Linux's yield_task_fair under EEVDF): the deadline moves one
 * virtual slice later, so an eligible peer with an earlier deadline runs;
 * when the slice ran out in this very run (the deadline was just renewed)
 * it does not move twice.  The yielder then goes to the back: onto the
 * run beside the tree (src/fair.h) when its v and its deadline are both
 * within order_slack_ns of the run's greatest, else into the tree.  The
 * run is then in v and deadline order to within the slack, so its head
 * is its pick, and pick takes the eligible one of the tree's pick and
 * the run's head with the earlier deadline.  A yield loop of equal
 * weights stays in the run, off the tree's cold nodes (one worker, 2048
 * tasks: 139 -> 59 ns per yield).  With no slack the pick is exact: the
 * run is sorted both ways, so an ineligible head means nothing in the
 * run is eligible.
 * Wake-up preemption: the woken task runs at once when it is eligible
 * and its deadline is earlier than the running task's (what pick would
 * choose).
 *
 * Balancing, steal-time accounting, realtime and idle classes: src/fair.h,
 * shared with cfs.
 *
 * Rejected: ordering the tree by deadline and augmenting with the
 * minimum v (Linux 6.8+): the same O(log n), but the eligible prefix is
 * then no longer a prefix of the order; a linear scan of the eligible
 * tasks (O(n) per pick at 4096 tasks); computing V with a division at
 * every put_prev (the lag is computed only when a task really leaves).
 */
#include <stddef.h>

#include "div128.h"
#include "mqs/policy.h"
#include "kit.h"

#define EEVDF_VBASE (UINT64_C(1) << 40) /* start of virtual time */

struct eevdf_tunables {
    int64_t base_slice_ns;
    int64_t migration_cost_ns;
    int64_t balance_ns;
    int64_t rr_slice_ns;
    int64_t scaling;
    int64_t steal_check_ns;
    int64_t order_slack_ns;
};

static const struct mqs_tunable eevdf_tunables[] = {
    {"base_slice_ns", 50000, 1000000000, 750000,
     offsetof(struct eevdf_tunables, base_slice_ns),
     "real time a task asks for per request (x scaling)"},
    {"migration_cost_ns", 0, 1000000000, 500000,
     offsetof(struct eevdf_tunables, migration_cost_ns),
     "a task that ran this recently is cache-hot: not moved periodically"},
    {"balance_ns", 100000, 1000000000, 4000000,
     offsetof(struct eevdf_tunables, balance_ns),
     "periodic balancing interval"},
    {"rr_slice_ns", 100000, 1000000000, 100000000,
     offsetof(struct eevdf_tunables, rr_slice_ns),
     "SCHED_RR and idle-class time slice"},
    {"scaling", 0, 1, 1, offsetof(struct eevdf_tunables, scaling),
     "1: base slice x (1 + log2 workers); 0: as given"},
    {"steal_check_ns", 0, 1000000000, 50000,
     offsetof(struct eevdf_tunables, steal_check_ns),
     "runs this long are checked for OS preemption (steal); 0: off"},
    {"order_slack_ns", 0, 10000000, 500000,
     offsetof(struct eevdf_tunables, order_slack_ns),
     "virtual time by which yielders may leave out of order (0: exact)"},
    {NULL, 0, 0, 0, 0, NULL},
};

/* All under rq lock. */
struct eevdf_rq {
    struct mqs__fair_rq f;   /* first: the frame src/fair.h reads      */
    uint64_t zero_v;         /* v0: base of avg_sum, = min_vruntime    */
    int64_t avg_sum;         /* sum (v_i - v0) w_i, queued and running */
    int64_t avg_load;        /* sum w_i                                */
    int64_t slice;           /* scaled base slice                      */
    uint64_t run_max_dl;     /* greatest deadline appended to the run  */
    const struct eevdf_tunables *tun;
};

/* Entity: key = v; p[0] = virtual deadline (0 = never queued here);
 * p[1] = saved lag (int64); rb.aux = minimum deadline of its subtree. */
#define EEVDF_DL 0
#define EEVDF_LAG 1

static struct eevdf_rq *eevdf(struct mqs_rq *rq)
{
    return mqs_rq_state(rq);
}

/* The node's aux: the minimum deadline of its subtree. */
static bool eevdf_aug(struct mqs_rb_node *n)
{
    uint64_t m = mqs__fair_se(n)->p[EEVDF_DL];
    if (n->left && mqs__fair_before(n->left->aux, m))
        m = n->left->aux;
    if (n->right && mqs__fair_before(n->right->aux, m))
        m = n->right->aux;
    bool changed = n->aux != m;
    n->aux = m;
    return changed;
}

static void eevdf_init_rq(struct mqs_rq *rq)
{
    struct eevdf_rq *r = eevdf(rq);
    r->tun = mqs_policy_state(mqs_rq_runtime(rq));
    mqs__fair_init(&r->f);
    r->f.run_slack = (uint64_t)r->tun->order_slack_ns;
    r->zero_v = EEVDF_VBASE;
    r->slice = mqs__fair_scale(mqs_rq_runtime(rq), r->tun->base_slice_ns,
                               r->tun->scaling != 0);
}

static uint64_t eevdf_vslice(const struct eevdf_rq *r,
                             const struct mqs_sched_entity *se)
{
    return mqs__fair_vtime((uint64_t)r->slice, se->weight);
}

/* ----- the weighted average V ----- */

static void eevdf_avg_add(struct eevdf_rq *r, const struct mqs_sched_entity *se,
                          int64_t w)
{
    r->avg_sum += (int64_t)(se->key - r->zero_v) * w;
    r->avg_load += w;
}

static void eevdf_avg_sub(struct eevdf_rq *r, const struct mqs_sched_entity *se,
                          int64_t w)
{
    r->avg_sum -= (int64_t)(se->key - r->zero_v) * w;
    r->avg_load -= w;
}

/* V, rounded down (Linux's avg_vruntime). */
static uint64_t eevdf_V(const struct eevdf_rq *r)
{
    int64_t a = r->avg_sum;
    if (r->avg_load <= 0)
        return r->zero_v;
    if (a < 0)
        a -= r->avg_load - 1;
    return r->zero_v + (uint64_t)(a / r->avg_load);
}

/* v <= V, without dividing: (v - v0) W <= sum. */
static bool eevdf_eligible(const struct eevdf_rq *r,
                           const struct mqs_sched_entity *se)
{
    return (__int128)(int64_t)(se->key - r->zero_v) * r->avg_load <=
           (__int128)r->avg_sum;
}

/* Move the base v0 up to min_vruntime (sums follow). */
static void eevdf_update_min(struct eevdf_rq *r,
                             const struct mqs_sched_entity *curr)
{
    uint64_t v = mqs__fair_min_vruntime(&r->f, curr, r->zero_v);
    r->avg_sum -= (int64_t)(v - r->zero_v) * r->avg_load;
    r->zero_v = v;
}

/* ----- leaving and joining ----- */

static void eevdf_save_lag(struct eevdf_rq *r, struct mqs_sched_entity *se)
{
    int64_t lag = (int64_t)(eevdf_V(r) - se->key);
    uint64_t span = 2 * (uint64_t)r->slice > 1000000 ? 2 * (uint64_t)r->slice
                                                     : 1000000;
    int64_t limit = (int64_t)mqs__fair_vtime(span, se->weight);
    lag = lag > limit ? limit : lag < -limit ? -limit : lag;
    se->p[EEVDF_LAG] = (uint64_t)lag;
}

/* A stopped task that did not come back leaves with its lag. */
static void eevdf_settle(struct eevdf_rq *r, uint64_t now)
{
    struct mqs_sched_entity *se = r->f.stopped;
    if (!se)
        return;
    eevdf_update_min(r, se);
    eevdf_save_lag(r, se);
    eevdf_avg_sub(r, se, (int64_t)mqs__fair_slot(se, MQS__FAIR_P_W));
    mqs__fair_settle(&r->f, now);
}

static void eevdf_place(struct eevdf_rq *r, struct mqs_sched_entity *se,
                        int flags)
{
    bool fresh = (flags & MQS_ENQ_NEW) || se->p[EEVDF_DL] == 0;
    int64_t lag = fresh ? 0 : (int64_t)se->p[EEVDF_LAG];
    int64_t w = (int64_t)se->weight;
    if (lag && r->avg_load)
        lag = mqs__sdiv128((__int128)lag * (r->avg_load + w),
                           (uint64_t)r->avg_load);
    se->key = eevdf_V(r) - (uint64_t)lag;
    uint64_t vslice = eevdf_vslice(r, se);
    se->p[EEVDF_DL] = se->key + (fresh ? vslice / 2 : vslice);
}

static void eevdf_insert(struct eevdf_rq *r, struct mqs_sched_entity *se)
{
    mqs__fair_stamp(&r->f, se);
    mqs__fair_insert(&r->f.tree, se, eevdf_aug);
}

/* May se's deadline go at the run's back: within the slack of the
 * greatest deadline there, as its v must be of the greatest v (fair.h)?
 * Then the run is in deadline order too, to within the slack, and its
 * head is its pick. */
static bool eevdf_dl_fits(const struct eevdf_rq *r,
                          const struct mqs_sched_entity *se)
{
    return mqs__fair_run_fits_after(&r->f, r->run_max_dl, se->p[EEVDF_DL]);
}

/* A yielder goes back: onto the run when both its v and its deadline
 * fit there, else into the tree from its rightmost up. */
static void eevdf_insert_last(struct eevdf_rq *r, struct mqs_sched_entity *se)
{
    bool first = r->f.run_n == 0;
    mqs__fair_add_last(&r->f, se, eevdf_aug, eevdf_dl_fits(r, se));
    if (se->p[MQS__FAIR_P_RUN] &&
        (first || mqs__fair_before(r->run_max_dl, se->p[EEVDF_DL])))
        r->run_max_dl = se->p[EEVDF_DL];
}

/* A yielding task starts a new request from where it is, unless its
 * deadline is already further. */
static void eevdf_new_request(struct eevdf_rq *r, struct mqs_sched_entity *se)
{
    uint64_t dl = se->key + eevdf_vslice(r, se);
    if (mqs__fair_before(se->p[EEVDF_DL], dl))
        se->p[EEVDF_DL] = dl;
}

static void eevdf_requeue(struct eevdf_rq *r, struct mqs_sched_entity *se)
{
    eevdf_new_request(r, se);
    eevdf_insert_last(r, se);
}

static void eevdf_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                          int flags)
{
    struct eevdf_rq *r = eevdf(rq);
    uint64_t now = mqs_sched_clock();
    if (mqs__fair_requeue(&r->f, se)) {
        eevdf_requeue(r, se);
        mqs__fair_publish(rq);
        return;
    }
    eevdf_settle(r, now);
    if (se->cls != MQS_CLASS_NORMAL) {
        mqs__fair_class_add(&r->f.cls, se, flags, r->tun->rr_slice_ns);
    } else {
        eevdf_place(r, se, flags);
        mqs__fair_load_join(&r->f, se, now,
                            !(flags & (MQS_ENQ_WAKEUP | MQS_ENQ_NEW)));
        eevdf_avg_add(r, se, (int64_t)se->weight);
        eevdf_insert(r, se);
    }
    mqs__fair_publish(rq);
}

/* Remove a queued normal task (dequeue, or taken by a balancer). */
static void eevdf_unlink(struct mqs_rq *rq, struct mqs_sched_entity *se,
                         uint64_t now)
{
    struct eevdf_rq *r = eevdf(rq);
    mqs__fair_del(&r->f, se, eevdf_aug);
    eevdf_save_lag(r, se);
    eevdf_avg_sub(r, se, (int64_t)mqs__fair_slot(se, MQS__FAIR_P_W));
    mqs__fair_load_leave(&r->f, se, now);
}

static void eevdf_dequeue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                          int flags)
{
    (void)flags;
    struct eevdf_rq *r = eevdf(rq);
    uint64_t now = mqs_sched_clock();
    eevdf_settle(r, now);
    if (se->cls != MQS_CLASS_NORMAL)
        mqs__parr_del(&r->f.cls, se, se->prio);
    else
        eevdf_unlink(rq, se, now);
    mqs__fair_publish(rq);
}

/* ----- pick ----- */

/* The first node in order of subtree n among those whose deadline is
 * n's subtree minimum. */
static struct mqs_sched_entity *eevdf_find_dl(struct mqs_rb_node *n)
{
    uint64_t dl = n->aux;
    for (;;) {
        if (n->left && n->left->aux == dl) {
            n = n->left;
            continue;
        }
        struct mqs_sched_entity *se = mqs__fair_se(n);
        if (se->p[EEVDF_DL] == dl)
            return se;
        n = n->right;
    }
}

/* eevdf_best's descent.  At an eligible node, its left subtree and then
 * the node itself are candidates, in that order and after every
 * candidate met above (where the descent went right); a candidate
 * replaces the best so far only with a strictly earlier deadline, so
 * the first in order wins a tie. */
static struct mqs_sched_entity *eevdf_descend(const struct eevdf_rq *r,
                                              struct mqs_sched_entity *first)
{
    struct mqs_rb_node *n = r->f.tree.root, *sub = NULL;
    struct mqs_sched_entity *best = NULL;
    bool found = false;
    uint64_t dl = 0;
    while (n) {
        struct mqs_sched_entity *se = mqs__fair_se(n);
        if (!eevdf_eligible(r, se)) {
            n = n->left;
            continue;
        }
        if (n->left && (!found || mqs__fair_before(n->left->aux, dl))) {
            sub = n->left;
            best = NULL;
            dl = sub->aux;
            found = true;
        }
        if (!found || mqs__fair_before(se->p[EEVDF_DL], dl)) {
            best = se;
            sub = NULL;
            dl = se->p[EEVDF_DL];
            found = true;
        }
        n = n->right;
    }
    if (sub)
        return eevdf_find_dl(sub);
    return best ? best : first;
}

/* Is the tree's first task its pick: eligible, and its deadline the
 * minimum of all (the root's aux)?  The common case (a round of equal
 * weights): then no descent is needed. */
static bool eevdf_first_wins(const struct eevdf_rq *r,
                             const struct mqs_sched_entity *first)
{
    return first->p[EEVDF_DL] == r->f.tree.root->aux &&
           eevdf_eligible(r, first);
}

/* The tree's pick: its eligible task with the earliest deadline, the
 * first in v order among equal deadlines (the leftmost if rounding left
 * none eligible).  The tree is not empty. */
static struct mqs_sched_entity *eevdf_tree_best(const struct eevdf_rq *r)
{
    struct mqs_sched_entity *first = mqs__fair_se(mqs__rb_first(&r->f.tree));
    return eevdf_first_wins(r, first) ? first : eevdf_descend(r, first);
}

/* Does a leave before b: an earlier deadline, else a smaller v, else
 * queued first? */
static bool eevdf_earlier(const struct mqs_sched_entity *a,
                          const struct mqs_sched_entity *b)
{
    if (a->p[EEVDF_DL] != b->p[EEVDF_DL])
        return mqs__fair_before(a->p[EEVDF_DL], b->p[EEVDF_DL]);
    if (a->key != b->key)
        return mqs__fair_before(a->key, b->key);
    return a->p[MQS__FAIR_P_SEQ] < b->p[MQS__FAIR_P_SEQ];
}

/* The queue's pick: of the tree's pick and the run's head (the run is
 * in deadline order to within the slack), the eligible one with the
 * earlier deadline; when neither is eligible (rounding), the least v.
 * Some normal task is queued. */
static struct mqs_sched_entity *eevdf_best(const struct eevdf_rq *r)
{
    struct mqs_sched_entity *h = mqs__fair_run_head(&r->f);
    /* The run alone (a yield loop's usual state): its head, eligible or
     * not (both ways below lead to it), without the eligibility test,
     * which waited on the head's line: a miss at 1024 tasks, where the
     * yield was 10-13% slower with it; level at 16. */
    if (!r->f.tree.n)
        return h;
    struct mqs_sched_entity *t = eevdf_tree_best(r);
    bool te = eevdf_eligible(r, t), he = h && eevdf_eligible(r, h);
    if (he && (!te || eevdf_earlier(h, t)))
        return h;
    return te ? t : mqs__fair_first(&r->f);
}

/* se, out of the tree, runs (it stays in V and the load as curr) for
 * the real time left to its deadline. */
static struct mqs_sched_entity *eevdf_start(struct eevdf_rq *r,
                                            struct mqs_sched_entity *se)
{
    r->f.curr = se;
    int64_t left = (int64_t)(se->p[EEVDF_DL] - se->key);
    if (left <= 0) {
        se->p[EEVDF_DL] = se->key + eevdf_vslice(r, se);
        left = (int64_t)(se->p[EEVDF_DL] - se->key);
    }
    se->slice_ns = (int64_t)(((unsigned __int128)left * se->weight) >> 10);
    return se;
}

/* Run se, which leaves the queue. */
static struct mqs_sched_entity *eevdf_run(struct eevdf_rq *r,
                                          struct mqs_sched_entity *se)
{
    mqs__fair_del(&r->f, se, eevdf_aug);
    eevdf_update_min(r, se);
    return eevdf_start(r, se);
}

static struct mqs_sched_entity *eevdf_pick(struct mqs_rq *rq)
{
    struct eevdf_rq *r = eevdf(rq);
    uint64_t now = mqs_rq_clock(rq);
    eevdf_settle(r, now);
    struct mqs_sched_entity *se = mqs__fair_pick_rt(rq);
    if (se)
        return se;
    if (mqs__fair_nr(&r->f)) {
        se = eevdf_run(r, eevdf_best(r));
        mqs__fair_publish(rq);
        return se;
    }
    return mqs__fair_pick_idle(rq);
}

/* Yield fast path: as cfs's, with the deadline moved on: se goes back
 * (eevdf_insert_last) and the pick leaves, as enqueue + pick would do,
 * without the settle and publish around them. */
static struct mqs_sched_entity *eevdf_yield(struct mqs_rq *rq,
                                            struct mqs_sched_entity *se)
{
    struct eevdf_rq *r = eevdf(rq);
    if (se->cls != MQS_CLASS_NORMAL || mqs__fair_rt_waiting(rq) ||
        !mqs__fair_requeue(&r->f, se))
        return NULL;
    eevdf_requeue(r, se);
    return eevdf_run(r, eevdf_best(r));
}

static void eevdf_put_prev(struct mqs_rq *rq, struct mqs_sched_entity *se,
                           uint64_t ran)
{
    if (se->cls != MQS_CLASS_NORMAL) {
        mqs__fair_class_put_prev(se, ran);
        return;
    }
    struct eevdf_rq *r = eevdf(rq);
    uint64_t now = mqs_rq_clock(rq);
    uint64_t cpu = mqs__fair_charge_run(se, ran, r->tun->steal_check_ns);
    uint64_t dv = mqs__fair_vtime(cpu, se->weight);
    se->key += dv;
    r->avg_sum += (int64_t)dv * (int64_t)mqs__fair_slot(se, MQS__FAIR_P_W);
    se->slice_ns -= (int64_t)cpu;
    if (!mqs__fair_before(se->key, se->p[EEVDF_DL]))
        se->p[EEVDF_DL] = se->key + eevdf_vslice(r, se);
    /* No eevdf_update_min here, which a yield would repeat in
     * eevdf_run: moving the base v0 leaves V as it is (the sums follow).
     * A task that does not come back moves it in eevdf_settle, so that
     * an emptied queue's V (= v0) is where the task stopped. */
    mqs__fair_stop(&r->f, se, now);
}

/* The hand-off (MQS_POLICY_WAKE_NEXT): the woken se runs now, as the
 * pick after its enqueue(MQS_ENQ_WAKEUP) would have run it with nothing
 * else queued: placed with its lag, in V and the load, started on its
 * deadline, and never in the tree.  With anything queued here (a remote
 * wake-up since) the tree decides: enqueue and pick. */
static bool eevdf_run_woken(struct mqs_rq *rq, struct mqs_sched_entity *se)
{
    struct eevdf_rq *r = eevdf(rq);
    if (se->cls != MQS_CLASS_NORMAL || mqs__fair_nr(&r->f) || r->f.cls.nr)
        return false;
    uint64_t now = mqs_rq_clock(rq);
    eevdf_settle(r, now);
    eevdf_place(r, se, MQS_ENQ_WAKEUP);
    mqs__fair_load_join(&r->f, se, now, false);
    eevdf_avg_add(r, se, (int64_t)se->weight);
    eevdf_update_min(r, se);
    eevdf_start(r, se);
    return true;
}

/* The woken task preempts when pick would choose it over curr. */
static bool eevdf_wake_preempt(struct mqs_rq *rq, struct mqs_sched_entity *curr,
                               struct mqs_sched_entity *woken)
{
    if (curr->cls != MQS_CLASS_NORMAL || woken->cls != MQS_CLASS_NORMAL)
        return woken->prio < curr->prio;
    return eevdf_eligible(eevdf(rq), woken) &&
           mqs__fair_before(woken->p[EEVDF_DL], curr->p[EEVDF_DL]);
}

static int eevdf_balance(struct mqs_rq *rq, int why)
{
    const struct eevdf_tunables *t = eevdf(rq)->tun;
    return mqs__fair_balance(rq, why, t->balance_ns, t->migration_cost_ns,
                             eevdf_unlink);
}

const struct mqs_policy mqs_policy_eevdf = {
    .name = "eevdf",
    .description = "EEVDF (Linux 6.6): eligible earliest virtual deadline "
                   "first, lag kept across sleep, PELT load balancing",
    .flags = MQS_POLICY_WAKE_NEXT,
    .rq_size = sizeof(struct eevdf_rq),
    .rt_size = sizeof(struct eevdf_tunables),
    .tunables = eevdf_tunables,
    .init_rq = eevdf_init_rq,
    .enqueue = eevdf_enqueue,
    .dequeue = eevdf_dequeue,
    .pick = eevdf_pick,
    .put_prev = eevdf_put_prev,
    .yield = eevdf_yield,
    .tick = mqs__fair_tick,
    .wake_preempt = eevdf_wake_preempt,
    .balance = eevdf_balance,
    .run_woken = eevdf_run_woken,
};

#undef EEVDF_VBASE
#undef EEVDF_DL
#undef EEVDF_LAG
