/*
 * failalloc.c - the failing-allocator mode: every allocation and mapping
 * the library makes is made to fail in turn, and each failure must come
 * back as a clean error with nothing leaked and nothing broken.
 *
 * Linked against the `mqs_fault` archive (the library built with
 * MQS_FAULT_INJECT, src/alloc.h).  The case runs one program of API
 * calls (create a runtime, spawn tasks that sleep, time out on a
 * semaphore and talk over a channel and a pipe, join, destroy) once
 * to count the library's allocations, then again with the 1st, the 2nd,
 * ... failing, until a run sees no failure.  Each step checks that a
 * failing call returned MQS_ENOMEM (or, for calls whose failure is
 * internal, that the program still completes) and unwinds what the
 * program built so far.  Leaks show in the ASan build (`make test` runs
 * every test program there too), whose leak check runs at exit.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "check.h"

long mqs__fault_arm(long n);

#define TASKS 6

struct prog {
    mqs_chan_t *ch;
    mqs_pipe_t *pipe;
    mqs_sem_t sem;
    atomic_int enomem; /* ENOMEM seen inside tasks */
};

/* A call inside a task: 0, or MQS_ENOMEM counted (the injected failure
 * reached a timed wait's timer heap). */
static void expect_ok_or_enomem(struct prog *p, int rc, int other_ok)
{
    if (rc == MQS_ENOMEM)
        atomic_fetch_add(&p->enomem, 1);
    else if (rc != 0 && rc != other_ok)
        CHECK__FAIL("call in a task returned %d (%s)", rc, mqs_strerror(rc));
}

static void *task_body(void *arg)
{
    struct prog *p = arg;
    expect_ok_or_enomem(p, mqs_sleep(1000), 0);
    expect_ok_or_enomem(p, mqs_sem_timedwait(&p->sem, 1000), MQS_ETIMEDOUT);
    long v = 7;
    int rc = mqs_chan_timedsend(p->ch, &v, 1000000);
    expect_ok_or_enomem(p, rc, MQS_ETIMEDOUT);
    char b = 'x';
    size_t done = 0;
    rc = mqs_pipe_write(p->pipe, &b, 1, &done);
    expect_ok_or_enomem(p, rc, 0);
    return NULL;
}

/* One run of the program; returns 0 when every step succeeded, or the
 * first error of a step that may fail with MQS_ENOMEM (checked). */
static int program(void)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 2;
    char err[256];
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    mqs_runtime_t *rt = NULL;
    int rc = mqs_runtime_create(&rt, &cfg);
    if (rc)
        return rc;
    struct prog p = {.enomem = 0};
    CHECK_OK(mqs_sem_init(&p.sem, 0));
    if ((rc = mqs_chan_create(&p.ch, sizeof(long), 16)) != 0)
        goto no_chan;
    if ((rc = mqs_pipe_create(&p.pipe, 64)) != 0)
        goto no_pipe;
    mqs_task_t *t[TASKS];
    int n = 0;
    for (; n < TASKS; n++)
        if ((rc = mqs_spawn(rt, &t[n], NULL, task_body, &p)) != 0)
            break;
    for (int i = 0; i < n; i++)
        CHECK_OK(mqs_join(t[i], NULL));
    CHECK_OK(mqs_pipe_destroy(p.pipe));
no_pipe:
    CHECK_OK(mqs_chan_destroy(p.ch));
no_chan:
    CHECK_OK(mqs_sem_destroy(&p.sem));
    CHECK_OK(mqs_runtime_destroy(rt));
    if (rc == 0 && atomic_load(&p.enomem))
        rc = MQS_ENOMEM;
    return rc;
}

TEST(every_allocation_fails_in_turn)
{
    mqs__fault_arm(0);
    CHECK_OK(program());
    long total = mqs__fault_arm(0);
    fprintf(stderr, "  the program makes %ld allocations and mappings\n",
            total);
    CHECK_GT(total, 0);
    int failed_runs = 0;
    for (long n = 1;; n++) {
        mqs__fault_arm(n);
        int rc = program();
        long seen = mqs__fault_arm(0);
        if (seen < n) { /* the armed call never came: all covered */
            CHECK_OK(rc);
            break;
        }
        if (rc != 0 && rc != MQS_ENOMEM)
            CHECK__FAIL("with allocation %ld failing: %d (%s)", n, rc,
                        mqs_strerror(rc));
        failed_runs += rc == MQS_ENOMEM;
        if (n > 100000)
            CHECK__FAIL("allocation count does not converge");
    }
    fprintf(stderr, "  %d runs reported MQS_ENOMEM\n", failed_runs);
    CHECK_GT(failed_runs, 0);
}
