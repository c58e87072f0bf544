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

TEST(eevdf_picks_eligible_earliest_deadline)
{
    struct harness h;
    h_init(&h, EEVDF_SPEC, 1);
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
        if (got != want)
            CHECK_EQ(DL(got), DL(want)); /* a tie is either */
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

/* B blocks owed 0.25 ms (V - v); after A ran alone for 50 ms, B comes
 * back owed 0.25 ms again in the new queue (placed 0.5 ms behind A,
 * which keeps V where it was once B counts). */
TEST(eevdf_lag_kept_across_sleep)
{
    struct harness h;
    h_init(&h, EEVDF_SPEC, 1);
    struct mqs_sched_entity *a = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *b = h_task(&h, 1, MQS_CLASS_NORMAL, 0);
    h_enqueue(&h, 0, a, MQS_ENQ_NEW);
    h_enqueue(&h, 0, b, MQS_ENQ_NEW);
    struct mqs_sched_entity *first = h_pick(&h, 0);
    struct mqs_sched_entity *other = first == a ? b : a;
    h_stop(&h, 0, first, MS, true);
    CHECK(h_pick(&h, 0) == other);
    h_stop(&h, 0, other, MS / 2, false); /* blocks: V - v = 0.25 ms */
    uint64_t run[2] = {0, 0};
    h_share(&h, 0, 50 * MS, MS, run, 2);
    h_enqueue(&h, 0, other, MQS_ENQ_WAKEUP);
    CHECK_EQ(first->key - other->key, MS / 2);
}

/* Lag is clamped to max(2 slices, 1 ms) of virtual time: 1.5 ms here. */
TEST(eevdf_lag_clamped)
{
    struct harness h;
    h_init(&h, EEVDF_SPEC, 1);
    struct mqs_sched_entity *a = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *b = h_task(&h, 1, MQS_CLASS_NORMAL, 0);
    h_enqueue(&h, 0, a, MQS_ENQ_NEW);
    h_enqueue(&h, 0, b, MQS_ENQ_NEW);
    struct mqs_sched_entity *first = h_pick(&h, 0);
    struct mqs_sched_entity *other = first == a ? b : a;
    h_stop(&h, 0, first, 10 * MS, true);
    CHECK(h_pick(&h, 0) == other);
    h_stop(&h, 0, other, MS / 10, false); /* owed 4.95 ms: clamped */
    uint64_t run[2] = {0, 0};
    h_share(&h, 0, 50 * MS, MS, run, 2);
    h_enqueue(&h, 0, other, MQS_ENQ_WAKEUP);
    CHECK_EQ(first->key - other->key, 3 * MS); /* 1.5 ms x (W + w) / W */
}

/* A yield moves the deadline a slice on: the peer runs even though the
 * yielder has used little of its request. */
TEST(eevdf_yield_moves_deadline)
{
    struct harness h;
    h_init(&h, EEVDF_SPEC, 1);
    struct mqs_sched_entity *a = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *b = h_task(&h, 1, MQS_CLASS_NORMAL, 0);
    h_enqueue(&h, 0, a, MQS_ENQ_NEW);
    h_enqueue(&h, 0, b, MQS_ENQ_NEW);
    struct mqs_sched_entity *first = h_pick(&h, 0);
    uint64_t dl = DL(first);
    h_stop(&h, 0, first, 10000, true);
    CHECK_EQ(DL(first), dl + 750000); /* one slice of 0.75 ms, nice 0 */
    CHECK(h_pick(&h, 0) != first);
}

TEST(eevdf_weights_give_cpu_in_their_ratio)
{
    static const int nice[] = {0, 5, -3};
    struct harness h;
    h_init(&h, EEVDF_SPEC, 1);
    for (int k = 0; k < 3; k++)
        h_enqueue(&h, 0, h_task(&h, k, MQS_CLASS_NORMAL, nice[k]),
                  MQS_ENQ_NEW);
    uint64_t run[3] = {0, 0, 0};
    h_share(&h, 0, 20000 * MS, 100 * MS, run, 3);
    for (int k = 1; k < 3; k++) {
        double want = (double)mqs_nice_weight[nice[k] + 20] /
                      mqs_nice_weight[20];
        double got = (double)run[k] / (double)run[0];
        fprintf(stderr, "  nice %d / nice 0: %.4f (weights %.4f)\n", nice[k],
                got, want);
        CHECK_LE(got / want, 1.01);
        CHECK_GE(got / want, 0.99);
    }
}

TEST(eevdf_class_order)
{
    struct harness h;
    h_init(&h, EEVDF_SPEC, 1);
    struct mqs_sched_entity *i = h_task(&h, 0, MQS_CLASS_IDLE, 0);
    struct mqs_sched_entity *n = h_task(&h, 1, MQS_CLASS_NORMAL, -20);
    struct mqs_sched_entity *r = h_task(&h, 2, MQS_CLASS_FIFO, 1);
    h_enqueue(&h, 0, i, MQS_ENQ_NEW);
    h_enqueue(&h, 0, n, MQS_ENQ_NEW);
    h_enqueue(&h, 0, r, MQS_ENQ_NEW);
    CHECK(h_pick(&h, 0) == r);
    CHECK(h_pick(&h, 0) == n);
    CHECK(h_pick(&h, 0) == i);
}
