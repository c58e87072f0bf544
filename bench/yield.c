/*
 * yield.c - `mqs-bench yield`: the experiment behind the 2001 multi-queue
 * scheduler table.  N tasks loop on yield for a fixed time; the figure is
 * nanoseconds per yield, wall time x busy workers / total yields, where
 * busy = min(N, workers) because with fewer tasks than workers the rest
 * sit idle.  Three kinds of row:
 *
 *   <policy>  mqs tasks calling mqs_yield() under that policy ("mq", ...)
 *   kernel    the same loop on pthreads calling sched_yield(), unpinned
 *             (with --workers W they share a mask of the first W CPUs)
 *   floor     a bare ring of N contexts, each switching to the next with
 *             mqs__ctx_switch on one OS thread: no scheduler at all, the
 *             physical limit of a yield with N tasks (cache footprint of
 *             N stacks included).  A ring of one would be no switch at
 *             all, so tasks=1 measures a ring of two.
 *   floorclock  the floor and one mqs__clock_ns per switch, as cfs, eevdf,
 *             ule and bfs read it: the limit under exact accounting.
 *   go, fiber the same loop in a peer runtime (goroutines calling
 *             runtime.Gosched, Boost.Fiber fibers calling
 *             this_fiber::yield), one peer process per measurement
 *             (bench/peer.h); the peer reports ns per yield and the
 *             fairness of its own per-task counts.
 *
 * How one measurement runs (mq and kernel): N tasks are started; each
 * spins on yield until a start flag is set, then yields in a loop,
 * counting its yields until a stop flag.  The count is a variable in the
 * task's own stack frame, which its slot points to: the frame's line is
 * one a switch touches anyway (the saved registers and return addresses
 * are right below it), so the count adds no line to a task's turn.  A
 * counter on a line of its own (as before 2026-12-01, and as the Go peer
 * still has) was the eighth line of each task's turn under mq: with 2048
 * tasks per worker that is 1 MiB, this machine's L2, and runs at 4096
 * tasks on two workers came out at 28 or at 60-80 ns depending on how the
 * lines fell into the sets (docs/notes.md, "Cache lines per turn").  The
 * main thread (not a worker) sets start, lets every task reach the
 * counting loop, snapshots all counters, sleeps --seconds, snapshots
 * again and sets stop.  The yields counted are the differences between the
 * snapshots and the wall time is between them (each stamp taken as the
 * midpoint of its snapshot): counting only inside the window keeps out
 * the ramp-up and the stragglers that see stop late, which a plain "count
 * until stop" would fold into the figure.  The floor's ring runs on the
 * main thread and stamps its own start and end; a timer thread sets its
 * stop flag.
 *
 * Precision: one warm-up run, then at least --repeats measurements, more
 * until the Student t 95% half-width is within --ci-target of the mean or
 * the budget is spent (then "FRC", as the original tables flagged it).
 * Fairness is the classic yield tester's: per-task work min/mean, the
 * number of tasks that got none, and the normalised deviation
 * (stdev/mean); each is the worst seen over the repeats, since a policy
 * that starves a different task each run is still unfair.
 *
 * The runtime is created once per (policy, N) and tasks are spawned per
 * measurement, so spawn and exit costs stay outside the window.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "clock.h"
#include "ctx.h"
#include "expkit.h"
#include "fiber.h" /* the sanitizers' view of a switch, as the core's */

#define FLOOR_STACK (16u * 1024u)
#define SETTLE_MAX_NS 20000000u /* 20 ms to let every task reach its loop */
/* ... and then until every task has counted a yield (a round of an O(N)
 * policy over thousands of tasks can take seconds), at most this long;
 * past it the window starts anyway and zero_work_tasks shows who waits. */
#define SETTLE_ALL_MAX_NS 10000000000ull

static const char *const yield_pseudo[] = {"kernel", "floor", "floorclock",
                                           "go", "fiber",
                                           "go1",    "fiber1", NULL};

/* Fairness is the worst seen over the repeats: a policy that starves a
 * different task each run is still unfair. */
enum { X_FAIR_MIN, X_ZERO, X_NDEV, X_REPEATS, X_COUNT };
static const bench_extra_col_t yield_extras[X_COUNT] = {
    [X_FAIR_MIN] = {"fairness_min_over_mean", "min/mean", 3, BENCH_FOLD_MIN},
    [X_ZERO] = {"zero_work_tasks", "zero", 0, BENCH_FOLD_MAX},
    [X_NDEV] = {"norm_dev", "ndev", 3, BENCH_FOLD_MAX},
    [X_REPEATS] = {"repeats", NULL, 0, BENCH_FOLD_REPEATS},
};

static const bench_cli_t yield_cli = {
    .name = "yield",
    .summary = "ns per yield vs number of tasks: mqs policies, kernel "
               "sched_yield, bare context-switch floor",
    .details = BENCH_HELP_YIELD,
    .default_tasks = "1,2,4,8,16,32,64,128,256,512,1024,2048,4096",
    .default_policy = "mq,kernel,floor",
    .pseudo = yield_pseudo,
    .default_seconds = 0.2,
    .default_repeats = 5,
};

/* ----- Shared state of one data point ----- */

/* One task's slot: where its counter is (a variable in the task's stack
 * frame, written only by that task; NULL until it starts), set by the
 * task and read by the main thread.  On its own line so that no two
 * tasks' slots share one. */
struct slot {
    _Atomic(_Atomic uint64_t *) count;
    const bench_flags_t *flags;
} __attribute__((aligned(BENCH_CACHELINE)));

/* One data point: a row at one N (the driver's point's ctx; the row
 * kinds open it once per point, before the warm-up: create the runtime,
 * map the floor's stacks).  Owned by the main thread; tasks see only
 * their slot and the flags. */
struct point {
    int ntasks, busy;
    bench_flags_t *flags;
    struct slot *slots;
    /* per-task yields in the last window, and counters at its start */
    double *work;
    uint64_t *snap;
    /* policy rows (g.rt) and the kernel row: the tasks */
    bench_group_t g;
    /* floor row: one mapping holding the N stacks */
    char *stacks;
    size_t stacks_len;
};

/* ----- The measurement window (policy and kernel rows) ----- */

/* Yields a task has counted: 0 before it published its counter. */
static uint64_t slot_count(const struct slot *s)
{
    _Atomic uint64_t *c = atomic_load_explicit(&s->count, memory_order_acquire);
    return c ? atomic_load_explicit(c, memory_order_relaxed) : 0;
}

/* Snapshot the counters; returns the midpoint time of the snapshot.  At
 * the window's end, store each task's yields in the window into work. */
static uint64_t snapshot(struct point *pt, bool window_end)
{
    uint64_t a = bench_now_ns();
    for (int i = 0; i < pt->ntasks; i++) {
        uint64_t c = slot_count(&pt->slots[i]);
        if (window_end)
            pt->work[i] = (double)(c - pt->snap[i]);
        else
            pt->snap[i] = c;
    }
    return a + (bench_now_ns() - a) / 2;
}

/* The fairness of the last window as the point's extras. */
static void fairness_extras(const struct point *pt, double *extra)
{
    const double *work = pt->work;
    int n = pt->ntasks;
    double mean = bench_mean(work, (size_t)n), min = work[0];
    extra[X_ZERO] = 0;
    for (int i = 0; i < n; i++) {
        min = work[i] < min ? work[i] : min;
        extra[X_ZERO] += work[i] == 0;
    }
    extra[X_FAIR_MIN] = mean > 0 ? min / mean : 0;
    extra[X_NDEV] = n > 1 && mean > 0 ? bench_stdev(work, (size_t)n) / mean : 0;
}

/* The slots, flags and counts of a point (every row kind but peers). */
static int point_alloc(struct point *pt)
{
    size_t n = (size_t)pt->ntasks;
    pt->flags = aligned_alloc(BENCH_CACHELINE, sizeof *pt->flags);
    pt->slots = aligned_alloc(BENCH_CACHELINE, n * sizeof *pt->slots);
    pt->work = calloc(n, sizeof *pt->work);
    pt->snap = calloc(n, sizeof *pt->snap);
    return pt->flags && pt->slots && pt->work && pt->snap ? 0 : -1;
}

static void point_free(struct point *pt)
{
    free(pt->flags);
    free(pt->slots);
    free(pt->work);
    free(pt->snap);
}

static void reset_counters(struct point *pt)
{
    atomic_store(&pt->flags->start, 0);
    atomic_store(&pt->flags->stop, 0);
    for (int i = 0; i < pt->ntasks; i++) {
        atomic_store_explicit(&pt->slots[i].count, NULL, memory_order_relaxed);
        pt->slots[i].flags = pt->flags;
    }
}

static bool all_counted(const struct point *pt)
{
    for (int i = 0; i < pt->ntasks; i++)
        if (slot_count(&pt->slots[i]) == 0)
            return false;
    return true;
}

/* Everything but spawning and joining: set start, settle, count yields
 * over `seconds`, set stop.  Returns ns per yield through *ns. */
static int run_window(bench_point_t *p, double *ns, double *extra)
{
    struct point *pt = p->ctx;
    double seconds = bench_point_seconds(p);
    uint64_t win = (uint64_t)(seconds * 1e9);
    atomic_store(&pt->flags->start, 1);
    bench_sleep_ns(win / 10 < SETTLE_MAX_NS ? win / 10 : SETTLE_MAX_NS);
    for (uint64_t t = bench_now_ns(), waited = 0;
         !all_counted(pt) && waited < SETTLE_ALL_MAX_NS;
         waited = bench_now_ns() - t)
        bench_sleep_ns(1000000);
    uint64_t t0 = snapshot(pt, false);
    bench_sleep_ns(win);
    uint64_t t1 = snapshot(pt, true);
    atomic_store(&pt->flags->stop, 1);
    double total = 0;
    for (int i = 0; i < pt->ntasks; i++)
        total += pt->work[i];
    if (total <= 0) {
        fprintf(stderr, "mqs-bench yield: %s %s: no yields counted\n",
                p->row->spec, p->param);
        return -1;
    }
    *ns = (double)(t1 - t0) * pt->busy / total;
    fairness_extras(pt, extra);
    return 0;
}

/* ----- Policy and kernel rows: mqs tasks, or pthreads and sched_yield ----- */

/* A task's life: yield until start, then yield and count until stop.
 * Inlined into each caller, so the yield is a direct call. */
static inline __attribute__((always_inline)) void
count_yields(struct slot *s, int (*yield_fn)(void))
{
    const bench_flags_t *f = s->flags;
    _Atomic uint64_t count = 0;
    atomic_store_explicit(&s->count, &count, memory_order_release);
    while (!bench_flag(&f->start))
        yield_fn();
    while (!bench_flag(&f->stop)) {
        yield_fn();
        bench_count(&count);
    }
}

static void *mq_task(void *arg)
{
    count_yields(arg, mqs_yield);
    return NULL;
}

static void *kernel_thread(void *arg)
{
    count_yields(arg, sched_yield);
    return NULL;
}

static int tasks_open(bench_point_t *p)
{
    struct point *pt = p->ctx;
    if (point_alloc(pt) || bench_row_open(p))
        return -1;
    pt->g = (bench_group_t){
        .rt = p->rt, .workers = p->o->workers, .stack = BENCH_KERNEL_STACK};
    pt->busy = pt->ntasks < p->workers ? pt->ntasks : p->workers;
    return 0;
}

/* Start the tasks (or threads), count over the window, join them. */
static int tasks_measure(bench_point_t *p, double *ns, double *extra)
{
    struct point *pt = p->ctx;
    reset_counters(pt);
    int rc = bench_group_start(&pt->g, "yield", p->row->spec, pt->ntasks,
                               pt->g.rt ? mq_task : kernel_thread, pt->slots,
                               sizeof *pt->slots);
    if (rc) { /* release those started */
        atomic_store(&pt->flags->stop, 1);
        atomic_store(&pt->flags->start, 1);
    } else {
        rc = run_window(p, ns, extra);
    }
    return bench_group_join(&pt->g) ? -1 : rc;
}

static void tasks_close(bench_point_t *p)
{
    struct point *pt = p->ctx;
    bench_row_close(p);
    point_free(pt);
}

static const bench_point_kind_t kind_tasks = {tasks_open, tasks_measure,
                                             tasks_close};

/* ----- floor row: a bare ring of contexts ----- */

/* A context of the ring, or the main thread's: its saved stack pointer
 * and what the sanitizers need to follow a switch to it (its stack for
 * ASan, a fiber handle for TSan). */
struct fiber {
    void *sp;
    const void *stack;
    size_t stack_size;
    void *tsan;
};

struct ring;

struct ring_ctx {
    struct fiber f;
    uint64_t count; /* switches it made */
    uint64_t sink;  /* floorclock: the clock reads, summed (kept) */
    struct ring_ctx *next;
    struct ring *ring;
} __attribute__((aligned(BENCH_CACHELINE)));

struct ring {
    _Atomic int stop;    /* set by the timer thread */
    _Atomic int started; /* set by the first context as the ring starts */
    struct fiber main;
    uint64_t t0, t1;
    struct ring_ctx *ctx;
    int n;
    double seconds;
    mqs__clock_t clock; /* floorclock; zero (uncalibrated) for floor */
};

/* Switch from one fiber to another, telling the sanitizers in their
 * builds (a bare mqs__ctx_switch otherwise).  dying: `from` will never be
 * resumed. */
static void ring_switch(struct fiber *from, struct fiber *to, bool dying)
{
    void *fake = NULL;
    mqs__switch_enter(dying ? NULL : &fake, (void *)to->stack, to->stack_size,
                      to->tsan);
    mqs__ctx_switch(&from->sp, to->sp, NULL);
    mqs__switch_leave(fake);
}

/* A context's life; `clock` is a constant at each call (ring_entry), so
 * the floor's loop is the bare one. */
static inline void ring_run(struct ring_ctx *c, bool clock)
{
    struct ring *r = c->ring;
    mqs__switch_leave(NULL);
    if (c == r->ctx) {
        r->t0 = bench_now_ns();
        atomic_store(&r->started, 1);
    }
    while (!bench_flag(&r->stop)) {
        c->count++;
        if (clock)
            c->sink += mqs__clock_ns(&r->clock);
        ring_switch(&c->f, &c->next->f, false);
    }
    r->t1 = bench_now_ns();
    ring_switch(&c->f, &r->main, true);
}

/* The abort is here, not in ring_run: ASan's no-return hook before a
 * call that cannot return fails its check on a ring's own stack. */
static void ring_entry(void *arg, void *pass)
{
    struct ring_ctx *c = arg;
    (void)pass;
    if (c->ring->clock.base_ns) /* floorclock calibrated it */
        ring_run(c, true);
    else
        ring_run(c, false);
    abort(); /* never resumed: the next measurement remakes every context */
}

/* The period starts with the ring (bench_window): on a loaded host the
 * thread that runs it may get its CPU later than this one, and a ring
 * stopped before its first switch measured nothing (a failed point). */
static void *ring_timer(void *arg)
{
    struct ring *r = arg;
    bench_window(&r->started, &r->stop, r->seconds);
    return NULL;
}

static int floor_contexts(const struct point *pt)
{
    return pt->ntasks < 2 ? 2 : pt->ntasks;
}

static int floor_open(bench_point_t *p)
{
    struct point *pt = p->ctx;
    p->workers = pt->busy = 1;
    if (point_alloc(pt))
        return -1;
    pt->stacks_len = (size_t)floor_contexts(pt) * FLOOR_STACK;
    pt->stacks = mmap(NULL, pt->stacks_len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pt->stacks == MAP_FAILED) {
        pt->stacks = NULL;
        perror("mqs-bench yield: floor: mmap");
        return -1;
    }
    return 0;
}

/* Build the ring on fresh stacks, tops staggered by (i % 64) * 64 bytes
 * as the runtime staggers task stacks, so that N contexts do not all
 * collide in the same cache sets. */
static void ring_make(struct point *pt, struct ring *r)
{
    for (int i = 0; i < r->n; i++) {
        struct ring_ctx *c = &r->ctx[i];
        char *lo = pt->stacks + (size_t)i * FLOOR_STACK;
        c->f = (struct fiber){.stack = lo, .stack_size = FLOOR_STACK};
        c->count = 0;
        c->ring = r;
        c->next = &r->ctx[(i + 1) % r->n];
        c->sink = 0;
        c->f.sp = mqs__ctx_make(lo + FLOOR_STACK - (size_t)(i % 64) * 64,
                                ring_entry, c);
        c->f.tsan = mqs__fiber_create();
    }
}

/* The main thread's side, and (TSan) the fibers' release. */
static void ring_main(struct ring *r)
{
    r->main.tsan = mqs__fiber_current();
#if defined(MQS_ASAN)
    pthread_attr_t a;
    void *lo = NULL;
    size_t sz = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &lo, &sz);
        pthread_attr_destroy(&a);
    }
    r->main.stack = lo;
    r->main.stack_size = sz;
#endif
}

static void ring_unmake(struct ring *r)
{
    for (int i = 0; i < r->n; i++)
        mqs__fiber_destroy(r->ctx[i].f.tsan);
    free(r->ctx);
}

/* Run the ring for `seconds`; ns per switch through *ns. */
static int floor_measure(bench_point_t *p, double *ns, double *extra)
{
    struct point *pt = p->ctx;
    struct ring r = {.n = floor_contexts(pt),
                     .seconds = bench_point_seconds(p)};
    r.ctx = aligned_alloc(BENCH_CACHELINE, (size_t)r.n * sizeof *r.ctx);
    if (!r.ctx)
        return -1;
    if (strcmp(p->row->spec, "floorclock") == 0)
        mqs__clock_init(&r.clock);
    ring_main(&r);
    ring_make(pt, &r);
    pthread_t timer;
    int rc = pthread_create(&timer, NULL, ring_timer, &r);
    if (rc == 0) {
        ring_switch(&r.main, &r.ctx[0].f, false);
        pthread_join(timer, NULL);
        double total = 0;
        for (int i = 0; i < r.n; i++) {
            pt->work[i % pt->ntasks] = (double)r.ctx[i].count;
            total += (double)r.ctx[i].count;
        }
        *ns = total > 0 ? (double)(r.t1 - r.t0) / total : NAN;
        rc = total > 0 ? 0 : -1;
        fairness_extras(pt, extra);
    }
    ring_unmake(&r);
    return rc;
}

static void floor_close(bench_point_t *p)
{
    struct point *pt = p->ctx;
    if (pt->stacks) {
#if defined(MQS_ASAN)
        __asan_unpoison_memory_region(pt->stacks, pt->stacks_len);
#endif
        munmap(pt->stacks, pt->stacks_len);
    }
    pt->stacks = NULL;
    point_free(pt);
}

static const bench_point_kind_t kind_floor = {floor_open, floor_measure,
                                              floor_close};

/* ----- go and fiber rows, and the table entry ----- */

/* A peer reports ns per yield and the fairness of its own counts. */
static const bench_peer_map_t yield_peer_map = {
    .value_key = "ns_per_yield",
    .extra_key = {[X_FAIR_MIN] = "fairness_min_over_mean",
                  [X_ZERO] = "zero_work_tasks",
                  [X_NDEV] = "norm_dev"},
};

static int yield_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct point *pt = sw->arg;
    *pt = (struct point){.ntasks = sw->o->tasks[i]};
    snprintf(p->param, sizeof p->param, "tasks=%d", pt->ntasks);
    p->unit = "ns";
    p->ctx = pt;
    p->peer_map = &yield_peer_map;
    bench_peer_args_add(&p->peer_args, "tasks", "%d", pt->ntasks);
    return 0;
}

static const bench_row_kind_t yield_kinds[] = {{"floor", &kind_floor},
                                               {"floorclock", &kind_floor},
                                               {NULL, NULL}};

const bench_exp_t bench_yield_exp = {
    .cli = &yield_cli,
    .arg_size = sizeof(struct point),
    .title = "ns per yield",
    .extras = yield_extras,
    .nextra = X_COUNT,
    .kind = &kind_tasks,
    .kinds = yield_kinds,
    .setup = yield_setup,
};
