/*
 * test_rqlock.c - the run-queue lock and its owner bias (spinlock.h,
 * rq.c): mutual exclusion of the plain lock between threads; the bias
 * engaging on a worker whose queue only its owner touches; remote
 * enqueues onto a biased queue (each revokes the bias and none is lost);
 * one revocation serving the remote lockers that follow it before the
 * owner's next scheduling point; and an idle worker stealing, through a
 * biased lock, tasks queued behind a task that never reaches a
 * scheduling point.
 *
 * The bias needs membarrier(2); where the process cannot register for it
 * (old kernel, seccomp) locks stay plain, and the cases that look for the
 * bias say so and check only what still must hold.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"

#define ROUNDS 200000
#define YIELD_CAP 50000000 /* yields to wait for the bias: ~1 s, never hit */
#define TASKS 64

/* ------------------------------------------------------------------ */
/* The plain lock                                                      */
/* ------------------------------------------------------------------ */

struct shared {
    mqs__spinlock_t lock;
    uint64_t count; /* only under lock: a plain field on purpose */
};

static void *locker(void *arg)
{
    struct shared *s = arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (i & 1) {
            mqs__spin_lock(&s->lock);
        } else {
            while (!mqs__spin_trylock(&s->lock))
                mqs__cpu_relax();
        }
        s->count++;
        mqs__spin_unlock(&s->lock);
    }
    return NULL;
}

TEST(plain_lock_excludes_between_threads)
{
    struct shared s = {.count = 0};
    mqs__spin_init(&s.lock);
    pthread_t a, b;
    CHECK_EQ(pthread_create(&a, NULL, locker, &s), 0);
    CHECK_EQ(pthread_create(&b, NULL, locker, &s), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK_EQ(s.count, (uint64_t)2 * ROUNDS);
    CHECK(!mqs__spin_held(&s.lock));
    CHECK_EQ(atomic_load(&s.lock.biased), 0);
}

/* ------------------------------------------------------------------ */
/* The bias on a worker's own queue                                    */
/* ------------------------------------------------------------------ */

struct bias_case {
    mqs_runtime_t *rt;
    atomic_int done;       /* tasks that ran                           */
    atomic_int go;         /* the main thread may start its spawns     */
    atomic_int stop;       /* the yielder may stop                     */
    bool bias_ok;          /* worker 0 may bias at all                 */
    bool seen_biased;      /* the yielder saw its queue biased         */
    atomic_int release;    /* worker 1's blocker may end               */
    bool spin;             /* the biased task spins rather than yields */
};

static mqs__spinlock_t *lock0(struct bias_case *c)
{
    return &c->rt->workers[0]->rq.own_lock;
}

/* Yield until worker 0's lock is biased (or it cannot be). */
static void yield_until_biased(struct bias_case *c)
{
    c->bias_ok = c->rt->workers[0]->bias_ok;
    for (long i = 0; c->bias_ok && i < YIELD_CAP; i++) {
        if (atomic_load_explicit(&lock0(c)->biased, memory_order_relaxed)) {
            c->seen_biased = true;
            return;
        }
        mqs_yield();
    }
}

static void *count_one(void *arg)
{
    atomic_fetch_add(&((struct bias_case *)arg)->done, 1);
    return NULL;
}

/* Pinned to worker 0: get biased, let the main thread start, yield on
 * until it says stop; or spin, with no scheduling point (its owner then
 * never looks at its lock meanwhile). */
static void *biased_yielder(void *arg)
{
    struct bias_case *c = arg;
    yield_until_biased(c);
    atomic_store(&c->go, 1);
    while (!atomic_load(&c->stop)) {
        if (c->spin)
            mqs__cpu_relax();
        else
            mqs_yield();
    }
    return NULL;
}

TEST(remote_enqueues_onto_a_biased_queue_all_run)
{
    struct bias_case c = {.rt = rt_new(2)};
    mqs_task_t *y = spawn_on(c.rt, 0, biased_yielder, &c);
    wait_count(&c.go, 1);
    mqs_task_t *t[TASKS];
    for (int i = 0; i < TASKS; i++)
        t[i] = spawn_on(c.rt, 0, count_one, &c);
    for (int i = 0; i < TASKS; i++)
        join(t[i]);
    CHECK_EQ(atomic_load(&c.done), TASKS);
    atomic_store(&c.stop, 1);
    join(y);
    if (c.bias_ok) {
        CHECK(c.seen_biased);
        CHECK_GT(MQS__STAT_GET(c.rt->workers[0]->bias_revoked), 0);
    } else {
        printf("note: membarrier unavailable, locks stay plain\n");
    }
    CHECK_OK(mqs_runtime_destroy(c.rt));
}

/* Pinned to worker 1: keep it busy (so placement queues work on worker
 * 0) until released. */
static void *blocker(void *arg)
{
    struct bias_case *c = arg;
    atomic_store(&c->go, 1);
    while (!atomic_load(&c->release))
        mqs__cpu_relax();
    return NULL;
}

/* Pinned to worker 0: get biased, spawn TASKS tasks that may run
 * anywhere while worker 1 is busy, release worker 1, then spin without a
 * scheduling point until all have run: the ones queued here can only run
 * if worker 1 steals them. */
static void *spinning_spawner(void *arg)
{
    struct bias_case *c = arg;
    yield_until_biased(c);
    for (int i = 0; i < TASKS; i++) {
        mqs_task_attr_t a;
        mqs_task_attr_init(&a);
        a.detached = true;
        CHECK_OK(mqs_spawn(c->rt, NULL, &a, count_one, c));
    }
    atomic_store(&c->release, 1);
    while (atomic_load(&c->done) < TASKS)
        mqs__cpu_relax();
    return NULL;
}

TEST(idle_worker_steals_through_a_biased_lock)
{
    struct bias_case c = {.rt = rt_new_coop(2)};
    mqs_task_t *b = spawn_on(c.rt, 1, blocker, &c);
    wait_count(&c.go, 1);
    join(spawn_on(c.rt, 0, spinning_spawner, &c));
    join(b);
    CHECK_EQ(atomic_load(&c.done), TASKS);
    mqs_worker_stats_t s;
    CHECK_OK(mqs_worker_stats(c.rt, 1, &s));
    /* With worker 1 busy, placement queued some on worker 0 (ties go to
     * the spawner's worker), where only a pull could run them (an empty
     * worker pulls through pick, counted as a priority pull). */
    CHECK_GT(s.pulls_idle + s.pulls_newidle + s.pulls_periodic +
                 s.pulls_priority,
             0);
    if (c.bias_ok)
        CHECK(c.seen_biased);
    CHECK_OK(mqs_runtime_destroy(c.rt));
}

/* A burst of remote lockers of a biased queue whose owner does not reach
 * a scheduling point (the monitor's poll waking a batch of tasks onto a
 * busy worker): the first revokes the bias and clears it, so the rest
 * take the plain path and pay no membarrier each.  Left for the owner to
 * clear at its next scheduling point, the bias stayed set under all of
 * them (about twenty membarriers a batch in the TCP chatroom). */
TEST(one_revocation_serves_the_remote_lockers_after_it)
{
    struct bias_case c = {.rt = rt_new_coop(2), .spin = true};
    mqs_task_t *s = spawn_on(c.rt, 0, biased_yielder, &c);
    wait_count(&c.go, 1);
    struct mqs_rq *rq = &c.rt->workers[0]->rq;
    int still_biased = 0;
    for (int i = 0; i < TASKS; i++) {
        mqs_rq_lock(rq);
        mqs_rq_unlock(rq);
        still_biased += atomic_load(&lock0(&c)->biased) != 0;
    }
    /* The owner is still in its spin: what cleared the bias is the
     * first locker, and the owner is told through notes. */
    unsigned notes = atomic_load(&lock0(&c)->notes);
    atomic_store(&c.stop, 1);
    join(s);
    if (c.bias_ok) {
        CHECK(c.seen_biased);
        CHECK_EQ(still_biased, 0);
        CHECK(notes & MQS__LOCK_UNBIAS);
    } else {
        printf("note: membarrier unavailable, locks stay plain\n");
    }
    CHECK_OK(mqs_runtime_destroy(c.rt));
}
