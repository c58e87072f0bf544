/*
 * entity.c - a task's scheduling entity: its class and level, its nice
 * weight and affinity mask, set at spawn and changed through the pending
 * request that whoever next queues the task applies (task_ctl.c records
 * the request; mqs__apply_pending calls here).  At the run queue's level:
 * placement and the scheduling point apply pending changes, so this file
 * calls nothing above base.c.
 */
#include "internal.h"

const uint32_t mqs_nice_weight[40] = {
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
    9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
    1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
    110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};

int mqs__prio_level(mqs_class_t cls, int prio)
{
    switch (cls) {
    case MQS_CLASS_FIFO:
    case MQS_CLASS_RR:
        return 99 - prio;
    case MQS_CLASS_IDLE:
        return MQS_PRIO_IDLE;
    default:
        return MQS_PRIO_NICE0 + prio;
    }
}

void mqs__se_set_class(struct mqs_sched_entity *se, mqs_class_t cls, int prio)
{
    se->cls = cls;
    se->prio = (uint8_t)mqs__prio_level(cls, prio);
    se->level = se->prio;
    se->nice = (int8_t)(cls == MQS_CLASS_NORMAL ? prio : 0);
    se->rt_priority = (uint8_t)(cls == MQS_CLASS_FIFO || cls == MQS_CLASS_RR
                                    ? prio : 0);
    se->weight = cls == MQS_CLASS_NORMAL ? mqs_nice_weight[prio + 20]
                 : cls == MQS_CLASS_IDLE ? 3 : mqs_nice_weight[0];
}

static void set_mask(struct mqs_task *t, const mqs_mask_t *m)
{
    int n = 0, nw = t->rt->nworkers;
    mqs_mask_zero(&t->se.affinity);
    for (int i = 0; i < nw; i++)
        if (mqs_mask_isset(m, i)) {
            mqs_mask_set(&t->se.affinity, i);
            n++;
        }
    t->se.any_worker = n == nw;
}

void mqs__apply_pending_slow(struct mqs_task *t)
{
    mqs__spin_lock(&t->pend_lock);
    int flags = atomic_exchange(&t->pend_flags, 0);
    if (flags & MQS__PEND_SCHED)
        mqs__se_set_class(&t->se, t->pend_cls, t->pend_prio);
    if (flags & MQS__PEND_MASK)
        set_mask(t, &t->pend_mask);
    mqs__spin_unlock(&t->pend_lock);
}
