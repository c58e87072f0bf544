/*
 * test_policy_cfs.c - cfs's design on exact queue states (the policy's
 * ops driven with a virtual clock, tests/policy_harness.h): the leftmost
 * virtual runtime runs; weights give CPU in their ratio; sleeper credit
 * is bounded by half the latency target, however long the sleep; a
 * woken task preempts only past the wake-up granularity; a task woken
 * onto another worker keeps its distance to min_vruntime; slices follow
 * the latency target and the minimum granularity; the periodic balancer
 * moves load, but not cache-hot tasks, while an idle worker takes one.
 */
#include "check.h"
#include "policy_harness.h"
#include "../src/fair.h"

#define MS 1000000ull
#define CFS_SPEC "cfs:steal_check_ns=0"

TEST(cfs_runs_least_vruntime_first)
{
    struct harness h;
    struct mqs_sched_entity *a, *b;
    h_pair(&h, CFS_SPEC, 1, &a, &b);
    /* equal keys leave in arrival order */
    CHECK(h_pick(&h, 0) == a);
    h_stop(&h, 0, a, 3 * MS, true);
    CHECK(h_pick(&h, 0) == b); /* a is 3 ms ahead now */
    h_stop(&h, 0, b, 1 * MS, true);
    CHECK(h_pick(&h, 0) == b); /* b still 2 ms behind */
    h_stop(&h, 0, b, 3 * MS, true);
    CHECK(h_pick(&h, 0) == a);
    CHECK_EQ(b->key - a->key, MS);
}

TEST(cfs_weights_give_cpu_in_their_ratio)
{
    h_check_weights(CFS_SPEC);
}

/* Slices: a share of latency (20 ms on one worker) by weight; past
 * latency / min_gran = 8 tasks the period is nr x min_gran. */
TEST(cfs_slices_follow_latency_and_min_granularity)
{
    struct harness h;
    h_init(&h, CFS_SPEC, 1);
    h_enqueue_new(&h, 0, 0, 4);
    struct mqs_sched_entity *se = h_pick(&h, 0);
    CHECK_EQ(se->slice_ns, 5 * MS);
    h_stop(&h, 0, se, 5 * MS, true);
    h_enqueue_new(&h, 0, 4, 16);
    se = h_pick(&h, 0);
    CHECK_EQ(se->slice_ns, 2500000); /* 16 x 2.5 ms / 16 */
}

/* A task that slept 10 s comes back at min_vruntime - latency/2, not 10 s
 * behind: it runs latency/2 ahead of the hog, then they alternate. */
TEST(cfs_sleeper_credit_bounded)
{
    struct harness h;
    struct mqs_sched_entity *hog, *sl;
    h_pair(&h, CFS_SPEC, 1, &hog, &sl);
    CHECK(h_pick(&h, 0) == hog);
    h_stop(&h, 0, hog, 1 * MS, true);
    CHECK(h_pick(&h, 0) == sl);
    h_stop(&h, 0, sl, 1 * MS, false); /* blocks */
    uint64_t run[1] = {0};
    h_share(&h, 0, 10000 * MS, 100 * MS, run, 1);
    CHECK_GE(run[0], 10000 * MS);
    /* hog is queued: its key is min_vruntime */
    h_enqueue(&h, 0, sl, MQS_ENQ_WAKEUP);
    CHECK_EQ(hog->key - sl->key, 10 * MS);
    /* the sleeper runs its credit, then the hog gets the CPU back */
    uint64_t credit = 0;
    struct mqs_sched_entity *se;
    while ((se = h_pick(&h, 0)) == sl) {
        credit += (uint64_t)se->slice_ns;
        h_stop(&h, 0, se, (uint64_t)se->slice_ns, true);
        CHECK_LE(credit, 30 * MS);
    }
    fprintf(stderr, "  sleeper ran %.1f ms before the hog\n", credit / 1e6);
    CHECK_GE(credit, 10 * MS);
    CHECK_LE(credit, 20 * MS);
}

/* A short sleeper is placed at its own virtual runtime (no credit
 * beyond what it is owed). */
TEST(cfs_short_sleep_keeps_vruntime)
{
    struct harness h;
    struct mqs_sched_entity *a, *b;
    h_pair(&h, CFS_SPEC, 1, &a, &b);
    CHECK(h_pick(&h, 0) == a);
    h_stop(&h, 0, a, 4 * MS, false); /* a blocks 4 ms ahead */
    CHECK(h_pick(&h, 0) == b);
    h_stop(&h, 0, b, 1 * MS, true);
    uint64_t key = a->key;
    h_enqueue(&h, 0, a, MQS_ENQ_WAKEUP);
    CHECK_EQ(a->key, key);
    CHECK(h_pick(&h, 0) == b);
}

/* A task woken onto another worker keeps its distance to min_vruntime:
 * its key is rebased through its home queue's published min_vruntime,
 * which every pick keeps current, the yield's own pick too.  m blocks on
 * worker 0 3 ms ahead of where worker 0's minimum gets to through a and
 * b's yields, and is woken onto worker 1, whose one new task d sits at
 * that queue's minimum: m lands 3 ms after d (8 with the minimum as it
 * was before the yields). */
TEST(cfs_moved_task_keeps_its_distance_to_min_vruntime)
{
    struct harness h;
    h_init(&h, CFS_SPEC, 2);
    struct mqs_sched_entity *se[4]; /* a, b, m on worker 0; d on 1 */
    for (int k = 0; k < 4; k++) {
        se[k] = h_task(&h, k, MQS_CLASS_NORMAL, 0);
        h_enqueue(&h, k < 3 ? 0 : 1, se[k], MQS_ENQ_NEW);
    }
    struct mqs_sched_entity *a = se[0], *b = se[1], *m = se[2], *d = se[3];
    CHECK(h_pick(&h, 0) == a);
    h_stop(&h, 0, a, 1 * MS, true);
    CHECK(h_pick(&h, 0) == b);
    h_stop(&h, 0, b, 1 * MS, true);
    CHECK(h_pick(&h, 0) == m);
    h_stop(&h, 0, m, 8 * MS, false); /* blocks at +8 ms */
    CHECK(h_pick(&h, 0) == a);
    /* a and b take turns through the yield op: minimum +1, +3, +3, +5 */
    CHECK(h_yield(&h, 0, a, 2 * MS) == b);
    CHECK(h_yield(&h, 0, b, 2 * MS) == a);
    CHECK(h_yield(&h, 0, a, 2 * MS) == b);
    CHECK(h_yield(&h, 0, b, 2 * MS) == a);
    CHECK_EQ(a->key, b->key);
    CHECK_EQ(m->key - a->key, 3 * MS);
    h_enqueue(&h, 1, m, MQS_ENQ_WAKEUP);
    CHECK_EQ(m->key - d->key, 3 * MS);
    CHECK(h_pick(&h, 1) == d);
}

/* wake_preempt: only when the running task is ahead of the woken one by
 * more than wakeup_gran (1 ms on one worker). */
TEST(cfs_wakeup_preemption_granularity)
{
    struct harness h;
    h_init(&h, CFS_SPEC, 1);
    struct mqs_sched_entity *a = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *b = h_task(&h, 1, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *r = h_task(&h, 2, MQS_CLASS_FIFO, 10);
    h_enqueue(&h, 0, a, MQS_ENQ_NEW);
    h_enqueue(&h, 0, b, MQS_ENQ_NEW);
    CHECK(h_pick(&h, 0) == a);
    h_stop(&h, 0, a, 2 * MS, true);
    /* the yielder waits on the run beside the tree (src/fair_run.h), so
     * the running task below comes from the run: the decision reads only
     * its exact virtual runtime, not the run's looser order */
    CHECK_EQ(mqs__fair(h_rq(&h, 0))->run_n, 1u);
    CHECK(h_pick(&h, 0) == b);
    h_stop(&h, 0, b, 2 * MS, false); /* b blocks level with a */
    CHECK(h_pick(&h, 0) == a);
    CHECK_EQ(mqs__fair(h_rq(&h, 0))->run_n, 0u);
    h_enqueue(&h, 0, b, MQS_ENQ_WAKEUP);
    struct mqs_rq *rq = h_rq(&h, 0);
    h_set_now(&h, h.now + MS / 2);
    CHECK(!h.pol->wake_preempt(rq, a, b));
    h_set_now(&h, h.now + MS);
    CHECK(h.pol->wake_preempt(rq, a, b));
    CHECK(h.pol->wake_preempt(rq, a, r));  /* realtime: always */
    CHECK(!h.pol->wake_preempt(rq, r, a));
}

/* Realtime before normal before idle, on one queue. */
TEST(cfs_class_order)
{
    static const mqs_class_t cls[] = {MQS_CLASS_IDLE, MQS_CLASS_NORMAL,
                                      MQS_CLASS_RR, MQS_CLASS_FIFO};
    static const int prio[] = {0, -20, 5, 50}, on[] = {0, 0, 0, 0, 0};
    static const int order[] = {3, 2, 1, 0, -1};
    struct harness h;
    h_init(&h, CFS_SPEC, 1);
    h_check_order(&h, cls, prio, 4, -1, on, order, 5);
}

/* Two workers, four new tasks (full load each) on worker 0. */
static void balance_four(struct harness *h, const char *spec)
{
    h_init(h, spec, 2);
    for (int k = 0; k < 4; k++)
        h_enqueue(h, 0, h_task(h, k, MQS_CLASS_NORMAL, 0), MQS_ENQ_NEW);
}

/* The same, each task having run 1 us and yielded (cache-hot now). */
static void balance_four_ran(struct harness *h, const char *spec)
{
    balance_four(h, spec);
    for (int k = 0; k < 4; k++)
        h_stop(h, 0, h_pick(h, 0), 1000, true);
}

/* Worker 0 holds 4 tasks, worker 1 none: the periodic balancer on 1
 * takes half the load, 2 tasks, and then nothing more. */
TEST(cfs_balance_moves_half_the_load)
{
    struct harness h;
    balance_four(&h, CFS_SPEC);
    h_set_now(&h, h.now + 100 * MS);
    CHECK_EQ(h.pol->balance(h_rq(&h, 1), MQS_BALANCE_PERIODIC), 2);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 0)), 2);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 2);
    /* balanced now: nothing more moves */
    h_set_now(&h, h.now + 100 * MS);
    CHECK_EQ(h.pol->balance(h_rq(&h, 1), MQS_BALANCE_PERIODIC), 0);
}

/* Tasks that ran within migration_cost_ns (here 5 ms; they ran 2 ms
 * ago) stay where they are under the periodic balancer; an idle worker
 * takes one anyway; once cold they move. */
TEST(cfs_balance_leaves_cache_hot_tasks)
{
    struct harness h;
    balance_four_ran(&h, CFS_SPEC ",migration_cost_ns=5000000");
    h_set_now(&h, h.now + 2 * MS);
    CHECK_EQ(h.pol->balance(h_rq(&h, 1), MQS_BALANCE_PERIODIC), 0);
    CHECK_EQ(h.pol->balance(h_rq(&h, 1), MQS_BALANCE_IDLE), 1);
    h_set_now(&h, h.now + 10 * MS); /* cold now */
    CHECK_EQ(h.pol->balance(h_rq(&h, 1), MQS_BALANCE_PERIODIC), 1);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 2);
}

/* Hot tasks stay only so long: once MQS__FAIR_HOT_TRIES periodic passes
 * in a row found the imbalance and moved nothing, the next one moves
 * tasks that are still hot (a yield loop's tasks always are). */
TEST(cfs_balance_moves_hot_tasks_after_failed_passes)
{
    struct harness h;
    balance_four_ran(&h, CFS_SPEC ",migration_cost_ns=1000000000");
    int moved = 0, passes = 0;
    for (; passes < 10 && moved == 0; passes++) {
        h_set_now(&h, h.now + 5 * MS); /* past balance_ns, still hot */
        moved = h.pol->balance(h_rq(&h, 1), MQS_BALANCE_PERIODIC);
    }
    CHECK_EQ(passes, MQS__FAIR_HOT_TRIES + 1);
    CHECK_EQ(moved, 2);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 2);
}
