/*
 * test_policy_global.c - the 2.4 stock scheduler's own rules, through its
 * ops (tests/policy_harness.h): goodness order, the yield rule, the
 * recalculation (only when every runnable counter is spent, and for
 * every task, sleepers included), the affinity bonus, and the per-worker
 * published counts of the one shared queue.
 */
#include "check.h"
#include "internal.h"
#include "policy_harness_ph.h"

/* se->p[] words of global.c */
enum { COUNTER = 0, EPOCH = 2 };

#define MS 1000000ull

static struct ph h;
static struct mqs_task t[8];

/* n nice-0 tasks a, b, c... queued as new on worker 0, 1 ms ticks. */
static void setup(int workers, int n, const char *spec)
{
    ph_init(&h, spec ? spec : "global:tick_ns=1000000", workers);
    for (int i = 0; i < n; i++) {
        char name[2] = {(char)('a' + i), 0};
        ph_task(&t[i], MQS_CLASS_NORMAL, 0, name);
        ph_enqueue(&h, 0, &t[i], MQS_ENQ_NEW);
    }
}

TEST(new_tasks_get_nice_to_ticks)
{
    setup(1, 1, NULL);
    ph_task(&t[1], MQS_CLASS_NORMAL, -20, "x");
    ph_task(&t[2], MQS_CLASS_NORMAL, 19, "y");
    ph_enqueue(&h, 0, &t[1], MQS_ENQ_NEW);
    ph_enqueue(&h, 0, &t[2], MQS_ENQ_NEW);
    CHECK_EQ(t[0].se.p[COUNTER], 6);  /* (20 - 0) / 4 + 1 */
    CHECK_EQ(t[1].se.p[COUNTER], 11); /* (20 + 20) / 4 + 1 */
    CHECK_EQ(t[2].se.p[COUNTER], 1);  /* (20 - 19) / 4 + 1 */
    ph_destroy(&h);
}

TEST(recalculation_only_when_every_counter_is_spent)
{
    setup(1, 3, NULL);
    struct mqs_task *a = ph_pick(&h, 0);
    CHECK(a == &t[0]); /* equal goodness: the first in the list */
    ph_stop(&h, 0, a, 6 * MS); /* spends all 6 ticks */
    CHECK_EQ(a->se.p[COUNTER], 0);
    ph_enqueue(&h, 0, a, MQS_ENQ_PREEMPTED);
    struct mqs_task *b = ph_pick(&h, 0);
    CHECK(b == &t[1]); /* a is spent: no recalculation while b, c have some */
    CHECK_EQ(a->se.p[COUNTER], 0);
    ph_stop(&h, 0, b, 6 * MS);
    ph_enqueue(&h, 0, b, MQS_ENQ_PREEMPTED);
    struct mqs_task *c = ph_pick(&h, 0);
    CHECK(c == &t[2]);
    ph_stop(&h, 0, c, 2 * MS + MS / 2); /* 2.5 ticks: 2 charged */
    CHECK_EQ(c->se.p[COUNTER], 4);
    ph_enqueue(&h, 0, c, MQS_ENQ_PREEMPTED);
    CHECK(ph_pick(&h, 0) == c); /* still the only one with counter */
    CHECK_EQ(a->se.p[EPOCH] + b->se.p[EPOCH] + c->se.p[EPOCH], 0);
    ph_stop(&h, 0, c, 4 * MS);
    CHECK_EQ(c->se.p[COUNTER], 0);
    ph_enqueue(&h, 0, c, MQS_ENQ_PREEMPTED);
    /* all spent: this pick recalculates for all three, then picks */
    CHECK(ph_pick(&h, 0) != NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(t[i].se.p[EPOCH], 1);
        CHECK_EQ(t[i].se.p[COUNTER], 6); /* 0 / 2 + 6 */
    }
    ph_destroy(&h);
}

TEST(recalculation_reaches_sleeping_tasks)
{
    setup(1, 2, NULL);
    struct mqs_task *a = ph_pick(&h, 0);
    ph_stop(&h, 0, a, 1 * MS); /* a blocks with 5 ticks left */
    CHECK_EQ(a->se.p[COUNTER], 5);
    struct mqs_task *b = ph_pick(&h, 0);
    CHECK(b == &t[1]);
    ph_stop(&h, 0, b, 6 * MS);
    ph_enqueue(&h, 0, b, MQS_ENQ_PREEMPTED);
    CHECK(ph_pick(&h, 0) == b); /* recalculated (b alone runnable) */
    CHECK_EQ(b->se.p[COUNTER], 6);
    ph_stop(&h, 0, b, 6 * MS);
    ph_enqueue(&h, 0, b, MQS_ENQ_PREEMPTED);
    CHECK(ph_pick(&h, 0) == b); /* and again: two recalculations */
    /* a wakes: both missed recalculations apply: 5 -> 8 -> 10 */
    ph_enqueue(&h, 0, a, MQS_ENQ_WAKEUP);
    CHECK_EQ(a->se.p[EPOCH], 2);
    CHECK_EQ(a->se.p[COUNTER], 10);
    ph_destroy(&h);
}

TEST(yield_runs_every_other_task_first_once)
{
    setup(1, 3, NULL);
    struct mqs_task *a = ph_pick(&h, 0);
    struct mqs_task *n = ph_yield(&h, 0, a, 1000);
    CHECK(n == &t[1]);
    n = ph_yield(&h, 0, n, 1000);
    CHECK(n == &t[2]);
    n = ph_yield(&h, 0, n, 1000);
    CHECK(n == &t[0]); /* a's yield mark lasted one pick */
    ph_destroy(&h);
}

TEST(yielder_with_counter_beats_spent_tasks)
{
    setup(1, 2, NULL);
    struct mqs_task *a = ph_pick(&h, 0);
    ph_stop(&h, 0, a, 6 * MS);
    ph_enqueue(&h, 0, a, MQS_ENQ_PREEMPTED); /* spent */
    struct mqs_task *b = ph_pick(&h, 0);
    CHECK(b == &t[1]);
    CHECK(ph_yield(&h, 0, b, 1000) == b); /* no recalculation for a */
    CHECK_EQ(a->se.p[COUNTER], 0);
    CHECK_EQ(a->se.p[EPOCH], 0);
    ph_destroy(&h);
}

TEST(class_order_rt_normal_idle)
{
    ph_init(&h, "global", 1);
    ph_task(&t[0], MQS_CLASS_IDLE, 0, "idle");
    ph_task(&t[1], MQS_CLASS_NORMAL, -20, "normal");
    ph_task(&t[2], MQS_CLASS_FIFO, 10, "fifo10");
    ph_task(&t[3], MQS_CLASS_RR, 20, "rr20");
    for (int i = 0; i < 4; i++)
        ph_enqueue(&h, 0, &t[i], MQS_ENQ_NEW);
    CHECK(ph_pick(&h, 0) == &t[3]);
    CHECK(ph_pick(&h, 0) == &t[2]);
    CHECK(ph_pick(&h, 0) == &t[1]);
    CHECK(ph_pick(&h, 0) == &t[0]);
    CHECK(ph_pick(&h, 0) == NULL);
    ph_destroy(&h);
}

TEST(affinity_bonus_keeps_tasks_on_their_worker)
{
    setup(2, 2, NULL);
    t[0].se.last_worker = 1; /* a last ran on worker 1, b on worker 0 */
    t[1].se.last_worker = 0;
    CHECK(ph_pick(&h, 0) == &t[1]);
    CHECK(ph_pick(&h, 1) == &t[0]);
    ph_destroy(&h);
    setup(2, 2, "global:affinity_bonus=0");
    t[0].se.last_worker = 1;
    t[1].se.last_worker = 0;
    CHECK(ph_pick(&h, 0) == &t[0]); /* no bonus: list order */
    ph_destroy(&h);
}

TEST(each_worker_publishes_what_it_may_run)
{
    ph_init(&h, "global", 2);
    ph_task(&t[0], MQS_CLASS_NORMAL, 0, "pinned1");
    t[0].se.any_worker = false;
    mqs_mask_zero(&t[0].se.affinity);
    mqs_mask_set(&t[0].se.affinity, 1);
    ph_enqueue(&h, 0, &t[0], MQS_ENQ_NEW);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 0)), 0);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 1)), 1);
    CHECK(ph_pick(&h, 0) == NULL); /* not allowed on worker 0 */
    ph_task(&t[1], MQS_CLASS_FIFO, 5, "any");
    ph_enqueue(&h, 1, &t[1], MQS_ENQ_NEW);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 0)), 1);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 1)), 2);
    CHECK_EQ(mqs_rq_best_prio(ph_rq(&h, 0)), 94);
    CHECK(ph_pick(&h, 0) == &t[1]); /* queued through worker 1's rq */
    CHECK(ph_pick(&h, 1) == &t[0]);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 1)), 0);
    ph_destroy(&h);
}

TEST(pick_skips_a_task_still_on_another_workers_stack)
{
    setup(2, 1, NULL);
    t[0].se.last_worker = 1;
    atomic_store(&t[0].on_cpu, 1); /* worker 1 has not switched away yet */
    CHECK(ph_pick(&h, 0) == NULL);
    CHECK(ph_pick(&h, 1) == &t[0]); /* its own worker may run it on */
    ph_destroy(&h);
}
