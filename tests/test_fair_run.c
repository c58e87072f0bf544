/*
 * test_fair_run.c - the run beside cfs's tree (src/fair.h): yielders go
 * to its back when their virtual runtime is within order_slack_ns of
 * its greatest, so a yield loop stays off the tree.  Checked on exact
 * queue states (tests/policy_harness.h): with no slack the order is
 * exact; with the default slack a task leaves at most the slack after
 * the least queued key; a yield loop ends up wholly in the run; a
 * yielder charged for a long run goes to the tree and still leaves in
 * order; the balancer takes tasks from the run; an eevdf yield loop stays
 * in the run as well.
 */
#include "check.h"
#include "helpers.h"
#include "policy_harness.h"
#include "../src/fair.h"

#define FR_TASKS 12
#define FR_SLACK 500000 /* the default order_slack_ns */
#define FR_ANY_ORDER UINT64_MAX

static struct mqs__fair_rq *fr_frame(struct harness *h, int w)
{
    return mqs_rq_state(h_rq(h, w));
}

/* The least key among se[] other than `running`. */
static uint64_t fr_least_other(struct mqs_sched_entity **se, int n,
                               const struct mqs_sched_entity *running)
{
    uint64_t least = 0;
    bool any = false;
    for (int k = 0; k < n; k++)
        if (se[k] != running &&
            (!any || mqs__fair_before(se[k]->key, least))) {
            least = se[k]->key;
            any = true;
        }
    return least;
}

/* n tasks of the given nice levels on one worker, the first running. */
static struct mqs_sched_entity *fr_start(struct harness *h, const char *spec,
                                         struct mqs_sched_entity **se, int n,
                                         uint64_t *seed)
{
    h_init(h, spec, 1);
    for (int k = 0; k < n; k++) {
        se[k] = h_task(h, k, MQS_CLASS_NORMAL,
                       seed ? (int)(rng_next(seed) % 3) * 5 - 5 : 0);
        h_enqueue(h, 0, se[k], MQS_ENQ_NEW);
    }
    return h_pick(h, 0);
}

/* Yield `steps` times with runs drawn from runs[]; every next task must
 * be within slack of the least key queued beside it (FR_ANY_ORDER: not
 * checked; eevdf orders by deadline, test_policy_eevdf checks that). */
static struct mqs_sched_entity *fr_loop(struct harness *h,
                                        struct mqs_sched_entity **se, int n,
                                        struct mqs_sched_entity *cur,
                                        const uint64_t *runs, int nruns,
                                        int steps, uint64_t slack,
                                        uint64_t *seed)
{
    for (int i = 0; i < steps; i++) {
        uint64_t ran = runs[rng_next(seed) % (uint64_t)nruns];
        cur = h_yield(h, 0, cur, ran);
        uint64_t least = fr_least_other(se, n, cur);
        if (slack != FR_ANY_ORDER &&
            mqs__fair_before(least + slack, cur->key))
            CHECK__FAIL("step %d: task %s (key %llu) ran before one at %llu "
                        "(slack %llu)",
                        i, h_of(cur)->name, (unsigned long long)cur->key,
                        (unsigned long long)least,
                        (unsigned long long)slack);
    }
    return cur;
}

TEST(no_slack_means_exact_order)
{
    static const uint64_t runs[] = {100, 150, 1000, 50000, 3000000};
    struct harness h;
    struct mqs_sched_entity *se[FR_TASKS];
    uint64_t seed = 7;
    struct mqs_sched_entity *cur =
        fr_start(&h, "cfs:order_slack_ns=0,steal_check_ns=0", se, FR_TASKS,
                 &seed);
    fr_loop(&h, se, FR_TASKS, cur, runs, 5, 20000, 0, &seed);
    h_destroy(&h);
}

/* A yield loop of equal weights under spec ends up wholly in the run
 * and stays there, in order to within slack. */
static void fr_check_stays_in_run(const char *spec, uint64_t seed,
                                  uint64_t slack)
{
    static const uint64_t runs[] = {80, 100, 120, 150, 300, 2000};
    struct harness h;
    struct mqs_sched_entity *se[FR_TASKS];
    struct mqs_sched_entity *cur = fr_start(&h, spec, se, FR_TASKS, NULL);
    cur = fr_loop(&h, se, FR_TASKS, cur, runs, 6, 3000, slack, &seed);
    struct mqs__fair_rq *f = fr_frame(&h, 0);
    /* every queued task is in the run, none in the tree */
    CHECK_EQ(f->tree.n, 0u);
    CHECK_EQ(f->run_n, (unsigned)FR_TASKS - 1);
    fr_loop(&h, se, FR_TASKS, cur, runs, 6, 20000, slack, &seed);
    CHECK_EQ(f->tree.n, 0u);
    h_destroy(&h);
}

TEST(a_yield_loop_stays_in_the_run_within_the_slack)
{
    fr_check_stays_in_run("cfs:steal_check_ns=0", 11, FR_SLACK);
}

/* eevdf too: with equal weights a yield loop's deadlines follow its
 * virtual runtimes, so both fit the run and the tree empties. */
TEST(an_eevdf_yield_loop_stays_in_the_run)
{
    fr_check_stays_in_run("eevdf:steal_check_ns=0", 17, FR_ANY_ORDER);
}

/* A yielder charged 10 ms, far past the slack, goes to the tree; it
 * waits there until the others catch up, in order, and then rejoins. */
TEST(a_long_run_goes_to_the_tree_and_waits_its_turn)
{
    static const uint64_t runs[] = {100, 120, 150};
    struct harness h;
    struct mqs_sched_entity *se[FR_TASKS];
    uint64_t seed = 13;
    struct mqs_sched_entity *cur =
        fr_start(&h, "cfs:steal_check_ns=0", se, FR_TASKS, NULL);
    cur = fr_loop(&h, se, FR_TASKS, cur, runs, 3, 500, FR_SLACK, &seed);
    struct mqs_sched_entity *hog = cur;
    cur = h_yield(&h, 0, hog, 10000000);
    struct mqs__fair_rq *f = fr_frame(&h, 0);
    CHECK_EQ(f->tree.n, 1u);
    CHECK(hog->p[MQS__FAIR_P_RUN] == 0);
    /* each of the 11 others runs ~10 ms / ~123 ns times before the hog
     * is due: ~900 000 turns */
    int ran_before = 0;
    for (int i = 0; i < 2000000 && cur != hog; i++) {
        cur = fr_loop(&h, se, FR_TASKS, cur, runs, 3, 1, FR_SLACK, &seed);
        ran_before++;
    }
    CHECK(cur == hog);
    CHECK_GT(ran_before, (FR_TASKS - 1) * (9500000 / 150));
    fr_loop(&h, se, FR_TASKS, cur, runs, 3, 100, FR_SLACK, &seed);
    CHECK_EQ(f->tree.n, 0u);
    h_destroy(&h);
}

/* Tasks that yielded into the run are found by the balancer. */
TEST(the_balancer_takes_tasks_from_the_run)
{
    struct harness h;
    h_init(&h, "cfs:steal_check_ns=0", 2);
    h_enqueue_new(&h, 0, 0, 4);
    for (int k = 0; k < 4; k++)
        h_stop(&h, 0, h_pick(&h, 0), 1000, true);
    struct mqs__fair_rq *f = fr_frame(&h, 0);
    CHECK_EQ(f->run_n, 4u);
    h_set_now(&h, h.now + 100 * 1000000ull);
    CHECK_EQ(h.pol->balance(h_rq(&h, 1), MQS_BALANCE_IDLE), 1);
    CHECK_EQ(f->run_n, 3u);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 0)), 3);
    CHECK_EQ(mqs_rq_nr_queued(h_rq(&h, 1)), 1);
    CHECK(h_pick(&h, 1) != NULL);
    h_destroy(&h);
}
