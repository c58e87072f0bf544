/*
 * test_mq_wake.c - mq's bounded sleeper credit (`wake_head`): a normal
 * task woken with slice left runs at its worker's next scheduling point,
 * ahead of the yielders of its level, if it slept at least wake_sleep_ns;
 * with wake_head=0, or after a shorter sleep, it queues behind them (the
 * O(1) arrays' plain FIFO).  One worker, so the order is exact.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "helpers.h"

#define YIELDERS 3
#define ROUNDS 50

struct wake_case {
    mqs_sem_t sem;
    atomic_int stop;
    atomic_int log[4 * ROUNDS * (YIELDERS + 2)];
    atomic_int nlog;
    atomic_int woken; /* wake-ups the sleeper has seen */
    atomic_int posting; /* the poster runs: the yielders log from now on */
};

static void note(struct wake_case *c, int who)
{
    int i = atomic_fetch_add(&c->nlog, 1);
    if (i < (int)(sizeof c->log / sizeof c->log[0]))
        atomic_store(&c->log[i], who);
}

static void *sleeper(void *arg)
{
    struct wake_case *c = arg;
    for (int i = 0; i < ROUNDS; i++) {
        mqs_sem_wait(&c->sem);
        note(c, 'S');
        atomic_fetch_add(&c->woken, 1);
    }
    atomic_store(&c->stop, 1);
    return NULL;
}

static void *poster(void *arg)
{
    struct wake_case *c = arg;
    atomic_store(&c->posting, 1);
    for (int i = 0; i < ROUNDS; i++) {
        note(c, 'P');
        mqs_sem_post(&c->sem);
        mqs_yield();
    }
    return NULL;
}

static void *yielder(void *arg)
{
    struct wake_case *c = arg;
    /* They start before the poster is spawned (the runtime runs tasks
     * as they come): no log until the case begins. */
    while (!atomic_load(&c->stop)) {
        if (atomic_load(&c->posting))
            note(c, 'Y');
        mqs_yield();
    }
    return NULL;
}

/* Run the case under `policy`; count posts whose very next entry in
 * the run log is the sleeper. */
static int sleeper_next_after_post(const char *policy)
{
    static struct wake_case c;
    memset(&c, 0, sizeof c);
    CHECK_OK(mqs_sem_init(&c.sem, 0));
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 1;
    cfg.policy = policy;
    mqs_runtime_t *rt = rt_create(&cfg);
    mqs_task_t *t[YIELDERS + 2];
    t[0] = spawn(rt, sleeper, &c);
    for (int i = 0; i < YIELDERS; i++)
        t[1 + i] = spawn(rt, yielder, &c);
    t[YIELDERS + 1] = spawn(rt, poster, &c);
    for (int i = 0; i < YIELDERS + 2; i++)
        CHECK_OK(mqs_join(t[i], NULL));
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(atomic_load(&c.woken), ROUNDS);
    int n = atomic_load(&c.nlog), next = 0, posts = 0;
    CHECK(n <= (int)(sizeof c.log / sizeof c.log[0]));
    for (int i = 0; i + 1 < n; i++)
        if (atomic_load(&c.log[i]) == 'P') {
            posts++;
            next += atomic_load(&c.log[i + 1]) == 'S';
        }
    CHECK_EQ(posts, ROUNDS);
    return next;
}

#define LONG_SLICES "mq:slice_ns=1000000000,latency_ns=10000000000,"

TEST(woken_task_runs_before_yielders_of_its_level)
{
    /* Slices of 1 s (and a round of 10 s, which would cap them): no
     * task's slice ends within the case, not even a tick charged at
     * once under tick accounting (with the default 5 ms round a slice
     * was 0.8 ms, and a tick that fell in the sleeper's run expired it:
     * 49 of 50 under qemu, once).  The sleeper sleeps microseconds, so
     * the sleep bound is set to 0 here. */
    CHECK_EQ(sleeper_next_after_post(LONG_SLICES "wake_sleep_ns=0"),
             ROUNDS);
}

TEST(a_short_sleep_earns_no_credit)
{
    /* a bound of 1 s, far above any of the case's sleeps (a host
     * preemption can stretch one past the default 50 us): the woken task
     * queues behind the yielders */
    CHECK_EQ(sleeper_next_after_post(LONG_SLICES "wake_sleep_ns=1000000000"),
             0);
}

TEST(wake_head_0_queues_the_woken_task_behind_them)
{
    CHECK_EQ(sleeper_next_after_post(LONG_SLICES "wake_head=0"), 0);
}
