/*
 * test_badinput.c - every public runtime/task call given bad input returns
 * the documented error and changes nothing (invariant 6, docs/design.md).
 *
 * "Changes nothing" is checked through what can be observed: out-
 * parameters keep their old value, counters (spawns) do not move, a task
 * keeps its class/priority/affinity, the runtime keeps working and shuts
 * down cleanly (no hidden task).  Bad input to the sync objects and
 * channels is covered by test_sync.c and test_chan.c.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "helpers.h"
#include "mqs.h"
#include "mqs/policy.h"

#define SENTINEL ((void *)(uintptr_t)0x5a5a5a5a)

static uint64_t spawns_of(mqs_runtime_t *rt)
{
    mqs_worker_stats_t s;
    CHECK_OK(mqs_runtime_stats(rt, &s));
    return s.spawns;
}

static void *block_on(void *arg)
{
    CHECK_OK(mqs_sem_wait(arg));
    return arg;
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

/* cfg must be rejected by resolve, create and mqs_main with `code`, the
 * message naming `what`; nothing is created and fn never runs. */
static atomic_int main_ran;
static void *main_fn(void *arg)
{
    atomic_store(&main_ran, 1);
    return arg;
}

static void config_rejected(mqs_config_t *cfg, int code, const char *what,
                            const char *range)
{
    char err[512];
    cfg->errbuf = err;
    cfg->errbuf_size = sizeof err;
    mqs_config_t out;
    memset(&out, 0x5a, sizeof out);
    mqs_config_t copy = out;

    err[0] = 0;
    CHECK_ERR(mqs_config_resolve(cfg, &out), code);
    CHECK_STR_CONTAINS(err, what);
    if (range)
        CHECK_STR_CONTAINS(err, range);

    err[0] = 0;
    mqs_runtime_t *rt = SENTINEL;
    CHECK_ERR(mqs_runtime_create(&rt, cfg), code);
    CHECK(rt == SENTINEL);
    CHECK_STR_CONTAINS(err, what);

    err[0] = 0;
    void *res = SENTINEL;
    CHECK_ERR(mqs_main(cfg, main_fn, NULL, &res), code);
    CHECK_EQ(atomic_load(&main_ran), 0);
    CHECK(res == SENTINEL);

    /* "bad input changes nothing": resolve's out-parameter included */
    if (memcmp(&out, &copy, sizeof out) != 0)
        CHECK__FAIL("mqs_config_resolve wrote to *out although it failed "
                    "(out.workers = %d)",
                    out.workers);
}

TEST(config_bad_fields)
{
    mqs_config_t cfg;

    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = -1;
    config_rejected(&cfg, MQS_EINVAL, "workers", "256");
    cfg.workers = -100;
    config_rejected(&cfg, MQS_EINVAL, "workers", "256");
    cfg.workers = MQS_MAX_WORKERS + 1;
    config_rejected(&cfg, MQS_EINVAL, "workers", "256");

    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.pin = 2;
    config_rejected(&cfg, MQS_EINVAL, "pin", NULL);
    cfg.pin = -2;
    config_rejected(&cfg, MQS_EINVAL, "pin", NULL);

    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.stack_size = 16 * 1024 - 1;
    config_rejected(&cfg, MQS_EINVAL, "stack", "16");
    cfg.stack_size = 1;
    config_rejected(&cfg, MQS_EINVAL, "stack", "16");
    cfg.stack_size = ((size_t)1 << 30) + 1;
    config_rejected(&cfg, MQS_EINVAL, "stack", "16");

    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.guard_size = 1;
    config_rejected(&cfg, MQS_EINVAL, "guard", "page");

    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.idle_spin_ns = -2;
    config_rejected(&cfg, MQS_EINVAL, "idle_spin", NULL);
    cfg.idle_spin_ns = 1000000001;
    config_rejected(&cfg, MQS_EINVAL, "idle_spin", NULL);

    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.policy = "no-such-policy";
    config_rejected(&cfg, MQS_ENOPOLICY, "no-such-policy", NULL);
    cfg.policy = "";
    config_rejected(&cfg, MQS_ENOPOLICY, "policy", NULL);
}

TEST(config_bad_tunables)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.policy = "mq:no_such_tunable=1";
    config_rejected(&cfg, MQS_ENOPOLICY, "no_such_tunable", NULL);
    cfg.policy = "mq:=1";
    {
        char err[256];
        cfg.errbuf = err;
        cfg.errbuf_size = sizeof err;
        mqs_config_t out;
        int rc = mqs_config_resolve(&cfg, &out);
        CHECK(rc == MQS_EINVAL || rc == MQS_ENOPOLICY);
    }

    /* a real tunable of the policy with a value out of its range or not
     * a number */
    const struct mqs_policy *p = mqs_policy_find("mq");
    CHECK(p != NULL);
    CHECK(mqs_policy_find("no-such-policy") == NULL);
    if (!p->tunables || !p->tunables[0].name) {
        fprintf(stderr, "  (mq has no tunables: range check skipped)\n");
        return;
    }
    const struct mqs_tunable *t = &p->tunables[0];
    char spec[256];
    if (t->max < INT64_MAX) {
        snprintf(spec, sizeof spec, "mq:%s=%lld", t->name,
                 (long long)t->max + 1);
        cfg.policy = spec;
        config_rejected(&cfg, MQS_EINVAL, t->name, NULL);
    }
    if (t->min > INT64_MIN) {
        snprintf(spec, sizeof spec, "mq:%s=%lld", t->name,
                 (long long)t->min - 1);
        cfg.policy = spec;
        config_rejected(&cfg, MQS_EINVAL, t->name, NULL);
    }
    snprintf(spec, sizeof spec, "mq:%s=notanumber", t->name);
    cfg.policy = spec;
    config_rejected(&cfg, MQS_EINVAL, t->name, NULL);
    snprintf(spec, sizeof spec, "mq:%s", t->name); /* no value */
    cfg.policy = spec;
    {
        char err[256];
        cfg.errbuf = err;
        cfg.errbuf_size = sizeof err;
        mqs_config_t out;
        CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    }
    /* in range: accepted */
    snprintf(spec, sizeof spec, "mq:%s=%lld", t->name, (long long)t->def);
    cfg.policy = spec;
    mqs_config_t out;
    CHECK_OK(mqs_config_resolve(&cfg, &out));
}

TEST(config_bad_workers_env)
{
    static const char *bad[] = {"0", "-1", "-300", "257", "100000", "two"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("MQS_WORKERS", bad[i], 1);
        mqs_config_t cfg;
        mqs_config_init(&cfg);
        cfg.workers = 2; /* valid in the struct: the environment is not */
        config_rejected(&cfg, MQS_EINVAL, "MQS_WORKERS", "256");
    }
    /* ignore_env: the bad variable is not read */
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 2;
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.workers, 2);
}

TEST(config_null_pointers)
{
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    /* a NULL configuration means the defaults (as for mqs_main) */
    CHECK_OK(mqs_config_resolve(NULL, &out));
    CHECK_GE(out.workers, 1);
    CHECK_ERR(mqs_config_resolve(&cfg, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_runtime_create(NULL, &cfg), MQS_EINVAL);
    CHECK_ERR(mqs_main(&cfg, NULL, NULL, NULL), MQS_EINVAL);
}

TEST(config_small_errbuf_truncates)
{
    char err[8];
    memset(err, 'x', sizeof err);
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 1000;
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    mqs_runtime_t *rt = SENTINEL;
    CHECK_ERR(mqs_runtime_create(&rt, &cfg), MQS_EINVAL);
    CHECK(rt == SENTINEL);
    CHECK(memchr(err, 0, sizeof err) != NULL); /* terminated, no overflow */
}

/* ------------------------------------------------------------------ */
/* Spawn                                                               */
/* ------------------------------------------------------------------ */

static void spawn_rejected(mqs_runtime_t *rt, const mqs_task_attr_t *attr,
                           const char *why)
{
    uint64_t before = spawns_of(rt);
    mqs_task_t *t = SENTINEL;
    int rc = mqs_spawn(rt, &t, attr, ret_arg, NULL);
    if (rc != MQS_EINVAL)
        CHECK__FAIL("spawn with %s returned %d (%s), expected MQS_EINVAL", why,
                    rc, mqs_strerror(rc));
    CHECK(t == SENTINEL);
    CHECK_EQ(spawns_of(rt), before);
}

TEST(spawn_bad_attributes)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_task_attr_t a;

    static const int bad_nice[] = {-21, 20, -1000, 1000};
    for (size_t i = 0; i < 4; i++) {
        mqs_task_attr_init(&a);
        a.nice = bad_nice[i];
        spawn_rejected(rt, &a, "nice out of -20..19");
    }
    static const int bad_rt[] = {0, 100, -1, 1000};
    for (size_t i = 0; i < 4; i++) {
        mqs_task_attr_init(&a);
        a.sched_class = MQS_CLASS_FIFO;
        a.rt_priority = bad_rt[i];
        spawn_rejected(rt, &a, "FIFO priority out of 1..99");
        a.sched_class = MQS_CLASS_RR;
        spawn_rejected(rt, &a, "RR priority out of 1..99");
    }
    mqs_task_attr_init(&a);
    a.sched_class = (mqs_class_t)4;
    spawn_rejected(rt, &a, "class 4");
    a.sched_class = (mqs_class_t)-1;
    spawn_rejected(rt, &a, "class -1");

    mqs_mask_t m;
    mqs_mask_zero(&m);
    mqs_task_attr_init(&a);
    a.affinity = &m;
    spawn_rejected(rt, &a, "an empty mask");
    mqs_mask_set(&m, 2); /* only workers 0 and 1 exist */
    mqs_mask_set(&m, 255);
    spawn_rejected(rt, &a, "a mask of non-existent workers");

    mqs_task_attr_init(&a);
    a.stack_size = 16 * 1024 - 1;
    spawn_rejected(rt, &a, "a stack below 16 KiB");
    a.stack_size = 1;
    spawn_rejected(rt, &a, "a 1-byte stack");

    /* NULL runtime, NULL function, NULL out for a joinable task */
    mqs_task_attr_init(&a);
    uint64_t before = spawns_of(rt);
    mqs_task_t *t = SENTINEL;
    CHECK_ERR(mqs_spawn(NULL, &t, &a, ret_arg, NULL), MQS_EINVAL);
    CHECK(t == SENTINEL);
    CHECK_ERR(mqs_spawn(rt, &t, &a, NULL, NULL), MQS_EINVAL);
    CHECK(t == SENTINEL);
    CHECK_ERR(mqs_spawn(rt, NULL, &a, ret_arg, NULL), MQS_EINVAL);
    CHECK_EQ(spawns_of(rt), before);

    /* the limits themselves are fine */
    mqs_task_attr_init(&a);
    a.nice = -20;
    CHECK_OK(mqs_spawn(rt, &t, &a, ret_arg, NULL));
    CHECK_OK(mqs_join(t, NULL));
    a.nice = 19;
    a.stack_size = 16 * 1024;
    CHECK_OK(mqs_spawn(rt, &t, &a, ret_arg, NULL));
    CHECK_OK(mqs_join(t, NULL));
    mqs_task_attr_init(&a);
    a.sched_class = MQS_CLASS_RR;
    a.rt_priority = 99;
    mqs_mask_zero(&m);
    mqs_mask_set(&m, 1);
    mqs_mask_set(&m, 7); /* one existing worker is enough */
    a.affinity = &m;
    CHECK_OK(mqs_spawn(rt, &t, &a, ret_arg, NULL));
    CHECK_OK(mqs_join(t, NULL));
    a.sched_class = MQS_CLASS_FIFO;
    a.rt_priority = 1;
    a.affinity = NULL;
    a.detached = true;
    CHECK_OK(mqs_spawn(rt, NULL, &a, ret_arg, NULL));
    CHECK_EQ(spawns_of(rt), before + 4);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Join                                                                */
/* ------------------------------------------------------------------ */

static void *self_join(void *arg)
{
    (void)arg;
    void *res = SENTINEL;
    CHECK_ERR(mqs_join(mqs_self(), &res), MQS_EDEADLK);
    CHECK(res == SENTINEL);
    return (void *)(intptr_t)5;
}

struct dj {
    mqs_task_t *target;
    mqs_sem_t *sem;
    atomic_int joining;
    int rc;
};

/* Joins the target; the loser of the two joins releases the target, so
 * it stays alive (and its handle valid) until both joins were made. */
static void *second_joiner(void *arg)
{
    struct dj *p = arg;
    atomic_store(&p->joining, 1);
    p->rc = mqs_join(p->target, NULL);
    if (p->rc == MQS_ESTATE)
        CHECK_OK(mqs_sem_post(p->sem));
    return NULL;
}

TEST(join_bad)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    CHECK_ERR(mqs_join(NULL, NULL), MQS_EINVAL);

    /* self-join */
    mqs_task_t *t;
    CHECK_OK(mqs_spawn(rt, &t, &a, self_join, NULL));
    void *res = NULL;
    CHECK_OK(mqs_join(t, &res));
    CHECK(res == (void *)(intptr_t)5);

    /* a detached task (kept alive by a semaphore) */
    static mqs_sem_t sem;
    CHECK_OK(mqs_sem_init(&sem, 0));
    a.detached = true;
    CHECK_OK(mqs_spawn(rt, &t, &a, block_on, &sem));
    res = SENTINEL;
    CHECK_ERR(mqs_join(t, &res), MQS_EINVAL);
    CHECK(res == SENTINEL);
    CHECK_OK(mqs_sem_post(&sem));

    /* two joiners (a task and this thread): exactly one wins, the other
     * gets MQS_ESTATE while the winner's join is in progress, or
     * MQS_EINVAL once it is done (the handle is stale then).  A
     * semaphore of its own: on the one above, the target could take the
     * post meant for the detached task, the second joiner then found
     * the target gone (MQS_EINVAL) and posted nothing, and the detached
     * task was left blocked for destroy to call a deadlock (CI, once). */
    a.detached = false;
    static struct dj d;
    static mqs_sem_t sem2;
    CHECK_OK(mqs_sem_init(&sem2, 0));
    d.sem = &sem2;
    CHECK_OK(mqs_spawn(rt, &d.target, &a, block_on, &sem2));
    mqs_task_t *j;
    CHECK_OK(mqs_spawn(rt, &j, &a, second_joiner, &d));
    while (!atomic_load(&d.joining))
        sched_yield();
    int rc_main = mqs_join(d.target, NULL);
    if (rc_main != 0)
        CHECK_OK(mqs_sem_post(&sem2));
    CHECK_OK(mqs_join(j, NULL));
    bool lost_main = rc_main == MQS_ESTATE || rc_main == MQS_EINVAL;
    bool lost_task = d.rc == MQS_ESTATE || d.rc == MQS_EINVAL;
    if (!((rc_main == 0 && lost_task) || (lost_main && d.rc == 0)))
        CHECK__FAIL("two joins returned %d and %d: expected one 0 and one "
                    "MQS_ESTATE or MQS_EINVAL",
                    rc_main, d.rc);
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_OK(mqs_sem_destroy(&sem));
    CHECK_OK(mqs_sem_destroy(&sem2));
}

/* ------------------------------------------------------------------ */
/* Task-only calls outside a task                                      */
/* ------------------------------------------------------------------ */

TEST(task_only_calls_outside_a_task)
{
    CHECK_ERR(mqs_yield(), MQS_EPERM);
    CHECK_ERR(mqs_sleep(1000), MQS_EPERM);
    CHECK(mqs_self() == NULL);
    CHECK(mqs_runtime_self() == NULL);
    CHECK_EQ(mqs_worker_self(), -1);
    CHECK(mqs_key_get(0) == NULL);
    mqs_runtime_t *rt = rt_new(1);
    mqs_key_t k;
    CHECK_OK(mqs_key_create(rt, &k, NULL));
    CHECK_ERR(mqs_key_set(k, SENTINEL), MQS_EPERM);
    CHECK(mqs_key_get(k) == NULL);
    /* still outside a task while a runtime exists */
    CHECK_ERR(mqs_yield(), MQS_EPERM);
    CHECK_ERR(mqs_sleep(0), MQS_EPERM);
    CHECK_OK(mqs_key_delete(rt, k));
    CHECK_OK(mqs_runtime_destroy(rt));
}

static void *destroy_from_task(void *arg)
{
    CHECK_ERR(mqs_runtime_destroy(arg), MQS_EPERM);
    CHECK_ERR(mqs_runtime_destroy_ex(arg, MQS_DESTROY_REPORT, NULL),
              MQS_EPERM);
    CHECK_OK(mqs_yield()); /* the runtime still works */
    return SENTINEL;
}

TEST(destroy_from_a_task)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    mqs_task_t *t;
    CHECK_OK(mqs_spawn(rt, &t, &a, destroy_from_task, rt));
    void *res = NULL;
    CHECK_OK(mqs_join(t, &res));
    CHECK(res == SENTINEL);
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_ERR(mqs_runtime_destroy(NULL), MQS_EINVAL);
}

/* ------------------------------------------------------------------ */
/* Scheduling class and affinity changes                               */
/* ------------------------------------------------------------------ */

static void expect_sched(mqs_task_t *t, mqs_class_t cls, int prio)
{
    mqs_class_t c;
    int p;
    CHECK_OK(mqs_task_get_sched(t, &c, &p));
    CHECK_EQ(c, cls);
    CHECK_EQ(p, prio);
}

TEST(set_sched_bad)
{
    mqs_runtime_t *rt = rt_new(2);
    static mqs_sem_t sem;
    CHECK_OK(mqs_sem_init(&sem, 0));
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.nice = 3;
    mqs_task_t *t;
    CHECK_OK(mqs_spawn(rt, &t, &a, block_on, &sem));

    CHECK_ERR(mqs_task_set_sched(NULL, MQS_CLASS_NORMAL, 0), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_NORMAL, -21), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_NORMAL, 20), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_FIFO, 0), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_FIFO, 100), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_RR, 0), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_RR, 100), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, (mqs_class_t)4, 0), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_sched(t, (mqs_class_t)-1, 0), MQS_EINVAL);
    expect_sched(t, MQS_CLASS_NORMAL, 3);

    mqs_class_t c;
    int p;
    CHECK_ERR(mqs_task_get_sched(NULL, &c, &p), MQS_EINVAL);
    CHECK_ERR(mqs_task_get_sched(t, NULL, &p), MQS_EINVAL);
    CHECK_ERR(mqs_task_get_sched(t, &c, NULL), MQS_EINVAL);

    CHECK_OK(mqs_task_set_sched(t, MQS_CLASS_RR, 42));
    CHECK_ERR(mqs_task_set_sched(t, MQS_CLASS_NORMAL, 77), MQS_EINVAL);
    expect_sched(t, MQS_CLASS_RR, 42);

    CHECK_OK(mqs_sem_post(&sem));
    CHECK_OK(mqs_join(t, NULL));
    CHECK_OK(mqs_runtime_destroy(rt));
}

struct aff_probe {
    atomic_int phase;
    int bad;
};

static void *aff_stays(void *arg)
{
    struct aff_probe *p = arg;
    atomic_store(&p->phase, 1);
    while (atomic_load(&p->phase) < 2)
        CHECK_OK(mqs_yield());
    for (int i = 0; i < 300; i++) {
        if (mqs_worker_self() != 0)
            p->bad++;
        CHECK_OK(mqs_yield());
    }
    return NULL;
}

TEST(set_affinity_bad)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_mask_t only0, empty, outside;
    mqs_mask_zero(&only0);
    mqs_mask_set(&only0, 0);
    mqs_mask_zero(&empty);
    mqs_mask_zero(&outside);
    mqs_mask_set(&outside, 2);
    mqs_mask_set(&outside, 200);
    static struct aff_probe pr;
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.affinity = &only0;
    mqs_task_t *t;
    CHECK_OK(mqs_spawn(rt, &t, &a, aff_stays, &pr));
    while (atomic_load(&pr.phase) < 1)
        sched_yield();
    CHECK_ERR(mqs_task_set_affinity(NULL, &only0), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_affinity(t, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_affinity(t, &empty), MQS_EINVAL);
    CHECK_ERR(mqs_task_set_affinity(t, &outside), MQS_EINVAL);
    atomic_store(&pr.phase, 2);
    CHECK_OK(mqs_join(t, NULL));
    CHECK_EQ(pr.bad, 0); /* still only on worker 0 */
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Keys                                                                */
/* ------------------------------------------------------------------ */

static void *key_misuse(void *arg)
{
    mqs_key_t *keys = arg;
    CHECK_ERR(mqs_key_set(MQS_KEYS_MAX, SENTINEL), MQS_EINVAL);
    CHECK_ERR(mqs_key_set(MQS_KEYS_MAX + 1000, SENTINEL), MQS_EINVAL);
    CHECK(mqs_key_get(MQS_KEYS_MAX) == NULL);
    CHECK_ERR(mqs_key_set(keys[0], SENTINEL), MQS_EINVAL); /* deleted */
    CHECK(mqs_key_get(keys[0]) == NULL);
    CHECK_OK(mqs_key_set(keys[1], SENTINEL));
    CHECK(mqs_key_get(keys[1]) == SENTINEL);
    CHECK_OK(mqs_key_set(keys[1], NULL));
    return NULL;
}

TEST(keys_bad)
{
    mqs_runtime_t *rt = rt_new(1);
    mqs_key_t k;
    CHECK_ERR(mqs_key_create(NULL, &k, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_key_create(rt, NULL, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_key_delete(NULL, 0), MQS_EINVAL);
    CHECK_ERR(mqs_key_delete(rt, MQS_KEYS_MAX), MQS_EINVAL);

    /* all keys in use */
    mqs_key_t keys[MQS_KEYS_MAX];
    for (int i = 0; i < MQS_KEYS_MAX; i++)
        CHECK_OK(mqs_key_create(rt, &keys[i], NULL));
    mqs_key_t extra = 12345;
    CHECK_ERR(mqs_key_create(rt, &extra, NULL), MQS_EBUSY);
    CHECK_EQ(extra, 12345);
    for (int i = 0; i < MQS_KEYS_MAX; i++)
        for (int j = i + 1; j < MQS_KEYS_MAX; j++)
            CHECK_NE(keys[i], keys[j]);
    CHECK_OK(mqs_key_delete(rt, keys[0]));
    CHECK_ERR(mqs_key_delete(rt, keys[0]), MQS_EINVAL); /* twice */

    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    mqs_task_t *t;
    CHECK_OK(mqs_spawn(rt, &t, &a, key_misuse, keys));
    CHECK_OK(mqs_join(t, NULL));

    CHECK_OK(mqs_key_create(rt, &extra, NULL)); /* one was freed */
    CHECK_ERR(mqs_key_create(rt, &k, NULL), MQS_EBUSY);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Statistics and errors                                               */
/* ------------------------------------------------------------------ */

TEST(stats_bad)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_worker_stats_t ws;
    memset(&ws, 0x5a, sizeof ws);
    mqs_worker_stats_t copy = ws;
    CHECK_ERR(mqs_worker_stats(rt, -1, &ws), MQS_EINVAL);
    CHECK_ERR(mqs_worker_stats(rt, 2, &ws), MQS_EINVAL);
    CHECK_ERR(mqs_worker_stats(rt, MQS_MAX_WORKERS, &ws), MQS_EINVAL);
    CHECK_EQ(memcmp(&ws, &copy, sizeof ws), 0);
    CHECK_ERR(mqs_worker_stats(NULL, 0, &ws), MQS_EINVAL);
    CHECK_ERR(mqs_worker_stats(rt, 0, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_runtime_stats(NULL, &ws), MQS_EINVAL);
    CHECK_ERR(mqs_runtime_stats(rt, NULL), MQS_EINVAL);
    mqs_task_stats_t ts;
    CHECK_ERR(mqs_task_stats(NULL, &ts), MQS_EINVAL);
    CHECK_ERR(mqs_stats_dump(NULL, stderr, false), MQS_EINVAL);
    CHECK_ERR(mqs_stats_dump(rt, NULL, false), MQS_EINVAL);
    CHECK_OK(mqs_worker_stats(rt, 1, &ws));
    CHECK_OK(mqs_runtime_destroy(rt));
}

TEST(strerror_names_every_code)
{
    static const int codes[] = {
        MQS_OK,      MQS_EINVAL,   MQS_ENOMEM,    MQS_EPERM,
        MQS_EBUSY,   MQS_ETIMEDOUT, MQS_ECLOSED,  MQS_EAGAIN,
        MQS_ENOPOLICY, MQS_ESTATE, MQS_EDEADLK,   MQS_ESYS,
        MQS_EOWNERDEAD, MQS_ESIGNAL,
    };
    const int n = sizeof codes / sizeof codes[0];
    for (int i = 0; i < n; i++) {
        const char *s = mqs_strerror(codes[i]);
        CHECK(s != NULL);
        CHECK_GT(strlen(s), 0);
        for (int j = 0; j < i; j++)
            CHECK_NE(strcmp(s, mqs_strerror(codes[j])), 0);
    }
    CHECK(mqs_strerror(-12345) != NULL);
    CHECK(mqs_strerror(12345) != NULL);
}
