/*
 * test_load_avg.c - src/load_avg.h on known inputs, with a virtual clock:
 * the decay table is 2^(-n/32), an always-runnable signal converges to
 * its weight (the series' maximum), 32 ms of idleness halves it and 64 ms
 * quarters it, half-runnable time settles near half, updates inside a
 * period change the sum but not the average, and a queue's signal is the
 * sum of the entities attached to it.
 */
#include <math.h>

#include "check.h"
#include "load_avg.h"

#define PERIOD_NS ((uint64_t)MQS__LOAD_PERIOD << MQS__LOAD_UNIT_SHIFT)
#define MS 1000000ull

/* Run la for ns in steps of step_ns, runnable (1) or not (0). */
static uint64_t drive(struct mqs_load_avg *la, uint64_t now, uint64_t ns,
                      uint64_t step_ns, uint64_t runnable, uint64_t mult)
{
    for (uint64_t t = 0; t < ns; t += step_ns) {
        now += step_ns;
        mqs__load_update(la, now, runnable, mult);
    }
    return now;
}

TEST(load_decay_table_is_two_to_minus_n_over_32)
{
    for (unsigned n = 0; n < 32; n++) {
        double want = ldexp(1.0, 32) * pow(2.0, -(double)n / 32.0);
        CHECK_LE(fabs((double)mqs__load_yn[n] - want), 1.5);
    }
    /* y^0 is stored as 1 - 2^-32: every decay rounds down by one */
    CHECK_EQ(mqs__load_decay(1 << 20, 32), (1 << 19) - 1);
    CHECK_EQ(mqs__load_decay(1 << 20, 64), (1 << 18) - 1);
    CHECK_EQ(mqs__load_decay(1 << 20, 16), 741455); /* 2^20 / sqrt 2 */
    CHECK_EQ(mqs__load_decay(12345, 0), 12344);
    CHECK_EQ(mqs__load_decay(~0ull, 64 * 32), 0);
}

/* The series converges to MQS__LOAD_MAX (less the open period), within
 * the rounding of the integer decay (a few units in 47742). */
TEST(load_always_runnable_converges_to_the_max)
{
    struct mqs_load_avg la = {0};
    uint64_t now = drive(&la, 1, PERIOD_NS, PERIOD_NS, 1, 1024);
    now = drive(&la, now, 2000 * PERIOD_NS, PERIOD_NS, 1, 1024);
    CHECK_EQ(la.contrib, 0);
    CHECK_GE(la.sum, MQS__LOAD_MAX - MQS__LOAD_PERIOD - 4);
    CHECK_LE(la.sum, MQS__LOAD_MAX - MQS__LOAD_PERIOD);
    CHECK_GE(la.avg, 1022);
    CHECK_LE(la.avg, 1024);
    /* the same in small steps (updates inside periods) */
    struct mqs_load_avg lb = {0};
    drive(&lb, 1, 1000 * MS, 100000, 1, 2048);
    CHECK_GE(lb.avg, 2040);
    CHECK_LE(lb.avg, 2048);
}

TEST(load_32ms_idle_halves_64ms_quarters)
{
    struct mqs_load_avg la = {0};
    uint64_t now = drive(&la, 1, 2000 * PERIOD_NS, PERIOD_NS, 1, 1024);
    uint64_t full = la.avg;
    now = drive(&la, now, 32 * PERIOD_NS, PERIOD_NS, 0, 1024);
    CHECK_GE(la.avg, full / 2 - 2);
    CHECK_LE(la.avg, full / 2 + 2);
    drive(&la, now, 32 * PERIOD_NS, PERIOD_NS, 0, 1024);
    CHECK_GE(la.avg, full / 4 - 2);
    CHECK_LE(la.avg, full / 4 + 2);
}

/* One update after a long idle gap decays as much as many small ones. */
TEST(load_one_long_gap_equals_many_steps)
{
    struct mqs_load_avg a = {0}, b;
    uint64_t now = drive(&a, 1, 500 * PERIOD_NS, PERIOD_NS, 1, 1024);
    b = a;
    drive(&a, now, 48 * PERIOD_NS, PERIOD_NS, 0, 1024);
    mqs__load_update(&b, now + 48 * PERIOD_NS, 0, 1024);
    CHECK_LE(a.avg > b.avg ? a.avg - b.avg : b.avg - a.avg, 2);
}

/* Runnable half of every 2-period cycle: the average settles between the
 * troughs and peaks around half the weight. */
TEST(load_half_duty_settles_near_half)
{
    struct mqs_load_avg la = {0};
    uint64_t now = 1;
    for (int i = 0; i < 1000; i++) {
        now = drive(&la, now, PERIOD_NS, PERIOD_NS / 4, 1, 1024);
        now = drive(&la, now, PERIOD_NS, PERIOD_NS / 4, 0, 1024);
    }
    CHECK_GE(la.avg, 480);
    CHECK_LE(la.avg, 545);
}

TEST(load_update_inside_a_period_keeps_avg)
{
    struct mqs_load_avg la = {0};
    uint64_t now = drive(&la, 1, 100 * PERIOD_NS, PERIOD_NS, 1, 1024);
    uint64_t avg = la.avg, sum = la.sum;
    CHECK(!mqs__load_update(&la, now + PERIOD_NS / 2, 1, 1024));
    CHECK_EQ(la.avg, avg);
    CHECK_EQ(la.sum, sum + MQS__LOAD_PERIOD / 2);
    /* backwards or sub-unit steps change nothing */
    CHECK(!mqs__load_update(&la, now, 1, 1024));
    CHECK(!mqs__load_update(&la, now + PERIOD_NS / 2 + 100, 1, 1024));
    CHECK_EQ(la.sum, sum + MQS__LOAD_PERIOD / 2);
}

/* A queue accumulating with the runnable weight of two always-runnable
 * entities tracks the sum of their signals; detaching one leaves the
 * other's. */
TEST(load_queue_sum_of_attached_entities)
{
    struct mqs_load_avg rq = {0}, a, b;
    uint64_t now = 1000;
    mqs__load_init_full(&a, now, 1024);
    mqs__load_init_full(&b, now, 335);
    rq.last_ns = now;
    mqs__load_attach(&rq, &a, 1024);
    mqs__load_attach(&rq, &b, 335);
    CHECK_EQ(rq.avg, 1024 + 335);
    for (int i = 0; i < 500; i++) {
        now += PERIOD_NS;
        mqs__load_update(&a, now, 1, 1024);
        mqs__load_update(&b, now, 1, 335);
        mqs__load_update(&rq, now, 1024 + 335, 1);
    }
    CHECK_LE(rq.avg > a.avg + b.avg ? rq.avg - a.avg - b.avg
                                    : a.avg + b.avg - rq.avg, 4);
    mqs__load_detach(&rq, &a, 1024);
    CHECK_LE(rq.avg > b.avg ? rq.avg - b.avg : b.avg - rq.avg, 4);
    mqs__load_detach(&rq, &a, 1024); /* again: clamps at zero */
    CHECK_EQ(rq.avg, 0);
}

TEST(load_new_entity_starts_full)
{
    struct mqs_load_avg la;
    mqs__load_init_full(&la, 5 * MS, 1024);
    CHECK_EQ(la.avg, 1024);
    /* 32 ms asleep after starting: half */
    mqs__load_update(&la, 5 * MS + 32 * PERIOD_NS, 0, 1024);
    CHECK_GE(la.avg, 510);
    CHECK_LE(la.avg, 513);
}
