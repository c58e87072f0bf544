/*
 * test_policy_bfs.c - bfs's design on exact queue states (the policy's
 * ops driven with a virtual clock, tests/policy_harness.h): one queue
 * for all workers; pick returns the earliest virtual deadline allowed on
 * the picking worker; deadlines are now + rr_interval x prio_ratio(nice);
 * a task that last ran on the picking worker wins within the locality
 * window; a sleeper keeps its deadline; every worker publishes the count
 * of queued tasks it may run; realtime tasks come first.
 */
#include "check.h"
#include "policy_harness.h"

#define US 1000ull
#define MS 1000000ull
#define BFS_SPEC "bfs:steal_check_ns=0"

/* BFS's prio_ratios, recomputed here: 128 for nice -20, x 11/10 a step,
 * times rr_interval (6 ms) / 128. */
static uint64_t offset(int nice)
{
    uint64_t r = 128;
    for (int i = -20; i < nice; i++)
        r = r * 11 / 10;
    return 6 * MS * r / 128;
}

TEST(bfs_deadline_is_now_plus_ratio_by_nice)
{
    struct harness h;
    h_init(&h, BFS_SPEC, 1);
    static const int nice[] = {-20, 0, 10, 19};
    for (int k = 0; k < 4; k++) {
        struct mqs_sched_entity *se =
            h_task(&h, k, MQS_CLASS_NORMAL, nice[k]);
        h_enqueue(&h, 0, se, MQS_ENQ_NEW);
        CHECK_EQ(se->key - h.now, offset(nice[k]));
    }
    CHECK_EQ(offset(-20), 6 * MS);
    for (int k = 0; k < 4; k++) /* earliest deadline first */
        CHECK(h_pick(&h, 0) == &h.t[k]->se);
}

/* Worker 1 skips the earlier task pinned to worker 0. */
TEST(bfs_picks_earliest_deadline_allowed_here)
{
    struct harness h;
    h_init(&h, BFS_SPEC, 2);
    struct mqs_sched_entity *a = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *b = h_task(&h, 1, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *c = h_task(&h, 2, MQS_CLASS_NORMAL, 5);
    h_pin(a, 0);
    h_enqueue(&h, 0, a, MQS_ENQ_NEW);
    h_set_now(&h, h.now + MS);
    h_enqueue(&h, 1, b, MQS_ENQ_NEW);
    h_enqueue(&h, 1, c, MQS_ENQ_NEW);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 0)), 3);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 2);
    CHECK(h_pick(&h, 1) == b);
    CHECK(h_pick(&h, 1) == c);
    CHECK(h_pick(&h, 1) == NULL);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 0);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 0)), 1);
    CHECK(h_pick(&h, 0) == a);
}

/* Tasks 0, 1, 2 of nice 0, queued new at t, t + gap_b, t + gap_b +
 * gap_c, having last run on workers 0, 1, 1. */
static void locality_three(struct harness *h, uint64_t gap_b, uint64_t gap_c)
{
    h_init(h, BFS_SPEC, 2);
    static const int last[] = {0, 1, 1};
    const uint64_t gap[] = {0, gap_b, gap_c};
    for (int k = 0; k < 3; k++) {
        struct mqs_sched_entity *se = h_task(h, k, MQS_CLASS_NORMAL, 0);
        se->last_worker = last[k];
        h_set_now(h, h->now + gap[k]);
        h_enqueue(h, 0, se, MQS_ENQ_NEW);
    }
}

/* A task that last ran on worker 1 wins there over an earlier one that
 * ran on worker 0, within locality_ns (100 us), not beyond. */
TEST(bfs_locality_window)
{
    struct harness h;
    locality_three(&h, 50 * US, 150 * US);
    CHECK(h_pick(&h, 1) == &h.t[1]->se); /* 50 us later than 0, ran here */
    CHECK(h_pick(&h, 1) == &h.t[0]->se); /* 2 is 200 us later than 0 */
    CHECK(h_pick(&h, 1) == &h.t[2]->se);
}

/* The earlier task is passed over only once. */
TEST(bfs_locality_passes_over_once)
{
    struct harness h;
    locality_three(&h, 10 * US, 10 * US);
    CHECK(h_pick(&h, 1) == &h.t[1]->se);
    CHECK(h_pick(&h, 1) == &h.t[0]->se); /* 2 is local and near, 0 waited */
    CHECK(h_pick(&h, 1) == &h.t[2]->se);
}

/* A sleeper keeps its deadline and runs before the task that yielded
 * meanwhile (each yield starts a new deadline). */
TEST(bfs_sleeper_keeps_deadline)
{
    struct harness h;
    h_init(&h, BFS_SPEC, 1);
    struct mqs_sched_entity *a = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *b = h_task(&h, 1, MQS_CLASS_NORMAL, 0);
    h_enqueue(&h, 0, a, MQS_ENQ_NEW);
    h_enqueue(&h, 0, b, MQS_ENQ_NEW);
    CHECK(h_pick(&h, 0) == a);
    h_stop(&h, 0, a, MS, false); /* blocks, 5 ms of its slice left */
    uint64_t dl = a->key;
    for (int i = 0; i < 10; i++) {
        CHECK(h_pick(&h, 0) == b);
        h_stop(&h, 0, b, 100 * US, true);
    }
    h_enqueue(&h, 0, a, MQS_ENQ_WAKEUP);
    CHECK_EQ(a->key, dl);
    CHECK_EQ(a->slice_ns, 5 * MS);
    CHECK(h.pol->wake_preempt(h_rq(&h, 0), b, a));
    CHECK(!h.pol->wake_preempt(h_rq(&h, 0), a, b));
    CHECK(h_pick(&h, 0) == a);
}

/* A spent slice starts a new one with a new deadline. */
TEST(bfs_spent_slice_renews_deadline)
{
    struct harness h;
    h_init(&h, BFS_SPEC, 1);
    struct mqs_sched_entity *a = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    h_enqueue(&h, 0, a, MQS_ENQ_NEW);
    CHECK(h_pick(&h, 0) == a);
    h_stop(&h, 0, a, 6 * MS, false);
    CHECK_EQ(a->key - h.now, offset(0));
    CHECK_EQ(a->slice_ns, 6 * MS);
}

/* Realtime first (most urgent allowed here), then normal, then idle;
 * the FIFO task (0) is pinned to worker 0. */
TEST(bfs_class_order_and_affinity)
{
    static const mqs_class_t cls[] = {MQS_CLASS_IDLE, MQS_CLASS_NORMAL,
                                      MQS_CLASS_RR, MQS_CLASS_FIFO};
    static const int prio[] = {0, -20, 10, 90}, on[] = {1, 1, 0, 1, 0};
    static const int order[] = {2, 1, 3, 0, -1};
    struct harness h;
    h_init(&h, BFS_SPEC, 2);
    h_check_order(&h, cls, prio, 4, 3, on, order, 5);
}
