/*
 * test_policy_ule.c - ULE's own rules, through its ops
 * (tests/policy_harness.h): the interactivity score from known sleep and
 * run histories and its cap, interactive tasks on the current queue and
 * batch tasks on the next one (swapped when current empties), class
 * order, yield with slice left, idle stealing of one task from the most
 * loaded queue and the most-to-least loaded balancer.
 */
#include "check.h"
#include "internal.h"
#include "policy_harness.h"

/* se->p[] words of ule.c (its level is se->level) */
enum { WHERE = 0, RUN = 2, SLP = 4 };

#define SEC 1000000000ull

static struct harness h;

/* Task k of the harness. */
static struct mqs_sched_entity *task(int k)
{
    return &h.t[k]->se;
}

/* A new nice-n task with the given history, queued on worker w. */
static struct mqs_sched_entity *hist(int i, int w, int nice, uint64_t run,
                                     uint64_t slp)
{
    h_task(&h, i, MQS_CLASS_NORMAL, nice);
    task(i)->p[RUN] = run;
    task(i)->p[SLP] = slp;
    h_enqueue(&h, w, task(i), MQS_ENQ_NEW);
    return task(i);
}

TEST(score_and_level_from_known_histories)
{
    h_init(&h, "ule", 1);
    /* only slept: score 0, interactive, level 100 */
    CHECK_EQ(hist(0, 0, 0, 0, SEC)->level, 100);
    /* run 1 s, slept 4 s: 1e9 / (4e9 / 50) = 12 -> 100 + 20 * 12 / 30 */
    CHECK_EQ(hist(1, 0, 0, SEC, 4 * SEC)->level, 108);
    /* the same history at nice 19: 12 + 19 = 31 >= 30, batch */
    CHECK_EQ(hist(2, 0, 19, SEC, 4 * SEC)->level, 139);
    /* run 4 s, slept 1 s: 100 - 12 = 88, batch at 120 + 20 / 2 */
    CHECK_EQ(hist(3, 0, 0, 4 * SEC, SEC)->level, 130);
    /* equal: 50, batch */
    CHECK_EQ(hist(4, 0, 0, SEC, SEC)->level, 130);
    /* interactive ones on current, batch ones on next */
    CHECK_EQ(task(0)->p[WHERE], task(1)->p[WHERE]);
    CHECK(task(2)->p[WHERE] != task(1)->p[WHERE]);
    CHECK_EQ(task(2)->p[WHERE], task(3)->p[WHERE]);
    h_destroy(&h);
}

TEST(threshold_is_a_tunable)
{
    h_init(&h, "ule:interact=10", 1);
    /* score 12 is no longer interactive */
    CHECK_EQ(hist(0, 0, 0, SEC, 4 * SEC)->level, 130);
    h_destroy(&h);
}

TEST(history_is_capped_keeping_the_ratio)
{
    h_init(&h, "ule", 1);
    struct mqs_sched_entity *a =
        hist(0, 0, 0, 4 * SEC, 2 * SEC); /* 6 s: x 4/5 */
    CHECK_EQ(a->p[RUN], 3200000000ull);
    CHECK_EQ(a->p[SLP], 1600000000ull);
    struct mqs_sched_entity *b =
        hist(1, 0, 0, 9 * SEC, 2 * SEC); /* > 2 x cap */
    CHECK_EQ(b->p[RUN], 5 * SEC);
    CHECK_EQ(b->p[SLP], 1);
    struct mqs_sched_entity *c = hist(2, 0, 0, SEC, 2 * SEC); /* under: kept */
    CHECK_EQ(c->p[RUN], SEC);
    h_destroy(&h);
}

TEST(current_runs_before_next_then_they_swap)
{
    h_init(&h, "ule", 1);
    struct mqs_sched_entity *batch =
        hist(0, 0, -20, 4 * SEC, SEC);                      /* level 120 */
    struct mqs_sched_entity *inter = hist(1, 0, 0, 0, SEC); /* level 100 */
    struct mqs_sched_entity *inter2 =
        hist(2, 0, 0, SEC, 4 * SEC); /* level 108 */
    CHECK(h_pick(&h, 0) == inter);
    CHECK(h_pick(&h, 0) == inter2);
    CHECK(h_pick(&h, 0) == batch); /* current empty: next swapped in */
    /* an interactive task woken now goes on the new current queue */
    struct mqs_sched_entity *late = hist(3, 0, 0, 0, SEC);
    CHECK_EQ(late->p[WHERE], batch->p[WHERE]);
    h_destroy(&h);
}

TEST(class_order_rt_timeshare_idle)
{
    h_init(&h, "ule", 1);
    h_task(&h, 0, MQS_CLASS_IDLE, 0);
    h_task(&h, 1, MQS_CLASS_RR, 3);
    h_task(&h, 2, MQS_CLASS_FIFO, 50);
    h_enqueue(&h, 0, task(0), MQS_ENQ_NEW);
    hist(3, 0, 0, 4 * SEC, SEC); /* batch, on next */
    h_enqueue(&h, 0, task(1), MQS_ENQ_NEW);
    h_enqueue(&h, 0, task(2), MQS_ENQ_NEW);
    CHECK(h_pick(&h, 0) == task(2));
    CHECK(h_pick(&h, 0) == task(1));
    CHECK(h_pick(&h, 0) == task(3));
    CHECK(h_pick(&h, 0) == task(0));
    CHECK(h_pick(&h, 0) == NULL);
    h_destroy(&h);
}

TEST(yield_with_slice_left_stays_on_current)
{
    h_init(&h, "ule", 1);
    struct mqs_sched_entity *a = hist(0, 0, 0, 4 * SEC, SEC);
    struct mqs_sched_entity *b = hist(1, 0, 0, 4 * SEC, SEC);
    struct mqs_sched_entity *c =
        hist(2, 0, 5, 4 * SEC, SEC); /* batch, level 132 */
    CHECK(h_pick(&h, 0) == a);
    unsigned curr = (unsigned)a->p[WHERE]; /* next became current */
    CHECK(h_yield(&h, 0, a, 1000) == b);
    CHECK(h_yield(&h, 0, b, 1000) == a); /* c's level is less urgent */
    CHECK_EQ(b->p[WHERE], curr);
    /* a spends its slice: re-scored, batch, to the next queue */
    h_stop(&h, 0, a, (uint64_t)a->slice_ns, false);
    h_enqueue(&h, 0, a, MQS_ENQ_PREEMPTED);
    CHECK(a->p[WHERE] != curr);
    CHECK(h_pick(&h, 0) == b);
    CHECK(h_pick(&h, 0) == c);
    CHECK(h_pick(&h, 0) == a); /* after the swap */
    h_destroy(&h);
}

TEST(idle_worker_steals_one_from_the_most_loaded)
{
    h_init(&h, "ule", 3);
    for (int i = 0; i < 3; i++)
        hist(i, 1, 0, 4 * SEC, SEC);
    hist(3, 2, 0, 4 * SEC, SEC);
    CHECK_EQ(h.pol->balance(h_rq(&h, 0), MQS_BALANCE_IDLE), 1);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 0)), 1);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 2);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 2)), 1);
    h_destroy(&h);
}

TEST(balancer_moves_from_most_to_least_loaded)
{
    h_init(&h, "ule", 3);
    for (int i = 0; i < 6; i++)
        hist(i, 1, 0, 4 * SEC, SEC);
    hist(6, 2, 0, 4 * SEC, SEC);
    h_set_now(&h, h.now + 1);
    /* worker 2 is not the least loaded: it does nothing */
    CHECK_EQ(h.pol->balance(h_rq(&h, 2), MQS_BALANCE_PERIODIC), 0);
    CHECK_EQ(h.pol->balance(h_rq(&h, 0), MQS_BALANCE_PERIODIC), 3);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 0)), 3);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 3);
    /* and waits balance_ns before the next pass: worker 2 is the least
     * loaded now, but its pass above started its wait */
    CHECK_EQ(h.pol->balance(h_rq(&h, 2), MQS_BALANCE_PERIODIC), 0);
    h_set_now(&h, h.now + 10 * SEC); /* past the largest balance_ns */
    CHECK_EQ(h.pol->balance(h_rq(&h, 2), MQS_BALANCE_PERIODIC), 1);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 2)), 2);
    h_destroy(&h);
}
