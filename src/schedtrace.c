/*
 * schedtrace.c - MQS_SCHEDTRACE=MS: every MS milliseconds one line on
 * stderr (or config.schedtrace_file) saying what each worker is doing,
 * for watching a live program (Go's GODEBUG=schedtrace=MS).
 *
 *   mqs 1000ms: policy=mq workers=2 parked=0 tasks=9 switches=20345
 *     pulls=4 | w0 q=4 run=t3 sw=10200 pull=2 | w1 q=0 run=- sw=10145 pull=2
 *
 * (one line; wrapped here).  The header: milliseconds since the runtime
 * started, its policy, workers, how many are parked now, live tasks
 * (spawned less ended), and switches and pulls summed over the workers
 * since the last line.  Per worker: tasks queued now (the published
 * nr_queued), the running task's id (`t<id>`, the id in a task's default
 * name "task-<id>"), `-` in the worker loop (spinning or between tasks)
 * or `parked` when asleep on its futex, and the switches and tasks
 * pulled (idle, newly idle, periodic, priority pulls) since the last
 * line.
 *
 * Every field is read without a lock from what the workers publish
 * anyway (counters, rq.nr_queued, rq.curr_level, rq.curr_id, parked), so
 * a line may mix moments a few instructions apart; it never stops a
 * worker.  Off (the default) it costs nothing but the store of the
 * running task's id at each switch, on a line the switch writes anyway.
 *
 * A thread of its own, started with the runtime when asked: the watchdog
 * rode on the workers' housekeeping instead, but a line must come while
 * every worker is parked (an idle program is worth seeing) and a write
 * to a terminal or a pipe may block, which no worker may do.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Per worker: switches and pulls at the last line, and what this line
 * says of it. */
struct mqs__schedtrace_worker {
    uint64_t switches, pulls; /* totals at the last line */
    uint64_t d_switches, d_pulls;
    unsigned queued;
    char run[24];
};

/* Read worker i into its record: the deltas since the last line. */
static void worker_look(mqs_runtime_t *rt, int i, struct mqs__schedtrace_worker *r)
{
    struct mqs_worker *w = rt->workers[i];
    mqs_worker_stats_t s;
    (void)mqs_worker_stats(rt, i, &s);
    uint64_t pulls = s.pulls_idle + s.pulls_newidle + s.pulls_periodic +
                     s.pulls_priority;
    r->d_switches = s.switches - r->switches;
    r->d_pulls = pulls - r->pulls;
    r->switches = s.switches;
    r->pulls = pulls;
    r->queued = atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed);
    if (atomic_load_explicit(&w->parked, memory_order_relaxed))
        snprintf(r->run, sizeof r->run, "parked");
    else if (atomic_load_explicit(&w->rq.curr_level, memory_order_relaxed) ==
             MQS_PRIO_NONE)
        snprintf(r->run, sizeof r->run, "-");
    else
        snprintf(r->run, sizeof r->run, "t%llu",
                 (unsigned long long)atomic_load_explicit(
                     &w->rq.curr_id, memory_order_relaxed));
}

/* Room for one worker's part of the line. */
#define SCHEDTRACE_PER_WORKER 128

static void schedtrace_line(mqs_runtime_t *rt)
{
    struct mqs__schedtrace *st = &rt->strace;
    struct mqs__schedtrace_worker *r = st->workers;
    uint64_t sw = 0, pulls = 0;
    int parked = 0;
    for (int i = 0; i < rt->nworkers; i++) {
        worker_look(rt, i, &r[i]);
        sw += r[i].d_switches;
        pulls += r[i].d_pulls;
        parked += !strcmp(r[i].run, "parked");
    }
    mqs_worker_stats_t all;
    (void)mqs_runtime_stats(rt, &all);
    uint64_t ms = (mqs__clock_ns(&rt->clock) - st->t0) / 1000000;
    char *b = st->buf;
    size_t cap = st->cap, at = 0;
    int n = snprintf(b, cap,
                     "mqs %llums: policy=%s workers=%d parked=%d tasks=%lld "
                     "switches=%llu pulls=%llu",
                     (unsigned long long)ms, rt->policy->name, rt->nworkers,
                     parked, (long long)(all.spawns - all.exits),
                     (unsigned long long)sw, (unsigned long long)pulls);
    for (int i = 0; n > 0 && (at += (size_t)n) < cap && i < rt->nworkers; i++)
        n = snprintf(b + at, cap - at, " | w%d q=%u run=%s sw=%llu pull=%llu",
                     i, r[i].queued, r[i].run,
                     (unsigned long long)r[i].d_switches,
                     (unsigned long long)r[i].d_pulls);
    if (at >= cap)
        at = cap - 1;
    b[at++] = '\n';
    fwrite(b, 1, at, st->out);
    fflush(st->out);
}

/* t plus ns. */
static struct timespec ts_add(struct timespec t, uint64_t ns)
{
    ns += (uint64_t)t.tv_nsec;
    t.tv_sec += (time_t)(ns / 1000000000u);
    t.tv_nsec = (long)(ns % 1000000000u);
    return t;
}

/* When the next line is due: a period after the last one was due, so
 * that lines keep their rhythm, unless that time has already passed (the
 * last write blocked on a full pipe or terminal, or this thread was not
 * run): then a period from now.  Deadlines only a period apart would
 * come back from a write that blocked for k periods as k lines written
 * back to back, each saying almost nothing. */
static struct timespec schedtrace_next(struct timespec due, uint64_t period_ns)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    due = ts_add(due, period_ns);
    bool past = due.tv_sec < now.tv_sec ||
                (due.tv_sec == now.tv_sec && due.tv_nsec <= now.tv_nsec);
    return past ? ts_add(now, period_ns) : due;
}

static void *schedtrace_main(void *arg)
{
    mqs_runtime_t *rt = arg;
    struct mqs__schedtrace *st = &rt->strace;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&st->lock);
    while (!st->stop) {
        next = schedtrace_next(next, st->period_ns);
        int rc = 0;
        while (!st->stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&st->wake, &st->lock, &next);
        if (st->stop)
            break;
        pthread_mutex_unlock(&st->lock);
        schedtrace_line(rt);
        pthread_mutex_lock(&st->lock);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

int mqs__schedtrace_start(mqs_runtime_t *rt, int64_t period_ms, FILE *out)
{
    struct mqs__schedtrace *st = &rt->strace;
    if (period_ms <= 0)
        return 0;
    st->period_ns = (uint64_t)period_ms * 1000000u;
    st->out = out ? out : stderr;
    st->t0 = mqs__clock_ns(&rt->clock);
    st->cap = 256 + (size_t)rt->nworkers * SCHEDTRACE_PER_WORKER;
    st->buf = mqs__malloc(st->cap);
    st->workers = mqs__calloc((size_t)rt->nworkers, sizeof *st->workers);
    if (!st->buf || !st->workers) {
        free(st->buf);
        free(st->workers);
        return MQS_ENOMEM;
    }
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&st->wake, &a);
    pthread_condattr_destroy(&a);
    pthread_mutex_init(&st->lock, NULL);
    if (pthread_create(&st->thread, NULL, schedtrace_main, rt) != 0) {
        pthread_cond_destroy(&st->wake);
        pthread_mutex_destroy(&st->lock);
        free(st->buf);
        free(st->workers);
        return MQS_ESYS;
    }
    st->started = true;
    return 0;
}

void mqs__schedtrace_stop(mqs_runtime_t *rt)
{
    struct mqs__schedtrace *st = &rt->strace;
    if (!st->started)
        return;
    pthread_mutex_lock(&st->lock);
    st->stop = true;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
    pthread_join(st->thread, NULL);
    pthread_cond_destroy(&st->wake);
    pthread_mutex_destroy(&st->lock);
    free(st->buf);
    free(st->workers);
    st->started = false;
}
