/*
 * test_stress.c - many short tasks (MQS_STRESS_TASKS, default 100000) doing
 * random yields, microsecond sleeps, channel traffic, class/priority and
 * affinity changes and nested spawns, with everything counted:
 *
 *   spawned == ended == joined, every join returns the task's own value,
 *   messages sent == received, and their checksums agree.
 *
 * Tasks are spawned in batches (BATCH live at a time) so the number of
 * stack mappings stays bounded.  Each task draws from its own RNG seeded
 * with seed + index; the seed is printed and MQS_STRESS_SEED replays it.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "helpers.h"
#include "mqs.h"

#define BATCH 1000
#define NCHAN 4
#define CONSUMERS_PER_CHAN 2

struct stress {
    int workers;
    uint64_t seed;
    mqs_chan_t *ch[NCHAN];
    atomic_ullong spawned, ended, joined;
    atomic_ullong sent, recvd, sent_sum, recvd_sum;
    atomic_ullong yields, sleeps, sched_changes, aff_changes, try_fail;
};
static struct stress S;

static void *child_fn(void *arg)
{
    atomic_fetch_add(&S.ended, 1);
    return (void *)((uintptr_t)arg * 3);
}

static void send_one(mqs_chan_t *ch, uint64_t v, int how, uint64_t *s)
{
    int rc;
    switch (how) {
    case 0:
        rc = mqs_chan_send(ch, &v);
        break;
    case 1:
        rc = mqs_chan_trysend(ch, &v);
        break;
    default:
        rc = mqs_chan_timedsend(ch, &v, 1000 + rng_next(s) % 20000);
        break;
    }
    if (rc == 0) {
        atomic_fetch_add_explicit(&S.sent, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&S.sent_sum, v, memory_order_relaxed);
    } else if (rc == MQS_EAGAIN || rc == MQS_ETIMEDOUT) {
        atomic_fetch_add_explicit(&S.try_fail, 1, memory_order_relaxed);
    } else {
        CHECK__FAIL("send returned %d (%s)", rc, mqs_strerror(rc));
    }
}

static void change_sched(uint64_t *s)
{
    uint64_t r = rng_next(s) % 16;
    mqs_class_t c;
    int prio;
    if (r < 9) {
        c = MQS_CLASS_NORMAL;
        prio = (int)(rng_next(s) % 40) - 20;
    } else if (r < 12) {
        c = MQS_CLASS_RR;
        prio = 1 + (int)(rng_next(s) % 99);
    } else if (r < 15) {
        c = MQS_CLASS_FIFO;
        prio = 1 + (int)(rng_next(s) % 99);
    } else {
        c = MQS_CLASS_IDLE;
        prio = 0;
    }
    CHECK_OK(mqs_task_set_sched(mqs_self(), c, prio));
    mqs_class_t c2;
    int p2;
    CHECK_OK(mqs_task_get_sched(mqs_self(), &c2, &p2));
    CHECK_EQ(c2, c);
    if (c != MQS_CLASS_IDLE)
        CHECK_EQ(p2, prio);
    atomic_fetch_add_explicit(&S.sched_changes, 1, memory_order_relaxed);
}

static void change_affinity(uint64_t *s)
{
    mqs_mask_t m;
    mqs_mask_zero(&m);
    mqs_mask_set(&m, (int)(rng_next(s) % (uint64_t)S.workers));
    if (rng_next(s) % 2)
        mqs_mask_set(&m, (int)(rng_next(s) % (uint64_t)S.workers));
    CHECK_OK(mqs_task_set_affinity(mqs_self(), &m));
    CHECK_OK(mqs_yield()); /* moves at this scheduling point */
    CHECK(mqs_mask_isset(&m, mqs_worker_self()));
    atomic_fetch_add_explicit(&S.aff_changes, 1, memory_order_relaxed);
}

static void *producer(void *arg)
{
    uint64_t idx = (uint64_t)(uintptr_t)arg;
    uint64_t s = S.seed + idx;
    int steps = 4 + (int)(rng_next(&s) % 12);
    for (int k = 0; k < steps; k++) {
        switch (rng_next(&s) % 8) {
        case 0:
        case 1:
            CHECK_OK(mqs_yield());
            atomic_fetch_add_explicit(&S.yields, 1, memory_order_relaxed);
            break;
        case 2:
            CHECK_OK(mqs_sleep(1000 + rng_next(&s) % 50000));
            atomic_fetch_add_explicit(&S.sleeps, 1, memory_order_relaxed);
            break;
        case 3:
        case 4:
        case 5:
            send_one(S.ch[rng_next(&s) % NCHAN], (idx << 8) | (uint64_t)k,
                     (int)(rng_next(&s) % 4), &s);
            break;
        case 6:
            change_sched(&s);
            break;
        default:
            change_affinity(&s);
            break;
        }
    }
    if (idx % 50 == 0) { /* a nested spawn, joined by its parent */
        mqs_task_attr_t a;
        mqs_task_attr_init(&a);
        a.stack_size = 64 * 1024;
        mqs_task_t *c = NULL;
        CHECK_OK(mqs_spawn(mqs_runtime_self(), &c, &a, child_fn, arg));
        atomic_fetch_add(&S.spawned, 1);
        void *r = NULL;
        CHECK_OK(mqs_join(c, &r));
        CHECK(r == (void *)((uintptr_t)arg * 3));
        atomic_fetch_add(&S.joined, 1);
    }
    atomic_fetch_add(&S.ended, 1);
    return (void *)(uintptr_t)(idx ^ 0xabcdef);
}

static void *consumer(void *arg)
{
    mqs_chan_t *ch = arg;
    uint64_t v, n = 0, sum = 0;
    int rc;
    while ((rc = mqs_chan_recv(ch, &v)) == 0) {
        n++;
        sum += v;
    }
    CHECK_ERR(rc, MQS_ECLOSED);
    atomic_fetch_add(&S.recvd, n);
    atomic_fetch_add(&S.recvd_sum, sum);
    return NULL;
}

static long stress_tasks(void)
{
    const char *e = getenv("MQS_STRESS_TASKS");
    long n = e ? strtol(e, NULL, 10) : 100000;
    return n > 0 ? n : 100000;
}

static uint64_t stress_seed(void)
{
    const char *e = getenv("MQS_STRESS_SEED");
    if (e)
        return strtoull(e, NULL, 10);
    return mqs_now_ns() ^ ((uint64_t)getpid() << 32);
}

static void run_stress(int workers, long ntasks)
{
    memset(&S, 0, sizeof S);
    S.workers = workers;
    S.seed = stress_seed();
    printf("  %d workers, %ld tasks, MQS_STRESS_SEED=%llu (task i uses seed "
           "+ i)\n",
           workers, ntasks, (unsigned long long)S.seed);
    fflush(stdout);

    mqs_runtime_t *rt = rt_new(workers);

    static const size_t caps[NCHAN] = {0, 1, 8, 64};
    mqs_task_t *cons[NCHAN * CONSUMERS_PER_CHAN];
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    for (int c = 0; c < NCHAN; c++) {
        CHECK_OK(mqs_chan_create(&S.ch[c], sizeof(uint64_t), caps[c]));
        for (int k = 0; k < CONSUMERS_PER_CHAN; k++)
            CHECK_OK(mqs_spawn(rt, &cons[c * CONSUMERS_PER_CHAN + k], &a,
                               consumer, S.ch[c]));
    }

    static mqs_task_t *batch[BATCH];
    uint64_t drv = S.seed ^ 0x5555;
    a.stack_size = 64 * 1024;
    for (long base = 0; base < ntasks; base += BATCH) {
        long n = ntasks - base < BATCH ? ntasks - base : BATCH;
        for (long i = 0; i < n; i++) {
            CHECK_OK(mqs_spawn(rt, &batch[i], &a, producer,
                               (void *)(uintptr_t)(base + i)));
            atomic_fetch_add(&S.spawned, 1);
        }
        /* meanwhile, move the consumers around from outside */
        mqs_task_t *c = cons[rng_next(&drv) % (NCHAN * CONSUMERS_PER_CHAN)];
        if (rng_next(&drv) % 2)
            CHECK_OK(mqs_task_set_sched(c, MQS_CLASS_RR,
                                        1 + (int)(rng_next(&drv) % 99)));
        else
            CHECK_OK(mqs_task_set_sched(c, MQS_CLASS_NORMAL,
                                        (int)(rng_next(&drv) % 40) - 20));
        mqs_mask_t m;
        mqs_mask_zero(&m);
        mqs_mask_set(&m, (int)(rng_next(&drv) % (uint64_t)workers));
        if (rng_next(&drv) % 4 == 0)
            for (int w = 0; w < workers; w++)
                mqs_mask_set(&m, w);
        CHECK_OK(mqs_task_set_affinity(c, &m));
        for (long i = 0; i < n; i++) {
            void *r = NULL;
            CHECK_OK(mqs_join(batch[i], &r));
            CHECK(r == (void *)(uintptr_t)((uint64_t)(base + i) ^ 0xabcdef));
            atomic_fetch_add(&S.joined, 1);
        }
    }
    for (int c = 0; c < NCHAN; c++)
        CHECK_OK(mqs_chan_close(S.ch[c]));
    for (int k = 0; k < NCHAN * CONSUMERS_PER_CHAN; k++)
        CHECK_OK(mqs_join(cons[k], NULL));
    mqs_worker_stats_t st;
    CHECK_OK(mqs_runtime_stats(rt, &st));
    CHECK_OK(mqs_runtime_destroy(rt));
    for (int c = 0; c < NCHAN; c++)
        CHECK_OK(mqs_chan_destroy(S.ch[c]));

    printf("  spawned %llu ended %llu joined %llu; sent %llu received %llu "
           "(%llu try/timed sends gave up); %llu yields, %llu sleeps, %llu "
           "class changes, %llu affinity changes; %llu migrations\n",
           (unsigned long long)S.spawned, (unsigned long long)S.ended,
           (unsigned long long)S.joined, (unsigned long long)S.sent,
           (unsigned long long)S.recvd, (unsigned long long)S.try_fail,
           (unsigned long long)S.yields, (unsigned long long)S.sleeps,
           (unsigned long long)S.sched_changes,
           (unsigned long long)S.aff_changes,
           (unsigned long long)st.migrations);
    long expect = ntasks + (ntasks + 49) / 50;
    CHECK_EQ(S.spawned, expect);
    CHECK_EQ(S.ended, expect);
    CHECK_EQ(S.joined, expect);
    CHECK_EQ(S.sent, S.recvd);
    CHECK_EQ(S.sent_sum, S.recvd_sum);
    CHECK_GT(S.sent, 0);
}

TEST(stress_two_workers)
{
    run_stress(2, stress_tasks());
}

TEST(stress_four_workers)
{
    long n = stress_tasks() / 10;
    run_stress(4, n > 0 ? n : 1);
}

TEST(stress_one_worker)
{
    long n = stress_tasks() / 20;
    run_stress(1, n > 0 ? n : 1);
}
