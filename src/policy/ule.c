/*
 * ule.c - FreeBSD's ULE scheduler (Jeff Roberson, 2003; sched_ule.c).
 *
 * Each worker's queue (ULE's kseq/tdq) has a realtime part, an idle part
 * and ULE's timeshare pair, current and next: interactive tasks go on
 * current, batch tasks on next, and the two swap when current empties,
 * so every batch task runs once per pass and interactive ones go first.
 * Interactivity is sched_interact_score() over a task's recent run and
 * sleep time (kept under slp_run_max_ns, sched_interact_update), plus
 * nice; under `interact` (30) the task is interactive, level 100 + 20 *
 * score / interact, else batch, level 120 + (nice + 20) / 2.  Slices
 * scale with nice and shrink with the queue length (tdq_slice).  A yield
 * or preemption with slice left goes back on current (a yield alone on
 * current goes to next); a spent slice is re-scored.  Affinity is strong
 * (sched_pickcpu: last worker if idle, or if the task slept briefly and
 * would lead there; else the least loaded).  No periodic pass over all
 * tasks: an idle worker steals one task from the most loaded (tdq_idled)
 * and every balance_ns the least loaded worker takes half the difference
 * from the most loaded (tdq_balance).  Only realtime wake-ups preempt
 * (preempt_thresh).  Not the 2003 design, for invariant 2 (docs/design.md):
 * pick first takes a more urgent realtime task queued on another worker
 * (src/rt_pull.h; rt_pull=0 off).
 *
 * Defaults shorter than FreeBSD's (4 ms slices, 10 ms balancing, against
 * ~94 ms and ~1 s), and slices trimmed as the queue grows, keep a pass
 * short enough for the conformance suite's fairness windows.  Rejected:
 * the 2007+ calendar queue (the brief is the 2003 design) and ts_ticks
 * cpu-usage priorities (a second history per task for little change in
 * order).  docs/policies/ule.md has the details and sources.
 */
#include <stddef.h>

#include "mqs/policy.h"
#include "kit.h"

#define ULE_HALF 50
#define ULE_STEAL_MAX 16
#define ULE_SLICE_DIV_MAX 6
/* Parts of a queue (index into ule_rq.q) */
#define ULE_RT 0
#define ULE_TS0 1 /* ULE_TS0 and ULE_TS1: current and next, swapped */
#define ULE_TS1 2
#define ULE_IDLE 3
#define ULE_PARTS 4

/* se->p[] words (read by tests/test_policy_ule.c) */
#define ULE_WHERE 0 /* part it is queued in                          */
#define ULE_SPARE 1 /* (free: the level is se->level)                */
#define ULE_RUN 2   /* recent run time, ns (ts_runtime)              */
#define ULE_NR 3    /* queue length its slice was sized for          */
#define ULE_SLP 4   /* recent sleep time, ns (ts_slptime); p[0..3],  */
                    /* which a yield touches, share a cache line     */

struct ule_tunables {
    int64_t slice_ns;
    int64_t interact;
    int64_t slp_run_max_ns;
    int64_t affinity_ns;
    int64_t balance_ns;
    int64_t steal_thresh;
    int64_t rt_pull;
};

/* A worker's queue (tdq); every field under its rq lock except
 * next_balance (owner only). */
struct ule_rq {
    struct mqs__prio_array q[ULE_PARTS];
    unsigned curr;          /* ULE_TS0 or ULE_TS1: the current queue */
    unsigned nr;            /* queued, all parts                     */
    uint64_t next_balance;
    const struct ule_tunables *tun;
    const _Atomic uint64_t *rt_hint; /* for pulls (mqs__rt_pull_hint) */
};

static const struct mqs_tunable ule_tunables[] = {
    {"slice_ns", 1000000, 1000000000, 4000000,
     offsetof(struct ule_tunables, slice_ns),
     "slice of a nice 0 task on a queue of one (sched_slice)"},
    {"interact", 0, 100, 30, offsetof(struct ule_tunables, interact),
     "interactivity score under which a task is interactive"},
    {"slp_run_max_ns", 10000000, 100000000000, 5000000000,
     offsetof(struct ule_tunables, slp_run_max_ns),
     "sleep + run history kept for the score (SCHED_SLP_RUN_MAX)"},
    {"affinity_ns", 0, 10000000000, 10000000,
     offsetof(struct ule_tunables, affinity_ns),
     "a task that ran this recently stays on its worker (SCHED_AFFINITY)"},
    {"balance_ns", 1000000, 10000000000, 10000000,
     offsetof(struct ule_tunables, balance_ns),
     "interval of the most-to-least loaded balancer (balance_interval)"},
    {"steal_thresh", 1, 1000, 1, offsetof(struct ule_tunables, steal_thresh),
     "an idle worker steals from queues with at least this many waiting"},
    {"rt_pull", 0, 1, 1, offsetof(struct ule_tunables, rt_pull),
     "pick takes a more urgent realtime task from another worker (0: the "
     "2003 design, which had none)"},
    {NULL, 0, 0, 0, 0, NULL},
};

static struct ule_rq *ule_state(struct mqs_rq *rq)
{
    return mqs_rq_state(rq);
}

static void ule_init_rq(struct mqs_rq *rq)
{
    struct ule_rq *u = ule_state(rq);
    for (int i = 0; i < ULE_PARTS; i++)
        mqs__parr_init(&u->q[i]);
    u->curr = ULE_TS0;
    u->tun = mqs_policy_state(mqs_rq_runtime(rq));
    u->rt_hint = mqs__rt_pull_hint(mqs_rq_runtime(rq), u->tun->rt_pull);
}

/* ----- interactivity ----- */

/* sched_interact_score, 0..100. */
static int ule_score(uint64_t run, uint64_t slp)
{
    if (run > slp) {
        uint64_t div = run / ULE_HALF ? run / ULE_HALF : 1;
        return ULE_HALF + (ULE_HALF - (int)(slp / div));
    }
    if (slp > run) {
        uint64_t div = slp / ULE_HALF ? slp / ULE_HALF : 1;
        return (int)(run / div);
    }
    return run ? ULE_HALF : 0;
}

/* sched_interact_update: keep run + sleep under the cap, ratio kept. */
static void ule_interact_update(const struct ule_tunables *t,
                                struct mqs_sched_entity *se)
{
    uint64_t max = (uint64_t)t->slp_run_max_ns;
    uint64_t *run = &se->p[ULE_RUN], *slp = &se->p[ULE_SLP];
    uint64_t sum = *run + *slp;
    if (sum < max)
        return;
    if (sum > max * 2) {
        bool ran_more = *run > *slp;
        *run = ran_more ? max : 1;
        *slp = ran_more ? 1 : max;
    } else if (sum > max / 5 * 6) {
        *run /= 2;
        *slp /= 2;
    } else {
        *run = *run / 5 * 4;
        *slp = *slp / 5 * 4;
    }
}

/* sched_priority for a timeshare task: its level, and whether it is
 * interactive (queued on current). */
static unsigned ule_ts_level(const struct ule_tunables *t,
                             const struct mqs_sched_entity *se, bool *inter)
{
    int score = ule_score(se->p[ULE_RUN], se->p[ULE_SLP]) + se->nice;
    if (score < 0)
        score = 0;
    *inter = score < t->interact;
    if (*inter)
        return MQS_PRIO_NORMAL_MIN + (unsigned)(20 * score / t->interact);
    return MQS_PRIO_NICE0 + (unsigned)(se->nice + 20) / 2;
}

/* Slice for se on a queue with nr tasks waiting (tdq_slice). */
static int64_t ule_slice(const struct ule_tunables *t,
                         const struct mqs_sched_entity *se, unsigned nr)
{
    int64_t s = t->slice_ns;
    if (se->cls == MQS_CLASS_NORMAL)
        s = s * (20 - se->nice) / 20;
    if (s < t->slice_ns / 20)
        s = t->slice_ns / 20;
    unsigned div = nr < 1 ? 1 : nr > ULE_SLICE_DIV_MAX ? ULE_SLICE_DIV_MAX : nr;
    return s / div;
}

/* Re-score se and choose its part and level (a wake-up or a new slice). */
static void ule_place(struct ule_rq *u, struct mqs_sched_entity *se)
{
    bool inter = false;
    se->slice_ns = ule_slice(u->tun, se, u->nr);
    se->p[ULE_NR] = u->nr;
    switch (se->cls) {
    case MQS_CLASS_FIFO:
    case MQS_CLASS_RR:
        se->p[ULE_WHERE] = ULE_RT;
        se->level = (uint8_t)se->prio;
        return;
    case MQS_CLASS_IDLE:
        se->p[ULE_WHERE] = ULE_IDLE;
        se->level = MQS_PRIO_IDLE;
        return;
    default:
        ule_interact_update(u->tun, se);
        se->level = (uint8_t)ule_ts_level(u->tun, se, &inter);
        se->p[ULE_WHERE] = inter ? u->curr : (u->curr ^ ULE_TS0 ^ ULE_TS1);
    }
}

/* Time asleep, for the score: until the wake-up (or now). */
static void ule_add_sleep(struct mqs_sched_entity *se, uint64_t now)
{
    uint64_t woke = se->woke_at_ns >= se->slept_at_ns ? se->woke_at_ns : now;
    se->p[ULE_SLP] += woke > se->slept_at_ns ? woke - se->slept_at_ns : 0;
}

/* ----- queueing ----- */

static void ule_publish(struct mqs_rq *rq)
{
    struct ule_rq *u = ule_state(rq);
    unsigned best = MQS_PRIO_NONE;
    for (int i = 0; i < ULE_PARTS; i++) {
        unsigned b = mqs__parr_best(&u->q[i]);
        best = b < best ? b : best;
    }
    mqs_rq_publish(rq, u->nr, best);
}

/* A task spawned from a task starts with its parent's history
 * (sched_fork_thread).  One spawned from outside the runtime has no
 * parent: it starts even (score 50, batch), since a burst of spawns says
 * nothing about interactivity; its first sleep or run decides. */
static void ule_task_new(struct mqs_rq *rq, struct mqs_sched_entity *se,
                         const struct mqs_sched_entity *parent)
{
    (void)rq;
    if (parent) {
        se->p[ULE_RUN] = parent->p[ULE_RUN];
        se->p[ULE_SLP] = parent->p[ULE_SLP];
    } else if (se->p[ULE_RUN] == 0 && se->p[ULE_SLP] == 0) {
        se->p[ULE_RUN] = 1;
        se->p[ULE_SLP] = 1;
    }
}

/* A timeshare task that yields alone on current hands the worker to the
 * next queue (as FreeBSD's sched_relinquish dropped it to the worst
 * timeshare priority); with company on current it stays there. */
static bool ule_yield_to_next(const struct ule_rq *u, int flags)
{
    return (flags & MQS_ENQ_YIELD) && u->q[u->curr].nr == 0 &&
           u->q[u->curr ^ ULE_TS0 ^ ULE_TS1].nr != 0;
}

static void ule_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        int flags)
{
    struct ule_rq *u = ule_state(rq);
    bool head = false;
    if (flags & MQS_ENQ_WAKEUP)
        ule_add_sleep(se, mqs_sched_clock());
    if ((flags & (MQS_ENQ_YIELD | MQS_ENQ_PREEMPTED)) &&
        (se->cls == MQS_CLASS_FIFO || se->slice_ns > 0)) {
        /* back where it ran from; a preempted FIFO task keeps its place */
        head = se->cls == MQS_CLASS_FIFO && (flags & MQS_ENQ_PREEMPTED);
        if (se->cls == MQS_CLASS_NORMAL)
            se->p[ULE_WHERE] = ule_yield_to_next(u, flags)
                                   ? u->curr ^ ULE_TS0 ^ ULE_TS1
                                   : u->curr;
    } else {
        ule_place(u, se); /* new, woken, stolen, changed, or slice spent */
    }
    mqs__parr_add(&u->q[se->p[ULE_WHERE]], se, se->level, head);
    u->nr++;
    ule_publish(rq);
}

static void ule_del(struct ule_rq *u, struct mqs_sched_entity *se)
{
    mqs__parr_del(&u->q[se->p[ULE_WHERE]], se, se->level);
    u->nr--;
}

static void ule_dequeue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        int flags)
{
    (void)flags;
    ule_del(ule_state(rq), se);
    ule_publish(rq);
}

/* Realtime, then current (swapping in next when it is empty), then idle. */
static struct mqs__prio_array *ule_next_part(struct ule_rq *u)
{
    if (u->q[ULE_RT].nr)
        return &u->q[ULE_RT];
    if (u->q[u->curr].nr == 0)
        u->curr ^= ULE_TS0 ^ ULE_TS1;
    if (u->q[u->curr].nr)
        return &u->q[u->curr];
    return &u->q[ULE_IDLE];
}

/* tdq_steal's order, for a pull or a balancer (req: struct
 * mqs__rt_pull_req): realtime first, then next, current, idle. */
static int ule_take(struct mqs_rq *victim, void *arg,
                    struct mqs_sched_entity **out, int max)
{
    struct ule_rq *u = ule_state(victim);
    const unsigned order[ULE_PARTS] = {ULE_RT, u->curr ^ ULE_TS0 ^ ULE_TS1,
                                       u->curr, ULE_IDLE};
    int n = 0;
    for (int i = 0; i < ULE_PARTS && n < max; i++)
        n = mqs__rt_pull_take(&u->q[order[i]], arg, out, n, max);
    u->nr -= (unsigned)n;
    ule_publish(victim);
    return n;
}

static struct mqs_sched_entity *ule_pick(struct mqs_rq *rq)
{
    struct ule_rq *u = ule_state(rq);
    struct mqs_sched_entity *se =
        mqs__rt_pull(rq, u->rt_hint, mqs__parr_best(&u->q[ULE_RT]), ule_take);
    if (se)
        return se;
    se = mqs__parr_pop(ule_next_part(u));
    if (!se)
        return NULL;
    u->nr--;
    ule_publish(rq);
    return se;
}

/* Would a task queued in part `where` at level lvl be picked next? */
static bool ule_leads(const struct ule_rq *u, unsigned where, unsigned lvl)
{
    const struct mqs__prio_array *a = &u->q[where];
    if (where != ULE_RT && u->q[ULE_RT].nr)
        return false;
    if (where == ULE_IDLE && (u->q[ULE_TS0].nr || u->q[ULE_TS1].nr))
        return false;
    return mqs__parr_best(a) >= lvl;
}

/* Rotate se behind its level in the part it ran from, when it has slice
 * left, nothing in a more urgent part or level waits and no realtime task
 * is due for a pull: what enqueue(YIELD) + pick would do.  The published
 * best level, when it is no more urgent than se's, says at one load what
 * ule_leads works out from the bitmaps (it covers every part). */
static struct mqs_sched_entity *ule_yield(struct mqs_rq *rq,
                                          struct mqs_sched_entity *se)
{
    struct ule_rq *u = ule_state(rq);
    if (se->cls != MQS_CLASS_FIFO && se->slice_ns <= 0)
        return NULL;
    unsigned where = se->cls == MQS_CLASS_NORMAL ? u->curr
                                                  : (unsigned)se->p[ULE_WHERE];
    unsigned lvl = se->level;
    unsigned best = mqs_rq_best_prio(rq);
    if ((best < lvl && !ule_leads(u, where, lvl)) ||
        mqs__rt_pull_due(u->rt_hint, lvl) ||
        (se->cls == MQS_CLASS_NORMAL && ule_yield_to_next(u, MQS_ENQ_YIELD)))
        return NULL;
    struct mqs__prio_array *a = &u->q[where];
    se->p[ULE_WHERE] = where;
    if (mqs__list_empty(&a->q[lvl]))
        return se;
    struct mqs_sched_entity *next = mqs__parr_first(a, lvl);
    mqs__list_del(&next->node);
    mqs__list_add_tail(&a->q[lvl], &se->node);
    return next;
}

/* Charge the run; the rest of the slice is trimmed to what the queue's
 * length allows now (tdq_slice applied as the queue grows), so tasks
 * that got a long slice on a short queue do not hold up a pass.
 *
 * Only the time the worker's thread had its CPU is charged, to the slice
 * and to the run history: the core measures the rest (se->stall_ns,
 * time the OS or the host took the thread away during this run).  FreeBSD
 * counts a thread's run time in stat-clock ticks it was seen running,
 * which a preempted thread does not collect.  Charging wall time ended a
 * yield-looping task's slice on one 4-8 ms host preemption: it went to
 * next and sat out the rest of the pass, and with 1 ms slices (4 ms / 4
 * tasks) the one-worker share loop saw min/mean 0.23-0.49 in 12 of 200
 * runs on a loaded host. */
static void ule_put_prev(struct mqs_rq *rq, struct mqs_sched_entity *se,
                         uint64_t ran_ns)
{
    if (se->cls == MQS_CLASS_FIFO)
        return;
    struct ule_rq *u = ule_state(rq);
    uint64_t cpu = se->stall_ns < ran_ns ? ran_ns - se->stall_ns : 0;
    se->slice_ns -= (int64_t)cpu;
    se->p[ULE_RUN] += cpu;
    if (u->nr > se->p[ULE_NR]) { /* rare: the queue grew */
        int64_t cap = ule_slice(u->tun, se, u->nr);
        se->p[ULE_NR] = u->nr;
        if (se->slice_ns > cap)
            se->slice_ns = cap;
    }
}

static int64_t ule_tick(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        uint64_t now)
{
    (void)rq;
    if (se->cls == MQS_CLASS_FIFO)
        return MQS_SLICE_NONE;
    return se->slice_ns - (int64_t)(now - se->exec_start_ns);
}

/* The hand-off (MQS_POLICY_WAKE_NEXT): the woken se runs now, as the
 * pick after its enqueue would have run it with nothing queued here: its
 * sleep counted, re-scored and placed (slice, level, part), and the
 * current and next parts swapped when the pick would have swapped them
 * (se placed in next, or the idle part, with current empty).  With
 * anything queued here the parts decide: enqueue and pick. */
static bool ule_run_woken(struct mqs_rq *rq, struct mqs_sched_entity *se)
{
    struct ule_rq *u = ule_state(rq);
    if (u->nr)
        return false;
    ule_add_sleep(se, mqs_sched_clock());
    ule_place(u, se);
    if (se->p[ULE_WHERE] != ULE_RT && se->p[ULE_WHERE] != u->curr)
        u->curr ^= ULE_TS0 ^ ULE_TS1;
    return true;
}

/* preempt_thresh: only realtime wake-ups preempt. */
static bool ule_wake_preempt(struct mqs_rq *rq, struct mqs_sched_entity *curr,
                             struct mqs_sched_entity *woken)
{
    (void)rq;
    return woken->prio < MQS_PRIO_NORMAL_MIN &&
           woken->prio < curr->level;
}

/* ----- placement and balancing ----- */

/* The least loaded worker se may use (an idle one counts as empty). */
static int ule_lowest(mqs_runtime_t *rt, const struct mqs_sched_entity *se,
                      int prefer, unsigned *load)
{
    int best = -1, n = mqs_nr_workers(rt);
    *load = UINT32_MAX;
    for (int i = 0; i < n; i++) {
        int w = (prefer + i) % n;
        if (!mqs_se_allowed(se, w))
            continue;
        unsigned l =
            mqs_worker_idle(rt, w) ? 0 : mqs_rq_nr_queued(mqs_rq_of(rt, w)) + 1;
        if (l < *load) {
            *load = l;
            best = w;
        }
    }
    return best;
}

/* sched_pickcpu: last worker if idle or still affine and se would lead
 * there; else the least loaded. */
static int ule_select_worker(mqs_runtime_t *rt, struct mqs_sched_entity *se,
                             int waker, int flags)
{
    (void)flags;
    const struct ule_tunables *t = mqs_policy_state(rt);
    int last = se->last_worker;
    if (last >= 0 && mqs_se_allowed(se, last)) {
        if (mqs_worker_claim_idle(rt, last))
            return last;
        bool affine = mqs_sched_clock() - se->slept_at_ns <
                      (uint64_t)t->affinity_ns;
        if (affine && se->level < mqs_rq_best_prio(mqs_rq_of(rt, last)))
            return last;
    }
    unsigned load;
    int w = ule_lowest(rt, se, last >= 0 ? last : waker >= 0 ? waker : 0,
                       &load);
    if (load == 0)
        mqs_worker_claim_idle(rt, w);
    return w;
}

static int ule_want(struct ule_rq *u, struct mqs_rq *rq, int why,
                    unsigned hi, unsigned lo)
{
    if (why != MQS_BALANCE_PERIODIC)
        return hi >= (unsigned)u->tun->steal_thresh ? 1 : 0;
    uint64_t now = mqs_rq_clock(rq);
    if (now < u->next_balance)
        return 0;
    u->next_balance = now + (uint64_t)u->tun->balance_ns;
    unsigned mine = mqs_rq_nr_queued(rq);
    return mine == lo && hi >= mine + 2 ? (int)(hi - mine) / 2 : 0;
}

static int ule_balance(struct mqs_rq *rq, int why)
{
    struct ule_rq *u = ule_state(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    int self = mqs_rq_worker(rq);
    unsigned hi, lo;
    int victim = mqs__rt_pull_busiest(rt, self, &hi, &lo);
    int want = victim < 0 ? 0 : ule_want(u, rq, why, hi, lo);
    if (want <= 0)
        return 0;
    struct mqs_sched_entity *got[ULE_STEAL_MAX];
    struct mqs__rt_pull_req req = {MQS_PRIO_LEVELS, self, UINT64_MAX, false};
    int n = mqs_rq_steal(rq, mqs_rq_of(rt, victim), why, ule_take, &req, got,
                         want < ULE_STEAL_MAX ? want : ULE_STEAL_MAX);
    if (n == 0) {
        u->next_balance = 0; /* victim's lock was busy: retry next time */
        return 0;
    }
    return mqs_rq_add_stolen_all(rq, got, n);
}

const struct mqs_policy mqs_policy_ule = {
    .name = "ule",
    .description = "FreeBSD ULE (2003): per-worker realtime/current/next/idle "
                   "queues, interactivity score, strong affinity, stealing",
    .flags = MQS_POLICY_WAKE_NEXT,
    .rq_size = sizeof(struct ule_rq),
    .rt_size = sizeof(struct ule_tunables),
    .tunables = ule_tunables,
    .init_rq = ule_init_rq,
    .task_new = ule_task_new,
    .select_worker = ule_select_worker,
    .enqueue = ule_enqueue,
    .dequeue = ule_dequeue,
    .pick = ule_pick,
    .yield = ule_yield,
    .put_prev = ule_put_prev,
    .tick = ule_tick,
    .wake_preempt = ule_wake_preempt,
    .balance = ule_balance,
    .run_woken = ule_run_woken,
};

#undef ULE_HALF
#undef ULE_STEAL_MAX
#undef ULE_SLICE_DIV_MAX
#undef ULE_RT
#undef ULE_TS0
#undef ULE_TS1
#undef ULE_IDLE
#undef ULE_PARTS
#undef ULE_WHERE
#undef ULE_SPARE
#undef ULE_RUN
#undef ULE_SLP
#undef ULE_NR
