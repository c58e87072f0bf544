/*
 * test_runtime.c - the runtime and task API through the public header:
 * configuration (defaults, environment overrides, rejected values and
 * their messages), runtime life cycle (create/destroy, mqs_main, waiting
 * for live tasks, the shutdown report, deadlock detection), statistics,
 * task-local storage, task identity, join and detached tasks, yield and
 * sleep, scheduling class changes, affinity and stack overflow detection.
 *
 * Every case runs in its own forked child (check.h), so setenv() and
 * static state do not leak between cases.  Assertions are on counts and
 * orderings only; the one use of time is "slept at least as long as
 * asked", which is an ordering of two clock readings.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>

#include "check.h"
#include "helpers.h"
#include "mqs.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static mqs_task_t *spawn_named(mqs_runtime_t *rt, const char *name,
                               mqs_task_fn fn, void *arg)
{
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    attr.name = name;
    return spawn_attr(rt, &attr, fn, arg);
}

static int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char tmp[1024];
        if (len >= sizeof tmp)
            len = sizeof tmp - 1;
        memcpy(tmp, line, len);
        tmp[len] = 0;
        if (strcasestr(tmp, needle))
            n++;
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

static void clear_env(void)
{
    unsetenv("MQS_WORKERS");
    unsetenv("MQS_PIN");
    unsetenv("MQS_POLICY");
    unsetenv("MQS_STACK_SIZE");
    unsetenv("MQS_GUARD_SIZE");
    unsetenv("MQS_IDLE_SPIN_NS");
}

TEST(config_init_defaults)
{
    mqs_config_t cfg;
    memset(&cfg, 0x5a, sizeof cfg);
    mqs_config_init(&cfg);
    CHECK_EQ(cfg.workers, 0);
    CHECK_EQ(cfg.pin, -1);
    CHECK(cfg.policy == NULL);
    CHECK_EQ(cfg.stack_size, 0);
    CHECK_EQ(cfg.guard_size, 0);
    CHECK_EQ(cfg.idle_spin_ns, -1);
    CHECK(!cfg.ignore_env);
    CHECK(cfg.errbuf == NULL);
    CHECK_EQ(cfg.errbuf_size, 0);
}

TEST(config_resolve_defaults)
{
    clear_env();
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    int ncpu = CPU_COUNT(&set);
    CHECK_GE(out.workers, 1);
    CHECK_LE(out.workers, ncpu < MQS_MAX_WORKERS ? ncpu : MQS_MAX_WORKERS);
    CHECK_EQ(out.pin, 0);
    CHECK(out.policy != NULL);
    CHECK_EQ(strcmp(out.policy, "mq"), 0);
    CHECK_EQ(out.stack_size, 256 * 1024);
    CHECK_EQ(out.guard_size, 64 * 1024);
    CHECK_EQ(out.idle_spin_ns, 50000);
}

/* Guards are whole pages, one at least, set like a stack size. */
TEST(config_guard_size)
{
    clear_env();
    long ps = sysconf(_SC_PAGESIZE);
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    cfg.guard_size = (size_t)ps + 1; /* rounded up */
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.guard_size, 2 * (size_t)ps);
    setenv("MQS_GUARD_SIZE", "1M", 1); /* the environment wins */
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.guard_size, 1024 * 1024);
    setenv("MQS_GUARD_SIZE", "1K", 1); /* under a page */
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    setenv("MQS_GUARD_SIZE", "lots", 1);
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    unsetenv("MQS_GUARD_SIZE");
    cfg.guard_size = ((size_t)1 << 30) + 1;
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    /* a runtime with a one-page guard runs tasks */
    cfg.guard_size = (size_t)ps;
    cfg.ignore_env = true;
    cfg.workers = 1;
    mqs_runtime_t *rt = rt_create(&cfg);
    CHECK(join(spawn(rt, ret_arg, NULL)) == NULL);
    CHECK_OK(mqs_runtime_destroy(rt));
}

TEST(config_resolve_keeps_struct_values)
{
    setenv("MQS_WORKERS", "7", 1); /* ignored: ignore_env */
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 3;
    cfg.pin = 1;
    cfg.policy = "mq";
    cfg.stack_size = 128 * 1024;
    cfg.idle_spin_ns = 0;
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.workers, 3);
    CHECK_EQ(out.pin, 1);
    CHECK_EQ(strcmp(out.policy, "mq"), 0);
    CHECK_EQ(out.stack_size, 128 * 1024);
    CHECK_EQ(out.idle_spin_ns, 0);
    /* resolve does not touch its input */
    CHECK_EQ(cfg.workers, 3);
    CHECK_EQ(cfg.idle_spin_ns, 0);
}

TEST(config_env_overrides)
{
    clear_env();
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    cfg.workers = 2; /* the environment wins over the struct */
    cfg.stack_size = 1024 * 1024;
    setenv("MQS_WORKERS", "3", 1);
    setenv("MQS_PIN", "1", 1);
    setenv("MQS_POLICY", "mq", 1);
    setenv("MQS_STACK_SIZE", "64K", 1);
    setenv("MQS_IDLE_SPIN_NS", "1234", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.workers, 3);
    CHECK_EQ(out.pin, 1);
    CHECK_EQ(strcmp(out.policy, "mq"), 0);
    CHECK_EQ(out.stack_size, 64 * 1024);
    CHECK_EQ(out.idle_spin_ns, 1234);

    setenv("MQS_STACK_SIZE", "2M", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.stack_size, 2 * 1024 * 1024);
    setenv("MQS_STACK_SIZE", "1G", 1); /* the upper bound is accepted */
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.stack_size, (size_t)1 << 30);
    setenv("MQS_STACK_SIZE", "16K", 1); /* the lower bound too */
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.stack_size, 16 * 1024);
    setenv("MQS_STACK_SIZE", "65536", 1); /* no suffix: bytes */
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.stack_size, 65536);

    setenv("MQS_PIN", "0", 1);
    setenv("MQS_WORKERS", "256", 1);
    setenv("MQS_IDLE_SPIN_NS", "0", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.pin, 0);
    CHECK_EQ(out.workers, 256);
    CHECK_EQ(out.idle_spin_ns, 0);
    setenv("MQS_IDLE_SPIN_NS", "1000000000", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.idle_spin_ns, 1000000000);

    /* and a runtime really uses them */
    setenv("MQS_WORKERS", "3", 1);
    setenv("MQS_STACK_SIZE", "64K", 1);
    mqs_runtime_t *rt = NULL;
    CHECK_OK(mqs_runtime_create(&rt, &cfg));
    CHECK_EQ(mqs_runtime_workers(rt), 3);
    CHECK_EQ(strcmp(mqs_runtime_policy(rt), "mq"), 0);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* One rejected environment value: resolve and create fail with `code`,
 * the message names the variable and contains one of the range words. */
static void env_rejected(const char *var, const char *val, int code,
                         const char *range1, const char *range2)
{
    clear_env();
    setenv(var, val, 1);
    char err[512];
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;

    memset(err, 0, sizeof err);
    memset(&out, 0x5a, sizeof out);
    int rc = mqs_config_resolve(&cfg, &out);
    if (rc != code)
        CHECK__FAIL("%s=%s: resolve returned %d (%s), expected %d", var, val,
                    rc, mqs_strerror(rc), code);
    if (!strstr(err, var))
        CHECK__FAIL("%s=%s: message \"%s\" does not name %s", var, val, err,
                    var);
    if (range1 && !strstr(err, range1) && !(range2 && strstr(err, range2)))
        CHECK__FAIL("%s=%s: message \"%s\" does not give the range (%s)", var,
                    val, err, range1);

    memset(err, 0, sizeof err);
    mqs_runtime_t *rt = (mqs_runtime_t *)(uintptr_t)0x1234;
    rc = mqs_runtime_create(&rt, &cfg);
    if (rc != code)
        CHECK__FAIL("%s=%s: create returned %d (%s), expected %d", var, val,
                    rc, mqs_strerror(rc), code);
    CHECK(rt == (mqs_runtime_t *)(uintptr_t)0x1234); /* *out untouched */
    CHECK_STR_CONTAINS(err, var);
    unsetenv(var);
}

TEST(config_env_rejected_with_message)
{
    env_rejected("MQS_WORKERS", "0", MQS_EINVAL, "256", NULL);
    env_rejected("MQS_WORKERS", "-1", MQS_EINVAL, "256", NULL);
    env_rejected("MQS_WORKERS", "257", MQS_EINVAL, "256", NULL);
    env_rejected("MQS_WORKERS", "abc", MQS_EINVAL, "256", NULL);
    env_rejected("MQS_WORKERS", "3x", MQS_EINVAL, "256", NULL);
    env_rejected("MQS_PIN", "2", MQS_EINVAL, "1", NULL);
    env_rejected("MQS_PIN", "yes", MQS_EINVAL, "1", NULL);
    env_rejected("MQS_STACK_SIZE", "8K", MQS_EINVAL, "16", NULL);
    env_rejected("MQS_STACK_SIZE", "2G", MQS_EINVAL, "16", NULL);
    env_rejected("MQS_STACK_SIZE", "0", MQS_EINVAL, "16", NULL);
    env_rejected("MQS_STACK_SIZE", "64Q", MQS_EINVAL, "16", NULL);
    env_rejected("MQS_STACK_SIZE", "-64K", MQS_EINVAL, "16", NULL);
    env_rejected("MQS_IDLE_SPIN_NS", "-5", MQS_EINVAL, "1e9", "1000000000");
    env_rejected("MQS_IDLE_SPIN_NS", "1000000001", MQS_EINVAL, "1e9",
                 "1000000000");
    env_rejected("MQS_IDLE_SPIN_NS", "fast", MQS_EINVAL, "1e9", "1000000000");
    env_rejected("MQS_POLICY", "no-such-policy", MQS_ENOPOLICY, NULL, NULL);
    env_rejected("MQS_POLICY", "mq:no_such_tunable=1", MQS_ENOPOLICY, NULL,
                 NULL);
}

TEST(config_error_to_stderr_without_errbuf)
{
    clear_env();
    setenv("MQS_WORKERS", "999", 1);
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    mqs_runtime_t *rt = NULL;
    struct capture c = stderr_begin();
    int rc = mqs_runtime_create(&rt, &cfg);
    char *text = stderr_end(c);
    CHECK_ERR(rc, MQS_EINVAL);
    CHECK_STR_CONTAINS(text, "MQS_WORKERS");
    CHECK_STR_CONTAINS(text, "256");
    free(text);
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

TEST(create_destroy)
{
    static const int sizes[] = {1, 2, 4, 2, 1};
    for (int round = 0; round < 10; round++) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            mqs_runtime_t *rt = rt_new(sizes[i]);
            CHECK_EQ(mqs_runtime_workers(rt), sizes[i]);
            CHECK_EQ(strcmp(mqs_runtime_policy(rt), "mq"), 0);
            CHECK_OK(mqs_runtime_destroy(rt));
        }
    }
}

struct rt_probe {
    mqs_runtime_t *seen_rt;
    mqs_task_t *seen_self;
    int seen_worker;
};

static void *probe_fn(void *arg)
{
    struct rt_probe *p = arg;
    p->seen_rt = mqs_runtime_self();
    p->seen_self = mqs_self();
    p->seen_worker = mqs_worker_self();
    return NULL;
}

TEST(several_runtimes_side_by_side)
{
    mqs_runtime_t *a = rt_new(2), *b = rt_new(1);
    struct rt_probe pa = {0}, pb = {0};
    mqs_task_t *ta = spawn(a, probe_fn, &pa);
    mqs_task_t *tb = spawn(b, probe_fn, &pb);
    join(ta);
    join(tb);
    CHECK(pa.seen_rt == a);
    CHECK(pb.seen_rt == b);
    CHECK(pa.seen_self == ta);
    CHECK(pb.seen_self == tb);
    CHECK_EQ(pb.seen_worker, 0);
    CHECK_OK(mqs_runtime_destroy(b));
    CHECK_OK(mqs_runtime_destroy(a));
}

static atomic_int main_children_done;

static void *main_child(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++)
        CHECK_OK(mqs_yield());
    CHECK_OK(mqs_sleep(1000));
    atomic_fetch_add(&main_children_done, 1);
    return NULL;
}

static void *main_fn(void *arg)
{
    CHECK(mqs_self() != NULL);
    CHECK(mqs_runtime_self() != NULL);
    CHECK_EQ(strcmp(mqs_task_name(mqs_self()), "main"), 0);
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    attr.detached = true;
    for (int i = 0; i < 50; i++)
        CHECK_OK(mqs_spawn(mqs_runtime_self(), NULL, &attr, main_child, NULL));
    return (char *)arg + 1;
}

TEST(main_runs_fn_and_waits_for_every_task)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 2;
    char base[4];
    void *res = NULL;
    CHECK_OK(mqs_main(&cfg, main_fn, base, &res));
    CHECK(res == base + 1);
    CHECK_EQ(atomic_load(&main_children_done), 50);
    CHECK(mqs_self() == NULL);
    CHECK(mqs_runtime_self() == NULL);
}

TEST(main_with_null_config)
{
    clear_env();
    setenv("MQS_WORKERS", "2", 1);
    char base[4];
    void *res = NULL;
    CHECK_OK(mqs_main(NULL, main_fn, base, &res));
    CHECK(res == base + 1);
    CHECK_EQ(atomic_load(&main_children_done), 50);
    CHECK_OK(mqs_main(NULL, ret_arg, NULL, NULL)); /* result may be NULL */
}

static atomic_int live_done;

static void *live_fn(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (int k = 0; k < 30; k++) {
        if ((i + k) % 3 == 0)
            CHECK_OK(mqs_sleep(2000 + 1000 * (uint64_t)(k % 5)));
        else
            CHECK_OK(mqs_yield());
    }
    atomic_fetch_add(&live_done, 1);
    return NULL;
}

TEST(destroy_waits_for_live_tasks)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    for (int i = 0; i < 200; i++) {
        attr.detached = (i % 2 == 0);
        mqs_task_t *t = NULL;
        /* joinable ones are never joined: destroy frees them */
        CHECK_OK(mqs_spawn(rt, &t, &attr, live_fn, (void *)(intptr_t)i));
    }
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(atomic_load(&live_done), 200);
}

static atomic_int sleeper_posted;

struct sleeper_pair {
    mqs_sem_t sem;
};

static void *timer_sleeper(void *arg)
{
    struct sleeper_pair *p = arg;
    CHECK_OK(mqs_sleep(20 * 1000 * 1000));
    atomic_store(&sleeper_posted, 1);
    CHECK_OK(mqs_sem_post(&p->sem));
    return NULL;
}

static void *sem_waiter(void *arg)
{
    struct sleeper_pair *p = arg;
    CHECK_OK(mqs_sem_wait(&p->sem));
    return NULL;
}

/* Every task is blocked, but a timer is pending: not a deadlock. */
TEST(destroy_pending_timer_is_not_deadlock)
{
    mqs_runtime_t *rt = rt_new(2);
    static struct sleeper_pair p;
    CHECK_OK(mqs_sem_init(&p.sem, 0));
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    attr.detached = true;
    CHECK_OK(mqs_spawn(rt, NULL, &attr, sem_waiter, &p));
    CHECK_OK(mqs_spawn(rt, NULL, &attr, timer_sleeper, &p));
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(atomic_load(&sleeper_posted), 1);
    CHECK_OK(mqs_sem_destroy(&p.sem));
}

static atomic_int stuck_started;

static void *stuck_on_sem(void *arg)
{
    atomic_fetch_add(&stuck_started, 1);
    mqs_sem_wait(arg); /* never posted */
    CHECK__FAIL("stuck task woke up");
    return NULL;
}

static void *stuck_on_chan(void *arg)
{
    int v;
    atomic_fetch_add(&stuck_started, 1);
    mqs_chan_recv(arg, &v); /* nothing is ever sent */
    CHECK__FAIL("stuck channel task woke up");
    return NULL;
}

TEST(destroy_report_names_blocked_tasks)
{
    mqs_runtime_t *rt = rt_new(1);
    static mqs_sem_t sem;
    mqs_chan_t *ch = NULL;
    CHECK_OK(mqs_sem_init(&sem, 0));
    CHECK_OK(mqs_chan_create(&ch, sizeof(int), 4));
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    attr.name = "stuck-sem";
    mqs_task_t *t1 = NULL, *t2 = NULL;
    CHECK_OK(mqs_spawn(rt, &t1, &attr, stuck_on_sem, &sem));
    attr.name = "stuck-chan";
    attr.detached = true;
    CHECK_OK(mqs_spawn(rt, &t2, &attr, stuck_on_chan, ch));
    /* Both have started; the next scheduling point of each is its
     * blocking call, where the report stops the worker. */
    wait_count(&stuck_started, 2);

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    CHECK(out != NULL);
    int rc = mqs_runtime_destroy_ex(rt, MQS_DESTROY_REPORT, out);
    fclose(out);
    fprintf(stderr, "  report:\n%s", text);
    CHECK_EQ(rc, 2);
    CHECK_EQ(count_lines_with(text, "stuck-sem"), 1);
    CHECK_EQ(count_lines_with(text, "stuck-chan"), 1);
    /* each line says what the task waits on */
    const char *l1 = strstr(text, "stuck-sem");
    const char *e1 = strchr(l1, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(e1 ? e1 - l1 : (long)strlen(l1)),
             l1);
    CHECK(strcasestr(line, "sem") != NULL);
    const char *l2 = strstr(text, "stuck-chan");
    const char *e2 = strchr(l2, '\n');
    snprintf(line, sizeof line, "%.*s", (int)(e2 ? e2 - l2 : (long)strlen(l2)),
             l2);
    CHECK(strcasestr(line + strlen("stuck-chan"), "chan") != NULL);
    free(text);
}

TEST(destroy_report_with_no_live_task)
{
    mqs_runtime_t *rt = rt_new(2);
    join(spawn(rt, ret_arg, NULL));
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    CHECK_EQ(mqs_runtime_destroy_ex(rt, MQS_DESTROY_REPORT, out), 0);
    fclose(out);
    free(text);
}

TEST(destroy_detects_deadlock)
{
    mqs_runtime_t *rt = rt_new(2);
    static mqs_sem_t sem;
    CHECK_OK(mqs_sem_init(&sem, 0));
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    attr.name = "forever-blocked";
    attr.detached = true;
    CHECK_OK(mqs_spawn(rt, NULL, &attr, stuck_on_sem, &sem));
    wait_count(&stuck_started, 1);
    struct capture c = stderr_begin();
    int rc = mqs_runtime_destroy(rt);
    char *text = stderr_end(c);
    fprintf(stderr, "  stderr of destroy:\n%s", text);
    CHECK_ERR(rc, MQS_EDEADLK);
    CHECK_STR_CONTAINS(text, "forever-blocked");
    free(text);
}

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

#define STAT_YIELDS 100

static void *stat_yielder(void *arg)
{
    (void)arg;
    for (int i = 0; i < STAT_YIELDS; i++)
        CHECK_OK(mqs_yield());
    mqs_task_stats_t ts;
    CHECK_OK(mqs_task_stats(mqs_self(), &ts));
    CHECK_EQ(ts.yields, STAT_YIELDS);
    CHECK_GE(ts.switches, 1);
    return NULL;
}

static void *stats_live(void *arg)
{
    mqs_sem_wait(arg);
    return NULL;
}

TEST(stats_counters_move)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_worker_stats_t before, after, w0, w1;
    CHECK_OK(mqs_runtime_stats(rt, &before));
    mqs_task_t *t[8];
    for (int i = 0; i < 8; i++)
        t[i] = spawn(rt, stat_yielder, NULL);
    for (int i = 0; i < 8; i++)
        join(t[i]);
    CHECK_OK(mqs_runtime_stats(rt, &after));
    CHECK_GE(after.yields - before.yields, 8 * STAT_YIELDS);
    CHECK_GT(after.switches, before.switches);
    CHECK_GE(after.spawns - before.spawns, 8);
    /* the sum is the sum of the workers (no task runs now); spawns made
     * from outside any worker are counted by the runtime only */
    CHECK_OK(mqs_worker_stats(rt, 0, &w0));
    CHECK_OK(mqs_worker_stats(rt, 1, &w1));
    CHECK_EQ(w0.yields + w1.yields, after.yields);
    CHECK_EQ(w0.switches + w1.switches >= before.switches, 1);
    CHECK_LE(w0.spawns + w1.spawns, after.spawns);

    static mqs_sem_t sem;
    CHECK_OK(mqs_sem_init(&sem, 0));
    mqs_task_t *live = spawn_named(rt, "statsdump-live", stats_live, &sem);
    mqs_task_stats_t ts;
    CHECK_OK(mqs_task_stats(live, &ts));

    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    CHECK_OK(mqs_stats_dump(rt, out, true));
    fclose(out);
    fprintf(stderr, "  dump:\n%s", text);
    CHECK_GE(count_lines_with(text, "worker"), 2);
    CHECK_STR_CONTAINS(text, "statsdump-live");
    free(text);

    text = NULL;
    out = open_memstream(&text, &len);
    CHECK_OK(mqs_stats_dump(rt, out, false));
    fclose(out);
    CHECK_GE(count_lines_with(text, "worker"), 2);
    CHECK(strstr(text, "statsdump-live") == NULL);
    free(text);

    CHECK_OK(mqs_sem_post(&sem));
    join(live);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Task-local storage                                                  */
/* ------------------------------------------------------------------ */

#define TLS_TASKS 16
static int tls_slot[TLS_TASKS];
static atomic_int tls_dtor_calls;
static atomic_int tls_dtor2_calls;
static mqs_key_t tls_key, tls_key2;

static void tls_dtor(void *p)
{
    CHECK_EQ(*(int *)p, 1);
    *(int *)p = 2;
    atomic_fetch_add(&tls_dtor_calls, 1);
}

static void tls_dtor2(void *p)
{
    (void)p;
    atomic_fetch_add(&tls_dtor2_calls, 1);
}

static void *tls_fn(void *arg)
{
    int i = (int)(intptr_t)arg;
    CHECK(mqs_key_get(tls_key) == NULL);
    CHECK(mqs_key_get(tls_key2) == NULL);
    tls_slot[i] = 1;
    CHECK_OK(mqs_key_set(tls_key, &tls_slot[i]));
    CHECK_OK(mqs_key_set(tls_key2, NULL)); /* NULL: dtor not called */
    for (int k = 0; k < 50; k++) {
        if (k % 10 == 0)
            CHECK_OK(mqs_sleep(1000));
        else
            CHECK_OK(mqs_yield());
        CHECK(mqs_key_get(tls_key) == &tls_slot[i]);
        CHECK(mqs_key_get(tls_key2) == NULL);
    }
    return NULL;
}

TEST(task_local_storage)
{
    mqs_runtime_t *rt = rt_new(2);
    CHECK_OK(mqs_key_create(rt, &tls_key, tls_dtor));
    CHECK_OK(mqs_key_create(rt, &tls_key2, tls_dtor2));
    CHECK_NE(tls_key, tls_key2);
    CHECK(mqs_key_get(tls_key) == NULL); /* outside a task */
    mqs_task_t *t[TLS_TASKS];
    for (int i = 0; i < TLS_TASKS; i++)
        t[i] = spawn(rt, tls_fn, (void *)(intptr_t)i);
    for (int i = 0; i < TLS_TASKS; i++)
        join(t[i]);
    CHECK_EQ(atomic_load(&tls_dtor_calls), TLS_TASKS);
    CHECK_EQ(atomic_load(&tls_dtor2_calls), 0);
    for (int i = 0; i < TLS_TASKS; i++)
        CHECK_EQ(tls_slot[i], 2);
    CHECK_OK(mqs_key_delete(rt, tls_key));
    CHECK_OK(mqs_key_delete(rt, tls_key2));
    /* a deleted key can be created again */
    mqs_key_t k;
    CHECK_OK(mqs_key_create(rt, &k, NULL));
    CHECK_OK(mqs_key_delete(rt, k));
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Identity, join, detached                                            */
/* ------------------------------------------------------------------ */

struct ident {
    mqs_task_t *self;
    uint64_t id;
    char name[64];
    int worker;
    mqs_runtime_t *rt;
};

static void *ident_fn(void *arg)
{
    struct ident *p = arg;
    p->self = mqs_self();
    p->id = mqs_task_id(p->self);
    snprintf(p->name, sizeof p->name, "%s", mqs_task_name(p->self));
    p->worker = mqs_worker_self();
    p->rt = mqs_runtime_self();
    return NULL;
}

TEST(self_name_id)
{
    CHECK(mqs_self() == NULL);
    CHECK_EQ(mqs_worker_self(), -1);
    CHECK(mqs_runtime_self() == NULL);
    mqs_runtime_t *rt = rt_new(2);
    enum { N = 40 };
    static struct ident id[N];
    mqs_task_t *t[N];
    for (int i = 0; i < N; i++) {
        const char *name = NULL;
        if (i == 1)
            name = "hello";
        if (i == 2)
            name = "a-name-that-is-much-longer-than-31-bytes-in-all";
        t[i] = spawn_named(rt, name, ident_fn, &id[i]);
        CHECK_GE(mqs_task_id(t[i]), 1);
    }
    uint64_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = mqs_task_id(t[i]);
        join(t[i]);
        CHECK(id[i].self == t[i]);
        CHECK_EQ(id[i].id, ids[i]);
        CHECK(id[i].rt == rt);
        CHECK_GE(id[i].worker, 0);
        CHECK_LT(id[i].worker, 2);
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            CHECK_NE(ids[i], ids[j]);
    CHECK_EQ(strcmp(id[1].name, "hello"), 0);
    CHECK_EQ(strlen(id[2].name), 31);
    CHECK_EQ(strncmp(id[2].name, "a-name-that-is-much-longer-than-31", 31), 0);
    char expect[64];
    snprintf(expect, sizeof expect, "task-%" PRIu64, ids[0]);
    CHECK_EQ(strcmp(id[0].name, expect), 0);
    CHECK_OK(mqs_runtime_destroy(rt));
}

static void *nothing(void *arg) { return arg; }

/* Every default name is "task-<id>", across the lengths of an id (one to
 * five digits, each power of ten and its neighbours). */
TEST(default_names_spell_the_id)
{
    mqs_runtime_t *rt = rt_new(1);
    uint64_t last = 0;
    while (last < 10050) {
        mqs_task_t *t = spawn(rt, nothing, NULL);
        last = mqs_task_id(t);
        char expect[64];
        snprintf(expect, sizeof expect, "task-%" PRIu64, last);
        if (strcmp(mqs_task_name(t), expect) != 0) {
            fprintf(stderr, "  id %" PRIu64 ": %s\n", last,
                    mqs_task_name(t));
            CHECK(false);
        }
        join(t);
    }
    CHECK_OK(mqs_runtime_destroy(rt));
}

static void *add_one(void *arg) { return (char *)arg + 1; }

static void *child_joiner(void *arg)
{
    (void)arg;
    char buf[8];
    mqs_task_t *c = NULL;
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    CHECK_OK(mqs_spawn(mqs_runtime_self(), &c, &attr, add_one, buf));
    void *res = NULL;
    CHECK_OK(mqs_join(c, &res)); /* blocks only this task */
    CHECK(res == buf + 1);
    /* a child that ended before the join */
    CHECK_OK(mqs_spawn(mqs_runtime_self(), &c, &attr, add_one, buf + 2));
    for (int i = 0; i < 10; i++)
        CHECK_OK(mqs_sleep(1000));
    CHECK_OK(mqs_join(c, &res));
    CHECK(res == buf + 3);
    return (void *)(intptr_t)77;
}

TEST(join_result)
{
    mqs_runtime_t *rt = rt_new(2);
    char buf[8];
    CHECK(join(spawn(rt, add_one, buf)) == buf + 1);
    CHECK_OK(mqs_join(spawn(rt, add_one, buf), NULL)); /* result may be NULL */
    CHECK(join(spawn(rt, child_joiner, NULL)) == (void *)(intptr_t)77);
    CHECK_OK(mqs_runtime_destroy(rt));
}

static atomic_int detached_done;

static void *detached_fn(void *arg)
{
    (void)arg;
    CHECK_OK(mqs_yield());
    atomic_fetch_add(&detached_done, 1);
    return NULL;
}

TEST(detached_tasks)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    attr.detached = true;
    for (int i = 0; i < 300; i++)
        CHECK_OK(mqs_spawn(rt, NULL, &attr, detached_fn, NULL));
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(atomic_load(&detached_done), 300);
}

/* ------------------------------------------------------------------ */
/* Yield, sleep                                                        */
/* ------------------------------------------------------------------ */

static void *sleep_fn(void *arg)
{
    (void)arg;
    static const uint64_t ns[] = {0, 1, 1000, 50000, 1000000, 5000000};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        uint64_t t0 = mqs_now_ns();
        CHECK_OK(mqs_sleep(ns[i]));
        uint64_t t1 = mqs_now_ns();
        CHECK_GE(t1 - t0, ns[i]);
    }
    return NULL;
}

TEST(sleep_at_least_duration)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_task_t *t[20];
    for (int i = 0; i < 20; i++)
        t[i] = spawn(rt, sleep_fn, NULL);
    for (int i = 0; i < 20; i++)
        join(t[i]);
    CHECK_OK(mqs_runtime_destroy(rt));
    uint64_t a = mqs_now_ns(), b = mqs_now_ns();
    CHECK_LE(a, b);
}

static void *yield_many(void *arg)
{
    for (int i = 0; i < 1000; i++)
        CHECK_OK(mqs_yield());
    return arg;
}

TEST(yield_returns_ok)
{
    for (int w = 1; w <= 4; w *= 2) {
        mqs_runtime_t *rt = rt_new(w);
        mqs_task_t *t[6];
        for (int i = 0; i < 6; i++)
            t[i] = spawn(rt, yield_many, (void *)(intptr_t)i);
        for (int i = 0; i < 6; i++)
            CHECK(join(t[i]) == (void *)(intptr_t)i);
        CHECK_OK(mqs_runtime_destroy(rt));
    }
}

/* ------------------------------------------------------------------ */
/* Scheduling class                                                    */
/* ------------------------------------------------------------------ */

static void expect_sched(mqs_task_t *t, mqs_class_t cls, int prio)
{
    mqs_class_t c = (mqs_class_t)-1;
    int p = -999;
    CHECK_OK(mqs_task_get_sched(t, &c, &p));
    CHECK_EQ(c, cls);
    if (cls != MQS_CLASS_IDLE)
        CHECK_EQ(p, prio);
}

static void *sched_self(void *arg)
{
    (void)arg;
    mqs_task_t *me = mqs_self();
    expect_sched(me, MQS_CLASS_NORMAL, 0);
    CHECK_OK(mqs_task_set_sched(me, MQS_CLASS_RR, 5));
    expect_sched(me, MQS_CLASS_RR, 5);
    CHECK_OK(mqs_yield());
    expect_sched(me, MQS_CLASS_RR, 5);
    CHECK_OK(mqs_task_set_sched(me, MQS_CLASS_NORMAL, 19));
    CHECK_OK(mqs_yield());
    expect_sched(me, MQS_CLASS_NORMAL, 19);
    CHECK_OK(mqs_task_set_sched(me, MQS_CLASS_NORMAL, 0));
    return NULL;
}

static void *block_on(void *arg)
{
    CHECK_OK(mqs_sem_wait(arg));
    return NULL;
}

TEST(set_get_sched)
{
    mqs_runtime_t *rt = rt_new(2);
    join(spawn(rt, sched_self, NULL));

    static mqs_sem_t sem;
    CHECK_OK(mqs_sem_init(&sem, 0));
    mqs_task_t *t = spawn(rt, block_on, &sem); /* runnable or blocked */
    expect_sched(t, MQS_CLASS_NORMAL, 0);
    static const struct {
        mqs_class_t c;
        int p;
    } seq[] = {
        {MQS_CLASS_FIFO, 50}, {MQS_CLASS_FIFO, 1},    {MQS_CLASS_RR, 99},
        {MQS_CLASS_IDLE, 0},  {MQS_CLASS_NORMAL, -20}, {MQS_CLASS_NORMAL, 19},
        {MQS_CLASS_NORMAL, 0},
    };
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        CHECK_OK(mqs_task_set_sched(t, seq[i].c, seq[i].p));
        expect_sched(t, seq[i].c, seq[i].p);
    }
    CHECK_OK(mqs_sem_post(&sem));
    join(t);

    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    CHECK_EQ(attr.sched_class, MQS_CLASS_NORMAL);
    CHECK_EQ(attr.nice, 0);
    CHECK(attr.affinity == NULL);
    CHECK_EQ(attr.stack_size, 0);
    CHECK(attr.name == NULL);
    CHECK(!attr.detached);
    attr.sched_class = MQS_CLASS_FIFO;
    attr.rt_priority = 10;
    CHECK_OK(mqs_spawn(rt, &t, &attr, block_on, &sem));
    expect_sched(t, MQS_CLASS_FIFO, 10);
    CHECK_OK(mqs_sem_post(&sem));
    join(t);
    attr.sched_class = MQS_CLASS_NORMAL;
    attr.nice = -5;
    CHECK_OK(mqs_spawn(rt, &t, &attr, block_on, &sem));
    expect_sched(t, MQS_CLASS_NORMAL, -5);
    CHECK_OK(mqs_sem_post(&sem));
    join(t);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Affinity                                                            */
/* ------------------------------------------------------------------ */

static void *affine_self(void *arg)
{
    int target = (int)(intptr_t)arg;
    mqs_mask_t m;
    mqs_mask_zero(&m);
    mqs_mask_set(&m, target);
    CHECK_OK(mqs_task_set_affinity(mqs_self(), &m));
    CHECK_OK(mqs_yield()); /* the move happens at a scheduling point */
    for (int i = 0; i < 300; i++) {
        CHECK_EQ(mqs_worker_self(), target);
        if (i % 7 == 0)
            CHECK_OK(mqs_sleep(1000));
        else
            CHECK_OK(mqs_yield());
    }
    CHECK_EQ(mqs_worker_self(), target);
    return NULL;
}

struct ext_aff {
    atomic_int go;
    atomic_int started;
    int target;
};

static void *affine_external(void *arg)
{
    struct ext_aff *p = arg;
    atomic_store(&p->started, 1);
    while (!atomic_load(&p->go))
        CHECK_OK(mqs_yield());
    CHECK_OK(mqs_yield()); /* first scheduling point after the change */
    for (int i = 0; i < 300; i++) {
        CHECK_EQ(mqs_worker_self(), p->target);
        CHECK_OK(i % 5 ? mqs_yield() : mqs_sleep(500));
    }
    return NULL;
}

static void *affine_from_spawn(void *arg)
{
    const mqs_mask_t *m = arg;
    for (int i = 0; i < 200; i++) {
        int w = mqs_worker_self();
        CHECK(mqs_mask_isset(m, w));
        CHECK_OK(i % 3 ? mqs_yield() : mqs_sleep(200));
    }
    return NULL;
}

TEST(set_affinity_respected)
{
    for (int workers = 2; workers <= 4; workers += 2) {
        mqs_runtime_t *rt = rt_new(workers);
        mqs_task_t *t[8];
        for (int i = 0; i < 8; i++)
            t[i] = spawn(rt, affine_self, (void *)(intptr_t)(i % workers));
        for (int i = 0; i < 8; i++)
            join(t[i]);

        static struct ext_aff ea;
        atomic_store(&ea.go, 0);
        atomic_store(&ea.started, 0);
        ea.target = workers - 1;
        mqs_task_t *e = spawn(rt, affine_external, &ea);
        wait_count(&ea.started, 1);
        mqs_mask_t m;
        mqs_mask_zero(&m);
        mqs_mask_set(&m, ea.target);
        CHECK_OK(mqs_task_set_affinity(e, &m));
        atomic_store(&ea.go, 1);
        join(e);

        static mqs_mask_t sm;
        mqs_mask_zero(&sm);
        mqs_mask_set(&sm, 0);
        if (workers == 4)
            mqs_mask_set(&sm, 2);
        mqs_task_attr_t attr;
        mqs_task_attr_init(&attr);
        attr.affinity = &sm;
        for (int i = 0; i < 8; i++)
            CHECK_OK(mqs_spawn(rt, &t[i], &attr, affine_from_spawn, &sm));
        for (int i = 0; i < 8; i++)
            join(t[i]);
        CHECK_OK(mqs_runtime_destroy(rt));
    }
}

/* ------------------------------------------------------------------ */
/* Stack overflow                                                      */
/* ------------------------------------------------------------------ */

static volatile int recurse_limit = 1 << 30;

__attribute__((noinline)) static int recurse(int depth)
{
    volatile char buf[512];
    buf[depth % 512] = (char)depth;
    if (depth >= recurse_limit)
        return buf[0];
    return recurse(depth + 1) + buf[(depth * 7) % 512];
}

static void *overflow_fn(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)recurse(0);
}

static void overflow_child(void)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_task_attr_t attr;
    mqs_task_attr_init(&attr);
    attr.stack_size = 64 * 1024;
    attr.name = "deep-recursion";
    mqs_task_t *t = NULL;
    if (mqs_spawn(rt, &t, &attr, overflow_fn, NULL) != 0)
        _exit(3);
    mqs_join(t, NULL);
    _exit(4); /* must not get here */
}

TEST(stack_overflow_aborts_with_message)
{
    char buf[8192];
    check_aborted(child_stderr(overflow_child, buf, sizeof buf));
    CHECK_STR_CONTAINS(buf, "overflowed its");
    CHECK_STR_CONTAINS(buf, "deep-recursion");
}
