/*
 * test_rt_pull.c - the realtime pull of o1 and ule (src/rt_pull.h), on
 * the policy harness (tests/policy_harness.h): exact queue states, no
 * worker threads.  The scene is the conformance case's
 * (rt_pulled_from_busy_worker) made deterministic: worker 0 runs RT
 * blocker B with RT task R queued behind it; worker 1 runs normal work.
 * With rt_pull=1 worker 1's next pick, or the yield of its normal task,
 * takes R; with rt_pull=0 (the historical designs) R stays put.  R is
 * not taken when its affinity or its running state forbids it, and an
 * RT task waiting here is not passed over for a less urgent remote one.
 * Every case runs for both policies.
 */
#include "check.h"
#include "internal.h"
#include "policy_harness.h"

static const char *const rtp_policies[] = {"o1", "ule"};
#define NPOL 2

static struct harness h;

enum { B = 0, R = 1, H = 2, N = 3 }; /* harness task numbers */

static struct mqs_sched_entity *task(int k)
{
    return &h.t[k]->se;
}

/* spec with ",rt_pull=v" or ":rt_pull=v" appended. */
static const char *with_pull(const char *pol, int v)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%s:rt_pull=%d", pol, v);
    return buf;
}

/* Worker 0 runs FIFO 50 blocker B; FIFO 10 task R waits behind it. */
static void busy_worker0(void)
{
    h_enqueue(&h, 0, h_task(&h, B, MQS_CLASS_FIFO, 50), MQS_ENQ_NEW);
    h_enqueue(&h, 0, h_task(&h, R, MQS_CLASS_FIFO, 10), MQS_ENQ_NEW);
    CHECK(h_pick(&h, 0) == task(B));
    CHECK_EQ(mqs_rq_best_prio(h_rq(&h, 0)), task(R)->prio);
}

/* Worker 1 has normal tasks H and N queued. */
static void normal_worker1(void)
{
    h_enqueue(&h, 1, h_task(&h, H, MQS_CLASS_NORMAL, 0), MQS_ENQ_NEW);
    h_enqueue(&h, 1, h_task(&h, N, MQS_CLASS_NORMAL, 0), MQS_ENQ_NEW);
}

/* The next pick on worker 1 after the scene: R when pulled, else H. */
static struct mqs_sched_entity *pick_after_scene(const char *spec,
                                                 void (*tweak)(void))
{
    h_init(&h, spec, 2);
    busy_worker0();
    normal_worker1();
    if (tweak)
        tweak();
    return h_pick(&h, 1);
}

TEST(pick_pulls_rt_from_busy_worker)
{
    for (int i = 0; i < NPOL; i++) {
        CHECK(pick_after_scene(with_pull(rtp_policies[i], 1), NULL) == task(R));
        CHECK_EQ(mqs_rq_best_prio(h_rq(&h, 0)), MQS_PRIO_NONE);
        CHECK_EQ(h.w[1]->stats.pulls_priority, 1);
        CHECK(h_pick(&h, 1) == task(H)); /* nothing else moved */
        h_destroy(&h);
    }
}

TEST(default_is_rt_pull_1)
{
    for (int i = 0; i < NPOL; i++) {
        CHECK(pick_after_scene(rtp_policies[i], NULL) == task(R));
        h_destroy(&h);
    }
}

TEST(rt_pull_0_leaves_rt_queued)
{
    for (int i = 0; i < NPOL; i++) {
        CHECK(pick_after_scene(with_pull(rtp_policies[i], 0), NULL) == task(H));
        CHECK_EQ(mqs_rq_best_prio(h_rq(&h, 0)), task(R)->prio);
        CHECK_EQ(h.w[1]->stats.pulls_priority, 0);
        h_destroy(&h);
    }
}

static void pin_r_to_worker0(void)
{
    h_pin(task(R), 0);
}

static void r_on_cpu(void)
{
    atomic_store(&h_of(task(R))->on_cpu, 1); /* still switching out */
}

TEST(pull_respects_affinity_and_running_state)
{
    for (int i = 0; i < NPOL; i++) {
        const char *spec = with_pull(rtp_policies[i], 1);
        CHECK(pick_after_scene(spec, pin_r_to_worker0) == task(H));
        h_destroy(&h);
        CHECK(pick_after_scene(spec, r_on_cpu) == task(H));
        atomic_store(&h_of(task(R))->on_cpu, 0);
        h_destroy(&h);
    }
}

/* H runs on worker 1 (N queued) when R arrives behind B; H yields. */
static struct mqs_sched_entity *yield_after_scene(const char *spec)
{
    h_init(&h, spec, 2);
    normal_worker1();
    CHECK(h_pick(&h, 1) == task(H));
    busy_worker0();
    return h_yield(&h, 1, task(H), 1000);
}

TEST(yield_of_normal_task_lets_pick_pull)
{
    for (int i = 0; i < NPOL; i++) {
        CHECK(yield_after_scene(with_pull(rtp_policies[i], 1)) == task(R));
        h_destroy(&h);
        CHECK(yield_after_scene(with_pull(rtp_policies[i], 0)) == task(N));
        CHECK_EQ(mqs_rq_best_prio(h_rq(&h, 0)), task(R)->prio);
        h_destroy(&h);
    }
}

/* Worker 1 would run FIFO 5 task L: the remote FIFO 10 R beats it and
 * is pulled; a local FIFO 20 task beats R and runs instead. */
TEST(pull_compares_rt_levels)
{
    static const int local_prio[] = {5, 20};
    for (int i = 0; i < NPOL; i++)
        for (int j = 0; j < 2; j++) {
            h_init(&h, with_pull(rtp_policies[i], 1), 2);
            busy_worker0();
            h_enqueue(&h, 1, h_task(&h, H, MQS_CLASS_FIFO, local_prio[j]),
                      MQS_ENQ_NEW);
            CHECK(h_pick(&h, 1) == task(j == 0 ? R : H));
            h_destroy(&h);
        }
}

/* A FIFO 5 task yielding on worker 1 gives way to the remote R. */
TEST(yield_of_rt_task_lets_pick_pull)
{
    for (int i = 0; i < NPOL; i++) {
        h_init(&h, with_pull(rtp_policies[i], 1), 2);
        h_enqueue(&h, 1, h_task(&h, H, MQS_CLASS_FIFO, 5), MQS_ENQ_NEW);
        CHECK(h_pick(&h, 1) == task(H));
        busy_worker0();
        CHECK(h_yield(&h, 1, task(H), 1000) == task(R));
        h_destroy(&h);
    }
}

#undef NPOL
