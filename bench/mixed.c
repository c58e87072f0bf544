/*
 * mixed.c - `mqs-bench mixed`: short and long tasks together, the
 * workload Paul Turner measured per-entity load tracking with (2012).
 * --short S tasks each work 1 ms then sleep 9 ms (a 10% duty cycle);
 * --long L tasks work without pause.  Work is "records": a record
 * allocates a 2 KiB buffer, writes all of it, reads a word back and
 * frees it.  A long task makes records back to back with no scheduling
 * point (the 2012 test.c), so only preemption stops it; --long-point
 * checkpoint puts mqs_checkpoint() after each record, as does a row
 * whose runtime does not preempt (with a note).  A short task's 1 ms
 * burst (mqs_checkpoint() after each record) is a fixed number of
 * records, calibrated once per invocation as 1 ms of records on this
 * machine (the median of several timed runs on the main thread), so a
 * burst is the same work under every row whether or not it is
 * interrupted.  The short tasks start staggered over the 10 ms period,
 * so their load is spread rather than arriving in one wave.
 *
 *   value   records/s made by all tasks in the measurement window
 *   extras  wait ms/s: time tasks spent runnable but not running,
 *           summed over the tasks, per second of window (so 1000 ms/s =
 *           on average one task waiting); schedstat's field 8 in the
 *           2012 reports.  mqs: mqs_task_stats().wait_ns of every task
 *           (it is added when the task is switched in, so a task still
 *           queued when the window closes brings its wait into the next
 *           window); kernel: /proc/self/task/<tid>/schedstat field 2.
 *           migr/s: times a task ran on another worker than the time
 *           before (kernel: se.nr_migrations from /proc/.../sched).
 *           stops/s: mqs_runtime_stats().preemptions (kernel: the
 *           threads' nr_involuntary_switches from /proc/.../sched).
 *           idle/s, newidle/s, periodic/s, prio/s: tasks pulled by a
 *           worker while idle, when its queue just ran empty, by the
 *           periodic balancer, and because a remote task was more urgent
 *           (mqs_runtime_stats(); the kernel has no per-process
 *           equivalent: NAN).
 *           short min, short mean, long min, long mean: records/s of
 *           the slowest and of the mean task of each kind; starved:
 *           tasks that made no record in the window (the minima and
 *           starved: the worst over the repeats).
 *
 * The parameter is the pair (S, L), written "short/long=5/5" (no comma,
 * so the CSV field needs no quoting and the table's column reads
 * "short/long").  --short and --long are lists paired by position; the
 * defaults are the three published mixes (5,5), (4,2), (16,0).
 *
 * One measurement: the tasks start (the runtime or threads made once per
 * point), the main thread lets them settle, snapshots every counter,
 * sleeps --seconds, snapshots again and stops them; only the window
 * between the snapshots counts, as in the yield experiment.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "expkit.h"

#define MIXED_RECORD_BYTES 2048
#define MIXED_BURST_NS 1000000u
#define MIXED_PERIOD_NS 10000000u
#define MIXED_SETTLE_NS 50000000u
#define MIXED_MAX_TASKS 4096

enum {
    MIXED_X_WAIT,
    MIXED_X_MIGR,
    MIXED_X_STOPS,
    MIXED_X_IDLE,
    MIXED_X_NEWIDLE,
    MIXED_X_PERIODIC,
    MIXED_X_PRIO,
    MIXED_X_SHORT_MIN,
    MIXED_X_SHORT_MEAN,
    MIXED_X_LONG_MIN,
    MIXED_X_LONG_MEAN,
    MIXED_X_STARVED,
    MIXED_X_BURST,
    MIXED_X_COUNT
};
/* As in yield: the worst repeat's fairness (one that starves a different
 * task each run is still unfair); the other extras are means. */
static const bench_extra_col_t mixed_extras[MIXED_X_COUNT] = {
    [MIXED_X_WAIT] = {"wait_ms_per_s", "wait ms/s", 1, BENCH_FOLD_MEAN},
    [MIXED_X_MIGR] = {"migrations_per_s", "migr/s", 1, BENCH_FOLD_MEAN},
    [MIXED_X_STOPS] = {"stops_per_s", "stops/s", 1, BENCH_FOLD_MEAN},
    [MIXED_X_IDLE] = {"pulls_idle_per_s", "idle/s", 1, BENCH_FOLD_MEAN},
    [MIXED_X_NEWIDLE] = {"pulls_newidle_per_s", "newidle/s", 1,
                         BENCH_FOLD_MEAN},
    [MIXED_X_PERIODIC] = {"pulls_periodic_per_s", "periodic/s", 1,
                          BENCH_FOLD_MEAN},
    [MIXED_X_PRIO] = {"pulls_priority_per_s", "prio/s", 1, BENCH_FOLD_MEAN},
    [MIXED_X_SHORT_MIN] = {"short_min", "short min", 0, BENCH_FOLD_MIN},
    [MIXED_X_SHORT_MEAN] = {"short_mean", "short mean", 0, BENCH_FOLD_MEAN},
    [MIXED_X_LONG_MIN] = {"long_min", "long min", 0, BENCH_FOLD_MIN},
    [MIXED_X_LONG_MEAN] = {"long_mean", "long mean", 0, BENCH_FOLD_MEAN},
    [MIXED_X_STARVED] = {"starved", "starved", 0, BENCH_FOLD_MAX},
    [MIXED_X_BURST] = {"burst_records", NULL, 0, BENCH_FOLD_MEAN},
};

static const bench_cli_t mixed_cli = {
    .name = "mixed",
    .summary = "short (1 ms work, 9 ms sleep) and long tasks together: "
               "records/s, wait time, migrations",
    .details = BENCH_HELP_MIXED,
    .default_tasks = "1",
    BENCH_PEER_ROWS,
    .default_seconds = 0.5,
    .default_repeats = 3,
};

/* ----- Pure helpers (tested) ----- */

/* "short/long=S/L". */
static void mixed_param(char *buf, size_t n, int s, int l)
{
    snprintf(buf, n, "short/long=%d/%d", s, l);
}

/* Field 2 (run-queue wait, ns) of a schedstat line "run wait slices";
 * -1 when malformed. */
static int mixed_schedstat_wait(const char *line, uint64_t *wait)
{
    unsigned long long run, w;
    if (sscanf(line, "%llu %llu", &run, &w) != 2)
        return -1;
    *wait = w;
    return 0;
}

/* A counter from the text of /proc/<pid>/task/<tid>/sched; -1 when
 * absent (a kernel without CONFIG_SCHED_DEBUG). */
static int mixed_sched_field(const char *text, const char *name,
                             uint64_t *out)
{
    const char *p = strstr(text, name);
    unsigned long long v;
    if (!p || !(p = strchr(p, ':')) || sscanf(p + 1, "%llu", &v) != 1)
        return -1;
    *out = v;
    return 0;
}

/* (b - a) per second of a window of ns nanoseconds. */
static double mixed_rate(uint64_t a, uint64_t b, uint64_t ns)
{
    return ns ? (double)(b - a) * 1e9 / (double)ns : NAN;
}

/* The fairness extras from each task's records at the window's edges,
 * a[i] and b[i], the first nshort of the n tasks short; NAN for a kind
 * without tasks. */
static void mixed_fairness(const uint64_t *a, const uint64_t *b, int nshort,
                           int n, uint64_t ns, double *extra)
{
    double min[2] = {NAN, NAN}, sum[2] = {0, 0};
    int starved = 0;
    for (int i = 0; i < n; i++) {
        double r = mixed_rate(a[i], b[i], ns);
        int k = i >= nshort;
        min[k] = fmin(min[k], r);
        sum[k] += r;
        starved += b[i] == a[i];
    }
    extra[MIXED_X_SHORT_MIN] = min[0];
    extra[MIXED_X_SHORT_MEAN] = nshort ? sum[0] / nshort : NAN;
    extra[MIXED_X_LONG_MIN] = min[1];
    extra[MIXED_X_LONG_MEAN] = n > nshort ? sum[1] / (n - nshort) : NAN;
    extra[MIXED_X_STARVED] = starved;
}

/* ----- The work ----- */

/* One task's records, written only by that task. */
struct mixed_slot {
    _Atomic uint64_t records;
    uint64_t sink;
    const bench_flags_t *flags;
    long burst;      /* records per burst; 0 = a long task */
    bool checkpoint; /* mqs_checkpoint() after each record (mqs rows) */
    uint64_t phase;  /* short tasks: initial sleep, staggering them */
    _Atomic int tid; /* kernel threads: gettid() */
} __attribute__((aligned(BENCH_CACHELINE)));

/* One record: allocate, write, read back, free.  The asm keeps the
 * compiler from eliding the allocation. */
static inline uint64_t mixed_record(uint64_t seed)
{
    uint64_t *b = malloc(MIXED_RECORD_BYTES);
    if (!b)
        return seed;
    __asm__ volatile("" : : "r"(b) : "memory");
    for (size_t i = 0; i < MIXED_RECORD_BYTES / sizeof *b; i++)
        b[i] = seed + i;
    __asm__ volatile("" : : "r"(b) : "memory");
    uint64_t v = b[seed % (MIXED_RECORD_BYTES / sizeof *b)];
    free(b);
    return v;
}

/* The life of one task, with the sleep of the row's kind. */
static void mixed_loop(struct mixed_slot *s, int (*sleep_ns)(uint64_t))
{
    const bench_flags_t *f = s->flags;
    while (!bench_flag(&f->start))
        sleep_ns(1000000);
    if (s->burst)
        sleep_ns(s->phase);
    while (!bench_flag(&f->stop)) {
        long n = s->burst ? s->burst : 1;
        for (long i = 0; i < n; i++) {
            s->sink += mixed_record(s->sink);
            bench_count(&s->records);
            if (s->checkpoint)
                mqs_checkpoint();
        }
        if (s->burst)
            sleep_ns(MIXED_PERIOD_NS - MIXED_BURST_NS);
    }
}

static void *mixed_mq_task(void *arg)
{
    mixed_loop(arg, mqs_sleep);
    return NULL;
}

static int mixed_kernel_sleep(uint64_t ns)
{
    bench_sleep_ns(ns);
    return 0;
}

static void *mixed_kernel_thread(void *arg)
{
    struct mixed_slot *s = arg;
    atomic_store(&s->tid, (int)syscall(SYS_gettid));
    mixed_loop(s, mixed_kernel_sleep);
    return NULL;
}

/* Records in 1 ms: the median of 5 timed runs of 2000 records, each
 * record followed by a clock read as a scheduling point costs one.  The
 * median, not the fastest, because on a shared host the fastest run is
 * the one that saw no contention, and bursts calibrated on it would take
 * longer than 1 ms under the slightest load. */
static long mixed_calibrate(void)
{
    double per[5];
    uint64_t sink = 0;
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < 2000; i++)
            sink += mixed_record(sink) + bench_now_ns();
        per[r] = (double)(bench_now_ns() - t0) / 2000;
    }
    __asm__ volatile("" : : "r"(sink));
    bench_sort(per, 5);
    double n = (double)MIXED_BURST_NS / bench_median(per, 5);
    return n >= 1 ? (long)n : 1;
}

/* ----- One data point ----- */

/* Counters at one edge of the window. */
struct mixed_snap {
    uint64_t t;
    uint64_t records, wait, migr, stops;
    mqs_worker_stats_t rs;
    bool wait_ok, migr_ok; /* migr_ok: /proc/.../sched's counters, stops too */
};

struct mixed_point {
    int nshort, nlong, n;
    long burst;
    bool checkpoint; /* long tasks too call mqs_checkpoint() */
    bench_flags_t *flags;
    struct mixed_slot *slots;
    uint64_t *rec; /* each task's records at the window's start, end */
    bench_group_t g; /* the tasks (policy rows: g.rt) or threads */
};

static void mixed_reset(struct mixed_point *mp)
{
    atomic_store(&mp->flags->start, 0);
    atomic_store(&mp->flags->stop, 0);
    for (int i = 0; i < mp->n; i++) {
        struct mixed_slot *s = &mp->slots[i];
        atomic_store(&s->records, 0);
        atomic_store(&s->tid, 0);
        s->sink = (uint64_t)i;
        s->flags = mp->flags;
        s->burst = i < mp->nshort ? mp->burst : 0;
        s->checkpoint = mp->g.rt && (i < mp->nshort || mp->checkpoint);
        s->phase = i < mp->nshort
                       ? MIXED_PERIOD_NS * (uint64_t)i / (uint64_t)mp->nshort
                       : 0;
    }
}

/* Kernel threads: run-queue wait and migrations summed over the tasks. */
static void mixed_proc_snap(const struct mixed_point *mp, struct mixed_snap *s)
{
    char path[96], *text;
    s->wait_ok = s->migr_ok = true;
    for (int i = 0; i < mp->n; i++) {
        int tid = atomic_load(&mp->slots[i].tid);
        uint64_t v = 0, stops = 0;
        snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
        if (!(text = bench_read_file(path, 0)) ||
            mixed_schedstat_wait(text, &v))
            s->wait_ok = false;
        free(text);
        s->wait += v;
        v = 0;
        snprintf(path, sizeof path, "/proc/self/task/%d/sched", tid);
        text = bench_read_file(path, 0);
        if (!text || mixed_sched_field(text, "se.nr_migrations", &v) ||
            mixed_sched_field(text, "nr_involuntary_switches", &stops))
            s->migr_ok = false;
        free(text);
        s->migr += v;
        s->stops += stops;
    }
}

static void mixed_mq_snap(const struct mixed_point *mp, struct mixed_snap *s)
{
    for (int i = 0; i < mp->n; i++) {
        mqs_task_stats_t ts;
        if (mqs_task_stats(mp->g.t[i].task, &ts) == 0) {
            s->wait += ts.wait_ns;
            s->migr += ts.migrations;
        }
    }
    mqs_runtime_stats(mp->g.rt, &s->rs);
    s->stops = s->rs.preemptions;
    s->wait_ok = s->migr_ok = true;
}

/* The counters at one edge of the window; each task's records into rec[]. */
static void mixed_snap(const struct mixed_point *mp, bool kernel,
                       struct mixed_snap *s, uint64_t *rec)
{
    memset(s, 0, sizeof *s);
    uint64_t a = bench_now_ns();
    for (int i = 0; i < mp->n; i++)
        s->records += rec[i] =
            atomic_load_explicit(&mp->slots[i].records, memory_order_relaxed);
    if (kernel)
        mixed_proc_snap(mp, s);
    else
        mixed_mq_snap(mp, s);
    s->t = a + (bench_now_ns() - a) / 2;
}

/* The extras of one window from its two snapshots. */
static void mixed_extras_of(const struct mixed_snap *a,
                            const struct mixed_snap *b, bool kernel,
                            double *extra)
{
    uint64_t ns = b->t - a->t;
    bool wait = a->wait_ok && b->wait_ok, migr = a->migr_ok && b->migr_ok;
    extra[MIXED_X_WAIT] = wait ? mixed_rate(a->wait, b->wait, ns) / 1e6 : NAN;
    extra[MIXED_X_MIGR] = migr ? mixed_rate(a->migr, b->migr, ns) : NAN;
    extra[MIXED_X_STOPS] = migr ? mixed_rate(a->stops, b->stops, ns) : NAN;
    if (kernel)
        return;
    extra[MIXED_X_IDLE] = mixed_rate(a->rs.pulls_idle, b->rs.pulls_idle, ns);
    extra[MIXED_X_NEWIDLE] =
        mixed_rate(a->rs.pulls_newidle, b->rs.pulls_newidle, ns);
    extra[MIXED_X_PERIODIC] =
        mixed_rate(a->rs.pulls_periodic, b->rs.pulls_periodic, ns);
    extra[MIXED_X_PRIO] =
        mixed_rate(a->rs.pulls_priority, b->rs.pulls_priority, ns);
}

/* Start, settle, window, stop: records/s into *value. */
static int mixed_window(bench_point_t *p, double *value, double *extra)
{
    struct mixed_point *mp = p->ctx;
    bool kernel = p->row->pseudo;
    double secs = bench_point_seconds(p);
    struct mixed_snap a, b;
    atomic_store(&mp->flags->start, 1);
    bench_sleep_ns(MIXED_SETTLE_NS);
    mixed_snap(mp, kernel, &a, mp->rec);
    bench_sleep_ns((uint64_t)(secs * 1e9));
    mixed_snap(mp, kernel, &b, mp->rec + mp->n);
    atomic_store(&mp->flags->stop, 1);
    if (b.records == a.records) {
        fprintf(stderr, "mqs-bench mixed: %s %s: no records counted\n",
                p->row->spec, p->param);
        return -1;
    }
    *value = mixed_rate(a.records, b.records, b.t - a.t);
    mixed_extras_of(&a, &b, kernel, extra);
    mixed_fairness(mp->rec, mp->rec + mp->n, mp->nshort, mp->n, b.t - a.t,
                   extra);
    extra[MIXED_X_BURST] = (double)mp->burst;
    if (kernel && (!a.wait_ok || !b.wait_ok || !a.migr_ok || !b.migr_ok))
        snprintf(p->note, sizeof p->note, "%s unreadable in /proc",
                 a.wait_ok && b.wait_ok ? "migrations/stops" : "wait");
    return 0;
}

/* ----- policy and kernel rows ----- */

/* The flags, slots and record counts of a point. */
static int mixed_point_alloc(struct mixed_point *mp)
{
    size_t n = (size_t)mp->n;
    mp->flags = aligned_alloc(BENCH_CACHELINE, sizeof *mp->flags);
    mp->slots = aligned_alloc(BENCH_CACHELINE, n * sizeof *mp->slots);
    mp->rec = calloc(2 * n, sizeof *mp->rec);
    return mp->flags && mp->slots && mp->rec ? 0 : -1;
}

/* Without preemption a long task that never checkpoints would keep its
 * worker from the short tasks: it checkpoints, and the row says so. */
static int mixed_open(bench_point_t *p)
{
    struct mixed_point *mp = p->ctx;
    if (mixed_point_alloc(mp) || bench_row_open(p))
        return -1;
    mp->g = (bench_group_t){
        .rt = p->rt, .workers = p->o->workers, .stack = BENCH_KERNEL_STACK};
    if (p->rt && !mqs_preempt_on(p->rt) && mp->nlong && !mp->checkpoint) {
        mp->checkpoint = true;
        snprintf(p->note, sizeof p->note,
                 "no preemption (MQS_PREEMPT=0): long tasks checkpoint");
    }
    return 0;
}

/* Start the tasks (or threads), measure the window, stop and join. */
static int mixed_measure(bench_point_t *p, double *value, double *extra)
{
    struct mixed_point *mp = p->ctx;
    mixed_reset(mp);
    int rc = bench_group_start(&mp->g, "mixed", p->row->spec, mp->n,
                               mp->g.rt ? mixed_mq_task : mixed_kernel_thread,
                               mp->slots, sizeof *mp->slots);
    /* Every thread has published its tid before the window reads /proc. */
    for (int i = 0; !mp->g.rt && i < mp->g.started; i++)
        while (atomic_load(&mp->slots[i].tid) == 0)
            sched_yield();
    if (rc == 0)
        rc = mixed_window(p, value, extra);
    atomic_store(&mp->flags->stop, 1);
    atomic_store(&mp->flags->start, 1);
    return bench_group_join(&mp->g) ? -1 : rc;
}

static void mixed_close(bench_point_t *p)
{
    struct mixed_point *mp = p->ctx;
    bench_row_close(p);
    free(mp->flags);
    free(mp->slots);
    free(mp->rec);
    mp->flags = NULL;
    mp->slots = NULL;
    mp->rec = NULL;
}

static const bench_point_kind_t mixed_kind = {mixed_open, mixed_measure,
                                              mixed_close};

/* ----- peers ----- */

/* What a peer row is told, its wait (ns over the window) in ms/s, and its
 * per-task figures under their CSV keys. */
static void mixed_peer_args(bench_point_t *p, const struct mixed_point *mp,
                            bench_peer_map_t *map)
{
    *map = (bench_peer_map_t){.value_key = "records_per_s"};
    map->extra_key[MIXED_X_WAIT] = "wait_ns";
    map->extra_scale[MIXED_X_WAIT] = 1e-6 / p->o->seconds;
    for (int i = MIXED_X_SHORT_MIN; i <= MIXED_X_STARVED; i++)
        map->extra_key[i] = mixed_extras[i].name;
    p->peer_map = map;
    bench_peer_args_add(&p->peer_args, "short", "%d", mp->nshort);
    bench_peer_args_add(&p->peer_args, "long", "%d", mp->nlong);
    bench_peer_args_add(&p->peer_args, "burst_records", "%ld", mp->burst);
}

/* ----- Options and the table entry ----- */

struct mixed_args {
    int *shorts, *longs;
    int n;
    bool checkpoint;        /* --long-point checkpoint */
    long burst;             /* records per short burst, calibrated */
    struct mixed_point cur; /* the point being measured */
    bench_peer_map_t map;   /* ... and its peer mapping */
};

static int mixed_options(bench_sweep_t *sw, int *argc, char **argv)
{
    struct mixed_args *a = sw->arg;
    const char *v[3] = {"5,4,16", "5,2,0", "none"};
    const bench_xopt_t xo[] = {{"short", &v[0], NULL, 0, 0},
                               {"long", &v[1], NULL, 0, 0},
                               {"long-point", &v[2], NULL, 0, 0},
                               {0}};
    int ns = 0, nl = 0;
    int rc = bench_take_options("mixed", argc, argv, xo, NULL);
    if (rc == 0)
        rc = bench_parse_int_list("mixed", "--short", v[0], 0, MIXED_MAX_TASKS,
                                  &a->shorts, &ns);
    if (rc == 0)
        rc = bench_parse_int_list("mixed", "--long", v[1], 0, MIXED_MAX_TASKS,
                                  &a->longs, &nl);
    if (rc == 0 && ns != nl)
        rc = bench_usage("mixed",
                         "--short has %d values and --long %d: they pair by "
                         "position",
                         ns, nl);
    for (int i = 0; rc == 0 && i < ns; i++)
        if (a->shorts[i] + a->longs[i] == 0)
            rc = bench_usage("mixed", "point %d has no tasks", i + 1);
    if (rc == 0 && strcmp(v[2], "none") && strcmp(v[2], "checkpoint"))
        rc = bench_usage("mixed",
                         "--long-point: '%s' is not none or checkpoint", v[2]);
    a->checkpoint = !strcmp(v[2], "checkpoint");
    a->n = sw->nparams = ns;
    return rc;
}

static int mixed_prepare(bench_sweep_t *sw)
{
    struct mixed_args *a = sw->arg;
    a->burst = mixed_calibrate();
    return 0;
}

static int mixed_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct mixed_args *a = sw->arg;
    struct mixed_point *mp = &a->cur;
    *mp = (struct mixed_point){.nshort = a->shorts[i],
                               .nlong = a->longs[i],
                               .n = a->shorts[i] + a->longs[i],
                               .burst = a->burst,
                               .checkpoint = a->checkpoint};
    p->unit = "records/s";
    p->ctx = mp;
    mixed_peer_args(p, mp, &a->map);
    mixed_param(p->param, sizeof p->param, mp->nshort, mp->nlong);
    return 0;
}

static void mixed_done(bench_sweep_t *sw)
{
    struct mixed_args *a = sw->arg;
    free(a->shorts);
    free(a->longs);
}

const bench_exp_t bench_mixed_exp = {
    .cli = &mixed_cli,
    .arg_size = sizeof(struct mixed_args),
    .title = "records per second",
    .extras = mixed_extras,
    .nextra = MIXED_X_COUNT,
    .kind = &mixed_kind,
    .options = mixed_options,
    .prepare = mixed_prepare,
    .setup = mixed_setup,
    .done = mixed_done,
};
