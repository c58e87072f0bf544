/*
 * o1.c - Ingo Molnar's O(1) scheduler as it stood in Linux 2.6.0.
 *
 * Each worker has two priority arrays, active and expired (141 FIFO lists
 * and a bitmap each, src/prio_array.h).  A pick is a find-first-set in
 * the active array; when it runs empty the arrays swap, which hands every
 * expired task a new slice at once (2.4 needed a loop over all tasks).
 * Slices go by static priority (10..200 ms, nice 0 ~102 ms).  sleep_avg
 * grows with sleep and shrinks with run time; it gives a dynamic
 * priority bonus of -5..+5.  A task whose slice runs out goes to the
 * expired array unless it is interactive (TASK_INTERACTIVE), and even
 * then once the expired array has waited starvation_ns per queued task
 * (EXPIRED_STARVING).  Sync wake-ups put the woken task on the waker's
 * worker without preempting; a child spawned by a task runs first.  An
 * idle worker pulls half of the busiest queue; every balance_ns a worker
 * pulls when the busiest is imbalance_pct longer, expired (cold) tasks
 * first, skipping cache-hot ones until cache_nice_tries tries in a row
 * moved nothing (2.6.7's aggressive migration: tasks that yield in a
 * loop are always hot, and 2.6.0's rule could leave a random 6/2 split
 * of eight of them on two workers).  Not 2.6.0 either (Linux added RT
 * push/pull in 2.6.25), for invariant 2 (docs/design.md): pick first
 * takes a more urgent realtime task queued on another worker
 * (src/rt_pull.h; rt_pull=0 off).
 *
 * Yield: 2.6.0 moved a yielding task to the expired array, which made
 * nice meaningless for tasks that yield (yield_expired=1 keeps that);
 * the default rotates it within its level in the active array, as the
 * 2.5 patches did, and the yield op does that rotation in place.
 * Rejected: 2.6.0's interactive_credit and TIMESLICE_GRANULARITY (more
 * state for heuristics the brief does not ask for).  Details and sources
 * in docs/policies/o1.md.
 */
#include <stddef.h>

#include "mqs/policy.h"
#include "kit.h"

#define O1_MAX_BONUS 10
#define O1_STEAL_MAX 16
#define O1_PREFETCH_NR 32 /* queued tasks from which a yield prefetches */
#define O1_CHILD_PENALTY 95

/* se->p[] words */
#define O1_ARRAY 0     /* index of the array it is queued in            */
#define O1_FIRST 1     /* first slice, ns, set by task_new; 0: a full one */
#define O1_SLEEP_AVG 2 /* ns                                            */
#define O1_SYNC 3      /* 1: queued by a sync wake-up (no preemption)   */

struct o1_tunables {
    int64_t min_slice_ns;
    int64_t max_slice_ns;
    int64_t max_sleep_avg_ns;
    int64_t starvation_ns;
    int64_t sync_wakeup;
    int64_t child_first;
    int64_t yield_expired;
    int64_t balance_ns;
    int64_t imbalance_pct;
    int64_t cache_hot_ns;
    int64_t cache_nice_tries;
    int64_t rt_pull;
    int64_t outside_sleep_pct;
};

/* A worker's queue: every field under its rq lock except child_pending,
 * which the owner's tick reads without it. */
struct o1_rq {
    struct mqs__prio_array arrays[2];
    struct mqs__prio_array *active, *expired;
    unsigned active_idx;    /* active == &arrays[active_idx]          */
    unsigned nr;            /* queued, both arrays                    */
    uint64_t expired_since; /* when expired became non-empty, 0: empty */
    uint64_t next_balance;  /* owner only                             */
    unsigned balance_failed; /* owner only: periodic tries that found an
                                imbalance and moved nothing, in a row */
    atomic_int child_pending;
    const struct o1_tunables *tun;
    const _Atomic uint64_t *rt_hint; /* for pulls (mqs__rt_pull_hint) */
};

static const struct mqs_tunable o1_tunables[] = {
    {"min_slice_ns", 100000, 1000000000, 10000000,
     offsetof(struct o1_tunables, min_slice_ns),
     "MIN_TIMESLICE: slice of a nice 19 task, and the first slice of "
     "a task spawned from outside the runtime"},
    {"max_slice_ns", 100000, 10000000000, 200000000,
     offsetof(struct o1_tunables, max_slice_ns),
     "MAX_TIMESLICE: slice of a nice -20 task"},
    {"max_sleep_avg_ns", 1000000, 100000000000, 1000000000,
     offsetof(struct o1_tunables, max_sleep_avg_ns),
     "MAX_SLEEP_AVG: sleep history that earns the full +5 bonus"},
    {"starvation_ns", 0, 100000000000, 1000000000,
     offsetof(struct o1_tunables, starvation_ns),
     "STARVATION_LIMIT per queued task; 0 turns the check off"},
    {"sync_wakeup", 0, 2, 1, offsetof(struct o1_tunables, sync_wakeup),
     "0 off, 1 MQS_ENQ_SYNC wake-ups, 2 every wake-up by a task: the "
     "woken task goes to the waker's worker and does not preempt"},
    {"child_first", 0, 1, 1, offsetof(struct o1_tunables, child_first),
     "a child spawned by a task runs before its parent continues"},
    {"yield_expired", 0, 1, 0, offsetof(struct o1_tunables, yield_expired),
     "1: a yield moves a normal task to the expired array (2.6.0)"},
    {"balance_ns", 100000, 10000000000, 200000000,
     offsetof(struct o1_tunables, balance_ns),
     "BUSY_REBALANCE_TICK: periodic balancing interval"},
    {"imbalance_pct", 0, 1000, 25, offsetof(struct o1_tunables, imbalance_pct),
     "periodic balancing needs the busiest queue this much longer"},
    {"cache_hot_ns", 0, 1000000000, 1000000,
     offsetof(struct o1_tunables, cache_hot_ns),
     "periodic balancing leaves tasks queued less than this long"},
    {"cache_nice_tries", 0, 1000000000, 1,
     offsetof(struct o1_tunables, cache_nice_tries),
     "periodic balancing moves cache-hot tasks after this many tries in a "
     "row moved nothing (2.6.7's nr_balance_failed; 1000000000: 2.6.0, "
     "never)"},
    {"rt_pull", 0, 1, 1, offsetof(struct o1_tunables, rt_pull),
     "pick takes a more urgent realtime task from another worker (0: 2.6.0, "
     "which had no realtime pull)"},
    {"outside_sleep_pct", 0, 100, 0,
     offsetof(struct o1_tunables, outside_sleep_pct),
     "the sleep history, in % of max_sleep_avg_ns, of the parent a task "
     "spawned from outside the runtime inherits from (less CHILD_PENALTY); "
     "100: a program's main thread, which has mostly slept (not the "
     "default: yield-loop tasks started so were unfair, docs/policies/o1.md)"},
    {NULL, 0, 0, 0, 0, NULL},
};

static struct o1_rq *o1_state(struct mqs_rq *rq)
{
    return mqs_rq_state(rq);
}

static void o1_init_rq(struct mqs_rq *rq)
{
    struct o1_rq *o = o1_state(rq);
    mqs__parr_init(&o->arrays[0]);
    mqs__parr_init(&o->arrays[1]);
    o->active = &o->arrays[0];
    o->expired = &o->arrays[1];
    o->tun = mqs_policy_state(mqs_rq_runtime(rq));
    o->rt_hint = mqs__rt_pull_hint(mqs_rq_runtime(rq), o->tun->rt_pull);
}

/* ----- priorities and slices ----- */

static int64_t o1_timeslice(const struct o1_tunables *t,
                            const struct mqs_sched_entity *se)
{
    int64_t stat = MQS_PRIO_NICE0 + se->nice; /* RT: by nice, as 2.6.0 */
    return t->min_slice_ns + (t->max_slice_ns - t->min_slice_ns) *
                                 (MQS_PRIO_IDLE - 1 - stat) / 39;
}

static int o1_bonus(const struct o1_tunables *t,
                    const struct mqs_sched_entity *se)
{
    uint64_t b = se->p[O1_SLEEP_AVG] * O1_MAX_BONUS /
                 (uint64_t)t->max_sleep_avg_ns;
    return (int)(b > O1_MAX_BONUS ? O1_MAX_BONUS : b) - O1_MAX_BONUS / 2;
}

static unsigned o1_effective_prio(const struct o1_tunables *t,
                                  const struct mqs_sched_entity *se)
{
    if (se->cls != MQS_CLASS_NORMAL)
        return se->prio;
    int p = se->prio - o1_bonus(t, se);
    if (p < MQS_PRIO_NORMAL_MIN)
        p = MQS_PRIO_NORMAL_MIN;
    if (p > MQS_PRIO_IDLE - 1)
        p = MQS_PRIO_IDLE - 1;
    return (unsigned)p;
}

/* The level se is queued at: dynamic for normal tasks, static others
 * (o1_effective_prio, kept in se->level, which the core compares with
 * what the queues publish). */
static unsigned o1_level(const struct mqs_sched_entity *se)
{
    return se->level;
}

static bool o1_interactive(const struct mqs_sched_entity *se)
{
    int delta = se->nice * O1_MAX_BONUS / 40 + 2;
    return (int)se->level <= se->prio - delta;
}

static bool o1_starving(const struct o1_rq *o, uint64_t now)
{
    uint64_t limit = (uint64_t)o->tun->starvation_ns;
    return limit && o->expired_since &&
           now - o->expired_since >= limit * (o->nr + 1);
}

/* 2.6's recalc_task_prio: a sleep (at most max_sleep_avg_ns) counts
 * (MAX_BONUS - CURRENT_BONUS) times, at least once, so the lower a
 * task's sleep_avg the faster sleeping raises it.  Without it a task
 * that sleeps 9 ms of every 10 beside spinners needed over a second to
 * earn any bonus, and until then waited out a spinner's 100 ms slice at
 * each wake-up (mixed, 5 short and 5 long tasks: short tasks with no
 * record in a 0.5 s window). */
static void o1_add_sleep(const struct o1_tunables *t,
                         struct mqs_sched_entity *se, uint64_t now)
{
    uint64_t woke = se->woke_at_ns >= se->slept_at_ns ? se->woke_at_ns : now;
    uint64_t slept = woke > se->slept_at_ns ? woke - se->slept_at_ns : 0;
    uint64_t max = (uint64_t)t->max_sleep_avg_ns;
    if (slept > max)
        slept = max;
    uint64_t bonus = se->p[O1_SLEEP_AVG] * O1_MAX_BONUS / max;
    if (bonus < O1_MAX_BONUS)
        slept *= O1_MAX_BONUS - bonus;
    uint64_t avg = se->p[O1_SLEEP_AVG] + slept;
    se->p[O1_SLEEP_AVG] = avg < max ? avg : max;
    se->level = (uint8_t)o1_effective_prio(t, se);
}

/* ----- queueing ----- */

static void o1_publish(struct mqs_rq *rq)
{
    struct o1_rq *o = o1_state(rq);
    unsigned a = mqs__parr_best(o->active), x = mqs__parr_best(o->expired);
    mqs_rq_publish(rq, o->nr, x < a ? x : a);
}

static void o1_add(struct mqs_rq *rq, struct mqs_sched_entity *se,
                   bool expire, bool head)
{
    struct o1_rq *o = o1_state(rq);
    if (expire && o->expired_since == 0)
        o->expired_since = mqs_sched_clock() | 1;
    se->p[O1_ARRAY] = expire ? o->active_idx ^ 1 : o->active_idx;
    mqs__parr_add(expire ? o->expired : o->active, se, o1_level(se), head);
    o->nr++;
    o1_publish(rq);
}

/* A spawned task starts with its parent's sleep history, less a penalty
 * (sched_fork's CHILD_PENALTY); one spawned from outside a task with
 * outside_sleep_pct of the most, less the same (by default none), and
 * a first slice of min_slice_ns (o1_new).  At 100, a program's main
 * thread that has mostly slept, as 2.6 saw one started from a shell, a
 * short task spawned beside long ones no longer waits behind their
 * whole slices until two sleeps earn it a bonus (mixed, 5 short and 5
 * long: the least short task at 0.32-0.53 of the kernel's records,
 * 0-0.08 at 0 with whole first slices), but eight yield-loop tasks so
 * started on two workers left one at a tenth of a worker's steps in one
 * run in six under ASan (docs/policies/o1.md). */
static void o1_task_new(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        const struct mqs_sched_entity *parent)
{
    const struct o1_tunables *t = o1_state(rq)->tun;
    uint64_t from = parent ? parent->p[O1_SLEEP_AVG]
                           : (uint64_t)t->max_sleep_avg_ns *
                                 (uint64_t)t->outside_sleep_pct / 100;
    se->p[O1_SLEEP_AVG] = from * O1_CHILD_PENALTY / 100;
    se->p[O1_FIRST] = parent ? 0 : (uint64_t)t->min_slice_ns;
}

/* A spawned task (o1_task_new gave it its history): its priority and
 * slice (from outside, the shortest for a first one: 2.6's sched_fork
 * split the spawner's slice, so a main thread starting several threads
 * left the later ones little; started together with whole slices, the
 * last in line waited out every one before it), and maybe the head of
 * the parent's worker (child runs first),
 * when the spawner is a task running on rq's worker and the child a
 * normal task.  2.6.0 queued the child just before its parent, at the
 * parent's priority; here the child has its own class and priority,
 * and a realtime one goes to the tail of its level as POSIX says: at
 * the head, three FIFO siblings of one priority spawned by a task ran
 * last first (conformance rt_order_over_a_spinner_one_worker). */
static bool o1_new(struct mqs_rq *rq, struct mqs_sched_entity *se)
{
    struct o1_rq *o = o1_state(rq);
    bool here = mqs_runtime_self() == mqs_rq_runtime(rq) &&
                mqs_worker_self() == mqs_rq_worker(rq);
    se->level = (uint8_t)o1_effective_prio(o->tun, se);
    se->slice_ns = o1_timeslice(o->tun, se);
    if (se->p[O1_FIRST] && (int64_t)se->p[O1_FIRST] < se->slice_ns)
        se->slice_ns = (int64_t)se->p[O1_FIRST];
    se->p[O1_FIRST] = 0;
    if (!(o->tun->child_first && here && se->cls == MQS_CLASS_NORMAL))
        return false;
    atomic_store_explicit(&o->child_pending, 1, memory_order_relaxed);
    return true;
}

static bool o1_sync(const struct o1_tunables *t, int flags)
{
    return t->sync_wakeup == 2 || (t->sync_wakeup == 1 &&
                                   (flags & MQS_ENQ_SYNC));
}

/* A task that stopped running with its slice spent: new priority and
 * slice; expired unless interactive and the expired array not starving. */
static bool o1_expire(struct o1_rq *o, struct mqs_sched_entity *se)
{
    se->slice_ns = o1_timeslice(o->tun, se);
    if (se->cls != MQS_CLASS_NORMAL)
        return false;
    se->level = (uint8_t)o1_effective_prio(o->tun, se);
    return !o1_interactive(se) || o1_starving(o, mqs_sched_clock());
}

static void o1_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       int flags)
{
    struct o1_rq *o = o1_state(rq);
    bool head = false, expire = false;
    se->p[O1_SYNC] = 0;
    if (flags & MQS_ENQ_NEW) {
        head = o1_new(rq, se);
    } else if (flags & MQS_ENQ_WAKEUP) {
        o1_add_sleep(o->tun, se, mqs_sched_clock());
        if (se->slice_ns <= 0) /* it blocked just as its slice ran out */
            se->slice_ns = o1_timeslice(o->tun, se);
        se->p[O1_SYNC] = o1_sync(o->tun, flags) && mqs_worker_self() >= 0;
    } else if (flags & (MQS_ENQ_YIELD | MQS_ENQ_PREEMPTED)) {
        if (se->cls == MQS_CLASS_FIFO)
            head = (flags & MQS_ENQ_PREEMPTED) != 0;
        else if (se->slice_ns <= 0)
            expire = o1_expire(o, se);
        else if (flags & MQS_ENQ_PREEMPTED)
            head = true; /* 2.6.0 never took it off its list */
        else
            expire = o->tun->yield_expired && se->cls == MQS_CLASS_NORMAL;
    } else if (flags & MQS_ENQ_RESTORE) {
        se->level = (uint8_t)o1_effective_prio(o->tun, se);
    }
    o1_add(rq, se, expire, head);
}

static void o1_dequeue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       int flags)
{
    (void)flags;
    struct o1_rq *o = o1_state(rq);
    mqs__parr_del(&o->arrays[se->p[O1_ARRAY]], se, o1_level(se));
    o->nr--;
    if (o->expired->nr == 0)
        o->expired_since = 0;
    o1_publish(rq);
}

/* Take tasks for a pull or a balancer (req: struct mqs__rt_pull_req),
 * expired (cold) first; victim's lock held. */
static int o1_take(struct mqs_rq *victim, void *arg,
                   struct mqs_sched_entity **out, int max)
{
    struct o1_rq *o = o1_state(victim);
    int n = mqs__rt_pull_take(o->expired, arg, out, 0, max);
    n = mqs__rt_pull_take(o->active, arg, out, n, max);
    o->nr -= (unsigned)n;
    if (o->expired->nr == 0)
        o->expired_since = 0;
    o1_publish(victim);
    return n;
}

static struct mqs_sched_entity *o1_pick(struct mqs_rq *rq)
{
    struct o1_rq *o = o1_state(rq);
    if (atomic_load_explicit(&o->child_pending, memory_order_relaxed))
        atomic_store_explicit(&o->child_pending, 0, memory_order_relaxed);
    if (mqs__parr_swap_due(o->active, o->expired)) {
        struct mqs__prio_array *t = o->active;
        o->active = o->expired;
        o->expired = t;
        o->active_idx ^= 1;
        o->expired_since = 0;
    }
    struct mqs_sched_entity *se =
        mqs__rt_pull(rq, o->rt_hint, mqs__parr_best(o->active), o1_take);
    if (se)
        return se;
    se = mqs__parr_pop(o->active);
    if (!se)
        return NULL;
    o->nr--;
    o1_publish(rq);
    return se;
}

/* Rotate se behind the tasks of its level in the active array, or keep
 * it running when it is alone there: exactly what enqueue(YIELD) + pick
 * would do when it has slice left, nothing more urgent is active and no
 * realtime task is due for a pull.  The published best level covers both
 * arrays: when it is no more urgent than se's, one load says what the
 * bitmap scan of the active array would. */
static struct mqs_sched_entity *o1_yield(struct mqs_rq *rq,
                                         struct mqs_sched_entity *se)
{
    struct o1_rq *o = o1_state(rq);
    if (se->cls != MQS_CLASS_FIFO && se->slice_ns <= 0)
        return NULL;
    if (se->cls == MQS_CLASS_NORMAL && o->tun->yield_expired)
        return NULL;
    unsigned lvl = o1_level(se);
    unsigned best = mqs_rq_best_prio(rq);
    if ((best < lvl && mqs__parr_best(o->active) < lvl) ||
        mqs__rt_pull_due(o->rt_hint, lvl))
        return NULL;
    struct mqs_list *q = &o->active->q[lvl];
    se->p[O1_SYNC] = 0;
    if (atomic_load_explicit(&o->child_pending, memory_order_relaxed))
        atomic_store_explicit(&o->child_pending, 0, memory_order_relaxed);
    if (mqs__list_empty(q))
        return se;
    struct mqs_sched_entity *next = mqs__parr_first(o->active, lvl);
    mqs__list_del(&next->node);
    if (o->nr >= O1_PREFETCH_NR && !mqs__list_empty(q))
        mqs_se_prefetch(rq, mqs__parr_first(o->active, lvl));
    se->p[O1_ARRAY] = o->active_idx;
    mqs__list_add_tail(q, &se->node);
    return next;
}

/* Charge the run, less the time the worker's thread was off its CPU
 * (se->stall_ns, at most ran_ns), as mq does.  Charged whole, a host
 * preemption, which on a busy 2-vCPU guest falls where the monitor's look
 * takes a worker's CPU, cost the task it hit up to its slice: eight tasks
 * yielding in a loop on two workers, no migration, counted up to 7:1 on
 * one worker (shuffle.conformance.o1, min/mean 0.31-0.48 in 5 of 16
 * runs; 0.64-0.93 in 10 with the stalls left out). */
static void o1_put_prev(struct mqs_rq *rq, struct mqs_sched_entity *se,
                        uint64_t ran_ns)
{
    (void)rq;
    if (se->cls == MQS_CLASS_FIFO)
        return;
    uint64_t ran = ran_ns - se->stall_ns;
    se->slice_ns -= (int64_t)ran;
    uint64_t avg = se->p[O1_SLEEP_AVG];
    se->p[O1_SLEEP_AVG] = avg > ran ? avg - ran : 0;
}

static int64_t o1_tick(struct mqs_rq *rq, struct mqs_sched_entity *se,
                       uint64_t now)
{
    if (atomic_load_explicit(&o1_state(rq)->child_pending,
                             memory_order_relaxed))
        return 0;
    if (se->cls == MQS_CLASS_FIFO)
        return MQS_SLICE_NONE;
    return se->slice_ns - (int64_t)(now - se->exec_start_ns);
}

/* The hand-off (MQS_POLICY_WAKE_NEXT): the woken se runs now, as the
 * pick after its sync wake-up's enqueue would have run it with nothing
 * queued here: its sleep counted into sleep_avg and its priority (what
 * makes an O(1) task interactive), a slice if its last ran out.  (The
 * array index is set by the next enqueue: a running task is in none.)
 * With anything queued here the arrays decide: enqueue and pick. */
static bool o1_run_woken(struct mqs_rq *rq, struct mqs_sched_entity *se)
{
    struct o1_rq *o = o1_state(rq);
    if (o->nr)
        return false;
    o1_add_sleep(o->tun, se, mqs_sched_clock());
    if (se->slice_ns <= 0)
        se->slice_ns = o1_timeslice(o->tun, se);
    se->p[O1_SYNC] = o1_sync(o->tun, MQS_ENQ_SYNC) && mqs_worker_self() >= 0;
    /* As pick: a child queued to run first and taken by a thief since
     * leaves the mark that makes o1_tick end the running slice. */
    if (atomic_load_explicit(&o->child_pending, memory_order_relaxed))
        atomic_store_explicit(&o->child_pending, 0, memory_order_relaxed);
    return true;
}

/* TASK_PREEMPTS_CURR, except after a sync wake-up of a normal task. */
static bool o1_wake_preempt(struct mqs_rq *rq, struct mqs_sched_entity *curr,
                            struct mqs_sched_entity *woken)
{
    (void)rq;
    if (woken->p[O1_SYNC] && woken->cls == MQS_CLASS_NORMAL)
        return false;
    return o1_level(woken) < o1_level(curr);
}

/* The waker's worker for a sync wake-up (realtime tasks excepted: they
 * must not wait for the waker) or a child that runs first. */
static int o1_select_worker(mqs_runtime_t *rt, struct mqs_sched_entity *se,
                            int waker, int flags)
{
    const struct o1_tunables *t = mqs_policy_state(rt);
    bool near = ((flags & MQS_ENQ_NEW) && t->child_first) ||
                ((flags & MQS_ENQ_WAKEUP) && o1_sync(t, flags) &&
                 (se->cls == MQS_CLASS_NORMAL || se->cls == MQS_CLASS_IDLE));
    if (near && waker >= 0 && mqs_se_allowed(se, waker) &&
        mqs_worker_self() >= 0)
        return waker;
    return mqs_select_default(rt, se, waker,
                              flags & ~(MQS_ENQ_SYNC | MQS_ENQ_TASK));
}

/* ----- load balancing ----- */

/* How many to pull: idle, half of what the busiest has (counting the
 * task it runs); periodic, half the difference past imbalance_pct. */
static int o1_imbalance(const struct o1_tunables *t, int why, unsigned max,
                        unsigned mine)
{
    if (why != MQS_BALANCE_PERIODIC)
        return (int)(max + 1 - mine) / 2;
    if (max <= mine || (uint64_t)(max - mine) * 100 <=
                           (uint64_t)mine * (uint64_t)t->imbalance_pct)
        return 0;
    return (int)(max - mine) / 2;
}

static int o1_balance(struct mqs_rq *rq, int why)
{
    struct o1_rq *o = o1_state(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    uint64_t now = mqs_rq_clock(rq);
    /* 2.6.0 took the least recently queued of each level (the tail) */
    struct mqs__rt_pull_req req = {MQS_PRIO_LEVELS, mqs_rq_worker(rq),
                                   UINT64_MAX, true};
    bool periodic = why == MQS_BALANCE_PERIODIC;
    if (periodic) {
        if (now < o->next_balance)
            return 0;
        o->next_balance = now + (uint64_t)o->tun->balance_ns;
        if (o->balance_failed <= (uint64_t)o->tun->cache_nice_tries)
            req.hot_before = now - (uint64_t)o->tun->cache_hot_ns;
    }
    unsigned max, min;
    int victim = mqs__rt_pull_busiest(rt, req.dest, &max, &min);
    int want = victim < 0 ? 0 : o1_imbalance(o->tun, why, max,
                                             mqs_rq_nr_queued(rq));
    if (want <= 0) {
        if (periodic) /* balanced: hot tasks are left alone again */
            o->balance_failed = 0;
        return 0;
    }
    struct mqs_sched_entity *got[O1_STEAL_MAX];
    int n = mqs_rq_steal(rq, mqs_rq_of(rt, victim), why, o1_take, &req, got,
                         want < O1_STEAL_MAX ? want : O1_STEAL_MAX);
    if (periodic)
        o->balance_failed = n > 0 ? 0 : o->balance_failed + 1;
    return mqs_rq_add_stolen_all(rq, got, n);
}

const struct mqs_policy mqs_policy_o1 = {
    .name = "o1",
    .description = "Linux 2.6.0 O(1): active/expired priority arrays, "
                   "sleep_avg interactivity bonus, sync wake-ups, balancing",
    .flags = MQS_POLICY_TICK_ACCOUNTING | MQS_POLICY_WAKE_NEXT,
    .rq_size = sizeof(struct o1_rq),
    .rt_size = sizeof(struct o1_tunables),
    .tunables = o1_tunables,
    .init_rq = o1_init_rq,
    .task_new = o1_task_new,
    .select_worker = o1_select_worker,
    .enqueue = o1_enqueue,
    .dequeue = o1_dequeue,
    .pick = o1_pick,
    .yield = o1_yield,
    .put_prev = o1_put_prev,
    .tick = o1_tick,
    .wake_preempt = o1_wake_preempt,
    .balance = o1_balance,
    .run_woken = o1_run_woken,
};

#undef O1_MAX_BONUS
#undef O1_STEAL_MAX
#undef O1_CHILD_PENALTY
#undef O1_ARRAY
#undef O1_FIRST
#undef O1_SLEEP_AVG
#undef O1_SYNC
