/*
 * test_preempt.c - preemption (src/preempt.c): tasks that never call the
 * runtime share a worker; the runtime's text and the libraries' are never
 * a stop point; errno and FP/SIMD registers survive a forced switch; a
 * disabled section is not stopped and its stop comes at the enable; a
 * realtime task wakes on time among spinners, and soon when its wake-up's
 * stop landed in a library call, or as the I/O call's system call it
 * landed in returns; a timer on a busy worker
 * fires; destroy stops a spinner; malloc and snprintf hammered under a
 * short tick on every policy; a task stopped with little more stack left
 * than a stop needs resumes, and one with less is reported as an
 * overflow; a task that runs after a stop has the worker's signal mask;
 * the monitor's looks move apart while every run is short; a running
 * task is judged by the level its policy runs it at; bad settings are
 * refused.
 *
 * Under TSan the cases that need a spinner stopped are left out: TSan's
 * runtime holds an asynchronous signal until the thread calls into it,
 * which a spinning task never does.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static mqs_runtime_t *rt_preempt(int workers, const char *policy,
                                 int64_t tick_ns)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = workers;
    cfg.policy = policy;
    cfg.preempt = 1;
    cfg.preempt_tick_ns = tick_ns;
    return rt_create(&cfg);
}

/* Where a stop may happen: the program's text, never the runtime's nor a
 * shared library's. */
TEST(stop_points_are_the_programs_own_code)
{
    mqs_runtime_t *rt = rt_preempt(1, NULL, -1);
    /* Functions of many files of the library (one object): all inside. */
    uintptr_t in[] = {
        (uintptr_t)mqs_yield,          (uintptr_t)mqs_spawn,
        (uintptr_t)mqs__schedule,      (uintptr_t)mqs__enqueue_task,
        (uintptr_t)mqs_chan_send,      (uintptr_t)mqs_mutex_lock,
        (uintptr_t)mqs_runtime_create, (uintptr_t)mqs_policy_list,
        (uintptr_t)mqs_preempt_enable, (uintptr_t)mqs__worker_loop,
        (uintptr_t)mqs_now_ns,         (uintptr_t)mqs_runtime_stats,
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        CHECK(mqs__in_runtime_text(in[i]));
        CHECK(!mqs__preempt_pc_safe(rt, in[i]));
    }
    /* Every policy's ops too (they are in the same object). */
    for (const struct mqs_policy *const *p = mqs_policy_list(); *p; p++)
        CHECK(!mqs__preempt_pc_safe(rt, (uintptr_t)(*p)->pick));
    /* This program's own code: a stop point. */
    CHECK(mqs__preempt_pc_safe(rt, (uintptr_t)mono_ns));
    CHECK(!mqs__in_runtime_text((uintptr_t)mono_ns));
    /* Nor the vDSO (entered only through libc or an interceptor, which
     * may hold a lock below it; qemu-user maps none). */
    uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (vdso)
        CHECK(!mqs__preempt_pc_safe(rt, vdso + 64));
    /* libc and the loader: never. */
    const char *libc_fns[] = {"malloc", "free", "snprintf", "memcpy",
                              "pthread_mutex_lock", "dlsym"};
    for (size_t i = 0; i < sizeof libc_fns / sizeof libc_fns[0]; i++) {
        void *f = dlsym(RTLD_DEFAULT, libc_fns[i]);
        CHECK(f != NULL);
        CHECK(!mqs__preempt_pc_safe(rt, (uintptr_t)f));
    }
    CHECK_OK(mqs_runtime_destroy(rt));
}

#ifndef MQS_TSAN

/* Destroy rt, returning its counters as they were just before. */
static mqs_worker_stats_t destroy_counting(mqs_runtime_t *rt)
{
    mqs_worker_stats_t st;
    CHECK_OK(mqs_runtime_stats(rt, &st));
    CHECK_OK(mqs_runtime_destroy(rt));
    return st;
}

/* Spinners on one worker: each counts until it has seen every other one
 * count too (or 5 s pass), never calling the runtime. */
#define SPINNERS 3
struct spin {
    atomic_long count[SPINNERS];
    atomic_int saw_all[SPINNERS];
    uint64_t deadline;
};
struct spinner {
    struct spin *s;
    int i;
};

static bool all_counted(struct spin *s)
{
    for (int j = 0; j < SPINNERS; j++)
        if (!atomic_load_explicit(&s->count[j], memory_order_relaxed))
            return false;
    return true;
}

static void *spinner(void *arg)
{
    struct spinner *me = arg;
    struct spin *s = me->s;
    for (long n = 1;; n++) {
        atomic_store_explicit(&s->count[me->i], n, memory_order_relaxed);
        if ((n & 1023) == 0) {
            if (all_counted(s)) {
                atomic_store(&s->saw_all[me->i], 1);
                break;
            }
            if (mono_ns() > s->deadline)
                break;
        }
    }
    return NULL;
}

static void run_spinners(mqs_runtime_t *rt)
{
    struct spin s = {.deadline = mono_ns() + 5000000000u};
    struct spinner sp[SPINNERS];
    mqs_task_t *t[SPINNERS];
    for (int i = 0; i < SPINNERS; i++) {
        sp[i] = (struct spinner){&s, i};
        t[i] = spawn(rt, spinner, &sp[i]);
    }
    for (int i = 0; i < SPINNERS; i++)
        join(t[i]);
    for (int i = 0; i < SPINNERS; i++)
        CHECK_EQ(atomic_load(&s.saw_all[i]), 1);
}

/* A task alone on its worker with nothing due is never signalled: no
 * stop and no deferred request in 100 ms of spinning, under every
 * policy, with another worker idle beside it. */
static void *lone_spinner(void *arg)
{
    uint64_t end = *(uint64_t *)arg;
    volatile unsigned long n = 0;
    while (mono_ns() < end)
        for (int i = 0; i < 100000; i++)
            n++;
    return NULL;
}

TEST(a_lone_task_is_not_signalled)
{
    for (const struct mqs_policy *const *p = mqs_policy_list(); *p; p++) {
        mqs_runtime_t *rt = rt_preempt(2, (*p)->name, -1);
        uint64_t end = mono_ns() + 100000000u;
        join(spawn(rt, lone_spinner, &end));
        mqs_worker_stats_t st = destroy_counting(rt);
        fprintf(stderr, "  %s: %llu stops, %llu deferred\n", (*p)->name,
                (unsigned long long)st.preemptions,
                (unsigned long long)st.preempt_deferred);
        CHECK_EQ(st.preemptions, 0);
        CHECK_EQ(st.preempt_deferred, 0);
    }
}

TEST(spinners_share_one_worker_under_every_policy)
{
    for (const struct mqs_policy *const *p = mqs_policy_list(); *p; p++) {
        mqs_runtime_t *rt = rt_preempt(1, (*p)->name, -1);
        run_spinners(rt);
        CHECK_GT(destroy_counting(rt).preemptions, 0);
    }
}

/* Two spinners of the given classes and priorities on one worker for
 * 400 ms: their CPU times (mqs_task_stats), a first, b second. */
struct window {
    atomic_int stop;
};

static void *window_spinner(void *arg)
{
    struct window *w = arg;
    while (!atomic_load_explicit(&w->stop, memory_order_relaxed))
        ;
    return NULL;
}

static void spin_pair(const char *policy, mqs_class_t ca, int pa,
                      mqs_class_t cb, int pb, uint64_t *ra, uint64_t *rb)
{
    mqs_runtime_t *rt = rt_preempt(1, policy, -1);
    struct window w = {0};
    mqs_task_t *a = spawn_prio(rt, ca, pa, window_spinner, &w);
    mqs_task_t *b = spawn_prio(rt, cb, pb, window_spinner, &w);
    struct timespec ts = {0, 400000000};
    nanosleep(&ts, NULL);
    mqs_task_stats_t sa, sb;
    CHECK_OK(mqs_task_stats(a, &sa));
    CHECK_OK(mqs_task_stats(b, &sb));
    atomic_store(&w.stop, 1);
    join(a);
    join(b);
    CHECK_OK(mqs_runtime_destroy(rt));
    /* A running task's time counts up to its last switch: both have
     * switched many times in 400 ms. */
    *ra = sa.run_ns;
    *rb = sb.run_ns;
}

/* A tick that finds the slice not spent learns how long it has left
 * (the policy's tick op), and the monitor asks no tick before then: a
 * FIFO spinner with another FIFO task of its priority queued behind it
 * (no slice ends its run) is signalled once, not once a tick; two
 * normal spinners with 20 ms slices about twice a slice, not 20 times.
 * Every signal the handler takes is counted (preempt_signals). */
static mqs_worker_stats_t spin_window(const char *policy, mqs_class_t cls,
                                      int prio, uint64_t ms)
{
    mqs_runtime_t *rt = rt_preempt(1, policy, -1);
    struct window w = {0};
    mqs_task_t *a = spawn_prio(rt, cls, prio, window_spinner, &w);
    mqs_task_t *b = spawn_prio(rt, cls, prio, window_spinner, &w);
    struct timespec ts = {0, (long)(ms * 1000000)};
    nanosleep(&ts, NULL);
    mqs_worker_stats_t st;
    CHECK_OK(mqs_runtime_stats(rt, &st));
    atomic_store(&w.stop, 1);
    join(a);
    join(b);
    CHECK_OK(mqs_runtime_destroy(rt));
    return st;
}

TEST(a_tick_is_asked_only_when_the_slice_can_be_over)
{
    for (const struct mqs_policy *const *p = mqs_policy_list(); *p; p++) {
        mqs_worker_stats_t st =
            spin_window((*p)->name, MQS_CLASS_FIFO, 10, 300);
        fprintf(stderr, "  %s FIFO: %llu signals, %llu stops\n", (*p)->name,
                (unsigned long long)st.preempt_signals,
                (unsigned long long)st.preemptions);
        CHECK_LT(st.preempt_signals, 30); /* 300 at a signal a tick */
    }
    mqs_worker_stats_t st =
        spin_window("mq:slice_ns=20000000,latency_ns=100000000",
                    MQS_CLASS_NORMAL, 0, 300);
    fprintf(stderr, "  mq 20 ms slices: %llu signals, %llu stops\n",
            (unsigned long long)st.preempt_signals,
            (unsigned long long)st.preemptions);
    CHECK_GT(st.preemptions, 4);
    CHECK_LT(st.preempt_signals, 3 * st.preemptions + 10);
}

/* Calm looks: tasks that run in short pieces, yielding, or spinners. */
static atomic_int calm_stop;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *calm_yielder(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&calm_stop, memory_order_relaxed))
        CHECK_OK(mqs_yield());
    return NULL;
}

static void *calm_spinner(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&calm_stop, memory_order_relaxed))
        ;
    return NULL;
}

/* The monitor's looks in 300 ms of two tasks of fn on each worker. */
static uint64_t looks_beside(mqs_runtime_t *rt, mqs_task_fn fn)
{
    atomic_store(&calm_stop, 0);
    mqs_task_t *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = spawn_on(rt, i % 2, fn, NULL);
    sleep_ms(30); /* past the looks' first steps apart */
    uint64_t l0 = atomic_load(&rt->pre.looks);
    sleep_ms(300);
    uint64_t looks = atomic_load(&rt->pre.looks) - l0;
    atomic_store(&calm_stop, 1);
    for (int i = 0; i < 4; i++)
        join(t[i]);
    return looks;
}

TEST(the_monitor_looks_less_often_while_every_run_is_short)
{
    /* Tasks that yield all the time need no stop: under exact
     * accounting (cfs) the looks move apart up to eight ticks (preempt.c,
     * "Calm").  Spinners beside others keep them at a tick. */
    mqs_runtime_t *rt = rt_preempt(2, "cfs", 1000000);
    uint64_t busy = looks_beside(rt, calm_spinner);
    /* A worker thread the OS takes away for a tick makes a look find a
     * run going on since the last (and ask a stop): under ctest -j2 the
     * yielders' looks counted 474 once.  The least of three tries. */
    uint64_t calm = looks_beside(rt, calm_yielder);
    for (int i = 0; i < 2 && calm * 3 >= busy; i++) {
        uint64_t again = looks_beside(rt, calm_yielder);
        calm = again < calm ? again : calm;
    }
    CHECK_OK(mqs_runtime_destroy(rt));
    /* Under tick accounting (mq) the looks are the clock that charges
     * the yielders' runs (sched_clock.h): a tick apart while others
     * wait, about 300 in 300 ms, never calm (8 ticks: ~40). */
    rt = rt_preempt(2, "mq", 1000000);
    uint64_t ticked = looks_beside(rt, calm_yielder);
    CHECK_OK(mqs_runtime_destroy(rt));
    printf("  looks in 300 ms: %llu beside yielders, %llu beside "
           "spinners, %llu beside yielders under tick accounting\n",
           (unsigned long long)calm, (unsigned long long)busy,
           (unsigned long long)ticked);
    CHECK_LT(calm * 3, busy);
    CHECK_GT(ticked, 150);
}

/* Nice weights hold for tasks that never yield: nice 0 against nice 5 is
 * 1024:335 under the weighted policies (about 3:1). */
TEST(nice_weights_hold_for_spinners)
{
    const char *pol[] = {"cfs", "eevdf", "bfs"};
    for (size_t i = 0; i < sizeof pol / sizeof pol[0]; i++) {
        uint64_t r0, r5;
        spin_pair(pol[i], MQS_CLASS_NORMAL, 0, MQS_CLASS_NORMAL, 5, &r0,
                  &r5);
        fprintf(stderr, "  %s: nice 0 %.0f ms, nice 5 %.0f ms\n", pol[i],
                r0 / 1e6, r5 / 1e6);
        CHECK_GT(r5, 0);
        CHECK_GT(r0, 3 * r5 / 2); /* well above 1:1 */
        CHECK_LT(r0, 10 * r5);    /* and nice 5 not starved (a loaded
                                     host stretched bfs's to 8:1) */
    }
}

/* RR tasks of one priority take turns by slice; an IDLE task gives way
 * to a normal one. */
TEST(rr_slices_and_idle_class_hold_for_spinners)
{
    for (const struct mqs_policy *const *p = mqs_policy_list(); *p; p++) {
        uint64_t a, b;
        spin_pair((*p)->name, MQS_CLASS_RR, 10, MQS_CLASS_RR, 10, &a, &b);
        CHECK_GT(a, 0);
        CHECK_GT(b, 0);
        CHECK_LT(a, 3 * b);
        CHECK_LT(b, 3 * a);
        spin_pair((*p)->name, MQS_CLASS_IDLE, 0, MQS_CLASS_NORMAL, 0, &a,
                  &b);
        fprintf(stderr, "  %s: idle %.1f ms, normal %.1f ms\n", (*p)->name,
                a / 1e6, b / 1e6);
        CHECK_LT(a * 10, b); /* idle gets under a tenth */
    }
}

/* errno is the thread's: each task keeps its own across forced switches
 * (and the FP/SIMD registers the interrupted code holds). */
typedef double v2d __attribute__((vector_size(16)));
struct regs {
    atomic_int progress[2];
    atomic_int ok[2];
    atomic_int done[2]; /* saw its 20 switches */
    uint64_t deadline;
};
struct regs_arg {
    struct regs *r;
    int i;
};

static void *keeps_state(void *arg)
{
    struct regs_arg *a = arg;
    struct regs *r = a->r;
    int other = 1 - a->i;
    errno = 1000 + a->i;
    /* A value kept in vector registers through the whole loop. */
    v2d x = {1.0 + a->i, 2.0 + a->i}, step = {0.5, 0.25};
    v2d expect = x;
    int seen = atomic_load(&r->progress[other]), switches = 0;
    /* Each counts the other's runs, and one may count a run more than
     * the other (a run that stored no progress): the first to reach 20
     * goes on until the other has too, or it would leave the other
     * alone on the worker, with no run left to count. */
    for (long n = 0; (switches < 20 || !atomic_load(&r->done[other])) &&
                     mono_ns() < r->deadline;
         n++) {
        x += step;
        expect += step;
        __asm__ volatile("" : "+x"(x)); /* x stays in its register */
        atomic_store_explicit(&r->progress[a->i], (int)n,
                              memory_order_relaxed);
        int now = atomic_load_explicit(&r->progress[other],
                                       memory_order_relaxed);
        if (now != seen) { /* the other ran: this one was stopped */
            seen = now;
            if (++switches == 20)
                atomic_store(&r->done[a->i], 1);
        }
    }
    bool same = x[0] == expect[0] && x[1] == expect[1];
    atomic_store(&r->ok[a->i], switches >= 20 && same &&
                                   errno == 1000 + a->i);
    return NULL;
}

TEST(errno_and_vector_registers_survive_a_forced_switch)
{
    mqs_runtime_t *rt = rt_preempt(1, NULL, 50000);
    struct regs r = {.deadline = mono_ns() + 5000000000u};
    struct regs_arg a[2] = {{&r, 0}, {&r, 1}};
    mqs_task_t *t0 = spawn(rt, keeps_state, &a[0]);
    mqs_task_t *t1 = spawn(rt, keeps_state, &a[1]);
    join(t0);
    join(t1);
    CHECK_EQ(atomic_load(&r.ok[0]), 1);
    CHECK_EQ(atomic_load(&r.ok[1]), 1);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* A disabled section is not stopped; the stop asked meanwhile comes at
 * the enable.  The other task is queued from outside while the section
 * runs (a child spawned from the task would run first). */
struct quiet {
    atomic_int other_ran, in_section, queued;
    int ran_during, ran_after;
};

static void *other(void *arg)
{
    struct quiet *q = arg;
    atomic_store(&q->other_ran, 1);
    return NULL;
}

static void spin_ms(int ms)
{
    uint64_t end = mono_ns() + (uint64_t)ms * 1000000;
    while (mono_ns() < end)
        ;
}

static void *quiet_section(void *arg)
{
    struct quiet *q = arg;
    mqs_preempt_disable();
    mqs_preempt_disable(); /* nested */
    atomic_store(&q->in_section, 1);
    while (!atomic_load(&q->queued))
        ;
    spin_ms(30); /* 30 ticks with the other task waiting */
    mqs_preempt_enable();
    q->ran_during = atomic_load(&q->other_ran);
    spin_ms(30);
    q->ran_during |= atomic_load(&q->other_ran);
    mqs_preempt_enable(); /* the stop asked meanwhile happens here */
    q->ran_after = atomic_load(&q->other_ran);
    mqs_preempt_enable(); /* unbalanced: nothing */
    return NULL;
}

TEST(disabled_section_is_not_stopped_and_stops_at_the_enable)
{
    mqs_runtime_t *rt = rt_preempt(1, "mq", -1);
    struct quiet q = {0};
    mqs_task_t *t = spawn(rt, quiet_section, &q);
    wait_count(&q.in_section, 1);
    mqs_task_t *o = spawn(rt, other, &q);
    atomic_store(&q.queued, 1);
    join(t);
    join(o);
    CHECK_EQ(q.ran_during, 0);
    CHECK_EQ(q.ran_after, 1);
    CHECK_GT(destroy_counting(rt).preempt_deferred, 0);
}

/* A FIFO task sleeping 1 ms at a time among spinning normal tasks on
 * every worker: it runs each time (its timer fires on a busy worker, and
 * it preempts the spinner there). */
struct rt_wake {
    atomic_int stop;
    uint64_t late_max, deadline;
    int rounds;
};

/* Pure computation: the clock (libc, where no stop is safe) is read once
 * per million turns only. */
static void *normal_spinner(void *arg)
{
    struct rt_wake *w = arg;
    for (unsigned long n = 1;
         !atomic_load_explicit(&w->stop, memory_order_relaxed); n++)
        if (n % 1000000 == 0 && mono_ns() > w->deadline)
            break;
    return NULL;
}

static void *fifo_sleeper(void *arg)
{
    struct rt_wake *w = arg;
    for (w->rounds = 0; w->rounds < 50; w->rounds++) {
        uint64_t t0 = mono_ns();
        CHECK_OK(mqs_sleep(1000000));
        uint64_t late = mono_ns() - t0 - 1000000;
        if (late > w->late_max)
            w->late_max = late;
    }
    atomic_store(&w->stop, 1);
    return NULL;
}

TEST(fifo_task_wakes_on_time_among_spinners)
{
    mqs_runtime_t *rt = rt_preempt(2, NULL, -1);
    struct rt_wake w = {.deadline = mono_ns() + 5000000000u};
    mqs_task_t *s0 = spawn_on(rt, 0, normal_spinner, &w);
    mqs_task_t *s1 = spawn_on(rt, 1, normal_spinner, &w);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.sched_class = MQS_CLASS_FIFO;
    a.rt_priority = 10;
    mqs_task_t *f = spawn_attr(rt, &a, fifo_sleeper, &w);
    join(f);
    join(s0);
    join(s1);
    CHECK_EQ(w.rounds, 50);
    /* A timer on a busy worker fires at the monitor's next look (1 ms
     * tick) at the latest; 20 ms leaves room for a loaded host. */
    CHECK_LT(w.late_max, 20000000u);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* A wake-up's stop that lands in a library call.  A realtime task woken
 * from outside onto a worker whose normal task sleeps in nanosleep (libc:
 * no stop is safe there): the wake-up's signal ends the sleep and is
 * deferred, and the task then spins in its own code.  The monitor had
 * planned nothing for it, and with a 1 s tick its next look is up to
 * eight ticks away; the deferral brings that look forward (retry_soon),
 * so the realtime task runs while the other still spins (200 ms here).
 * Three rounds, each from a parked monitor. */
struct urgent_late {
    mqs_sem_t sem;
    atomic_int sleeping, ran;
};

static void *urgent_waiter(void *arg)
{
    struct urgent_late *u = arg;
    CHECK_OK(mqs_sem_wait(&u->sem));
    atomic_store(&u->ran, 1);
    return NULL;
}

/* 1 if the waiter ran while this one spun. */
static void *sleep_then_spin(void *arg)
{
    struct urgent_late *u = arg;
    atomic_store(&u->sleeping, 1);
    struct timespec ts = {0, 500000000}; /* ended early by the signal */
    nanosleep(&ts, NULL);
    uint64_t end = mono_ns() + 200000000u;
    for (unsigned long n = 1;
         !atomic_load_explicit(&u->ran, memory_order_relaxed); n++)
        if (n % 100000 == 0 && mono_ns() > end)
            break;
    return (void *)(intptr_t)atomic_load(&u->ran);
}

TEST(a_wakeups_stop_deferred_in_a_library_call_is_asked_again_soon)
{
    mqs_runtime_t *rt = rt_preempt(2, NULL, 1000000000);
    for (int round = 0; round < 3; round++) {
        struct urgent_late u = {0};
        CHECK_OK(mqs_sem_init(&u.sem, 0));
        mqs_task_t *r = spawn_prio_on(rt, 1, MQS_CLASS_FIFO, 10,
                                      urgent_waiter, &u);
        mqs_worker_stats_t w0, w1;
        CHECK_OK(mqs_worker_stats(rt, 1, &w0));
        mqs_task_t *s = spawn_on(rt, 1, sleep_then_spin, &u);
        while (!atomic_load(&u.sleeping))
            sched_yield();
        struct timespec ts = {0, 20000000}; /* inside its nanosleep */
        nanosleep(&ts, NULL);
        CHECK_OK(mqs_sem_post(&u.sem));
        intptr_t ran_while_spinning = (intptr_t)join(s);
        join(r);
        CHECK_OK(mqs_worker_stats(rt, 1, &w1));
        printf("  round %d: ran while the other spun: %s; %llu signals, "
               "%llu deferred\n", round, ran_while_spinning ? "yes" : "no",
               (unsigned long long)(w1.preempt_signals - w0.preempt_signals),
               (unsigned long long)(w1.preempt_deferred -
                                    w0.preempt_deferred));
        /* The case itself: the first stop was deferred. */
        CHECK_GE(w1.preempt_deferred - w0.preempt_deferred, 1);
        CHECK_EQ(ran_while_spinning, 1);
        CHECK_OK(mqs_sem_destroy(&u.sem));
    }
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* The same stop deferred in an I/O call's system call (the nanosleep
 * marked as io.c marks its calls): taken as the call returns, so the
 * waiter has run by then, and with no retry asked of the monitor, whose
 * looks stay where they were (a retry is a look at once, then up to
 * four 50 us apart). */
struct in_call {
    struct urgent_late u;
    int ran_at_return;
};

static void *sleep_in_an_io_call(void *arg)
{
    struct in_call *c = arg;
    atomic_store(&c->u.sleeping, 1);
    struct mqs_worker *w = mqs__preempt_syscall_begin();
    struct timespec ts = {0, 500000000}; /* ended early by the signal */
    nanosleep(&ts, NULL);
    mqs__preempt_syscall_end(w);
    c->ran_at_return = atomic_load(&c->u.ran);
    return NULL;
}

TEST(a_wakeups_stop_deferred_in_an_io_calls_system_call_is_taken_as_it_returns)
{
    mqs_runtime_t *rt = rt_preempt(2, NULL, 1000000000);
    uint64_t looks = 0;
    for (int round = 0; round < 3; round++) {
        struct in_call c = {0};
        CHECK_OK(mqs_sem_init(&c.u.sem, 0));
        mqs_task_t *r = spawn_prio_on(rt, 1, MQS_CLASS_FIFO, 10,
                                      urgent_waiter, &c.u);
        mqs_worker_stats_t w0, w1;
        CHECK_OK(mqs_worker_stats(rt, 1, &w0));
        mqs_task_t *s = spawn_on(rt, 1, sleep_in_an_io_call, &c);
        while (!atomic_load(&c.u.sleeping))
            sched_yield();
        struct timespec ts = {0, 20000000}; /* inside its nanosleep */
        nanosleep(&ts, NULL);
        uint64_t looks0 = atomic_load(&rt->pre.looks);
        CHECK_OK(mqs_sem_post(&c.u.sem));
        join(s);
        join(r);
        nanosleep(&ts, NULL); /* time for a look that was asked for */
        uint64_t looks1 = atomic_load(&rt->pre.looks);
        CHECK_OK(mqs_worker_stats(rt, 1, &w1));
        printf("  round %d: the waiter had run at the return: %s; %llu "
               "signals, %llu deferred, %llu looks meanwhile\n", round,
               c.ran_at_return ? "yes" : "no",
               (unsigned long long)(w1.preempt_signals - w0.preempt_signals),
               (unsigned long long)(w1.preempt_deferred -
                                    w0.preempt_deferred),
               (unsigned long long)(looks1 - looks0));
        CHECK_GE(w1.preempt_deferred - w0.preempt_deferred, 1);
        CHECK_EQ(c.ran_at_return, 1);
        looks += looks1 - looks0;
        CHECK_OK(mqs_sem_destroy(&c.u.sem));
    }
    /* One look may fall there by itself (a tick is 1 s here); a retry
     * asked would be a look each round. */
    CHECK_LE(looks, 1);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* A stop near the guard.  The kernel pushes its signal frame on the
 * task's own stack (no SA_ONSTACK), and the handler's frames down to the
 * switch follow it: a task stopped with only a little more than that left
 * above its guard must stop and resume as any other; with less than a
 * frame left it is an overflow, reported by name (src/overflow.c). */
#define NEAR_PAINT 0x6b5f1e2d3c4a5968ull
#define NEAR_STOPS 20

struct near {
    size_t want;         /* room to leave under the spinning frame      */
    bool no_clock;       /* spin without reading the clock (no call)    */
    uint64_t deadline;
    atomic_int other_runs, done;
    int stops;           /* the other task ran: this one was stopped   */
    size_t room, used;   /* room it had; deepest a stop wrote below sp  */
};

static inline uintptr_t stack_pointer(void)
{
    uintptr_t sp;
#if defined(__x86_64__)
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
    __asm__ volatile("mov %0, sp" : "=r"(sp));
#else
#error "test_preempt: stack_pointer for x86-64 and aarch64 only"
#endif
    return sp;
}

/* Plain stack frames (ASan would pad them or move them to its fake
 * stack), and no checks on the writes below sp. */
#define NEAR_PLAIN __attribute__((noinline, no_sanitize("address")))

/* Spin in the program's own code until the other task has run
 * NEAR_STOPS times, then read how deep the stops wrote into the painted
 * stack below. */
NEAR_PLAIN static void near_spin(struct near *n, uint64_t *lo)
{
    uintptr_t sp = stack_pointer();
    n->room = sp - (uintptr_t)lo;
    /* All but the 256 bytes under sp (x86-64's red zone: this frame's). */
    size_t words = n->room > 512 ? (n->room - 256) / 8 : 0;
    volatile uint64_t *p = lo;
    for (size_t i = 0; i < words; i++)
        p[i] = NEAR_PAINT;
    int seen = atomic_load(&n->other_runs);
    for (unsigned long k = 1; n->stops < NEAR_STOPS; k++) {
        int now = atomic_load_explicit(&n->other_runs, memory_order_relaxed);
        if (now != seen) {
            seen = now;
            n->stops++;
        }
        if (!n->no_clock && (k & 0xfffff) == 0 && mono_ns() > n->deadline)
            break;
    }
    size_t i = 0;
    while (i < words && p[i] == NEAR_PAINT)
        i++;
    n->used = sp - (uintptr_t)(p + i);
}

/* Eat the stack down to want bytes above its bottom, then spin. */
NEAR_PLAIN static void near_descend(struct near *n, uint64_t *lo)
{
    size_t room = stack_pointer() - (uintptr_t)lo;
    char *eat = alloca(room > n->want ? room - n->want : 16);
    __asm__ volatile("" : : "r"(eat) : "memory");
    near_spin(n, lo);
}

static void *near_guard(void *arg)
{
    struct near *n = arg;
    near_descend(n, (uint64_t *)mqs__task_of(mqs_self())->stack_lo);
    atomic_store(&n->done, 1);
    return NULL;
}

/* The task that waits for the worker: it runs only when the spinner is
 * stopped, and yields straight back. */
static void *near_other(void *arg)
{
    struct near *n = arg;
    while (!atomic_load(&n->done)) {
        atomic_fetch_add(&n->other_runs, 1);
        mqs_yield();
    }
    return NULL;
}

/* One worker, the spinner with a stack of stack_size and the other task;
 * returns the preemptions counted. */
static uint64_t near_run(struct near *n, size_t stack_size)
{
    mqs_runtime_t *rt = rt_preempt(1, NULL, -1);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.stack_size = stack_size;
    a.name = "near-guard";
    mqs_task_t *t = spawn_attr(rt, &a, near_guard, n);
    mqs_task_t *o = spawn(rt, near_other, n);
    join(t);
    join(o);
    return destroy_counting(rt).preemptions;
}

TEST(a_stop_near_the_guard_resumes)
{
    /* How deep a stop writes on this machine (its CPU's signal frame,
     * then the handler's frames), with room to spare. */
    struct near m = {.want = 48 * 1024, .deadline = mono_ns() + 5000000000u};
    CHECK_GT(near_run(&m, 64 * 1024), 0);
    CHECK_EQ(m.stops, NEAR_STOPS);
    fprintf(stderr, "  a stop wrote %zu bytes below the spinner's sp "
            "(AT_MINSIGSTKSZ %lu)\n", m.used,
            (unsigned long)getauxval(AT_MINSIGSTKSZ));
    /* The frame went on the task's stack: more than a few words. */
    CHECK_GT(m.used, 512);
    /* What include/mqs.h tells a task to leave for a stop (ASan's
     * handler frames are larger). */
    size_t min = (size_t)getauxval(AT_MINSIGSTKSZ);
#ifdef MQS_ASAN
    size_t extra = 4096;
#else
    size_t extra = 2048;
#endif
    if (min)
        CHECK_LE(m.used, min + extra);
    /* Now a 16 KiB stack (larger only where the frame is huge) with a
     * little more than that left under the spinning frame. */
    struct near n = {.want = m.used + 1024,
                     .deadline = mono_ns() + 5000000000u};
    size_t stack = n.want + 8192 <= 16384 ? 16384
                                          : (n.want + 8192 + 4095) & ~4095ul;
    CHECK_GT(near_run(&n, stack), 0);
    CHECK_EQ(n.stops, NEAR_STOPS);
    CHECK_LE(n.room, n.want);
    fprintf(stderr, "  %zu KiB stack, %zu bytes left, a stop wrote %zu\n",
            stack / 1024, n.room, n.used);
}

/* Less than a frame left: the kernel cannot push the frame and sends
 * SIGSEGV instead, which is reported as the task's overflow. */
static void near_child(void)
{
    static struct near n = {.want = 256, .no_clock = true};
    near_run(&n, 16 * 1024);
    _exit(9); /* must not get here */
}

TEST(a_stop_with_less_than_a_frame_left_is_reported_as_an_overflow)
{
    char buf[8192];
    check_aborted(child_stderr(near_child, buf, sizeof buf));
    CHECK_STR_CONTAINS(buf, "mqs: task near-guard overflowed its 16 KiB "
                            "stack (a signal's frame did not fit");
}

/* destroy without waiting stops a task that never yields. */
static void *forever(void *arg)
{
    atomic_store((atomic_int *)arg, 1);
    for (;;)
        __asm__ volatile("");
    return NULL;
}

TEST(destroy_stops_a_task_that_never_yields)
{
    mqs_runtime_t *rt = rt_preempt(1, NULL, -1);
    atomic_int started = 0;
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.detached = true;
    CHECK_OK(mqs_spawn(rt, NULL, &a, forever, &started));
    wait_count(&started, 1);
    FILE *devnull = fopen("/dev/null", "w");
    CHECK_EQ(mqs_runtime_destroy_ex(rt, MQS_DESTROY_REPORT, devnull), 1);
    fclose(devnull);
}

/* malloc, free and snprintf (libc's locks and per-thread caches) from
 * tasks stopped every 50 us or so, on every policy: no deadlock, no heap
 * corruption (ASan checks the heap in the sanitizer build). */
struct hammer {
    uint64_t deadline;
    atomic_long ops;
};

static void *hammer(void *arg)
{
    struct hammer *h = arg;
    char buf[64];
    while (mono_ns() < h->deadline) {
        void *p[8];
        for (int i = 0; i < 8; i++) {
            p[i] = malloc(16 + (size_t)(i * 97));
            CHECK(p[i] != NULL);
            memset(p[i], i, 16);
        }
        snprintf(buf, sizeof buf, "%ld %p", (long)atomic_load(&h->ops), p[3]);
        for (int i = 0; i < 8; i++)
            free(p[i]);
        atomic_fetch_add_explicit(&h->ops, 1, memory_order_relaxed);
    }
    return NULL;
}

TEST(malloc_and_snprintf_under_a_short_tick_on_every_policy)
{
    const char *e = getenv("MQS_TEST_HAMMER_MS");
    uint64_t ms = e ? strtoull(e, NULL, 10) : 400;
    for (const struct mqs_policy *const *p = mqs_policy_list(); *p; p++) {
        mqs_runtime_t *rt = rt_preempt(2, (*p)->name, 20000);
        struct hammer h = {.deadline = mono_ns() + ms * 1000000};
        mqs_task_t *t[6];
        for (int i = 0; i < 6; i++)
            t[i] = spawn(rt, hammer, &h);
        for (int i = 0; i < 6; i++)
            join(t[i]);
        CHECK_GT(atomic_load(&h.ops), 0);
        CHECK_OK(mqs_runtime_destroy(rt));
    }
}

/* A policy whose levels are not its tasks' static priorities, as o1's
 * sleep bonus and ule's interactivity score make them: a normal task of
 * negative nice is queued and runs at level 125, any other at 118.  One
 * FIFO per worker ordered by that level; its tick never says a slice is
 * spent, so only a more urgent level waiting can stop a task. */
static struct mqs_list moved_q[MQS_MAX_WORKERS];
static unsigned moved_n[MQS_MAX_WORKERS];

static struct mqs_sched_entity *moved_entry(struct mqs_list *n)
{
    return mqs_se_entry(n, struct mqs_sched_entity, node);
}

static void moved_publish(struct mqs_rq *rq)
{
    int w = mqs_rq_worker(rq);
    mqs_rq_publish(rq, moved_n[w],
                   mqs__list_empty(&moved_q[w])
                       ? MQS_PRIO_NONE
                       : moved_entry(moved_q[w].next)->level);
}

static void moved_enqueue(struct mqs_rq *rq, struct mqs_sched_entity *se,
                          int flags)
{
    (void)flags;
    int w = mqs_rq_worker(rq);
    if (se->cls == MQS_CLASS_NORMAL)
        se->level = se->nice < 0 ? 125 : 118;
    struct mqs_list *q = &moved_q[w], *pos = q->prev;
    while (pos != q && moved_entry(pos)->level > se->level)
        pos = pos->prev;
    mqs__list_add_before(pos->next, &se->node);
    moved_n[w]++;
    moved_publish(rq);
}

static struct mqs_sched_entity *moved_pick(struct mqs_rq *rq)
{
    int w = mqs_rq_worker(rq);
    if (mqs__list_empty(&moved_q[w]))
        return NULL;
    struct mqs_sched_entity *se = moved_entry(moved_q[w].next);
    mqs__list_del(&se->node);
    moved_n[w]--;
    moved_publish(rq);
    return se;
}

static int64_t moved_tick(struct mqs_rq *rq, struct mqs_sched_entity *se,
                          uint64_t now)
{
    (void)rq, (void)se, (void)now;
    return INT64_MAX / 2;
}

static const struct mqs_policy moved_policy = {
    .name = "moved-levels",
    .enqueue = moved_enqueue,
    .pick = moved_pick,
    .tick = moved_tick,
};

struct moved {
    atomic_int spinning, other_ran;
    bool saw_other; /* the spinner saw the other task run */
};

static void *moved_spinner(void *arg)
{
    struct moved *m = arg;
    atomic_store(&m->spinning, 1);
    uint64_t end = mono_ns() + 3000000000u;
    while (!atomic_load(&m->other_ran) && mono_ns() < end)
        ;
    m->saw_other = atomic_load(&m->other_ran);
    return NULL;
}

static void *moved_other(void *arg)
{
    atomic_store(&((struct moved *)arg)->other_ran, 1);
    return NULL;
}

/* The core compares the levels a policy publishes with the running
 * task's level (se.level), not its static priority: a spinner of nice -5
 * that the policy runs at level 125 is stopped for a nice-0 task queued
 * at 118.  Compared with the spinner's static 115, the waiting 118 looked
 * less urgent: no stop, and the other task waited out the whole spin
 * (o1: a long task that lost its bonus kept its worker against short
 * tasks that had earned theirs). */
TEST(a_running_task_is_judged_by_its_policys_level)
{
    for (int i = 0; i < MQS_MAX_WORKERS; i++) {
        mqs__list_init(&moved_q[i]);
        moved_n[i] = 0;
    }
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 1;
    cfg.policy_ops = &moved_policy;
    cfg.preempt = 1;
    mqs_runtime_t *rt = rt_create(&cfg);
    struct moved m = {0};
    mqs_task_t *s = spawn_prio(rt, MQS_CLASS_NORMAL, -5, moved_spinner, &m);
    while (!atomic_load(&m.spinning))
        sched_yield();
    mqs_task_t *o = spawn(rt, moved_other, &m);
    join(s);
    join(o);
    CHECK(m.saw_other);
    CHECK_OK(mqs_runtime_destroy(rt));
}

#endif /* !MQS_TSAN */

/* A task that runs after a stop runs under the worker's own signal mask.
 * Two tasks on one worker spin in their own code, calling into TSan
 * every so often (an atomic: where TSan runs a handler it held back, so
 * this case runs under TSan too); each time a task sees that the other
 * has run, it reads its thread's mask.  Under TSan the handler runs with
 * every signal blocked, and before switch.h set the worker's mask at each
 * switch the next task ran under that (then its own handler could save
 * it for good: test_signal's case hung with no signal delivered).  With
 * the kernel's delivery it checks the unblock of SIGURG after a stop.
 * It runs until each has seen the other 20 times, or 20 s. */
#define MASK_TURNS 20
struct mask_run {
    atomic_long steps[2];
    atomic_int turns[2];
    atomic_int bad;
    uint64_t deadline;
};
struct mask_arg {
    struct mask_run *m;
    int i;
};

static bool mask_is_open(void)
{
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    return !sigismember(&now, SIGURG) && !sigismember(&now, SIGUSR2);
}

static void *mask_reader(void *arg)
{
    struct mask_arg *a = arg;
    struct mask_run *m = a->m;
    long seen = atomic_load(&m->steps[1 - a->i]);
    volatile unsigned long n = 0;
    while (atomic_load(&m->turns[a->i]) < MASK_TURNS ||
           atomic_load(&m->turns[1 - a->i]) < MASK_TURNS) {
        for (int k = 0; k < 20000; k++)
            n++;
        atomic_fetch_add(&m->steps[a->i], 1);
        long other = atomic_load(&m->steps[1 - a->i]);
        if (other != seen) {
            seen = other;
            atomic_fetch_add(&m->turns[a->i], 1);
            if (!mask_is_open())
                atomic_fetch_add(&m->bad, 1);
        }
        if (mono_ns() > m->deadline)
            break;
    }
    return NULL;
}

TEST(a_stop_leaves_the_next_task_the_workers_signal_mask)
{
    CHECK(mask_is_open()); /* the test's own starting point */
    mqs_runtime_t *rt = rt_preempt(1, NULL, 200000);
    struct mask_run m = {.deadline = mono_ns() + 20000000000u};
    struct mask_arg a[2] = {{&m, 0}, {&m, 1}};
    mqs_task_t *t0 = spawn(rt, mask_reader, &a[0]);
    mqs_task_t *t1 = spawn(rt, mask_reader, &a[1]);
    join(t0);
    join(t1);
    mqs_worker_stats_t st;
    CHECK_OK(mqs_runtime_stats(rt, &st));
    CHECK_OK(mqs_runtime_destroy(rt));
    fprintf(stderr, "  %d and %d turns, %llu stops, %d with a closed mask\n",
            atomic_load(&m.turns[0]), atomic_load(&m.turns[1]),
            (unsigned long long)st.preemptions, atomic_load(&m.bad));
    CHECK_GE(atomic_load(&m.turns[0]), MASK_TURNS);
    CHECK_GE(atomic_load(&m.turns[1]), MASK_TURNS);
    CHECK_GT(st.preemptions, 0);
    CHECK_EQ(atomic_load(&m.bad), 0);
}

/* Off: today's cooperative behaviour; no monitor. */
TEST(preempt_off_is_cooperative)
{
    mqs_runtime_t *rt = rt_new_coop(1);
    CHECK(!mqs_preempt_on(rt));
    CHECK_OK(mqs_runtime_destroy(rt));
    rt = rt_preempt(1, NULL, -1);
    CHECK(mqs_preempt_on(rt));
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK(!mqs_preempt_on(NULL));
}

TEST(bad_settings_are_refused)
{
    mqs_config_t cfg, out;
    char err[256];
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    cfg.preempt = 2;
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, "config.preempt");
    cfg.preempt = -1;
    cfg.preempt_tick_ns = 1000;
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, "config.preempt_tick_ns");
    cfg.preempt_tick_ns = -1;
    cfg.ignore_env = false;
    setenv("MQS_PREEMPT", "yes", 1);
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, "MQS_PREEMPT=yes");
    setenv("MQS_PREEMPT", "0", 1);
    setenv("MQS_PREEMPT_TICK_NS", "5000000000", 1);
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, "MQS_PREEMPT_TICK_NS=5000000000");
    setenv("MQS_PREEMPT_TICK_NS", "200000", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.preempt, 0);
    CHECK_EQ(out.preempt_tick_ns, 200000);
}


