/*
 * task_ctl.c - changing a live task: class, priority, affinity; and
 * task-local storage keys.
 *
 * The rule for a change: a queued task is dequeued under its run queue's
 * lock, changed, and enqueued again (where its new mask allows), so the
 * policy never sees a queued task's priority change under it.  Finding
 * that lock races with the task moving: read queued_on, lock that queue,
 * re-check (Linux's task_rq_lock loop).  A task that is running, blocked
 * or new is changed in place; the change shows at its next enqueue.
 * A policy without a dequeue op cannot take tasks out of its queues, so
 * there the change waits for the task's next run.
 */
#include <string.h>

#include "internal.h"

int mqs__prio_level(mqs_class_t cls, int prio);

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
        mqs__spin_lock(&rq->lock);
        if (atomic_load(&t->queued_on) == q)
            return rq;
        mqs__spin_unlock(&rq->lock);
    }
}

/* Apply change(t, arg) with t out of its queue; re-queue it where its
 * (possibly new) mask allows. */
static void change_task(struct mqs_task *t,
                        void (*change)(struct mqs_task *, const void *),
                        const void *arg)
{
    const struct mqs_policy *p = t->rt->policy;
    struct mqs_rq *rq = p->dequeue ? lock_task_rq(t) : NULL;
    if (!rq) {
        change(t, arg);
        return;
    }
    p->dequeue(rq, &t->se, MQS_DEQ_SAVE);
    atomic_store(&t->queued_on, -1);
    change(t, arg);
    if (mqs_se_allowed(&t->se, rq->worker)) {
        atomic_store(&t->queued_on, rq->worker);
        p->enqueue(rq, &t->se, MQS_ENQ_RESTORE);
        mqs__spin_unlock(&rq->lock);
        return;
    }
    mqs__spin_unlock(&rq->lock);
    mqs__enqueue_task(t->rt, t, MQS_ENQ_RESTORE | MQS_ENQ_MIGRATED);
}

struct sched_change {
    mqs_class_t cls;
    int prio;
};

static void apply_sched(struct mqs_task *t, const void *arg)
{
    const struct sched_change *c = arg;
    mqs__se_set_class(&t->se, c->cls, c->prio);
}

int mqs_task_set_sched(mqs_task_t *t, mqs_class_t cls, int prio)
{
    if (!t || !valid_sched(cls, cls == MQS_CLASS_IDLE ? 0 : prio))
        return MQS_EINVAL;
    if (atomic_load(&t->state) == MQS__DEAD)
        return MQS_ESTATE;
    struct sched_change c = {cls, cls == MQS_CLASS_IDLE ? 0 : prio};
    change_task(t, apply_sched, &c);
    return 0;
}

int mqs_task_get_sched(const mqs_task_t *t, mqs_class_t *cls, int *prio)
{
    if (!t || !cls || !prio)
        return MQS_EINVAL;
    *cls = t->se.cls;
    *prio = t->se.cls == MQS_CLASS_NORMAL ? t->se.nice
            : t->se.cls == MQS_CLASS_IDLE ? 0
                                          : t->se.rt_priority;
    return 0;
}

static void apply_mask(struct mqs_task *t, const void *arg)
{
    const mqs_mask_t *m = arg;
    int n = 0, nw = t->rt->nworkers;
    mqs_mask_zero(&t->se.affinity);
    for (int i = 0; i < nw; i++)
        if (mqs_mask_isset(m, i)) {
            mqs_mask_set(&t->se.affinity, i);
            n++;
        }
    t->se.any_worker = n == nw;
}

int mqs_task_set_affinity(mqs_task_t *t, const mqs_mask_t *mask)
{
    if (!t || !mask)
        return MQS_EINVAL;
    int n = 0;
    for (int i = 0; i < t->rt->nworkers; i++)
        n += mqs_mask_isset(mask, i);
    if (n == 0)
        return MQS_EINVAL;
    if (atomic_load(&t->state) == MQS__DEAD)
        return MQS_ESTATE;
    change_task(t, apply_mask, mask);
    return 0;
}

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
    if (key >= MQS_KEYS_MAX || !t->rt->key_used[key])
        return MQS_EINVAL;
    t->keys[key] = value;
    return 0;
}

void *mqs_key_get(mqs_key_t key)
{
    struct mqs_task *t = mqs__current();
    if (!t || key >= MQS_KEYS_MAX)
        return NULL;
    return t->keys[key];
}
