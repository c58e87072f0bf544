/*
 * sched.c - the scheduling core: what happens at a scheduling point, the
 * worker loop, wake-ups, and the run-queue helpers policies call.
 *
 * A scheduling point runs on the stack of the task that stops (yield,
 * block, exit).  It reads the clock once, runs due timers, lets the
 * policy account the run (put_prev), re-queues the task when it yielded,
 * asks the policy for the next task (pick) and switches straight to it.
 * Only when there is nothing to run does it switch to the worker's own
 * loop context, which spins for a while, balances and finally parks on a
 * futex.  So a yield between two tasks is one lock round trip, two policy
 * calls and one context switch, and the worker loop is not on that path
 * (the "bounce through the scheduler stack" of simpler runtimes costs a
 * second switch per yield).  The lock round trip is two plain stores when
 * the worker's lock is biased to it (spinlock.h; the owner side is here):
 * a worker biases its lock after a millisecond in which no other thread
 * took it, drops the bias when it goes idle or another thread revokes it.
 *
 * A run that lasted 5 us or more is checked for time the worker's thread
 * spent off its CPU (thread CPU time against wall time since the last
 * sample, a system call, at most every 50 us): policies see it as
 * se->stall_ns and may leave it uncharged, so a host preemption does not
 * cost the task it happened to hit its slice.
 *
 * A task that stops is still on its stack until the switch away from it
 * has saved its registers; until then `on_cpu` is 1 and nobody else may
 * run it: a stealer skips it (mqs_se_movable), a waker spins on it before
 * queueing it (Linux's try_to_wake_up does the same).  The code that runs
 * first on the new context (mqs__finish_switch) clears it, frees an
 * exited detached task's stack, and counts the exit.
 *
 * Wake-ups race with blocking through the task state: a task sets itself
 * BLOCKED while holding its wait queue's lock and only then releases it;
 * the waker moves it BLOCKED -> WAKING with a CAS, so exactly one of the
 * wait queue and the timer wins, and it queues the task once its context
 * is saved.  Parking uses the classic Dekker pair: the parker publishes
 * `parked` then re-checks its queue; the enqueuer publishes the queue
 * change then checks `parked`; both sequentially consistent, so one of
 * them sees the other and no wake-up is lost.
 *
 * Rejected: a scheduler thread per worker that every task switches back
 * to (simple, but doubles the switches); lock-free run queues (they fit
 * FIFO work stealing, not priority lists that policies reorder); signal
 * IPIs to wake workers (futexes are cheaper and need no handler).
 */
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctx.h"
#include "internal.h"

_Thread_local struct mqs_worker *mqs__tls_worker;

__attribute__((noinline)) struct mqs_worker *mqs__worker_self(void)
{
    struct mqs_worker *w = mqs__tls_worker;
    __asm__ volatile("" ::: "memory");
    return w;
}

void mqs__worker_set_self(struct mqs_worker *w)
{
    mqs__tls_worker = w;
}

struct mqs_task *mqs__current(void)
{
    struct mqs_worker *w = mqs__worker_self();
    return w ? w->curr : NULL;
}

_Noreturn void mqs__panic(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mqs: fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* ------------------------------------------------------------------ */
/* Futex parking                                                       */
/* ------------------------------------------------------------------ */

static void futex_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns != UINT64_MAX) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tp = &ts;
    }
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

static void futex_wake(atomic_uint *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void mqs__futex_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns)
{
    futex_wait(word, val, timeout_ns);
}
void mqs__futex_wake(atomic_uint *word, int n)
{
    futex_wake(word, n);
}

/* Wake worker w if it sleeps (the analogue of an IPI). */
void mqs__kick(struct mqs_worker *w)
{
    atomic_fetch_add(&w->park_futex, 1);
    if (atomic_load(&w->parked))
        futex_wake(&w->park_futex, 1);
}

void mqs__publish_idle(mqs_runtime_t *rt, int w, bool idle)
{
    uint64_t bit = UINT64_C(1) << (w & 63);
    _Atomic uint64_t *word = &rt->idle_bits[w >> 6];
    if (idle)
        atomic_fetch_or(word, bit);
    else if (atomic_load_explicit(word, memory_order_relaxed) & bit)
        atomic_fetch_and(word, ~bit);
}

/* ------------------------------------------------------------------ */
/* Batched shared counters (ids, live tasks)                           */
/* ------------------------------------------------------------------ */

#define SCHED_ID_BATCH 256
#define SCHED_LIVE_BATCH 256

uint64_t mqs__task_id_next(mqs_runtime_t *rt, struct mqs_worker *w)
{
    if (!w)
        return atomic_fetch_add(&rt->next_id, 1);
    if (w->id_next == w->id_end) {
        w->id_next = atomic_fetch_add(&rt->next_id, SCHED_ID_BATCH);
        w->id_end = w->id_next + SCHED_ID_BATCH;
    }
    return w->id_next++;
}

void mqs__live_get(mqs_runtime_t *rt, struct mqs_worker *w)
{
    if (!w) {
        atomic_fetch_add(&rt->live, 1);
        return;
    }
    if (w->live_units == 0) {
        atomic_fetch_add(&rt->live, SCHED_LIVE_BATCH);
        w->live_units = SCHED_LIVE_BATCH;
    }
    w->live_units--;
}

/* Give n units back to rt->live; the last one wakes runtime destroy. */
static void live_put(mqs_runtime_t *rt, int64_t n)
{
    if (n && atomic_fetch_sub(&rt->live, n) == n) {
        atomic_fetch_add(&rt->live_futex, 1);
        futex_wake(&rt->live_futex, INT_MAX);
    }
}

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

bool mqs__spin_revoke(mqs__spinlock_t *l, bool wait)
{
    struct mqs_worker *self = mqs__worker_self();
    if (self && &self->rq.own_lock == l)
        return true; /* the owner itself: its own stores are in order */
    atomic_store_explicit(&l->notes, MQS__LOCK_REMOTE | MQS__LOCK_UNBIAS,
                          memory_order_relaxed);
    /* Every thread of the process passes a full fence: the owner's
     * owner_in store is visible now, or it will see v held. */
#ifdef SYS_membarrier
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        mqs__panic("membarrier failed on a biased run-queue lock");
#endif
    for (unsigned i = 0;
         atomic_load_explicit(&l->owner_in, memory_order_acquire); i++) {
        if (!wait && i >= 4096)
            return false;
        mqs__cpu_relax();
    }
    return true;
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

static __attribute__((noinline)) void own_lock_slow(struct mqs_worker *w)
{
    mqs__spinlock_t *l = w->rq.lock;
    mqs__spin_acquire(l);
    bias_upkeep(w, l);
}

/* Lock w's own rq from w.  Returns true when it entered through the bias
 * (two plain stores, no atomic read-modify-write); pass the result to
 * own_unlock. */
static MQS__HOT bool own_lock(struct mqs_worker *w)
{
    mqs__spinlock_t *l = w->rq.lock;
    if (MQS__LIKELY(atomic_load_explicit(&l->biased, memory_order_relaxed))) {
        atomic_store_explicit(&l->owner_in, 1, memory_order_relaxed);
        /* Compiler order only: the hardware order of the store above and
         * the loads below is what a revoker's membarrier provides. */
        atomic_signal_fence(memory_order_seq_cst);
        if (MQS__LIKELY(
                (atomic_load_explicit(&l->v, memory_order_acquire) |
                 atomic_load_explicit(&l->notes, memory_order_relaxed)) == 0))
            return true;
        atomic_store_explicit(&l->owner_in, 0, memory_order_release);
    }
    if (MQS__UNLIKELY(!w->bias_ok))
        mqs__spin_acquire(l); /* never biased (a shared queue): plain */
    else
        own_lock_slow(w);
    return false;
}

static MQS__HOT void own_unlock(struct mqs_worker *w, bool fast)
{
    if (fast)
        atomic_store_explicit(&w->rq.lock->owner_in, 0, memory_order_release);
    else
        mqs__spin_unlock(w->rq.lock);
}

/* Going idle: drop the bias, so wake-ups onto this worker (the common
 * remote lock of an idle worker) take the plain path. */
static void bias_drop(struct mqs_worker *w)
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
    return mqs__rq_state(rq);
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
}
void mqs_rq_unlock(struct mqs_rq *rq)
{
    mqs__spin_unlock(rq->lock);
}
bool mqs_rq_trylock(struct mqs_rq *rq)
{
    return mqs__spin_trylock(rq->lock);
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
 * (rq_hint_settle): a ping-pong that empties and refills the queue
 * every half trip would otherwise pay four locked atomics per trip on
 * lines every worker shares.  Rejected: dropping the count at once (that
 * was the cost) and a per-worker scan instead of the hint (O(workers) on
 * every pick, the 2001 design's weakness).
 */
void mqs_rq_publish(struct mqs_rq *rq, unsigned nr, unsigned best)
{
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
static void rq_hint_settle(struct mqs_worker *w)
{
    if (atomic_load_explicit(&w->rq.best_prio, memory_order_relaxed) !=
        MQS_PRIO_NONE)
        return;
    bool fast = own_lock(w);
    rq_hint_settle_locked(&w->rq);
    own_unlock(w, fast);
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
    return mqs__se_allowed(se, w);
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

static void count_pulls(struct mqs_worker *w, int why, int n)
{
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
        t->stolen = true;
    }
    mqs__spin_unlock(victim->lock);
    if (n > 0)
        count_pulls(rq->rt->workers[rq->worker], why, n);
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
    t->stolen = false;
    atomic_store_explicit(&t->queued_on, rq->worker, memory_order_relaxed);
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

/* ------------------------------------------------------------------ */
/* Placement and enqueue                                               */
/* ------------------------------------------------------------------ */

/* The first worker se may use at or after `from`, wrapping around. */
static int allowed_from(mqs_runtime_t *rt, const struct mqs_sched_entity *se,
                        int from)
{
    for (int i = 0; i < rt->nworkers; i++) {
        int w = (from + i) % rt->nworkers;
        if (mqs__se_allowed(se, w))
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

static bool should_preempt(struct mqs_rq *rq, struct mqs_task *curr,
                           struct mqs_task *woken);

/* If some worker idles, kick it so that it comes and steals. */
static void kick_idle(mqs_runtime_t *rt)
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

/* Claim an idle worker se may use, its last one first; -1 if none.  A
 * word of the idle map at a time, masked by the affinity: a wake-up
 * reads MQS_MAX_WORKERS / 64 words however many workers there are (it
 * called two functions per worker before). */
static int claim_idle_allowed(mqs_runtime_t *rt,
                              const struct mqs_sched_entity *se)
{
    int last = se->last_worker;
    if (last >= 0 && mqs__se_allowed(se, last) &&
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
    if ((flags & MQS_ENQ_SYNC) && waker >= 0 && mqs__se_allowed(se, waker))
        return waker;
    if (last >= 0 && mqs__se_allowed(se, last))
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
        n += mqs__se_allowed(&t->se, i);
    int k = (int)((r & 0xffffffffu) % (uint64_t)n), w = 0;
    for (;; w++)
        if (mqs__se_allowed(&t->se, w) && k-- == 0)
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

/* Queue t on rq; rq's lock held. */
static void rq_enqueue_locked(struct mqs_rq *rq, struct mqs_task *t, int flags)
{
    if (atomic_load_explicit(&t->queued_on, memory_order_relaxed) != -1)
        mqs__panic("task %s queued on worker %d while already queued on "
                   "worker %d (invariant 1: at most one queue)",
                   t->name, rq->worker, atomic_load(&t->queued_on));
    atomic_store_explicit(&t->queued_on, rq->worker, memory_order_relaxed);
    rq->rt->policy->enqueue(rq, &t->se, flags);
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
    mqs__apply_pending(t);
    if ((flags & MQS_ENQ_SYNC) && self && mqs__shuffle_coin(self, 1))
        flags &= ~MQS_ENQ_SYNC;
    int target = select_worker(rt, t, waker, flags);
    struct mqs_worker *tw = rt->workers[target];
    t->se.queued_at_ns = self ? self->now : mqs__clock_ns(&rt->clock);
    bool preempt = false, fast = false;
    if (target == waker)
        fast = own_lock(tw);
    else
        mqs__spin_lock(tw->rq.lock);
    rq_enqueue_locked(&tw->rq, t, flags);
    /* Decided under the lock: once it is dropped t may run elsewhere,
     * end and be freed. */
    if (target == waker && (flags & MQS_ENQ_WAKEUP) && self->curr &&
        atomic_load_explicit(&self->curr->state, memory_order_relaxed) ==
            MQS__RUNNING)
        preempt = should_preempt(&tw->rq, self->curr, t);
    if (target == waker)
        own_unlock(tw, fast);
    else
        mqs__spin_unlock(tw->rq.lock);
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
    /* Work piles up on the target while some worker idles: let that one
     * come and steal. */
    if (atomic_load_explicit(&tw->rq.nr_queued, memory_order_relaxed) > 1)
        kick_idle(rt);
    if (me)
        mqs__rt_leave(me);
    return false;
}

/* ------------------------------------------------------------------ */
/* Waking                                                              */
/* ------------------------------------------------------------------ */

/* Should woken run before curr on rq?  rq's lock held. */
static bool should_preempt(struct mqs_rq *rq, struct mqs_task *curr,
                           struct mqs_task *woken)
{
    const struct mqs_policy *p = rq->rt->policy;
    if (!p->wake_preempt)
        return woken->se.prio < curr->se.prio;
    return p->wake_preempt(rq, &curr->se, &woken->se);
}

void mqs__wake(struct mqs_task *t)
{
    mqs__wake_flags(t, 0);
}

/* flags: MQS_ENQ_SYNC when the waker is likely to block soon (a pipe or
 * channel partner: Linux's WF_SYNC heuristic for pipes), so placement may
 * keep the woken task on the waker's worker. */
void mqs__wake_flags(struct mqs_task *t, int flags)
{
    mqs_runtime_t *rt = t->rt;
    while (atomic_load_explicit(&t->on_cpu, memory_order_acquire))
        mqs__cpu_relax();
    MQS__STAT_ADD(t->events.wakeups, 1);
    atomic_store_explicit(&t->state, MQS__RUNNABLE, memory_order_relaxed);
    struct mqs_worker *self = mqs__worker_self();
    if (self && self->rt == rt && self->curr)
        t->se.woke_at_ns = self->now;
    /* A more urgent task woken onto this very worker runs now: the wake
     * call is a scheduling point for the waker.  (t must not be touched
     * after the enqueue: it may already run elsewhere.) */
    if (mqs__enqueue_task(rt, t, MQS_ENQ_WAKEUP | flags)) {
        self = mqs__worker_self();
        mqs__schedule(self, self->curr, MQS__SW_YIELD);
    } else if (self && self->curr && self->in_runtime == 0 &&
               mqs__shuffle_coin(self, 2)) {
        /* Random-schedule mode: the waker, in its own code (not inside
         * a scheduling point or an exit), yields as a preempting
         * wake-up would have made it. */
        mqs__schedule(self, self->curr, MQS__SW_YIELD);
    }
}

/* ------------------------------------------------------------------ */
/* Switching                                                           */
/* ------------------------------------------------------------------ */

/* Does prev's stack die with this switch?  Only ASan asks (it drops the
 * fake stack); elsewhere the atomic load of the state is not paid. */
static MQS__HOT bool switch_dying(struct mqs_task *prev)
{
#if defined(MQS_ASAN)
    return prev && prev->state == MQS__DEAD;
#else
    (void)prev;
    return false;
#endif
}

/* Switch from the current context (task prev, or the loop when prev is
 * NULL) to `to` (a task, or the loop when NULL).  Returns when the
 * context is resumed, possibly on another worker. */
static MQS__HOT struct mqs_worker *switch_to(struct mqs_worker *w,
                                             struct mqs_task *prev,
                                             struct mqs_task *to)
{
    void **save = prev ? &prev->sp : &w->loop_sp;
    void *fake = NULL;
    if (to)
        mqs__switch_enter(switch_dying(prev) ? NULL : &fake,
                          to->stack_lo,
                          (size_t)((char *)to->stack_hi -
                                   (char *)to->stack_lo),
                          to->tsan_fiber);
    else
        mqs__switch_enter(&fake, w->loop_stack_lo, w->loop_stack_size,
                          w->tsan_fiber);
    w = mqs__ctx_switch(save, to ? to->sp : w->loop_sp, w);
    mqs__switch_leave(fake);
    return w;
}

void mqs__finish_switch(struct mqs_worker *w)
{
    struct mqs_task *prev = w->prev;
    if (!prev)
        return;
    w->prev = NULL;
    int why = w->prev_why;
    bool detached = prev->detached; /* prev may be freed once off-CPU */
    atomic_store_explicit(&prev->on_cpu, 0, memory_order_release);
    if (MQS__LIKELY(why <= MQS__SW_BLOCK))
        return; /* queued again, or waiting: nothing left to do */
    if (why == MQS__SW_MOVE) {
        /* It yielded on a worker its affinity no longer allows; its
         * context is saved now, so it can be placed elsewhere. */
        atomic_store_explicit(&prev->resched_move, false,
                              memory_order_relaxed);
        mqs__enqueue_task(w->rt, prev, MQS_ENQ_MIGRATED);
    } else if (why == MQS__SW_CHILD) {
        /* The parked spawner may move now: an idle worker may take it,
         * as it would have taken the child before child-first. */
        kick_idle(w->rt);
    } else if (why == MQS__SW_EXIT) {
        MQS__STAT_ADD(w->stats.exits, 1);
        if (detached)
            mqs__task_release(prev);
        if (++w->live_units > 2 * SCHED_LIVE_BATCH) {
            w->live_units -= SCHED_LIVE_BATCH;
            live_put(w->rt, SCHED_LIVE_BATCH);
        }
    }
}

/* Account the run that ends now for task t on worker w. */
static MQS__HOT uint64_t account_run(struct mqs_worker *w, struct mqs_task *t,
                                     uint64_t now)
{
    uint64_t ran = now - t->se.exec_start_ns;
    if ((int64_t)ran < 0)
        ran = 0;
    MQS__STAT_ADD(t->stats.run_ns, ran);
    MQS__STAT_ADD(w->stats.run_ns, ran);
    return ran;
}

/* Start running t on w at w->now. */
static MQS__HOT void account_start(struct mqs_worker *w, struct mqs_task *t,
                                   uint64_t now)
{
    uint64_t waited = now - t->se.queued_at_ns;
    if ((int64_t)waited > 0)
        MQS__STAT_ADD(t->stats.wait_ns, waited);
    MQS__STAT_ADD(t->stats.switches, 1);
    if (t->se.last_worker != w->index) {
        if (t->se.last_worker >= 0) {
            MQS__STAT_ADD(t->events.migrations, 1);
            MQS__STAT_ADD(w->stats.migrations, 1);
        }
        t->se.last_worker = w->index;
    }
    t->se.exec_start_ns = now;
    atomic_store_explicit(&t->on_cpu, 1, memory_order_relaxed);
    atomic_store_explicit(&t->state, MQS__RUNNING, memory_order_relaxed);
    w->curr = t;
}

/* Check what pick returned: queued here (or stolen for us), allowed. */
static MQS__HOT struct mqs_task *checked_pick(struct mqs_worker *w,
                                     struct mqs_sched_entity *se)
{
    if (!se)
        return NULL;
    struct mqs_task *t = mqs_se_entry(se, struct mqs_task, se);
    int q = atomic_load_explicit(&t->queued_on, memory_order_relaxed);
    if (q == w->index)
        atomic_store_explicit(&t->queued_on, -1, memory_order_relaxed);
    else if (q >= 0 && (w->rt->policy->flags & MQS_POLICY_SHARED_RQ)) {
        /* Queued through another worker, which may still be on its
         * stack (it yielded there and is mid-switch). */
        if (t != w->curr && !mqs_se_movable(se))
            mqs__panic("policy %s: pick on worker %d returned task %s, "
                       "which is still on worker %d's stack (shared queue: "
                       "skip tasks that are not mqs_se_movable)",
                       w->rt->policy->name, w->index, t->name, q);
        atomic_store_explicit(&t->queued_on, -1, memory_order_relaxed);
    }
    else if (!(q == -1 && t->stolen))
        mqs__panic("policy %s: pick on worker %d returned task %s, which "
                   "is queued on %d, not here",
                   w->rt->policy->name, w->index, t->name, q);
    t->stolen = false;
    if (!mqs__se_allowed(se, w->index))
        mqs__panic("policy %s: pick on worker %d returned task %s outside "
                   "its affinity mask (invariant 4)",
                   w->rt->policy->name, w->index, t->name);
    return t;
}

/* pick with the rq lock taken here. */
static struct mqs_task *pick_locked(struct mqs_worker *w)
{
    bool fast = own_lock(w);
    struct mqs_task *t = checked_pick(w, w->rt->policy->pick(&w->rq));
    own_unlock(w, fast);
    return t;
}

/* The policy's balancing first, then a spawner parked on another
 * worker's run-next stack (child runs first, runnext.c). */
static struct mqs_task *balance_and_pick(struct mqs_worker *w, int why)
{
    const struct mqs_policy *p = w->rt->policy;
    if (w->rt->nworkers == 1)
        return NULL;
    if (p->balance && p->balance(&w->rq, why) > 0) {
        struct mqs_task *t = pick_locked(w);
        if (t)
            return t;
    }
    struct mqs_task *t = mqs__runnext_steal(w);
    if (t)
        count_pulls(w, why, 1);
    return t;
}

/* Sample wall and thread CPU time together (stall detection). */
static void stall_sample(struct mqs_worker *w)
{
    w->stall_wall0 = w->now;
    w->stall_cpu0 = mqs__thread_cpu_ns();
}

/*
 * How long of a run that ended at w->now the worker's thread was off its
 * CPU.  Called only for runs of MQS_STALL_CHECK_NS or more, and at most
 * once per MQS_STALL_SPACING_NS (a system call is not free: ~0.3 us):
 * a stall makes the run it hits long, so the runs since the last sample
 * were short and stall-free (or, within the spacing, not measured) and
 * the sample's off-CPU time belongs to this run.  Samples are also taken
 * every millisecond (housekeeping) and renewed after the worker parks
 * (its parked time is no stall).
 */
static __attribute__((noinline)) uint64_t run_stall(struct mqs_worker *w,
                                                   uint64_t ran)
{
    uint64_t wall0 = w->stall_wall0, cpu0 = w->stall_cpu0, off = 0;
    stall_sample(w);
    if (wall0) {
        uint64_t wall = w->now - wall0, used = w->stall_cpu0 - cpu0;
        off = wall > used ? wall - used : 0;
    }
    return off < ran ? off : ran;
}

/* Timers and the periodic balancer, due at this scheduling point? */
static MQS__HOT void housekeeping(struct mqs_worker *w)
{
    /* Timers are due by the monotonic clock that deadlines are set on:
     * the cycle-counter estimate only says when to look. */
    if (w->now >= atomic_load_explicit(&w->timers.next, memory_order_relaxed))
        mqs__timers_run(w, w->now = mqs__clock_resync(&w->clock));
    if (w->now >= w->next_balance) {
        w->now = mqs__clock_resync(&w->clock);
        w->next_balance = w->now + 1000000;
        stall_sample(w);
        rq_hint_settle(w);
        mqs__watchdog_check(w); /* stall watchdog, when on */
        /* Work has waited here all period while a worker idles: wake
         * it to steal.  (A queue that empties between the ticks, like a
         * ping-pong's, is served: kicking there only made the idle
         * worker revoke this lock's bias every period for nothing.) */
        unsigned empties = atomic_load_explicit(&w->rq.empties,
                                                memory_order_relaxed);
        if (atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed) &&
            empties == w->empties_seen)
            kick_idle(w->rt);
        w->empties_seen = empties;
        if (w->rt->policy->balance && w->rt->nworkers > 1)
            w->rt->policy->balance(&w->rq, MQS_BALANCE_PERIODIC);
        /* Spawners parked by child-first keep queued tasks waiting at
         * most this long (with nothing queued, they wait for no one). */
        if (atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed))
            mqs__runnext_flush(w);
    }
}

/* Re-queue a task that yielded: here if allowed, else where it may run.
 * Returns what the policy's yield fast path chose to run next, if it took
 * that path (never while the runtime stops). */
static MQS__HOT struct mqs_sched_entity *requeue_prev(struct mqs_worker *w,
                                             struct mqs_task *prev,
                                             uint64_t now, bool stopping)
{
    const struct mqs_policy *p = w->rt->policy;
    mqs__apply_pending(prev);
    if (MQS__UNLIKELY(!mqs__se_allowed(&prev->se, w->index))) {
        /* It cannot be queued elsewhere before its context is saved:
         * mqs__finish_switch places it once on_cpu is 0. */
        atomic_store_explicit(&prev->resched_move, true,
                              memory_order_relaxed);
        return NULL;
    }
    prev->se.queued_at_ns = now;
    if (p->yield && !stopping) {
        atomic_store_explicit(&prev->queued_on, w->index,
                              memory_order_relaxed);
        struct mqs_sched_entity *next = p->yield(&w->rq, &prev->se);
        if (MQS__LIKELY(next != NULL))
            return next;
        atomic_store_explicit(&prev->queued_on, -1, memory_order_relaxed);
    }
    rq_enqueue_locked(&w->rq, prev, MQS_ENQ_YIELD);
    return NULL;
}

void mqs__schedule(struct mqs_worker *w, struct mqs_task *prev, int why)
{
    const struct mqs_policy *p = w->rt->policy;
    /* Inside the runtime from here to the return into prev's code; the
     * depth is prev's own and comes back with it on whichever worker
     * resumes it (the context switched to restores its own). */
    unsigned depth = w->in_runtime;
    w->in_runtime = depth + 1;
    atomic_signal_fence(memory_order_seq_cst);
    w->now = mqs__clock_ns(&w->clock);
    int64_t run = (int64_t)(w->now - prev->se.exec_start_ns);
    prev->se.stall_ns =
        MQS__UNLIKELY(run >= (int64_t)MQS_STALL_CHECK_NS) &&
                w->now - w->stall_wall0 >= MQS_STALL_SPACING_NS
            ? run_stall(w, (uint64_t)run)
            : 0;
    /* prev's run ends here: timers and balancing below are the
     * scheduler's time, not prev's (nor the next task's). */
    uint64_t end = w->now;
    housekeeping(w);
    /* Child first: a parked spawner resumes as its child blocks or ends;
     * a yield hands the parked ones to the policy (runnext.c). */
    struct mqs_task *parked = NULL;
    if (why != MQS__SW_YIELD)
        parked = mqs__runnext_pop(w);
    else if (MQS__UNLIKELY(atomic_load_explicit(&w->runnext.n,
                                                memory_order_relaxed)))
        mqs__runnext_flush(w);
    /* In a register from here on: the stores below could alias w->now. */
    uint64_t now = w->now;
    bool fast_lock = own_lock(w);
    /* A lock taken the slow way may have been waited for, milliseconds
     * when its holder lost its CPU: that wait is no task's run (it hid
     * host preemptions from the next task's stall check), so the next
     * run starts after it.  One more clock read, off the biased path. */
    if (!fast_lock)
        now = w->now = mqs__clock_ns(&w->clock);
    uint64_t ran = account_run(w, prev, end);
    if (p->put_prev)
        p->put_prev(&w->rq, &prev->se, ran);
    /* A stopping runtime sends every worker back to its loop. */
    bool stopping = atomic_load_explicit(&w->rt->stopping,
                                         memory_order_relaxed);
    bool move = false;
    struct mqs_sched_entity *fast = NULL;
    if (why == MQS__SW_YIELD) {
        atomic_store_explicit(&prev->state, MQS__RUNNABLE,
                              memory_order_relaxed);
        fast = requeue_prev(w, prev, now, stopping);
        move = !fast && atomic_load_explicit(&prev->resched_move,
                                             memory_order_relaxed);
    }
    struct mqs_task *next = fast       ? checked_pick(w, fast)
                            : parked   ? parked
                            : stopping ? NULL
                                       : checked_pick(w, p->pick(&w->rq));
    own_unlock(w, fast_lock);
    if (next == prev) {
        account_start(w, prev, now);
        atomic_signal_fence(memory_order_seq_cst);
        w->in_runtime = depth;
        return;
    }
    if (!next && why != MQS__SW_YIELD && !stopping)
        next = balance_and_pick(w, MQS_BALANCE_NEWIDLE);
    MQS__STAT_ADD(w->stats.switches, 1);
    w->prev = prev;
    w->prev_why = move ? MQS__SW_MOVE : why;
    if (next)
        account_start(w, next, now);
    else
        w->curr = NULL;
    w = switch_to(w, prev, next);
    mqs__finish_switch(w);
    atomic_signal_fence(memory_order_seq_cst);
    w->in_runtime = depth;
}

/* ------------------------------------------------------------------ */
/* Child runs first (the stack of parked spawners is in runnext.c)     */
/* ------------------------------------------------------------------ */

bool mqs__child_first(struct mqs_worker *w, struct mqs_task *prev,
                      struct mqs_task *child)
{
    return prev && w->curr == prev && !child->detached &&
           (w->rt->policy->flags & MQS_POLICY_CHILD_FIRST) &&
           child->se.prio <= prev->se.prio &&
           mqs__se_allowed(&child->se, w->index) &&
           mqs__se_allowed(&prev->se, w->index) &&
           !atomic_load_explicit(&prev->pend_flags, memory_order_relaxed) &&
           !atomic_load_explicit(&w->rt->stopping, memory_order_relaxed) &&
           child->se.prio <= mqs__best_prio_anywhere(w->rt) &&
           !mqs__shuffle_coin(w, 1) && mqs__runnext_push(w, prev);
}

void mqs__run_child(struct mqs_worker *w, struct mqs_task *prev,
                    struct mqs_task *child)
{
    const struct mqs_policy *p = w->rt->policy;
    unsigned depth = w->in_runtime; /* as in mqs__schedule */
    w->in_runtime = depth + 1;
    atomic_signal_fence(memory_order_seq_cst);
    uint64_t now = w->now = mqs__clock_ns(&w->clock);
    uint64_t ran = account_run(w, prev, now);
    prev->se.stall_ns = 0; /* not measured here (a spawn is short) */
    if (p->put_prev) {
        bool fast_lock = own_lock(w);
        p->put_prev(&w->rq, &prev->se, ran);
        own_unlock(w, fast_lock);
    }
    atomic_store_explicit(&prev->state, MQS__RUNNABLE, memory_order_relaxed);
    prev->se.queued_at_ns = child->se.queued_at_ns = now;
    MQS__STAT_ADD(w->stats.switches, 1);
    w->prev = prev;
    w->prev_why = MQS__SW_CHILD;
    account_start(w, child, now);
    w = switch_to(w, prev, child);
    mqs__finish_switch(w);
    atomic_signal_fence(memory_order_seq_cst);
    w->in_runtime = depth;
}

/* ------------------------------------------------------------------ */
/* The worker loop                                                     */
/* ------------------------------------------------------------------ */

static bool has_work(struct mqs_worker *w)
{
    return atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed) ||
           atomic_load_explicit(&w->rt->stopping, memory_order_relaxed) ||
           mqs__clock_ns(&w->clock) >=
               atomic_load_explicit(&w->timers.next, memory_order_relaxed);
}

/* Steal, spin for idle_spin_ns (stealing again whenever kicked: a busy
 * worker kicks an idle one when work piles up), then park until kicked or
 * the next timer.  Returns a task stolen for this worker, or NULL to look
 * at the local queue again. */
static struct mqs_task *idle_wait(struct mqs_worker *w)
{
    uint64_t t0 = mqs__clock_ns(&w->clock);
    unsigned seen = atomic_load(&w->park_futex);
    bias_drop(w);
    rq_hint_settle(w);
    mqs__publish_idle(w->rt, w->index, true);
    struct mqs_task *t = balance_and_pick(w, MQS_BALANCE_IDLE);
    while (!t && mqs__clock_ns(&w->clock) - t0 < (uint64_t)w->rt->idle_spin_ns) {
        if (has_work(w))
            goto out;
        unsigned now_seen = atomic_load_explicit(&w->park_futex,
                                                 memory_order_relaxed);
        if (now_seen != seen) {
            seen = now_seen;
            t = balance_and_pick(w, MQS_BALANCE_IDLE);
            continue;
        }
        for (int i = 0; i < 32; i++)
            mqs__cpu_relax();
    }
    if (t)
        goto out;
    atomic_store(&w->parked, 1);
    /* A waker may have claimed this worker's idle mark (placement claims
     * it before queueing there) and then queued nothing here, or queued
     * work that another worker stole: mark it again before parking, or
     * the worker sleeps unmarked, no placement picks it, and destroy's
     * check that every worker idles never passes.  A claim whose enqueue
     * is still coming finds has_work() below or kicks the futex. */
    mqs__publish_idle(w->rt, w->index, true);
    if (!has_work(w) && atomic_load(&w->park_futex) == seen) {
        uint64_t next = atomic_load(&w->timers.next);
        uint64_t now = mqs__clock_ns(&w->clock);
        MQS__STAT_ADD(w->stats.parks, 1);
        futex_wait(&w->park_futex, seen,
                   mqs__watchdog_park_ns(w->rt, next == UINT64_MAX ? UINT64_MAX
                                      : (next > now ? next - now : 0)));
        /* Parked time is no stall: a fresh sample, so that the first run
         * after the park is checked against it (with none, it was not
         * checked at all; an idle spin keeps the old sample, its time
         * is on the CPU). */
        w->now = mqs__clock_ns(&w->clock);
        stall_sample(w);
    }
    atomic_store(&w->parked, 0);
out:
    MQS__STAT_ADD(w->stats.idle_ns, mqs__clock_ns(&w->clock) - t0);
    mqs__publish_idle(w->rt, w->index, false);
    return t;
}

void mqs__worker_loop(struct mqs_worker *w)
{
    w->bias_ok = w->rt->bias_ok;
    w->bias_quiet_since = mqs__clock_ns(&w->clock);
    for (;;) {
        /* The loop is the runtime (set again after each return to it,
         * which comes with the depth of the task that left). */
        w->in_runtime = 1;
        atomic_signal_fence(memory_order_seq_cst);
        mqs__finish_switch(w);
        if (atomic_load(&w->rt->stopping))
            return;
        w->now = mqs__clock_ns(&w->clock);
        housekeeping(w);
        struct mqs_task *next = pick_locked(w);
        if (!next) {
            live_put(w->rt, w->live_units);
            w->live_units = 0;
            next = idle_wait(w);
        }
        if (!next)
            continue;
        MQS__STAT_ADD(w->stats.switches, 1);
        w->now = mqs__clock_ns(&w->clock);
        account_start(w, next, w->now);
        w = switch_to(w, NULL, next);
    }
}

#undef SCHED_ID_BATCH
#undef SCHED_LIVE_BATCH
