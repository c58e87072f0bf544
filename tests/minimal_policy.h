/*
 * minimal_policy.h - the smallest policy the contract allows: a table
 * with only .name, .enqueue and .pick (sched_ext's minimal scheduler).
 * Not in the library's registry: the conformance suite runs it through
 * config.policy_ops, and test_broken_policies.c builds its deliberately
 * broken policies on it.
 *
 * One FIFO per worker, kept in class order (realtime by priority, then
 * normal tasks as one level, nice ignored, then idle-class tasks), FIFO
 * within a level: enough to honour the class order on one worker.  No
 * select_worker (the core's default placement), no dequeue, no balance
 * (tasks never move between workers), no yield fast path, no tick.
 *
 * With no rq_size and no init_rq there is no per-rq state to keep the
 * queues in, so they are per-process arrays indexed by worker, guarded by
 * the rq lock the core holds around enqueue and pick.  That allows one
 * runtime at a time per process: minimal_reset() empties them before a
 * runtime is created (a runtime destroyed with MQS_DESTROY_REPORT leaves
 * entries of freed tasks behind).
 */
#ifndef MQS_TEST_MINIMAL_POLICY_H
#define MQS_TEST_MINIMAL_POLICY_H

#include <string.h>

#include "list.h"
#include "mqs/policy.h"

static struct mqs_list minimal_q[MQS_MAX_WORKERS];
static unsigned minimal_n[MQS_MAX_WORKERS];

static inline void minimal_reset(void)
{
    for (int i = 0; i < MQS_MAX_WORKERS; i++) {
        mqs__list_init(&minimal_q[i]);
        minimal_n[i] = 0;
    }
}

/* The level that orders the queue and is published: normal tasks share
 * one, the least urgent normal level, as the contract asks of a policy
 * that ignores nice ("Publishing" in mqs/policy.h).  Publishing nice 0
 * for them told the core a more urgent task waited whenever a task of
 * higher nice ran, and preemption stopped it at once: with two spinners
 * of nice 0 and 10, 0.23 of an equal share for the nice-10 one. */
static inline unsigned minimal_rank(const struct mqs_sched_entity *se)
{
    return se->cls == MQS_CLASS_NORMAL ? MQS_PRIO_IDLE - 1 : se->prio;
}

static inline struct mqs_sched_entity *minimal_entry(struct mqs_list *n)
{
    return mqs_se_entry(n, struct mqs_sched_entity, node);
}

static inline void minimal_publish(struct mqs_rq *rq)
{
    int w = mqs_rq_worker(rq);
    struct mqs_list *q = &minimal_q[w];
    mqs_rq_publish(rq, minimal_n[w],
                   mqs__list_empty(q) ? MQS_PRIO_NONE
                                      : minimal_rank(minimal_entry(q->next)));
}

/* Behind every task of the same or a more urgent rank. */
static inline void minimal_enqueue(struct mqs_rq *rq,
                                   struct mqs_sched_entity *se, int flags)
{
    (void)flags;
    int w = mqs_rq_worker(rq);
    struct mqs_list *q = &minimal_q[w], *pos = q->prev;
    while (pos != q && minimal_rank(minimal_entry(pos)) > minimal_rank(se))
        pos = pos->prev;
    mqs__list_add_before(pos->next, &se->node);
    minimal_n[w]++;
    minimal_publish(rq);
}

/* The head of queue w, removed (rq w's lock held), or NULL. */
static inline struct mqs_sched_entity *minimal_pop(struct mqs_rq *rq)
{
    int w = mqs_rq_worker(rq);
    if (mqs__list_empty(&minimal_q[w]))
        return NULL;
    struct mqs_sched_entity *se = minimal_entry(minimal_q[w].next);
    mqs__list_del(&se->node);
    minimal_n[w]--;
    minimal_publish(rq);
    return se;
}

static inline struct mqs_sched_entity *minimal_pick(struct mqs_rq *rq)
{
    return minimal_pop(rq);
}

static const struct mqs_policy minimal_policy = {
    .name = "minimal",
    .enqueue = minimal_enqueue,
    .pick = minimal_pick,
};

#endif /* MQS_TEST_MINIMAL_POLICY_H */
