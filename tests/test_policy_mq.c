/*
 * test_policy_mq.c - mq's ops on the policy harness (virtual clock):
 * balancing keeps the O(1) round intact, so a task taken out of an
 * expired array waits for the next round on its new worker too.
 */
#include "check.h"
#include "internal.h"
#include "policy_harness.h"

#define US 1000ull

/* A task pulled out of an expired array has had its turn this round: it
 * waits behind the tasks that have not, on its new worker too (it used
 * to get a fresh slice in the active array and run twice in the round). */
TEST(a_task_moved_from_an_expired_array_stays_expired)
{
    struct harness h;
    h_init(&h, "mq:slice_ns=10000", 2);
    struct mqs_sched_entity *a = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *b = h_task(&h, 1, MQS_CLASS_NORMAL, 0);
    h_enqueue(&h, 1, a, MQS_ENQ_NEW);
    h_enqueue(&h, 1, b, MQS_ENQ_NEW);
    for (int i = 0; i < 2; i++) { /* both spend their slice: expired */
        struct mqs_sched_entity *se = h_pick(&h, 1);
        CHECK(se != NULL);
        h_stop(&h, 1, se, 20 * US, true);
        atomic_store(&h_of(se)->on_cpu, 0);
    }
    h_set_now(&h, h.now + 10000 * US);
    CHECK_EQ(h.pol->balance(h_rq(&h, 0), MQS_BALANCE_PERIODIC), 1);
    struct mqs_sched_entity *moved =
        atomic_load(&h_of(a)->queued_on) == 0 ? a : b;
    CHECK_EQ(atomic_load(&h_of(moved)->queued_on), 0);
    struct mqs_sched_entity *fresh = h_task(&h, 2, MQS_CLASS_NORMAL, 0);
    h_enqueue(&h, 0, fresh, MQS_ENQ_NEW);
    CHECK(h_pick(&h, 0) == fresh);
    CHECK(h_pick(&h, 0) == moved);
    h_destroy(&h);
}

/* An empty worker's pick that takes a remote task is an idle steal (from
 * its idle loop) or a newly-idle one (in a task's scheduling point), not
 * a priority pull: mqs-bench mixed reads them apart. */
TEST(an_empty_workers_pull_counts_as_idle_or_newly_idle)
{
    struct harness h;
    h_init(&h, "mq", 2);
    h_enqueue_new(&h, 1, 0, 3);
    h.w[0]->curr = NULL; /* the idle loop */
    CHECK(h_pick(&h, 0) != NULL);
    CHECK_EQ(atomic_load(&h.w[0]->stats.pulls_idle), 1);
    h.w[0]->curr = h.t[0]; /* a task's scheduling point (it blocked) */
    CHECK(h_pick(&h, 0) != NULL);
    CHECK_EQ(atomic_load(&h.w[0]->stats.pulls_newidle), 1);
    CHECK_EQ(atomic_load(&h.w[0]->stats.pulls_priority), 0);
    h.w[0]->curr = NULL;
    h_destroy(&h);
}

/* Pure yields cost every task the same charge, even when one task's
 * yields are slower every time (cache placement: 25-29 ns against 19-21
 * at 1024 tasks): a run under MQ_PURE_YIELD (4) baselines is charged the
 * baseline.  Three tasks yield in 20 ns, one in 100 ns; the baseline
 * settles at their mean, 40 ns, and all four spend their slices alike.
 * (With the line at 2 baselines the slow one was charged its 100 ns, so
 * it spent its slice 5 times as fast and made a fifth of the yields.) */
TEST(a_slower_yielder_is_charged_like_the_others)
{
    struct harness h;
    h_init(&h, "mq:slice_ns=1000000000", 1);
    struct mqs_sched_entity *se[4];
    for (int k = 0; k < 4; k++) {
        se[k] = h_task(&h, k, MQS_CLASS_NORMAL, 0);
        h_enqueue(&h, 0, se[k], MQS_ENQ_NEW);
    }
    struct mqs_sched_entity *cur = h_pick(&h, 0);
    for (int i = 0; i < 4000; i++) /* the baseline settles */
        cur = h_yield(&h, 0, cur, cur == se[3] ? 100 : 20);
    int64_t before[4];
    for (int k = 0; k < 4; k++)
        before[k] = se[k]->slice_ns;
    for (int i = 0; i < 4000; i++)
        cur = h_yield(&h, 0, cur, cur == se[3] ? 100 : 20);
    int64_t spent[4];
    for (int k = 0; k < 4; k++)
        spent[k] = before[k] - se[k]->slice_ns;
    CHECK(spent[0] > 0);
    for (int k = 1; k < 4; k++)
        CHECK_NEAR((double)spent[k], (double)spent[0], 0.02 * spent[0]);
    h_stop(&h, 0, cur, 20, false);
    h_destroy(&h);
}
