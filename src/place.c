/*
 * place.c - placement and enqueue: which worker's queue a runnable task
 * goes to (the policy's select_worker, or the default below), queueing
 * it there, and the kicks that make a parked or idle worker look.  Below
 * the scheduling point (sched.c), above the run queue (rq.c): every path
 * that makes a task runnable (a wake-up, a spawn, a timer, a yield onto
 * a worker its affinity no longer allows) ends in mqs__enqueue_task.
 *
 * The default placement is Linux's order: an idle worker the task may
 * use (its last one first), the waker's worker for a sync wake-up, the
 * last worker for its cache, else the less loaded of two candidates.
 * The random-schedule mode (config.shuffle_seed) perturbs the choice
 * here, within what the contract leaves open.
 *
 * Parking uses the classic Dekker pair: the parker publishes `parked`
 * then re-checks its queue; the enqueuer publishes the queue change then
 * checks `parked`; both sequentially consistent, so one of them sees the
 * other and no wake-up is lost.
 */
#include "internal.h"
#include "rq.h"

/* ------------------------------------------------------------------ */
/* Placement and enqueue                                               */
/* ------------------------------------------------------------------ */

/* The first worker se may use at or after `from`, wrapping around. */
static int allowed_from(mqs_runtime_t *rt, const struct mqs_sched_entity *se,
                        int from)
{
    for (int i = 0; i < rt->nworkers; i++) {
        int w = (from + i) % rt->nworkers;
        if (mqs_se_allowed(se, w))
            return w;
    }
    return 0;
}

/* Two candidates, the less loaded wins, the first on a tie (power of two
 * choices: near-even spread without reading every queue).  The first is
 * the waker's worker, or for a placement from outside the runtime the
 * next in turn; the second is hashed from the task.
 *
 * The first candidate from outside used to be hashed too.  Then the ties
 * (every other spawn of a batch onto two workers) split consecutive
 * spawns between the workers at random, and a worker's tasks no longer
 * covered the stack tops' staggered cache offsets evenly (stack.c).  At
 * 2048 tasks a worker, with their turns' lines about filling its L2,
 * some sets overflowed: in phases of the host, one worker then cost
 * 80-150 ns a yield instead of 25 under cfs, eevdf, o1 and ws
 * (notes.md, "One slow worker at 4096 tasks").  In turn, consecutive
 * spawns alternate. */
static int two_choices(mqs_runtime_t *rt, const struct mqs_sched_entity *se,
                       int waker)
{
    int n = rt->nworkers;
    uint64_t h = (uint64_t)(uintptr_t)se * 0x9e3779b97f4a7c15ull;
    int a = waker >= 0 ? waker
                       : (int)(atomic_fetch_add_explicit(&rt->place_rr, 1,
                                                         memory_order_relaxed) %
                               (unsigned)n);
    int b = (int)((h >> 16) % (uint64_t)n);
    if (b == a)
        b = (a + 1) % n;
    a = allowed_from(rt, se, a);
    b = allowed_from(rt, se, b);
    /* From outside, one task of difference is noise (a queue's count
     * dips by one while its worker switches): it would break the turns. */
    unsigned slack = waker >= 0 ? 0 : 1;
    return mqs_rq_nr_queued(&rt->workers[b]->rq) + slack <
                   mqs_rq_nr_queued(&rt->workers[a]->rq)
               ? b
               : a;
}

void mqs__wake_nostop(mqs_runtime_t *rt, struct mqs_task *t, int src)
{
    MQS__STAT_ADD(t->events.wakeups, 1);
    atomic_store_explicit(&t->state, MQS__RUNNABLE, memory_order_relaxed);
    mqs__enqueue_task(rt, t, MQS_ENQ_WAKEUP | MQS__ENQ_NO_WAKE_STOP | src);
}

/* The trace's name for who woke a task (MQS__ENQ_SRC_*). */
static unsigned trace_src(int core)
{
    return core & MQS__ENQ_SRC_TIMER  ? MQS__TR_SRC_TIMER
           : core & MQS__ENQ_SRC_POLL ? MQS__TR_SRC_POLL
           : core & MQS__ENQ_SRC_LEFT ? MQS__TR_SRC_LEFT
           : core & MQS__ENQ_SRC_SLOT ? MQS__TR_SRC_SLOT
                                      : MQS__TR_SRC_TASK;
}

/* 1 -> 2 decides: the switch's exchange then reads 2 and queues t.  A
 * failed exchange read 0 (acquire: t's saved context is visible).  t
 * cannot be 2 already (one waker pops it) nor 1 for another run (only a
 * waker queues it). */
bool mqs__wake_leave(struct mqs_task *t)
{
    int on = 1;
    return atomic_compare_exchange_strong_explicit(
        &t->on_cpu, &on, 2, memory_order_acq_rel, memory_order_acquire);
}

/* If some worker idles, kick it so that it comes and steals. */
void mqs__kick_idle(mqs_runtime_t *rt)
{
    for (int i = 0; i < MQS__MASK_WORDS && i * 64 < rt->nworkers; i++) {
        uint64_t idle = atomic_load_explicit(&rt->idle_bits[i],
                                             memory_order_relaxed);
        if (idle) {
            mqs__kick(rt->workers[i * 64 + __builtin_ctzll(idle)]);
            return;
        }
    }
}

/* Is some worker that se may use idle (a peek, nothing claimed)? */
bool mqs__idle_allowed(mqs_runtime_t *rt, const struct mqs_sched_entity *se)
{
    for (int i = 0; i < MQS__MASK_WORDS && i * 64 < rt->nworkers; i++) {
        uint64_t idle = atomic_load_explicit(&rt->idle_bits[i],
                                             memory_order_relaxed);
        if (!se->any_worker)
            idle &= se->affinity.bits[i];
        if (idle)
            return true;
    }
    return false;
}

/* Claim an idle worker se may use, its last one first; -1 if none.  A
 * word of the idle map at a time, masked by the affinity: a wake-up
 * reads MQS_MAX_WORKERS / 64 words however many workers there are (it
 * called two functions per worker before). */
static int claim_idle_allowed(mqs_runtime_t *rt,
                              const struct mqs_sched_entity *se)
{
    int last = se->last_worker;
    if (last >= 0 && mqs_se_allowed(se, last) &&
        mqs_worker_claim_idle(rt, last))
        return last;
    for (int i = 0; i < MQS__MASK_WORDS && i * 64 < rt->nworkers; i++) {
        uint64_t idle = atomic_load_explicit(&rt->idle_bits[i],
                                             memory_order_relaxed);
        if (!se->any_worker)
            idle &= se->affinity.bits[i];
        while (idle) {
            int w = i * 64 + __builtin_ctzll(idle);
            if (mqs_worker_claim_idle(rt, w))
                return w;
            idle &= idle - 1;
        }
    }
    return -1;
}

int mqs_select_default(mqs_runtime_t *rt, struct mqs_sched_entity *se,
                       int waker, int flags)
{
    int last = se->last_worker;
    int idle = claim_idle_allowed(rt, se);
    if (idle >= 0)
        return idle;
    /* No idle worker: the woken task goes where its data is, the
     * waker's worker (Go's runnext, ws's slot); a realtime one keeps its
     * last worker, where it preempts any normal task at once instead of
     * waiting behind a waker of its own priority. */
    bool by_task = (flags & MQS_ENQ_TASK) && se->cls != MQS_CLASS_FIFO &&
                   se->cls != MQS_CLASS_RR;
    if ((flags & MQS_ENQ_SYNC || by_task) && waker >= 0 &&
        mqs_se_allowed(se, waker))
        return waker;
    if (last >= 0 && mqs_se_allowed(se, last))
        return last;
    return two_choices(rt, se, waker);
}

/* ------------------------------------------------------------------ */
/* Random-schedule mode (mqs_config_t.shuffle_seed)                    */
/* ------------------------------------------------------------------ */
/* Perturbs only what the contract leaves open: which allowed worker a
 * task is placed on, whether child-first and the SYNC placement are
 * used, and extra yields where a task could be preempted anyway (a
 * wake-up, a checkpoint).  Every branch here is behind a field that is 0
 * when the mode is off: rt->shuffle_seed on the placement's line, or the
 * worker's own generator. */

uint64_t mqs__shuffle_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The next draw of worker w's generator (xorshift64; w->shuffle != 0). */
uint64_t mqs__shuffle_next(struct mqs_worker *w)
{
    uint64_t x = w->shuffle;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return w->shuffle = x;
}

/* The policy chose `chosen` for t (waker: the placing worker, -1 from
 * outside): perhaps another allowed worker instead. */
static __attribute__((noinline)) int shuffle_place(mqs_runtime_t *rt,
                                                   struct mqs_task *t,
                                                   int waker, int chosen)
{
    uint64_t r;
    if (waker >= 0) {
        r = mqs__shuffle_next(rt->workers[waker]);
        if (r >> 62) /* three placements in four stay the policy's */
            return chosen;
    } else {
        r = mqs__shuffle_mix(rt->shuffle_seed ^
                             atomic_fetch_add(&rt->shuffle_ext, 1));
    }
    int n = 0;
    for (int i = 0; i < rt->nworkers; i++)
        n += mqs_se_allowed(&t->se, i);
    int k = (int)((r & 0xffffffffu) % (uint64_t)n), w = 0;
    for (;; w++)
        if (mqs_se_allowed(&t->se, w) && k-- == 0)
            break;
    /* The policy may have claimed `chosen` idle (its mark cleared) and it
     * may be parked: wake it, or it sleeps on unmarked. */
    if (w != chosen)
        mqs__kick(rt->workers[chosen]);
    return w;
}

static int select_worker(mqs_runtime_t *rt, struct mqs_task *t, int waker,
                         int flags)
{
    const struct mqs_policy *p = rt->policy;
    if (p->select_worker)
        MQS__CHK_UNLOCKED_OP(rt, "select_worker");
    int w = p->select_worker ? p->select_worker(rt, &t->se, waker, flags)
                             : mqs_select_default(rt, &t->se, waker, flags);
    if (w < 0 || w >= rt->nworkers || !mqs_se_allowed(&t->se, w))
        mqs__panic("policy %s: select_worker put task %s on worker %d, "
                   "outside its affinity or the %d workers",
                   p->name, t->name, w, rt->nworkers);
    if (MQS__UNLIKELY(rt->shuffle_seed))
        w = shuffle_place(rt, t, waker, w);
    return w;
}

/* Should woken run before curr on rq?  rq's lock held. */
static bool should_preempt(struct mqs_rq *rq, struct mqs_task *curr,
                           struct mqs_task *woken)
{
    const struct mqs_policy *p = rq->rt->policy;
    if (!p->wake_preempt)
        return woken->se.prio < curr->se.prio;
    MQS__CHK_OP(rq, "wake_preempt");
    return p->wake_preempt(rq, &curr->se, &woken->se);
}

/* A task of level prio was just queued on tw, busy, from another
 * thread: stop tw's running task now rather than at its next tick when
 * it is less urgent, or when it is of the same level, the queued task
 * was woken and the running one has run MQS__WAKE_GRAN_NS already (the
 * policy then chooses between the two: Linux's wake-up preemption, with
 * its granularity in time since the switch, the one thing a remote
 * waker can read).  Its loop (MQS_PRIO_NONE) looks by itself. */
#define MQS__WAKE_GRAN_NS 20000
static void wake_preempt_remote(mqs_runtime_t *rt, struct mqs_worker *tw,
                                unsigned prio, int flags,
                                struct mqs_worker *self)
{
    unsigned level = atomic_load_explicit(&tw->rq.curr_level,
                                          memory_order_relaxed);
    if (level == MQS_PRIO_NONE || prio > level)
        return;
    if (prio < level) {
        mqs__preempt_request(tw, MQS__PRE_URGENT | MQS__PRE_WOKEN);
        return;
    }
    /* A deferred WAKE is pending (preempt.c): it is taken at the task's
     * next I/O call or asked again by the monitor; one more signal would
     * most likely land inside the same system call.  A wake-up by the
     * poller asks none (MQS__ENQ_NO_WAKE_STOP, poll.c). */
    if ((flags & (MQS_ENQ_WAKEUP | MQS__ENQ_NO_WAKE_STOP)) != MQS_ENQ_WAKEUP ||
        (atomic_load_explicit(&tw->pre.missed, memory_order_relaxed) &
         MQS__PRE_WAKE))
        return;
    /* On the waker's own scheduling clock: under tick accounting
     * curr_since is coarse, and the granularity becomes the tick. */
    uint64_t now = self ? mqs__sched_time(self) : mqs__clock_ns(&rt->clock);
    uint64_t since = atomic_load_explicit(&tw->rq.curr_since,
                                          memory_order_relaxed);
    if (now > since && now - since >= MQS__WAKE_GRAN_NS)
        mqs__preempt_request(tw, MQS__PRE_WAKE);
}

/* Make t (RUNNABLE, on_cpu == 0) queued somewhere; may be called from any
 * thread with no lock held.  Kicks the target worker if it parks, or an
 * idle worker that could take the task if the target is busy. */
bool mqs__enqueue_task(mqs_runtime_t *rt, struct mqs_task *t, int flags)
{
    /* The run-queue work below is inside the runtime for this thread's
     * worker, whichever runtime it serves. */
    struct mqs_worker *me = mqs__worker_self(), *self = me;
    if (me)
        mqs__rt_enter(me);
    if (self && self->rt != rt)
        self = NULL;
    int waker = self ? self->index : -1;
    int quiet = flags & MQS__ENQ_NO_WAKE_STOP;
    int core = flags & MQS__ENQ_CORE;
    flags &= ~MQS__ENQ_CORE; /* the policy's flags only below */
    mqs__apply_pending(t);
    if ((flags & MQS_ENQ_SYNC) && self && mqs__shuffle_coin(self, 1))
        flags &= ~MQS_ENQ_SYNC;
    int target = select_worker(rt, t, waker, flags);
    if (MQS__UNLIKELY(rt->trace.on) && (flags & MQS_ENQ_WAKEUP))
        mqs__trace_wake(rt, t, target, trace_src(core), flags, false);
    struct mqs_worker *tw = rt->workers[target];
    t->se.queued_at_ns = self ? self->now : mqs__clock_ns(&rt->clock);
    bool preempt = false, fast = false;
    if (target == waker)
        fast = mqs__own_lock(tw);
    else
    {
        mqs__spin_lock(tw->rq.lock);
        MQS__CHK_TOOK(&tw->rq);
    }
    mqs__rq_enqueue_locked(&tw->rq, t, flags);
    unsigned prio = t->se.level; /* t may run and end once unlocked */
    /* Decided under the lock: once it is dropped t may run elsewhere,
     * end and be freed. */
    if (target == waker && (flags & MQS_ENQ_WAKEUP) && self->curr &&
        atomic_load_explicit(&self->curr->state, memory_order_relaxed) ==
            MQS__RUNNING)
        preempt = should_preempt(&tw->rq, self->curr, t);
    if (target == waker)
        mqs__own_unlock(tw, fast);
    else {
        MQS__CHK_RELEASE(&tw->rq);
        mqs__spin_unlock(tw->rq.lock);
    }
    if (self && (flags & MQS_ENQ_WAKEUP)) {
        if (target == waker)
            MQS__STAT_ADD(self->stats.wakeups_local, 1);
        else
            MQS__STAT_ADD(self->stats.wakeups_remote, 1);
    }
    if (target == waker) {
        mqs__rt_leave(me);
        return preempt;
    }
    /* Pairs with the parker's seq_cst store of `parked` before it
     * re-reads nr_queued: one of the two sees the other (Dekker).  The
     * target may have been claimed idle by the placement (its mark is
     * gone): whether it sleeps is read from `parked` itself. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&tw->parked))
        mqs__kick(tw);
    else if (rt->pre.on)
        wake_preempt_remote(rt, tw, prio, flags | quiet, self);
    /* Work piles up on the target while some worker idles: let that one
     * come and steal. */
    if (atomic_load_explicit(&tw->rq.nr_queued, memory_order_relaxed) > 1)
        mqs__kick_idle(rt);
    if (me)
        mqs__rt_leave(me);
    return false;
}
