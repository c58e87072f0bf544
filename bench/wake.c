/*
 * wake.c - `mqs-bench wake`: wake-up latency, after Jens Axboe's latt
 * (2009) and Chris Mason's schbench.  --clients C tasks block, each on
 * its own semaphore; a waker task picks the next client that is waiting,
 * stamps the time into that client's slot and posts its semaphore, then
 * sleeps a random 0..200 µs (mean 100); the client, once running,
 * records now - stamp, the wake-to-run delay, in its own log-linear
 * histogram (histogram.h).  --hogs K background tasks compute without
 * pause, the `make -j` of the 2009 latt runs (--hog-yield U: yield after
 * every U µs).  --class rt makes the clients and the waker realtime (mqs:
 * MQS_CLASS_RR priority 50; kernel: SCHED_FIFO 50 when permitted, else
 * the row says why).
 *
 * Rows: a policy runs mqs tasks (mqs_sem_t, mqs_sleep, mqs_yield); kernel
 * runs pthreads (sem_t, nanosleep, sched_yield) unpinned within the
 * first --workers CPUs; go and fiber run the peer programs.  Spinning
 * hogs need preemption: a runtime without it (MQS_PREEMPT=0) and the
 * fiber peer refuse them with a note rather than hang.
 *
 * Output: seven results per row, one per statistic of the delay, in µs:
 * param pct=50, pct=90, pct=99, pct=99.9 (nearest-rank percentiles),
 * stat=max, stat=mean, stat=stdev.  `value` is the mean over the repeats
 * of that statistic of each repeat, with its 95% CI and FRC flag; the
 * extra column `pooled` is the same statistic over every wake-up of all
 * repeats together (for stat=max: the worst wake-up seen), `samples` the
 * wake-ups recorded.  Repeats continue until the mean delay (stat=mean)
 * reaches --ci-target or the budget runs out.
 *
 * Only a client that announced it is about to wait is woken, so each
 * sample is a real wake-up of a blocked task, not a post that a running
 * client later finds.  Without hogs, on an idle machine, the figure is
 * mostly the cost of waking an idle worker (a futex wake, the analogue
 * of an IPI); with hogs it is how long a woken task waits behind running
 * ones: a kernel client waits behind a hog of its level until its slice
 * ends; mqs puts it on the waker's worker (not o1, ule: their own rules),
 * where it runs as the waker sleeps.  An rt client stops a hog at once.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "expkit.h"
#include "histogram.h"

#define WAKE_GAP_MAX_NS 200000u
#define WAKE_RT_PRIO 50

static const char *const wake_refused[] = {"tasks", NULL};

/* The statistics, in output order, and their peer keys. */
enum { WS_P50, WS_P90, WS_P99, WS_P999, WS_MAX, WS_MEAN, WS_STDEV, WS_N };
static const char *const wake_params[WS_N] = {
    "pct=50", "pct=90", "pct=99", "pct=99.9", "stat=max", "stat=mean",
    "stat=stdev"};
static const char *const wake_peer_keys[WS_N] = {
    "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "mean_ns", "stdev_ns"};
static const double wake_pcts[4] = {50, 90, 99, 99.9};

enum { WX_POOLED, WX_SAMPLES, WX_REPEATS, WX_COUNT };
static const bench_extra_col_t wake_extras[WX_COUNT] = {
    [WX_POOLED] = {"pooled", "pooled", 2, BENCH_FOLD_MEAN},
    [WX_SAMPLES] = {"samples", "samples", 0, BENCH_FOLD_MEAN},
    [WX_REPEATS] = {"repeats", NULL, 0, BENCH_FOLD_MEAN},
};

static const bench_cli_t wake_cli = {
    .name = "wake",
    .summary = "latt / schbench: wake-to-run delay of blocked clients "
               "(percentiles, max,\nmean, stdev), optionally behind "
               "background hogs",
    .details = BENCH_HELP_WAKE,
    .default_tasks = "1",
    BENCH_PEER_ROWS,
    .default_seconds = 0.5,
    .default_repeats = 5,
};

struct wake_cfg {
    int clients, hogs, hog_yield_us; /* hog_yield_us 0: hogs spin */
    bool rt;
};

/* One client: written by the waker (stamp, waiting cleared) and by the
 * client (waiting set, its histogram). */
struct wake_client {
    _Atomic int waiting;
    uint64_t stamp;
    mqs_sem_t msem;
    sem_t ksem;
    bench_hist_t hist;
    struct wake_run *run;
    bench_task_t t;
} __attribute__((aligned(BENCH_CACHELINE)));

/* One sample. */
struct wake_run {
    _Atomic int started, stop;
    const struct wake_cfg *cfg;
    struct wake_client *c;
    uint64_t rng;
    bool kernel;
};

/* A data point: one row, all seven statistics. */
struct wake_point {
    bench_point_t *p; /* the driver's, whose ctx this is */
    const struct wake_cfg *cfg;
    struct wake_client *c;
    bench_hist_t one, pooled; /* this repeat's wake-ups, all repeats' */
    double *stat[WS_N];       /* per repeat, max_repeats of them      */
    int n, cap, calls;
    double samples;
};

/* ----- The three kinds of task, for both mqs and kernel ----- */

static void wake_block(struct wake_client *c)
{
    if (c->run->kernel)
        while (sem_wait(&c->ksem) != 0 && errno == EINTR)
            ;
    else
        mqs_sem_wait(&c->msem);
}

static void wake_post(struct wake_client *c)
{
    if (c->run->kernel)
        sem_post(&c->ksem);
    else
        mqs_sem_post(&c->msem);
}

static void *wake_client_fn(void *arg)
{
    struct wake_client *c = arg;
    while (!bench_flag(&c->run->stop)) {
        atomic_store_explicit(&c->waiting, 1, memory_order_release);
        wake_block(c);
        uint64_t now = bench_now_ns();
        if (bench_flag(&c->run->stop))
            break;
        bench_hist_record(&c->hist, now > c->stamp ? now - c->stamp : 0);
    }
    return NULL;
}

/* Wake the next waiting client after *next, if any. */
static void wake_one(struct wake_run *r, int *next)
{
    int n = r->cfg->clients;
    for (int k = 0; k < n; k++) {
        struct wake_client *c = &r->c[(*next + k) % n];
        int one = 1;
        if (atomic_compare_exchange_strong(&c->waiting, &one, 0)) {
            c->stamp = bench_now_ns();
            wake_post(c);
            *next = (*next + k + 1) % n;
            return;
        }
    }
}

static void wake_gap(struct wake_run *r)
{
    uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    uint64_t ns = (z ^ (z >> 31)) % WAKE_GAP_MAX_NS;
    if (r->kernel)
        bench_sleep_ns(ns);
    else
        mqs_sleep(ns);
}

static void *wake_waker_fn(void *arg)
{
    struct wake_run *r = arg;
    int next = 0;
    atomic_store(&r->started, 1);
    while (!bench_flag(&r->stop)) {
        wake_one(r, &next);
        wake_gap(r);
    }
    for (int i = 0; i < r->cfg->clients; i++) /* each ends on this post */
        wake_post(&r->c[i]);
    return NULL;
}

/* A hog: a counter and the stop flag, nothing else, so that only
 * preemption takes its worker back; with --hog-yield, that many µs on the
 * clock, then a yield. */
static void *wake_hog_fn(void *arg)
{
    struct wake_run *r = arg;
    uint64_t slice = (uint64_t)r->cfg->hog_yield_us * 1000u;
    for (uint64_t n = 0; !slice && !bench_flag(&r->stop); n++)
        __asm__ volatile("" : "+r"(n));
    while (!bench_flag(&r->stop)) {
        uint64_t end = bench_now_ns() + slice;
        while (bench_now_ns() < end)
            ;
        if (r->kernel)
            sched_yield();
        else
            mqs_yield();
    }
    return NULL;
}

/* ----- Starting and joining: mqs tasks (policy rows) or pthreads
 * (kernel) ----- */

/* Start fn(arg) as a task on the point's runtime or (kernel row) a
 * thread on the first `workers` CPUs; under --class rt the urgent ones
 * are MQS_CLASS_RR or SCHED_FIFO.  0 or the error. */
static int wake_spawn(struct wake_point *pt, bool urgent, const char *name,
                      void *(*fn)(void *), void *arg, bench_task_t *t)
{
    bool rt = urgent && pt->cfg->rt;
    struct sched_param sp = {.sched_priority = WAKE_RT_PRIO};
    mqs_task_attr_t a;
    pthread_attr_t ka;
    mqs_task_attr_init(&a);
    a.name = name; /* what a trace (--trace) shows */
    bench_thread_attr(&ka, pt->p->workers, 0);
    if (rt) {
        a.sched_class = MQS_CLASS_RR;
        a.rt_priority = WAKE_RT_PRIO;
        pthread_attr_setinheritsched(&ka, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&ka, SCHED_FIFO);
        pthread_attr_setschedparam(&ka, &sp);
    }
    int rc = bench_task_start(t, pt->p->rt, &a, &ka, fn, arg);
    pthread_attr_destroy(&ka);
    if (!pt->p->rt && rc == EPERM && rt)
        snprintf(pt->p->note, sizeof pt->p->note,
                 "SCHED_FIFO not permitted (needs CAP_SYS_NICE or "
                 "RLIMIT_RTPRIO)");
    else if (rc)
        bench_task_error("wake", pt->p->row->spec, !pt->p->rt, rc);
    return rc;
}

/* One sample: start the hogs (a group: they need no class of their
 * own), the clients, then the waker; let them run `seconds`; join them.
 * On a failure stop is set and the clients started get the waker's
 * final posts (or, without a waker, ours). */
static int wake_run_sample(struct wake_point *pt, struct wake_run *r,
                           double seconds)
{
    const struct wake_cfg *cfg = pt->cfg;
    bench_group_t hogs = {.rt = pt->p->rt, .workers = pt->p->workers,
                          .name = "hog"};
    char name[32];
    bench_task_t waker = {0};
    for (int i = 0; i < cfg->clients; i++) {
        if (r->kernel)
            sem_init(&pt->c[i].ksem, 0, 0);
        else
            mqs_sem_init(&pt->c[i].msem, 0);
    }
    int rc = cfg->hogs ? bench_group_start(&hogs, "wake", pt->p->row->spec,
                                           cfg->hogs, wake_hog_fn, r, 0)
                       : 0;
    for (int i = 0; i < cfg->clients && rc == 0; i++) {
        snprintf(name, sizeof name, "client-%d", i);
        rc = wake_spawn(pt, true, name, wake_client_fn, &pt->c[i],
                        &pt->c[i].t);
    }
    if (rc)
        atomic_store(&r->stop, 1);
    int rw = wake_spawn(pt, rc == 0, "waker", wake_waker_fn, r, &waker);
    if (rc == 0 && rw == 0)
        bench_window(&r->started, &r->stop, seconds);
    else
        atomic_store(&r->stop, 1);
    bench_task_join(&waker);
    for (int i = 0; rw && i < cfg->clients; i++) /* nobody posts */
        wake_post(&pt->c[i]);
    for (int i = 0; i < cfg->clients; i++)
        bench_task_join(&pt->c[i].t);
    bench_group_join(&hogs);
    for (int i = 0; i < cfg->clients; i++) {
        if (r->kernel)
            sem_destroy(&pt->c[i].ksem);
        else
            mqs_sem_destroy(&pt->c[i].msem);
    }
    if (r->kernel && pt->p->note[0]) /* SCHED_FIFO refused: not a failure */
        return BENCH_POINT_SKIP;
    return rc || rw ? -1 : 0;
}

/* ----- One repeat: run, then the statistics of its wake-ups ----- */

static void wake_stats_of(const bench_hist_t *h, double *v)
{
    for (int s = WS_P50; s <= WS_P999; s++)
        v[s] = bench_hist_percentile(h, wake_pcts[s]) / 1000.0;
    v[WS_MAX] = bench_hist_max(h) / 1000.0;
    v[WS_MEAN] = bench_hist_mean(h) / 1000.0;
    v[WS_STDEV] = bench_hist_stdev(h) / 1000.0;
}

/* The statistics of one repeat: kept, and pooled (not the warm-up's). */
static int wake_record(struct wake_point *pt, const double *v, double n)
{
    if (pt->p->warmup)
        return 0;
    if (pt->n == pt->cap)
        return -1;
    pt->samples += n;
    for (int s = 0; s < WS_N; s++)
        pt->stat[s][pt->n] = v[s];
    pt->n++;
    return 0;
}

static int wake_measure(bench_point_t *p, double *value, double *extra)
{
    struct wake_point *pt = p->ctx;
    struct wake_run r = {.cfg = pt->cfg, .c = pt->c,
                         .rng = (uint64_t)pt->calls++ * 7919u + 1,
                         .kernel = p->row->pseudo};
    (void)extra;
    for (int i = 0; i < pt->cfg->clients; i++) {
        atomic_store(&pt->c[i].waiting, 0);
        pt->c[i].run = &r;
        bench_hist_reset(&pt->c[i].hist);
    }
    double secs = bench_point_seconds(p);
    int rc = wake_run_sample(pt, &r, secs);
    if (rc)
        return rc;
    bench_hist_reset(&pt->one);
    for (int i = 0; i < pt->cfg->clients; i++)
        bench_hist_merge(&pt->one, &pt->c[i].hist);
    if (pt->one.n < 2) {
        fprintf(stderr, "mqs-bench wake: %s: fewer than 2 wake-ups\n",
                p->row->spec);
        return -1;
    }
    if (!p->warmup)
        bench_hist_merge(&pt->pooled, &pt->one);
    double v[WS_N];
    wake_stats_of(&pt->one, v);
    *value = v[WS_MEAN];
    return wake_record(pt, v, (double)pt->one.n);
}

static int wake_peer_convert(bench_point_t *p, const bench_peer_result_t *r,
                             double *value, double *extra)
{
    double v[WS_N];
    (void)extra;
    for (int s = 0; s < WS_N; s++)
        v[s] = bench_peer_get(r, wake_peer_keys[s]) / 1000.0;
    if (isnan(v[WS_MEAN]))
        return -1;
    double n = bench_peer_get(r, "samples");
    *value = v[WS_MEAN];
    return wake_record(p->ctx, v, isnan(n) ? 0 : n);
}

static const bench_peer_map_t wake_peer_map = {.convert = wake_peer_convert};

/* ----- Row kinds and the table entry ----- */

static int wake_alloc(struct wake_point *pt)
{
    int n = pt->cfg->clients;
    pt->c = aligned_alloc(BENCH_CACHELINE, (size_t)n * sizeof *pt->c);
    if (!pt->c)
        return -1;
    memset(pt->c, 0, (size_t)n * sizeof *pt->c);
    for (int i = 0; i < n; i++)
        if (bench_hist_init(&pt->c[i].hist))
            return -1;
    return 0;
}

/* Refused: spinning hogs on a runtime that does not preempt, which would
 * keep their workers for good. */
static int wake_open(bench_point_t *p)
{
    struct wake_point *pt = p->ctx;
    if (wake_alloc(pt) || bench_row_open(p))
        return -1;
    if (!p->rt || mqs_preempt_on(p->rt) || !pt->cfg->hogs ||
        pt->cfg->hog_yield_us)
        return 0;
    snprintf(p->note, sizeof p->note,
             "no preemption (MQS_PREEMPT=0): spinning hogs need --hog-yield");
    return BENCH_POINT_SKIP;
}

static void wake_close(bench_point_t *p)
{
    struct wake_point *pt = p->ctx;
    bench_row_close(p);
    for (int i = 0; pt->c && i < pt->cfg->clients; i++)
        bench_hist_free(&pt->c[i].hist);
    free(pt->c);
    pt->c = NULL;
}

static const bench_point_kind_t wake_kind = {wake_open, wake_measure,
                                             wake_close};

/* The seven results of a row, each from its statistic's repeats (the
 * driver's estimate is the one of stat=mean); frees what the point kept
 * for them. */
static int wake_emit(bench_point_t *p, bench_result_t *res, bench_results_t *rs)
{
    struct wake_point *pt = p->ctx;
    double pooled[WS_N];
    wake_stats_of(&pt->pooled, pooled);
    int rc = 0;
    for (int s = 0; s < WS_N && rc == 0; s++) {
        bench_estimate_t est = {.mean = NAN, .ci95 = NAN}; /* frc false */
        if (p->ok)
            bench_estimate_of(pt->stat[s], (size_t)pt->n,
                              p->o->prec.ci_target, &est);
        bench_result_t r = *res;
        r.param = (char *)wake_params[s];
        r.value = est.mean;
        r.ci95 = est.ci95;
        r.frc = est.frc;
        r.extra[WX_POOLED] = p->ok && pt->pooled.n ? pooled[s] : NAN;
        r.extra[WX_SAMPLES] = p->ok ? pt->samples : NAN;
        r.extra[WX_REPEATS] = p->ok ? pt->n : NAN;
        rc = bench_results_add(rs, &r);
    }
    bench_hist_free(&pt->one);
    bench_hist_free(&pt->pooled);
    for (int s = 0; s < WS_N; s++)
        free(pt->stat[s]);
    return rc;
}

struct wake_args {
    struct wake_cfg cfg;
    struct wake_point cur; /* the point being measured */
};

static int wake_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct wake_args *a = sw->arg;
    const struct wake_cfg *cfg = &a->cfg;
    bench_peer_args_t *pa = &p->peer_args;
    (void)i;
    a->cur = (struct wake_point){.p = p, .cfg = cfg};
    a->cur.cap = sw->o->prec.max_repeats;
    for (int s = 0; s < WS_N; s++)
        if (!(a->cur.stat[s] = calloc((size_t)a->cur.cap, sizeof(double))))
            return -1;
    if (bench_hist_init(&a->cur.one) || bench_hist_init(&a->cur.pooled))
        return -1;
    snprintf(p->param, sizeof p->param, "all");
    p->unit = "us";
    p->ctx = &a->cur;
    p->emit = wake_emit;
    p->peer_map = &wake_peer_map;
    bench_peer_args_add(pa, "clients", "%d", cfg->clients);
    bench_peer_args_add(pa, "hogs", "%d", cfg->hogs);
    bench_peer_args_add(pa, "hog_yield_us", "%d", cfg->hog_yield_us);
    bench_peer_args_add(pa, "class", "%s", cfg->rt ? "rt" : "normal");
    return 0;
}

static int wake_options(bench_sweep_t *sw, int *argc, char **argv)
{
    struct wake_cfg *cfg = &((struct wake_args *)sw->arg)->cfg;
    const char *c = "4", *h = "0", *u = "0", *cls = "normal";
    const bench_xopt_t xo[] = {
        {"clients", &c, &cfg->clients, 1, 4096},
        {"hogs", &h, &cfg->hogs, 0, 4096},
        {"hog-yield", &u, &cfg->hog_yield_us, 0, 1000000},
        {"class", &cls, NULL, 0, 0},
        {0}};
    int rc = bench_take_options("wake", argc, argv, xo, wake_refused);
    if (rc == 0 && strcmp(cls, "normal") && strcmp(cls, "rt"))
        rc = bench_usage("wake", "--class: '%s' is not normal or rt", cls);
    cfg->rt = rc == 0 && !strcmp(cls, "rt");
    sw->nparams = 1; /* a row's seven statistics come from the same runs */
    return rc;
}

const bench_exp_t bench_wake_exp = {
    .cli = &wake_cli,
    .arg_size = sizeof(struct wake_args),
    .title = "us from wake-up to running",
    .extras = wake_extras,
    .nextra = WX_COUNT,
    .kind = &wake_kind,
    .options = wake_options,
    .setup = wake_setup,
};
