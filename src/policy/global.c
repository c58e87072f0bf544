/*
 * global.c - the Linux 2.4 stock scheduler: one run queue for the whole
 * runtime under one lock, and a pick that scans every runnable task.
 *
 * This is the baseline the 2001 multi-queue scheduler was measured
 * against, kept faithful to its cost.  Every pick walks the whole queue
 * computing 2.4's goodness() for each task it may run here:
 *
 *   realtime (FIFO, RR)   1000 + rt priority
 *   normal, slice left    counter + 20 - nice (+ affinity_bonus, 2.4's
 *                         PROC_CHANGE_PENALTY, on the worker it last ran on)
 *   normal, yielded       -1 (SCHED_YIELD: after every other task, once)
 *   normal, slice spent   -2 (see below)
 *   idle class            -900 (2.4 had none: below every normal task)
 *
 * and runs the first task of the highest goodness (strictly greater wins,
 * so ties go to the one nearest the head of the list).  `counter` is the
 * remaining slice in ticks: NICE_TO_TICKS(nice) = (20 - nice) / 4 + 1 at
 * HZ=100 (6 ticks of tick_ns for nice 0), charged a whole tick per
 * tick_ns of run time.  2.4 ticked every 10 ms; the default tick here is
 * 0.25 ms (nice 0: 1.5 ms, near mq's 1 ms slices), so that a
 * recalculation period over a few tasks (the policy's no-starvation
 * bound) stays well inside the conformance suite's fairness windows;
 * tick_ns=10000000 gives 2.4's 60 ms slices.  When no task this worker may run has counter left
 * (and no realtime task waits), every counter is recomputed: counter =
 * counter / 2 + NICE_TO_TICKS(nice), and the scan starts again.  2.4 ran
 * that loop over every task in the system (for_each_task); here it runs
 * over every queued task, and tasks that are asleep or running elsewhere
 * apply the recalculations they missed (an epoch count) the next time
 * the policy touches them -- the same values, without a list of sleepers
 * (the policy is not told when a task exits, so it cannot keep one).
 *
 * The list keeps 2.4.x's order: tasks are added at the tail (the later
 * 2.4 add_to_runqueue, needed for FIFO/RR order within a priority), a
 * yield or an RR task whose counter ran out moves to the tail, a
 * preempted task keeps its place (here: the head, where it stays first
 * among equals).  FIFO tasks run until they block or yield; a yield of a
 * realtime task only moves it last, so it keeps the worker unless an
 * equal or more urgent one waits.
 *
 * One deliberate difference: in 2.4 a task that had spent its counter
 * (goodness 0) outranked a yielder (-1) and triggered the recalculation
 * even while the yielder still had counter, so tasks that yield often got
 * equal CPU whatever their nice.  Here a spent task ranks below a
 * yielder, so the recalculation comes only "when every runnable task's
 * counter is spent", and nice keeps its 2.4 meaning (slice length).
 *
 * The core's shared run-queue mode (MQS_POLICY_SHARED_RQ) gives the one
 * lock: every rq is guarded by worker 0's lock.  The queue lives in the
 * per-runtime state; each rq only publishes how many queued tasks its
 * worker may run, so a worker parks when there is nothing for it.
 *
 * Rejected: caching goodness or keeping the list sorted (that is the
 * multi-queue scheduler's job; this row exists to show the O(N) scan).
 */
#include <stddef.h>

#include "mqs/policy.h"
#include "kit.h"

#define GLOBAL_WORDS MQS__BITMAP_WORDS(MQS_PRIO_LEVELS)
#define GLOBAL_RT 1000
#define GLOBAL_YIELDED (-1)
#define GLOBAL_SPENT (-2)
#define GLOBAL_IDLE (-900)
#define GLOBAL_NONE (-1000)
#define GLOBAL_CATCHUP_MAX 16 /* counter converges after this many halvings */

/* se->p[] words (read by tests/test_policy_global.c) */
#define GLOBAL_COUNTER 0 /* remaining slice in ticks (2.4's p->counter) */
#define GLOBAL_RESIDUE 1 /* ns run since the last whole tick charged      */
#define GLOBAL_EPOCH 2   /* recalculations applied to counter             */
#define GLOBAL_TICKED 3  /* 1: tick asked for this reschedule, not a yield */
#define GLOBAL_HOME 4    /* worker it was first queued on, + 1           */

struct global_tunables {
    int64_t tick_ns;
    int64_t affinity_bonus;
};

/* The one run queue.  Every field is guarded by the shared rq lock. */
struct global_state {
    struct global_tunables tun; /* first: the core stores tunables here */
    struct mqs_list queue;      /* runqueue_head                         */
    unsigned nr;                /* tasks on queue                        */
    unsigned nr_any;            /* of them, allowed on every worker      */
    uint64_t epoch;             /* recalculations so far                 */
    unsigned level_nr[MQS_PRIO_LEVELS];
    uint64_t level_bits[GLOBAL_WORDS];
    mqs_runtime_t *rt;
};

/* Per worker: what only this worker's pick reads.  Shared lock. */
struct global_rq {
    struct global_state *g;
    const struct mqs_sched_entity *yielded; /* SCHED_YIELD for the next pick */
    unsigned nr_pinned; /* queued tasks with a mask, allowed here */
};

static const struct mqs_tunable global_tunables[] = {
    {"tick_ns", 100000, 1000000000, 250000,
     offsetof(struct global_tunables, tick_ns),
     "length of a tick; nice 0 gets 6 per recalculation (2.4: 10 ms)"},
    {"affinity_bonus", 0, 100, 15,
     offsetof(struct global_tunables, affinity_bonus),
     "goodness bonus on the worker a task last ran on (PROC_CHANGE_PENALTY)"},
    {NULL, 0, 0, 0, 0, NULL},
};

static struct global_rq *global_rq(struct mqs_rq *rq)
{
    return mqs_rq_state(rq);
}

static int global_init(mqs_runtime_t *rt, void *state)
{
    struct global_state *g = state;
    mqs__list_init(&g->queue);
    g->rt = rt;
    return 0;
}

static void global_init_rq(struct mqs_rq *rq)
{
    global_rq(rq)->g = mqs_policy_state(mqs_rq_runtime(rq));
}

/* 2.4's NICE_TO_TICKS at HZ < 200. */
static uint64_t global_ntt(int nice)
{
    return (uint64_t)((20 - nice) >> 2) + 1;
}

/* Apply the recalculations se missed while it was not queued. */
static void global_catch_up(const struct global_state *g,
                            struct mqs_sched_entity *se)
{
    uint64_t missed = g->epoch - se->p[GLOBAL_EPOCH];
    for (uint64_t i = 0; i < missed && i < GLOBAL_CATCHUP_MAX; i++)
        se->p[GLOBAL_COUNTER] = se->p[GLOBAL_COUNTER] / 2 +
                                global_ntt(se->nice);
    se->p[GLOBAL_EPOCH] = g->epoch;
}

/* Every counter: counter / 2 + NICE_TO_TICKS(nice).  O(N) by design. */
static void global_recalc(struct global_state *g)
{
    struct mqs_list *pos;
    g->epoch++;
    mqs__list_for_each(pos, &g->queue)
    {
        struct mqs_sched_entity *se =
            mqs_se_entry(pos, struct mqs_sched_entity, node);
        se->p[GLOBAL_COUNTER] = se->p[GLOBAL_COUNTER] / 2 +
                                global_ntt(se->nice);
        se->p[GLOBAL_EPOCH] = g->epoch;
    }
}

/* Charge ran_ns: a tick off the counter per tick_ns run. */
static void global_charge(const struct global_state *g,
                          struct mqs_sched_entity *se, uint64_t ran_ns)
{
    uint64_t tick = (uint64_t)g->tun.tick_ns;
    se->p[GLOBAL_RESIDUE] += ran_ns;
    while (se->p[GLOBAL_RESIDUE] >= tick && se->p[GLOBAL_COUNTER] > 0) {
        se->p[GLOBAL_RESIDUE] -= tick;
        se->p[GLOBAL_COUNTER]--;
    }
    if (se->p[GLOBAL_COUNTER] == 0)
        se->p[GLOBAL_RESIDUE] = 0;
}

/* 2.4's p->processor: the worker it last ran on; a task that never ran
 * has the one it was queued on (2.4 copied the parent's at fork). */
static int global_cpu(const struct mqs_sched_entity *se)
{
    return se->last_worker >= 0 ? se->last_worker
                                : (int)se->p[GLOBAL_HOME] - 1;
}

static int global_goodness(const struct global_rq *gr,
                           const struct mqs_sched_entity *se, int w)
{
    switch (se->cls) {
    case MQS_CLASS_FIFO:
    case MQS_CLASS_RR:
        return GLOBAL_RT + se->rt_priority;
    case MQS_CLASS_IDLE:
        return GLOBAL_IDLE;
    default:
        break;
    }
    int c = (int)se->p[GLOBAL_COUNTER];
    if (c == 0)
        return GLOBAL_SPENT;
    if (se == gr->yielded)
        return GLOBAL_YIELDED;
    if (global_cpu(se) == w)
        c += (int)gr->g->tun.affinity_bonus;
    return c + 20 - se->nice;
}

/* ----- the queue and its published summaries ----- */

/* Each worker's rq publishes the queued tasks that worker may run. */
static void global_publish(struct global_state *g)
{
    unsigned best = mqs__bit_first(g->level_bits, GLOBAL_WORDS,
                                   MQS_PRIO_NONE);
    int n = mqs_nr_workers(g->rt);
    for (int w = 0; w < n; w++) {
        struct mqs_rq *rq = mqs_rq_of(g->rt, w);
        mqs_rq_publish(rq, g->nr_any + global_rq(rq)->nr_pinned, best);
    }
}

static void global_count(struct global_state *g,
                         const struct mqs_sched_entity *se, int d)
{
    g->nr += (unsigned)d;
    if (d > 0 && g->level_nr[se->prio]++ == 0)
        mqs__bit_set(g->level_bits, se->prio);
    if (d < 0 && --g->level_nr[se->prio] == 0)
        mqs__bit_clear(g->level_bits, se->prio);
    if (se->any_worker) {
        g->nr_any += (unsigned)d;
        return;
    }
    int n = mqs_nr_workers(g->rt);
    for (int w = 0; w < n; w++)
        if (mqs_se_allowed(se, w))
            global_rq(mqs_rq_of(g->rt, w))->nr_pinned += (unsigned)d;
}

/* Where a re-queued task goes; also refills spent RR and idle slices
 * (2.4 refilled an RR task's counter and moved it last in schedule()). */
static bool global_at_head(struct global_rq *gr, struct mqs_sched_entity *se,
                           int flags)
{
    bool ticked = se->p[GLOBAL_TICKED] != 0;
    se->p[GLOBAL_TICKED] = 0;
    if (se->cls == MQS_CLASS_RR || se->cls == MQS_CLASS_IDLE) {
        if (se->p[GLOBAL_COUNTER] == 0) {
            se->p[GLOBAL_COUNTER] = global_ntt(se->nice);
            se->p[GLOBAL_RESIDUE] = 0;
            return false;
        }
    }
    if ((flags & MQS_ENQ_PREEMPTED) || ((flags & MQS_ENQ_YIELD) && ticked))
        return true;
    if ((flags & MQS_ENQ_YIELD) && se->cls == MQS_CLASS_NORMAL)
        gr->yielded = se;
    return false;
}

static void global_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                           int flags)
{
    struct global_rq *gr = global_rq(rq);
    struct global_state *g = gr->g;
    if (flags & MQS_ENQ_NEW) {
        se->p[GLOBAL_COUNTER] = global_ntt(se->nice);
        se->p[GLOBAL_EPOCH] = g->epoch;
        se->p[GLOBAL_HOME] = (uint64_t)mqs_rq_worker(rq) + 1;
    }
    global_catch_up(g, se);
    if (global_at_head(gr, se, flags))
        mqs__list_add_head(&g->queue, &se->node);
    else
        mqs__list_add_tail(&g->queue, &se->node);
    global_count(g, se, 1);
    global_publish(g);
}

static void global_remove(struct global_state *g, struct mqs_sched_entity *se)
{
    mqs__list_del(&se->node);
    global_count(g, se, -1);
    global_publish(g);
}

static void global_dequeue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                           int flags)
{
    (void)flags;
    struct global_rq *gr = global_rq(rq);
    if (gr->yielded == se)
        gr->yielded = NULL;
    global_remove(gr->g, se);
}

/* May this worker switch to se?  A task another worker has just queued
 * may still be on that worker's stack (on_cpu, until its context is
 * saved), and the shared queue lets every worker see it: 2.4 skipped it
 * the same way (can_schedule: cpus_runnable).  This worker's own
 * previous task (last ran here) is fine: picking it is no switch. */
static bool global_free(const struct mqs_sched_entity *se, int w)
{
    return se->last_worker == w || mqs_se_movable(se);
}

/* The 2.4 scan: the best goodness this worker may run; recalculate and
 * scan again when the best is a spent normal task. */
static struct mqs_sched_entity *global_pick(struct mqs_rq *rq)
{
    struct global_rq *gr = global_rq(rq);
    struct global_state *g = gr->g;
    int w = mqs_rq_worker(rq);
    struct mqs_sched_entity *next;
    for (;;) {
        int c = GLOBAL_NONE;
        struct mqs_list *pos;
        next = NULL;
        mqs__list_for_each(pos, &g->queue)
        {
            struct mqs_sched_entity *se =
                mqs_se_entry(pos, struct mqs_sched_entity, node);
            if (!mqs_se_allowed(se, w))
                continue;
            int weight = global_goodness(gr, se, w);
            if (weight > c && global_free(se, w)) {
                c = weight;
                next = se;
            }
        }
        if (c != GLOBAL_SPENT)
            break;
        global_recalc(g);
    }
    gr->yielded = NULL;
    if (next)
        global_remove(g, next);
    return next;
}

/* sched_yield's shortcut: nothing else is queued, so keep running (a
 * normal task with no counter left goes the long way, to recalculate). */
static struct mqs_sched_entity *global_yield(struct mqs_rq *rq,
                                             struct mqs_sched_entity *se)
{
    struct global_state *g = global_rq(rq)->g;
    if (g->nr != 0)
        return NULL;
    if (se->cls == MQS_CLASS_NORMAL && se->p[GLOBAL_COUNTER] == 0)
        return NULL;
    if (se->cls == MQS_CLASS_RR || se->cls == MQS_CLASS_IDLE) {
        if (se->p[GLOBAL_COUNTER] == 0)
            return NULL;
    }
    se->p[GLOBAL_TICKED] = 0;
    return se;
}

static void global_put_prev(struct mqs_rq *rq, struct mqs_sched_entity *se,
                            uint64_t ran_ns)
{
    struct global_state *g = global_rq(rq)->g;
    global_catch_up(g, se);
    if (se->cls != MQS_CLASS_FIFO)
        global_charge(g, se, ran_ns);
}

/* The counter ran out (2.4's update_process_times set need_resched). */
static int64_t global_tick(struct mqs_rq *rq, struct mqs_sched_entity *se,
                           uint64_t now)
{
    if (se->cls == MQS_CLASS_FIFO)
        return MQS_SLICE_NONE;
    uint64_t tick = (uint64_t)global_rq(rq)->g->tun.tick_ns;
    uint64_t ran = now - se->exec_start_ns + se->p[GLOBAL_RESIDUE];
    if (se->p[GLOBAL_COUNTER] * tick > ran)
        return (int64_t)(se->p[GLOBAL_COUNTER] * tick - ran);
    se->p[GLOBAL_TICKED] = 1;
    return 0;
}

/* 2.4's preemption_goodness() > 0, on this worker. */
static bool global_wake_preempt(struct mqs_rq *rq,
                                struct mqs_sched_entity *curr,
                                struct mqs_sched_entity *woken)
{
    struct global_rq *gr = global_rq(rq);
    int w = mqs_rq_worker(rq);
    return global_goodness(gr, woken, w) > global_goodness(gr, curr, w);
}

const struct mqs_policy mqs_policy_global = {
    .name = "global",
    .description = "Linux 2.4 stock scheduler: one queue, one lock, O(N) "
                   "goodness scan, counters recalculated for everyone",
    .flags = MQS_POLICY_SHARED_RQ,
    .rq_size = sizeof(struct global_rq),
    .rt_size = sizeof(struct global_state),
    .tunables = global_tunables,
    .init = global_init,
    .init_rq = global_init_rq,
    .enqueue = global_enqueue,
    .dequeue = global_dequeue,
    .pick = global_pick,
    .yield = global_yield,
    .put_prev = global_put_prev,
    .tick = global_tick,
    .wake_preempt = global_wake_preempt,
};

#undef GLOBAL_WORDS
#undef GLOBAL_RT
#undef GLOBAL_YIELDED
#undef GLOBAL_SPENT
#undef GLOBAL_IDLE
#undef GLOBAL_NONE
#undef GLOBAL_CATCHUP_MAX
#undef GLOBAL_COUNTER
#undef GLOBAL_RESIDUE
#undef GLOBAL_EPOCH
#undef GLOBAL_TICKED
#undef GLOBAL_HOME
