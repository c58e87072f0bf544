/*
 * ws.c - work stealing, the throughput baseline of the Go runtime and of
 * Tokio (docs/policies/ws.md has the sources and the bound in full).
 *
 * Per worker: a FIFO of normal tasks and a LIFO slot.  A woken task goes
 * into the slot and runs next (a producer hands its data to the consumer
 * while it is in cache); the task it displaces goes to the FIFO tail.  At
 * most lifo_max slot picks in a row (Tokio's 3), so two tasks waking each
 * other cannot starve the FIFO.  A FIFO longer than local_max sends its
 * older half to a global queue (Go's runqputslow), which every
 * global_check_interval-th pick looks at first (Go's schedtick % 61).  An
 * idle worker takes a share of the global queue, else steals steal_pct
 * (half) of a random victim's FIFO.  No periodic balancer, no nice, no
 * weights, no slices: picks are the only currency, and a FIFO task at
 * position k runs within k * (lifo_max + 1) picks of its worker.
 *
 * docs/design.md's class order is kept on a rare side path: realtime and
 * idle-class tasks live in a priority array (src/prio_array.h) beside the
 * ws queues; RT levels are served before the slot, an RT task more urgent
 * than anything here is pulled from another worker (the core's level
 * hint says when), and idle-class tasks run only when no normal task can
 * be had even by stealing.  Normal work publishes one level
 * (MQS_PRIO_IDLE - 1), so a checkpoint never yields to another normal
 * task on account of nice.
 *
 * The global queue lives in the per-runtime state under its own lock,
 * taken after any rq lock.  Its tasks stay queued, in the core's terms,
 * on the rq they overflowed from (se->p[1]) and count in its published
 * length (so that worker does not park while they wait); another worker
 * takes them through mqs_rq_steal on that rq, which keeps the core's
 * checks on pick and dequeue exact.
 *
 * Rejected: Go's lock-free ring (the core holds the rq lock at every op
 * anyway); stealing the slot (Go does so only after a 3 us back-off);
 * honouring nice in the FIFO (that is mq).
 */
#include <stddef.h>

#include "mqs/policy.h"
#include "kit.h"

#define WS_BATCH 64                       /* most tasks moved at once */
#define WS_NORMAL_LVL (MQS_PRIO_IDLE - 1) /* level normal work publishes */

enum ws_where { WS_NONE = 0, WS_FIFO, WS_SLOT, WS_ARRAY, WS_GLOBAL };
enum ws_mode { WS_TAKE_FIFO, WS_TAKE_ARRAY, WS_TAKE_GLOBAL };

/* se->p[0]: where it is queued (enum ws_where); se->p[1]: for WS_GLOBAL,
 * the worker whose rq it counts on. */
struct ws_global {
    int64_t local_max;
    int64_t global_check_interval;
    int64_t steal_pct;
    int64_t lifo_max;
    int64_t preempt_ns;
    int64_t rr_slice_ns;
    mqs__spinlock_t lock; /* guards q; taken after any rq lock */
    struct mqs_list q;
    atomic_uint nr;       /* length of q: written under lock, peeked */
};

struct ws_rq {
    struct mqs_list fifo;          /* normal tasks, oldest first       */
    unsigned nfifo;
    struct mqs_sched_entity *slot; /* LIFO slot: the last woken task   */
    unsigned lifo_run;             /* picks from the slot in a row     */
    unsigned nglobal;              /* tasks in the global queue counted here */
    uint64_t countdown;            /* picks to the next global check   */
    uint64_t rng;
    struct ws_global *g;
    struct mqs__prio_array special; /* realtime and idle-class tasks   */
};

static const struct mqs_tunable ws_tunables[] = {
    {"local_max", 2, 1 << 20, 256, offsetof(struct ws_global, local_max),
     "FIFO length past which half of it goes to the global queue"},
    {"global_check_interval", 1, 1 << 20, 61,
     offsetof(struct ws_global, global_check_interval),
     "every n-th pick looks at the global queue first (Go: 61)"},
    {"steal_pct", 1, 100, 50, offsetof(struct ws_global, steal_pct),
     "percent of a victim's FIFO an idle worker steals"},
    {"lifo_max", 0, 1 << 20, 3, offsetof(struct ws_global, lifo_max),
     "picks in a row from the LIFO slot (0: no slot; Tokio: 3)"},
    {"preempt_ns", 0, 10000000000, 10000000,
     offsetof(struct ws_global, preempt_ns),
     "a normal task asked to yield at a checkpoint after this (0: never)"},
    {"rr_slice_ns", 100000, 1000000000, 100000000,
     offsetof(struct ws_global, rr_slice_ns), "SCHED_RR time slice"},
    {NULL, 0, 0, 0, 0, NULL},
};

struct ws_take_req {
    int mode;       /* enum ws_mode */
    int dest;       /* worker the tasks go to */
    unsigned below; /* WS_TAKE_ARRAY: only levels more urgent than this */
};

static struct ws_rq *ws_state(struct mqs_rq *rq)
{
    return mqs_rq_state(rq);
}

static int ws_init(mqs_runtime_t *rt, void *state)
{
    (void)rt;
    struct ws_global *g = state;
    mqs__spin_init(&g->lock);
    mqs__list_init(&g->q);
    return 0;
}

static void ws_init_rq(struct mqs_rq *rq)
{
    struct ws_rq *m = ws_state(rq);
    mqs__list_init(&m->fifo);
    mqs__parr_init(&m->special);
    m->g = mqs_policy_state(mqs_rq_runtime(rq));
    m->countdown = (uint64_t)m->g->global_check_interval;
    m->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(mqs_rq_worker(rq) + 1);
}

static unsigned ws_nnormal(const struct ws_rq *m)
{
    return m->nfifo + (m->slot != NULL) + m->nglobal;
}

static void ws_publish(struct mqs_rq *rq)
{
    struct ws_rq *m = ws_state(rq);
    unsigned best = mqs__parr_best(&m->special);
    if (ws_nnormal(m) && (best == MQS_PRIO_NONE || best > WS_NORMAL_LVL))
        best = WS_NORMAL_LVL;
    mqs_rq_publish(rq, m->special.nr + ws_nnormal(m), best);
}

static void ws_fifo_add(struct ws_rq *m, struct mqs_sched_entity *se)
{
    mqs__list_add_tail(&m->fifo, &se->node);
    se->p[0] = WS_FIFO;
    m->nfifo++;
}

static struct mqs_sched_entity *ws_fifo_pop(struct ws_rq *m)
{
    struct mqs_sched_entity *se =
        mqs_se_entry(m->fifo.next, struct mqs_sched_entity, node);
    mqs__list_del(&se->node);
    se->p[0] = WS_NONE;
    m->nfifo--;
    return se;
}

/* The FIFO grew past local_max: its older half goes to the global queue. */
static void ws_overflow(struct mqs_rq *rq, struct ws_rq *m)
{
    if (m->nfifo <= (unsigned)m->g->local_max)
        return;
    unsigned half = m->nfifo / 2, moved = 0;
    struct mqs_list *pos, *tmp;
    mqs__spin_lock(&m->g->lock);
    mqs__list_for_each_safe(pos, tmp, &m->fifo)
    {
        struct mqs_sched_entity *se =
            mqs_se_entry(pos, struct mqs_sched_entity, node);
        if (moved == half)
            break;
        if (!se->any_worker)
            continue;
        mqs__list_del(&se->node);
        mqs__list_add_tail(&m->g->q, &se->node);
        se->p[0] = WS_GLOBAL;
        se->p[1] = (uint64_t)mqs_rq_worker(rq);
        moved++;
    }
    atomic_store_explicit(&m->g->nr, atomic_load(&m->g->nr) + moved,
                          memory_order_relaxed);
    mqs__spin_unlock(&m->g->lock);
    m->nfifo -= moved;
    m->nglobal += moved;
}

static void ws_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       int flags)
{
    struct ws_rq *m = ws_state(rq);
    if (se->cls != MQS_CLASS_NORMAL) {
        bool head = se->cls == MQS_CLASS_FIFO && (flags & MQS_ENQ_PREEMPTED);
        mqs__parr_add(&m->special, se, se->prio, head);
        se->p[0] = WS_ARRAY;
    } else if ((flags & MQS_ENQ_WAKEUP) && m->g->lifo_max > 0) {
        if (m->slot)
            ws_fifo_add(m, m->slot);
        m->slot = se;
        se->p[0] = WS_SLOT;
    } else {
        ws_fifo_add(m, se);
    }
    ws_overflow(rq, m);
    ws_publish(rq);
}

static void ws_global_del(struct ws_global *g, struct mqs_sched_entity *se)
{
    mqs__list_del(&se->node);
    atomic_store_explicit(&g->nr, atomic_load(&g->nr) - 1,
                          memory_order_relaxed);
    se->p[0] = WS_NONE;
}

static void ws_dequeue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       int flags)
{
    (void)flags;
    struct ws_rq *m = ws_state(rq);
    switch (se->p[0]) {
    case WS_FIFO:
        mqs__list_del(&se->node);
        m->nfifo--;
        break;
    case WS_SLOT:
        m->slot = NULL;
        break;
    case WS_ARRAY:
        mqs__parr_del(&m->special, se, se->prio);
        break;
    case WS_GLOBAL:
        mqs__spin_lock(&m->g->lock);
        ws_global_del(m->g, se);
        mqs__spin_unlock(&m->g->lock);
        m->nglobal--;
        break;
    }
    se->p[0] = WS_NONE;
    ws_publish(rq);
}

/* ----- taking tasks (victim's lock held, or our own for the global
 * tasks that count on us) ----- */

static bool ws_can_take(const struct mqs_sched_entity *se, int dest)
{
    return mqs_se_allowed(se, dest) && mqs_se_movable(se);
}

/* Global tasks that count on worker `owner`, from the head. */
static int ws_take_global(struct ws_rq *om, int owner, int dest,
                          struct mqs_sched_entity **out, int max)
{
    int n = 0, seen = 0;
    struct mqs_list *pos, *tmp;
    mqs__spin_lock(&om->g->lock);
    mqs__list_for_each_safe(pos, tmp, &om->g->q)
    {
        struct mqs_sched_entity *se =
            mqs_se_entry(pos, struct mqs_sched_entity, node);
        if (n == max || ++seen > 4 * WS_BATCH)
            break;
        if (se->p[1] != (uint64_t)owner ||
            (owner != dest && !ws_can_take(se, dest)))
            continue;
        ws_global_del(om->g, se);
        out[n++] = se;
    }
    mqs__spin_unlock(&om->g->lock);
    om->nglobal -= (unsigned)n;
    return n;
}

static int ws_take_fifo(struct ws_rq *m, int dest,
                        struct mqs_sched_entity **out, int max)
{
    int want = (int)((m->nfifo * (unsigned)m->g->steal_pct + 99) / 100);
    int n = 0;
    struct mqs_list *pos, *tmp;
    mqs__list_for_each_safe(pos, tmp, &m->fifo)
    {
        struct mqs_sched_entity *se =
            mqs_se_entry(pos, struct mqs_sched_entity, node);
        if (n == want || n == max)
            break;
        if (!ws_can_take(se, dest))
            continue;
        mqs__list_del(&se->node);
        se->p[0] = WS_NONE;
        m->nfifo--;
        out[n++] = se;
    }
    return n;
}

static int ws_take_array(struct ws_rq *m, const struct ws_take_req *req,
                         struct mqs_sched_entity **out, int max)
{
    struct mqs__rt_pull_req r = {req->below, req->dest, UINT64_MAX, false};
    int n = mqs__rt_pull_take(&m->special, &r, out, 0, max);
    for (int i = 0; i < n; i++)
        out[i]->p[0] = WS_NONE;
    return n;
}

static int ws_take(struct mqs_rq *victim, void *arg,
                   struct mqs_sched_entity **out, int max)
{
    const struct ws_take_req *req = arg;
    struct ws_rq *m = ws_state(victim);
    int n = req->mode == WS_TAKE_FIFO    ? ws_take_fifo(m, req->dest, out, max)
            : req->mode == WS_TAKE_ARRAY ? ws_take_array(m, req, out, max)
            : ws_take_global(m, mqs_rq_worker(victim), req->dest, out, max);
    ws_publish(victim);
    return n;
}

/* A batch from the global queue into an empty local one: a fair share
 * (len / workers + 1), at most half of local_max, so that the batch
 * cannot overflow straight back (Go's globrunqget).  Taking a whole
 * batch at every periodic check instead let tasks bounce between the
 * queues without ever being first: some starved for ever. */
static int ws_batch_max(struct mqs_rq *rq)
{
    const struct ws_global *g = ws_state(rq)->g;
    unsigned n = atomic_load_explicit(&g->nr, memory_order_relaxed) /
                     (unsigned)mqs_nr_workers(mqs_rq_runtime(rq)) + 1;
    unsigned half = (unsigned)g->local_max / 2;
    n = n < half ? n : half;
    n = n < WS_BATCH ? n : WS_BATCH;
    return n ? (int)n : 1;
}

/* Queue here what was taken: stolen ones through the core, our own
 * global ones straight into the FIFO (they count on us already). */
static void ws_keep(struct mqs_rq *rq, struct mqs_sched_entity **v, int from,
                    int n, bool stolen)
{
    for (int i = from; i < n; i++) {
        if (stolen)
            mqs_rq_add_stolen(rq, v[i]);
        else
            ws_fifo_add(ws_state(rq), v[i]);
    }
}

/* Tasks from the global queue, at most `max` (1 for the periodic check,
 * else batch_max), for one owner at a time: ours directly, another's
 * through mqs_rq_steal on its rq.  Returns how many; *stolen says which. */
static int ws_global_get(struct mqs_rq *rq, int why, int max,
                         struct mqs_sched_entity **out, bool *stolen)
{
    struct ws_rq *m = ws_state(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    if (atomic_load_explicit(&m->g->nr, memory_order_relaxed) == 0)
        return 0;
    int self = mqs_rq_worker(rq), owner = -1;
    mqs__spin_lock(&m->g->lock);
    if (!mqs__list_empty(&m->g->q))
        owner = (int)mqs_se_entry(m->g->q.next, struct mqs_sched_entity, node)
                    ->p[1];
    mqs__spin_unlock(&m->g->lock);
    *stolen = owner >= 0 && owner != self;
    if (*stolen) {
        struct ws_take_req req = {WS_TAKE_GLOBAL, self, 0};
        int n = mqs_rq_steal(rq, mqs_rq_of(rt, owner), why, ws_take, &req,
                             out, max);
        if (n > 0)
            return n;
        *stolen = false; /* its owner is busy: look for ours */
    }
    if (m->nglobal == 0)
        return 0;
    int n = ws_take_global(m, self, self, out, max);
    ws_publish(rq);
    return n;
}

/* Steal for an idle worker: the global queue first, then steal_pct of a
 * random victim's FIFO, then any RT or idle-class task.  rq's lock held.
 * Returns the number of tasks now queued here in addition. */
static int ws_steal(struct mqs_rq *rq, int why)
{
    struct ws_rq *m = ws_state(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    struct mqs_sched_entity *got[WS_BATCH];
    bool stolen;
    int n = ws_global_get(rq, why, ws_batch_max(rq), got, &stolen);
    if (n > 0) {
        ws_keep(rq, got, 0, n, stolen);
        ws_publish(rq);
        return n;
    }
    int self = mqs_rq_worker(rq), nw = mqs_nr_workers(rt);
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    int start = (int)(m->rng % (uint64_t)nw);
    for (int mode = WS_TAKE_FIFO; mode <= WS_TAKE_ARRAY; mode++)
        for (int i = 0; i < nw; i++) {
            int v = (start + i) % nw;
            struct mqs_rq *vrq = mqs_rq_of(rt, v);
            if (v == self || mqs_rq_nr_queued(vrq) == 0)
                continue;
            struct ws_take_req req = {mode, self, MQS_PRIO_LEVELS};
            n = mqs_rq_steal(rq, vrq, why, ws_take, &req, got,
                             mode == WS_TAKE_FIFO ? WS_BATCH : 1);
            if (n > 0) {
                ws_keep(rq, got, 0, n, true);
                return n;
            }
        }
    return 0;
}

/* ----- pick ----- */

/* rt_pull.h's take request, as a ws take of the priority array. */
static int ws_take_rt(struct mqs_rq *victim, void *arg,
                      struct mqs_sched_entity **out, int max)
{
    const struct mqs__rt_pull_req *r = arg;
    struct ws_take_req req = {WS_TAKE_ARRAY, r->dest, r->below};
    return ws_take(victim, &req, out, max);
}

/* An RT task queued elsewhere more urgent than anything here? */
static struct mqs_sched_entity *ws_pull_rt(struct mqs_rq *rq, struct ws_rq *m)
{
    unsigned local = mqs__parr_best(&m->special);
    if (ws_nnormal(m) && local > WS_NORMAL_LVL)
        local = WS_NORMAL_LVL;
    return mqs__rt_pull(rq, mqs_level_hint(mqs_rq_runtime(rq)), local, ws_take_rt);
}

/* The slot (at most lifo_max times in a row), else the FIFO head. */
static struct mqs_sched_entity *ws_local_get(struct ws_rq *m)
{
    struct mqs_sched_entity *se = m->slot;
    if (se && (m->lifo_run < (uint64_t)m->g->lifo_max || !m->nfifo)) {
        m->slot = NULL;
        se->p[0] = WS_NONE;
        m->lifo_run++;
        return se;
    }
    m->lifo_run = 0;
    return m->nfifo ? ws_fifo_pop(m) : NULL;
}

/* From the global queue: run the first, queue the rest here. */
static struct mqs_sched_entity *ws_from_global(struct mqs_rq *rq, int why,
                                               int max)
{
    struct mqs_sched_entity *got[WS_BATCH];
    bool stolen;
    int n = ws_global_get(rq, why, max, got, &stolen);
    if (n <= 0)
        return NULL;
    ws_keep(rq, got, 1, n, stolen);
    ws_publish(rq);
    return got[0];
}

static struct mqs_sched_entity *ws_pick(struct mqs_rq *rq)
{
    struct ws_rq *m = ws_state(rq);
    bool global_first = --m->countdown == 0;
    if (global_first)
        m->countdown = (uint64_t)m->g->global_check_interval;
    struct mqs_sched_entity *se = ws_pull_rt(rq, m);
    if (se)
        return se;
    if (mqs__parr_best(&m->special) < MQS_PRIO_NORMAL_MIN) {
        se = mqs__parr_pop(&m->special);
    } else {
        if (global_first) /* one task, as Go's globrunqget(pp, 1) */
            se = ws_from_global(rq, MQS_BALANCE_PERIODIC, 1);
        if (!se)
            se = ws_local_get(m);
        if (!se)
            se = ws_from_global(rq, MQS_BALANCE_NEWIDLE, ws_batch_max(rq));
        /* Idle-class tasks only when no normal task can be had. */
        if (!se && m->special.nr && ws_steal(rq, MQS_BALANCE_NEWIDLE) > 0)
            se = ws_local_get(m);
        if (!se && m->special.nr)
            se = mqs__parr_pop(&m->special);
    }
    if (se)
        se->p[0] = WS_NONE;
    ws_publish(rq);
    return se;
}

/* Yield fast path: a normal task with nothing urgent anywhere, no slot
 * and no global check due rotates to the FIFO tail behind the head. */
static struct mqs_sched_entity *ws_yield(struct mqs_rq *rq,
                                         struct mqs_sched_entity *se)
{
    struct ws_rq *m = ws_state(rq);
    if (se->cls != MQS_CLASS_NORMAL || m->slot ||
        (m->special.nr &&
         mqs__parr_best(&m->special) < MQS_PRIO_NORMAL_MIN) ||
        m->nfifo + 1 > (unsigned)m->g->local_max ||
        mqs__rt_pull_due(mqs_level_hint(mqs_rq_runtime(rq)), MQS_PRIO_NORMAL_MIN))
        return NULL;
    if (m->countdown == 1 &&
        atomic_load_explicit(&m->g->nr, memory_order_relaxed))
        return NULL; /* pick looks at the global queue first this time */
    if (--m->countdown == 0)
        m->countdown = (uint64_t)m->g->global_check_interval;
    m->lifo_run = 0;
    if (!m->nfifo)
        return se;
    struct mqs_sched_entity *next = ws_fifo_pop(m);
    ws_fifo_add(m, se);
    return next;
}

/* ----- the other ops ----- */

/* Go and Tokio run a woken task on the waker's worker (the slot); RT
 * and idle-class tasks, and wake-ups from outside, take the default. */
static int ws_select_worker(mqs_runtime_t *rt, struct mqs_sched_entity *se,
                            int waker, int flags)
{
    if (se->cls == MQS_CLASS_NORMAL && waker >= 0 &&
        (flags & (MQS_ENQ_WAKEUP | MQS_ENQ_NEW)) &&
        mqs_se_allowed(se, waker))
        return waker;
    return mqs_select_default(rt, se, waker, flags);
}

static int64_t ws_tick(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       uint64_t now)
{
    const struct ws_global *g = ws_state(rq)->g;
    int64_t ran = (int64_t)(now - se->exec_start_ns);
    if (se->cls == MQS_CLASS_FIFO)
        return MQS_SLICE_NONE;
    if (se->cls == MQS_CLASS_RR)
        return g->rr_slice_ns - ran;
    return g->preempt_ns > 0 ? g->preempt_ns - ran : MQS_SLICE_NONE;
}

/* Class order only: nice means nothing here. */
static unsigned ws_rank(const struct mqs_sched_entity *se)
{
    return se->cls == MQS_CLASS_NORMAL ? WS_NORMAL_LVL : se->prio;
}

static bool ws_wake_preempt(struct mqs_rq *rq, struct mqs_sched_entity *curr,
                            struct mqs_sched_entity *woken)
{
    (void)rq;
    return ws_rank(woken) < ws_rank(curr);
}

static int ws_balance(struct mqs_rq *rq, int why)
{
    if (why == MQS_BALANCE_PERIODIC)
        return 0; /* work moves only to a worker that runs dry */
    mqs_rq_lock(rq);
    int n = ws_steal(rq, why);
    mqs_rq_unlock(rq);
    return n;
}

const struct mqs_policy mqs_policy_ws = {
    .name = "ws",
    .description = "work stealing (Go, Tokio): per-worker FIFO with a LIFO "
                   "slot, random-victim stealing of half a queue, global "
                   "overflow queue; no nice or weights",
    .flags = MQS_POLICY_TICK_ACCOUNTING,
    .rq_size = sizeof(struct ws_rq),
    .rt_size = sizeof(struct ws_global),
    .tunables = ws_tunables,
    .init = ws_init,
    .init_rq = ws_init_rq,
    .select_worker = ws_select_worker,
    .enqueue = ws_enqueue,
    .dequeue = ws_dequeue,
    .yield = ws_yield,
    .pick = ws_pick,
    .tick = ws_tick,
    .wake_preempt = ws_wake_preempt,
    .balance = ws_balance,
};

#undef WS_BATCH
#undef WS_NORMAL_LVL
