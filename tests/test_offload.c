/*
 * test_offload.c - mqs_offload: the call runs on a pool thread while the
 * caller's worker runs its other tasks, the pool keeps its bound and
 * queues the rest, nothing is lost under many callers, destroy waits for
 * a call in flight instead of declaring a deadlock, and bad input and
 * bad MQS_OFFLOAD_THREADS values are refused.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "helpers.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Two workers and a pool of `threads`. */
static mqs_runtime_t *rt_pool(int threads)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 2;
    cfg.offload_threads = threads;
    return rt_create(&cfg);
}

/* ------------------------------------------------------------------ */
/* Only the caller waits                                               */
/* ------------------------------------------------------------------ */

struct only {
    atomic_int flag;       /* set by the other task of the worker */
    pthread_t task_thread; /* the caller's OS thread              */
    atomic_int fn_on_task_thread;
};

/* Waits (up to 5 s) for the flag that only the worker's other task sets:
 * run on the worker itself, with preemption off, it would wait it out. */
static void *wait_for_flag(void *arg)
{
    struct only *o = arg;
    atomic_store(&o->fn_on_task_thread,
                 pthread_equal(pthread_self(), o->task_thread));
    for (int i = 0; i < 5000 && !atomic_load(&o->flag); i++)
        sleep_ms(1);
    return (void *)(intptr_t)(atomic_load(&o->flag) ? 42 : -1);
}

static void *caller(void *arg)
{
    struct only *o = arg;
    o->task_thread = pthread_self();
    void *res = NULL;
    CHECK_OK(mqs_offload(wait_for_flag, o, &res));
    return res;
}

static void *setter(void *arg)
{
    atomic_store(&((struct only *)arg)->flag, 1);
    return NULL;
}

TEST(the_call_blocks_only_its_task)
{
    /* One worker, preemption off: the setter runs only if the caller's
     * call left the worker free. */
    mqs_runtime_t *rt = rt_new_coop(1);
    struct only o = {0};
    mqs_task_t *c = spawn(rt, caller, &o);
    mqs_task_t *s = spawn(rt, setter, &o);
    CHECK(join(c) == (void *)(intptr_t)42);
    join(s);
    CHECK_EQ(atomic_load(&o.fn_on_task_thread), 0);
    mqs_offload_stats_t os;
    CHECK_OK(mqs_offload_stats(rt, &os));
    CHECK_EQ(os.calls, 1);
    CHECK_EQ(os.completed, 1);
    CHECK_EQ(os.threads, 1);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* The bound                                                           */
/* ------------------------------------------------------------------ */

static atomic_int running, peak;

static void *hold_a_while(void *arg)
{
    int now = atomic_fetch_add(&running, 1) + 1;
    int p = atomic_load(&peak);
    while (now > p && !atomic_compare_exchange_weak(&peak, &p, now))
        ;
    sleep_ms(50);
    atomic_fetch_sub(&running, 1);
    return arg;
}

static void *call_once(void *arg)
{
    void *res = NULL;
    CHECK_OK(mqs_offload(hold_a_while, arg, &res));
    CHECK(res == arg);
    return NULL;
}

TEST(calls_beyond_the_bound_wait_for_a_thread)
{
    mqs_runtime_t *rt = rt_pool(2);
    enum { N = 6 };
    mqs_task_t *t[N];
    for (int i = 0; i < N; i++)
        t[i] = spawn(rt, call_once, (void *)(intptr_t)(i + 1));
    for (int i = 0; i < N; i++)
        join(t[i]);
    /* Two at once (the calls overlap: each holds its thread 50 ms), never
     * more. */
    CHECK_EQ(atomic_load(&peak), 2);
    mqs_offload_stats_t os;
    CHECK_OK(mqs_offload_stats(rt, &os));
    CHECK_EQ(os.limit, 2);
    CHECK_EQ(os.threads, 2);
    CHECK_EQ(os.calls, N);
    CHECK_EQ(os.completed, N);
    CHECK_EQ(os.queued, 0);
    CHECK_EQ(os.running, 0);
    CHECK_GE(os.waited, 1);
    CHECK_GE(os.max_wait_ns, 20000000); /* a queued call waited a hold */
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Nothing lost under many callers                                     */
/* ------------------------------------------------------------------ */

static void *add_one(void *arg)
{
    return (void *)((intptr_t)arg + 1);
}

static void *many_calls(void *arg)
{
    intptr_t sum = 0;
    for (intptr_t i = 0; i < 100; i++) {
        void *res = NULL;
        CHECK_OK(mqs_offload(add_one, (void *)i, &res));
        sum += (intptr_t)res;
        if (i % 7 == 0)
            mqs_yield();
    }
    (void)arg;
    return (void *)sum;
}

TEST(many_callers_lose_nothing)
{
    mqs_runtime_t *rt = rt_pool(3);
    enum { N = 16 };
    mqs_task_t *t[N];
    for (int i = 0; i < N; i++)
        t[i] = spawn(rt, many_calls, NULL);
    for (int i = 0; i < N; i++)
        CHECK_EQ((intptr_t)join(t[i]), 100 * 101 / 2);
    mqs_offload_stats_t os;
    CHECK_OK(mqs_offload_stats(rt, &os));
    CHECK_EQ(os.calls, N * 100);
    CHECK_EQ(os.completed, N * 100);
    CHECK_LE(os.threads, 3);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Outside a task, and destroy                                         */
/* ------------------------------------------------------------------ */

static void *which_thread(void *arg)
{
    *(pthread_t *)arg = pthread_self();
    return arg;
}

TEST(outside_a_task_fn_runs_on_the_calling_thread)
{
    pthread_t seen;
    void *res = NULL;
    CHECK_OK(mqs_offload(which_thread, &seen, &res));
    CHECK(res == &seen);
    CHECK(pthread_equal(seen, pthread_self()));
    CHECK_OK(mqs_offload(which_thread, &seen, NULL));
}

static atomic_int slow_done;

static void *slow(void *arg)
{
    sleep_ms(150); /* longer than destroy's deadlock verdict takes */
    return arg;
}

static void *call_slow(void *arg)
{
    void *res = NULL;
    CHECK_OK(mqs_offload(slow, arg, &res));
    CHECK(res == arg);
    atomic_store(&slow_done, 1);
    return NULL;
}

TEST(destroy_waits_for_a_call_in_flight)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.detached = true;
    mqs_task_t *t = NULL;
    CHECK_OK(mqs_spawn(rt, &t, &a, call_slow, &a));
    /* Every task blocked, nothing queued or due: without the call's hold
     * this is a deadlock verdict after three 10 ms passes. */
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(atomic_load(&slow_done), 1);
}

/* ------------------------------------------------------------------ */
/* Bad input and configuration                                         */
/* ------------------------------------------------------------------ */

static void *bad_call(void *arg)
{
    (void)arg;
    CHECK_EQ(mqs_offload(NULL, NULL, NULL), MQS_EINVAL);
    return NULL;
}

TEST(a_null_fn_is_refused)
{
    CHECK_EQ(mqs_offload(NULL, NULL, NULL), MQS_EINVAL);
    run_in_task(1, bad_call, NULL);
}

static int resolve_threads(int workers, int field, const char *env,
                           char *err, size_t n)
{
    if (env)
        setenv("MQS_OFFLOAD_THREADS", env, 1);
    else
        unsetenv("MQS_OFFLOAD_THREADS");
    mqs_config_t cfg, out;
    mqs_config_init(&cfg);
    cfg.workers = workers;
    cfg.offload_threads = field;
    cfg.errbuf = err;
    cfg.errbuf_size = n;
    int rc = mqs_config_resolve(&cfg, &out);
    return rc ? rc : out.offload_threads;
}

TEST(the_bound_defaults_and_refuses_bad_values)
{
    char err[256];
    CHECK_EQ(resolve_threads(2, 0, NULL, err, sizeof err), 16);
    CHECK_EQ(resolve_threads(8, 0, NULL, err, sizeof err), 32);
    CHECK_EQ(resolve_threads(2, 5, NULL, err, sizeof err), 5);
    CHECK_EQ(resolve_threads(2, 5, "3", err, sizeof err), 3);
    CHECK_EQ(resolve_threads(2, -1, NULL, err, sizeof err), MQS_EINVAL);
    CHECK(strstr(err, "config.offload_threads=-1") != NULL);
    CHECK_EQ(resolve_threads(2, 4097, NULL, err, sizeof err), MQS_EINVAL);
    static const char *const bad[] = {"0", "abc", "5000", "-2", "8x"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK_EQ(resolve_threads(2, 0, bad[i], err, sizeof err), MQS_EINVAL);
        CHECK(strstr(err, "MQS_OFFLOAD_THREADS=") != NULL);
        CHECK(strstr(err, "1 to 4096") != NULL);
    }
}

static void *call_add(void *arg)
{
    void *res = NULL;
    CHECK_OK(mqs_offload(add_one, arg, &res));
    return res;
}

TEST(the_stats_dump_shows_the_pool)
{
    mqs_runtime_t *rt = rt_new(2);
    CHECK(join(spawn(rt, call_add, (void *)(intptr_t)1)) == (void *)2);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_OK(mqs_stats_dump(rt, f, false));
    fclose(f);
    CHECK(strstr(buf, "\noffload threads 1/16 idle ") != NULL);
    CHECK(strstr(buf, " calls 1 completed 1 waited 0 ") != NULL);
    free(buf);
    mqs_offload_stats_t os;
    CHECK_EQ(mqs_offload_stats(NULL, &os), MQS_EINVAL);
    CHECK_EQ(mqs_offload_stats(rt, NULL), MQS_EINVAL);
    CHECK_OK(mqs_runtime_destroy(rt));
}
