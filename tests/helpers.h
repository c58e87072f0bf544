/*
 * helpers.h - small helpers the test programs share: make a runtime,
 * spawn a task with given attributes, join it, wait for a counter, a
 * seeded random number generator.  Each one fails the current case
 * (check.h) instead of returning an error, so cases read as the steps
 * they take.
 *
 * Include it after check.h (the helpers use CHECK_OK and CHECK__FAIL).
 * Every helper is static inline, so a program that uses only some of them
 * still builds with -Wall -Wextra -Werror.  The ones that look at a
 * task's state need internal.h and exist only where it was included
 * first; the rest go through the public header.  Helpers that only one
 * program uses stay in that program.
 */
#ifndef MQS_TEST_HELPERS_H
#define MQS_TEST_HELPERS_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mqs.h"

/* The seed of the random-schedule mode the shuffle.* ctest entries run
 * the programs under (MQS_SHUFFLE), or 0.  Test runtimes ignore the
 * environment, so rt_create passes it on itself. */
static inline uint64_t test_shuffle_seed(void)
{
    const char *e = getenv("MQS_SHUFFLE");
    return e ? strtoull(e, NULL, 0) : 0;
}

/* Create a runtime from cfg, failing the case with the message
 * mqs_runtime_create wrote (cfg->errbuf is pointed at a local buffer).
 * Under MQS_SHUFFLE a cfg that sets no seed gets that one, and under
 * MQS_TEST_TICK_NS one that sets no tick gets that one (and under
 * MQS_TEST_ACCOUNTING=exact, exact accounting). */
static inline mqs_runtime_t *rt_create(mqs_config_t *cfg)
{
    if (!cfg->shuffle_seed)
        cfg->shuffle_seed = test_shuffle_seed();
    /* The preempt.* ctest entries: a short tick where cfg sets none. */
    const char *tick = getenv("MQS_TEST_TICK_NS");
    if (tick && cfg->preempt_tick_ns == -1)
        cfg->preempt_tick_ns = strtoll(tick, NULL, 10);
    /* exact.conformance.mq: exact accounting where cfg asks for none. */
    const char *acct = getenv("MQS_TEST_ACCOUNTING");
    if (acct && !strcmp(acct, "exact") && cfg->accounting == -1)
        cfg->accounting = MQS_ACCOUNTING_EXACT;
    char err[256] = "";
    cfg->errbuf = err;
    cfg->errbuf_size = sizeof err;
    mqs_runtime_t *rt = NULL;
    int rc = mqs_runtime_create(&rt, cfg);
    cfg->errbuf = NULL;
    cfg->errbuf_size = 0;
    if (rc != 0)
        CHECK__FAIL("mqs_runtime_create(policy %s, %d workers): %s: %s",
                    cfg->policy ? cfg->policy : "default", cfg->workers,
                    mqs_strerror(rc), err);
    CHECK(rt != NULL);
    return rt;
}

/* A configuration of `workers` workers that ignores the environment,
 * the rest as mqs_config_init leaves it: for a case that sets a few
 * fields more before rt_create. */
static inline mqs_config_t cfg_workers(int workers)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = workers;
    return cfg;
}

/* A runtime with `workers` workers (0: one per CPU), the default policy
 * and the environment ignored. */
static inline mqs_runtime_t *rt_new(int workers)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = workers;
    return rt_create(&cfg);
}

/* The same with preemption off: for scenarios built on a task that spins
 * without a scheduling point and must keep its worker meanwhile. */
static inline mqs_runtime_t *rt_new_coop(int workers)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = workers;
    cfg.preempt = 0;
    return rt_create(&cfg);
}

static inline mqs_task_t *spawn_attr(mqs_runtime_t *rt,
                                     const mqs_task_attr_t *a,
                                     mqs_task_fn fn, void *arg)
{
    mqs_task_t *t = NULL;
    CHECK_OK(mqs_spawn(rt, &t, a, fn, arg));
    CHECK(t != NULL);
    return t;
}

/* A task with default attributes. */
static inline mqs_task_t *spawn(mqs_runtime_t *rt, mqs_task_fn fn, void *arg)
{
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    return spawn_attr(rt, &a, fn, arg);
}

/* Attributes of class cls; prio is the nice value for MQS_CLASS_NORMAL,
 * the realtime priority otherwise. */
static inline void attr_prio(mqs_task_attr_t *a, mqs_class_t cls, int prio)
{
    mqs_task_attr_init(a);
    a->sched_class = cls;
    if (cls == MQS_CLASS_NORMAL)
        a->nice = prio;
    else
        a->rt_priority = prio;
}

/* A task of class cls and priority prio (attr_prio) allowed on worker w
 * alone (the mask is copied at spawn). */
static inline mqs_task_t *spawn_prio_on(mqs_runtime_t *rt, int w,
                                        mqs_class_t cls, int prio,
                                        mqs_task_fn fn, void *arg)
{
    mqs_mask_t m;
    mqs_mask_zero(&m);
    mqs_mask_set(&m, w);
    mqs_task_attr_t a;
    attr_prio(&a, cls, prio);
    a.affinity = &m;
    return spawn_attr(rt, &a, fn, arg);
}

/* A default task allowed on worker w alone. */
static inline mqs_task_t *spawn_on(mqs_runtime_t *rt, int w, mqs_task_fn fn,
                                   void *arg)
{
    return spawn_prio_on(rt, w, MQS_CLASS_NORMAL, 0, fn, arg);
}

/* A task of class cls and priority prio (attr_prio). */
static inline mqs_task_t *spawn_prio(mqs_runtime_t *rt, mqs_class_t cls,
                                     int prio, mqs_task_fn fn, void *arg)
{
    mqs_task_attr_t a;
    attr_prio(&a, cls, prio);
    return spawn_attr(rt, &a, fn, arg);
}

/* Join t and return its result.  The result starts as a value no task
 * returns, so a join that succeeds without writing it shows. */
static inline void *join(mqs_task_t *t)
{
    void *res = (void *)(intptr_t)-12345;
    CHECK_OK(mqs_join(t, &res));
    return res;
}

/* Run fn(arg) as one task on a fresh runtime with `workers` workers;
 * fn must return NULL. */
static inline void run_in_task(int workers, mqs_task_fn fn, void *arg)
{
    mqs_runtime_t *rt = rt_new(workers);
    CHECK(join(spawn(rt, fn, arg)) == NULL);
    CHECK_OK(mqs_runtime_destroy(rt));
}

static inline void *ret_arg(void *arg) { return arg; }

/* Wait, from a thread that is not a task, until *c reaches at least v. */
static inline void wait_count(atomic_int *c, int v)
{
    while (atomic_load(c) < v)
        sched_yield();
}

/* Run fn in a forked child (60 s at most) with its stderr read into buf
 * (printed too, for the log); returns its wait status.  fn should end
 * with _exit; returning is exit 0. */
static inline int child_stderr(void (*fn)(void), char *buf, size_t size)
{
    int pfd[2];
    CHECK_EQ(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK_GE(pid, 0);
    if (pid == 0) {
        alarm(60);
        close(pfd[0]);
        dup2(pfd[1], 2);
        close(pfd[1]);
        fn();
        _exit(0);
    }
    close(pfd[1]);
    size_t len = 0;
    ssize_t n;
    while ((n = read(pfd[0], buf + len, size - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = 0;
    close(pfd[0]);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    fprintf(stderr, "  child stderr:\n%s\n", buf);
    return st;
}

/* The child died of SIGABRT (a report from mqs, then abort). */
static inline void check_aborted(int st)
{
    if (WIFEXITED(st))
        CHECK__FAIL("child exited with %d instead of dying of SIGABRT",
                    WEXITSTATUS(st));
    CHECK(WIFSIGNALED(st));
    CHECK_EQ(WTERMSIG(st), SIGABRT);
}

/* splitmix64: a seeded stream, so a printed seed replays a run. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Let others run: yield in a task, nanosleep on other threads.  Pollers
 * are never more urgent than what they wait for, so a yield lets it run. */
static inline void pause_a_bit(void)
{
    if (mqs_self()) {
        mqs_yield();
    } else {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* Capture what is written to stderr (fd 2) between begin and end;
 * end returns it (malloc'd, NUL-terminated). */
struct capture {
    int saved;
    FILE *f;
};
static inline struct capture stderr_begin(void)
{
    struct capture c;
    fflush(stderr);
    c.f = tmpfile();
    CHECK(c.f != NULL);
    c.saved = dup(2);
    CHECK(c.saved >= 0);
    CHECK(dup2(fileno(c.f), 2) == 2);
    return c;
}
static inline char *stderr_end(struct capture c)
{
    fflush(stderr);
    CHECK(dup2(c.saved, 2) == 2);
    close(c.saved);
    /* fd 2 shared the file's offset: its end is what was written */
    off_t n = lseek(fileno(c.f), 0, SEEK_END);
    CHECK_GE(n, 0);
    char *buf = calloc(1, (size_t)n + 1);
    CHECK(buf != NULL);
    CHECK(pread(fileno(c.f), buf, (size_t)n, 0) == n);
    fclose(c.f);
    return buf;
}

#ifdef MQS_INTERNAL_H
/* Wait until t, which set *announced just before a blocking call, is
 * blocked (in that call: nothing else blocks in between). */
static inline void wait_blocked(mqs_task_t *h, atomic_int *announced)
{
    struct mqs_task *t = mqs__task_of(h);
    while (!atomic_load(announced) ||
           atomic_load_explicit(&t->state, memory_order_acquire) !=
               MQS__BLOCKED)
        pause_a_bit();
}
#endif

#endif /* MQS_TEST_HELPERS_H */
