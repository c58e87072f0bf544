/*
 * task_ctl.c - changing a live task: class, priority, affinity; and
 * task-local storage keys.
 *
 * A change is recorded in the task (pend_*) and applied by whoever next
 * queues it, before it chooses the queue (mqs__apply_pending in the wake,
 * spawn and yield paths), so a policy never sees a queued task's priority
 * or mask change under it.  If the task is queued right now, the change
 * is applied at once: lock its queue (found by reading queued_on, locking
 * and re-checking, Linux's task_rq_lock loop), dequeue, apply, enqueue
 * where the new mask allows.  A running task picks its change up at its
 * next scheduling point, a blocked one when it wakes.  Applying consumes
 * the pending bits atomically, so racing appliers cannot apply twice.
 * One race is left open on purpose: a change made while the task is
 * between "placed" and "queued" waits for its next enqueue (closing it
 * would put a full fence on every enqueue).
 * A policy without a dequeue op cannot take tasks out of its queues:
 * there a queued task keeps its old settings until it next runs.
 */
#include <string.h>

#include "internal.h"

static int valid_sched(mqs_class_t cls, int prio)
{
    if (cls == MQS_CLASS_NORMAL)
        return prio >= -20 && prio <= 19;
    if (cls == MQS_CLASS_FIFO || cls == MQS_CLASS_RR)
        return prio >= 1 && prio <= 99;
    return cls == MQS_CLASS_IDLE;
}

/* Lock the rq t is queued on and return it, or NULL if t is not queued
 * (then nothing is locked). */
static struct mqs_rq *lock_task_rq(struct mqs_task *t)
{
    for (;;) {
        int q = atomic_load(&t->queued_on);
        if (q < 0)
            return NULL;
        struct mqs_rq *rq = &t->rt->workers[q]->rq;
        mqs__spin_lock(rq->lock);
        MQS__CHK_TOOK(rq);
        if (atomic_load(&t->queued_on) == q)
            return rq;
        MQS__CHK_RELEASE(rq);
        mqs__spin_unlock(rq->lock);
    }
}

/* The change is recorded; if t sits in a queue, requeue it now. */
static void requeue_if_queued(struct mqs_task *t)
{
    const struct mqs_policy *p = t->rt->policy;
    struct mqs_rq *rq = p->dequeue ? lock_task_rq(t) : NULL;
    if (!rq)
        return;
    MQS__CHK_OP(rq, "dequeue");
    p->dequeue(rq, &t->se, MQS_DEQ_SAVE);
    mqs__apply_pending(t);
    if (mqs_se_allowed(&t->se, rq->worker)) {
        MQS__CHK_OP(rq, "enqueue");
        p->enqueue(rq, &t->se, MQS_ENQ_RESTORE);
        MQS__CHK_RELEASE(rq);
        mqs__spin_unlock(rq->lock);
        return;
    }
    atomic_store(&t->queued_on, -1);
    MQS__CHK_COUNT(t->rt, rq->worker, -1);
    MQS__CHK_RELEASE(rq);
    mqs__spin_unlock(rq->lock);
    /* It may have been queued by its own yield and still be on its stack:
     * wait until it is off before another worker can pick it. */
    while (atomic_load_explicit(&t->on_cpu, memory_order_acquire))
        mqs__cpu_relax();
    mqs__enqueue_task(t->rt, t, MQS_ENQ_RESTORE | MQS_ENQ_MIGRATED);
}

static int set_sched(struct mqs_task *t, mqs_class_t cls, int prio)
{
    if (cls == MQS_CLASS_IDLE)
        prio = 0;
    if (!valid_sched(cls, prio))
        return MQS_EINVAL;
    if (atomic_load(&t->state) == MQS__DEAD)
        return MQS_ESTATE;
    mqs__spin_lock(&t->pend_lock);
    t->pend_cls = cls;
    t->pend_prio = prio;
    atomic_fetch_or(&t->pend_flags, MQS__PEND_SCHED);
    mqs__spin_unlock(&t->pend_lock);
    requeue_if_queued(t);
    return 0;
}

static int get_sched(struct mqs_task *t, mqs_class_t *cls, int *prio)
{
    if (!cls || !prio)
        return MQS_EINVAL;
    struct mqs_task *m = t;
    mqs__spin_lock(&m->pend_lock);
    if (atomic_load(&m->pend_flags) & MQS__PEND_SCHED) {
        *cls = m->pend_cls;
        *prio = m->pend_prio;
    } else {
        *cls = t->se.cls;
        *prio = t->se.cls == MQS_CLASS_NORMAL ? t->se.nice
                : t->se.cls == MQS_CLASS_IDLE ? 0
                                              : t->se.rt_priority;
    }
    mqs__spin_unlock(&m->pend_lock);
    return 0;
}

static int set_affinity(struct mqs_task *t, const mqs_mask_t *mask)
{
    if (!mask)
        return MQS_EINVAL;
    int n = 0;
    for (int i = 0; i < t->rt->nworkers; i++)
        n += mqs_mask_isset(mask, i);
    if (n == 0)
        return MQS_EINVAL;
    if (atomic_load(&t->state) == MQS__DEAD)
        return MQS_ESTATE;
    mqs__spin_lock(&t->pend_lock);
    t->pend_mask = *mask;
    atomic_fetch_or(&t->pend_flags, MQS__PEND_MASK);
    mqs__spin_unlock(&t->pend_lock);
    requeue_if_queued(t);
    return 0;
}

/* The public calls: the handle pinned for the length of the call. */
#define WITH_TASK(h, call)                                                   \
    do {                                                                     \
        struct mqs_task *t_ = mqs__handle_pin(h);                            \
        if (!t_)                                                             \
            return MQS_EINVAL;                                               \
        int rc_ = call;                                                      \
        mqs__handle_unpin(t_);                                               \
        return rc_;                                                          \
    } while (0)

int mqs_task_set_sched(mqs_task_t *h, mqs_class_t cls, int prio)
{
    WITH_TASK(h, set_sched(t_, cls, prio));
}

int mqs_task_get_sched(const mqs_task_t *h, mqs_class_t *cls, int *prio)
{
    WITH_TASK(h, get_sched(t_, cls, prio));
}

int mqs_task_set_affinity(mqs_task_t *h, const mqs_mask_t *mask)
{
    WITH_TASK(h, set_affinity(t_, mask));
}
#undef WITH_TASK

/* ------------------------------------------------------------------ */
/* Task-local storage                                                  */
/* ------------------------------------------------------------------ */

int mqs_key_create(mqs_runtime_t *rt, mqs_key_t *key, void (*dtor)(void *))
{
    if (!rt || !key)
        return MQS_EINVAL;
    mqs__spin_lock(&rt->keys_lock);
    for (unsigned k = 0; k < MQS_KEYS_MAX; k++) {
        if (!rt->key_used[k]) {
            rt->key_used[k] = true;
            rt->key_dtor[k] = dtor;
            mqs__spin_unlock(&rt->keys_lock);
            *key = k;
            return 0;
        }
    }
    mqs__spin_unlock(&rt->keys_lock);
    return MQS_EBUSY;
}

int mqs_key_delete(mqs_runtime_t *rt, mqs_key_t key)
{
    if (!rt || key >= MQS_KEYS_MAX)
        return MQS_EINVAL;
    mqs__spin_lock(&rt->keys_lock);
    bool used = rt->key_used[key];
    rt->key_used[key] = false;
    rt->key_dtor[key] = NULL;
    mqs__spin_unlock(&rt->keys_lock);
    return used ? 0 : MQS_EINVAL;
}

int mqs_key_set(mqs_key_t key, void *value)
{
    struct mqs_task *t = mqs__current();
    if (!t)
        return MQS_EPERM;
    if (key >= MQS_KEYS_MAX)
        return MQS_EINVAL;
    mqs__spin_lock(&t->rt->keys_lock);
    bool used = t->rt->key_used[key];
    mqs__spin_unlock(&t->rt->keys_lock);
    if (!used)
        return MQS_EINVAL;
    t->keys[key] = value;
    t->keys_set = true;
    return 0;
}

void *mqs_key_get(mqs_key_t key)
{
    struct mqs_task *t = mqs__current();
    if (!t || key >= MQS_KEYS_MAX)
        return NULL;
    return t->keys[key];
}
