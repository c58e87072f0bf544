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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expkit.h"

#define RING_CACHELINE 64
#define RING_KERNEL_STACK (64u * 1024u)

static const char *const ring_pseudo[] = {"kernel", "go", "fiber", NULL};

enum { RX_TOUCH, RX_SIZE, RX_REPEATS, RX_COUNT };
static const bench_extra_col_t ring_extras[RX_COUNT] = {
    [RX_TOUCH] = {"touch_us", "touch", 3},
    [RX_SIZE] = {"size_kib", NULL, 0},
    [RX_REPEATS] = {"repeats", NULL, 0},
};

static const bench_cli_t ring_cli = {
    .name = "ring",
    .summary = "lmbench lat_ctx: us per context switch round a ring of N "
               "tasks, each touching\n--size KiB at every hop",
    .details =
        "experiment options:\n"
        "  --size K            KiB each task touches per hop (default 0)\n\n"
        "us/switch = time per hop - time to touch K KiB alone (in cache, "
        "as lmbench).\n"
        "rows:  a policy  N mqs tasks handing a semaphore round (one "
        "worker unless\n"
        "                 --workers)\n"
        "       kernel    N pthreads handing a byte round through pipes "
        "(one CPU unless\n"
        "                 --workers)\n"
        "       go, fiber the peer programs\n"
        "extra column: touch = the subtracted touching time (us).\n\n"
        "example: mqs-bench ring --policy mq,kernel --tasks 2,16 --size "
        "16\n",
    .default_tasks = "2,4,8,16,64",
    .default_policy = "mq,kernel,go,fiber",
    .pseudo = ring_pseudo,
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
    mqs_task_t *task;
    pthread_t thread;
} __attribute__((aligned(RING_CACHELINE)));

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
};

struct ring_point {
    const bench_opts_t *o;
    const char *row;
    int ntasks, workers, size_kib;
    mqs_runtime_t *rt;
    struct ring_member *m;
    double touch_sum; /* touch_us of each sample, summed */
    int touch_n;
    char param[32];
    char note[96];
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
        if (atomic_load_explicit(&r->stop, memory_order_relaxed)) {
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

/* The window: from task 0's first hold (a loaded host may take a while
 * to run it), for `seconds`. */
static void ring_window(struct ring_run *r, double seconds)
{
    while (!atomic_load_explicit(&r->started, memory_order_relaxed))
        bench_sleep_ns(50000);
    bench_sleep_ns((uint64_t)(seconds * 1e9));
    atomic_store(&r->stop, 1);
}

/* us per switch from the run and the touching time. */
static int ring_value(struct ring_point *pt, struct ring_run *r, double touch,
                      double *value)
{
    if (r->laps < 1 || r->t1 <= r->t0) {
        fprintf(stderr, "mqs-bench ring: %s %s: no laps counted\n", pt->row,
                pt->param);
        return -1;
    }
    /* t0 and t1 are both stamped by task 0 holding the token: laps
     * whole laps of n hops lie between. */
    double hops = (double)r->laps * r->n;
    *value = (double)(r->t1 - r->t0) / hops / 1000.0 - touch;
    pt->touch_sum += touch;
    pt->touch_n++;
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

/* ------------------------------------------------------------------ */
/* Policy rows: semaphores between mqs tasks                           */
/* ------------------------------------------------------------------ */

static void *ring_mq_task(void *arg)
{
    struct ring_member *me = arg;
    struct ring_member *next = &me->run->m[(me->index + 1) % me->run->n];
    bool more = true;
    while (more) {
        mqs_sem_wait(&me->sem);
        more = ring_hold(me);
        mqs_sem_post(&next->sem);
    }
    return NULL;
}

static int ring_mq_sample(void *arg, double seconds, double *value)
{
    struct ring_point *pt = arg;
    struct ring_run r = {.n = pt->ntasks, .m = pt->m,
                         .words = (size_t)pt->size_kib * 256};
    for (int i = 0; i < r.n; i++) {
        pt->m[i].run = &r;
        mqs_sem_init(&pt->m[i].sem, 0);
    }
    int spawned = 0, rc = 0;
    for (; spawned < r.n; spawned++) {
        rc = mqs_spawn(pt->rt, &pt->m[spawned].task, NULL, ring_mq_task,
                       &pt->m[spawned]);
        if (rc)
            break;
    }
    if (rc) {
        fprintf(stderr, "mqs-bench ring: %s: mqs_spawn: %s\n", pt->row,
                mqs_strerror(rc));
        r.done = true; /* the token goes round once and everyone exits */
    }
    mqs_sem_post(&pt->m[0].sem);
    if (!rc)
        ring_window(&r, seconds);
    for (int i = 0; i < spawned; i++)
        mqs_join(pt->m[i].task, NULL);
    for (int i = 0; i < r.n; i++)
        mqs_sem_destroy(&pt->m[i].sem);
    return rc ? -1 : ring_value(pt, &r, ring_touch_alone(pt, seconds), value);
}

static int ring_mq_open(struct ring_point *pt)
{
    int w = pt->o->workers ? pt->o->workers : 1;
    if (bench_runtime_open("ring", pt->row, w, 0, &pt->rt))
        return -1;
    pt->workers = mqs_runtime_workers(pt->rt);
    return 0;
}

/* ------------------------------------------------------------------ */
/* kernel row: pthreads and pipes                                      */
/* ------------------------------------------------------------------ */

static void *ring_k_thread(void *arg)
{
    struct ring_member *me = arg;
    struct ring_member *next = &me->run->m[(me->index + 1) % me->run->n];
    bool more = true;
    unsigned char c;
    while (more && read(me->fd[0], &c, 1) == 1) {
        more = ring_hold(me);
        if (write(next->fd[1], &c, 1) != 1)
            break;
    }
    return NULL;
}

static void ring_k_close_fds(struct ring_point *pt)
{
    for (int i = 0; i < pt->ntasks; i++)
        for (int k = 0; k < 2; k++)
            if (pt->m[i].fd[k] >= 0) {
                close(pt->m[i].fd[k]);
                pt->m[i].fd[k] = -1;
            }
}

/* Start the threads on the first `workers` CPUs; returns how many. */
static int ring_k_start(struct ring_point *pt, struct ring_run *r)
{
    int cpus[MQS_MAX_WORKERS];
    cpu_set_t set;
    bench_cpuset_of(cpus, bench_cpu_list(pt->workers, cpus, MQS_MAX_WORKERS),
                    &set);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, RING_KERNEL_STACK);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    int started = 0;
    for (; started < r->n; started++) {
        struct ring_member *mb = &pt->m[started];
        mb->run = r;
        if (pipe(mb->fd) != 0 ||
            pthread_create(&mb->thread, &attr, ring_k_thread, mb) != 0)
            break;
    }
    pthread_attr_destroy(&attr);
    return started;
}

/* End the threads that wait for a token that will never come. */
static void ring_k_abort(struct ring_point *pt, int started)
{
    perror("mqs-bench ring: kernel: pipe, pthread_create or write");
    for (int i = 0; i < started; i++) { /* end of file ends each one */
        close(pt->m[i].fd[1]);
        pt->m[i].fd[1] = -1;
    }
}

static int ring_k_sample(void *arg, double seconds, double *value)
{
    struct ring_point *pt = arg;
    struct ring_run r = {.n = pt->ntasks, .m = pt->m,
                         .words = (size_t)pt->size_kib * 256};
    for (int i = 0; i < r.n; i++)
        pt->m[i].fd[0] = pt->m[i].fd[1] = -1;
    int started = ring_k_start(pt, &r);
    unsigned char c = 't';
    bool ok = started == r.n && write(pt->m[0].fd[1], &c, 1) == 1;
    if (ok)
        ring_window(&r, seconds);
    else
        ring_k_abort(pt, started);
    for (int i = 0; i < started; i++)
        pthread_join(pt->m[i].thread, NULL);
    ring_k_close_fds(pt);
    return ok ? ring_value(pt, &r, ring_touch_alone(pt, seconds), value) : -1;
}

/* ------------------------------------------------------------------ */
/* Peer rows                                                           */
/* ------------------------------------------------------------------ */

static int ring_peer_sample(void *arg, double seconds, double *value)
{
    struct ring_point *pt = arg;
    char size[32];
    snprintf(size, sizeof size, "size_kib=%d", pt->size_kib);
    const char *args[] = {pt->param, size, NULL};
    bench_peer_result_t res;
    int rc = bench_peer_sample(pt->row, "ring", args, pt->workers, seconds,
                               &res, pt->note, sizeof pt->note);
    if (rc)
        return rc;
    double hop = bench_peer_get(&res, "hop_ns");
    double touch = bench_peer_get(&res, "touch_ns");
    if (isnan(hop) || isnan(touch)) {
        snprintf(pt->note, sizeof pt->note, "failed: key missing");
        return BENCH_PEER_FAILED;
    }
    *value = (hop - touch) / 1000.0;
    pt->touch_sum += touch / 1000.0;
    pt->touch_n++;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Driver                                                              */
/* ------------------------------------------------------------------ */

static int ring_alloc(struct ring_point *pt)
{
    size_t bytes = (size_t)pt->size_kib * 1024;
    pt->m = aligned_alloc(RING_CACHELINE, (size_t)pt->ntasks * sizeof *pt->m);
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

static void ring_free(struct ring_point *pt)
{
    for (int i = 0; pt->m && i < pt->ntasks; i++)
        free(pt->m[i].array);
    free(pt->m);
    pt->m = NULL;
}

static int ring_point_run(struct ring_point *pt, bench_progress_t *pg,
                          bench_result_t *res)
{
    bench_estimate_t est;
    bool peer = bench_peer_is(pt->row), kernel = !strcmp(pt->row, "kernel");
    bench_sample_fn fn = peer     ? ring_peer_sample
                         : kernel ? ring_k_sample
                                  : ring_mq_sample;
    pt->workers = pt->o->workers ? pt->o->workers : 1;
    int rc = ring_alloc(pt);
    if (rc == 0 && !peer && !kernel)
        rc = ring_mq_open(pt);
    if (rc == 0)
        rc = bench_point_estimate(pt->o, pg, pt->row, pt->param, !peer, fn,
                                  pt, &est);
    bench_runtime_close("ring", pt->rt);
    pt->rt = NULL;
    ring_free(pt);
    *res = bench_result_of(pt->row, pt->param, pt->workers, "us", rc, &est,
                           pt->note[0] ? pt->note : "failed");
    res->extra[RX_TOUCH] =
        rc == 0 && pt->touch_n ? pt->touch_sum / pt->touch_n : NAN;
    res->extra[RX_SIZE] = pt->size_kib;
    res->extra[RX_REPEATS] = rc ? NAN : est.n;
    return rc == BENCH_PEER_MISSING || rc == BENCH_PEER_UNSUPPORTED ? 0 : rc;
}

static int ring_run_all(const bench_opts_t *o, int size_kib,
                        bench_results_t *rs)
{
    bench_progress_t pg;
    bench_progress_init(&pg, o->nrows * o->ntasks);
    int failed = 0;
    for (int r = 0; r < o->nrows; r++) {
        for (int t = 0; t < o->ntasks; t++) {
            struct ring_point pt = {.o = o, .row = o->rows[r].spec,
                                    .ntasks = o->tasks[t],
                                    .size_kib = size_kib};
            snprintf(pt.param, sizeof pt.param, "tasks=%d", o->tasks[t]);
            pg.index++;
            bench_result_t res;
            failed |= ring_point_run(&pt, &pg, &res) != 0;
            if (bench_results_add(rs, &res) != 0)
                return -1;
        }
    }
    bench_progress_done(&pg);
    return failed ? -1 : 0;
}

/* A ring needs two tasks: one would hand the token to itself. */
static int ring_check_tasks(const bench_opts_t *o)
{
    for (int t = 0; t < o->ntasks; t++)
        if (o->tasks[t] < 2) {
            fprintf(stderr, "mqs-bench ring: --tasks: a ring needs at least "
                            "2 tasks, got %d\n", o->tasks[t]);
            return BENCH_EXIT_USAGE;
        }
    return 0;
}

int bench_ring_main(int argc, char **argv)
{
    const char *size_s = "0";
    const bench_xopt_t xo[] = {{"size", &size_s}, {NULL, NULL}};
    int size_kib = 0;
    int rc = bench_take_options("ring", &argc, argv, xo, NULL);
    if (rc == 0)
        rc = bench_parse_int("ring", "--size", size_s, 0, 1 << 20, &size_kib);
    bench_opts_t o;
    if (rc == 0)
        rc = bench_parse_options(&ring_cli, argc, argv, &o);
    if (rc == BENCH_HELP_SHOWN)
        return 0;
    if (rc)
        return rc;
    if ((rc = ring_check_tasks(&o)) != 0) {
        bench_opts_free(&o);
        return rc;
    }
    bench_results_t rs;
    bench_results_init(&rs, "ring", "us per context switch", ring_extras,
                       RX_COUNT);
    int failed = ring_run_all(&o, size_kib, &rs);
    int out = bench_output(&rs, &o);
    bench_results_free(&rs);
    bench_opts_free(&o);
    return failed || out ? 1 : 0;
}
