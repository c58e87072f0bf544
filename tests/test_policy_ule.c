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
#include "policy_harness_ph.h"

/* se->p[] words of ule.c */
enum { WHERE = 0, LEVEL = 1, RUN = 2, SLP = 3 };

#define SEC 1000000000ull

static struct ph h;
static struct mqs_task t[16];

/* A new nice-n task with the given history, queued on worker w. */
static struct mqs_task *hist(int i, int w, int nice, uint64_t run,
                             uint64_t slp)
{
    ph_task(&t[i], MQS_CLASS_NORMAL, nice, "t");
    t[i].se.p[RUN] = run;
    t[i].se.p[SLP] = slp;
    ph_enqueue(&h, w, &t[i], MQS_ENQ_NEW);
    return &t[i];
}

TEST(score_and_level_from_known_histories)
{
    ph_init(&h, "ule", 1);
    /* only slept: score 0, interactive, level 100 */
    CHECK_EQ(hist(0, 0, 0, 0, SEC)->se.p[LEVEL], 100);
    /* run 1 s, slept 4 s: 1e9 / (4e9 / 50) = 12 -> 100 + 20 * 12 / 30 */
    CHECK_EQ(hist(1, 0, 0, SEC, 4 * SEC)->se.p[LEVEL], 108);
    /* the same history at nice 19: 12 + 19 = 31 >= 30, batch */
    CHECK_EQ(hist(2, 0, 19, SEC, 4 * SEC)->se.p[LEVEL], 139);
    /* run 4 s, slept 1 s: 100 - 12 = 88, batch at 120 + 20 / 2 */
    CHECK_EQ(hist(3, 0, 0, 4 * SEC, SEC)->se.p[LEVEL], 130);
    /* equal: 50, batch */
    CHECK_EQ(hist(4, 0, 0, SEC, SEC)->se.p[LEVEL], 130);
    /* interactive ones on current, batch ones on next */
    CHECK_EQ(t[0].se.p[WHERE], t[1].se.p[WHERE]);
    CHECK(t[2].se.p[WHERE] != t[1].se.p[WHERE]);
    CHECK_EQ(t[2].se.p[WHERE], t[3].se.p[WHERE]);
    ph_destroy(&h);
}

TEST(threshold_is_a_tunable)
{
    ph_init(&h, "ule:interact=10", 1);
    /* score 12 is no longer interactive */
    CHECK_EQ(hist(0, 0, 0, SEC, 4 * SEC)->se.p[LEVEL], 130);
    ph_destroy(&h);
}

TEST(history_is_capped_keeping_the_ratio)
{
    ph_init(&h, "ule", 1);
    struct mqs_task *a = hist(0, 0, 0, 4 * SEC, 2 * SEC); /* 6 s: x 4/5 */
    CHECK_EQ(a->se.p[RUN], 3200000000ull);
    CHECK_EQ(a->se.p[SLP], 1600000000ull);
    struct mqs_task *b = hist(1, 0, 0, 9 * SEC, 2 * SEC); /* > 2 x cap */
    CHECK_EQ(b->se.p[RUN], 5 * SEC);
    CHECK_EQ(b->se.p[SLP], 1);
    struct mqs_task *c = hist(2, 0, 0, SEC, 2 * SEC); /* under: kept */
    CHECK_EQ(c->se.p[RUN], SEC);
    ph_destroy(&h);
}

TEST(current_runs_before_next_then_they_swap)
{
    ph_init(&h, "ule", 1);
    struct mqs_task *batch = hist(0, 0, -20, 4 * SEC, SEC); /* level 120 */
    struct mqs_task *inter = hist(1, 0, 0, 0, SEC);         /* level 100 */
    struct mqs_task *inter2 = hist(2, 0, 0, SEC, 4 * SEC);  /* level 108 */
    CHECK(ph_pick(&h, 0) == inter);
    CHECK(ph_pick(&h, 0) == inter2);
    CHECK(ph_pick(&h, 0) == batch); /* current empty: next swapped in */
    /* an interactive task woken now goes on the new current queue */
    struct mqs_task *late = hist(3, 0, 0, 0, SEC);
    CHECK_EQ(late->se.p[WHERE], batch->se.p[WHERE]);
    ph_destroy(&h);
}

TEST(class_order_rt_timeshare_idle)
{
    ph_init(&h, "ule", 1);
    ph_task(&t[0], MQS_CLASS_IDLE, 0, "idle");
    ph_task(&t[1], MQS_CLASS_RR, 3, "rr3");
    ph_task(&t[2], MQS_CLASS_FIFO, 50, "fifo50");
    ph_enqueue(&h, 0, &t[0], MQS_ENQ_NEW);
    hist(3, 0, 0, 4 * SEC, SEC); /* batch, on next */
    ph_enqueue(&h, 0, &t[1], MQS_ENQ_NEW);
    ph_enqueue(&h, 0, &t[2], MQS_ENQ_NEW);
    CHECK(ph_pick(&h, 0) == &t[2]);
    CHECK(ph_pick(&h, 0) == &t[1]);
    CHECK(ph_pick(&h, 0) == &t[3]);
    CHECK(ph_pick(&h, 0) == &t[0]);
    CHECK(ph_pick(&h, 0) == NULL);
    ph_destroy(&h);
}

TEST(yield_with_slice_left_stays_on_current)
{
    ph_init(&h, "ule", 1);
    struct mqs_task *a = hist(0, 0, 0, 4 * SEC, SEC);
    struct mqs_task *b = hist(1, 0, 0, 4 * SEC, SEC);
    struct mqs_task *c = hist(2, 0, 5, 4 * SEC, SEC); /* batch, level 132 */
    CHECK(ph_pick(&h, 0) == a);
    unsigned curr = (unsigned)a->se.p[WHERE]; /* next became current */
    CHECK(ph_yield(&h, 0, a, 1000) == b);
    CHECK(ph_yield(&h, 0, b, 1000) == a); /* c's level is less urgent */
    CHECK_EQ(b->se.p[WHERE], curr);
    /* a spends its slice: re-scored, batch, to the next queue */
    ph_stop(&h, 0, a, (uint64_t)a->se.slice_ns);
    h.pol->enqueue(ph_rq(&h, 0), &a->se, MQS_ENQ_PREEMPTED);
    CHECK(a->se.p[WHERE] != curr);
    CHECK(ph_pick(&h, 0) == b);
    CHECK(ph_pick(&h, 0) == c);
    CHECK(ph_pick(&h, 0) == a); /* after the swap */
    ph_destroy(&h);
}

TEST(idle_worker_steals_one_from_the_most_loaded)
{
    ph_init(&h, "ule", 3);
    for (int i = 0; i < 3; i++)
        hist(i, 1, 0, 4 * SEC, SEC);
    hist(3, 2, 0, 4 * SEC, SEC);
    CHECK_EQ(h.pol->balance(ph_rq(&h, 0), MQS_BALANCE_IDLE), 1);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 0)), 1);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 1)), 2);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 2)), 1);
    ph_destroy(&h);
}

TEST(balancer_moves_from_most_to_least_loaded)
{
    ph_init(&h, "ule", 3);
    for (int i = 0; i < 6; i++)
        hist(i, 1, 0, 4 * SEC, SEC);
    hist(6, 2, 0, 4 * SEC, SEC);
    for (int w = 0; w < 3; w++)
        h.w[w]->now = 1;
    /* worker 2 is not the least loaded: it does nothing */
    CHECK_EQ(h.pol->balance(ph_rq(&h, 2), MQS_BALANCE_PERIODIC), 0);
    CHECK_EQ(h.pol->balance(ph_rq(&h, 0), MQS_BALANCE_PERIODIC), 3);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 0)), 3);
    CHECK_EQ(mqs_rq_nr_queued(ph_rq(&h, 1)), 3);
    /* and waits balance_ns before the next pass */
    ph_destroy(&h);
}
