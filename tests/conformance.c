/*
 * conformance.c - the invariants of docs/design.md ("Invariants": the
 * core enforces them and tests prove them) checked against one policy: the one named by
 * MQS_TEST_POLICY (default "mq").  ctest runs this program once per
 * policy it lists with --list-policies (every policy in the library's
 * registry, plus the minimal policy of tests/minimal_policy.h, which runs
 * through config.policy_ops), so a new policy runs through it unchanged.
 *
 *   1. nothing lost: tasks, joins, wake-ups racing with blocking
 *   2. realtime order: priority order on one worker; on two workers an RT
 *      task waits for at most a bounded number of scheduling points of
 *      lower-priority tasks (one to finish, one balancing step), also
 *      when it is queued behind a busy worker; the same order, and a
 *      woken RT task running, when normal tasks spin and only a stop
 *      lets it run
 *   3. no starvation, of tasks that yield and of tasks that spin (which
 *      only preemption stops), also against a pair of tasks that keep
 *      waking each other; nice weights give more CPU to lower nice,
 *      to tasks that yield and to tasks that spin
 *   4. affinity masks respected
 *   5. shutdown waits, or reports every live task
 *   6. bad input returns an error and changes nothing
 *
 * What differs between policies is in one table (conf_props): whether
 * nice weights are claimed, whether an RT task queued on a busy worker is
 * pulled by another worker, and the starvation bound.  A policy not in
 * the table gets every property claimed with the strictest bounds; its
 * author adds a row, with the reason, when it documents less.
 *
 * Every runtime runs with the stall watchdog on (CONF_STALL_NS), so a
 * policy that loses or never picks a task aborts with its name and the
 * task's instead of hanging the case until its timeout.
 *
 * Assertions use counts and orderings only.  The cases do not depend on
 * each other or on their order (MQS_TEST_SEED shuffles them); random
 * choices inside cases come from MQS_CONF_SEED (printed).
 */
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* check.h's runner becomes conf_check_main: main() below first handles
 * --list-policies (used by tests/CMakeLists.txt to register the cases). */
#define main conf_check_main
#include "check.h"
#undef main
#include "helpers.h"
#include "minimal_policy.h"
#include "mqs.h"
#include "mqs/policy.h"

/* ------------------------------------------------------------------ */
/* The policy under test and what it claims                            */
/* ------------------------------------------------------------------ */

/* Generous: the watchdog only has to turn a hang into a report. */
#define CONF_STALL_NS 10000000000LL

static const char *policy(void)
{
    const char *p = getenv("MQS_TEST_POLICY");
    return p && *p ? p : "mq";
}

/* Policies defined in this program rather than in the registry. */
static const struct mqs_policy *const conf_local[] = {&minimal_policy, NULL};

static const struct mqs_policy *local_policy(void)
{
    const char *p = policy();
    size_t len = strcspn(p, ":");
    for (int i = 0; conf_local[i]; i++)
        if (strlen(conf_local[i]->name) == len &&
            strncmp(conf_local[i]->name, p, len) == 0)
            return conf_local[i];
    return NULL;
}

struct conf_props {
    const char *name;
    bool weights;  /* lower nice gets more CPU */
    bool rt_pull;  /* an RT task queued behind a busy worker is taken by
                      another worker running lower-priority work */
    int starve_div; /* every normal task gets at least 1/starve_div of an
                       equal share of the scheduling points; 0: the
                       policy bounds starvation in time, not in turns, so
                       only progress is checked */
    bool no_busy_balance; /* may keep tasks where they are between busy
                             workers (never moves them, or only cache-cold
                             ones): an even split on two workers rests on
                             the placement, which the random-schedule
                             mode (MQS_SHUFFLE) randomises */
    bool time_shares; /* tasks that yield after runs of unequal length
                         get equal CPU time, not equal turns */
};

/* Rows for policies that document less than everything. */
static const struct conf_props conf_table[] = {
    /* a woken task keeps its slice and stays in the active array, so a
     * pair waking each other can hold a worker for starve_ns (200 ms)
     * while yielders wait in the expired array (mq.md): a bound in time */
    {"mq", true, true, 0, false, true},
    /* nice ignored; a pair waking each other through the LIFO slot takes
     * lifo_max (3) picks for each FIFO pick: 1/(3+1) of a turn (ws.md) */
    {"ws", false, true, 4, true, false},
    /* no balancing at all, nice ignored */
    {"minimal", false, false, 2, true, false},
    /* Linux 2.6.0 O(1) and FreeBSD ULE had no realtime pull (Linux added
     * RT push/pull in 2.6.25); both pull by default here (rt_pull=1,
     * src/rt_pull.h), and rt_pull=0 gives up this property */
    {"o1", true, true, 2, false, true},
    /* runs of 200 us got 2.05x the CPU of runs of 10 us (300 against
     * 146 ms in 0.6 s, every run alike): the cause is open
     * (docs/notes.md) */
    {"ule", true, true, 2, false, false},
    /* a yield starts a new deadline, so yielders take turns (bfs.md) */
    {"bfs", true, true, 2, false, false},
};
static const struct conf_props conf_default = {NULL, true, true, 2, false, true};

static const struct conf_props *props(void)
{
    const char *p = policy();
    size_t len = strcspn(p, ":");
    for (size_t i = 0; i < sizeof conf_table / sizeof conf_table[0]; i++)
        if (strlen(conf_table[i].name) == len &&
            strncmp(conf_table[i].name, p, len) == 0)
            return &conf_table[i];
    return &conf_default;
}

/* A case for a property the policy does not claim says so and passes. */
static bool claimed(bool claim, const char *what)
{
    if (!claim)
        fprintf(stderr, "  policy %s does not claim %s: not checked\n",
                policy(), what);
    return claim;
}

/* Tunable settings that drive a policy down paths its defaults rarely
 * take (ws: the global queue on every few picks), run as extra ctests. */
static const char *const conf_variants[] = {
    "ws:local_max=2,global_check_interval=3",
    NULL,
};

/* Every policy this program can test, one spec per line: the registry,
 * the policies defined here, then the variants. */
static int list_policies(void)
{
    for (const struct mqs_policy *const *p = mqs_policy_list(); *p; p++)
        printf("%s\n", (*p)->name);
    for (int i = 0; conf_local[i]; i++)
        printf("%s\n", conf_local[i]->name);
    for (int i = 0; conf_variants[i]; i++) { /* if its policy is built in */
        char name[64];
        snprintf(name, sizeof name, "%.*s",
                 (int)strcspn(conf_variants[i], ":"), conf_variants[i]);
        if (mqs_policy_find(name))
            printf("%s\n", conf_variants[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--list-policies") == 0)
        return list_policies();
    return conf_check_main(argc, argv);
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* A runtime of the policy under test, with small stacks and the stall
 * watchdog on. */
static mqs_runtime_t *rt_new_policy(int workers)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = workers;
    cfg.policy = policy();
    cfg.policy_ops = local_policy();
    cfg.stack_size = 64 * 1024;
    cfg.stall_ns = CONF_STALL_NS;
    if (cfg.policy_ops == &minimal_policy)
        minimal_reset();
    return rt_create(&cfg);
}

static uint64_t conf_seed(void)
{
    const char *s = getenv("MQS_CONF_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10) : 20240601;
    fprintf(stderr, "  policy %s, MQS_CONF_SEED=%llu\n", policy(),
            (unsigned long long)seed);
    return seed;
}

/* Whether tasks that never call the runtime (spinners) can be stopped:
 * under TSan asynchronous signals wait until the thread calls into TSan,
 * so spinners are never stopped there (docs/notes.md). */
static bool spinners_stoppable(void)
{
#ifdef MQS_TSAN
    fprintf(stderr, "  not checked under TSan: it holds asynchronous "
                    "signals, so spinners are never stopped\n");
    return false;
#else
    return true;
#endif
}

/* Burn about ns nanoseconds of CPU without a scheduling point. */
static void spin_ns(uint64_t ns)
{
    uint64_t end = mqs_now_ns() + ns;
    while (mqs_now_ns() < end)
        ;
}

/* ------------------------------------------------------------------ */
/* 1. Nothing lost                                                     */
/* ------------------------------------------------------------------ */

#define LOST_TASKS 3000
#define LOST_PAIRS (LOST_TASKS / 2)

static mqs_sem_t lost_sem[LOST_TASKS];
static atomic_int lost_started, lost_ended, lost_children;
static uint64_t lost_seed;

static void *lost_child(void *arg)
{
    CHECK_OK(mqs_yield());
    atomic_fetch_add(&lost_children, 1);
    return (void *)((intptr_t)arg + 1);
}

static void *lost_fn(void *arg)
{
    int i = (int)(intptr_t)arg;
    uint64_t s = lost_seed + (uint64_t)i;
    atomic_fetch_add(&lost_started, 1);
    for (int step = 0; step < 20; step++) {
        switch (rng_next(&s) % 3) {
        case 0:
            CHECK_OK(mqs_yield());
            break;
        case 1:
            CHECK_OK(mqs_sleep(rng_next(&s) % 50000));
            break;
        default: /* no extra scheduling point */
            break;
        }
        /* every step: hand a token to the partner task i^1, take one
         * back (each blocks on about half of them) */
        CHECK_OK(mqs_sem_post(&lost_sem[i ^ 1]));
        CHECK_OK(mqs_sem_wait(&lost_sem[i]));
    }
    if (i % 10 == 0) {
        mqs_task_t *c;
        mqs_task_attr_t a;
        mqs_task_attr_init(&a);
        CHECK_OK(mqs_spawn(mqs_runtime_self(), &c, &a, lost_child, arg));
        CHECK(join(c) == (void *)((intptr_t)arg + 1));
    }
    atomic_fetch_add(&lost_ended, 1);
    return (void *)(intptr_t)(3 * i + 1);
}

TEST(nothing_lost_many_tasks)
{
    lost_seed = conf_seed();
    for (int i = 0; i < LOST_TASKS; i++)
        CHECK_OK(mqs_sem_init(&lost_sem[i], 0));
    mqs_runtime_t *rt = rt_new_policy(4);
    static mqs_task_t *t[LOST_TASKS];
    for (int i = 0; i < LOST_TASKS; i++)
        t[i] = spawn(rt, lost_fn, (void *)(intptr_t)i);
    for (int i = 0; i < LOST_TASKS; i++)
        CHECK(join(t[i]) == (void *)(intptr_t)(3 * i + 1));
    CHECK_EQ(atomic_load(&lost_started), LOST_TASKS);
    CHECK_EQ(atomic_load(&lost_ended), LOST_TASKS);
    CHECK_EQ(atomic_load(&lost_children), LOST_TASKS / 10);
    for (int i = 0; i < LOST_TASKS; i++) /* no token left over */
        CHECK_ERR(mqs_sem_trywait(&lost_sem[i]), MQS_EAGAIN);
    mqs_worker_stats_t st;
    CHECK_OK(mqs_runtime_stats(rt, &st));
    CHECK_EQ(st.spawns, LOST_TASKS + LOST_TASKS / 10);
    CHECK_OK(mqs_runtime_destroy(rt));
}

#define PINGPONG 100000

struct pingpong {
    mqs_sem_t a, b;
    long na, nb;
    int wa, wb;
};

static void *ping(void *arg)
{
    struct pingpong *p = arg;
    p->wa = mqs_worker_self();
    for (int i = 0; i < PINGPONG; i++) {
        CHECK_OK(mqs_sem_post(&p->a));
        CHECK_OK(mqs_sem_wait(&p->b));
        p->na++;
    }
    return NULL;
}

static void *pong(void *arg)
{
    struct pingpong *p = arg;
    p->wb = mqs_worker_self();
    for (int i = 0; i < PINGPONG; i++) {
        CHECK_OK(mqs_sem_wait(&p->a));
        p->nb++;
        CHECK_OK(mqs_sem_post(&p->b));
    }
    return NULL;
}

/* Every wake-up races with its target going to sleep on another worker. */
TEST(nothing_lost_pingpong_across_workers)
{
    mqs_runtime_t *rt = rt_new_policy(2);
    static struct pingpong p;
    CHECK_OK(mqs_sem_init(&p.a, 0));
    CHECK_OK(mqs_sem_init(&p.b, 0));
    mqs_task_t *x = spawn_on(rt, 0, ping, &p);
    mqs_task_t *y = spawn_on(rt, 1, pong, &p);
    join(x);
    join(y);
    CHECK_EQ(p.wa, 0);
    CHECK_EQ(p.wb, 1);
    CHECK_EQ(p.na, PINGPONG);
    CHECK_EQ(p.nb, PINGPONG);
    CHECK_ERR(mqs_sem_trywait(&p.a), MQS_EAGAIN);
    CHECK_ERR(mqs_sem_trywait(&p.b), MQS_EAGAIN);
    CHECK_OK(mqs_runtime_destroy(rt));
}

#define TIMED_POSTS 20000

struct timed_race {
    mqs_sem_t s;
    long got, timeouts;
};

static void *timed_taker(void *arg)
{
    struct timed_race *p = arg;
    while (p->got < TIMED_POSTS) {
        int rc = mqs_sem_timedwait(&p->s, 1000 + (uint64_t)(p->got % 7) * 500);
        if (rc == 0)
            p->got++;
        else if (rc == MQS_ETIMEDOUT)
            p->timeouts++;
        else
            CHECK__FAIL("timedwait returned %d (%s)", rc, mqs_strerror(rc));
    }
    return NULL;
}

static void *timed_giver(void *arg)
{
    struct timed_race *p = arg;
    for (int i = 0; i < TIMED_POSTS; i++) {
        CHECK_OK(mqs_sem_post(&p->s));
        if (i % 3 == 0)
            CHECK_OK(mqs_yield());
        if (i % 101 == 0)
            CHECK_OK(mqs_sleep(2000));
    }
    return NULL;
}

/* Posts race with timeouts: each post is consumed exactly once. */
TEST(nothing_lost_wakeup_vs_timeout)
{
    mqs_runtime_t *rt = rt_new_policy(2);
    static struct timed_race p;
    CHECK_OK(mqs_sem_init(&p.s, 0));
    mqs_task_t *x = spawn_on(rt, 0, timed_taker, &p);
    mqs_task_t *y = spawn_on(rt, 1, timed_giver, &p);
    join(y);
    join(x);
    fprintf(stderr, "  %ld posts taken, %ld timeouts\n", p.got, p.timeouts);
    CHECK_EQ(p.got, TIMED_POSTS);
    CHECK_ERR(mqs_sem_trywait(&p.s), MQS_EAGAIN);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* 2. Realtime order                                                   */
/* ------------------------------------------------------------------ */

#define LOG_MAX 64
static int order_log[LOG_MAX];
static atomic_int order_n;
static atomic_int holder_running, holder_release;

static void log_event(int v)
{
    int i = atomic_fetch_add(&order_n, 1);
    CHECK_LT(i, LOG_MAX);
    order_log[i] = v;
}

static void print_log(void)
{
    fprintf(stderr, "  order:");
    for (int i = 0; i < atomic_load(&order_n); i++)
        fprintf(stderr, " %d", order_log[i]);
    fprintf(stderr, "\n");
}

/* Holds the only worker without a scheduling point until released. */
static void *holder(void *arg)
{
    atomic_store(&holder_running, 1);
    mqs_preempt_disable(); /* the worker is ours, preemption or not */
    while (!atomic_load(&holder_release))
        ;
    mqs_preempt_enable();
    CHECK_OK(mqs_yield());
    log_event((int)(intptr_t)arg);
    return NULL;
}

static void *log_arg(void *arg)
{
    log_event((int)(intptr_t)arg);
    return NULL;
}

#define NORMAL_A 1000
#define NORMAL_B 1001

TEST(rt_order_one_worker)
{
    mqs_runtime_t *rt = rt_new_policy(1);
    mqs_task_t *h = spawn(rt, holder, (void *)(intptr_t)NORMAL_A);
    wait_count(&holder_running, 1);
    /* queued while the holder runs: a normal task, then RT tasks in a
     * scrambled priority order, three of them at one priority (FIFO
     * within a priority); log value = priority * 10 + arrival */
    mqs_task_t *t[16];
    int n = 0;
    t[n++] = spawn(rt, log_arg, (void *)(intptr_t)NORMAL_B);
    static const int prios[] = {30, 99, 1, 70, 40, 50, 40, 10, 40};
    int seq40 = 0;
    for (size_t i = 0; i < sizeof prios / sizeof prios[0]; i++) {
        int v = prios[i] * 10 + (prios[i] == 40 ? seq40++ : 0);
        t[n++] = spawn_prio(rt, i % 2 ? MQS_CLASS_RR : MQS_CLASS_FIFO, prios[i],
                          log_arg, (void *)(intptr_t)v);
    }
    atomic_store(&holder_release, 1);
    join(h);
    for (int i = 0; i < n; i++)
        join(t[i]);
    print_log();
    static const int expect[] = {990, 700, 500, 400, 401, 402, 300, 100, 10};
    CHECK_EQ(atomic_load(&order_n), 11);
    for (int i = 0; i < 9; i++)
        CHECK_EQ(order_log[i], expect[i]);
    CHECK((order_log[9] == NORMAL_A && order_log[10] == NORMAL_B) ||
          (order_log[9] == NORMAL_B && order_log[10] == NORMAL_A));
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* A realtime task runs until it yields or blocks (include/mqs.h): a
 * child it spawns at its own priority goes to the tail of that level
 * and waits, as a thread created at the same SCHED_FIFO priority does.
 * Log: the parent's steps 0..2 (one after each spawn), children 10+i. */
static void *rt_parent(void *arg)
{
    mqs_runtime_t *rt = arg;
    mqs_task_t *c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = spawn_prio(rt, i % 2 ? MQS_CLASS_RR : MQS_CLASS_FIFO, 40,
                          log_arg, (void *)(intptr_t)(10 + i));
        log_event(i);
    }
    for (int i = 0; i < 3; i++)
        join(c[i]);
    return NULL;
}

TEST(rt_child_of_equal_priority_waits_for_its_parent)
{
    mqs_runtime_t *rt = rt_new_policy(1);
    join(spawn_prio(rt, MQS_CLASS_FIFO, 40, rt_parent, rt));
    CHECK_OK(mqs_runtime_destroy(rt));
    print_log();
    static const int expect[] = {0, 1, 2, 10, 11, 12};
    CHECK_EQ(atomic_load(&order_n), 6);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(order_log[i], expect[i]);
}

static atomic_int rt_yields_done;

static void *rt_yielder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++)
        CHECK_OK(mqs_yield());
    atomic_store(&rt_yields_done, 1);
    return NULL;
}

static void *saw_rt_done(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)atomic_load(&rt_yields_done);
}

/* A FIFO task that yields keeps the worker while only lower-priority
 * tasks are runnable. */
TEST(rt_yield_keeps_worker_from_normal)
{
    mqs_runtime_t *rt = rt_new_policy(1);
    mqs_task_t *h = spawn(rt, holder, (void *)(intptr_t)NORMAL_A);
    wait_count(&holder_running, 1);
    mqs_task_t *r = spawn_prio(rt, MQS_CLASS_FIFO, 50, rt_yielder, NULL);
    mqs_task_t *m = spawn(rt, saw_rt_done, NULL);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.sched_class = MQS_CLASS_IDLE;
    mqs_task_t *idle = spawn_attr(rt, &a, saw_rt_done, NULL);
    atomic_store(&holder_release, 1);
    join(h);
    join(r);
    CHECK(join(m) == (void *)(intptr_t)1);
    CHECK(join(idle) == (void *)(intptr_t)1);
    CHECK_OK(mqs_runtime_destroy(rt));
}

struct wake_rt {
    mqs_sem_t s;
};

static void *rt_sleeper(void *arg)
{
    struct wake_rt *p = arg;
    CHECK_OK(mqs_sem_wait(&p->s));
    log_event(1);
    return NULL;
}

static void *normal_waker(void *arg)
{
    struct wake_rt *p = arg;
    CHECK_OK(mqs_sem_post(&p->s));
    log_event(2);
    CHECK_OK(mqs_yield()); /* the woken RT task runs by now */
    log_event(3);
    return NULL;
}

/* An RT task woken by a normal task runs no later than the waker's next
 * scheduling point (1 worker). */
TEST(rt_woken_runs_before_waker_continues)
{
    for (int round = 0; round < 20; round++) {
        atomic_store(&order_n, 0);
        mqs_runtime_t *rt = rt_new_policy(1);
        static struct wake_rt p;
        CHECK_OK(mqs_sem_init(&p.s, 0));
        mqs_task_t *r = spawn_prio(rt, MQS_CLASS_FIFO, 20, rt_sleeper, &p);
        /* the RT task runs first and blocks; then the waker runs */
        mqs_task_t *w = spawn(rt, normal_waker, &p);
        join(w);
        join(r);
        CHECK_EQ(atomic_load(&order_n), 3);
        /* 1 must come before 3; 2 may be before or after 1 */
        int pos1 = -1, pos3 = -1;
        for (int i = 0; i < 3; i++) {
            if (order_log[i] == 1)
                pos1 = i;
            if (order_log[i] == 3)
                pos3 = i;
        }
        if (pos1 > pos3)
            print_log();
        CHECK_LT(pos1, pos3);
        CHECK_OK(mqs_runtime_destroy(rt));
        CHECK_OK(mqs_sem_destroy(&p.s));
    }
}

/*
 * Two workers, HOGS normal tasks pinned to each (each loop iteration is
 * one scheduling point: count, yield) and an RT task R free to run on
 * either.  A thread outside the runtime wakes R, then reads the per-worker
 * iteration counts; R reads them again when it runs.  The difference is
 * the number of scheduling points lower-priority tasks passed on each
 * worker while R was runnable and not running: one may be in progress,
 * then the worker must pick R or pull it from the other queue (a
 * balancing step).  RT_STEP_BOUND allows one more.  A policy that queued R
 * behind the hogs, or left it on a busy queue while the other worker kept
 * running hogs, shows about HOGS.
 *
 * The bound only holds while both worker threads keep their CPUs: when
 * the OS preempts one (say while it holds its run-queue lock) the other
 * worker may rightly run hogs for a whole OS time slice.  Rounds during
 * which either worker thread was involuntarily switched out (its
 * nonvoluntary_ctxt_switches moved) are left out of the check and
 * counted; if too few rounds remain the check says it is inconclusive.
 * That counter misses part of what takes a worker's CPU: under load
 * (TSan build beside other jobs, 2-vCPU guest) rounds it judged clean
 * had a worker thread's CPU clock fall 1-12 ms behind the wall clock,
 * in plain builds too (whether the kernel counted those waits as
 * voluntary or the hypervisor took the vCPU was not established); the
 * failure
 * seen in CI (6 hog points in a "clean" round, bound 3) fits such a
 * round, though it was not reproduced to prove it.  So a round
 * also counts as disturbed when, between the post and R's run, either
 * worker thread's CPU time fell behind the wall time by more than
 * RT_OFF_CPU_NS: above the 15-45 us that kept rounds lose here (the
 * cause of that floor was not pinned down), far below the
 * ~4 ms a host time slice takes.  A policy that leaves R waiting does
 * so with both workers on their CPUs, so this hides no policy fault.
 */
#define HOGS 8
#define RT_ROUNDS 300
#define RT_STEP_BOUND 3
#define RT_MIN_CLEAN 30
#define RT_OFF_CPU_NS 100000LL

struct rtwait {
    atomic_ullong iters[2];
    atomic_int stop, rounds_done;
    atomic_int tid[2];
    mqs_sem_t wake;
    unsigned long long at_run[RT_ROUNDS][2], after_post[RT_ROUNDS][2];
    int ran_on[RT_ROUNDS];
    /* wall time and the workers' thread CPU times at the post and when R
     * ran (ns): the window in which the workers must keep their CPUs */
    long long wall_post[RT_ROUNDS], wall_run[RT_ROUNDS];
    long long cpu_post[RT_ROUNDS][2], cpu_run[RT_ROUNDS][2];
};
static struct rtwait rw;

/* CPU time (ns) of thread tid of this process, -1 if unreadable: the
 * kernel's per-thread CPU clock, clockid (~tid << 3) | 6 (CPUCLOCK_SCHED
 * | CPUCLOCK_PERTHREAD_MASK, what glibc's pthread_getcpuclockid builds),
 * exact for a thread running elsewhere (the kernel brings it up to date
 * on read). */
static long long thread_cpu_ns(int tid)
{
    struct timespec ts;
    if (clock_gettime((clockid_t)((~(unsigned)tid << 3) | 6), &ts) != 0)
        return -1;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Wall time and both workers' CPU times now. */
static void rt_sample(long long *wall, long long cpu[2])
{
    for (int w = 0; w < 2; w++)
        cpu[w] = thread_cpu_ns(rw.tid[w]);
    *wall = (long long)mqs_now_ns();
}

/* How long the worker thread that lost most was off its CPU in round
 * i's window (post to R's run); LLONG_MAX when unmeasurable. */
static long long rt_off_cpu_ns(int i)
{
    long long worst = 0, wall = rw.wall_run[i] - rw.wall_post[i];
    for (int w = 0; w < 2; w++) {
        if (rw.cpu_post[i][w] < 0 || rw.cpu_run[i][w] < 0)
            return LLONG_MAX;
        long long off = wall - (rw.cpu_run[i][w] - rw.cpu_post[i][w]);
        worst = off > worst ? off : worst;
    }
    return worst;
}

static void *hog(void *arg)
{
    int w = (int)(intptr_t)arg;
    atomic_store(&rw.tid[w], (int)syscall(SYS_gettid)); /* worker's thread */
    while (!atomic_load(&rw.stop)) {
        atomic_fetch_add(&rw.iters[w], 1);
        CHECK_OK(mqs_yield());
    }
    return NULL;
}

static void *rt_measured(void *arg)
{
    (void)arg;
    for (int i = 0; i < RT_ROUNDS; i++) {
        CHECK_OK(mqs_sem_wait(&rw.wake));
        for (int w = 0; w < 2; w++)
            rw.at_run[i][w] = atomic_load(&rw.iters[w]);
        rt_sample(&rw.wall_run[i], rw.cpu_run[i]);
        rw.ran_on[i] = mqs_worker_self();
        atomic_store(&rw.rounds_done, i + 1);
    }
    return NULL;
}

/* Involuntary context switches of a thread of this process so far. */
static long nonvoluntary_switches(int tid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    FILE *f = fopen(path, "r");
    long n = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

TEST(rt_waits_at_most_one_step_on_two_workers)
{
    mqs_runtime_t *rt = rt_new_policy(2);
    CHECK_OK(mqs_sem_init(&rw.wake, 0));
    mqs_task_t *hogs[2 * HOGS];
    for (int i = 0; i < 2 * HOGS; i++)
        hogs[i] = spawn_on(rt, i % 2, hog, (void *)(intptr_t)(i % 2));
    while (!atomic_load(&rw.tid[0]) || !atomic_load(&rw.tid[1]))
        sched_yield();
    mqs_task_t *r = spawn_prio(rt, MQS_CLASS_FIFO, 10, rt_measured, NULL);
    static bool disturbed[RT_ROUNDS];
    for (int i = 0; i < RT_ROUNDS; i++) {
        long nv0 = nonvoluntary_switches(rw.tid[0]);
        long nv1 = nonvoluntary_switches(rw.tid[1]);
        rt_sample(&rw.wall_post[i], rw.cpu_post[i]);
        CHECK_OK(mqs_sem_post(&rw.wake)); /* from outside the runtime */
        for (int w = 0; w < 2; w++)
            rw.after_post[i][w] = atomic_load(&rw.iters[w]);
        wait_count(&rw.rounds_done, i + 1);
        disturbed[i] = nv0 < 0 || nv0 != nonvoluntary_switches(rw.tid[0]) ||
                       nv1 != nonvoluntary_switches(rw.tid[1]) ||
                       rt_off_cpu_ns(i) > RT_OFF_CPU_NS;
    }
    join(r);
    atomic_store(&rw.stop, 1);
    for (int i = 0; i < 2 * HOGS; i++)
        join(hogs[i]);
    CHECK_OK(mqs_runtime_destroy(rt));

    unsigned long long max[2] = {0, 0}, sum[2] = {0, 0}, worst_disturbed = 0;
    int max_round[2] = {0, 0}, on[2] = {0, 0}, clean = 0;
    long long kept_off = 0;
    for (int i = 0; i < RT_ROUNDS; i++) {
        on[rw.ran_on[i]]++;
        clean += !disturbed[i];
        if (!disturbed[i] && rt_off_cpu_ns(i) > kept_off)
            kept_off = rt_off_cpu_ns(i);
        for (int w = 0; w < 2; w++) {
            unsigned long long d = rw.at_run[i][w] > rw.after_post[i][w]
                                       ? rw.at_run[i][w] - rw.after_post[i][w]
                                       : 0;
            if (disturbed[i]) {
                if (d > worst_disturbed)
                    worst_disturbed = d;
                continue;
            }
            sum[w] += d;
            if (d > max[w]) {
                max[w] = d;
                max_round[w] = i;
            }
        }
    }
    fprintf(stderr,
            "  RT ran on worker 0/1: %d/%d times; %d of %d rounds without OS "
            "preemption of a worker; in those, hog scheduling points while it "
            "was runnable: worker 0 max %llu (round %d, mean %.2f), worker 1 "
            "max %llu (round %d, mean %.2f); worst in preempted rounds %llu; "
            "most CPU time a worker lost in a kept round %lld us\n",
            on[0], on[1], clean, RT_ROUNDS, max[0], max_round[0],
            clean ? (double)sum[0] / clean : 0.0, max[1], max_round[1],
            clean ? (double)sum[1] / clean : 0.0, worst_disturbed,
            kept_off / 1000);
    if (clean < RT_MIN_CLEAN) {
        fprintf(stderr, "  inconclusive: the machine preempted the workers "
                        "in almost every round\n");
        return;
    }
#ifdef MQS_TSAN
    /* Under TSan a hog's iteration is many times slower and the rounds
     * it judged clean still failed twice in CI beside other jobs (6 and
     * 5 hog points, bound 3), on a host whose vCPU steal the guest does
     * not see (docs/notes.md): the bound is checked in the other builds;
     * here R running at all is. */
    fprintf(stderr, "  step bound not checked under TSan\n");
    return;
#endif
    CHECK_LE(max[0], RT_STEP_BOUND);
    CHECK_LE(max[1], RT_STEP_BOUND);
}


/*
 * An RT task queued on a worker that a more urgent RT task holds (it
 * spins without a scheduling point) while the other worker runs normal
 * hogs: that worker must take it at its next scheduling points, not run
 * hogs until the blocker is done (invariant 2 in docs/design.md, "a worker it
 * may use").  R is placed there by making it last run on worker 0 and waking
 * it from outside the runtime (the default placement then prefers its
 * last worker; a policy that places it on worker 1 directly passes).  The
 * count is of hog scheduling points on worker 1 between the post and R
 * running; rounds in which worker 1's thread was preempted by the host
 * are left out, as above.  R keeps preemption off from announcing itself
 * to being woken: the blocker's wake-up asks worker 0 to stop R, and a
 * task stopped by the signal may resume only on the worker it stopped on
 * (invariant 7), so a stop landing before R blocks left it pinned behind
 * the blocker for the whole round (seen under ASan; reproduced by
 * widening that window).  This case is about a woken task.
 */
#define PULL_ROUNDS 40
#define PULL_MIN_CLEAN 5

struct rtpull {
    atomic_ullong iters;
    atomic_int stop, blocker_spinning, ready, rounds_done, timed_out;
    atomic_int tid;
    mqs_sem_t wake_r, wake_b;
    mqs_mask_t only0, both;
    unsigned long long after_post[PULL_ROUNDS], at_run[PULL_ROUNDS];
};
static struct rtpull rp;

static void *pull_hog(void *arg)
{
    (void)arg;
    atomic_store(&rp.tid, (int)syscall(SYS_gettid));
    while (!atomic_load(&rp.stop)) {
        atomic_fetch_add(&rp.iters, 1);
        CHECK_OK(mqs_yield());
    }
    return NULL;
}

/* RT 50 on worker 0: spins while R waits, at most ~2 s per round. */
static void *pull_blocker(void *arg)
{
    (void)arg;
    for (int i = 0; i < PULL_ROUNDS; i++) {
        CHECK_OK(mqs_sem_wait(&rp.wake_b));
        if (atomic_load(&rp.timed_out))
            break; /* released after a failed round */
        atomic_store(&rp.blocker_spinning, 1);
        uint64_t end = mqs_now_ns() + 2000000000ull;
        while (atomic_load(&rp.rounds_done) <= i && mqs_now_ns() < end)
            ;
        if (atomic_load(&rp.rounds_done) <= i)
            atomic_store(&rp.timed_out, 1);
        atomic_store(&rp.blocker_spinning, 0);
    }
    return NULL;
}

/* RT 10: last runs on worker 0, then may run anywhere. */
static void *pull_r(void *arg)
{
    (void)arg;
    for (int i = 0; i < PULL_ROUNDS && !atomic_load(&rp.timed_out); i++) {
        CHECK_OK(mqs_task_set_affinity(mqs_self(), &rp.only0));
        CHECK_OK(mqs_yield()); /* moves to worker 0 */
        CHECK_EQ(mqs_worker_self(), 0);
        CHECK_OK(mqs_task_set_affinity(mqs_self(), &rp.both));
        /* Blocked, not stopped, when the blocker takes worker 0: a stop
         * there would pin R to it (invariant 7). */
        mqs_preempt_disable();
        atomic_store(&rp.ready, i + 1);
        CHECK_OK(mqs_sem_wait(&rp.wake_r));
        rp.at_run[i] = atomic_load(&rp.iters);
        atomic_store(&rp.rounds_done, i + 1);
        mqs_preempt_enable();
        while (atomic_load(&rp.blocker_spinning)) /* worker 0 is free again */
            CHECK_OK(mqs_yield());
    }
    return NULL;
}

TEST(rt_pulled_from_busy_worker)
{
    if (!claimed(props()->rt_pull, "pulling RT tasks from a busy worker"))
        return;
    mqs_runtime_t *rt = rt_new_policy(2);
    CHECK_OK(mqs_sem_init(&rp.wake_r, 0));
    CHECK_OK(mqs_sem_init(&rp.wake_b, 0));
    mqs_mask_zero(&rp.only0);
    mqs_mask_set(&rp.only0, 0);
    rp.both = rp.only0;
    mqs_mask_set(&rp.both, 1);
    mqs_task_t *hogs[HOGS];
    for (int i = 0; i < HOGS; i++)
        hogs[i] = spawn_on(rt, 1, pull_hog, NULL);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.sched_class = MQS_CLASS_FIFO;
    a.rt_priority = 50;
    a.affinity = &rp.only0;
    mqs_task_t *b = spawn_attr(rt, &a, pull_blocker, NULL);
    mqs_task_t *r = spawn_prio(rt, MQS_CLASS_FIFO, 10, pull_r, NULL);
    while (!atomic_load(&rp.tid))
        sched_yield();
    static bool disturbed[PULL_ROUNDS];
    int rounds = 0;
    while (rounds < PULL_ROUNDS && !atomic_load(&rp.timed_out)) {
        int i = rounds++;
        wait_count(&rp.ready, i + 1);
        CHECK_OK(mqs_sem_post(&rp.wake_b));
        wait_count(&rp.blocker_spinning, 1);
        long nv = nonvoluntary_switches(rp.tid);
        CHECK_OK(mqs_sem_post(&rp.wake_r));
        rp.after_post[i] = atomic_load(&rp.iters);
        wait_count(&rp.rounds_done, i + 1);
        disturbed[i] = nv < 0 || nv != nonvoluntary_switches(rp.tid);
    }
    if (atomic_load(&rp.timed_out)) /* the blocker waits for a round */
        CHECK_OK(mqs_sem_post(&rp.wake_b));
    join(r);
    join(b);
    atomic_store(&rp.stop, 1);
    for (int i = 0; i < HOGS; i++)
        join(hogs[i]);
    CHECK_OK(mqs_runtime_destroy(rt));
    unsigned long long max = 0;
    int clean = 0;
    for (int i = 0; i < rounds; i++) {
        unsigned long long d =
            rp.at_run[i] > rp.after_post[i] ? rp.at_run[i] - rp.after_post[i] : 0;
        if (disturbed[i])
            continue;
        clean++;
        max = d > max ? d : max;
    }
    fprintf(stderr, "  %d of %d rounds without host preemption of worker 1; "
            "hog scheduling points there while R waited: max %llu; R was "
            "left waiting for the blocker: %s\n", clean, rounds, max,
            atomic_load(&rp.timed_out) ? "yes" : "no");
    CHECK(!atomic_load(&rp.timed_out));
    if (clean < PULL_MIN_CLEAN) {
        fprintf(stderr, "  inconclusive: the host preempted worker 1 in "
                        "almost every round\n");
        return;
    }
    CHECK_LE(max, RT_STEP_BOUND);
}

/*
 * Realtime order over spinners.  The cases above hold the worker with
 * preemption disabled or let hogs yield; here the normal tasks spin
 * without ever calling the runtime and without disabling preemption, so
 * only a stop lets an RT task run (docs/design.md, preemption).  Each
 * wait for an RT task is bounded by SPIN_RT_WAIT_NS, after which the
 * spinners are released and the case fails instead of hanging.
 */
#define SPIN_RT_WAIT_NS 5000000000ull
#define SPIN_RT_ROUNDS 100

struct spinrt {
    atomic_int release, spinning, rounds_done;
    atomic_ullong spins[2];
    mqs_sem_t wake;
    mqs_task_t *queued[16];
    int nqueued, ran_while_spinning, ran_on[2];
};
static struct spinrt sr;

/* Computes until released: no call into the runtime, no disable. */
static void *rt_spinner(void *arg)
{
    int w = (int)(intptr_t)arg;
    atomic_fetch_add(&sr.spinning, 1);
    while (!atomic_load(&sr.release))
        atomic_fetch_add(&sr.spins[w & 1], 1);
    log_event(w < 2 ? NORMAL_A : NORMAL_B);
    return NULL;
}

/* Wait (outside the runtime) until *c reaches v or SPIN_RT_WAIT_NS has
 * passed; false on the timeout. */
static bool wait_count_bounded(atomic_int *c, int v)
{
    uint64_t end = mqs_now_ns() + SPIN_RT_WAIT_NS;
    while (atomic_load(c) < v)
        if (mqs_now_ns() > end)
            return false;
        else
            sched_yield();
    return true;
}

/* FIFO 99: runs only if the spinner is stopped; queues RT tasks in a
 * scrambled priority order (three at one priority: FIFO among them) and
 * a normal task, all below it, then ends.  Log value = priority * 10 +
 * arrival, as in rt_order_one_worker. */
static void *rt_gate(void *arg)
{
    mqs_runtime_t *rt = arg;
    static const int prios[] = {30, 98, 1, 70, 40, 50, 40, 10, 40};
    int seq40 = 0;
    for (size_t i = 0; i < sizeof prios / sizeof prios[0]; i++) {
        int v = prios[i] * 10 + (prios[i] == 40 ? seq40++ : 0);
        sr.queued[sr.nqueued++] =
            spawn_prio(rt, i % 2 ? MQS_CLASS_RR : MQS_CLASS_FIFO, prios[i],
                       log_arg, (void *)(intptr_t)v);
    }
    sr.queued[sr.nqueued++] =
        spawn(rt, rt_spinner, (void *)(intptr_t)2); /* logs NORMAL_B */
    return NULL;
}

/* One worker held by a spinner: an RT task arriving from outside stops
 * it, and the RT tasks it queues run in priority order before either
 * normal task runs again. */
TEST(rt_order_over_a_spinner_one_worker)
{
    if (!spinners_stoppable())
        return;
    mqs_runtime_t *rt = rt_new_policy(1);
    mqs_task_t *s = spawn(rt, rt_spinner, (void *)(intptr_t)0);
    wait_count(&sr.spinning, 1);
    mqs_task_t *g = spawn_prio(rt, MQS_CLASS_FIFO, 99, rt_gate, rt);
    bool ran = wait_count_bounded(&order_n, 9);
    if (!ran)
        fprintf(stderr, "  the RT tasks did not run while a normal task "
                        "spun: %d of 9 logged\n", atomic_load(&order_n));
    atomic_store(&sr.release, 1);
    join(g);
    join(s);
    for (int i = 0; i < sr.nqueued; i++)
        join(sr.queued[i]);
    CHECK_OK(mqs_runtime_destroy(rt));
    print_log();
    CHECK(ran);
    static const int expect[] = {980, 700, 500, 400, 401, 402, 300, 100, 10};
    CHECK_EQ(atomic_load(&order_n), 11);
    for (int i = 0; i < 9; i++)
        CHECK_EQ(order_log[i], expect[i]);
    CHECK((order_log[9] == NORMAL_A && order_log[10] == NORMAL_B) ||
          (order_log[9] == NORMAL_B && order_log[10] == NORMAL_A));
}

/* FIFO 10, free to run on either worker: counts the rounds it ran in
 * while both spinners still spun. */
static void *rt_woken_among_spinners(void *arg)
{
    (void)arg;
    for (int i = 0; i < SPIN_RT_ROUNDS; i++) {
        CHECK_OK(mqs_sem_wait(&sr.wake));
        if (atomic_load(&sr.release))
            break; /* released after a failed round */
        int w = mqs_worker_self();
        CHECK(w == 0 || w == 1);
        sr.ran_on[w & 1]++;
        sr.ran_while_spinning++;
        atomic_store(&sr.rounds_done, i + 1);
    }
    return NULL;
}

/* Two workers, each held by a spinner pinned to it: an RT task woken from
 * outside runs every time, while both still spin (the policy stops one of
 * them; which one is its choice). */
TEST(rt_woken_runs_while_every_worker_spins)
{
    if (!spinners_stoppable())
        return;
    mqs_runtime_t *rt = rt_new_policy(2);
    CHECK_OK(mqs_sem_init(&sr.wake, 0));
    mqs_task_t *s0 = spawn_on(rt, 0, rt_spinner, (void *)(intptr_t)0);
    mqs_task_t *s1 = spawn_on(rt, 1, rt_spinner, (void *)(intptr_t)1);
    mqs_task_t *r = spawn_prio(rt, MQS_CLASS_FIFO, 10,
                               rt_woken_among_spinners, NULL);
    wait_count(&sr.spinning, 2);
    int rounds = 0;
    bool ok = true;
    for (; rounds < SPIN_RT_ROUNDS && ok; rounds++) {
        CHECK_OK(mqs_sem_post(&sr.wake)); /* from outside the runtime */
        ok = wait_count_bounded(&sr.rounds_done, rounds + 1);
    }
    unsigned long long spins[2] = {atomic_load(&sr.spins[0]),
                                   atomic_load(&sr.spins[1])};
    atomic_store(&sr.release, 1);
    if (!ok)
        CHECK_OK(mqs_sem_post(&sr.wake)); /* let R see the release */
    join(r);
    join(s0);
    join(s1);
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_OK(mqs_sem_destroy(&sr.wake));
    fprintf(stderr, "  RT ran %d of %d rounds while both workers spun "
            "(on worker 0/1: %d/%d); spinner loops %llu / %llu\n",
            sr.ran_while_spinning, rounds, sr.ran_on[0], sr.ran_on[1],
            spins[0], spins[1]);
    CHECK(ok);
    CHECK_EQ(sr.ran_while_spinning, SPIN_RT_ROUNDS);
    CHECK_GT(spins[0], 0);
    CHECK_GT(spins[1], 0);
}

/* ------------------------------------------------------------------ */
/* 3. No starvation, weights                                           */
/* ------------------------------------------------------------------ */

#define SHARE_MAX_TASKS 16
#define SHARE_WORKERS 2 /* the share cases run on one or two workers */

struct share {
    atomic_int go;
    atomic_int where[SHARE_MAX_TASKS]; /* the worker each waits on, -1 */
    atomic_long total;
    long limit;
    uint64_t work_ns; /* CPU burnt per step before yielding */
    long count[SHARE_MAX_TASKS];
    /* steps each task made on each worker (written by the task as it
     * ends, like count) */
    long wcount[SHARE_MAX_TASKS][SHARE_WORKERS];
    int workers;
    long long worst_wait; /* the last run's: ns a worker waited for a CPU */
    uint64_t elapsed;     /* ... and its length */
};
static struct share sh;
/* The share tasks spin between steps instead of yielding (set by the
 * case, outside sh, which each run clears). */
static bool share_spin;

/*
 * A share task counts its steps in locals and takes them from sh.total
 * SHARE_BATCH at a time (the sum stays exactly sh.limit).  One
 * fetch_add per step on a line both workers write, and eight tasks'
 * counters in one line, made a two-worker step cost what the other
 * worker was doing at that moment: with exact accounting (run times
 * within 10 %), one o1 task made 57 ns steps and another on the same
 * worker 230 ns, and o1, whose slices leave one task running alone for
 * milliseconds at each epoch's end, turned that into shares of
 * 0.45 / 0.29 / 0.12 / 0.14 of a worker (shuffle.conformance.o1,
 * min/mean 0.32-0.47 in 4 of 28 runs).  Counted this way, 0.76-0.97 in
 * 40 runs: the count measures the policy, not the cache line.
 */
#define SHARE_BATCH 32

/* SPIN_ITERS dependent adds: a step of about 10-20 us of pure
 * computation, with no clock read (a stop that lands in the vDSO's
 * clock_gettime is put off) and no call into the runtime. */
#define SPIN_ITERS 10000

static unsigned spin_step(void)
{
    volatile unsigned sink = 0;
    for (unsigned k = 0; k < SPIN_ITERS; k++)
        sink += k;
    return sink;
}

static void *share_fn(void *arg)
{
    int i = (int)(intptr_t)arg;
    while (!atomic_load(&sh.go)) {
        atomic_store(&sh.where[i], mqs_worker_self());
        CHECK_OK(mqs_yield());
    }
    long cnt = 0, wc[SHARE_WORKERS] = {0}, left = 0;
    for (;;) {
        if (left == 0) {
            long got = atomic_fetch_add(&sh.total, SHARE_BATCH);
            if (got >= sh.limit)
                break;
            left = sh.limit - got < SHARE_BATCH ? sh.limit - got : SHARE_BATCH;
        }
        left--;
        cnt++;
        int w = mqs_worker_self();
        if (w >= 0 && w < SHARE_WORKERS)
            wc[w]++;
        if (share_spin) {
            (void)spin_step(); /* no scheduling point: only a stop */
            continue;
        }
        if (sh.work_ns)
            spin_ns(sh.work_ns);
        CHECK_OK(mqs_yield());
    }
    sh.count[i] = cnt;
    for (int w = 0; w < SHARE_WORKERS; w++)
        sh.wcount[i][w] = wc[w];
    return NULL;
}

static atomic_int probe_tid;

static void *tid_probe(void *arg)
{
    (void)arg;
    atomic_store(&probe_tid, (int)syscall(SYS_gettid));
    return NULL;
}

/* The OS thread ids of the workers (a pinned probe task on each). */
static void worker_tids(mqs_runtime_t *rt, int n, int *tids)
{
    for (int w = 0; w < n; w++) {
        atomic_store(&probe_tid, 0);
        join(spawn_on(rt, w, tid_probe, NULL));
        tids[w] = atomic_load(&probe_tid);
    }
}

/* Nanoseconds a thread of this process has spent runnable but waiting
 * for a CPU (second field of its schedstat), or -1. */
static long long os_wait_ns(int tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    FILE *f = fopen(path, "r");
    unsigned long long run, wait;
    int ok = f && fscanf(f, "%llu %llu", &run, &wait) == 2;
    if (f)
        fclose(f);
    return ok ? (long long)wait : -1;
}

#define SPLIT_WAIT_NS 2000000000ull

/*
 * Under the random-schedule mode the tasks start where a coin put them
 * (5/3, 6/2 on two workers), and the count should measure the policy's
 * shares, not the first moments of its balancer: wait, while the tasks
 * yield, until each worker has its even part of them, at most
 * SPLIT_WAIT_NS; then the count goes ahead and says what the split
 * cost (a fixed 50 ms had left cfs a 5/3 split and a share under the
 * bound once in 12 runs; o1 moves tasks that yield in a loop, always
 * cache-hot, at its third periodic look, 600 ms in).  A policy that may
 * keep a split between busy workers (no_busy_balance) is not checked
 * under the mode.
 */
static void wait_even_split(int workers, int ntasks)
{
    uint64_t t0 = mqs_now_ns();
    int per[MQS_MAX_WORKERS];
    for (;;) {
        memset(per, 0, sizeof per);
        bool placed = true;
        for (int i = 0; i < ntasks; i++) {
            int w = atomic_load(&sh.where[i]);
            if (w < 0 || w >= workers)
                placed = false;
            else
                per[w]++;
        }
        int lo = ntasks, hi = 0;
        for (int w = 0; w < workers; w++) {
            lo = per[w] < lo ? per[w] : lo;
            hi = per[w] > hi ? per[w] : hi;
        }
        if (placed && hi - lo <= 1)
            return;
        if (mqs_now_ns() - t0 > SPLIT_WAIT_NS) {
            fprintf(stderr, "  split still uneven after %llu ms:",
                    SPLIT_WAIT_NS / 1000000);
            for (int w = 0; w < workers; w++)
                fprintf(stderr, " %d", per[w]);
            fprintf(stderr, "\n");
            return;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* Run the share loop; returns false when the OS gave the worker threads
 * unequal CPU: one waited for a CPU longer than another by more than a
 * tenth of the run (the counts then say more about the machine than
 * about the policy). */
static bool run_share_once(int workers, int ntasks, const int *nice,
                           long limit, uint64_t work_ns)
{
    memset(&sh, 0, sizeof sh);
    sh.workers = workers;
    for (int i = 0; i < SHARE_MAX_TASKS; i++)
        atomic_store(&sh.where[i], -1);
    sh.limit = limit;
    sh.work_ns = work_ns;
    mqs_runtime_t *rt = rt_new_policy(workers);
    int tids[MQS_MAX_WORKERS];
    long long wait0[MQS_MAX_WORKERS];
    worker_tids(rt, workers, tids);
    mqs_task_t *t[SHARE_MAX_TASKS];
    for (int i = 0; i < ntasks; i++)
        t[i] = spawn_prio(rt, MQS_CLASS_NORMAL, nice ? nice[i] : 0, share_fn,
                        (void *)(intptr_t)i);
    for (int w = 0; w < workers; w++)
        wait0[w] = os_wait_ns(tids[w]);
    if (workers > 1)
        wait_even_split(workers, ntasks);
    uint64_t t0 = mqs_now_ns();
    atomic_store(&sh.go, 1);
    for (int i = 0; i < ntasks; i++)
        join(t[i]);
    uint64_t elapsed = mqs_now_ns() - t0;
    long long worst = 0, least = -1;
    for (int w = 0; w < workers; w++) {
        long long d = os_wait_ns(tids[w]) - wait0[w];
        if (wait0[w] < 0)
            continue;
        if (d > worst)
            worst = d;
        if (least < 0 || d < least)
            least = d;
    }
    if (least < 0)
        least = 0;
    sh.worst_wait = worst;
    sh.elapsed = elapsed;
    CHECK_OK(mqs_runtime_destroy(rt));
    fprintf(stderr, "  %d workers, %d tasks, %ld steps of %llu ns:", workers,
            ntasks, limit, (unsigned long long)work_ns);
    for (int i = 0; i < ntasks; i++)
        fprintf(stderr, " %ld", sh.count[i]);
    fprintf(stderr,
            " (worker threads waited %.1f..%.1f of %.1f ms for a CPU)\n",
            least / 1e6, worst / 1e6, elapsed / 1e6);
    /* Unequal waits skew the counts between workers; waits over half the
     * run charge host preemption to whichever task a time-sliced policy
     * was running, which skews them between tasks. */
    return (worst - least) * 10 <= (long long)elapsed &&
           worst * 2 <= (long long)elapsed;
}

/*
 * Under tick accounting (mqs_accounting_exact() false: mq, o1 and ws
 * by default) a run is charged the ticks it straddles, not its
 * length: shares even out over many ticks, and a count that a fast loop
 * reaches in a few ticks says nothing about the policy.  Such a run is
 * repeated with its count scaled to last TICK_WINDOW_NS (300 ticks).
 */
#define TICK_WINDOW_NS 300000000ull

static bool tick_accounting(void)
{
    mqs_runtime_t *rt = rt_new_policy(1);
    bool tick = !mqs_accounting_exact(rt);
    CHECK_OK(mqs_runtime_destroy(rt));
    return tick;
}

/* The count that makes a run of `count` that took `elapsed` ns last
 * `window` ns (a tenth more, for the spread between runs). */
static long window_count_for(long count, uint64_t elapsed, uint64_t window)
{
    double f = (double)window * 1.1 / (double)(elapsed ? elapsed : 1);
    return f > 1 ? (long)((double)count * (f < 1000 ? f : 1000)) : count;
}

/* o1's nice-0 slice (2.6.0's, docs/policies/o1.md). */
#define O1_NICE0_SLICE_NS 102000000ull

/*
 * The time a share count needs under tick accounting: the tick window,
 * and under o1 three epochs as well.  An o1 epoch is every queued task's
 * slice once (~102 ms each at nice 0).  When slices are out of phase (a
 * random placement, a migration, the wait for an even split), a task
 * that spent its slice waits in the expired array until the others have
 * spent theirs, up to a slice each: a window under one epoch (four tasks
 * a worker: 408 ms) left one task at half of what the others on its
 * worker counted (shuffle.conformance.o1, seed 3, 362 ms: min/mean
 * 0.475) although the policy is fair over each epoch.
 */
static uint64_t share_window_ns(int workers, int ntasks)
{
    uint64_t w = TICK_WINDOW_NS;
    if (!strcmp(policy(), "o1")) {
        uint64_t per = (uint64_t)((ntasks + workers - 1) / workers);
        uint64_t epochs = 3 * per * O1_NICE0_SLICE_NS;
        if (epochs > w)
            w = epochs;
    }
    return w;
}

/* Spinners' runs last at least this long under every policy: the host
 * taking a worker thread's CPU for a few ms is charged to the task it
 * ran, which a yield loop spreads over all of them and a spinner's slice
 * does not (global's two-worker spinners: min/mean 0.39-0.55 over
 * 124 ms runs under ASan with 10-11 ms lost to the host). */
#define SPIN_WINDOW_NS 600000000ull

static bool run_share(int workers, int ntasks, const int *nice, long limit,
                      uint64_t work_ns)
{
    uint64_t window = share_window_ns(workers, ntasks);
    if (share_spin && window < SPIN_WINDOW_NS)
        window = SPIN_WINDOW_NS;
    bool ok = run_share_once(workers, ntasks, nice, limit, work_ns);
    /* On several workers too: a yield loop's count reached in 58 ms
     * judged where the balancer and the random schedule had left the
     * tasks at that moment, not a share (shuffle.conformance.eevdf,
     * exact accounting, 4/4 at the start: min/mean 0.448, one worker's
     * tasks at 0.11 of it). */
    for (int i = 0; i < 2 && sh.elapsed < window &&
                    (share_spin || workers > 1 || tick_accounting());
         i++) {
        limit = window_count_for(limit, sh.elapsed, window);
        fprintf(stderr, "  %s: again with %ld steps\n",
                share_spin         ? "spinners"
                : tick_accounting() ? "tick accounting"
                                    : "several workers",
                limit);
        ok = run_share_once(workers, ntasks, nice, limit, work_ns);
    }
    return ok;
}

/* The share loop on several workers, repeated while the machine disturbs
 * it; false if it never ran undisturbed. */
static bool run_share_undisturbed(int workers, int ntasks, long limit,
                                  uint64_t work_ns)
{
    for (int attempt = 0; attempt < 5; attempt++)
        if (run_share(workers, ntasks, NULL, limit, work_ns))
            return true;
    fprintf(stderr, "  inconclusive: the OS kept taking the workers' CPUs\n");
    return false;
}

/*
 * On several workers, each task's share is the part of each worker's
 * steps it made, summed over the workers: a worker makes steps at the
 * rate its thread gets a CPU, and on a paravirtualised host that rate
 * differs between workers in ways nothing else shows (the time the host
 * takes a vCPU away counts as run time in schedstat, no steal time is
 * reported): one worker made a third of the other's steps with both
 * threads' waits within 5 % of the run, and raw counts then judged the
 * host, not the policy.  min >= mean / 2 of these shares.
 */
static void check_fair_workers(int ntasks)
{
    double share[SHARE_MAX_TASKS], total = 0, min = 1e9;
    long wsteps[SHARE_WORKERS] = {0};
    for (int i = 0; i < ntasks; i++)
        for (int w = 0; w < sh.workers && w < SHARE_WORKERS; w++)
            wsteps[w] += sh.wcount[i][w];
    for (int i = 0; i < ntasks; i++) {
        share[i] = 0;
        for (int w = 0; w < sh.workers && w < SHARE_WORKERS; w++)
            if (wsteps[w])
                share[i] += (double)sh.wcount[i][w] / (double)wsteps[w];
        total += share[i];
        if (share[i] < min)
            min = share[i];
    }
    double mean = total / ntasks;
    fprintf(stderr, "  workers made");
    for (int w = 0; w < sh.workers && w < SHARE_WORKERS; w++)
        fprintf(stderr, " %ld", wsteps[w]);
    fprintf(stderr, " steps; shares of a worker:");
    for (int i = 0; i < ntasks; i++)
        fprintf(stderr, " %.3f", share[i]);
    fprintf(stderr, "\n  min/mean = %.3f\n", min / mean);
    CHECK(min * 2 >= mean);
}

static void check_fair(int ntasks)
{
    long sum = 0, min = sh.count[0];
    for (int i = 0; i < ntasks; i++) {
        sum += sh.count[i];
        if (sh.count[i] < min)
            min = sh.count[i];
    }
    double mean = (double)sum / ntasks;
    CHECK_EQ(sum, sh.limit);
    if (sh.workers > 1) {
        check_fair_workers(ntasks);
        return;
    }
    fprintf(stderr, "  min/mean = %.3f\n", min / mean);
    /* min >= mean / 2 */
    CHECK_GE(2 * min * ntasks, sum);
}

/* 1.2 M steps: ule's documented bound is one pass (every task's slice
 * once: 4 tasks x ~1 ms here), so a task may trail the others by up to a
 * pass, which only a window of several passes makes small.  At the 20-50
 * ns a yield costs in a plain build, 400 000 steps were about 2 to 4
 * passes: the lowest min/mean in 300 runs was 0.52 (after ule stopped
 * charging host preemption; before, 0.23), against 0.64 in 200 runs of
 * 1.2 M steps.  ~1 s more per policy under TSan. */
TEST(no_starvation_yield_loop_one_worker)
{
    run_share(1, 4, NULL, 1200000, 0);
    check_fair(4);
}

/* The two-worker shares need tasks split evenly, by the placement or by
 * balancing: a policy that does not balance busy workers keeps what a
 * random placement (MQS_SHUFFLE) made.  shuffle.conformance.ws found it:
 * 2 of 8 tasks on one worker got 0.49 of an equal share each.  (Go's
 * Gosched goes through the global queue; ws's yield stays local.) */
static bool split_even_claimed(void)
{
    return claimed(!props()->no_busy_balance || !test_shuffle_seed(),
                   "an even split of randomly placed tasks (MQS_SHUFFLE)");
}

TEST(no_starvation_yield_loop_two_workers)
{
    if (split_even_claimed() && run_share_undisturbed(2, 8, 800000, 0))
        check_fair(8);
}

TEST(no_starvation_with_work_two_workers)
{
    if (split_even_claimed() && run_share_undisturbed(2, 6, 12000, 20000))
        check_fair(6);
}

/*
 * The same shares with tasks that never call the runtime between steps:
 * only preemption (the monitor's stops at the policy's tick) shares the
 * worker, so the bound is the policy's with spinners, as include/mqs.h
 * promises it.  Under TSan asynchronous signals wait until the thread
 * calls into TSan, so spinners are never stopped there (docs/notes.md).
 */

/* 20 000 steps of 10-20 us: a few hundred ms, many ticks, many slices. */
TEST(no_starvation_spinners_one_worker)
{
    if (!spinners_stoppable())
        return;
    share_spin = true;
    run_share(1, 4, NULL, 20000, 0);
    check_fair(4);
}

TEST(no_starvation_spinners_two_workers)
{
    if (!spinners_stoppable() || !split_even_claimed())
        return;
    share_spin = true;
    if (run_share_undisturbed(2, 6, 30000, 0))
        check_fair(6);
}


/*
 * CPU time, not turns: on one worker a task that runs 200 us between
 * yields and two that run 10 us get about the same CPU time (the least
 * at least half the most).  Under tick accounting (mq, o1 and ws by
 * default) a run is charged the tick boundaries it straddles, which a
 * long run does proportionally more often.  A coarse clock that also
 * moved at every 61st scheduling point charged each run alike instead:
 * the 100 us task got twice the CPU of two 10 us ones.  A policy that
 * gives turns, not time (ws's FIFO, minimal), does not claim it.
 */
#define UNEQ_TASKS 3
static struct {
    atomic_int go, stop;
    uint64_t busy[UNEQ_TASKS];
} uq;
static const uint64_t uneq_run_ns[UNEQ_TASKS] = {200000, 10000, 10000};

static void *uneq_fn(void *arg)
{
    int i = (int)(intptr_t)arg;
    while (!atomic_load(&uq.go))
        CHECK_OK(mqs_yield());
    while (!atomic_load(&uq.stop)) {
        uint64_t t0 = mqs_now_ns();
        spin_ns(uneq_run_ns[i]);
        uq.busy[i] += mqs_now_ns() - t0;
        CHECK_OK(mqs_yield());
    }
    return NULL;
}

TEST(cpu_time_shared_between_unequal_runs_one_worker)
{
    if (!claimed(props()->time_shares, "CPU time shares between runs of "
                                       "unequal length"))
        return;
#ifdef MQS_TSAN
    /* Under TSan a switch (fiber switch, interceptors, the signal mask
     * set twice: src/switch.h) costs more than a 10 us run, and the
     * runs are charged it where the busy time below is not: o1 and mq
     * measured 2-3x for the 200 us task (CI, 656 against 303 ms).  The
     * shares are checked in the other builds. */
    fprintf(stderr, "  not checked under TSan: a switch costs more than "
                    "the short runs\n");
    return;
#endif
    memset(&uq, 0, sizeof uq);
    mqs_runtime_t *rt = rt_new_policy(1);
    mqs_task_t *t[UNEQ_TASKS];
    for (int i = 0; i < UNEQ_TASKS; i++)
        t[i] = spawn(rt, uneq_fn, (void *)(intptr_t)i);
    uint64_t window = share_window_ns(1, UNEQ_TASKS) * 2;
    atomic_store(&uq.go, 1);
    struct timespec ts = {(time_t)(window / 1000000000u),
                          (long)(window % 1000000000u)};
    nanosleep(&ts, NULL);
    atomic_store(&uq.stop, 1);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < UNEQ_TASKS; i++) {
        join(t[i]);
        lo = uq.busy[i] < lo ? uq.busy[i] : lo;
        hi = uq.busy[i] > hi ? uq.busy[i] : hi;
        fprintf(stderr, "  %llu us a run: %.1f ms\n",
                (unsigned long long)uneq_run_ns[i] / 1000,
                (double)uq.busy[i] / 1e6);
    }
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_GE(2 * lo, hi);
}

/*
 * A pair of tasks that keep waking each other (a semaphore ping-pong)
 * beside PAIR_YIELDERS tasks that yield in a loop, on one worker: every
 * hand-off of the pair is a wake-up, the food of a LIFO slot or of a
 * sleeper bonus.  Each step of any of them counts one event; each yielder
 * must get at least 1/starve_div of an equal share of the events (of the
 * PAIR_YIELDERS + 2 tasks).  One worker, so the order is the policy's
 * alone and host load does not change the counts.
 */
#define PAIR_YIELDERS 6
#define PAIR_EVENTS 60000
#define PAIR_P (-1) /* pair_event's `who` for the pair's two tasks */
#define PAIR_Q (-2)
/* Events come every few hundred nanoseconds on the one worker, whichever
 * task makes them: a gap this long between two is the worker's thread
 * losing its CPU in a way its own CPU time does not show (below). */
#define PAIR_GAP_NS 500000
/* The shortest run checked under exact accounting (below). */
#define PAIR_WINDOW_NS 50000000ull
/* Runs at most, the last checked as it is (below). */
#define PAIR_ATTEMPTS 5

struct pairrun {
    mqs_sem_t p, q;
    atomic_int go, stop, holding;
    long limit, events, count[PAIR_YIELDERS], pair_count;
    int stopper;   /* who made the event that set stop */
    bool hold_q;   /* q lets p run between its post and its stop decision */
    atomic_long p_waits, q_posts; /* waits on p begun, posts of p made */
    atomic_int p_done;
    uint64_t last_ns;  /* the last event's time (0: none yet) */
    uint64_t stood_ns; /* gaps of PAIR_GAP_NS or more between two events */
};
static struct pairrun pr;

static void pair_setup(long limit, bool hold_q)
{
    memset(&pr, 0, sizeof pr);
    pr.limit = limit;
    pr.hold_q = hold_q;
    CHECK_OK(mqs_sem_init(&pr.p, 0));
    CHECK_OK(mqs_sem_init(&pr.q, 0));
}

static void pair_event(long *count, int who)
{
    uint64_t now = mqs_now_ns();
    if (pr.last_ns && now - pr.last_ns >= PAIR_GAP_NS)
        pr.stood_ns += now - pr.last_ns;
    pr.last_ns = now;
    (*count)++;
    if (++pr.events >= pr.limit && !atomic_load(&pr.stop)) {
        pr.stopper = who;
        atomic_store(&pr.stop, 1);
    }
}

static void *pair_yielder(void *arg)
{
    int i = (int)(intptr_t)arg;
    while (!atomic_load(&pr.go)) /* every task exists before counting */
        CHECK_OK(mqs_yield());
    while (!atomic_load(&pr.stop)) {
        pair_event(&pr.count[i], i);
        CHECK_OK(mqs_yield());
    }
    return NULL;
}

static void *pair_p(void *arg)
{
    (void)arg;
    while (!atomic_load(&pr.go))
        CHECK_OK(mqs_yield());
    for (;;) {
        CHECK_OK(mqs_sem_post(&pr.q));
        atomic_fetch_add(&pr.p_waits, 1);
        CHECK_OK(mqs_sem_wait(&pr.p));
        if (atomic_load(&pr.stop))
            break;
        pair_event(&pr.pair_count, PAIR_P);
    }
    atomic_store(&pr.p_done, 1);
    CHECK_OK(mqs_sem_post(&pr.q)); /* let q see stop */
    return NULL;
}

/* The widest window a wake-up preemption can open in pair_q: p runs a
 * whole round (reads stop, counts, posts q, waits again) between q's
 * post and q's next step. */
static void pair_hold(void)
{
    while (atomic_load(&pr.p_waits) <= atomic_load(&pr.q_posts) &&
           !atomic_load(&pr.p_done))
        CHECK_OK(mqs_yield());
}

/* q decides whether this is its last round before it posts p, and keeps
 * to it.  p reads stop only after that post and stop never goes back to
 * 0, so a q that stops leaves a p that stops too, and a q that goes on
 * waits for a post p still makes.  (Reading stop again after the post
 * let a wake-up preemption run p in between: p read 0 and waited, q
 * then read 1 and ended.) */
static void *pair_q(void *arg)
{
    (void)arg;
    for (;;) {
        CHECK_OK(mqs_sem_wait(&pr.q));
        bool stop = atomic_load(&pr.stop);
        if (!stop)
            pair_event(&pr.pair_count, PAIR_Q);
        atomic_fetch_add(&pr.q_posts, 1);
        CHECK_OK(mqs_sem_post(&pr.p));
        if (pr.hold_q)
            pair_hold();
        if (stop)
            break;
    }
    return NULL;
}

/* Join q, then p.  Once q has ended nobody posts p again: p must not
 * have begun a wait that q's posts do not answer (it would never end). */
static void pair_join(mqs_task_t *q, mqs_task_t *p)
{
    join(q);
    long waits = atomic_load(&pr.p_waits), posts = atomic_load(&pr.q_posts);
    CHECK_LE(waits, posts);
    join(p);
}

/* Holds the one worker until every task of the case is queued: they all
 * start from the same history (new, never run).  Without it the first
 * ones ran while the rest were being spawned, and ULE, which places by
 * sleep and run history, then kept the late ones on its next queue for a
 * whole slice: some yielders got no event in the window. */
static void *pair_holder(void *arg)
{
    (void)arg;
    atomic_store(&pr.holding, 1);
    mqs_preempt_disable();
    while (!atomic_load(&pr.go))
        ; /* no scheduling point: nothing else runs until go */
    mqs_preempt_enable();
    return NULL;
}

/* One run of the pair and the yielders on one worker; returns the
 * nanoseconds its thread waited for a CPU (the host's), and the run's
 * length in *elapsed. */
static long long pair_run(long events, uint64_t *elapsed)
{
    mqs_runtime_t *rt = rt_new_policy(1);
    int tid;
    worker_tids(rt, 1, &tid);
    pair_setup(events, false);
    mqs_task_t *hold = spawn(rt, pair_holder, NULL);
    wait_count(&pr.holding, 1);
    mqs_task_t *t[PAIR_YIELDERS + 2];
    t[0] = spawn(rt, pair_q, NULL);
    t[1] = spawn(rt, pair_p, NULL);
    for (int i = 0; i < PAIR_YIELDERS; i++)
        t[i + 2] = spawn(rt, pair_yielder, (void *)(intptr_t)i);
    long long wait0 = os_wait_ns(tid);
    uint64_t t0 = mqs_now_ns();
    atomic_store(&pr.go, 1);
    join(hold);
    pair_join(t[0], t[1]);
    for (int i = 2; i < PAIR_YIELDERS + 2; i++)
        join(t[i]);
    *elapsed = mqs_now_ns() - t0;
    long long waited = wait0 < 0 ? 0 : os_wait_ns(tid) - wait0;
    CHECK_OK(mqs_runtime_destroy(rt));
    return waited;
}

/* A run lasts at least a window: TICK_WINDOW_NS under tick accounting
 * (above), PAIR_WINDOW_NS under exact accounting, where PAIR_EVENTS take
 * about 10 ms: an equal share is then ~1.2 ms of CPU, so a gap under
 * PAIR_GAP_NS charged to one yielder (0.3-0.5 ms, not counted below)
 * cost it a third of its share, and one of 1.4 ms with smaller ones
 * beside it left the least yielder at 0.491 after three disturbed runs
 * (a CI run, docs/notes.md).  Over 50 ms such a gap costs a yielder a
 * tenth of its share at most.
 *
 * A run is repeated, up to PAIR_ATTEMPTS times in all, when its worker
 * waited for a CPU over a tenth of its length, as the nice cases are (with
 * another program on the machine's two CPUs the host's preemptions of
 * the worker, charged to whichever task ran, moved the least yielder to
 * 0.3 of its share), or when its worker stood still between events
 * (gaps of PAIR_GAP_NS or more, summed) long enough to hold a yielder
 * back for a quarter of the run: a task charged g waits while the seven
 * others each run g.  Such a gap is a hypervisor taking the vCPU: the
 * guest counts that time as the thread's CPU time (a loop of clock
 * reads saw 0.3-4 ms gaps with CPU time = wall time on the Intel VM), so
 * the core's stall check cannot leave it uncharged: a yielder charged
 * 0.6 ms got 0.24 of an equal share, another 0.43 after 1.45 ms, in 2 of
 * 400 quiet runs of about 10 ms here, each with such a gap; the runs
 * without one stayed above 1.08 (docs/notes.md).  The last run is
 * checked whatever it saw. */
TEST(no_starvation_against_wakeup_pair)
{
    long events = PAIR_EVENTS;
    bool tick = tick_accounting();
    uint64_t window = tick ? TICK_WINDOW_NS : PAIR_WINDOW_NS;
    for (int attempt = 0; attempt < PAIR_ATTEMPTS; attempt++) {
        uint64_t elapsed;
        long long waited = pair_run(events, &elapsed);
        if (elapsed < window) {
            events = window_count_for(events, elapsed, window);
            fprintf(stderr, "  %s: again with %ld events\n",
                    tick ? "tick accounting" : "exact accounting", events);
            waited = pair_run(events, &elapsed);
        }
        if ((uint64_t)waited * 10 <= elapsed &&
            pr.stood_ns * (PAIR_YIELDERS + 1) * 4 <= elapsed)
            break;
        fprintf(stderr,
                "  the worker waited %.1f of %.1f ms for a CPU and stood "
                "still %.2f ms between events%s\n",
                waited / 1e6, elapsed / 1e6, pr.stood_ns / 1e6,
                attempt < PAIR_ATTEMPTS - 1 ? ": again"
                                            : ": checked as it is");
    }
    long min = pr.count[0];
    fprintf(stderr, "  pair %ld events, yielders:", pr.pair_count);
    for (int i = 0; i < PAIR_YIELDERS; i++) {
        fprintf(stderr, " %ld", pr.count[i]);
        min = pr.count[i] < min ? pr.count[i] : min;
    }
    int div = props()->starve_div;
    fprintf(stderr,
            "; least yielder %.3f of an equal share (bound: %s%d); the "
            "worker stood still %.2f ms between events\n",
            (double)min * (PAIR_YIELDERS + 2) / (double)pr.events,
            div ? "1/" : "progress only, the policy's bound is in time; ",
            div, pr.stood_ns / 1e6);
    CHECK_GT(min, 0);
    /* min >= events / (tasks * div) */
    if (div)
        CHECK_GE(min * (PAIR_YIELDERS + 2) * div, pr.events);
}

/*
 * The pair alone, with q holding between its post of p and its stop
 * decision until p has run a whole round: what a wake-up preemption of
 * q (p woken more urgent than q) does, made certain.  The events
 * alternate q, p, q, ...: an even limit is reached by p inside that
 * window, with q still to decide.  q must then stop only if p stops
 * too (a q that read stop after its post ended while p waited for it:
 * the intermittent hang of global under TSan, docs/policies/global.md).
 */
TEST(wakeup_pair_stops_when_q_is_preempted)
{
    mqs_runtime_t *rt = rt_new_policy(1);
    pair_setup(200, true);
    mqs_task_t *q = spawn(rt, pair_q, NULL);
    mqs_task_t *p = spawn(rt, pair_p, NULL);
    atomic_store(&pr.go, 1);
    pair_join(q, p);
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(pr.stopper, PAIR_P); /* the window was the one tested */
    CHECK_EQ(pr.events, 200);
    CHECK_EQ(atomic_load(&pr.q_posts), 101);
}

#undef PAIR_P
#undef PAIR_Q

/* A policy that claims weights gives lower nice more CPU; one that does
 * not must not starve either side (ws and minimal ignore nice). */
static void check_nice(int ntasks)
{
    if (!props()->weights) {
        fprintf(stderr, "  policy %s ignores nice: checking no task is "
                        "starved instead\n", policy());
        check_fair(ntasks);
        return;
    }
    for (int i = 0; i + 1 < ntasks; i++)
        CHECK_GT(sh.count[i], sh.count[i + 1]);
    CHECK_GT(sh.count[ntasks - 1], 0); /* the highest nice is not starved */
}

/* The nice cases on one worker.  Host preemption inside a slice is
 * charged to that slice's task, and o1's slices (75-125 ms here) make
 * about two rounds of a run: a run whose worker waited for a CPU over a
 * tenth of its length is repeated, up to three times in all (it inverted
 * nice 0 and 5 with 36% of the run lost, notes).  The last run is
 * checked whatever it saw. */
static void run_share_nice(int ntasks, const int *nice, long limit,
                           uint64_t work_ns)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        run_share(1, ntasks, nice, limit, work_ns);
        if ((uint64_t)sh.worst_wait * 10 <= sh.elapsed)
            return;
        fprintf(stderr, "  the worker waited over a tenth of the run%s\n",
                attempt < 2 ? ": again" : ": checked as it is");
    }
}

TEST(nice_weights_order)
{
    static const int nice[] = {0, 10};
    /* about 0.5 s of CPU on one worker: many slices long */
    run_share_nice(2, nice, 25000, 20000);
    fprintf(stderr, "  nice 0 / nice 10 = %.2f\n",
            (double)sh.count[0] / (sh.count[1] ? sh.count[1] : 1));
    check_nice(2);
}

TEST(nice_weights_three_levels)
{
    static const int nice[] = {-5, 0, 5};
    run_share_nice(3, nice, 30000, 20000);
    check_nice(3);
}

/* The nice order with spinners: only stops share the worker, so the
 * weights hold for tasks that never call the runtime. */
TEST(nice_weights_order_spinners)
{
    if (!spinners_stoppable())
        return;
    share_spin = true;
    static const int nice[] = {0, 10};
    run_share_nice(2, nice, 20000, 0);
    fprintf(stderr, "  nice 0 / nice 10 = %.2f\n",
            (double)sh.count[0] / (sh.count[1] ? sh.count[1] : 1));
    check_nice(2);
}

/* ------------------------------------------------------------------ */
/* 4. Affinity                                                         */
/* ------------------------------------------------------------------ */

#define AFF_TASKS 24
#define AFF_WORKERS 4

struct aff {
    mqs_mask_t mask, mask2;
    uint64_t seed;
    int bad, steps;
    mqs_sem_t *mine, *partner;
};

static void *aff_fn(void *arg)
{
    struct aff *p = arg;
    uint64_t s = p->seed;
    for (int step = 0; step < 200; step++) {
        if (step == 100) {
            CHECK_OK(mqs_task_set_affinity(mqs_self(), &p->mask2));
            CHECK_OK(mqs_yield()); /* moves here */
        }
        const mqs_mask_t *m = step < 100 ? &p->mask : &p->mask2;
        if (!mqs_mask_isset(m, mqs_worker_self()))
            p->bad++;
        switch (rng_next(&s) % 3) {
        case 0:
            CHECK_OK(mqs_yield());
            break;
        case 1:
            CHECK_OK(mqs_sleep(rng_next(&s) % 20000));
            break;
        default:
            CHECK_OK(mqs_sem_post(p->partner));
            CHECK_OK(mqs_sem_wait(p->mine));
            break;
        }
        if (!mqs_mask_isset(m, mqs_worker_self()))
            p->bad++;
        p->steps++;
    }
    /* the partner may still wait for a token: leave enough of them */
    for (int i = 0; i < 200; i++)
        CHECK_OK(mqs_sem_post(p->partner));
    return NULL;
}

static void random_mask(mqs_mask_t *m, uint64_t *s)
{
    mqs_mask_zero(m);
    int n = 1 + (int)(rng_next(s) % 3);
    for (int k = 0; k < n; k++)
        mqs_mask_set(m, (int)(rng_next(s) % AFF_WORKERS));
}

TEST(affinity_masks_respected)
{
    uint64_t seed = conf_seed();
    mqs_runtime_t *rt = rt_new_policy(AFF_WORKERS);
    static struct aff a[AFF_TASKS];
    static mqs_sem_t sems[AFF_TASKS];
    mqs_task_t *t[AFF_TASKS];
    for (int i = 0; i < AFF_TASKS; i++)
        CHECK_OK(mqs_sem_init(&sems[i], 0));
    for (int i = 0; i < AFF_TASKS; i++) {
        uint64_t s = seed * 31 + (uint64_t)i;
        random_mask(&a[i].mask, &s);
        random_mask(&a[i].mask2, &s);
        if (i == 0) { /* one task only on the last worker */
            mqs_mask_zero(&a[i].mask);
            mqs_mask_set(&a[i].mask, AFF_WORKERS - 1);
        }
        a[i].seed = s;
        a[i].mine = &sems[i];
        a[i].partner = &sems[i ^ 1];
        mqs_task_attr_t at;
        mqs_task_attr_init(&at);
        at.affinity = &a[i].mask;
        t[i] = spawn_attr(rt, &at, aff_fn, &a[i]);
    }
    for (int i = 0; i < AFF_TASKS; i++) {
        join(t[i]);
        CHECK_EQ(a[i].steps, 200);
        if (a[i].bad)
            CHECK__FAIL("task %d ran %d times outside its mask", i, a[i].bad);
    }
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* 5. Shutdown                                                         */
/* ------------------------------------------------------------------ */

static atomic_int sd_done, sd_started;

static void *sd_worker(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (int k = 0; k < 10; k++)
        CHECK_OK(k % 2 ? mqs_yield() : mqs_sleep(1000 * (uint64_t)(i % 5)));
    atomic_fetch_add(&sd_done, 1);
    return NULL;
}

TEST(shutdown_waits_for_every_task)
{
    mqs_runtime_t *rt = rt_new_policy(2);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    for (int i = 0; i < 200; i++) {
        a.detached = i % 2;
        a.sched_class = i % 7 == 0 ? MQS_CLASS_RR : MQS_CLASS_NORMAL;
        a.rt_priority = 1 + i % 99;
        mqs_task_t *t;
        CHECK_OK(mqs_spawn(rt, &t, &a, sd_worker, (void *)(intptr_t)i));
    }
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(atomic_load(&sd_done), 200);
}

static void *sd_blocked(void *arg)
{
    atomic_fetch_add(&sd_started, 1);
    mqs_sem_wait(arg);
    CHECK__FAIL("blocked task woke up");
    return NULL;
}

static void *sd_sleeper(void *arg)
{
    (void)arg;
    atomic_fetch_add(&sd_started, 1);
    mqs_sleep(3600ull * 1000 * 1000 * 1000);
    CHECK__FAIL("sleeper woke up");
    return NULL;
}

static void *sd_spinner(void *arg)
{
    (void)arg;
    atomic_fetch_add(&sd_started, 1);
    for (;;)
        mqs_yield();
    return NULL;
}

TEST(shutdown_report_lists_every_live_task)
{
    mqs_runtime_t *rt = rt_new_policy(2);
    static mqs_sem_t sem;
    CHECK_OK(mqs_sem_init(&sem, 0));
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    char names[10][32];
    mqs_task_fn fns[10];
    for (int i = 0; i < 10; i++) {
        fns[i] = i < 5 ? sd_blocked : i < 8 ? sd_sleeper : sd_spinner;
        snprintf(names[i], sizeof names[i], "sd-%d", i);
        a.name = names[i];
        a.detached = i % 2;
        mqs_task_t *t;
        CHECK_OK(mqs_spawn(rt, &t, &a, fns[i], &sem));
    }
    wait_count(&sd_started, 10);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    int rc = mqs_runtime_destroy_ex(rt, MQS_DESTROY_REPORT, out);
    fclose(out);
    fprintf(stderr, "  report:\n%s", text);
    CHECK_EQ(rc, 10);
    for (int i = 0; i < 10; i++) {
        char needle[40];
        snprintf(needle, sizeof needle, "sd-%d", i);
        CHECK_STR_CONTAINS(text, needle);
    }
    int lines = 0;
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    CHECK_GE(lines, 10);
    free(text);
}

TEST(shutdown_deadlock_reported)
{
    mqs_runtime_t *rt = rt_new_policy(2);
    static mqs_sem_t sem;
    CHECK_OK(mqs_sem_init(&sem, 0));
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    static const char *names[] = {"dl-a", "dl-b", "dl-c"};
    for (int i = 0; i < 3; i++) {
        a.name = names[i];
        a.detached = true;
        CHECK_OK(mqs_spawn(rt, NULL, &a, sd_blocked, &sem));
    }
    wait_count(&sd_started, 3);
    struct capture c = stderr_begin();
    int rc = mqs_runtime_destroy(rt);
    char *text = stderr_end(c);
    fprintf(stderr, "  destroy said:\n%s", text);
    CHECK_ERR(rc, MQS_EDEADLK);
    for (int i = 0; i < 3; i++)
        CHECK_STR_CONTAINS(text, names[i]);
    free(text);
}

/* ------------------------------------------------------------------ */
/* 6. Bad input                                                        */
/* ------------------------------------------------------------------ */

static void *sem_then_ret(void *arg)
{
    CHECK_OK(mqs_sem_wait(arg));
    return NULL;
}

TEST(bad_input_changes_nothing)
{
    mqs_runtime_t *rt = rt_new_policy(2);
    const char *pn = policy();
    CHECK_EQ(strncmp(mqs_runtime_policy(rt), pn, strcspn(pn, ":")), 0);
    mqs_worker_stats_t s0, s1;
    CHECK_OK(mqs_runtime_stats(rt, &s0));

    mqs_task_attr_t a;
    mqs_task_t *t = NULL;
    mqs_task_attr_init(&a);
    a.nice = 20;
    CHECK_ERR(mqs_spawn(rt, &t, &a, ret_arg, NULL), MQS_EINVAL);
    mqs_task_attr_init(&a);
    a.sched_class = MQS_CLASS_FIFO;
    a.rt_priority = 0;
    CHECK_ERR(mqs_spawn(rt, &t, &a, ret_arg, NULL), MQS_EINVAL);
    mqs_mask_t m;
    mqs_mask_zero(&m);
    mqs_task_attr_init(&a);
    a.affinity = &m;
    CHECK_ERR(mqs_spawn(rt, &t, &a, ret_arg, NULL), MQS_EINVAL);
    mqs_mask_set(&m, 5);
    CHECK_ERR(mqs_spawn(rt, &t, &a, ret_arg, NULL), MQS_EINVAL);
    CHECK(t == NULL);
    CHECK_OK(mqs_runtime_stats(rt, &s1));
    CHECK_EQ(s1.spawns, s0.spawns);

    static mqs_sem_t sem;
    CHECK_OK(mqs_sem_init(&sem, 0));
    t = spawn_prio(rt, MQS_CLASS_RR, 7, sem_then_ret, &sem);
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_FIFO, 100), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_NORMAL, -21), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_affinity(t, &m), MQS_EINVAL);
    mqs_class_t c;
    int p;
    CHECK_OK(mqs_task_get_sched(t, &c, &p));
    CHECK_EQ(c, MQS_CLASS_RR);
    CHECK_EQ(p, 7);
    CHECK_OK(mqs_sem_post(&sem));
    join(t);
    CHECK_OK(mqs_runtime_destroy(rt));

    char spec[128];
    snprintf(spec, sizeof spec, "%.*s:no_such_tunable=1",
             (int)strcspn(pn, ":"), pn);
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.policy = spec;
    cfg.policy_ops = local_policy();
    char err[256] = "";
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    mqs_runtime_t *bad = NULL;
    CHECK_ERR(mqs_runtime_create(&bad, &cfg), MQS_ENOPOLICY);
    CHECK(bad == NULL);
    CHECK_STR_CONTAINS(err, "no_such_tunable");
}
