/*
 * test_signal.c - calls from signal handlers (include/mqs.h, "Signal
 * handlers").  A thread outside the runtime keeps sending SIGUSR1 to the
 * one worker's thread while its tasks yield or ping-pong on semaphores,
 * so most signals land inside the runtime (a scheduling point with the
 * run-queue lock held, a semaphore's wait-queue lock).  The handler calls
 * mqs_yield or mqs_sem_post: each must either work (the handler
 * interrupted the task's own code) or return MQS_ESIGNAL, never switch
 * away from a lock holder or spin on the lock of the code it interrupted
 * (both hung before: the case's timeout catches a regression).  Each case
 * runs until enough signals were refused, a count, not a time.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "check.h"
#include "helpers.h"

#define SIG_REFUSED_MIN 200  /* signals that must have hit the runtime */
#define SIG_ROUNDS_MIN 20000 /* and at least this many rounds          */

struct sig_run {
    pthread_t worker;       /* the worker's thread (one worker)   */
    atomic_int have_worker;
    atomic_int stop_kill;   /* the sender stops                   */
    atomic_int done;        /* the tasks stop                     */
    mqs_sem_t a, b;         /* ping-pong (sem case)               */
};

static struct sig_run *sig_run;
static atomic_long sig_refused, sig_ok, sig_other;
static int (*sig_call)(void);

static void sig_count(int rc)
{
    if (rc == MQS_ESIGNAL)
        atomic_fetch_add(&sig_refused, 1);
    else if (rc == 0)
        atomic_fetch_add(&sig_ok, 1);
    else
        atomic_fetch_add(&sig_other, 1);
}

static void sig_handler(int sig)
{
    (void)sig;
    sig_count(sig_call());
}

static int call_yield(void)
{
    return mqs_yield();
}

static int call_post(void)
{
    return mqs_sem_post(&sig_run->a);
}

static void sig_install(int (*call)(void))
{
    sig_call = call;
    atomic_store(&sig_refused, 0);
    atomic_store(&sig_ok, 0);
    atomic_store(&sig_other, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sig_handler; /* on the task's stack: no SA_ONSTACK */
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
}

static void *sender(void *arg)
{
    struct sig_run *r = arg;
    while (!atomic_load(&r->have_worker))
        sched_yield();
    while (!atomic_load(&r->stop_kill)) {
        pthread_kill(r->worker, SIGUSR1);
        for (int i = 0; i < 200; i++)
            __asm__ volatile("" ::: "memory");
    }
    return NULL;
}

static bool sig_enough(long rounds)
{
    return rounds >= SIG_ROUNDS_MIN &&
           atomic_load(&sig_refused) >= SIG_REFUSED_MIN;
}

static void *yielder(void *arg)
{
    struct sig_run *r = arg;
    r->worker = pthread_self();
    atomic_store(&r->have_worker, 1);
    for (long i = 0; !sig_enough(i); i++)
        CHECK_OK(mqs_yield()); /* from the task's code: never refused */
    atomic_store(&r->done, 1);
    return NULL;
}

static void *partner(void *arg)
{
    struct sig_run *r = arg;
    while (!atomic_load(&r->done))
        mqs_yield();
    return NULL;
}

/* Run two tasks on one worker with signals arriving all the while. */
static void sig_drive(struct sig_run *r, mqs_task_fn a, mqs_task_fn b)
{
    mqs_runtime_t *rt = rt_new(1);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, sender, r), 0);
    mqs_task_t *ta = spawn(rt, a, r), *tb = spawn(rt, b, r);
    join(ta);
    join(tb);
    atomic_store(&r->stop_kill, 1);
    CHECK_EQ(pthread_join(th, NULL), 0);
    signal(SIGUSR1, SIG_IGN);
    CHECK_OK(mqs_runtime_destroy(rt));
    fprintf(stderr, "  handler calls: %ld refused, %ld ran\n",
            atomic_load(&sig_refused), atomic_load(&sig_ok));
    CHECK_EQ(atomic_load(&sig_other), 0);
    CHECK_GE(atomic_load(&sig_refused), SIG_REFUSED_MIN);
}

TEST(yield_from_handler_inside_runtime_is_refused)
{
    static struct sig_run r;
    sig_run = &r;
    sig_install(call_yield);
    sig_drive(&r, yielder, partner);
    CHECK_GT(atomic_load(&sig_ok) + atomic_load(&sig_refused), 0);
}

static void *pinger(void *arg)
{
    struct sig_run *r = arg;
    r->worker = pthread_self();
    atomic_store(&r->have_worker, 1);
    for (long i = 0; !sig_enough(i); i++) {
        CHECK_OK(mqs_sem_wait(&r->a));
        CHECK_OK(mqs_sem_post(&r->b));
    }
    atomic_store(&r->done, 1);
    CHECK_OK(mqs_sem_post(&r->b));
    return NULL;
}

static void *ponger(void *arg)
{
    struct sig_run *r = arg;
    while (!atomic_load(&r->done)) {
        CHECK_OK(mqs_sem_wait(&r->b));
        CHECK_OK(mqs_sem_post(&r->a));
    }
    return NULL;
}

TEST(sem_post_from_handler_inside_runtime_is_refused)
{
    static struct sig_run r;
    sig_run = &r;
    CHECK_OK(mqs_sem_init(&r.a, 1));
    CHECK_OK(mqs_sem_init(&r.b, 0));
    sig_install(call_post);
    sig_drive(&r, pinger, ponger);
}

TEST(yield_outside_a_task_is_eperm_not_esignal)
{
    CHECK_ERR(mqs_yield(), MQS_EPERM);
    CHECK_EQ(mqs_strerror(MQS_ESIGNAL)[0] != 0, 1);
}
