/*
 * rq.c - the run queue layer: a worker's queue, its lock and its
 * published summary, and every helper a policy calls on them
 * (mqs/policy.h).  Above the context switch, below placement: it calls
 * into the policy (enqueue, through mqs_rq_add_stolen) and into base.c
 * only.
 *
 * The lock is biased to its owner (spinlock.h has the protocol; the
 * owner side is here and in rq.h): a worker biases its lock after a
 * millisecond in which no other thread took it, so its own lock round
 * trip on the yield path is two plain stores; another thread that needs
 * the lock revokes the bias with an expedited membarrier, and the owner
 * drops the bias when it goes idle.  Rejected: a plain spinlock (a locked
 * instruction per lock and per unlock on every yield) and lock-free
 * queues (they fit FIFO work stealing, not the priority lists that
 * policies reorder).
 *
 * The summary (mqs_rq_publish) is what other workers read without the
 * lock: the number of queued tasks and the best level, plus a
 * runtime-wide bitmap of the levels queued somewhere (the level hint),
 * so a pick can compare itself with every other queue in O(1).
 */
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "rq.h"

/* ------------------------------------------------------------------ */
/* The owner side of the run-queue lock (see spinlock.h)               */
/* ------------------------------------------------------------------ */

/* A worker biases its lock again once no other thread has taken it for
 * this long: a stream of remote wake-ups or steals then pays one
 * membarrier per quiet spell, not one per operation. */
#define MQS__BIAS_QUIET_NS 1000000u


/* May workers bias their locks?  Only their own locks (not a shared one)
 * and only when the process could register for expedited membarriers
 * (seccomp or an old kernel may refuse: then every lock is a plain one).
 * Asked once, by mqs_runtime_create before the worker threads start:
 * the first registration of a process that already has other threads
 * waits for an RCU grace period (~10 ms here), which each worker asking
 * at its start put into the first task's run. */
bool mqs__bias_register(mqs_runtime_t *rt)
{
    if (rt->policy->flags & MQS_POLICY_SHARED_RQ)
        return false;
#ifdef SYS_membarrier
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                   0, 0) == 0;
#else
    return false;
#endif
}

/* The owner holds v: act on what non-owners noted, bias when quiet. */
static void bias_upkeep(struct mqs_worker *w, mqs__spinlock_t *l)
{
    unsigned n = atomic_load_explicit(&l->notes, memory_order_relaxed);
    if (n) {
        atomic_store_explicit(&l->notes, 0, memory_order_relaxed);
        if (n & MQS__LOCK_UNBIAS) {
            atomic_store_explicit(&l->biased, 0, memory_order_relaxed);
            MQS__STAT_ADD(w->bias_revoked, 1);
        }
        w->bias_quiet_since = w->now;
    } else if (w->bias_ok && w->now - w->bias_quiet_since >=
                                 MQS__BIAS_QUIET_NS &&
               !atomic_load_explicit(&l->biased, memory_order_relaxed)) {
        atomic_store_explicit(&l->biased, 1, memory_order_relaxed);
    }
}

__attribute__((noinline)) void mqs__own_lock_slow(struct mqs_worker *w)
{
    mqs__spinlock_t *l = w->rq.lock;
    mqs__spin_acquire(l);
    bias_upkeep(w, l);
}

/* Going idle: drop the bias, so wake-ups onto this worker (the common
 * remote lock of an idle worker) take the plain path. */
void mqs__bias_drop(struct mqs_worker *w)
{
    mqs__spinlock_t *l = w->rq.lock;
    if (!atomic_load_explicit(&l->biased, memory_order_relaxed))
        return;
    mqs__spin_acquire(l);
    atomic_store_explicit(&l->biased, 0, memory_order_relaxed);
    w->bias_quiet_since = w->now;
    mqs__spin_unlock(l);
}

#undef MQS__BIAS_QUIET_NS

/* ------------------------------------------------------------------ */
/* The contract's checks (MQS_CONTRACT_CHECKS builds only)             */
/* ------------------------------------------------------------------ */
#ifdef MQS_CONTRACT_CHECKS
/*
 * Who holds an rq lock: the lock's home rq (the one whose own_lock it is:
 * worker 0's for a shared queue) records the holder, an address unique
 * to the thread (FreeBSD's TDQ_LOCK_ASSERT is owner-aware the same way),
 * so "held" means held by the caller, not by anyone.  The lock word
 * itself cannot say: the biased owner enters without touching it.
 * Each thread also counts the rq locks it holds, for the ops that must be
 * called with none.  A worker never holds an rq lock across a switch, so
 * the thread is the right identity.
 */
static _Thread_local int chk_nheld;
static uintptr_t chk_me(void)
{
    return (uintptr_t)&chk_nheld;
}
static struct mqs_rq *chk_home(struct mqs_rq *rq)
{
    return mqs_se_entry(rq->lock, struct mqs_rq, own_lock);
}
static bool chk_mine(struct mqs_rq *rq)
{
    return atomic_load_explicit(&chk_home(rq)->chk_holder,
                                memory_order_relaxed) == chk_me();
}
static const char *chk_last_op(struct mqs_rq *rq)
{
    const char *op = chk_home(rq)->chk_op;
    return op ? op : "(none yet)";
}
/* The op the core last called on this thread, for helpers' messages. */
static _Thread_local const char *chk_cur_op;

void mqs__chk_took(struct mqs_rq *rq)
{
    atomic_store_explicit(&chk_home(rq)->chk_holder, chk_me(),
                          memory_order_relaxed);
    chk_nheld++;
    /* A policy taking another queue's lock does so for the op in
     * progress; the core names its own op next (mqs__chk_op). */
    if (chk_cur_op)
        chk_home(rq)->chk_op = chk_cur_op;
}

/* Is what the queue published what the core queued on it?  Workers park
 * and thieves look by the published count alone.  A shared queue
 * (MQS_POLICY_SHARED_RQ) publishes on each rq what that worker may run:
 * every queued task counts on at least one rq and none on an rq more
 * than once, so the largest count is at most the total and the sum at
 * least the total (a queue publishing 0 with tasks in it fails both). */
static void chk_published(struct mqs_rq *rq)
{
    mqs_runtime_t *rt = rq->rt;
    if (!(rt->policy->flags & MQS_POLICY_SHARED_RQ)) {
        int nr = atomic_load_explicit(&rq->chk_nr, memory_order_relaxed);
        unsigned pub = mqs_rq_nr_queued(rq);
        if ((unsigned)nr != pub)
            mqs__panic("policy %s: worker %d's queue holds %d tasks but "
                       "publishes %u after op %s (rule: publish with "
                       "mqs_rq_publish whenever the queue changes)",
                       rt->policy->name, rq->worker, nr, pub,
                       chk_last_op(rq));
        return;
    }
    unsigned total = 0, max = 0, sum = 0;
    for (int i = 0; i < rt->nworkers; i++) {
        struct mqs_rq *r = &rt->workers[i]->rq;
        unsigned pub = mqs_rq_nr_queued(r);
        total += (unsigned)atomic_load_explicit(&r->chk_nr,
                                                memory_order_relaxed);
        max = pub > max ? pub : max;
        sum += pub;
    }
    if (max > total || sum < total)
        mqs__panic("policy %s: the shared queue holds %u tasks but its "
                   "rqs publish at most %u, %u in all, after op %s (rule: "
                   "publish on every rq with mqs_rq_publish whenever the "
                   "queue changes)",
                   rt->policy->name, total, max, sum, chk_last_op(rq));
}

void mqs__chk_release(struct mqs_rq *rq)
{
    if (!chk_mine(rq))
        mqs__panic("policy %s: worker %d's rq lock released by a thread "
                   "that does not hold it (last op %s)",
                   rq->rt->policy->name, rq->worker, chk_last_op(rq));
    if (rq->rt->workers && rq->rt->workers[rq->rt->nworkers - 1])
        chk_published(rq);
    atomic_store_explicit(&chk_home(rq)->chk_holder, 0, memory_order_relaxed);
    chk_nheld--;
}

void mqs__chk_op(struct mqs_rq *rq, const char *op)
{
    chk_cur_op = op;
    if (!chk_mine(rq))
        mqs__panic("policy %s: the core calls op %s on worker %d without "
                   "holding its rq lock (rule: %s runs under the rq lock)",
                   rq->rt->policy->name, op, rq->worker, op);
    chk_home(rq)->chk_op = op;
}

void mqs__chk_unlocked_op(mqs_runtime_t *rt, const char *op)
{
    chk_cur_op = op;
    if (chk_nheld)
        mqs__panic("policy %s: the core calls op %s holding %d rq lock(s) "
                   "(rule: %s runs with no rq lock held)",
                   rt->policy->name, op, chk_nheld, op);
}

void mqs__chk_count(mqs_runtime_t *rt, int w, int d)
{
    atomic_fetch_add_explicit(&rt->workers[w]->rq.chk_nr, d,
                              memory_order_relaxed);
}

/* A helper that needs rq's lock, called by the policy. */
static void chk_helper_locked(struct mqs_rq *rq, const char *helper)
{
    if (!chk_mine(rq))
        mqs__panic("policy %s: %s on worker %d's queue without holding its "
                   "rq lock, in op %s (rule: %s needs the rq lock held by "
                   "the caller)",
                   rq->rt->policy->name, helper, rq->worker,
                   chk_cur_op ? chk_cur_op : "(none)", helper);
}
#define CHK_HELPER_LOCKED(rq, helper) chk_helper_locked(rq, helper)
#else
#define CHK_HELPER_LOCKED(rq, helper) ((void)0)
#endif

/* ------------------------------------------------------------------ */
/* Run-queue helpers exported to policies                              */
/* ------------------------------------------------------------------ */

struct mqs_rq *mqs_rq_of(mqs_runtime_t *rt, int w)
{
    return &rt->workers[w]->rq;
}
int mqs_rq_worker(const struct mqs_rq *rq)
{
    return rq->worker;
}
mqs_runtime_t *mqs_rq_runtime(const struct mqs_rq *rq)
{
    return rq->rt;
}
int mqs_nr_workers(const mqs_runtime_t *rt)
{
    return rt->nworkers;
}
void *mqs_rq_state(struct mqs_rq *rq)
{
    return rq->pstate;
}
/* Every rq is its worker's own, embedded: the clock is one load away.  A
 * policy's put_prev reads it every yield: through rq->rt->workers[] it
 * was three loads. */
uint64_t mqs_rq_clock(const struct mqs_rq *rq)
{
    return mqs_se_entry(rq, struct mqs_worker, rq)->now;
}
const _Atomic uint64_t *mqs_level_hint(const mqs_runtime_t *rt)
{
    return rt->level_bits;
}
struct mqs_sched_entity *mqs_rq_curr(struct mqs_rq *rq)
{
    struct mqs_task *t = mqs_se_entry(rq, struct mqs_worker, rq)->curr;
    return t ? &t->se : NULL;
}
/* The lines of a switch to se's task, in the order it touches them: the
 * task's first line (saved stack pointer, state, on_cpu, counters: all
 * written), the entity's two (accounting; the list node), then the top
 * of the saved stack (the saved registers and the frames a resume
 * returns through, ~4 lines).  The stack pointer is read relaxed: a
 * queued task may still be switching out on another worker, and a stale
 * value only fetches the wrong lines. */
void mqs_se_prefetch(struct mqs_rq *rq, const struct mqs_sched_entity *se)
{
    (void)rq;
    CHK_HELPER_LOCKED(rq, "mqs_se_prefetch");
    const struct mqs_task *t = mqs_se_entry(se, struct mqs_task, se);
    __builtin_prefetch(t);
    __builtin_prefetch(se);
    __builtin_prefetch(&se->node);
    const char *sp = __atomic_load_n(&t->sp, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; i++)
        __builtin_prefetch(sp + 64 * i);
}
void *mqs_policy_state(mqs_runtime_t *rt)
{
    return rt->pstate;
}
void mqs_rq_lock(struct mqs_rq *rq)
{
    struct mqs_worker *w = rq->rt->workers[rq->worker];
    if (rq->lock == &rq->own_lock && mqs__worker_self() == w)
        mqs__spin_acquire(rq->lock); /* the owner: no bias to revoke */
    else
        mqs__spin_lock(rq->lock);
    MQS__CHK_TOOK(rq);
}
void mqs_rq_unlock(struct mqs_rq *rq)
{
    MQS__CHK_RELEASE(rq);
    mqs__spin_unlock(rq->lock);
}
bool mqs_rq_trylock(struct mqs_rq *rq)
{
    if (!mqs__spin_trylock(rq->lock))
        return false;
    MQS__CHK_TOOK(rq);
    return true;
}
unsigned mqs_rq_nr_queued(const struct mqs_rq *rq)
{
    return atomic_load_explicit(&rq->nr_queued, memory_order_relaxed);
}
unsigned mqs_rq_best_prio(const struct mqs_rq *rq)
{
    return atomic_load_explicit(&rq->best_prio, memory_order_relaxed);
}

/* Keep the runtime-wide "levels queued somewhere" hint in step with one
 * rq's best level.  Counts are the truth; a bit is cleared only when its
 * count reads zero and set again if a racing increment is seen after the
 * clear, so the bit map converges to the counts. */
static void level_hint_move(mqs_runtime_t *rt, unsigned from, unsigned to)
{
    if (to < MQS_PRIO_LEVELS &&
        atomic_fetch_add(&rt->level_count[to], 1) == 0)
        atomic_fetch_or(&rt->level_bits[to >> 6], UINT64_C(1) << (to & 63));
    if (from < MQS_PRIO_LEVELS &&
        atomic_fetch_sub(&rt->level_count[from], 1) == 1) {
        uint64_t bit = UINT64_C(1) << (from & 63);
        atomic_fetch_and(&rt->level_bits[from >> 6], ~bit);
        if (atomic_load(&rt->level_count[from]) > 0)
            atomic_fetch_or(&rt->level_bits[from >> 6], bit);
    }
}

/*
 * The rq's summary, and its count in the runtime-wide hint.  The hint may
 * claim a level no queue holds (readers then look and find nothing: a
 * wasted peek) but never miss one that a queue holds, so a non-empty
 * queue always counts its best level.  An emptied queue keeps counting
 * its last level until the owner's next housekeeping or idle wait
 * (mqs__rq_hint_settle): a ping-pong that empties and refills the queue
 * every half trip would otherwise pay four locked atomics per trip on
 * lines every worker shares.  Rejected: dropping the count at once (that
 * was the cost) and a per-worker scan instead of the hint (O(workers) on
 * every pick, the 2001 design's weakness).
 */
void mqs_rq_publish(struct mqs_rq *rq, unsigned nr, unsigned best)
{
    CHK_HELPER_LOCKED(rq, "mqs_rq_publish");
    if (nr == 0) {
        best = MQS_PRIO_NONE;
        atomic_store_explicit(&rq->empties,
                              atomic_load_explicit(&rq->empties,
                                                   memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
    /* Release stores (plain moves on x86): readers are lock-free peeks
     * that re-check under the lock; the one reader that needs ordering,
     * the parking protocol, has its own fence (mqs__enqueue_task). */
    if (atomic_load_explicit(&rq->nr_queued, memory_order_relaxed) != nr)
        atomic_store_explicit(&rq->nr_queued, nr, memory_order_release);
    if (atomic_load_explicit(&rq->best_prio, memory_order_relaxed) != best)
        atomic_store_explicit(&rq->best_prio, best, memory_order_release);
    if (best != MQS_PRIO_NONE && rq->hint_prio != best) {
        level_hint_move(rq->rt, rq->hint_prio, best);
        rq->hint_prio = best;
    }
}

/* Drop an emptied rq's stale count from the hint; rq's lock held. */
static void rq_hint_settle_locked(struct mqs_rq *rq)
{
    if (rq->hint_prio != MQS_PRIO_NONE &&
        atomic_load_explicit(&rq->best_prio, memory_order_relaxed) ==
            MQS_PRIO_NONE) {
        level_hint_move(rq->rt, rq->hint_prio, MQS_PRIO_NONE);
        rq->hint_prio = MQS_PRIO_NONE;
    }
}

/* The owner settles its rq's hint count (mqs_rq_publish): only an
 * emptied queue can hold a stale one. */
void mqs__rq_hint_settle(struct mqs_worker *w)
{
    if (atomic_load_explicit(&w->rq.best_prio, memory_order_relaxed) !=
        MQS_PRIO_NONE)
        return;
    bool fast = mqs__own_lock(w);
    rq_hint_settle_locked(&w->rq);
    mqs__own_unlock(w, fast);
}

unsigned mqs_best_prio_anywhere(const mqs_runtime_t *rt)
{
    return mqs__best_prio_anywhere(rt);
}

bool mqs_worker_idle(const mqs_runtime_t *rt, int w)
{
    return (atomic_load_explicit(&rt->idle_bits[w >> 6],
                                 memory_order_relaxed) >> (w & 63)) & 1;
}

bool mqs_worker_claim_idle(mqs_runtime_t *rt, int w)
{
    uint64_t bit = UINT64_C(1) << (w & 63);
    _Atomic uint64_t *word = &rt->idle_bits[w >> 6];
    if (!(atomic_load_explicit(word, memory_order_relaxed) & bit))
        return false;
    return (atomic_fetch_and(word, ~bit) & bit) != 0;
}

bool mqs_se_allowed(const struct mqs_sched_entity *se, int w)
{
    /* A task stopped by the preemption signal resumes where it stopped
     * (preempt.c); its affinity applies again from its next run. */
    if (MQS__UNLIKELY(mqs_se_entry(se, struct mqs_task, se)->pinned))
        return se->last_worker == w;
    return se->any_worker || mqs_mask_isset(&se->affinity, w);
}

bool mqs_se_movable(const struct mqs_sched_entity *se)
{
    const struct mqs_task *t = mqs_se_entry(se, struct mqs_task, se);
    return atomic_load_explicit(&t->on_cpu, memory_order_acquire) == 0;
}

uint64_t mqs_sched_clock(void)
{
    struct mqs_worker *w = mqs__worker_self();
    return w ? w->now : mqs_now_ns();
}

void mqs__count_pulls(struct mqs_worker *w, int why, int n)
{
    if (w->trace && w == mqs__worker_self()) /* the puller's own ring */
        mqs__trace_put(w->trace, MQS__TR_PULL, 0, (uint64_t)why,
                       (uint64_t)n);
    switch (why) {
    case MQS_BALANCE_IDLE:
        MQS__STAT_ADD(w->stats.pulls_idle, n);
        break;
    case MQS_BALANCE_NEWIDLE:
        MQS__STAT_ADD(w->stats.pulls_newidle, n);
        break;
    case MQS_BALANCE_PERIODIC:
        MQS__STAT_ADD(w->stats.pulls_periodic, n);
        break;
    default:
        MQS__STAT_ADD(w->stats.pulls_priority, n);
        break;
    }
}

int mqs_rq_steal(struct mqs_rq *rq, struct mqs_rq *victim, int why,
                 int (*take)(struct mqs_rq *, void *,
                             struct mqs_sched_entity **, int),
                 void *arg, struct mqs_sched_entity **out, int max)
{
    if (victim == rq || max <= 0 || !mqs__spin_trylock(victim->lock))
        return 0;
    MQS__CHK_TOOK(victim);
    MQS__CHK_OP(victim, "mqs_rq_steal's take");
    int n = take(victim, arg, out, max);
    for (int i = 0; i < n; i++) {
        struct mqs_task *t = mqs_se_entry(out[i], struct mqs_task, se);
        if (atomic_load_explicit(&t->queued_on, memory_order_relaxed) !=
                victim->worker ||
            !mqs_se_allowed(out[i], rq->worker) || !mqs_se_movable(out[i]))
            mqs__panic("policy %s: balance took task %s that was not "
                       "queued on worker %d or may not move to worker %d",
                       rq->rt->policy->name, t->name, victim->worker,
                       rq->worker);
        atomic_store_explicit(&t->queued_on, -1, memory_order_relaxed);
        MQS__CHK_COUNT(rq->rt, victim->worker, -1);
        t->stolen = true;
    }
    MQS__CHK_RELEASE(victim);
    mqs__spin_unlock(victim->lock);
    if (n > 0)
        mqs__count_pulls(rq->rt->workers[rq->worker], why, n);
    return n;
}

int mqs_rq_empty_pull_kind(const struct mqs_rq *rq)
{
    return rq->rt->workers[rq->worker]->curr ? MQS_BALANCE_NEWIDLE
                                             : MQS_BALANCE_IDLE;
}

void mqs_rq_add_stolen(struct mqs_rq *rq, struct mqs_sched_entity *se)
{
    struct mqs_task *t = mqs_se_entry(se, struct mqs_task, se);
    if (!t->stolen)
        mqs__panic("policy %s: mqs_rq_add_stolen of task %s, which "
                   "mqs_rq_steal did not hand out",
                   rq->rt->policy->name, t->name);
    CHK_HELPER_LOCKED(rq, "mqs_rq_add_stolen");
    t->stolen = false;
    atomic_store_explicit(&t->queued_on, rq->worker, memory_order_relaxed);
    MQS__CHK_COUNT(rq->rt, rq->worker, 1);
    MQS__CHK_OP(rq, "enqueue");
    rq->rt->policy->enqueue(rq, se, MQS_ENQ_MIGRATED);
}

int mqs_rq_add_stolen_all(struct mqs_rq *rq, struct mqs_sched_entity **se,
                          int n)
{
    if (n <= 0)
        return 0;
    mqs_rq_lock(rq);
    for (int i = 0; i < n; i++)
        mqs_rq_add_stolen(rq, se[i]);
    mqs_rq_unlock(rq);
    return n;
}

void mqs__rq_enqueue_locked(struct mqs_rq *rq, struct mqs_task *t, int flags)
{
    if (atomic_load_explicit(&t->queued_on, memory_order_relaxed) != -1)
        mqs__panic("task %s queued on worker %d while already queued on "
                   "worker %d (invariant 1: at most one queue)",
                   t->name, rq->worker, atomic_load(&t->queued_on));
    atomic_store_explicit(&t->queued_on, rq->worker, memory_order_relaxed);
    MQS__CHK_COUNT(rq->rt, rq->worker, 1);
    MQS__CHK_OP(rq, "enqueue");
    rq->rt->policy->enqueue(rq, &t->se, flags);
}
