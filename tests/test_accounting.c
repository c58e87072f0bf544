/*
 * test_accounting.c - exact and tick accounting (include/mqs.h,
 * "Accounting"): which runtimes read the clock at every switch, and what
 * a task's run time looks like under each mode.
 *
 * Under tick accounting a scheduling point takes the monitor's time at
 * its last look instead of reading the clock, so a run shorter than a
 * tick is charged 0 unless a tick falls inside it, and then about a
 * tick: the sum stays close to the truth over many runs.  Under exact
 * accounting every run is charged its own length.
 */
#include <string.h>
#include <time.h>

#include "check.h"
#include "helpers.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static mqs_runtime_t *rt_acct(const char *policy, int preempt, int acct)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 1;
    cfg.policy = policy;
    cfg.preempt = preempt;
    cfg.accounting = acct;
    cfg.preempt_tick_ns = 1000000; /* the default, whatever the ctest entry */
    return rt_create(&cfg);
}

static bool exact_for(const char *policy, int preempt, int acct)
{
    mqs_runtime_t *rt = rt_acct(policy, preempt, acct);
    bool exact = mqs_accounting_exact(rt);
    CHECK_OK(mqs_runtime_destroy(rt));
    return exact;
}

/* The tick-era policies charge at the tick; the virtual-time ones, a
 * runtime without preemption and a runtime told so read the clock. */
TEST(mode_follows_policy_preemption_and_config)
{
    static const char *tick[] = {"mq", "o1", "ws"};
    static const char *exact[] = {"cfs", "eevdf", "bfs", "ule", "global"};
    for (size_t i = 0; i < sizeof tick / sizeof tick[0]; i++) {
        CHECK(!exact_for(tick[i], -1, -1));
        CHECK(!exact_for(tick[i], 1, MQS_ACCOUNTING_POLICY));
        CHECK(exact_for(tick[i], 0, -1));
        CHECK(exact_for(tick[i], 1, MQS_ACCOUNTING_EXACT));
    }
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        CHECK(exact_for(exact[i], 1, MQS_ACCOUNTING_POLICY));
    CHECK(!mqs_accounting_exact(NULL));
}

TEST(bad_values_are_refused_with_a_message)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.accounting = 2;
    char err[256] = "";
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    mqs_runtime_t *rt = NULL;
    CHECK_EQ(mqs_runtime_create(&rt, &cfg), MQS_EINVAL);
    CHECK(strstr(err, "config.accounting=2") != NULL);

    mqs_config_init(&cfg);
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    setenv("MQS_ACCOUNTING", "sometimes", 1);
    CHECK_EQ(mqs_runtime_create(&rt, &cfg), MQS_EINVAL);
    CHECK(strstr(err, "MQS_ACCOUNTING=sometimes") != NULL);
    setenv("MQS_ACCOUNTING", "exact", 1);
    cfg.workers = 1;
    cfg.policy = "mq";
    CHECK_OK(mqs_runtime_create(&rt, &cfg));
    CHECK(mqs_accounting_exact(rt));
    CHECK_OK(mqs_runtime_destroy(rt));
    unsetenv("MQS_ACCOUNTING");
}

/* RUNS runs of about SPIN_NS each, every one ended by a yield (a lone
 * task: the yield comes straight back); what each run added to the
 * task's run_ns, and the wall time of all of them. */
#define RUNS 2000
#define SPIN_NS 20000

struct runs {
    uint64_t added[RUNS];
    uint64_t wall;
};

static void *short_runs(void *arg)
{
    struct runs *r = arg;
    mqs_task_stats_t s;
    CHECK_OK(mqs_task_stats(mqs_self(), &s));
    uint64_t before = s.run_ns;
    for (int i = 0; i < RUNS; i++) {
        uint64_t t0 = mono_ns();
        while (mono_ns() - t0 < SPIN_NS)
            ;
        r->wall += mono_ns() - t0;
        CHECK_OK(mqs_yield());
        CHECK_OK(mqs_task_stats(mqs_self(), &s));
        r->added[i] = s.run_ns - before;
        before = s.run_ns;
    }
    return NULL;
}

static void measure(const char *policy, int acct, struct runs *r,
                    int *zero, uint64_t *sum)
{
    memset(r, 0, sizeof *r);
    mqs_runtime_t *rt = rt_acct(policy, 1, acct);
    join(spawn(rt, short_runs, r));
    CHECK_OK(mqs_runtime_destroy(rt));
    *zero = 0;
    *sum = 0;
    for (int i = 0; i < RUNS; i++) {
        *zero += r->added[i] == 0;
        *sum += r->added[i];
    }
    fprintf(stderr, "  %s, %s accounting: %d of %d runs charged 0; "
                    "%.1f ms charged for %.1f ms run\n",
            policy, acct == MQS_ACCOUNTING_EXACT ? "exact" : "policy", *zero,
            RUNS, *sum / 1e6, r->wall / 1e6);
}

/* Exact: every 20 us run is charged at least its 20 us.  Tick (1 ms):
 * at most one run in 50 or so straddles a tick, the rest are charged 0;
 * over 2000 runs (40 ms, about 40 ticks) the charged sum is near the
 * wall time.  (A host that takes the worker's CPU lengthens runs in wall
 * time, and the tick and the test's clock both see that.) */
TEST(short_runs_are_charged_at_the_tick_or_exactly)
{
    static struct runs r;
    int zero;
    uint64_t sum;
    measure("mq", MQS_ACCOUNTING_EXACT, &r, &zero, &sum);
    CHECK_EQ(zero, 0);
    for (int i = 0; i < RUNS; i++)
        CHECK_GE(r.added[i], SPIN_NS);
    CHECK_GE(sum, r.wall);

    measure("mq", MQS_ACCOUNTING_POLICY, &r, &zero, &sum);
    CHECK_GT(zero, RUNS / 2);
    CHECK_GT(sum, r.wall / 3);
    CHECK_LT(sum, 3 * r.wall);

    /* A virtual-time policy is exact with the same configuration. */
    measure("cfs", MQS_ACCOUNTING_POLICY, &r, &zero, &sum);
    CHECK_EQ(zero, 0);
}

/*
 * A policy's tick op, asked at a checkpoint, must see time on the clock
 * a run's start was read from.  Two tasks on one worker make short
 * steps with a checkpoint after each; mq (tick accounting by default)
 * gives each a slice of its latency over the two of them (2.5 ms), so a
 * task gives the worker up about once a slice.  Comparing an exact read
 * with a start taken from the coarse clock (up to a tick old) spent the
 * end of a slice at every checkpoint until the monitor's next look: the
 * two then alternated at nearly every step.  The count is of switches
 * against checkpoints, which the host's speed does not change.
 */
#define CP_STEP_NS 2000
#define CP_RUN_NS 300000000ull

struct cp {
    long checkpoints;
    uint64_t switches;
};

static void *checkpoint_steps(void *arg)
{
    struct cp *c = arg;
    uint64_t end = mono_ns() + CP_RUN_NS;
    while (mono_ns() < end) {
        uint64_t t0 = mono_ns();
        while (mono_ns() - t0 < CP_STEP_NS)
            ;
        CHECK_OK(mqs_checkpoint());
        c->checkpoints++;
    }
    mqs_task_stats_t s;
    CHECK_OK(mqs_task_stats(mqs_self(), &s));
    c->switches = s.switches;
    return NULL;
}

static void checkpoint_switches(int acct, struct cp c[2])
{
    memset(c, 0, 2 * sizeof *c);
    mqs_runtime_t *rt = rt_acct("mq", 1, acct);
    mqs_task_t *a = spawn(rt, checkpoint_steps, &c[0]);
    mqs_task_t *b = spawn(rt, checkpoint_steps, &c[1]);
    join(a);
    join(b);
    CHECK_OK(mqs_runtime_destroy(rt));
    fprintf(stderr, "  mq, %s accounting: switched in %llu and %llu times "
                    "in %ld and %ld checkpoints\n",
            acct == MQS_ACCOUNTING_EXACT ? "exact" : "policy",
            (unsigned long long)c[0].switches,
            (unsigned long long)c[1].switches, c[0].checkpoints,
            c[1].checkpoints);
}

/* A slice is 2.5 ms and a tick 1 ms: in a 300 ms run a task is
 * switched in about 130 times (150 exactly accounted); 600 for the two
 * is a switch every tick, four times what slices allow and far below
 * the 11 000-12 000 a switch at nearly every step made. */
TEST(checkpoints_give_up_the_worker_once_a_slice)
{
    static struct cp c[2];
    checkpoint_switches(MQS_ACCOUNTING_EXACT, c);
    CHECK_LT(c[0].switches + c[1].switches, 600);
    checkpoint_switches(MQS_ACCOUNTING_POLICY, c);
    CHECK_GT(c[0].checkpoints + c[1].checkpoints, 3000);
    CHECK_LT(c[0].switches + c[1].switches, 600);
}
