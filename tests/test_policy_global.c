/*
 * test_policy_global.c - the 2.4 stock scheduler's own rules, through its
 * ops (tests/policy_harness.h): goodness order, the yield rule, the
 * recalculation (only when every runnable counter is spent, and for
 * every task, sleepers included), the affinity bonus, and the per-worker
 * published counts of the one shared queue.
 */
#include "check.h"
#include "internal.h"
#include "policy_harness.h"

/* se->p[] words of global.c */
enum { COUNTER = 0, EPOCH = 2 };

#define MS 1000000ull

static struct harness h;

/* Task k of the harness. */
static struct mqs_sched_entity *task(int k)
{
    return &h.t[k]->se;
}

/* n nice-0 tasks a, b, c... queued as new on worker 0, 1 ms ticks. */
static void setup(int workers, int n, const char *spec)
{
    h_init(&h, spec ? spec : "global:tick_ns=1000000", workers);
    for (int i = 0; i < n; i++) {
        h_task(&h, i, MQS_CLASS_NORMAL, 0);
        h_enqueue(&h, 0, task(i), MQS_ENQ_NEW);
    }
}

TEST(new_tasks_get_nice_to_ticks)
{
    setup(1, 1, NULL);
    h_task(&h, 1, MQS_CLASS_NORMAL, -20);
    h_task(&h, 2, MQS_CLASS_NORMAL, 19);
    h_enqueue(&h, 0, task(1), MQS_ENQ_NEW);
    h_enqueue(&h, 0, task(2), MQS_ENQ_NEW);
    CHECK_EQ(task(0)->p[COUNTER], 6);  /* (20 - 0) / 4 + 1 */
    CHECK_EQ(task(1)->p[COUNTER], 11); /* (20 + 20) / 4 + 1 */
    CHECK_EQ(task(2)->p[COUNTER], 1);  /* (20 - 19) / 4 + 1 */
    h_destroy(&h);
}

TEST(recalculation_only_when_every_counter_is_spent)
{
    setup(1, 3, NULL);
    struct mqs_sched_entity *a = h_pick(&h, 0);
    CHECK(a == task(0));             /* equal goodness: the first in the list */
    h_stop(&h, 0, a, 6 * MS, false); /* spends all 6 ticks */
    CHECK_EQ(a->p[COUNTER], 0);
    h_enqueue(&h, 0, a, MQS_ENQ_PREEMPTED);
    struct mqs_sched_entity *b = h_pick(&h, 0);
    CHECK(b == task(1)); /* a is spent: no recalculation while b, c have some */
    CHECK_EQ(a->p[COUNTER], 0);
    h_stop(&h, 0, b, 6 * MS, false);
    h_enqueue(&h, 0, b, MQS_ENQ_PREEMPTED);
    struct mqs_sched_entity *c = h_pick(&h, 0);
    CHECK(c == task(2));
    h_stop(&h, 0, c, 2 * MS + MS / 2, false); /* 2.5 ticks: 2 charged */
    CHECK_EQ(c->p[COUNTER], 4);
    h_enqueue(&h, 0, c, MQS_ENQ_PREEMPTED);
    CHECK(h_pick(&h, 0) == c); /* still the only one with counter */
    CHECK_EQ(a->p[EPOCH] + b->p[EPOCH] + c->p[EPOCH], 0);
    h_stop(&h, 0, c, 4 * MS, false);
    CHECK_EQ(c->p[COUNTER], 0);
    h_enqueue(&h, 0, c, MQS_ENQ_PREEMPTED);
    /* all spent: this pick recalculates for all three, then picks */
    CHECK(h_pick(&h, 0) != NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(task(i)->p[EPOCH], 1);
        CHECK_EQ(task(i)->p[COUNTER], 6); /* 0 / 2 + 6 */
    }
    h_destroy(&h);
}

TEST(recalculation_reaches_sleeping_tasks)
{
    setup(1, 2, NULL);
    struct mqs_sched_entity *a = h_pick(&h, 0);
    h_stop(&h, 0, a, 1 * MS, false); /* a blocks with 5 ticks left */
    CHECK_EQ(a->p[COUNTER], 5);
    struct mqs_sched_entity *b = h_pick(&h, 0);
    CHECK(b == task(1));
    h_stop(&h, 0, b, 6 * MS, false);
    h_enqueue(&h, 0, b, MQS_ENQ_PREEMPTED);
    CHECK(h_pick(&h, 0) == b); /* recalculated (b alone runnable) */
    CHECK_EQ(b->p[COUNTER], 6);
    h_stop(&h, 0, b, 6 * MS, false);
    h_enqueue(&h, 0, b, MQS_ENQ_PREEMPTED);
    CHECK(h_pick(&h, 0) == b); /* and again: two recalculations */
    /* a wakes: both missed recalculations apply: 5 -> 8 -> 10 */
    h_enqueue(&h, 0, a, MQS_ENQ_WAKEUP);
    CHECK_EQ(a->p[EPOCH], 2);
    CHECK_EQ(a->p[COUNTER], 10);
    h_destroy(&h);
}

TEST(yield_runs_every_other_task_first_once)
{
    setup(1, 3, NULL);
    struct mqs_sched_entity *a = h_pick(&h, 0);
    struct mqs_sched_entity *n = h_yield(&h, 0, a, 1000);
    CHECK(n == task(1));
    n = h_yield(&h, 0, n, 1000);
    CHECK(n == task(2));
    n = h_yield(&h, 0, n, 1000);
    CHECK(n == task(0)); /* a's yield mark lasted one pick */
    h_destroy(&h);
}

TEST(yielder_with_counter_beats_spent_tasks)
{
    setup(1, 2, NULL);
    struct mqs_sched_entity *a = h_pick(&h, 0);
    h_stop(&h, 0, a, 6 * MS, false);
    h_enqueue(&h, 0, a, MQS_ENQ_PREEMPTED); /* spent */
    struct mqs_sched_entity *b = h_pick(&h, 0);
    CHECK(b == task(1));
    CHECK(h_yield(&h, 0, b, 1000) == b); /* no recalculation for a */
    CHECK_EQ(a->p[COUNTER], 0);
    CHECK_EQ(a->p[EPOCH], 0);
    h_destroy(&h);
}

TEST(class_order_rt_normal_idle)
{
    static const mqs_class_t cls[] = {MQS_CLASS_IDLE, MQS_CLASS_NORMAL,
                                      MQS_CLASS_FIFO, MQS_CLASS_RR};
    static const int prio[] = {0, -20, 10, 20}, on[] = {0, 0, 0, 0, 0};
    static const int order[] = {3, 2, 1, 0, -1};
    h_init(&h, "global", 1);
    h_check_order(&h, cls, prio, 4, -1, on, order, 5);
    h_destroy(&h);
}

TEST(affinity_bonus_keeps_tasks_on_their_worker)
{
    setup(2, 2, NULL);
    task(0)->last_worker = 1; /* a last ran on worker 1, b on worker 0 */
    task(1)->last_worker = 0;
    CHECK(h_pick(&h, 0) == task(1));
    CHECK(h_pick(&h, 1) == task(0));
    h_destroy(&h);
    setup(2, 2, "global:affinity_bonus=0");
    task(0)->last_worker = 1;
    task(1)->last_worker = 0;
    CHECK(h_pick(&h, 0) == task(0)); /* no bonus: list order */
    h_destroy(&h);
}

TEST(each_worker_publishes_what_it_may_run)
{
    h_init(&h, "global", 2);
    h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    h_pin(task(0), 1);
    h_enqueue(&h, 0, task(0), MQS_ENQ_NEW);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 0)), 0);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 1);
    CHECK(h_pick(&h, 0) == NULL); /* not allowed on worker 0 */
    h_task(&h, 1, MQS_CLASS_FIFO, 5);
    h_enqueue(&h, 1, task(1), MQS_ENQ_NEW);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 0)), 1);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 2);
    CHECK_EQ(mqs_rq_best_prio(h_rq(&h, 0)), 94);
    CHECK(h_pick(&h, 0) == task(1)); /* queued through worker 1's rq */
    CHECK(h_pick(&h, 1) == task(0));
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 0);
    h_destroy(&h);
}

TEST(pick_skips_a_task_still_on_another_workers_stack)
{
    setup(2, 1, NULL);
    task(0)->last_worker = 1;
    atomic_store(&h.t[0]->on_cpu, 1); /* worker 1 has not switched away yet */
    CHECK(h_pick(&h, 0) == NULL);
    CHECK(h_pick(&h, 1) == task(0)); /* its own worker may run it on */
    h_destroy(&h);
}
