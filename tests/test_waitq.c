/*
 * test_waitq.c - the wait queue (src/waitq.c) through a semaphore: many
 * waiters on one object, wake order by priority level then arrival,
 * removal from the middle by timeouts, and mqs__waitq_cancel (alone, and
 * racing the pops of posts from another thread).  Arrival
 * order is made exact by spawning one waiter at a time and waiting until
 * it is blocked; wake order is made exact by posting one unit at a time
 * and waiting until the woken task has recorded itself.  Nothing asserts
 * on time (the block time of the big case is printed, for reading only).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"

/* The semaphore's wait queue (its layout is private to sync.c, but the
 * queue is the storage's first member). */
static struct mqs__waitq *sem_q(mqs_sem_t *s)
{
    return (struct mqs__waitq *)&s->q;
}

static unsigned sem_waiters(mqs_sem_t *s)
{
    struct mqs__waitq *q = sem_q(s);
    mqs__spin_lock(&q->lock);
    unsigned n = q->nwait;
    mqs__spin_unlock(&q->lock);
    return n;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Many waiters on one semaphore                                       */
/* ------------------------------------------------------------------ */

/* 32768, the figure (stacks are slab slots: the map count no
 * longer stops it at 32749 live tasks).  TSan counts a fiber per task
 * as a thread and dies past 8128, so its build blocks fewer. */
#ifdef MQS_TSAN
#define MANY_TASKS 4000
#else
#define MANY_TASKS 32768
#endif

struct many {
    mqs_sem_t sem;
    atomic_int woke;
};

static void *many_waiter(void *arg)
{
    struct many *m = arg;
    CHECK_OK(mqs_sem_wait(&m->sem));
    atomic_fetch_add(&m->woke, 1);
    return NULL;
}

TEST(sem_many_waiters_all_wake)
{
    /* mprotect guards (no guard markers: before Linux 6.13, qemu-user)
     * are two mappings a task: stay under the default map count. */
    const int MANY =
        MANY_TASKS <= 30000 || mqs__stack_guard_markers() ? MANY_TASKS : 30000;
    mqs_runtime_t *rt = rt_new(2);
    struct many m = {.woke = 0};
    CHECK_OK(mqs_sem_init(&m.sem, 0));
    mqs_task_t **t = calloc(MANY, sizeof *t);
    CHECK(t != NULL);
    double t0 = mono_s();
    for (int i = 0; i < MANY; i++)
        t[i] = spawn(rt, many_waiter, &m);
    while (sem_waiters(&m.sem) < (unsigned)MANY)
        pause_a_bit();
    double t1 = mono_s();
    printf("  %d tasks blocked on one semaphore in %.3f s\n", MANY, t1 - t0);
    CHECK_EQ(atomic_load(&m.woke), 0);
    for (int i = 0; i < MANY; i++)
        CHECK_OK(mqs_sem_post(&m.sem));
    for (int i = 0; i < MANY; i++)
        join(t[i]);
    CHECK_EQ(atomic_load(&m.woke), MANY);
    CHECK_EQ(sem_waiters(&m.sem), 0);
    CHECK_OK(mqs_sem_destroy(&m.sem));
    free(t);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Wake order                                                          */
/* ------------------------------------------------------------------ */

struct level {
    mqs_class_t cls;
    int prio; /* nice, or realtime priority */
};

struct order_waiter {
    struct order_run *run;
    int id;                  /* arrival number                     */
    struct level lv;
    uint64_t timeout_ns;     /* 0: mqs_sem_wait                    */
    atomic_int announced;
    int rc;
};

#define ORDER_MAX 64

struct order_run {
    mqs_sem_t sem;
    atomic_int nwoke;        /* waiters returned, woken or timed out */
    atomic_int nslots;       /* woke[] slots taken                   */
    atomic_int nposted_woke; /* woken by a post, recorded in woke[]  */
    int woke[ORDER_MAX];     /* arrival numbers in wake order        */
    struct order_waiter w[ORDER_MAX];
    mqs_task_t *t[ORDER_MAX];
    int n;
};

static void *order_task(void *arg)
{
    struct order_waiter *w = arg;
    struct order_run *r = w->run;
    atomic_store(&w->announced, 1);
    w->rc = w->timeout_ns ? mqs_sem_timedwait(&r->sem, w->timeout_ns)
                          : mqs_sem_wait(&r->sem);
    if (w->rc == 0) {
        r->woke[atomic_fetch_add(&r->nslots, 1)] = w->id;
        atomic_fetch_add(&r->nposted_woke, 1); /* publishes the slot */
    }
    atomic_fetch_add(&r->nwoke, 1);
    return NULL;
}

/* Urgency as the header documents it, independently of se.prio: the
 * realtime classes first (higher priority first, FIFO and RR alike),
 * then normal (lower nice first), then idle. */
static int urgency_rank(struct level lv)
{
    switch (lv.cls) {
    case MQS_CLASS_FIFO:
    case MQS_CLASS_RR:
        return 100 - lv.prio;
    case MQS_CLASS_NORMAL:
        return 200 + lv.prio;
    default:
        return 300;
    }
}

/* Spawn waiter i of r and wait until it is blocked on r->sem. */
static void order_arrive(mqs_runtime_t *rt, struct order_run *r, int i)
{
    struct order_waiter *w = &r->w[i];
    w->run = r;
    w->id = i;
    r->t[i] = spawn_prio(rt, w->lv.cls, w->lv.prio, order_task, w);
    wait_blocked(r->t[i], &w->announced);
}

/* The arrival numbers of the waiters still owed a post, most urgent
 * first, in arrival order within a level (insertion sort: stable). */
static int expected_order(const struct order_run *r, int *out)
{
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->w[i].rc == MQS_ETIMEDOUT)
            continue;
        int rank = urgency_rank(r->w[i].lv), j = n;
        while (j > 0 && urgency_rank(r->w[out[j - 1]].lv) > rank) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = i;
        n++;
    }
    return n;
}

/* Post one unit at a time, each after the previous woken waiter has
 * recorded itself, then check the wake order and join everyone. */
static void order_drain_and_check(struct order_run *r, int already_done)
{
    int want[ORDER_MAX];
    int n = expected_order(r, want);
    for (int k = 0; k < n; k++) {
        CHECK_OK(mqs_sem_post(&r->sem));
        while (atomic_load(&r->nposted_woke) < k + 1)
            pause_a_bit();
    }
    while (atomic_load(&r->nwoke) < already_done + n)
        pause_a_bit();
    CHECK_EQ(atomic_load(&r->nposted_woke), n);
    for (int k = 0; k < n; k++) {
        if (r->woke[k] != want[k])
            CHECK__FAIL("wake %d of %d: waiter %d (rank %d), expected %d "
                        "(rank %d)", k, n, r->woke[k],
                        urgency_rank(r->w[r->woke[k]].lv), want[k],
                        urgency_rank(r->w[want[k]].lv));
    }
    for (int i = 0; i < r->n; i++)
        join(r->t[i]);
    CHECK_EQ(sem_waiters(&r->sem), 0);
}

static const struct level order_levels[] = {
    {MQS_CLASS_FIFO, 60}, {MQS_CLASS_RR, 60},   {MQS_CLASS_RR, 20},
    {MQS_CLASS_NORMAL, -10}, {MQS_CLASS_NORMAL, 0}, {MQS_CLASS_NORMAL, 5},
    {MQS_CLASS_NORMAL, 19}, {MQS_CLASS_IDLE, 0},
};
#define NLEVELS (int)(sizeof order_levels / sizeof order_levels[0])
#define PER_LEVEL 5

TEST(sem_wakes_by_level_then_arrival)
{
    uint64_t seeds[] = {1, 42, 20261201};
    for (int si = 0; si < 3; si++) {
        uint64_t seed = seeds[si];
        printf("  seed %llu\n", (unsigned long long)seed);
        mqs_runtime_t *rt = rt_new(2);
        struct order_run *r = calloc(1, sizeof *r);
        CHECK(r != NULL);
        CHECK_OK(mqs_sem_init(&r->sem, 0));
        /* PER_LEVEL of each level, in a shuffled arrival order, so the
         * levels interleave and each level's arrivals are spread out. */
        r->n = NLEVELS * PER_LEVEL;
        for (int i = 0; i < r->n; i++)
            r->w[i].lv = order_levels[i % NLEVELS];
        for (int i = r->n - 1; i > 0; i--) {
            int j = (int)(rng_next(&seed) % (uint64_t)(i + 1));
            struct level tmp = r->w[i].lv;
            r->w[i].lv = r->w[j].lv;
            r->w[j].lv = tmp;
        }
        for (int i = 0; i < r->n; i++)
            order_arrive(rt, r, i);
        CHECK_EQ(sem_waiters(&r->sem), (unsigned)r->n);
        order_drain_and_check(r, 0);
        CHECK_OK(mqs_sem_destroy(&r->sem));
        free(r);
        CHECK_OK(mqs_runtime_destroy(rt));
    }
}

/* Waiters that leave from the middle of the queue by timing out: the
 * first of a level (its successor of the same level takes its place),
 * one in the middle of a level, the last of a level and of the queue,
 * and the only waiter of a level (the level goes).  The timeouts are
 * long enough that the others have usually all arrived by then; the
 * order checked holds either way.  Late arrivals at those levels come
 * after the timeouts, so they are placed by what the removals left. */
TEST(sem_timeouts_leave_from_the_middle)
{
    static const struct {
        struct level lv;
        int when; /* 0: plain wait, 1: timed out, 2: arrives late */
    } plan[] = {
        {{MQS_CLASS_NORMAL, 0}, 1},  /* first of nice 0           */
        {{MQS_CLASS_NORMAL, 5}, 0},
        {{MQS_CLASS_NORMAL, 0}, 0},  /* becomes first of nice 0   */
        {{MQS_CLASS_RR, 30}, 0},
        {{MQS_CLASS_NORMAL, -5}, 1}, /* only one of nice -5       */
        {{MQS_CLASS_NORMAL, 0}, 1},  /* middle of nice 0          */
        {{MQS_CLASS_NORMAL, 0}, 0},
        {{MQS_CLASS_RR, 30}, 1},     /* last of RR 30             */
        {{MQS_CLASS_NORMAL, 5}, 0},
        {{MQS_CLASS_NORMAL, 0}, 0},
        {{MQS_CLASS_FIFO, 30}, 0},
        {{MQS_CLASS_NORMAL, 10}, 1}, /* last of the queue         */
        {{MQS_CLASS_NORMAL, 0}, 2},
        {{MQS_CLASS_NORMAL, -5}, 2},
        {{MQS_CLASS_RR, 30}, 2},
        {{MQS_CLASS_NORMAL, 10}, 2},
        {{MQS_CLASS_NORMAL, 5}, 2},
    };
    int n = (int)(sizeof plan / sizeof plan[0]), ntimed = 0;
    mqs_runtime_t *rt = rt_new(2);
    struct order_run *r = calloc(1, sizeof *r);
    CHECK(r != NULL);
    CHECK_OK(mqs_sem_init(&r->sem, 0));
    r->n = n;
    for (int i = 0; i < n; i++) {
        r->w[i].lv = plan[i].lv;
        r->w[i].timeout_ns = plan[i].when == 1 ? 200000000 : 0;
        ntimed += plan[i].when == 1;
    }
    for (int i = 0; i < n; i++)
        if (plan[i].when != 2)
            order_arrive(rt, r, i);
    while (atomic_load(&r->nwoke) < ntimed)
        pause_a_bit();
    for (int i = 0; i < n; i++)
        if (plan[i].when == 1)
            CHECK_EQ(r->w[i].rc, MQS_ETIMEDOUT);
    for (int i = 0; i < n; i++)
        if (plan[i].when == 2)
            order_arrive(rt, r, i);
    CHECK_EQ(atomic_load(&r->nposted_woke), 0);
    CHECK_EQ(sem_waiters(&r->sem), (unsigned)(n - ntimed));
    order_drain_and_check(r, ntimed);
    CHECK_OK(mqs_sem_destroy(&r->sem));
    free(r);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* mqs__waitq_cancel                                                   */
/* ------------------------------------------------------------------ */

TEST(waitq_cancel_claims_a_blocked_task_once)
{
    mqs_runtime_t *rt = rt_new(2);
    struct order_run *r = calloc(1, sizeof *r);
    CHECK(r != NULL);
    CHECK_OK(mqs_sem_init(&r->sem, 0));
    r->n = 3;
    for (int i = 0; i < r->n; i++) {
        r->w[i].lv = (struct level){MQS_CLASS_NORMAL, 0};
        order_arrive(rt, r, i);
    }
    struct mqs_task *mid = mqs__task_of(r->t[1]);
    CHECK(mqs__waitq_cancel(mid, MQS_ECLOSED));
    CHECK_EQ(mid->wait_result, MQS_ECLOSED);
    CHECK_EQ(atomic_load(&mid->state), MQS__WAKING);
    CHECK_EQ(sem_waiters(&r->sem), 2);
    CHECK(!mqs__waitq_cancel(mid, MQS_EINVAL)); /* claimed already */
    CHECK_EQ(mid->wait_result, MQS_ECLOSED);
    /* The others still wake, in order; the cancelled one never does. */
    for (int k = 0; k < 2; k++) {
        CHECK_OK(mqs_sem_post(&r->sem));
        while (atomic_load(&r->nposted_woke) < k + 1)
            pause_a_bit();
    }
    CHECK_EQ(r->woke[0], 0);
    CHECK_EQ(r->woke[1], 2);
    CHECK(!mqs__waitq_cancel(mqs__task_of(r->t[0]), MQS_ECLOSED)); /* woken: not blocked */
    join(r->t[0]);
    join(r->t[2]);
    CHECK_EQ(sem_waiters(&r->sem), 0);
    CHECK_EQ(atomic_load(&r->nwoke), 2);
    /* It is left for destroy to report and free. */
    FILE *null = fopen("/dev/null", "w");
    CHECK(null != NULL);
    CHECK_EQ(mqs_runtime_destroy_ex(rt, MQS_DESTROY_REPORT, null), 1);
    fclose(null);
    free(r);
}

/* A cancel racing the pops of posts from another thread, waiter by
 * waiter from the head of the queue where the pops also take them: each
 * waiter is claimed once, by one of the two.  (Poppers claim a waiter
 * with no timer by a plain store under the queue's lock, so a cancel
 * must claim under that lock too; with its CAS outside, both claimed
 * the same waiter: a unit consumed by a task that then returned
 * MQS_ECLOSED, or the task queued twice.) */
#define RACE_WAITERS 32
#ifdef MQS_TSAN
#define RACE_ROUNDS 40
#else
#define RACE_ROUNDS 300
#endif

struct claim_race {
    mqs_sem_t sem;
    atomic_int posted, cancelled, other;
    atomic_int go;
};

static void *claim_waiter(void *arg)
{
    struct claim_race *c = arg;
    int rc = mqs_sem_wait(&c->sem);
    atomic_fetch_add(rc == 0              ? &c->posted
                     : rc == MQS_ECLOSED ? &c->cancelled
                                         : &c->other,
                     1);
    return NULL;
}

static void *claim_poster(void *arg)
{
    struct claim_race *c = arg;
    atomic_fetch_add(&c->go, 1);
    while (atomic_load(&c->go) < 2)
        ;
    for (int i = 0; i < RACE_WAITERS / 2; i++)
        CHECK_OK(mqs_sem_post(&c->sem));
    return NULL;
}

TEST(a_cancel_and_a_post_claim_each_waiter_once)
{
    mqs_runtime_t *rt = rt_new(2);
    struct claim_race *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    long won_total = 0;
    for (int round = 0; round < RACE_ROUNDS; round++) {
        CHECK_OK(mqs_sem_init(&c->sem, 0));
        atomic_store(&c->posted, 0);
        atomic_store(&c->cancelled, 0);
        atomic_store(&c->go, 0);
        mqs_task_t *h[RACE_WAITERS];
        for (int i = 0; i < RACE_WAITERS; i++)
            h[i] = spawn(rt, claim_waiter, c);
        while (sem_waiters(&c->sem) < RACE_WAITERS)
            pause_a_bit();
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, claim_poster, c), 0);
        int won = 0;
        atomic_fetch_add(&c->go, 1);
        while (atomic_load(&c->go) < 2)
            ;
        for (int i = 0; i < RACE_WAITERS; i++) {
            struct mqs_task *t = mqs__task_of(h[i]);
            if (mqs__waitq_cancel(t, MQS_ECLOSED)) {
                won++;
                mqs__wake(t);
            }
        }
        pthread_join(th, NULL);
        /* Whoever neither claimed is still blocked: release them. */
        for (int i = 0; i < RACE_WAITERS; i++)
            CHECK_OK(mqs_sem_post(&c->sem));
        for (int i = 0; i < RACE_WAITERS; i++)
            join(h[i]);
        CHECK_EQ(atomic_load(&c->other), 0);
        CHECK_EQ(atomic_load(&c->cancelled), won);
        CHECK_EQ(atomic_load(&c->posted) + won, RACE_WAITERS);
        /* Every unit a waiter did not take is left. */
        int left = 0;
        while (mqs_sem_trywait(&c->sem) == 0)
            left++;
        CHECK_EQ(left, RACE_WAITERS / 2 + RACE_WAITERS -
                           atomic_load(&c->posted));
        CHECK_OK(mqs_sem_destroy(&c->sem));
        won_total += won;
    }
    printf("  %ld of %d waiters cancelled, the rest taken by posts\n",
           won_total, RACE_ROUNDS * RACE_WAITERS);
    free(c);
    CHECK_OK(mqs_runtime_destroy(rt));
}
