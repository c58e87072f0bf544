/*
 * pipe.c - `mqs-bench pipe`: lmbench's lat_pipe and bw_pipe on tasks.
 *
 * Three points (--modes):
 *   placement=same   two tasks ping-pong one byte over two pipes, both on
 *                    one worker: round-trip latency, two switches a trip
 *   placement=cross  the same with the tasks on two workers: two wake-ups
 *                    across workers a trip
 *   msg_kib=K        one task writes K KiB messages (--msg-kib, 64 as in
 *                    bw_pipe), another reads them: MiB/s, placement left
 *                    to the scheduler
 *
 * Rows: a policy uses mqs_pipe_t (the library's byte pipe) between mqs
 * tasks placed with affinity masks (same: both on worker 0; cross: on 0
 * and 1); its capacity is one message (a Linux pipe holds 64 KiB by
 * default).  kernel uses pipe(2) between two pthreads pinned to one CPU
 * (same) or two CPUs (cross), unpinned within the first --workers CPUs
 * for bandwidth, as lmbench's processes would be.  go and fiber run the
 * peer programs (bench/peers/PROTOCOL.md); Go's row is an unbuffered
 * channel of one byte, Boost.Fiber's its channel.
 *
 * One sample: the two tasks are spawned, the pinger (or writer) stamps
 * its own start, runs until the main thread sets stop after --seconds,
 * stamps its end and closes the pipe; the ponger (reader) ends on
 * end-of-stream.  Spawning and joining stay outside the window.
 * Latency is window / round trips; bandwidth is bytes the reader got /
 * (its end stamp - the writer's start stamp).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expkit.h"

enum { PIPE_SAME, PIPE_CROSS, PIPE_BW, PIPE_NMODES };
static const char *const pipe_mode_names[PIPE_NMODES] = {"same", "cross",
                                                         "bw"};

static const char *const pipe_pseudo[] = {"kernel", "go", "fiber", NULL};
static const char *const pipe_refused[] = {"tasks", NULL};

enum { PX_REPEATS, PX_COUNT };
static const bench_extra_col_t pipe_extras[PX_COUNT] = {
    [PX_REPEATS] = {"repeats", NULL, 0},
};

static const bench_cli_t pipe_cli = {
    .name = "pipe",
    .summary = "lmbench lat_pipe / bw_pipe: one-byte round trip on one and "
               "on two workers,\nbandwidth of 64 KiB messages",
    .details =
        "experiment options:\n"
        "  --modes M,M,...     points: same, cross (one-byte round trip, "
        "both tasks on\n"
        "                      one worker / on two), bw (bandwidth); "
        "default all three\n"
        "  --msg-kib K         message size of bw in KiB (default 64)\n"
        "  (--tasks does not apply)\n\n"
        "units: placement=* rows in us per round trip; msg_kib=* rows in "
        "MiB/s.\n"
        "rows:  a policy  mqs_pipe_t between two mqs tasks placed by "
        "affinity masks\n"
        "       kernel    pipe(2) between two pthreads (same: one CPU; "
        "cross: two)\n"
        "       go, fiber the peer programs (Go unbuffered channel, "
        "Boost.Fiber channel)\n\n"
        "example: mqs-bench pipe --policy mq,kernel --csv\n",
    .default_tasks = "1",
    .default_policy = "mq,kernel,go,fiber",
    .pseudo = pipe_pseudo,
    .default_seconds = 0.2,
    .default_repeats = 5,
};

/* One data point: a row at one mode. */
struct pipe_point {
    const bench_opts_t *o;
    const char *row;
    int mode;
    size_t msg; /* bytes per message (bw)          */
    int workers; /* workers the two tasks could use */
    mqs_runtime_t *rt;
    int cpus[2]; /* kernel: same uses cpus[0]; cross both */
    char param[32];
    char note[96];
};

/* What the two sides share during one sample. */
struct pipe_run {
    _Atomic int started, stop;
    uint64_t t0, t1; /* pinger's / writer's start; pinger's / reader's end */
    uint64_t trips, bytes;
    size_t msg;
    int err;
    /* mqs rows */
    mqs_pipe_t *a, *b; /* a: ping -> pong (or writer -> reader); b: back */
    /* kernel row */
    int fa[2], fb[2];
};

static bool pipe_stopped(struct pipe_run *r)
{
    return atomic_load_explicit(&r->stop, memory_order_relaxed) != 0;
}

/* The pinger's or writer's start stamp. */
static void pipe_start(struct pipe_run *r)
{
    r->t0 = bench_now_ns();
    atomic_store_explicit(&r->started, 1, memory_order_relaxed);
}

/* Once the sample has started (a loaded host may take a while to run
 * it), let it run for `seconds`, then tell it to stop. */
static void pipe_window(struct pipe_run *r, double seconds)
{
    while (!atomic_load_explicit(&r->started, memory_order_relaxed))
        bench_sleep_ns(50000);
    bench_sleep_ns((uint64_t)(seconds * 1e9));
    atomic_store(&r->stop, 1);
}

/* The sample's value from what the tasks recorded. */
static int pipe_value(const struct pipe_point *pt, const struct pipe_run *r,
                      double *value)
{
    double ns = (double)(r->t1 - r->t0);
    if (r->err || ns <= 0 || (pt->mode == PIPE_BW ? !r->bytes : !r->trips)) {
        fprintf(stderr, "mqs-bench pipe: %s %s: %s\n", pt->row, pt->param,
                r->err ? strerror(r->err) : "nothing measured");
        return -1;
    }
    if (pt->mode == PIPE_BW)
        *value = (double)r->bytes / (1024.0 * 1024.0) / (ns * 1e-9);
    else
        *value = ns / (double)r->trips / 1000.0;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Policy rows: mqs_pipe_t between tasks                               */
/* ------------------------------------------------------------------ */

static void *pipe_mq_ping(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char c = 'p';
    size_t n;
    pipe_start(r);
    while (!pipe_stopped(r)) {
        if (mqs_pipe_write(r->a, &c, 1, &n) || mqs_pipe_read(r->b, &c, 1, &n))
            break;
        r->trips++;
    }
    r->t1 = bench_now_ns();
    mqs_pipe_close(r->a);
    return NULL;
}

static void *pipe_mq_pong(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char c;
    size_t n;
    while (mqs_pipe_read(r->a, &c, 1, &n) == 0)
        if (mqs_pipe_write(r->b, &c, 1, &n) != 0)
            break;
    return NULL;
}

static void *pipe_mq_writer(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char *buf = calloc(1, r->msg);
    pipe_start(r);
    while (buf && !pipe_stopped(r))
        if (mqs_pipe_write(r->a, buf, r->msg, NULL) != 0)
            break;
    mqs_pipe_close(r->a);
    free(buf);
    return NULL;
}

static void *pipe_mq_reader(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char *buf = malloc(r->msg);
    size_t n;
    while (buf && mqs_pipe_read(r->a, buf, r->msg, &n) == 0)
        r->bytes += n;
    r->t1 = bench_now_ns();
    free(buf);
    r->err = buf ? 0 : ENOMEM;
    return NULL;
}

/* Spawn fn on worker `w` (-1: anywhere). */
static int pipe_spawn(const struct pipe_point *pt, int w, mqs_task_fn fn,
                      struct pipe_run *r, mqs_task_t **t)
{
    mqs_mask_t m;
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    if (w >= 0) {
        mqs_mask_zero(&m);
        mqs_mask_set(&m, w);
        a.affinity = &m;
    }
    int rc = mqs_spawn(pt->rt, t, &a, fn, r);
    if (rc)
        fprintf(stderr, "mqs-bench pipe: %s: mqs_spawn: %s\n", pt->row,
                mqs_strerror(rc));
    return rc;
}

static int pipe_mq_sample(void *arg, double seconds, double *value)
{
    struct pipe_point *pt = arg;
    struct pipe_run r = {.msg = pt->msg};
    bool bw = pt->mode == PIPE_BW;
    int wa = bw ? -1 : 0, wb = bw ? -1 : pt->mode == PIPE_CROSS;
    mqs_task_t *ta = NULL, *tb = NULL;
    if (mqs_pipe_create(&r.a, bw ? pt->msg : 1) ||
        mqs_pipe_create(&r.b, 1)) {
        mqs_pipe_destroy(r.a);
        return -1;
    }
    int rc = pipe_spawn(pt, wb, bw ? pipe_mq_reader : pipe_mq_pong, &r, &tb);
    if (rc == 0)
        rc = pipe_spawn(pt, wa, bw ? pipe_mq_writer : pipe_mq_ping, &r, &ta);
    if (rc == 0)
        pipe_window(&r, seconds);
    else
        mqs_pipe_close(r.a); /* the reader, if started, ends */
    if (ta)
        mqs_join(ta, NULL);
    if (tb)
        mqs_join(tb, NULL);
    mqs_pipe_destroy(r.a);
    mqs_pipe_destroy(r.b);
    return rc ? -1 : pipe_value(pt, &r, value);
}

static int pipe_mq_open(struct pipe_point *pt)
{
    if (bench_runtime_open("pipe", pt->row, pt->o->workers, 0, &pt->rt))
        return -1;
    int w = mqs_runtime_workers(pt->rt);
    pt->workers = pt->mode == PIPE_SAME ? 1 : pt->mode == PIPE_CROSS ? 2 : w;
    if (pt->mode == PIPE_CROSS && w < 2) {
        snprintf(pt->note, sizeof pt->note, "needs 2 workers");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* kernel row: pipe(2) between pthreads                                */
/* ------------------------------------------------------------------ */

/* Write all of buf; 0 or an errno. */
static int pipe_fd_write(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return errno ? errno : EIO;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void *pipe_k_ping(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char c = 'p';
    pipe_start(r);
    while (!pipe_stopped(r)) {
        if (pipe_fd_write(r->fa[1], &c, 1) || read(r->fb[0], &c, 1) != 1) {
            r->err = EIO;
            break;
        }
        r->trips++;
    }
    r->t1 = bench_now_ns();
    close(r->fa[1]);
    r->fa[1] = -1;
    return NULL;
}

static void *pipe_k_pong(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char c;
    while (read(r->fa[0], &c, 1) == 1)
        if (pipe_fd_write(r->fb[1], &c, 1) != 0)
            break;
    return NULL;
}

static void *pipe_k_writer(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char *buf = calloc(1, r->msg);
    pipe_start(r);
    while (buf && !pipe_stopped(r))
        if ((r->err = pipe_fd_write(r->fa[1], buf, r->msg)) != 0)
            break;
    close(r->fa[1]);
    r->fa[1] = -1;
    free(buf);
    return NULL;
}

static void *pipe_k_reader(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char *buf = malloc(r->msg);
    ssize_t k;
    while (buf && ((k = read(r->fa[0], buf, r->msg)) > 0 ||
                   (k < 0 && errno == EINTR)))
        r->bytes += k > 0 ? (uint64_t)k : 0;
    r->t1 = bench_now_ns();
    free(buf);
    return NULL;
}

static void pipe_fds_close(struct pipe_run *r)
{
    int *fds[] = {&r->fa[0], &r->fa[1], &r->fb[0], &r->fb[1]};
    for (int i = 0; i < 4; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
}

/* Start fn on the CPUs of set. */
static int pipe_thread(pthread_t *t, const cpu_set_t *set, void *(*fn)(void *),
                       struct pipe_run *r)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setaffinity_np(&attr, sizeof *set, set);
    int rc = pthread_create(t, &attr, fn, r);
    pthread_attr_destroy(&attr);
    if (rc)
        fprintf(stderr, "mqs-bench pipe: kernel: pthread_create: %s\n",
                strerror(rc));
    return rc;
}

/* The CPU sets of the two threads: same, cross, or bw's shared mask. */
static void pipe_k_sets(const struct pipe_point *pt, cpu_set_t *a,
                        cpu_set_t *b)
{
    if (pt->mode == PIPE_BW) {
        int cpus[MQS_MAX_WORKERS];
        int n = bench_cpu_list(pt->o->workers, cpus, MQS_MAX_WORKERS);
        bench_cpuset_of(cpus, n, a);
        *b = *a;
        return;
    }
    bench_cpuset_of(&pt->cpus[0], 1, a);
    bench_cpuset_of(&pt->cpus[pt->mode == PIPE_CROSS], 1, b);
}

static int pipe_k_sample(void *arg, double seconds, double *value)
{
    struct pipe_point *pt = arg;
    struct pipe_run r = {.msg = pt->msg, .fa = {-1, -1}, .fb = {-1, -1}};
    bool bw = pt->mode == PIPE_BW;
    cpu_set_t sa, sb;
    pthread_t ta, tb;
    pipe_k_sets(pt, &sa, &sb);
    if (pipe(r.fa) || pipe(r.fb)) {
        perror("mqs-bench pipe: kernel: pipe");
        pipe_fds_close(&r);
        return -1;
    }
    int rc = pipe_thread(&tb, &sb, bw ? pipe_k_reader : pipe_k_pong, &r);
    int rc2 = rc ? rc : pipe_thread(&ta, &sa, bw ? pipe_k_writer : pipe_k_ping,
                                    &r);
    if (rc2 == 0) {
        pipe_window(&r, seconds);
        pthread_join(ta, NULL);
    } else if (r.fa[1] >= 0) {
        close(r.fa[1]);
        r.fa[1] = -1;
    }
    if (rc == 0)
        pthread_join(tb, NULL);
    pipe_fds_close(&r);
    return rc2 ? -1 : pipe_value(pt, &r, value);
}

static int pipe_k_open(struct pipe_point *pt)
{
    int n = bench_cpu_list(pt->o->workers, pt->cpus, 2);
    pt->workers = pt->mode == PIPE_SAME ? 1 : pt->mode == PIPE_CROSS ? 2 : 0;
    if (pt->mode == PIPE_BW) {
        int cpus[MQS_MAX_WORKERS];
        pt->workers = bench_cpu_list(pt->o->workers, cpus, MQS_MAX_WORKERS);
    }
    if (pt->mode == PIPE_CROSS && n < 2) {
        snprintf(pt->note, sizeof pt->note, "needs 2 CPUs");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Peer rows                                                           */
/* ------------------------------------------------------------------ */

static int pipe_peer_sample(void *arg, double seconds, double *value)
{
    struct pipe_point *pt = arg;
    char kib[32];
    const char *lat[] = {"mode=latency", pt->param, NULL};
    const char *bw[] = {"mode=bandwidth", kib, NULL};
    snprintf(kib, sizeof kib, "msg_kib=%zu", pt->msg / 1024);
    bench_peer_result_t res;
    int rc = bench_peer_sample(pt->row, "pipe", pt->mode == PIPE_BW ? bw : lat,
                               pt->o->workers, seconds, &res, pt->note,
                               sizeof pt->note);
    if (rc)
        return rc;
    *value = pt->mode == PIPE_BW ? bench_peer_get(&res, "mb_per_s")
                                 : bench_peer_get(&res, "rtt_ns") / 1000.0;
    if (isnan(*value)) {
        snprintf(pt->note, sizeof pt->note, "failed: key missing");
        return BENCH_PEER_FAILED;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Driver                                                              */
/* ------------------------------------------------------------------ */

static int pipe_point_run(struct pipe_point *pt, bench_progress_t *pg,
                          bench_result_t *res)
{
    bench_estimate_t est;
    bool peer = bench_peer_is(pt->row), kernel = !strcmp(pt->row, "kernel");
    bench_sample_fn fn = peer     ? pipe_peer_sample
                         : kernel ? pipe_k_sample
                                  : pipe_mq_sample;
    int rc = 0;
    if (peer)
        pt->workers = pt->mode == PIPE_SAME ? 1
                      : pt->o->workers      ? pt->o->workers
                                            : bench_cpus_allowed();
    else
        rc = kernel ? pipe_k_open(pt) : pipe_mq_open(pt);
    if (rc == 0)
        rc = bench_point_estimate(pt->o, pg, pt->row, pt->param, !peer, fn,
                                  pt, &est);
    bench_runtime_close("pipe", pt->rt);
    pt->rt = NULL;
    const char *unit = pt->mode == PIPE_BW ? "MiB/s" : "us";
    *res = bench_result_of(pt->row, pt->param, pt->workers, unit, rc, &est,
                           pt->note[0] ? pt->note : "failed");
    res->extra[PX_REPEATS] = rc ? NAN : est.n;
    /* A peer that is absent or lacks the mode is not a failure. */
    return rc == BENCH_PEER_MISSING || rc == BENCH_PEER_UNSUPPORTED ? 0 : rc;
}

static int pipe_run_all(const bench_opts_t *o, const bool *modes, size_t msg,
                        bench_results_t *rs)
{
    int nmodes = 0, failed = 0;
    for (int m = 0; m < PIPE_NMODES; m++)
        nmodes += modes[m];
    bench_progress_t pg;
    bench_progress_init(&pg, o->nrows * nmodes);
    for (int r = 0; r < o->nrows; r++) {
        for (int m = 0; m < PIPE_NMODES; m++) {
            if (!modes[m])
                continue;
            struct pipe_point pt = {.o = o, .row = o->rows[r].spec,
                                    .mode = m, .msg = msg};
            if (m == PIPE_BW)
                snprintf(pt.param, sizeof pt.param, "msg_kib=%zu", msg / 1024);
            else
                snprintf(pt.param, sizeof pt.param, "placement=%s",
                         pipe_mode_names[m]);
            pg.index++;
            bench_result_t res;
            failed |= pipe_point_run(&pt, &pg, &res) != 0;
            if (bench_results_add(rs, &res) != 0)
                return -1;
        }
    }
    bench_progress_done(&pg);
    return failed ? -1 : 0;
}

/* --modes: a comma list of same, cross, bw. */
static int pipe_parse_modes(const char *s, bool *modes)
{
    char *copy = strdup(s), *save = NULL;
    int rc = copy ? 0 : BENCH_EXIT_USAGE, any = 0;
    for (char *t = copy; rc == 0; t = NULL) {
        char *item = strtok_r(t, ",", &save);
        if (!item)
            break;
        int m = 0;
        while (m < PIPE_NMODES && strcmp(item, pipe_mode_names[m]) != 0)
            m++;
        if (m == PIPE_NMODES) {
            fprintf(stderr, "mqs-bench pipe: --modes: '%s' is not one of "
                            "same, cross, bw\n", item);
            rc = BENCH_EXIT_USAGE;
        } else {
            modes[m] = true;
            any = 1;
        }
    }
    free(copy);
    if (rc == 0 && !any) {
        fprintf(stderr, "mqs-bench pipe: --modes: empty list\n");
        rc = BENCH_EXIT_USAGE;
    }
    return rc;
}

int bench_pipe_main(int argc, char **argv)
{
    const char *modes_s = "same,cross,bw", *kib_s = "64";
    const bench_xopt_t xo[] = {{"modes", &modes_s}, {"msg-kib", &kib_s},
                               {NULL, NULL}};
    bool modes[PIPE_NMODES] = {false};
    int kib = 0;
    int rc = bench_take_options("pipe", &argc, argv, xo, pipe_refused);
    if (rc == 0)
        rc = pipe_parse_modes(modes_s, modes);
    if (rc == 0)
        rc = bench_parse_int("pipe", "--msg-kib", kib_s, 1, 65536, &kib);
    bench_opts_t o;
    if (rc == 0)
        rc = bench_parse_options(&pipe_cli, argc, argv, &o);
    if (rc == BENCH_HELP_SHOWN)
        return 0;
    if (rc)
        return rc;
    bench_results_t rs;
    bench_results_init(&rs, "pipe",
                       "us per one-byte round trip (placement=*), MiB/s "
                       "(msg_kib=*)",
                       pipe_extras, PX_COUNT);
    int failed = pipe_run_all(&o, modes, (size_t)kib * 1024, &rs);
    int out = bench_output(&rs, &o);
    bench_results_free(&rs);
    bench_opts_free(&o);
    return failed || out ? 1 : 0;
}
