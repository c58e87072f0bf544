/*
 * gate.h - inside the runtime: a worker context's depth count, the gate
 * that refuses public calls from a signal handler that interrupted it
 * (or in a child of fork()), and the wait-queue lock that raises it.
 * Included by internal.h after the structs it reads.
 */
#ifndef MQS_GATE_H
#define MQS_GATE_H

/*
 * Inside the runtime.  A worker's context is "inside" while in_runtime is
 * non-zero: a scheduling point (from entry to the return into task code;
 * each context carries its own depth across the switch, sched.c), the
 * worker loop, a wait-queue critical section, a wake-up's or spawn's run
 * queue and stack-cache work.  A signal handler that interrupted such a
 * section must not switch or take a runtime lock: the public calls that
 * would (yield, checkpoint, sleep, spawn, join, every call that takes a
 * wait-queue lock) return MQS_ESIGNAL instead.  Preemption will read the
 * same count: never stop a task inside the runtime.
 */
static inline void mqs__rt_enter(struct mqs_worker *w)
{
    w->in_runtime++;
    atomic_signal_fence(memory_order_seq_cst);
}
static inline void mqs__rt_leave(struct mqs_worker *w)
{
    atomic_signal_fence(memory_order_seq_cst);
    w->in_runtime--;
}
/* In a child of fork() the forking thread's worker (if it was one) is
 * raised by this much for good (runtime.c): its calls then fail with
 * MQS_ESTATE through the same check, at no cost to the yield path. */
#define MQS__RT_FORKED (1u << 30)
static inline int mqs__rt_refused(unsigned depth)
{
    return depth >= MQS__RT_FORKED ? MQS_ESTATE : MQS_ESIGNAL;
}
/* MQS_ESIGNAL when the caller is a signal handler that interrupted its
 * worker inside the runtime, MQS_ESTATE in a child of fork() (w NULL:
 * not a worker thread, never). */
static inline int mqs__rt_gate(const struct mqs_worker *w)
{
    return w && MQS__UNLIKELY(w->in_runtime) ? mqs__rt_refused(w->in_runtime)
                                             : 0;
}

/* fork(): a process-wide generation, bumped in every child (runtime.c).
 * A runtime whose fork_gen differs was created by an ancestor process:
 * its threads do not exist here. */
extern atomic_uint mqs__fork_gen;
static inline bool mqs__forked(const mqs_runtime_t *rt)
{
    return atomic_load_explicit(&mqs__fork_gen, memory_order_relaxed) !=
           rt->fork_gen;
}

/* A wait queue's lock.  On a worker's thread the runtime count is raised
 * while it is held.  The gated form fails (MQS_ESIGNAL, nothing taken)
 * when the caller's context is already inside the runtime: public calls
 * use it; the core's own nested locks (a timer firing during a
 * scheduling point, an exit) use mqs__waitq_lock_in. */
static inline void mqs__waitq_lock_in(struct mqs__waitq *q)
{
    struct mqs_worker *w = mqs__worker_self();
    if (w)
        mqs__rt_enter(w);
    mqs__spin_lock(&q->lock);
}
MQS__MUST_USE static inline int mqs__waitq_lock(struct mqs__waitq *q)
{
    struct mqs_worker *w = mqs__worker_self();
    if (w) {
        if (MQS__UNLIKELY(w->in_runtime))
            return mqs__rt_refused(w->in_runtime);
        mqs__rt_enter(w);
    }
    mqs__spin_lock(&q->lock);
    return 0;
}
/* The gated lock in a call returning int: returns its error. */
#define MQS__WAITQ_LOCK(q)                                                   \
    do {                                                                     \
        int mqs__gate_rc = mqs__waitq_lock(q);                               \
        if (MQS__UNLIKELY(mqs__gate_rc))                                     \
            return mqs__gate_rc;                                             \
    } while (0)
static inline void mqs__waitq_unlock(struct mqs__waitq *q)
{
    mqs__spin_unlock(&q->lock);
    struct mqs_worker *w = mqs__worker_self();
    if (w)
        mqs__rt_leave(w);
}

#endif
