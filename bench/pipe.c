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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expkit.h"

enum { PIPE_SAME, PIPE_CROSS, PIPE_BW, PIPE_NMODES };
static const char *const pipe_mode_names[PIPE_NMODES] = {"same", "cross",
                                                         "bw"};

static const char *const pipe_refused[] = {"tasks", NULL};

enum { PX_REPEATS, PX_COUNT };
static const bench_extra_col_t pipe_extras[PX_COUNT] = {
    [PX_REPEATS] = {"repeats", NULL, 0, BENCH_FOLD_REPEATS},
};

static const bench_cli_t pipe_cli = {
    .name = "pipe",
    .summary = "lmbench lat_pipe / bw_pipe: one-byte round trip on one and "
               "on two workers,\nbandwidth of 64 KiB messages",
    .details = BENCH_HELP_PIPE,
    .default_tasks = "1",
    BENCH_PEER_ROWS,
    .default_seconds = 0.2,
    .default_repeats = 5,
};

/* One data point: a row at one mode. */
struct pipe_point {
    int mode;
    size_t msg;  /* bytes per message (bw)          */
    int cpus[2]; /* kernel: same uses cpus[0]; cross both */
};

/* What the two sides share during one sample. */
struct pipe_run {
    _Atomic int started, stop;
    uint64_t t0, t1; /* pinger's / writer's start; pinger's / reader's end */
    uint64_t trips, bytes;
    size_t msg;
    int err;
    bool kernel; /* which of the two below */
    /* mqs rows */
    mqs_pipe_t *a, *b; /* a: ping -> pong (or writer -> reader); b: back */
    /* kernel row */
    int fa[2], fb[2];
};

/* The pinger's or writer's start stamp. */
static void pipe_start(struct pipe_run *r)
{
    r->t0 = bench_now_ns();
    atomic_store_explicit(&r->started, 1, memory_order_relaxed);
}

/* The sample's value from what the tasks recorded. */
static int pipe_value(const bench_point_t *p, const struct pipe_run *r,
                      double *value)
{
    const struct pipe_point *pt = p->ctx;
    double ns = (double)(r->t1 - r->t0);
    if (r->err || ns <= 0 || (pt->mode == PIPE_BW ? !r->bytes : !r->trips)) {
        fprintf(stderr, "mqs-bench pipe: %s %s: %s\n", p->row->spec, p->param,
                r->err ? strerror(r->err) : "nothing measured");
        return -1;
    }
    if (pt->mode == PIPE_BW)
        *value = (double)r->bytes / (1024.0 * 1024.0) / (ns * 1e-9);
    else
        *value = ns / (double)r->trips / 1000.0;
    return 0;
}

/* ----- The two sides, on mqs_pipe_t (policy rows) or pipe(2) (kernel) ----- */

/* Write all of buf into pipe a (back: b); 0 or an errno. */
static int pipe_put(struct pipe_run *r, bool back, const void *buf, size_t n)
{
    if (r->kernel)
        return bench_write_all(back ? r->fb[1] : r->fa[1], buf, n);
    return mqs_pipe_write(back ? r->b : r->a, buf, n, NULL) ? EIO : 0;
}

/* Read up to n bytes from pipe a (back: b); 0 at the end or an error. */
static size_t pipe_get(struct pipe_run *r, bool back, void *buf, size_t n)
{
    size_t got = 0;
    if (!r->kernel)
        return mqs_pipe_read(back ? r->b : r->a, buf, n, &got) ? 0 : got;
    return bench_read(back ? r->fb[0] : r->fa[0], buf, n);
}

/* Close the writing end of pipe a: the reader sees its end. */
static void pipe_end(struct pipe_run *r)
{
    if (!r->kernel) {
        mqs_pipe_close(r->a);
        return;
    }
    close(r->fa[1]);
    r->fa[1] = -1;
}

static void *pipe_ping(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char c = 'p';
    pipe_start(r);
    while (!bench_flag(&r->stop)) {
        if (pipe_put(r, false, &c, 1) || pipe_get(r, true, &c, 1) != 1) {
            r->err = EIO;
            break;
        }
        r->trips++;
    }
    r->t1 = bench_now_ns();
    pipe_end(r);
    return NULL;
}

static void *pipe_pong(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char c;
    while (pipe_get(r, false, &c, 1) == 1)
        if (pipe_put(r, true, &c, 1) != 0)
            break;
    return NULL;
}

static void *pipe_writer(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char *buf = calloc(1, r->msg);
    pipe_start(r);
    while (buf && !bench_flag(&r->stop))
        if ((r->err = pipe_put(r, false, buf, r->msg)) != 0)
            break;
    pipe_end(r);
    free(buf);
    return NULL;
}

static void *pipe_reader(void *arg)
{
    struct pipe_run *r = arg;
    unsigned char *buf = malloc(r->msg);
    size_t n;
    while (buf && (n = pipe_get(r, false, buf, r->msg)) > 0)
        r->bytes += n;
    r->t1 = bench_now_ns();
    free(buf);
    r->err = buf ? 0 : ENOMEM;
    return NULL;
}

/* ----- Starting the two sides: mqs tasks placed by affinity masks (policy
 * rows) or pthreads pinned to CPUs (kernel) ----- */

/* Start fn as side b (true: the ponger or reader).  same: both sides on
 * worker 0 (CPU cpus[0]); cross: side b on worker 1 (cpus[1]); bw:
 * anywhere (the kernel row's shared mask). */
static int pipe_spawn(const bench_point_t *p, bool b, void *(*fn)(void *),
                      struct pipe_run *r, bench_task_t *s)
{
    const struct pipe_point *pt = p->ctx;
    bool bw = pt->mode == PIPE_BW;
    int w = b && pt->mode == PIPE_CROSS;
    mqs_mask_t m;
    mqs_task_attr_t a;
    pthread_attr_t ka;
    cpu_set_t set;
    mqs_task_attr_init(&a);
    bench_thread_attr(&ka, p->o->workers, 0);
    if (!bw) {
        mqs_mask_zero(&m);
        mqs_mask_set(&m, w);
        a.affinity = &m;
        bench_cpuset_of(&pt->cpus[w], 1, &set);
        pthread_attr_setaffinity_np(&ka, sizeof set, &set);
    }
    int rc = bench_task_start(s, p->rt, &a, &ka, fn, r);
    pthread_attr_destroy(&ka);
    if (rc)
        bench_task_error("pipe", p->row->spec, r->kernel, rc);
    return rc;
}

static void pipe_fds_close(struct pipe_run *r)
{
    int *fds[] = {&r->fa[0], &r->fa[1], &r->fb[0], &r->fb[1]};
    for (int i = 0; i < 4; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
}

static int pipe_measure(bench_point_t *p, double *value, double *extra)
{
    struct pipe_point *pt = p->ctx;
    bool bw = pt->mode == PIPE_BW;
    struct pipe_run r = {.msg = pt->msg, .fa = {-1, -1}, .fb = {-1, -1},
                         .kernel = p->row->pseudo};
    bench_task_t sa = {0}, sb = {0};
    (void)extra;
    int rc = r.kernel ? pipe(r.fa) || pipe(r.fb)
                      : mqs_pipe_create(&r.a, bw ? pt->msg : 1) ||
                            mqs_pipe_create(&r.b, 1);
    if (rc && r.kernel)
        perror("mqs-bench pipe: kernel: pipe");
    if (rc == 0)
        rc = pipe_spawn(p, true, bw ? pipe_reader : pipe_pong, &r, &sb);
    if (rc == 0)
        rc = pipe_spawn(p, false, bw ? pipe_writer : pipe_ping, &r, &sa);
    if (rc == 0)
        bench_window(&r.started, &r.stop, bench_point_seconds(p));
    else if (sb.started)
        pipe_end(&r); /* the reader ends */
    bench_task_join(&sa);
    bench_task_join(&sb);
    pipe_fds_close(&r);
    mqs_pipe_destroy(r.a);
    mqs_pipe_destroy(r.b);
    return rc ? -1 : pipe_value(p, &r, value);
}

/* A policy row's runtime, or the kernel row's first two CPUs; cross
 * needs two workers (CPUs), and same and cross run on one and two. */
static int pipe_open(bench_point_t *p)
{
    struct pipe_point *pt = p->ctx;
    bool kernel = p->row->pseudo;
    int n = kernel ? bench_cpu_list(p->o->workers, pt->cpus, 2) : 0;
    if (bench_row_open(p))
        return -1;
    n = kernel ? n : p->workers;
    if (pt->mode != PIPE_BW)
        p->workers = pt->mode == PIPE_SAME ? 1 : 2;
    if (pt->mode == PIPE_CROSS && n < 2) {
        snprintf(p->note, sizeof p->note, "needs 2 %s",
                 kernel ? "CPUs" : "workers");
        return -1;
    }
    return 0;
}

/* ----- Row kinds and the table entry ----- */

static const bench_point_kind_t pipe_kind = {pipe_open, pipe_measure,
                                             bench_row_close};

static const bench_peer_map_t pipe_peer_lat = {.value_key = "rtt_ns",
                                               .value_scale = 1e-3};
static const bench_peer_map_t pipe_peer_bw = {.value_key = "mb_per_s"};

struct pipe_args {
    bool modes[PIPE_NMODES];
    int list[PIPE_NMODES]; /* the modes asked, in order */
    size_t msg;
    struct pipe_point cur; /* the point being measured */
};

static int pipe_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct pipe_args *a = sw->arg;
    int m = a->list[i];
    a->cur = (struct pipe_point){.mode = m, .msg = a->msg};
    bench_peer_args_t *pa = &p->peer_args;
    if (m == PIPE_BW) {
        snprintf(p->param, sizeof p->param, "msg_kib=%zu", a->msg / 1024);
        bench_peer_args_add(pa, "mode", "bandwidth");
        bench_peer_args_add(pa, "msg_kib", "%zu", a->msg / 1024);
    } else {
        snprintf(p->param, sizeof p->param, "placement=%s",
                 pipe_mode_names[m]);
        bench_peer_args_add(pa, "mode", "latency");
        bench_peer_args_add(pa, "placement", "%s", pipe_mode_names[m]);
    }
    p->peer_map = m == PIPE_BW ? &pipe_peer_bw : &pipe_peer_lat;
    p->workers = m == PIPE_SAME; /* a peer's same runs on one worker */
    p->unit = m == PIPE_BW ? "MiB/s" : "us";
    p->ctx = &a->cur;
    return 0;
}

/* --modes: a comma list of same, cross, bw (empty items skipped). */
static int pipe_parse_modes(const char *s, bool *modes)
{
    bool any = false;
    for (s += strspn(s, ","); *s; s += strspn(s, ",")) {
        int n = (int)strcspn(s, ","), m = 0;
        while (m < PIPE_NMODES && (strncmp(s, pipe_mode_names[m], n) ||
                                   pipe_mode_names[m][n] != '\0'))
            m++;
        if (m == PIPE_NMODES)
            return bench_usage(
                "pipe", "--modes: '%.*s' is not one of same, cross, bw", n, s);
        modes[m] = any = true;
        s += n;
    }
    return any ? 0 : bench_usage("pipe", "--modes: empty list");
}

static int pipe_options(bench_sweep_t *sw, int *argc, char **argv)
{
    struct pipe_args *a = sw->arg;
    const char *modes_s = "same,cross,bw", *kib_s = "64";
    int kib = 0;
    const bench_xopt_t xo[] = {{"modes", &modes_s, NULL, 0, 0},
                               {"msg-kib", &kib_s, &kib, 1, 65536},
                               {0}};
    int rc = bench_take_options("pipe", argc, argv, xo, pipe_refused);
    if (rc == 0)
        rc = pipe_parse_modes(modes_s, a->modes);
    a->msg = (size_t)kib * 1024;
    for (int m = 0; rc == 0 && m < PIPE_NMODES; m++) /* in this order */
        if (a->modes[m])
            a->list[sw->nparams++] = m;
    return rc;
}

const bench_exp_t bench_pipe_exp = {
    .cli = &pipe_cli,
    .arg_size = sizeof(struct pipe_args),
    .title = "us per one-byte round trip (placement=*), MiB/s (msg_kib=*)",
    .extras = pipe_extras,
    .nextra = PX_COUNT,
    .kind = &pipe_kind,
    .options = pipe_options,
    .setup = pipe_setup,
};
