/*
 * policy_harness.h - drive one policy's ops directly, on a runtime built
 * by hand (no worker threads) with a virtual clock, so that a test can
 * set up an exact queue state and check what the policy does with it:
 * which task pick returns, where enqueue places a task, what a balancer
 * moves, what a yield runs next.  Deterministic: the only clock the ops
 * see is h->now, written into every worker (mqs_rq_clock) and, through
 * the calling thread's worker pointer, mqs_sched_clock().  Tests that
 * need time to pass advance h->now (h_set_now, h_stop), never spin.
 *
 * The harness does what the core would around each op (the run queue
 * lock, the queued_on field that mqs_rq_steal checks, the start-of-run
 * stamp), nothing more: it tests the policy, not the core.
 * Policies whose put_prev reads the thread's CPU clock (steal_check_ns)
 * must be given steal_check_ns=0.
 *
 * One harness for every per-policy test: an earlier second one
 * (policy_harness_ph.h: caller-owned tasks, the real clock, no locks) was
 * merged into this one.  The real clock was rejected because a test of
 * a time rule (o1's EXPIRED_STARVING) then had to busy-wait and depended
 * on the host; caller-owned tasks survive as h_task_init, for a task
 * handed to a real runtime.
 */
#ifndef MQS_POLICY_HARNESS_H
#define MQS_POLICY_HARNESS_H

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define H_WORKERS 192 /* beyond 64: masks and idle maps of several words */
#define H_TASKS 64

struct harness {
    mqs_runtime_t *rt;
    struct mqs_worker *w[H_WORKERS];
    const struct mqs_policy *pol;
    uint64_t now;
    struct mqs_task *t[H_TASKS];
};

static inline void *h_zalloc(size_t n)
{
    void *p = NULL;
    n = (n + 63) / 64 * 64;
    CHECK_EQ(posix_memalign(&p, 64, n ? n : 64), 0);
    memset(p, 0, n ? n : 64);
    return p;
}

static inline void h_set_now(struct harness *h, uint64_t now)
{
    h->now = now;
    for (int i = 0; i < h->rt->nworkers; i++)
        h->w[i]->now = now;
}

static inline struct mqs_rq *h_rq(struct harness *h, int w)
{
    return &h->w[w]->rq;
}

static inline void h_init_workers(struct harness *h, int n)
{
    for (int i = 0; i < n; i++) {
        struct mqs_worker *w = h->w[i] = h_zalloc(sizeof *w);
        h->rt->workers[i] = w;
        w->index = i;
        w->rt = h->rt;
        mqs__spin_init(&w->rq.own_lock);
        w->rq.lock = &w->rq.own_lock;
        w->rq.worker = i;
        w->rq.rt = h->rt;
        atomic_init(&w->rq.best_prio, MQS_PRIO_NONE);
        w->rq.pstate = h->pol->rq_size ? h_zalloc(h->pol->rq_size) : NULL;
        if ((h->pol->flags & MQS_POLICY_SHARED_RQ) && i > 0)
            w->rq.lock = &h->w[0]->rq.own_lock;
    }
}

/* A runtime of policy spec ("cfs:steal_check_ns=0") with n workers. */
static inline void h_init(struct harness *h, const char *spec, int n)
{
    memset(h, 0, sizeof *h);
    CHECK(n >= 1 && n <= H_WORKERS);
    int64_t values[64];
    char err[256];
    int rc = mqs__policy_parse(spec, &h->pol, values, err, sizeof err);
    if (rc)
        CHECK__FAIL("policy %s: %s", spec, err);
    h->rt = h_zalloc(sizeof *h->rt);
    h->rt->policy = h->pol;
    h->rt->nworkers = n;
    h->rt->workers = h_zalloc(sizeof(struct mqs_worker *) * H_WORKERS);
    h->rt->pstate = h_zalloc(h->pol->rt_size);
    int i = 0;
    for (const struct mqs_tunable *t = h->pol->tunables; t && t->name;
         t++, i++)
        memcpy((char *)h->rt->pstate + t->offset, &values[i], sizeof(int64_t));
    h_init_workers(h, n);
    if (h->pol->init)
        CHECK_OK(h->pol->init(h->rt, h->rt->pstate));
    for (int k = 0; k < n && h->pol->init_rq; k++)
        h->pol->init_rq(&h->w[k]->rq);
    mqs__worker_set_self(h->w[0]);
    h_set_now(h, 1000000000ull);
}

/* Task t of class cls (prio: nice or rt priority), never run yet, any
 * worker; the caller owns the memory. */
static inline void h_task_init(struct mqs_task *t, mqs_class_t cls, int prio,
                               const char *name)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    atomic_init(&t->queued_on, -1);
    t->se.last_worker = -1;
    t->se.any_worker = true;
    for (int i = 0; i < H_WORKERS; i++)
        mqs_mask_set(&t->se.affinity, i);
    mqs__se_set_class(&t->se, cls, prio);
}

/* Task k of the harness (freed by h_destroy), as h_task_init. */
static inline struct mqs_sched_entity *h_task(struct harness *h, int k,
                                              mqs_class_t cls, int prio)
{
    char name[16];
    snprintf(name, sizeof name, "h%d", k);
    CHECK(k >= 0 && k < H_TASKS && h->t[k] == NULL);
    struct mqs_task *t = h->t[k] = h_zalloc(sizeof *t);
    h_task_init(t, cls, prio, name);
    return &t->se;
}

/* Restrict se to worker w alone. */
static inline void h_pin(struct mqs_sched_entity *se, int w)
{
    se->any_worker = false;
    mqs_mask_zero(&se->affinity);
    mqs_mask_set(&se->affinity, w);
}

static inline struct mqs_task *h_of(struct mqs_sched_entity *se)
{
    return mqs_se_entry(se, struct mqs_task, se);
}

/* se goes on w's queue (its lock held), counted as the core counts it. */
static inline void h_queued(struct harness *h, int w,
                            struct mqs_sched_entity *se)
{
    (void)h; /* counted only in contract-checked builds */
    atomic_store(&h_of(se)->queued_on, w);
    MQS__CHK_COUNT(h->rt, w, 1);
}

static inline void h_enqueue(struct harness *h, int w,
                             struct mqs_sched_entity *se, int flags)
{
    struct mqs_rq *rq = h_rq(h, w);
    CHECK_EQ(atomic_load(&h_of(se)->queued_on), -1);
    /* As the core's spawn does: task_new (no parent: the harness is no
     * task) before the first enqueue, no lock held. */
    if ((flags & MQS_ENQ_NEW) && h->pol->task_new)
        h->pol->task_new(rq, se, NULL);
    mqs_rq_lock(rq);
    h_queued(h, w, se);
    h->pol->enqueue(rq, se, flags);
    mqs_rq_unlock(rq);
}

/* se, taken off its queue by pick or yield on w (the lock still held),
 * leaves the queue's count as the core's check of pick's result does:
 * contract-checked builds compare it with what the queue published when
 * the lock is released. */
static inline void h_taken(struct harness *h, struct mqs_sched_entity *se)
{
    (void)h; /* counted only in contract-checked builds */
    int q = atomic_load(&h_of(se)->queued_on);
    if (q >= 0) {
        atomic_store(&h_of(se)->queued_on, -1);
        MQS__CHK_COUNT(h->rt, q, -1);
    }
}

/* se, just picked on w, starts running there at h->now. */
static inline void h_started(struct harness *h, int w,
                             struct mqs_sched_entity *se)
{
    h_of(se)->stolen = false;
    se->exec_start_ns = h->now;
    se->last_worker = w;
}

/* pick on worker w; the result starts running at h->now. */
static inline struct mqs_sched_entity *h_pick(struct harness *h, int w)
{
    struct mqs_rq *rq = h_rq(h, w);
    mqs_rq_lock(rq);
    struct mqs_sched_entity *se = h->pol->pick(rq);
    if (se)
        h_taken(h, se);
    mqs_rq_unlock(rq);
    if (se)
        h_started(h, w, se);
    return se;
}

/* se (running on w, whose lock is held) ran ns more: account it. */
static inline void h_ran(struct harness *h, struct mqs_rq *rq,
                         struct mqs_sched_entity *se, uint64_t ns)
{
    h_set_now(h, h->now + ns);
    if (h->pol->put_prev)
        h->pol->put_prev(rq, se, ns);
}

/* se (running on w) runs ns more, then stops: put_prev, and when requeue
 * is set, the yield re-queue (the policy's yield op is not used). */
static inline void h_stop(struct harness *h, int w,
                          struct mqs_sched_entity *se, uint64_t ns,
                          bool requeue)
{
    struct mqs_rq *rq = h_rq(h, w);
    mqs_rq_lock(rq);
    h_ran(h, rq, se, ns);
    if (requeue) {
        h_queued(h, w, se);
        h->pol->enqueue(rq, se, MQS_ENQ_YIELD);
    }
    mqs_rq_unlock(rq);
}

/* se (running on w) runs ns more and yields, as the core does it: the
 * policy's yield fast path if it has one and takes it, else
 * enqueue(YIELD) and pick.  Returns what runs next. */
static inline struct mqs_sched_entity *h_yield(struct harness *h, int w,
                                               struct mqs_sched_entity *se,
                                               uint64_t ns)
{
    struct mqs_rq *rq = h_rq(h, w);
    mqs_rq_lock(rq);
    h_ran(h, rq, se, ns);
    h_queued(h, w, se);
    struct mqs_sched_entity *next =
        h->pol->yield ? h->pol->yield(rq, se) : NULL;
    if (!next)
        h->pol->enqueue(rq, se, MQS_ENQ_YIELD);
    else
        h_taken(h, next);
    mqs_rq_unlock(rq);
    if (!next)
        return h_pick(h, w);
    h_started(h, w, next);
    return next;
}

/* Free what h_init and h_task allocated. */
static inline void h_destroy(struct harness *h)
{
    mqs__worker_set_self(NULL);
    for (int i = 0; i < h->rt->nworkers; i++) {
        free(h->w[i]->rq.pstate);
        free(h->w[i]);
    }
    for (int k = 0; k < H_TASKS; k++)
        free(h->t[k]);
    free(h->rt->workers);
    free(h->rt->pstate);
    free(h->rt);
    memset(h, 0, sizeof *h);
}

/* Run worker w for total ns of virtual time: pick, run the slice the
 * policy gave (at most max_run), re-queue; run[k] sums task k's time. */
static inline void h_share(struct harness *h, int w, uint64_t total,
                           uint64_t max_run, uint64_t *run, int ntasks)
{
    uint64_t end = h->now + total;
    while (h->now < end) {
        struct mqs_sched_entity *se = h_pick(h, w);
        CHECK(se != NULL);
        uint64_t ns = se->slice_ns > 0 ? (uint64_t)se->slice_ns : 1000;
        if (ns > max_run)
            ns = max_run;
        for (int k = 0; k < ntasks; k++)
            if (&h->t[k]->se == se)
                run[k] += ns;
        h_stop(h, w, se, ns, true);
    }
}

/* Tasks first .. end-1 of the harness as nice-0 normal tasks, queued new
 * on worker w. */
static inline void h_enqueue_new(struct harness *h, int w, int first,
                                 int end)
{
    for (int k = first; k < end; k++)
        h_enqueue(h, w, h_task(h, k, MQS_CLASS_NORMAL, 0), MQS_ENQ_NEW);
}

/* Two nice-0 tasks a and b (tasks 0 and 1), queued new on worker 0 of a
 * runtime of spec with n workers. */
static inline void h_pair(struct harness *h, const char *spec, int n,
                          struct mqs_sched_entity **a,
                          struct mqs_sched_entity **b)
{
    h_init(h, spec, n);
    *a = h_task(h, 0, MQS_CLASS_NORMAL, 0);
    *b = h_task(h, 1, MQS_CLASS_NORMAL, 0);
    h_enqueue(h, 0, *a, MQS_ENQ_NEW);
    h_enqueue(h, 0, *b, MQS_ENQ_NEW);
}

/* Nice 0, 5 and -3 on one worker for 20 s of virtual time: CPU within 1%
 * of the weight ratios. */
static inline void h_check_weights(const char *spec)
{
    static const int nice[] = {0, 5, -3};
    struct harness h;
    h_init(&h, spec, 1);
    for (int k = 0; k < 3; k++)
        h_enqueue(&h, 0, h_task(&h, k, MQS_CLASS_NORMAL, nice[k]),
                  MQS_ENQ_NEW);
    uint64_t run[3] = {0, 0, 0};
    h_share(&h, 0, 20000000000ull, 100000000ull, run, 3);
    for (int k = 1; k < 3; k++) {
        double want = (double)mqs_nice_weight[nice[k] + 20] /
                      mqs_nice_weight[20];
        double got = (double)run[k] / (double)run[0];
        fprintf(stderr, "  nice %d / nice 0: %.4f (weights %.4f)\n", nice[k],
                got, want);
        CHECK_LE(got / want, 1.01);
        CHECK_GE(got / want, 0.99);
    }
}

/* Queue tasks 0..n-1 of the given classes and priorities on worker 0
 * (task `pinned`, if not -1, allowed on worker 0 only) and check that
 * the i-th pick, on worker on[i], returns task order[i] (-1: NULL). */
static inline void h_check_order(struct harness *h, const mqs_class_t *cls,
                                 const int *prio, int n, int pinned,
                                 const int *on, const int *order, int npicks)
{
    for (int k = 0; k < n; k++) {
        struct mqs_sched_entity *se = h_task(h, k, cls[k], prio[k]);
        if (k == pinned)
            h_pin(se, 0);
        h_enqueue(h, 0, se, MQS_ENQ_NEW);
    }
    for (int i = 0; i < npicks; i++) {
        struct mqs_sched_entity *se = h_pick(h, on[i]);
        if (order[i] < 0)
            CHECK(se == NULL);
        else
            CHECK(se == &h->t[order[i]]->se);
    }
}

#endif
