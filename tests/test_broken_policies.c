/*
 * test_broken_policies.c - deliberately broken policies that the core
 * must catch and report by the policy's name instead of hanging or
 * corrupting memory (sched_ext's selftests do the same), and the
 * config.policy_ops path that runs a policy table the registry does not
 * hold.
 *
 * Each broken policy is the minimal policy (minimal_policy.h) with one op
 * spoiled:
 *   foreign-pick  pick returns a task queued on another worker's queue
 *                 (caught by the core's check of what pick returns)
 *   lost-task     enqueue drops a task (caught by the stall watchdog)
 *   no-pick       pick never returns a task although some are queued
 *                 (caught by the stall watchdog)
 * and, in a build with the contract's checks (MQS_CONTRACT_CHECKS: this
 * file is also built as test_broken_policies_checked against the
 * mqs_checked library), three that only those checks catch:
 *   no-publish    enqueue links spawned tasks without mqs_rq_publish
 *                 (caught when the rq lock is released: the published
 *                 count is not what the core queued)
 *   unlocked-helper  balance calls mqs_rq_publish without the rq lock
 *                 (caught by the helper's owner-aware lock assertion)
 *   unlocked-hint balance gives the cache hint mqs_se_prefetch without
 *                 the rq lock (the same assertion)
 * Under the checks lost-task and foreign-pick are caught earlier, by the
 * published-count check (the dropped task, the task taken behind the
 * core's back, are still counted where the core queued them).
 * The runtime runs in a forked child with stderr on a pipe; the case
 * passes when the child dies of SIGABRT (what mqs__panic does) and its
 * last words name the policy and, for a stall, the task.  A child that
 * hangs is killed after CHILD_TIMEOUT_S and fails the case.  Positive
 * controls run the same harness on the unbroken minimal policy and on
 * tasks that legitimately wait (behind an RT task, behind a task that
 * never reaches a scheduling point) and expect a clean exit, so the
 * harness cannot pass by accident.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "helpers.h"
#include "minimal_policy.h"
#include "mqs.h"
#include "mqs/policy.h"

#define STALL_NS 200000000LL /* the watchdog bound in these runtimes */
#define CHILD_TIMEOUT_S 60

/* ------------------------------------------------------------------ */
/* The broken policies                                                 */
/* ------------------------------------------------------------------ */

/* pick: own queue first, else the other worker's head, without
 * mqs_rq_steal (trylock keeps it from deadlocking; it is still wrong). */
static struct mqs_sched_entity *foreign_pick(struct mqs_rq *rq)
{
    struct mqs_sched_entity *se = minimal_pop(rq);
    mqs_runtime_t *rt = mqs_rq_runtime(rq);
    for (int i = 0; !se && i < mqs_nr_workers(rt); i++) {
        struct mqs_rq *v = mqs_rq_of(rt, i);
        if (v == rq || !mqs_rq_trylock(v))
            continue;
        se = minimal_pop(v);
        mqs_rq_unlock(v);
    }
    return se;
}

static const struct mqs_policy foreign_pick_policy = {
    .name = "broken-foreign-pick",
    .enqueue = minimal_enqueue,
    .pick = foreign_pick,
};

/* enqueue: the second spawned task vanishes (the core has recorded it as
 * queued; the policy never links it). */
static atomic_int lost_new;

static void lost_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                         int flags)
{
    if ((flags & MQS_ENQ_NEW) && atomic_fetch_add(&lost_new, 1) == 1)
        return;
    minimal_enqueue(rq, se, flags);
}

static const struct mqs_policy lost_policy = {
    .name = "broken-lost-task",
    .enqueue = lost_enqueue,
    .pick = minimal_pick,
};

/* pick: nothing, ever; the queue is published, so workers spin. */
static struct mqs_sched_entity *no_pick(struct mqs_rq *rq)
{
    (void)rq;
    return NULL;
}

static const struct mqs_policy no_pick_policy = {
    .name = "broken-no-pick",
    .enqueue = minimal_enqueue,
    .pick = no_pick,
};

#ifdef MQS_CONTRACT_CHECKS
/* enqueue: a spawned task is linked but the queue's summary is left as it
 * was (the pick that takes it publishes again). */
static void no_publish_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                               int flags)
{
    if (!(flags & MQS_ENQ_NEW) || se->cls != MQS_CLASS_NORMAL) {
        minimal_enqueue(rq, se, flags);
        return;
    }
    int w = mqs_rq_worker(rq);
    mqs__list_add_tail(&minimal_q[w], &se->node); /* normal: the last rank */
    minimal_n[w]++;
}

static const struct mqs_policy no_publish_policy = {
    .name = "broken-no-publish",
    .enqueue = no_publish_enqueue,
    .pick = minimal_pick,
};

/* balance: republishes its queue's summary, unchanged, without the lock
 * (a balance op runs with no rq lock held). */
static int unlocked_balance(struct mqs_rq *rq, int why)
{
    (void)why;
    mqs_rq_publish(rq, mqs_rq_nr_queued(rq), mqs_rq_best_prio(rq));
    return 0;
}

static const struct mqs_policy unlocked_helper_policy = {
    .name = "broken-unlocked-helper",
    .enqueue = minimal_enqueue,
    .pick = minimal_pick,
    .balance = unlocked_balance,
};

/* enqueue: remembers an entity; balance: gives the cache hint for it
 * without the lock (the hint needs it: the entity must be queued there,
 * its stack pointer stable). */
static const struct mqs_sched_entity *_Atomic hinted;

static void hint_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                         int flags)
{
    atomic_store(&hinted, se);
    minimal_enqueue(rq, se, flags);
}

static int unlocked_hint_balance(struct mqs_rq *rq, int why)
{
    (void)why;
    const struct mqs_sched_entity *se = atomic_load(&hinted);
    if (se)
        mqs_se_prefetch(rq, se);
    return 0;
}

static const struct mqs_policy unlocked_hint_policy = {
    .name = "broken-unlocked-hint",
    .enqueue = hint_enqueue,
    .pick = minimal_pick,
    .balance = unlocked_hint_balance,
};
#endif

/* ------------------------------------------------------------------ */
/* Running a scenario in a child                                       */
/* ------------------------------------------------------------------ */

static mqs_runtime_t *rt_with(const struct mqs_policy *p, int workers)
{
    minimal_reset();
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = workers;
    cfg.policy_ops = p;
    cfg.stack_size = 64 * 1024;
    cfg.stall_ns = STALL_NS;
    return rt_create(&cfg);
}

static mqs_task_t *spawn_named(mqs_runtime_t *rt, const char *name,
                               mqs_class_t cls, int prio, mqs_task_fn fn,
                               void *arg)
{
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.name = name;
    a.sched_class = cls;
    if (cls == MQS_CLASS_NORMAL)
        a.nice = prio;
    else
        a.rt_priority = prio;
    return spawn_attr(rt, &a, fn, arg);
}

struct outcome {
    int status;      /* waitpid status */
    bool hung;       /* killed after CHILD_TIMEOUT_S */
    char text[4096]; /* what it wrote to stderr (the tail) */
};

/* Append what fd has to o->text, keeping the tail; false at EOF. */
static bool drain(int fd, struct outcome *o, size_t *len)
{
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0)
        return false;
    for (ssize_t i = 0; i < n; i++) {
        if (*len + 1 >= sizeof o->text) {
            memmove(o->text, o->text + 1024, *len - 1024);
            *len -= 1024;
        }
        o->text[(*len)++] = buf[i];
    }
    o->text[*len] = 0;
    return true;
}

static void run_child(void (*scenario)(void), struct outcome *o)
{
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        alarm(0);
        scenario();
        fflush(NULL);
        _exit(0);
    }
    close(fds[1]);
    memset(o, 0, sizeof *o);
    size_t len = 0;
    double end = check__now() + CHILD_TIMEOUT_S;
    for (;;) {
        struct pollfd p = {fds[0], POLLIN, 0};
        int left = (int)((end - check__now()) * 1000);
        if (left <= 0) {
            o->hung = true;
            kill(pid, SIGKILL);
            break;
        }
        if (poll(&p, 1, left) > 0 && !drain(fds[0], o, &len))
            break;
    }
    close(fds[0]);
    while (waitpid(pid, &o->status, 0) < 0)
        ;
    fprintf(stderr, "  child said: %s%s", o->text[0] ? o->text : "(nothing)\n",
            o->hung ? "  (hung: killed)\n" : "");
}

/* The child must have aborted with a message naming what it names. */
static void expect_abort(const struct outcome *o, const char *policy,
                         const char *task, const char *what)
{
    CHECK(!o->hung);
    CHECK(WIFSIGNALED(o->status));
    CHECK_EQ(WTERMSIG(o->status), SIGABRT);
    CHECK_STR_CONTAINS(o->text, "mqs: fatal: policy ");
    CHECK_STR_CONTAINS(o->text, policy);
    if (task)
        CHECK_STR_CONTAINS(o->text, task);
    CHECK_STR_CONTAINS(o->text, what);
}

static void expect_clean_exit(const struct outcome *o)
{
    CHECK(!o->hung);
    CHECK(WIFEXITED(o->status));
    CHECK_EQ(WEXITSTATUS(o->status), 0);
}

/* ------------------------------------------------------------------ */
/* Scenarios                                                           */
/* ------------------------------------------------------------------ */

static void *yield_a_few(void *arg)
{
    for (int i = 0; i < 100; i++)
        CHECK_OK(mqs_yield());
    return arg;
}

/* Worker 0 runs a task that holds it without a scheduling point (so its
 * queue's lock is free) while tasks pile up on its queue (pinned there):
 * the core kicks idle worker 1, whose foreign pick takes one. */
static void *hold_worker(void *arg)
{
    uint64_t end = mqs_now_ns() + 5000000000ull;
    mqs_preempt_disable(); /* the worker is ours, preemption or not */
    while (mqs_now_ns() < end)
        ;
    mqs_preempt_enable();
    return arg;
}

static void scenario_foreign_pick(void)
{
    mqs_runtime_t *rt = rt_with(&foreign_pick_policy, 2);
    mqs_task_t *h = spawn_on(rt, 0, hold_worker, NULL);
    mqs_task_t *t[8];
    for (int i = 0; i < 8; i++)
        t[i] = spawn_on(rt, 0, yield_a_few, NULL);
    join(h);
    for (int i = 0; i < 8; i++)
        join(t[i]);
    CHECK_OK(mqs_runtime_destroy(rt));
}

TEST(broken_pick_from_another_queue_is_caught)
{
    struct outcome o;
    run_child(scenario_foreign_pick, &o);
#ifdef MQS_CONTRACT_CHECKS
    expect_abort(&o, "broken-foreign-pick", NULL, "mqs_rq_publish whenever");
#else
    expect_abort(&o, "broken-foreign-pick", NULL, "not here");
#endif
}

static void scenario_lost(void)
{
    mqs_runtime_t *rt = rt_with(&lost_policy, 2);
    mqs_task_t *a = spawn_named(rt, "kept-task", MQS_CLASS_NORMAL, 0,
                                yield_a_few, NULL);
    mqs_task_t *b = spawn_named(rt, "dropped-task", MQS_CLASS_NORMAL, 0,
                                yield_a_few, NULL);
    join(a);
    join(b); /* never returns: the watchdog aborts */
    CHECK__FAIL("the lost task was joined");
}

TEST(broken_enqueue_losing_a_task_is_caught)
{
    struct outcome o;
    run_child(scenario_lost, &o);
#ifdef MQS_CONTRACT_CHECKS
    expect_abort(&o, "broken-lost-task", "after op enqueue",
                 "mqs_rq_publish whenever");
#else
    expect_abort(&o, "broken-lost-task", "dropped-task", "stall watchdog");
#endif
}

static void scenario_no_pick(void)
{
    mqs_runtime_t *rt = rt_with(&no_pick_policy, 1);
    join(spawn_named(rt, "never-run", MQS_CLASS_NORMAL, 0, yield_a_few,
                     NULL));
    CHECK__FAIL("a task ran under a policy that never picks");
}

TEST(broken_pick_never_choosing_is_caught)
{
    struct outcome o;
    run_child(scenario_no_pick, &o);
    expect_abort(&o, "broken-no-pick", "never-run", "stall watchdog");
}

#ifdef MQS_CONTRACT_CHECKS
/* Four tasks that yield a few times under policy p on n workers. */
static void yielders_under(const struct mqs_policy *p, int n)
{
    mqs_runtime_t *rt = rt_with(p, n);
    mqs_task_t *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = spawn(rt, yield_a_few, NULL);
    for (int i = 0; i < 4; i++)
        join(t[i]);
    CHECK_OK(mqs_runtime_destroy(rt));
}

static void scenario_no_publish(void)
{
    yielders_under(&no_publish_policy, 1);
}

TEST(broken_enqueue_without_publish_is_caught)
{
    struct outcome o;
    run_child(scenario_no_publish, &o);
    expect_abort(&o, "broken-no-publish", "after op enqueue",
                 "publish with mqs_rq_publish whenever the queue changes");
}

static void scenario_unlocked_helper(void)
{
    yielders_under(&unlocked_helper_policy, 2);
}

TEST(broken_helper_without_its_lock_is_caught)
{
    struct outcome o;
    run_child(scenario_unlocked_helper, &o);
    expect_abort(&o, "broken-unlocked-helper", "in op balance",
                 "mqs_rq_publish needs the rq lock held by the caller");
}

static void scenario_unlocked_hint(void)
{
    yielders_under(&unlocked_hint_policy, 2);
}

TEST(broken_prefetch_hint_without_its_lock_is_caught)
{
    struct outcome o;
    run_child(scenario_unlocked_hint, &o);
    expect_abort(&o, "broken-unlocked-hint", "in op balance",
                 "mqs_se_prefetch needs the rq lock held by the caller");
}
#endif

/* ----- positive controls: long waits that are not the policy's fault */

static void scenario_minimal(void)
{
    mqs_runtime_t *rt = rt_with(&minimal_policy, 2);
    CHECK_EQ(strcmp(mqs_runtime_policy(rt), "minimal"), 0);
    mqs_task_t *t[16];
    for (int i = 0; i < 16; i++)
        t[i] = spawn(rt, yield_a_few, (void *)(intptr_t)i);
    for (int i = 0; i < 16; i++)
        CHECK(join(t[i]) == (void *)(intptr_t)i);
    CHECK_OK(mqs_runtime_destroy(rt));
}

TEST(minimal_policy_runs_clean)
{
    struct outcome o;
    run_child(scenario_minimal, &o);
    expect_clean_exit(&o);
}

static atomic_int normal_ran;

static void *note_ran(void *arg)
{
    atomic_store(&normal_ran, 1);
    return arg;
}

/* An RT task that yields for 3 stall bounds keeps the normal task queued
 * behind it on the only worker: correct, so no report. */
static void *rt_yield_long(void *arg)
{
    uint64_t end = mqs_now_ns() + 3 * (uint64_t)STALL_NS;
    while (mqs_now_ns() < end)
        CHECK_OK(mqs_yield());
    CHECK_EQ(atomic_load(&normal_ran), 0);
    return arg;
}

/* A normal task that runs for 3 stall bounds without a scheduling point
 * holds its worker: not the policy's fault either. */
static void *spin_long(void *arg)
{
    uint64_t end = mqs_now_ns() + 3 * (uint64_t)STALL_NS;
    mqs_preempt_disable(); /* the worker is ours, preemption or not */
    while (mqs_now_ns() < end)
        ;
    mqs_preempt_enable();
    return arg;
}

static void scenario_legit_waits(void)
{
    mqs_runtime_t *rt = rt_with(&minimal_policy, 1);
    mqs_task_t *h = spawn_named(rt, "rt-hog", MQS_CLASS_FIFO, 10,
                                rt_yield_long, NULL);
    mqs_task_t *n = spawn_named(rt, "waits-for-rt", MQS_CLASS_NORMAL, 0,
                                note_ran, NULL);
    join(h);
    join(n);
    h = spawn_named(rt, "spinner", MQS_CLASS_NORMAL, 0, spin_long, NULL);
    n = spawn_named(rt, "waits-for-spinner", MQS_CLASS_NORMAL, 0, note_ran,
                    NULL);
    join(h);
    join(n);
    CHECK_OK(mqs_runtime_destroy(rt));
}

TEST(watchdog_ignores_legitimate_waits)
{
    struct outcome o;
    run_child(scenario_legit_waits, &o);
    expect_clean_exit(&o);
}

/* ------------------------------------------------------------------ */
/* config.policy_ops                                                   */
/* ------------------------------------------------------------------ */

static int create_err(mqs_config_t *cfg, char *err, size_t n)
{
    cfg->errbuf = err;
    cfg->errbuf_size = n;
    mqs_runtime_t *rt = NULL;
    int rc = mqs_runtime_create(&rt, cfg);
    CHECK(rc != 0 || rt != NULL);
    if (rc == 0)
        CHECK_OK(mqs_runtime_destroy(rt));
    return rc;
}

TEST(policy_ops_checked_and_resolved_by_name)
{
    static const struct mqs_policy no_pick_op = {
        .name = "half", .enqueue = minimal_enqueue};
    mqs_config_t cfg;
    char err[256] = "";
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 1;
    cfg.policy_ops = &no_pick_op;
    CHECK_ERR(create_err(&cfg, err, sizeof err), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, ".pick");
    /* a registered name still wins when it is what `policy` says */
    cfg.policy_ops = &minimal_policy;
    cfg.policy = "mq";
    minimal_reset();
    mqs_runtime_t *rt = rt_create(&cfg);
    CHECK_EQ(strcmp(mqs_runtime_policy(rt), "mq"), 0);
    CHECK_OK(mqs_runtime_destroy(rt));
    /* the custom one by its name; it has no tunables */
    cfg.policy = "minimal:slice_ns=5";
    CHECK_ERR(create_err(&cfg, err, sizeof err), MQS_ENOPOLICY);
    CHECK_STR_CONTAINS(err, "policy minimal has no tunable 'slice_ns'");
    cfg.policy = "no-such";
    CHECK_ERR(create_err(&cfg, err, sizeof err), MQS_ENOPOLICY);
    CHECK_STR_CONTAINS(err, "no-such");
    /* the stall bound is range-checked */
    cfg.policy = NULL;
    cfg.stall_ns = 5;
    CHECK_ERR(create_err(&cfg, err, sizeof err), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, "stall_ns");
}

TEST(stall_ns_config_and_environment)
{
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    CHECK_EQ(cfg.stall_ns, -1);
    cfg.ignore_env = true;
    CHECK_OK(mqs_config_resolve(&cfg, &out));
#ifdef NDEBUG
    CHECK_EQ(out.stall_ns, 0); /* release builds: off by default */
#else
    CHECK_EQ(out.stall_ns, 10000000000LL);
#endif
    cfg.stall_ns = 0;
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.stall_ns, 0);
    cfg.stall_ns = -1;
    cfg.ignore_env = false;
    setenv("MQS_STALL_NS", "250000000", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.stall_ns, 250000000);
    char err[256] = "";
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    static const char *const bad[] = {"abc", "-1", "999", "3600000000001"};
    for (int i = 0; i < 4; i++) {
        setenv("MQS_STALL_NS", bad[i], 1);
        CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
        CHECK_STR_CONTAINS(err, "MQS_STALL_NS");
    }
    unsetenv("MQS_STALL_NS");
}
