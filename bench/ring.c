/*
 * ring.c - `mqs-bench ring`: lmbench's lat_ctx.  A token goes round a
 * ring of N tasks; at each hop the task holding it touches (reads and
 * writes every word of) an array of --size KiB of its own, then passes
 * the token on and blocks until it comes back.  The figure is
 * microseconds per switch: the time of one hop minus the time of the
 * touching alone, which is measured separately on one thread touching
 * one array over and over, so the array stays cached.  That is
 * lmbench's subtraction, with the same consequence: when N arrays no
 * longer fit in the caches, the misses a switch causes are counted as
 * switch cost, which is the point of the --size knob.  (lmbench also
 * subtracts the cost of its pipe calls without a switch; here the
 * hand-off is the mechanism under test and is not subtracted.)
 *
 * Rows:
 *   <policy>  N mqs tasks, each blocked in mqs_sem_wait() on its own
 *             semaphore; a hop is the holder's mqs_sem_post() on the next
 *             task's semaphore (which hands the unit to the waiter) and
 *             its own wait
 *   kernel    N pthreads, each blocked in read(2) of one byte on its own
 *             pipe; a hop writes the byte to the next thread's pipe
 *             (lmbench's mechanism, on threads instead of processes)
 *   go, fiber the peer programs (PROTOCOL.md: hop_ns, touch_ns)
 *
 * Workers: a context switch is a one-CPU figure, so the ring runs on one
 * worker (kernel: threads pinned to one CPU) unless --workers says more;
 * with W > 1 the mqs tasks are placed by the policy and the kernel
 * threads share a mask of the first W CPUs.
 *
 * One sample: the tasks are spawned and block; the main thread posts the
 * first one, task 0 stamps the start on its first hop, the main thread
 * sets stop after --seconds, task 0 stamps the end when it next holds
 * the token and marks the ring done; each task passes the token once
 * more and exits.  Hops in the window = laps of task 0 x N.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expkit.h"

enum { RX_TOUCH, RX_SIZE, RX_REPEATS, RX_COUNT };
static const bench_extra_col_t ring_extras[RX_COUNT] = {
    [RX_TOUCH] = {"touch_us", "touch", 3, BENCH_FOLD_MEAN},
    [RX_SIZE] = {"size_kib", NULL, 0, BENCH_FOLD_MEAN},
    [RX_REPEATS] = {"repeats", NULL, 0, BENCH_FOLD_REPEATS},
};

static const bench_cli_t ring_cli = {
    .name = "ring",
    .summary = "lmbench lat_ctx: us per context switch round a ring of N "
               "tasks, each touching\n--size KiB at every hop",
    .details = BENCH_HELP_RING,
    .default_tasks = "2,4,8,16,64",
    BENCH_PEER_ROWS,
    .default_seconds = 0.2,
    .default_repeats = 5,
};

/* One task of the ring: its wake-up object and its array. */
struct ring_member {
    mqs_sem_t sem;     /* policy rows                        */
    int fd[2];         /* kernel row: its pipe               */
    uint32_t *array;   /* size KiB of its own                */
    struct ring_run *run;
    int index;
} __attribute__((aligned(BENCH_CACHELINE)));

/* One sample: written by task 0 (stamps, laps, done) and the main thread
 * (stop); the members read done after being handed the token, which
 * orders it. */
struct ring_run {
    _Atomic int started, stop;
    bool done;
    uint64_t t0, t1, laps;
    int n;
    size_t words;
    struct ring_member *m;
    mqs_runtime_t *rt; /* NULL: the kernel row */
};

/* A data point: the ring's members, made once per point. */
struct ring_point {
    int ntasks, size_kib;
    struct ring_member *m;
};

/* Read and write every word: the working set a switch must bring back. */
static void ring_touch(uint32_t *a, size_t words)
{
    for (size_t i = 0; i < words; i++)
        a[i] = a[i] * 3u + 1u;
}

/* The holder's part of a hop; returns false once the ring is done. */
static bool ring_hold(struct ring_member *me)
{
    struct ring_run *r = me->run;
    if (me->index == 0 && !r->done) {
        if (r->laps == 0) {
            r->t0 = bench_now_ns();
            atomic_store_explicit(&r->started, 1, memory_order_relaxed);
        }
        if (bench_flag(&r->stop)) {
            r->t1 = bench_now_ns();
            r->done = true;
        } else {
            r->laps++;
        }
    }
    if (!r->done)
        ring_touch(me->array, r->words);
    return !r->done;
}

/* us per switch from the run and the touching time. */
static int ring_value(bench_point_t *p, struct ring_run *r, double touch,
                      double *value, double *extra)
{
    if (r->laps < 1 || r->t1 <= r->t0) {
        fprintf(stderr, "mqs-bench ring: %s %s: no laps counted\n",
                p->row->spec, p->param);
        return -1;
    }
    /* t0 and t1 are both stamped by task 0 holding the token: laps
     * whole laps of n hops lie between. */
    double hops = (double)r->laps * r->n;
    *value = (double)(r->t1 - r->t0) / hops / 1000.0 - touch;
    extra[RX_TOUCH] = touch;
    return 0;
}

/* us to touch one array once, on this thread, the array kept hot. */
static double ring_touch_alone(const struct ring_point *pt, double seconds)
{
    if (pt->size_kib == 0)
        return 0;
    uint32_t *a = pt->m[0].array;
    size_t words = (size_t)pt->size_kib * 1024 / sizeof *a;
    uint64_t end = bench_now_ns() + (uint64_t)(seconds * 1e9 / 10);
    uint64_t t0 = bench_now_ns(), n = 0;
    do {
        for (int k = 0; k < 16; k++, n++)
            ring_touch(a, words);
    } while (bench_now_ns() < end);
    return (double)(bench_now_ns() - t0) / (double)n / 1000.0;
}

/* ----- The token, as a semaphore between mqs tasks (policy rows) or a byte
 * through a pipe between pthreads (kernel row) ----- */

/* Wait for the token; false when it can never come. */
static bool ring_take(struct ring_member *me)
{
    unsigned char c;
    if (me->run->rt) {
        mqs_sem_wait(&me->sem);
        return true;
    }
    return read(me->fd[0], &c, 1) == 1;
}

/* Hand the token to `to`; false on failure. */
static bool ring_pass(struct ring_member *to)
{
    unsigned char c = 't';
    if (to->run->rt) {
        mqs_sem_post(&to->sem);
        return true;
    }
    return write(to->fd[1], &c, 1) == 1;
}

static void *ring_task(void *arg)
{
    struct ring_member *me = arg;
    struct ring_member *next = &me->run->m[(me->index + 1) % me->run->n];
    bool more = true;
    while (more && ring_take(me)) {
        more = ring_hold(me);
        if (!ring_pass(next))
            break;
    }
    return NULL;
}

static int ring_measure(bench_point_t *p, double *value, double *extra)
{
    struct ring_point *pt = p->ctx;
    double seconds = bench_point_seconds(p);
    struct ring_run r = {.n = pt->ntasks, .m = pt->m, .rt = p->rt,
                         .words = (size_t)pt->size_kib * 256};
    bool ok = true;
    for (int i = 0; i < r.n; i++) {
        struct ring_member *mb = &pt->m[i];
        mb->run = &r;
        mb->fd[0] = mb->fd[1] = -1;
        if (r.rt)
            mqs_sem_init(&mb->sem, 0);
        else if (ok && pipe(mb->fd) != 0) {
            mb->fd[0] = mb->fd[1] = -1;
            perror("mqs-bench ring: kernel: pipe");
            ok = false;
        }
    }
    bench_group_t g = {.rt = p->rt, .workers = p->workers,
                       .stack = BENCH_KERNEL_STACK};
    ok = ok && bench_group_start(&g, "ring", p->row->spec, r.n, ring_task,
                                 pt->m, sizeof *pt->m) == 0;
    if (!ok)
        r.done = true; /* the token goes round once and everyone exits */
    if (g.started > 0 && !ring_pass(&pt->m[0])) {
        perror("mqs-bench ring: kernel: write");
        ok = false;
        for (int i = 0; i < r.n; i++) /* end of file ends each one */
            if (pt->m[i].fd[1] >= 0) {
                close(pt->m[i].fd[1]);
                pt->m[i].fd[1] = -1;
            }
    }
    if (ok)
        bench_window(&r.started, &r.stop, seconds);
    ok = bench_group_join(&g) == 0 && ok;
    for (int i = 0; i < r.n; i++) {
        if (r.rt)
            mqs_sem_destroy(&pt->m[i].sem);
        for (int k = 0; k < 2; k++)
            if (pt->m[i].fd[k] >= 0)
                close(pt->m[i].fd[k]);
    }
    return ok ? ring_value(p, &r, ring_touch_alone(pt, seconds), value, extra)
              : -1;
}

/* ----- Row kinds ----- */

static int ring_alloc(struct ring_point *pt)
{
    size_t bytes = (size_t)pt->size_kib * 1024;
    pt->m = aligned_alloc(BENCH_CACHELINE, (size_t)pt->ntasks * sizeof *pt->m);
    if (!pt->m)
        return -1;
    memset(pt->m, 0, (size_t)pt->ntasks * sizeof *pt->m);
    for (int i = 0; i < pt->ntasks; i++) {
        pt->m[i].index = i;
        pt->m[i].array = calloc(1, bytes ? bytes : 1);
        if (!pt->m[i].array)
            return -1;
    }
    return 0;
}

/* The members, and a policy row's runtime; both kinds of row run on
 * the first --workers CPUs (one by default). */
static int ring_open(bench_point_t *p)
{
    struct ring_point *pt = p->ctx;
    p->workers = p->o->workers ? p->o->workers : 1;
    if (ring_alloc(pt))
        return -1;
    if (p->row->pseudo)
        return 0;
    if (bench_runtime_open("ring", p->row->spec, p->workers, 0, &p->rt))
        return -1;
    p->workers = mqs_runtime_workers(p->rt);
    return 0;
}

static void ring_close(bench_point_t *p)
{
    struct ring_point *pt = p->ctx;
    bench_row_close(p);
    for (int i = 0; pt->m && i < pt->ntasks; i++)
        free(pt->m[i].array);
    free(pt->m);
    pt->m = NULL;
}

static const bench_point_kind_t ring_kind = {ring_open, ring_measure,
                                             ring_close};

/* A peer reports the hop and the touching alone, in ns. */
static int ring_peer_convert(bench_point_t *p, const bench_peer_result_t *r,
                             double *value, double *extra)
{
    double hop = bench_peer_get(r, "hop_ns");
    double touch = bench_peer_get(r, "touch_ns");
    (void)p;
    *value = (hop - touch) / 1000.0;
    extra[RX_TOUCH] = touch / 1000.0;
    return isnan(*value) ? -1 : 0;
}

static const bench_peer_map_t ring_peer_map = {.convert = ring_peer_convert};

/* ----- Options and the table entry ----- */

struct ring_args {
    int size_kib;
    struct ring_point cur; /* the point being measured */
};

/* The size column holds whether the point ran or not. */
static int ring_emit(bench_point_t *p, bench_result_t *res,
                     bench_results_t *rs)
{
    res->extra[RX_SIZE] = ((struct ring_point *)p->ctx)->size_kib;
    return bench_results_add(rs, res);
}

static int ring_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct ring_args *a = sw->arg;
    a->cur = (struct ring_point){.ntasks = sw->o->tasks[i],
                                 .size_kib = a->size_kib};
    p->unit = "us";
    p->ctx = &a->cur;
    p->emit = ring_emit;
    p->workers = sw->o->workers ? sw->o->workers : 1; /* a peer's W */
    p->peer_map = &ring_peer_map;
    snprintf(p->param, sizeof p->param, "tasks=%d", a->cur.ntasks);
    bench_peer_args_add(&p->peer_args, "tasks", "%d", a->cur.ntasks);
    bench_peer_args_add(&p->peer_args, "size_kib", "%d", a->size_kib);
    return 0;
}

/* A ring needs two tasks: one would hand the token to itself. */
static int ring_prepare(bench_sweep_t *sw)
{
    const bench_opts_t *o = sw->o;
    for (int t = 0; t < o->ntasks; t++)
        if (o->tasks[t] < 2)
            return bench_usage("ring",
                               "--tasks: a ring needs at least 2 tasks, got %d",
                               o->tasks[t]);
    return 0;
}

static int ring_options(bench_sweep_t *sw, int *argc, char **argv)
{
    struct ring_args *a = sw->arg;
    const char *size_s = "0";
    const bench_xopt_t xo[] = {{"size", &size_s, &a->size_kib, 0, 1 << 20},
                               {0}};
    return bench_take_options("ring", argc, argv, xo, NULL);
}

const bench_exp_t bench_ring_exp = {
    .cli = &ring_cli,
    .arg_size = sizeof(struct ring_args),
    .title = "us per context switch",
    .extras = ring_extras,
    .nextra = RX_COUNT,
    .kind = &ring_kind,
    .options = ring_options,
    .prepare = ring_prepare,
    .setup = ring_setup,
};
