/*
 * policy_harness.h - drive one policy's ops directly, with no worker
 * threads: a runtime object holding only what the ops read (workers'
 * run queues, the policy state with its parsed tunables, the published
 * summaries), and tasks that are bare structs, queued and picked by the
 * test.  The per-policy unit tests (tests/test_policy_*.c) use it to
 * check a design's behaviour by order and counts, without timing.
 *
 * The test thread plays every worker: it takes no locks except where an
 * op takes them itself (balance), so ops that expect a lock held are
 * called by a single thread, which is what the lock would guarantee.
 * The clock seen by the ops is the real one (mqs_sched_clock() off a
 * worker); tests that need time set the task's timestamps themselves.
 *
 * Include after check.h and internal.h.
 */
#ifndef MQS_TEST_POLICY_HARNESS_PH_H
#define MQS_TEST_POLICY_HARNESS_PH_H

#include <stdlib.h>
#include <string.h>

#define PH_WORKERS 4

struct ph {
    mqs_runtime_t rt;
    struct mqs_worker *w[PH_WORKERS];
    const struct mqs_policy *pol;
};

static inline void *ph_zalloc(size_t n)
{
    void *p = NULL;
    n = (n + 63) / 64 * 64;
    CHECK_EQ(posix_memalign(&p, 64, n ? n : 64), 0);
    memset(p, 0, n ? n : 64);
    return p;
}

/* A runtime of `spec` (a policy name with tunables) and n workers. */
static inline void ph_init(struct ph *h, const char *spec, int n)
{
    int64_t values[64];
    char err[256] = "";
    memset(h, 0, sizeof *h);
    CHECK_OK(mqs__policy_parse(spec, &h->pol, values, err, sizeof err));
    h->rt.policy = h->pol;
    h->rt.nworkers = n;
    h->rt.workers = h->w;
    h->rt.pstate = ph_zalloc(h->pol->rt_size);
    int i = 0;
    for (const struct mqs_tunable *t = h->pol->tunables; t && t->name;
         t++, i++)
        memcpy((char *)h->rt.pstate + t->offset, &values[i], sizeof(int64_t));
    for (i = 0; i < n; i++) {
        struct mqs_worker *w = h->w[i] = ph_zalloc(sizeof *w);
        w->index = i;
        w->rt = &h->rt;
        mqs__spin_init(&w->rq.own_lock);
        w->rq.lock = (h->pol->flags & MQS_POLICY_SHARED_RQ) && i
                         ? &h->w[0]->rq.own_lock
                         : &w->rq.own_lock;
        w->rq.worker = i;
        w->rq.rt = &h->rt;
        atomic_init(&w->rq.best_prio, MQS_PRIO_NONE);
        w->rq.pstate = ph_zalloc(h->pol->rq_size);
    }
    if (h->pol->init)
        CHECK_OK(h->pol->init(&h->rt, h->rt.pstate));
    for (i = 0; i < n && h->pol->init_rq; i++)
        h->pol->init_rq(&h->w[i]->rq);
}

static inline struct mqs_rq *ph_rq(struct ph *h, int w)
{
    return &h->w[w]->rq;
}

/* A task of class cls (prio: nice or rt priority), never run yet. */
static inline void ph_task(struct mqs_task *t, mqs_class_t cls, int prio,
                           const char *name)
{
    memset(t, 0, sizeof *t);
    mqs__se_set_class(&t->se, cls, prio);
    t->se.last_worker = -1;
    t->se.any_worker = true;
    atomic_init(&t->queued_on, -1);
    snprintf(t->name, sizeof t->name, "%s", name);
}

static inline void ph_enqueue(struct ph *h, int w, struct mqs_task *t,
                              int flags)
{
    CHECK_EQ(atomic_load(&t->queued_on), -1);
    atomic_store(&t->queued_on, w);
    h->pol->enqueue(ph_rq(h, w), &t->se, flags);
}

/* Pick on worker w and "start" the task there (as account_start). */
static inline struct mqs_task *ph_pick(struct ph *h, int w)
{
    struct mqs_sched_entity *se = h->pol->pick(ph_rq(h, w));
    if (!se)
        return NULL;
    struct mqs_task *t = mqs_se_entry(se, struct mqs_task, se);
    atomic_store(&t->queued_on, -1);
    t->stolen = false;
    t->se.last_worker = w;
    return t;
}

/* t, picked on w, ran ran_ns and stops (put_prev). */
static inline void ph_stop(struct ph *h, int w, struct mqs_task *t,
                           uint64_t ran_ns)
{
    t->se.sum_exec_ns += ran_ns;
    if (h->pol->put_prev)
        h->pol->put_prev(ph_rq(h, w), &t->se, ran_ns);
}

/* A yield of t, picked on w after running ran_ns: the fast path if the
 * policy has one and takes it, else enqueue(YIELD) + pick. */
static inline struct mqs_task *ph_yield(struct ph *h, int w,
                                        struct mqs_task *t, uint64_t ran_ns)
{
    ph_stop(h, w, t, ran_ns);
    atomic_store(&t->queued_on, w);
    struct mqs_sched_entity *se =
        h->pol->yield ? h->pol->yield(ph_rq(h, w), &t->se) : NULL;
    if (se) {
        struct mqs_task *n = mqs_se_entry(se, struct mqs_task, se);
        atomic_store(&n->queued_on, -1);
        n->se.last_worker = w;
        return n;
    }
    h->pol->enqueue(ph_rq(h, w), &t->se, MQS_ENQ_YIELD);
    return ph_pick(h, w);
}

static inline void ph_destroy(struct ph *h)
{
    for (int i = 0; i < h->rt.nworkers; i++) {
        free(h->w[i]->rq.pstate);
        free(h->w[i]);
    }
    free(h->rt.pstate);
}

#endif
