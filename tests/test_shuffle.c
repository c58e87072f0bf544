/*
 * test_shuffle.c - the random-schedule mode (mqs_config_t.shuffle_seed,
 * MQS_SHUFFLE) is on when asked and replays from its seed: 64 spawns
 * from outside the runtime, with every worker held by a task that never
 * reaches a scheduling point (so nothing is picked or stolen while we
 * look), under a policy that places every task on worker 0, land all on
 * worker 0 with the mode off, on every worker with it on, on the same
 * workers for the same seed and on different ones for two seeds.  The
 * chance that two seeds agree on all 64 among 4 workers by luck is
 * 4^-64.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"
#include "minimal_policy.h"

#define SH_WORKERS 4
#define SH_SPAWNS 64

struct hold {
    atomic_int running;
    atomic_int release;
};

static void *hold_worker(void *arg)
{
    struct hold *h = arg;
    atomic_fetch_add(&h->running, 1);
    mqs_preempt_disable();
    while (!atomic_load(&h->release))
        mqs__cpu_relax(); /* no scheduling point: the worker stays ours */
    mqs_preempt_enable();
    return NULL;
}

/* The minimal policy, placing every task on its first allowed worker. */
static int first_allowed(mqs_runtime_t *rt, struct mqs_sched_entity *se,
                         int waker, int flags)
{
    (void)waker;
    (void)flags;
    int w = 0;
    while (!mqs_se_allowed(se, w) && w + 1 < mqs_nr_workers(rt))
        w++;
    return w;
}

static const struct mqs_policy first_policy = {
    .name = "first",
    .select_worker = first_allowed,
    .enqueue = minimal_enqueue,
    .pick = minimal_pick,
};

/* Where each of SH_SPAWNS spawns from this thread was queued, with the
 * random-schedule mode seeded by seed. */
static void placements(uint64_t seed, int out[SH_SPAWNS])
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = SH_WORKERS;
    cfg.shuffle_seed = seed;
    cfg.policy_ops = &first_policy;
    minimal_reset();
    mqs_runtime_t *rt = rt_create(&cfg);
    static struct hold h;
    atomic_store(&h.running, 0);
    atomic_store(&h.release, 0);
    mqs_task_t *holders[SH_WORKERS], *t[SH_SPAWNS];
    for (int i = 0; i < SH_WORKERS; i++)
        holders[i] = spawn_on(rt, i, hold_worker, &h);
    wait_count(&h.running, SH_WORKERS);
    for (int i = 0; i < SH_SPAWNS; i++) {
        t[i] = spawn(rt, ret_arg, NULL);
        out[i] = atomic_load(&mqs__task_of(t[i])->queued_on);
        CHECK(out[i] >= 0 && out[i] < SH_WORKERS);
    }
    atomic_store(&h.release, 1);
    for (int i = 0; i < SH_SPAWNS; i++)
        join(t[i]);
    for (int i = 0; i < SH_WORKERS; i++)
        join(holders[i]);
    CHECK_OK(mqs_runtime_destroy(rt));
}

static int same_places(const int *a, const int *b)
{
    int n = 0;
    for (int i = 0; i < SH_SPAWNS; i++)
        n += a[i] == b[i];
    return n;
}

TEST(same_seed_same_placement_other_seed_other_placement)
{
    int off[SH_SPAWNS], a[SH_SPAWNS], again[SH_SPAWNS], b[SH_SPAWNS];
    if (test_shuffle_seed() == 0) { /* rt_create would set MQS_SHUFFLE's */
        placements(0, off);
        for (int i = 0; i < SH_SPAWNS; i++)
            CHECK_EQ(off[i], 0);
    }
    placements(12345, a);
    placements(12345, again);
    placements(777, b);
    CHECK_EQ(same_places(a, again), SH_SPAWNS);
    CHECK_LT(same_places(a, b), SH_SPAWNS);
    /* Every worker got some: the policy's choice was overridden. */
    int per[SH_WORKERS] = {0};
    for (int i = 0; i < SH_SPAWNS; i++)
        per[a[i]]++;
    for (int w = 0; w < SH_WORKERS; w++)
        CHECK_GT(per[w], 0);
}

TEST(mqs_shuffle_env_sets_the_seed)
{
    setenv("MQS_SHUFFLE", "0x2a", 1);
    mqs_config_t in, out;
    mqs_config_init(&in);
    CHECK_OK(mqs_config_resolve(&in, &out));
    CHECK_EQ(out.shuffle_seed, (uint64_t)42);
    in.ignore_env = true;
    in.shuffle_seed = 7;
    CHECK_OK(mqs_config_resolve(&in, &out));
    CHECK_EQ(out.shuffle_seed, (uint64_t)7);
    in.ignore_env = false;
    setenv("MQS_SHUFFLE", "-3", 1);
    CHECK_ERR(mqs_config_resolve(&in, &out), MQS_EINVAL);
    setenv("MQS_SHUFFLE", "12x", 1);
    CHECK_ERR(mqs_config_resolve(&in, &out), MQS_EINVAL);
    unsetenv("MQS_SHUFFLE");
    mqs_config_init(&in);
    CHECK_OK(mqs_config_resolve(&in, &out));
    CHECK_EQ(out.shuffle_seed, (uint64_t)0);
}

/* The mode keeps the orders it must: a semaphore's waiters of one
 * priority are still woken first come first served. */
struct fifo_run {
    mqs_sem_t s;
    atomic_int arrived;
    int order[8];
    atomic_int n;
};

static void *fifo_waiter(void *arg)
{
    struct fifo_run *r = arg;
    int me = atomic_fetch_add(&r->arrived, 1);
    CHECK_OK(mqs_sem_wait(&r->s));
    r->order[atomic_fetch_add(&r->n, 1)] = me;
    return NULL;
}

TEST(wait_queue_fifo_kept_under_shuffle)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 1;
    cfg.shuffle_seed = 99;
    mqs_runtime_t *rt = rt_create(&cfg);
    static struct fifo_run r;
    CHECK_OK(mqs_sem_init(&r.s, 0));
    mqs_task_t *t[8];
    for (int i = 0; i < 8; i++) {
        t[i] = spawn(rt, fifo_waiter, &r);
        static atomic_int dummy;
        atomic_store(&dummy, 1);
        wait_blocked(t[i], &dummy);
    }
    for (int i = 0; i < 8; i++) { /* one at a time: the wake order */
        CHECK_OK(mqs_sem_post(&r.s));
        wait_count(&r.n, i + 1);
    }
    for (int i = 0; i < 8; i++)
        join(t[i]);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(r.order[i], i);
    CHECK_OK(mqs_runtime_destroy(rt));
}
