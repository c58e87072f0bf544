/*
 * mq.c - the multi-queue policy (default): the 2001 Linux multi-queue
 * scheduler of Kravetz and Franke, with the O(1) scheduler's priority
 * arrays inside each queue.
 *
 * Each worker's queue holds two priority arrays (active and expired) of
 * 141 FIFO lists with a bitmap, one list per priority level: realtime
 * levels 0..99, normal levels 100..139 (nice -20..19), idle level 140.
 * Picking the most urgent local task is a find-first-set and a list pop.
 * Normal tasks get a time slice proportional to their nice weight; one
 * whose slice is spent goes to the expired array, and when the active
 * array has no normal task left the arrays swap, so every normal task
 * gets its weighted share in each round (the O(1) design; 2.4's goodness
 * recalculation did the same with a loop over all tasks).  An expired
 * array that has waited longer than starve_ns stops new arrivals from
 * jumping ahead of it, which bounds how long a normal task can wait.
 * FIFO tasks run until they block or yield; RR tasks rotate within their
 * level when their rr slice is spent.  A slice is charged a run's CPU
 * time, not its wall time (time the worker's thread was preempted by the
 * host is left out), and a pure yield is charged the worker's yield
 * baseline, so that yield loops get equal counts, not just equal time
 * (charge() says why and what it costs).
 *
 * Across queues the choice stays priority-correct, as in the 2001 MQ
 * scheduler: every queue publishes its most urgent waiting level, and a
 * worker takes a remote task only when it beats its own best by more
 * than affinity_boost levels (realtime: when it is strictly more urgent).
 * The 2001 patch paid for that with a scan of every queue at every
 * schedule(), which made it ~25% slower than the stock scheduler with one
 * or two threads.  Here the core keeps a runtime-wide bitmap of the
 * levels published by any queue (updated only when a queue's best level
 * changes); pick reads one word of it and scans the queues only when
 * that word says a more urgent task waits elsewhere.  Equal-priority
 * work is evened out by idle stealing and a periodic balancer (every
 * balance_ns, pulling half the difference from the busiest queue): the
 * "pooled MQ" idea of a slow balancer plus fast local choice.
 *
 * Wake placement is the core's default (mqs_select_default): an idle
 * worker the task may use (its last one first), else the waker's worker
 * for a synchronous wake-up or a normal task's wake-up by a task, else
 * its last worker (cache affinity), else the less loaded of two
 * candidates.
 */
#include <stddef.h>
#include <string.h>

#include "mqs/policy.h"
#include "kit.h"

#define LEVELS MQS_PRIO_LEVELS
#define WORDS MQS__BITMAP_WORDS(LEVELS)
_Static_assert(WORDS == 3, "priority maps are three words");
#define STEAL_MAX 16
#define MQ_YIELD_MAX_NS 1000 /* cap of the yield baseline (charge) */
#define MQ_PREFETCH_NR 32  /* queued tasks from which a pick prefetches */
#define MQ_PURE_YIELD 4      /* runs under this many baselines: a yield */
#define MQ_SPENT 1 /* se->p[MQ_SPENT]: taken out of an expired array */
#define MQ_STOPPED 2 /* se->p[MQ_STOPPED]: when its last run ended */
/* se->p[MQ_MEASURED]: the slice as the measured runs alone left it (the
 * yield baselines not taken off): its overrun is what a refill carries. */
#define MQ_MEASURED 3

struct mq_tunables {
    int64_t slice_ns;
    int64_t latency_ns;
    int64_t rr_slice_ns;
    int64_t affinity_boost;
    int64_t balance_ns;
    int64_t starve_ns;
    int64_t wake_head;
    int64_t wake_sleep_ns;
};


struct mq_rq {
    struct mqs__prio_array arrays[2];
    struct mqs__prio_array *active, *expired;
    unsigned active_idx;      /* active == &arrays[active_idx] */
    unsigned mask_lvl;        /* level remote_mask is for */
    uint64_t remote_mask[WORDS];
    int64_t yield_fp;         /* pure-yield baseline, 1/64 ns (charge) */
    uint64_t now;             /* end of the run put_prev last charged */
    int64_t slice_cap;        /* nice-0 slice for the current length */
    unsigned cap_nr;          /* length slice_cap was computed for */
    unsigned nr;
    uint64_t expired_since;   /* when the expired array became non-empty */
    uint64_t next_periodic;
    const struct mq_tunables *tun;
};

static const struct mqs_tunable mq_tunables[] = {
    {"slice_ns", 10000, 1000000000, 1000000,
     offsetof(struct mq_tunables, slice_ns),
     "time slice of a nice-0 task; others scale by weight"},
    {"latency_ns", 100000, 10000000000, 5000000,
     offsetof(struct mq_tunables, latency_ns),
     "longest round through one queue's normal tasks; shortens slices"},
    {"rr_slice_ns", 100000, 1000000000, 100000000,
     offsetof(struct mq_tunables, rr_slice_ns), "SCHED_RR time slice"},
    {"affinity_boost", 0, 40, 1, offsetof(struct mq_tunables, affinity_boost),
     "levels a remote normal task must beat the local best by to be pulled"},
    {"balance_ns", 100000, 1000000000, 4000000,
     offsetof(struct mq_tunables, balance_ns), "periodic balancing interval"},
    {"starve_ns", 1000000, 10000000000, 200000000,
     offsetof(struct mq_tunables, starve_ns),
     "expired tasks waiting longer than this stop new ones jumping ahead"},
    {"wake_head", 0, 1, 1, offsetof(struct mq_tunables, wake_head),
     "1: a woken normal task with slice left goes first in its level"},
    {"wake_sleep_ns", 0, 10000000000, 50000,
     offsetof(struct mq_tunables, wake_sleep_ns),
     "how long it must have slept for that (not a ping-pong's microseconds)"},
    {NULL, 0, 0, 0, 0, NULL},
};

static int64_t slice_cap(const struct mq_tunables *t, unsigned nr);

static struct mq_rq *state(struct mqs_rq *rq)
{
    return mqs_rq_state(rq);
}

static void mq_init_rq(struct mqs_rq *rq)
{
    struct mq_rq *m = state(rq);
    mqs__parr_init(&m->arrays[0]);
    mqs__parr_init(&m->arrays[1]);
    m->active = &m->arrays[0];
    m->expired = &m->arrays[1];
    m->tun = mqs_policy_state(mqs_rq_runtime(rq));
    m->mask_lvl = MQS_PRIO_NONE;
    m->slice_cap = slice_cap(m->tun, 1);
    m->yield_fp = MQ_YIELD_MAX_NS << 6;
}

static void array_add(struct mqs__prio_array *a, struct mqs_sched_entity *se,
                      bool head)
{
    mqs__parr_add(a, se, se->prio, head);
}

static void array_del(struct mqs__prio_array *a, struct mqs_sched_entity *se)
{
    mqs__parr_del(a, se, se->prio);
}

static unsigned array_best(const struct mqs__prio_array *a)
{
    return mqs__parr_best(a);
}

/* Longest nice-0 slice while nr tasks share this queue. */
static int64_t slice_cap(const struct mq_tunables *t, unsigned nr)
{
    int64_t cap = t->latency_ns / (int64_t)(nr ? nr : 1);
    return cap < t->slice_ns ? cap : t->slice_ns;
}

static void publish(struct mqs_rq *rq)
{
    struct mq_rq *m = state(rq);
    if (m->cap_nr != m->nr) {
        m->cap_nr = m->nr;
        m->slice_cap = slice_cap(m->tun, m->nr + 1);
    }
    unsigned a = array_best(m->active);
    if (m->expired->nr) {
        unsigned x = array_best(m->expired);
        a = x < a ? x : a;
    }
    mqs_rq_publish(rq, m->nr, a);
}

/* Which array holds se: p[0] is the index of the physical array, so a
 * swap of active and expired touches no task. */
static struct mqs__prio_array *home_array(struct mq_rq *m,
                                     struct mqs_sched_entity *se)
{
    return &m->arrays[se->p[0]];
}

/* A nice-0 task gets slice_ns, but never so much that one round through
 * the nr tasks of this queue takes longer than latency_ns (CFS's latency
 * target applied to O(1) slices): with thousands of tasks a round stays
 * short, so a task that loses a slice (to an expiry, or to the host
 * descheduling the worker while it ran) waits one short round, not
 * seconds.  Others scale by weight, down to 10 us. */
static int64_t weighted(int64_t nice0_slice, uint32_t weight)
{
    int64_t s = (int64_t)(((uint64_t)nice0_slice * weight) >> 10);
    return s < 10000 ? 10000 : s;
}

static int64_t normal_slice(const struct mq_tunables *t, uint32_t weight,
                            unsigned nr)
{
    return weighted(slice_cap(t, nr), weight);
}

static void mq_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       int flags)
{
    struct mq_rq *m = state(rq);
    bool expire = false, head = false;
    if (se->cls == MQS_CLASS_RR && se->slice_ns <= 0)
        se->slice_ns = m->tun->rr_slice_ns;
    else if (se->cls == MQS_CLASS_FIFO)
        head = (flags & MQS_ENQ_PREEMPTED) != 0;
    else if (se->cls == MQS_CLASS_NORMAL) {
        /* slept a while (not a ping-pong's hand-off) with slice left */
        bool credit = se->slice_ns > 0 && (flags & MQS_ENQ_WAKEUP) &&
                      mqs_sched_clock() - (uint64_t)se->p[MQ_STOPPED] >=
                          (uint64_t)m->tun->wake_sleep_ns;
        /* One moved here out of an expired array has had its turn this
         * round: it waits for the next, as at home, not runs twice. */
        expire = (se->slice_ns <= 0 &&
                  (flags & (MQS_ENQ_YIELD | MQS_ENQ_PREEMPTED))) ||
                 ((flags & MQS_ENQ_MIGRATED) && se->p[MQ_SPENT]);
        se->p[MQ_SPENT] = 0;
        /* The measured overrun is paid from the next slice, up to a
         * nice-0 slice of it: under tick accounting a run is charged a
         * whole tick, and a slice shorter than that (nice 5's 0.33 ms
         * against nice 0's 1 ms) was otherwise forgiven the rest, so
         * every task with a slice of a tick or less got the same share.
         * Not the baselines' part: they are turns, not time (10 us runs
         * paid 10% more than 200 us ones, and got that much less CPU).
         * Still spent after the refill, it expires again at its next
         * stop. */
        if (se->slice_ns <= 0) {
            int64_t left = (int64_t)se->p[MQ_MEASURED];
            int64_t debt = left >= 0 ? 0
                           : left < -m->slice_cap ? -m->slice_cap
                                                  : left;
            se->slice_ns =
                debt + normal_slice(m->tun, se->weight, m->nr + 1);
            se->p[MQ_MEASURED] = (uint64_t)se->slice_ns;
        }
        /* Starving expired tasks: everything queued goes behind them,
         * so the active array drains within starve_ns of wall time even
         * when the host gives this worker little CPU (a round is
         * latency_ns of charged CPU time, which then lasts far longer).
         * A yield expired early keeps the rest of its slice for the next
         * round.  enqueue may run on any thread: the caller's clock, not
         * the owner's. */
        if (m->expired->nr && mqs_sched_clock() - m->expired_since >
                                  (uint64_t)m->tun->starve_ns)
            expire = true;
        if (expire && m->expired->nr == 0)
            m->expired_since = mqs_sched_clock();
        /* Bounded sleeper credit: a task that slept used no CPU, so it
         * runs at the next scheduling point, ahead of the yielders and
         * hogs of its level, with what is left of its slice; a task
         * that keeps waking spends its slice so and expires like any.
         * Only after wake_sleep_ns asleep: two tasks that wake each other
         * sleep microseconds, and with the credit they held the worker
         * against its yielders for a slice each round. */
        head = !expire && credit && m->tun->wake_head &&
               (flags & MQS_ENQ_WAKEUP);
    }
    struct mqs__prio_array *a = expire ? m->expired : m->active;
    se->p[0] = expire ? m->active_idx ^ 1 : m->active_idx;
    array_add(a, se, head);
    m->nr++;
    publish(rq);
}

static void mq_dequeue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       int flags)
{
    (void)flags;
    struct mq_rq *m = state(rq);
    array_del(home_array(m, se), se);
    m->nr--;
    publish(rq);
}

/* ----- taking tasks from a victim (its lock held) ----- */

struct take_req {
    unsigned below;   /* only levels more urgent than this */
    int dest;         /* worker they go to */
};

static int take_from(struct mqs__prio_array *a, bool spent,
                     const struct take_req *req,
                     struct mqs_sched_entity **out, int n, int max)
{
    for (unsigned lvl = array_best(a); lvl < req->below && n < max;
         lvl = mqs__bit_next(a->bits, WORDS, lvl + 1, MQS_PRIO_NONE)) {
        struct mqs_list *pos, *tmp;
        mqs__list_for_each_safe(pos, tmp, &a->q[lvl])
        {
            struct mqs_sched_entity *se =
                mqs_se_entry(pos, struct mqs_sched_entity, node);
            if (n >= max)
                break;
            if (!mqs_se_allowed(se, req->dest) || !mqs_se_movable(se))
                continue;
            array_del(a, se);
            se->p[MQ_SPENT] = spent;
            out[n++] = se;
        }
    }
    return n;
}

static int mq_take(struct mqs_rq *victim, void *arg,
                   struct mqs_sched_entity **out, int max)
{
    struct mq_rq *m = state(victim);
    int n = take_from(m->active, false, arg, out, 0, max);
    n = take_from(m->expired, true, arg, out, n, max);
    m->nr -= (unsigned)n;
    publish(victim);
    return n;
}

/* The task after `node` on list q is the likeliest to run after the one
 * returned now: fetch its lines one switch ahead (mqs_se_prefetch), from
 * MQ_PREFETCH_NR queued tasks on (fewer stay in L1, and the hint would
 * only cost instructions).  rq's lock held. */
static inline void prefetch_after(struct mqs_rq *rq, const struct mq_rq *m,
                                  const struct mqs_list *q,
                                  const struct mqs_list *node)
{
    if (m->nr >= MQ_PREFETCH_NR && node->next != q)
        mqs_se_prefetch(rq, mqs_se_entry(node->next, struct mqs_sched_entity,
                                         node));
}

/* A remote task more urgent than local best (beyond the boost)? */
static struct mqs_sched_entity *pull_urgent(struct mqs_rq *rq, unsigned local)
{
    struct mq_rq *m = state(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    unsigned hint = mqs_best_prio_anywhere(rt);
    unsigned boost = (unsigned)m->tun->affinity_boost;
    if (hint >= local || (hint >= MQS_PRIO_NORMAL_MIN && hint + boost >= local))
        return NULL;
    unsigned below = hint < MQS_PRIO_NORMAL_MIN ? local : local - boost;
    int self = mqs_rq_worker(rq), n = mqs_nr_workers(rt);
    struct take_req req = {below, self};
    /* With nothing local any remote task beats the empty queue: that is
     * an idle or newly-idle steal, and counted as one. */
    int why = local == MQS_PRIO_NONE ? mqs_rq_empty_pull_kind(rq)
                                     : MQS_PULL_PRIORITY;
    for (int i = 1; i < n; i++) {
        struct mqs_rq *v = mqs_rq_of(rt, (self + i) % n);
        if (mqs_rq_best_prio(v) >= below)
            continue;
        struct mqs_sched_entity *se;
        if (mqs_rq_steal(rq, v, why, mq_take, &req, &se, 1))
            return se;
    }
    return NULL;
}

static struct mqs_sched_entity *mq_pick(struct mqs_rq *rq)
{
    struct mq_rq *m = state(rq);
    if (mqs__parr_swap_due(m->active, m->expired)) {
        struct mqs__prio_array *t = m->active;
        m->active = m->expired;
        m->expired = t;
        m->active_idx ^= 1;
    }
    unsigned local = array_best(m->active);
    struct mqs_sched_entity *se = pull_urgent(rq, local);
    if (se)
        return se;
    if (local == MQS_PRIO_NONE)
        return NULL;
    struct mqs_list *q = &m->active->q[local];
    se = mqs_se_entry(q->next, struct mqs_sched_entity, node);
    prefetch_after(rq, m, q, &se->node);
    array_del(m->active, se);
    m->nr--;
    publish(rq);
    return se;
}

/* Is a remote task urgent enough to be pulled instead of running one
 * of level `local` here?  Realtime: any more urgent level; normal: one
 * more urgent by over affinity_boost levels, and any realtime one. */
static unsigned pull_limit(struct mqs_rq *rq, unsigned local)
{
    if (local < MQS_PRIO_NORMAL_MIN)
        return local;
    unsigned boost = (unsigned)state(rq)->tun->affinity_boost;
    return local - boost > MQS_PRIO_NORMAL_MIN ? local - boost
                                               : MQS_PRIO_NORMAL_MIN;
}

/* The mask "levels worth a pull from level lvl", cached for the last
 * level that yielded here: in a steady state every yield asks about the
 * same level. */
static void yield_masks(struct mqs_rq *rq, struct mq_rq *m, unsigned lvl)
{
    unsigned limit = pull_limit(rq, lvl);
    for (unsigned i = 0; i < WORDS; i++)
        m->remote_mask[i] = mqs__below_mask(limit, i);
    m->mask_lvl = lvl;
}

/* Take first off the head of q and put n at its tail, in seven stores
 * (a del and an add_tail would also relink first to itself: it is about
 * to run, and nothing reads the node of a running task). */
static inline void yield_rotate(struct mqs_list *q, struct mqs_list *first,
                                struct mqs_list *n)
{
    struct mqs_list *second = first->next;
    q->next = second;
    second->prev = q;
    struct mqs_list *tail = q->prev;
    n->next = q;
    n->prev = tail;
    tail->next = n;
    q->prev = n;
}

/* A yield that leaves the queue's shape unchanged: se still has slice,
 * nothing more urgent waits here or elsewhere; rotate se behind the tasks
 * of its level (or keep running it when it is alone there).  Counts,
 * bitmaps and the published summary stay as they are.  Not while expired
 * tasks starve: then the yield takes the slow path, into the expired
 * array (mq_enqueue).  "More urgent
 * here" reads the published best level, which also covers the expired
 * array: a more urgent expired task sends the yield down the slow path,
 * which decides the same, only slower.  A leaf with no calls: this runs
 * on every yield. */
static struct mqs_sched_entity *mq_yield(struct mqs_rq *rq,
                                         struct mqs_sched_entity *se)
{
    struct mq_rq *m = state(rq);
    unsigned lvl = se->prio;
    if (se->slice_ns <= 0 && se->cls != MQS_CLASS_FIFO)
        return NULL;
    if (mqs_rq_best_prio(rq) < lvl)
        return NULL;
    if (MQS__UNLIKELY(m->mask_lvl != lvl))
        yield_masks(rq, m, lvl);
    const _Atomic uint64_t *g = mqs_level_hint(mqs_rq_runtime(rq));
    if ((atomic_load_explicit(&g[0], memory_order_relaxed) & m->remote_mask[0]) |
        (atomic_load_explicit(&g[1], memory_order_relaxed) & m->remote_mask[1]) |
        (atomic_load_explicit(&g[2], memory_order_relaxed) & m->remote_mask[2]))
        return NULL;
    if (m->expired->nr &&
        (int64_t)(m->now - m->expired_since) > m->tun->starve_ns)
        return NULL;
    struct mqs_list *q = &m->active->q[lvl];
    struct mqs_list *first = q->next;
    if (first == q)
        return se;
    se->p[0] = m->active_idx;
    prefetch_after(rq, m, q, first);
    yield_rotate(q, first, &se->node);
    return mqs_se_entry(first, struct mqs_sched_entity, node);
}

/*
 * What a run costs the task's slice.  Time the worker's thread was off its
 * CPU (se->stall_ns) is not charged: a yield loop hit by a 4 ms host
 * preemption would otherwise lose its slice, and its yield count, to it.
 * A run too short to have done more than yield (under MQ_PURE_YIELD
 * times the worker's yield baseline, which is capped at 1 us) is charged
 * the baseline, not its own length: pure yields then cost every task the
 * same, so equal slices give equal yield counts, where exact charges made
 * tasks whose yields miss more in the cache do proportionally fewer.  At
 * 1024 tasks on one worker some tasks' yields cost 25-29 ns against
 * 19-21 (every time: where their stacks sit in the cache), and with a
 * line at 2x the baseline enough of their runs crossed it to take
 * min/mean to 0.76-0.83; at 4x it is 0.95-0.96.  The baseline is an
 * average of such short runs (weight 1/64), starting at and capped at
 * 1 us; a run it covers is misjudged by less than MQ_PURE_YIELD
 * baselines (~80 ns here), and a run that does more is charged exactly.
 */
static int64_t charge(struct mq_rq *m, struct mqs_sched_entity *se,
                      uint64_t ran_ns)
{
    int64_t c = (int64_t)(ran_ns - se->stall_ns), base = m->yield_fp >> 6;
    if (c >= MQ_PURE_YIELD * base)
        return c;
    /* Not measured: under tick accounting (mqs/policy.h) a run inside
     * one tick reads 0.  It is charged the baseline, and teaches it
     * nothing: the straddled ticks charge the runs' true length on
     * average, and the baseline keeps yielders' turns even between
     * ticks (at 1 us a turn, as a yield in O(1) gave up its slice). */
    if (c <= 0)
        return base;
    /* In 1/64 ns, so that the average settles on the runs themselves (a
     * plain (c - base) / 64 stops 63 ns short of them). */
    int64_t fp = m->yield_fp + c - base;
    m->yield_fp = fp < (MQ_YIELD_MAX_NS << 6) ? fp : (MQ_YIELD_MAX_NS << 6);
    return base;
}

/* Charge the run; a normal task's remaining slice is also trimmed to
 * what the queue's current length allows, so tasks that got a long slice
 * while the queue was short (the first of many spawned at once) do not
 * keep it once the queue is long. */
static void mq_put_prev(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        uint64_t ran_ns)
{
    struct mq_rq *m = state(rq);
    m->now = se->exec_start_ns + ran_ns; /* for mq_yield's starvation test */
    se->p[MQ_STOPPED] = (int64_t)m->now;
    if (se->cls == MQS_CLASS_FIFO)
        return;
    if (se->cls != MQS_CLASS_NORMAL) {
        se->slice_ns -= (int64_t)(ran_ns - se->stall_ns);
        return;
    }
    se->slice_ns -= charge(m, se, ran_ns);
    int64_t measured = (int64_t)(ran_ns - se->stall_ns);
    int64_t left = (int64_t)se->p[MQ_MEASURED] - (measured > 0 ? measured : 0);
    int64_t cap = weighted(m->slice_cap, se->weight);
    if (se->slice_ns > cap)
        se->slice_ns = cap;
    se->p[MQ_MEASURED] = (uint64_t)(left < cap ? left : cap);
}

static int64_t mq_tick(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       uint64_t now)
{
    (void)rq;
    if (se->cls == MQS_CLASS_FIFO)
        return MQS_SLICE_NONE;
    return se->slice_ns - (int64_t)(now - se->exec_start_ns);
}

/* ----- balancing ----- */

static int busiest(mqs_runtime_t *rt, int self, unsigned *nr)
{
    int best = -1, n = mqs_nr_workers(rt);
    *nr = 0;
    for (int i = 0; i < n; i++) {
        unsigned q = mqs_rq_nr_queued(mqs_rq_of(rt, i));
        if (i != self && q > *nr) {
            *nr = q;
            best = i;
        }
    }
    return best;
}

static int mq_balance(struct mqs_rq *rq, int why)
{
    struct mq_rq *m = state(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    int self = mqs_rq_worker(rq);
    if (why == MQS_BALANCE_PERIODIC) {
        uint64_t now = mqs_rq_clock(rq);
        if (now < m->next_periodic)
            return 0;
        m->next_periodic = now + (uint64_t)m->tun->balance_ns;
    }
    unsigned nr, mine = mqs_rq_nr_queued(rq);
    int victim = busiest(rt, self, &nr);
    if (victim < 0)
        return 0;
    int want = why == MQS_BALANCE_PERIODIC ? (int)(nr - mine) / 2
                                           : (int)(nr + 1) / 2;
    if (want <= 0)
        return 0;
    if (want > STEAL_MAX)
        want = STEAL_MAX;
    struct mqs_sched_entity *got[STEAL_MAX];
    struct take_req req = {MQS_PRIO_LEVELS, self};
    int n = mqs_rq_steal(rq, mqs_rq_of(rt, victim), why, mq_take, &req, got,
                         want);
    return mqs_rq_add_stolen_all(rq, got, n);
}

const struct mqs_policy mqs_policy_mq = {
    .name = "mq",
    /* core child-first and wake hand-off (runnext.c); slices charged at
     * the tick */
    .flags = MQS_POLICY_CHILD_FIRST | MQS_POLICY_TICK_ACCOUNTING |
             MQS_POLICY_WAKE_NEXT,
    .description = "multi-queue: per-worker O(1) priority arrays, "
                   "priority-correct pulls, idle stealing, periodic balance",
    .rq_size = sizeof(struct mq_rq),
    .rt_size = sizeof(struct mq_tunables),
    .tunables = mq_tunables,
    .init_rq = mq_init_rq,
    .enqueue = mq_enqueue,
    .dequeue = mq_dequeue,
    .pick = mq_pick,
    .put_prev = mq_put_prev,
    .yield = mq_yield,
    .tick = mq_tick,
    .balance = mq_balance,
};

#undef LEVELS
#undef WORDS
#undef STEAL_MAX
#undef MQ_SPENT
#undef MQ_STOPPED
#undef MQ_YIELD_MAX_NS
#undef MQ_PURE_YIELD
#undef MQ_MEASURED
