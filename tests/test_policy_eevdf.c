/*
 * test_policy_eevdf.c - eevdf's design on exact queue states (the policy's
 * ops driven with a virtual clock, tests/policy_harness.h): every pick of
 * a seeded random run is checked against a brute-force EEVDF (the
 * eligible task, v <= V over the queued tasks, with the earliest virtual
 * deadline); lag is kept across a sleep, and clamped; a yield moves the
 * deadline one slice on; weights give CPU in their ratio.
 */
#include "check.h"
#include "helpers.h"
#include "policy_harness.h"

#define MS 1000000ull
#define EEVDF_SPEC "eevdf:steal_check_ns=0"
#define NTASKS 12
#define DL(se) ((se)->p[0]) /* eevdf keeps the virtual deadline in p[0] */

/* The brute-force choice among queued[0..n): eligible (v W <= sum w v,
 * relative to the smallest v to stay in range) with the earliest
 * deadline. */
static struct mqs_sched_entity *brute_pick(struct mqs_sched_entity **q, int n)
{
    uint64_t base = q[0]->key;
    for (int i = 1; i < n; i++)
        if ((int64_t)(q[i]->key - base) < 0)
            base = q[i]->key;
    __int128 sum = 0, load = 0;
    for (int i = 0; i < n; i++) {
        sum += (__int128)(int64_t)(q[i]->key - base) * q[i]->weight;
        load += q[i]->weight;
    }
    struct mqs_sched_entity *best = NULL;
    for (int i = 0; i < n; i++) {
        bool eligible = (__int128)(int64_t)(q[i]->key - base) * load <= sum;
        if (eligible && (!best || (int64_t)(DL(q[i]) - DL(best)) < 0))
            best = q[i];
    }
    return best;
}

static void drop(struct mqs_sched_entity **q, int *n, struct mqs_sched_entity *se)
{
    for (int i = 0; i < *n; i++)
        if (q[i] == se) {
            q[i] = q[--*n];
            return;
        }
    CHECK__FAIL("picked a task that was not queued");
}

/* Random picks, stops, yields and wake-ups against a brute-force pick:
 * with no order slack the pick is exactly the eligible task with the
 * earliest deadline; with slack (yielders in the run beside the tree,
 * src/fair.h) an eligible one whose deadline is at most the slack
 * later. */
static void eevdf_check_picks(const char *spec, uint64_t slack)
{
    struct harness h;
    h_init(&h, spec, 1);
    struct mqs_sched_entity *q[NTASKS], *asleep[NTASKS];
    int nq = 0, ns = 0, checked = 0, not_leftmost = 0;
    uint64_t s = 42;
    for (int k = 0; k < NTASKS; k++) {
        q[nq] = h_task(&h, k, MQS_CLASS_NORMAL, (int)(rng_next(&s) % 16) - 5);
        h_enqueue(&h, 0, q[nq++], MQS_ENQ_NEW);
    }
    for (int step = 0; step < 5000; step++) {
        if (ns && (nq == 0 || rng_next(&s) % 4 == 0)) { /* a wake-up */
            int i = (int)(rng_next(&s) % (uint64_t)ns);
            h_enqueue(&h, 0, asleep[i], MQS_ENQ_WAKEUP);
            q[nq++] = asleep[i];
            asleep[i] = asleep[--ns];
            continue;
        }
        struct mqs_sched_entity *want = brute_pick(q, nq);
        struct mqs_sched_entity *got = h_pick(&h, 0);
        CHECK(got != NULL);
        if (got != want && slack == 0)
            CHECK_EQ(DL(got), DL(want)); /* a tie is either */
        if (got != want && slack)
            CHECK((int64_t)(DL(got) - DL(want)) <= (int64_t)slack);
        checked++;
        uint64_t min_v = q[0]->key;
        for (int i = 1; i < nq; i++)
            if ((int64_t)(q[i]->key - min_v) < 0)
                min_v = q[i]->key;
        not_leftmost += got->key != min_v;
        drop(q, &nq, got);
        uint64_t ran = 10000 + rng_next(&s) % (3 * MS);
        bool block = rng_next(&s) % 5 == 0;
        h_stop(&h, 0, got, ran, !block);
        if (block)
            asleep[ns++] = got;
        else
            q[nq++] = got;
    }
    fprintf(stderr, "  %d picks checked, %d of them not the leftmost v\n",
            checked, not_leftmost);
    CHECK_GT(checked, 3000);
    CHECK_GT(not_leftmost, 100); /* deadlines, not v alone, decided */
}

TEST(eevdf_picks_eligible_earliest_deadline)
{
    eevdf_check_picks(EEVDF_SPEC ",order_slack_ns=0", 0);
}

TEST(eevdf_picks_within_the_order_slack)
{
    eevdf_check_picks(EEVDF_SPEC, 500000);
}

/* The first task picked runs r1 and yields, the other runs r2 and
 * blocks; the first runs alone 50 ms; the other wakes.  Returns how far
 * behind the first it is placed. */
static uint64_t lag_after_sleep(struct harness *h, struct mqs_sched_entity *a,
                                struct mqs_sched_entity *b, uint64_t r1,
                                uint64_t r2)
{
    struct mqs_sched_entity *first = h_pick(h, 0);
    struct mqs_sched_entity *other = first == a ? b : a;
    h_stop(h, 0, first, r1, true);
    CHECK(h_pick(h, 0) == other);
    h_stop(h, 0, other, r2, false);
    uint64_t run[2] = {0, 0};
    h_share(h, 0, 50 * MS, MS, run, 2);
    h_enqueue(h, 0, other, MQS_ENQ_WAKEUP);
    return first->key - other->key;
}

/* B blocks owed 0.25 ms (V - v); after A ran alone for 50 ms, B comes
 * back owed 0.25 ms again in the new queue (placed 0.5 ms behind A,
 * which keeps V where it was once B counts). */
TEST(eevdf_lag_kept_across_sleep)
{
    struct harness h;
    struct mqs_sched_entity *a, *b;
    h_pair(&h, EEVDF_SPEC, 1, &a, &b);
    /* V - v = 0.25 ms when it blocks */
    CHECK_EQ(lag_after_sleep(&h, a, b, MS, MS / 2), MS / 2);
}

/* Lag is clamped to max(2 slices, 1 ms) of virtual time: 1.5 ms here. */
TEST(eevdf_lag_clamped)
{
    struct harness h;
    struct mqs_sched_entity *a, *b;
    h_pair(&h, EEVDF_SPEC, 1, &a, &b);
    /* owed 4.95 ms when it blocks: clamped, 1.5 ms x (W + w) / W */
    CHECK_EQ(lag_after_sleep(&h, a, b, 10 * MS, MS / 10), 3 * MS);
}

/* A yield starts a new request from the current v (the first request
 * of a new task is half a slice): the peer runs even though the yielder
 * has used little of its request. */
TEST(eevdf_yield_moves_deadline)
{
    struct harness h;
    struct mqs_sched_entity *a, *b;
    h_pair(&h, EEVDF_SPEC, 1, &a, &b);
    struct mqs_sched_entity *first = h_pick(&h, 0);
    CHECK_EQ(DL(first) - first->key, 375000);
    h_stop(&h, 0, first, 10000, true);
    CHECK_EQ(DL(first) - first->key, 750000); /* a slice of 0.75 ms */
    CHECK(h_pick(&h, 0) != first);
    /* yielding again at once does not push the deadline further */
    uint64_t dl = DL(first);
    CHECK(h_pick(&h, 0) == first);
    h_stop(&h, 0, first, 0, true);
    CHECK_EQ(DL(first), dl);
}

TEST(eevdf_weights_give_cpu_in_their_ratio)
{
    h_check_weights(EEVDF_SPEC);
}

TEST(eevdf_class_order)
{
    static const mqs_class_t cls[] = {MQS_CLASS_IDLE, MQS_CLASS_NORMAL,
                                      MQS_CLASS_FIFO};
    static const int prio[] = {0, -20, 1}, on[] = {0, 0, 0, 0};
    static const int order[] = {2, 1, 0, -1};
    struct harness h;
    h_init(&h, EEVDF_SPEC, 1);
    h_check_order(&h, cls, prio, 3, -1, on, order, 4);
}
