/*
 * runnext.c - child runs first: the per-worker stack of spawners that
 * gave the worker to the child they just spawned; and the hand-off slot,
 * the task a synchronous wake-up gave the worker to (mqs__wake_next
 * below).
 *
 * A task that spawns a child and later joins it (skynet, fork/join,
 * divide and conquer) wants the child to run now, on the same worker, as
 * a call would: the spawner's frames and the child's argument are hot,
 * and the tree then runs depth first, so about depth x fanout tasks are
 * alive at once instead of the whole tree.  mqs_spawn of a joinable
 * child from a task, under a policy with MQS_POLICY_CHILD_FIRST (mq; a
 * policy that sets tasks up in enqueue(NEW), or has its own child-first
 * rule as o1, leaves it out), therefore switches straight to the child
 * when it may (mqs__run_child below: same worker allowed, not less urgent than the spawner nor
 * than anything queued anywhere) and parks the spawner here, on top of
 * the worker's run-next stack.  When the running task next blocks or
 * exits, the worker resumes the top of this stack before asking the
 * policy: a parent resumes as its child ends, like a return.
 *
 * This is the Cilk work-first rule and its work stealing: an idle worker
 * takes the BOTTOM entry of another worker's stack (the oldest spawner,
 * the one with the most work left: the root of the tree), after the
 * policy's own balancing found nothing.  Entries are neither queued nor
 * running for the policy (see the child-first note in mqs/policy.h).
 *
 * Bounds, so the stack never hides work: RT order holds because the top
 * is resumed only when nothing more urgent is queued anywhere (else the
 * whole stack goes to the policy); a yield, and the periodic balancer
 * every millisecond when tasks are queued on this worker, hand the whole
 * stack to the policy (bottom first, MQS_ENQ_PREEMPTED), so queued tasks
 * wait for the stack at most one balancing period; it holds RUNNEXT_MAX entries, beyond which a spawn
 * just queues the child.
 *
 * Rejected: Go's runnext slot (the NEW task waits in a one-entry slot
 * while the spawner continues): a parent that spawns ten children before
 * joining pushes nine of them to the FIFO queue, and the tree still runs
 * breadth first (all 1.1 M skynet tasks alive).  A policy op for it:
 * seven policies would each need the same LIFO.  A lock-free Chase-Lev
 * deque: the lock is owner-local almost always and simpler to prove.
 */
#include "internal.h"
#include "rq.h"
#include "switch.h"

/* The hand-off's outcome for the waker that filled the slot: it blocked
 * with its wakee still there (a hit), or the wakee went to the policy (a
 * miss: the waker woke another, yielded or was stopped). */
static void handoff_scored(struct mqs__runnext *r, bool hit)
{
    struct mqs_task *by = r->woken_by;
    if (hit && by->handoff_score < 3)
        by->handoff_score++;
    else if (!hit && by->handoff_score)
        by->handoff_score--;
}

/* Is a level more urgent than `level` queued anywhere, as seen from w,
 * the calling worker with no lock held?  The runtime-wide hint may still
 * count w's own queue, emptied since, at its last level until w's next
 * housekeeping (rq.c): partners at two levels (ule's interactive and
 * batch ones, a nice -5 task and a nice 0 one) left the more urgent
 * one's level there after each of its picks, and every wake-up of the
 * other was then refused the hand-off.  So when the hint says yes and
 * w's queue is empty, w settles its own entry first, as its housekeeping
 * would, and reads again: the owner's lock, and two atomics when the
 * entry was stale, off the path where the levels agree (out of line:
 * called from the wake-up's hand-off, it cost the pipe round trip 2%
 * when not inlined whole). */
static __attribute__((noinline, cold)) bool
urgent_waits_settled(struct mqs_worker *w, unsigned level)
{
    if (atomic_load_explicit(&w->rq.best_prio, memory_order_relaxed) !=
        MQS_PRIO_NONE)
        return true;
    mqs__rq_hint_settle(w);
    return level > mqs__best_prio_anywhere(w->rt);
}

static MQS__HOT bool urgent_waits(struct mqs_worker *w, unsigned level)
{
    return MQS__UNLIKELY(level > mqs__best_prio_anywhere(w->rt)) &&
           urgent_waits_settled(w, level);
}

/* May t, taken off w's slot or stack, run on w now?  Else it goes to
 * the policy as `flags`. */
static bool may_run_next(struct mqs_worker *w, struct mqs_task *t, int flags)
{
    mqs__apply_pending(t);
    if (mqs_se_allowed(&t->se, w->index) && !urgent_waits(w, t->se.level))
        return true;
    mqs__enqueue_task(w->rt, t, flags);
    return false;
}

/* The hand-off slot's task (*woken set), else the stack's top entry, if
 * it may run here now; else NULL (no lock held). */
struct mqs_task *mqs__runnext_pop(struct mqs_worker *w, bool *woken)
{
    struct mqs__runnext *r = &w->runnext;
    struct mqs_task *t = atomic_load_explicit(&r->woken,
                                              memory_order_relaxed);
    *woken = false;
    if (t) {
        handoff_scored(r, true);
        atomic_store_explicit(&r->woken, NULL, memory_order_relaxed);
        if (may_run_next(w, t, MQS_ENQ_WAKEUP)) {
            *woken = true;
            return t;
        }
    }
    if (!atomic_load_explicit(&r->n, memory_order_relaxed))
        return NULL;
    mqs__spin_lock(&r->lock);
    unsigned n = atomic_load_explicit(&r->n, memory_order_relaxed);
    t = n ? r->v[n - 1] : NULL;
    if (t)
        atomic_store_explicit(&r->n, n - 1, memory_order_relaxed);
    mqs__spin_unlock(&r->lock);
    if (!t)
        return NULL;
    mqs__apply_pending(t);
    if (!mqs_se_allowed(&t->se, w->index) || urgent_waits(w, t->se.level)) {
        /* Something more urgent waits (or t may not run here): the
         * policy decides for the whole stack. */
        mqs__enqueue_task(w->rt, t, MQS_ENQ_PREEMPTED);
        mqs__runnext_flush(w);
        return NULL;
    }
    return t;
}

bool mqs__runnext_push(struct mqs_worker *w, struct mqs_task *t)
{
    struct mqs__runnext *r = &w->runnext;
    mqs__spin_lock(&r->lock);
    unsigned n = atomic_load_explicit(&r->n, memory_order_relaxed);
    bool ok = n < MQS__RUNNEXT_MAX;
    if (ok) {
        r->v[n] = t;
        atomic_store_explicit(&r->n, n + 1, memory_order_relaxed);
    }
    mqs__spin_unlock(&r->lock);
    return ok;
}

/* Take entry i of r (lock held), closing the gap. */
static struct mqs_task *runnext_remove(struct mqs__runnext *r, unsigned i)
{
    unsigned n = atomic_load_explicit(&r->n, memory_order_relaxed);
    struct mqs_task *t = r->v[i];
    for (unsigned j = i + 1; j < n; j++)
        r->v[j - 1] = r->v[j];
    atomic_store_explicit(&r->n, n - 1, memory_order_relaxed);
    return t;
}

/* Hand every entry to the policy, oldest first, and the slot's task
 * (owner, no lock held). */
void mqs__runnext_flush(struct mqs_worker *w)
{
    struct mqs__runnext *r = &w->runnext;
    struct mqs_task *woken = atomic_load_explicit(&r->woken,
                                                  memory_order_relaxed);
    if (woken) {
        handoff_scored(r, false);
        atomic_store_explicit(&r->woken, NULL, memory_order_relaxed);
        mqs__enqueue_task(w->rt, woken, MQS_ENQ_WAKEUP | MQS__ENQ_SRC_SLOT);
    }
    while (atomic_load_explicit(&r->n, memory_order_relaxed)) {
        mqs__spin_lock(&r->lock);
        struct mqs_task *t =
            atomic_load_explicit(&r->n, memory_order_relaxed)
                ? runnext_remove(r, 0) : NULL;
        mqs__spin_unlock(&r->lock);
        if (t) {
            /* It may be the task whose switch away is in progress. */
            while (atomic_load_explicit(&t->on_cpu, memory_order_acquire))
                mqs__cpu_relax();
            mqs__enqueue_task(w->rt, t, MQS_ENQ_PREEMPTED);
        }
    }
}

/* The oldest entry of victim's stack that may move to w, or NULL. */
static struct mqs_task *runnext_take(struct mqs_worker *w,
                                     struct mqs_worker *victim)
{
    struct mqs__runnext *r = &victim->runnext;
    if (!atomic_load_explicit(&r->n, memory_order_relaxed) ||
        !mqs__spin_trylock(&r->lock))
        return NULL;
    struct mqs_task *t = NULL;
    unsigned n = atomic_load_explicit(&r->n, memory_order_relaxed);
    for (unsigned i = 0; i < n && !t; i++) {
        struct mqs_task *c = r->v[i];
        if (!atomic_load_explicit(&c->pend_flags, memory_order_relaxed) &&
            mqs_se_allowed(&c->se, w->index) &&
            !atomic_load_explicit(&c->on_cpu, memory_order_acquire))
            t = runnext_remove(r, i);
    }
    mqs__spin_unlock(&r->lock);
    return t;
}

struct mqs_task *mqs__runnext_steal(struct mqs_worker *w)
{
    mqs_runtime_t *rt = w->rt;
    unsigned best = mqs__best_prio_anywhere(rt);
    for (int i = 1; i < rt->nworkers; i++) {
        struct mqs_worker *v = rt->workers[(w->index + i) % rt->nworkers];
        struct mqs_task *t = runnext_take(w, v);
        if (!t)
            continue;
        if (t->se.level > best) {
            mqs__enqueue_task(rt, t, MQS_ENQ_PREEMPTED);
            return NULL;
        }
        return t;
    }
    return NULL;
}

/* A synchronous wake-up's hand-off: t, just made RUNNABLE (on_cpu 0) by
 * the task running on w, which is about to block, goes into w's hand-off
 * slot instead of to the policy, so the block switches straight to it
 * (mqs__runnext_pop) without enqueue or pick.  Only when t may run here,
 * is not more urgent than the waker (that one preempts it through the
 * policy), nothing more urgent waits anywhere, nothing else is queued
 * on w (the wakee would jump it: with tasks queued, FIFO order batches
 * a channel's messages, and the chat experiment's 10 rooms on two
 * workers delivered 45% fewer messages per second with the hand-off),
 * and no worker t may use idles: then placement gives it that worker,
 * as before (a "sync" waker often does not block: a channel sender with
 * more to send).  And only for a waker whose hand-offs mostly met its
 * block (handoff_score, one try in 16 while it is low): a reader that keeps waking writers as it works
 * through its input would hold each wakee in the slot, where no idle
 * worker takes it, until it wakes the next one.  One task waits in the
 * slot, as in Go's runnext: a waker that wakes several before it blocks
 * (a fan-out) hands the earlier ones to the policy, in order, where idle
 * workers can take them.  The slot is the owner's alone (plain stores:
 * on a paravirtualised host one locked instruction was a tenth of a
 * pipe round trip), so no idle worker takes its task: if the waker does
 * not block after all, the slot goes to the policy at the waker's next
 * scheduling point, which the preemption monitor brings at its second
 * look at the same slot (preempt.c, scan). */
bool mqs__wake_next(struct mqs_worker *w, struct mqs_task *t)
{
    struct mqs_task *curr = w->curr;
    if (!curr || !(w->rt->policy->flags & MQS_POLICY_WAKE_NEXT) ||
        (curr->handoff_score < 2 && (++curr->handoff_tries & 15)) ||
        t->se.level < curr->se.level ||
        atomic_load_explicit(&t->pend_flags, memory_order_relaxed) ||
        !mqs_se_allowed(&t->se, w->index) ||
        atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed) ||
        urgent_waits(w, t->se.level) ||
        mqs__idle_allowed(w->rt, &t->se) ||
        atomic_load_explicit(&w->rt->stopping, memory_order_relaxed) ||
        mqs__shuffle_coin(w, 1))
        return false;
    t->se.queued_at_ns = w->now;
    struct mqs__runnext *r = &w->runnext;
    struct mqs_task *older = atomic_load_explicit(&r->woken,
                                                  memory_order_relaxed);
    if (older)
        handoff_scored(r, false);
    r->woken_by = curr;
    if (MQS__UNLIKELY(w->trace))
        mqs__trace_wake(w->rt, t, w->index, MQS__TR_SRC_TASK, MQS_ENQ_SYNC,
                        true);
    atomic_store_explicit(&r->woken, t, memory_order_relaxed);
    if (older)
        mqs__enqueue_task(w->rt, older, MQS_ENQ_WAKEUP | MQS__ENQ_SRC_SLOT);
    return true;
}

/* May child run before prev, its spawner, goes on?  When it is more
 * urgent; at the same level only when prev is not realtime: a FIFO or
 * RR task runs until it yields or blocks, and a child at its priority
 * waits at the tail of the level (a thread created at the same
 * SCHED_FIFO priority does; conformance's
 * rt_child_of_equal_priority_waits_for_its_parent, which ran the
 * children first). */
static bool child_before(const struct mqs_task *prev,
                         const struct mqs_task *child)
{
    if (child->se.prio != prev->se.prio)
        return child->se.prio < prev->se.prio;
    return prev->se.cls != MQS_CLASS_FIFO && prev->se.cls != MQS_CLASS_RR;
}

/* The switch into the child: prev stops as at a scheduling point, but is
 * parked on the stack instead of queued (mqs__child_first pushed it). */
bool mqs__child_first(struct mqs_worker *w, struct mqs_task *prev,
                      struct mqs_task *child)
{
    return prev && w->curr == prev && !child->detached &&
           (w->rt->policy->flags & MQS_POLICY_CHILD_FIRST) &&
           child_before(prev, child) &&
           mqs_se_allowed(&child->se, w->index) &&
           mqs_se_allowed(&prev->se, w->index) &&
           !atomic_load_explicit(&prev->pend_flags, memory_order_relaxed) &&
           !atomic_load_explicit(&w->rt->stopping, memory_order_relaxed) &&
           !urgent_waits(w, child->se.level) &&
           !mqs__shuffle_coin(w, 1) && mqs__runnext_push(w, prev);
}

void mqs__run_child(struct mqs_worker *w, struct mqs_task *prev,
                    struct mqs_task *child)
{
    const struct mqs_policy *p = w->rt->policy;
    unsigned depth = w->in_runtime; /* as in mqs__schedule */
    w->in_runtime = depth + 1;
    atomic_signal_fence(memory_order_seq_cst);
    uint64_t now = mqs__sched_clock(w);
    uint64_t ran = mqs__account_run(w, prev, now);
    prev->se.stall_ns = 0; /* not measured here (a spawn is short) */
    if (p->put_prev) {
        bool fast_lock = mqs__own_lock(w);
        MQS__CHK_OP(&w->rq, "put_prev");
        p->put_prev(&w->rq, &prev->se, ran);
        mqs__own_unlock(w, fast_lock);
    }
    atomic_store_explicit(&prev->state, MQS__RUNNABLE, memory_order_relaxed);
    prev->se.queued_at_ns = child->se.queued_at_ns = now;
    MQS__STAT_ADD(w->stats.switches, 1);
    w->prev = prev;
    w->prev_why = MQS__SW_CHILD;
    if (MQS__UNLIKELY(w->trace)) {
        mqs__trace_stop(w, prev, MQS__TR_WHY_CHILD);
        mqs__trace_start(w, child);
    }
    mqs__account_start(w, child, now);
    w = mqs__switch_to(w, prev, child);
    mqs__finish_switch(w);
    atomic_signal_fence(memory_order_seq_cst);
    w->in_runtime = depth;
}
