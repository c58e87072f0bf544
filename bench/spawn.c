/*
 * spawn.c - `mqs-bench spawn`: the skynet benchmark.  A tree of tasks
 * whose T leaves (--tasks, default 10^6) are numbered 0..T-1: every inner
 * task spawns --fanout F children (default 10), each owning a 1/F slice
 * of its parent's leaf range, joins them in order and returns the sum of
 * what they returned; a leaf returns its number.  The root's sum must be
 * T(T-1)/2: a wrong sum, or a spawn that fails, is a failed measurement
 * (exit 1), never a figure.  T must be a power of F, as in skynet, so
 * every slice divides evenly.
 *
 *   value   ns per task = wall time of the whole tree (root spawned to
 *           root joined) / every task of the tree, inner ones included:
 *           (F T - 1) / (F - 1) tasks, 1,111,111 for 10^6 leaves.
 *   extra   peak_rss_kib: the peak resident set of the process that ran
 *           the tree, in KiB (getrusage(RUSAGE_SELF).ru_maxrss read by
 *           that process after the tree; it includes mqs-bench's own
 *           couple of MiB).
 *
 * Every measurement runs in a forked child process that creates its
 * runtime (or threads), runs one tree, reports through a pipe and exits,
 * so the RSS is that tree's own and no stack or page a previous tree
 * left behind is reused: each measurement starts cold, as one run of the
 * skynet program does.  The fork happens with no runtime alive in the
 * parent (rows run one at a time), so the child is single-threaded.
 *
 * Memory: a tree of 10^6 leaves has 1.1 M tasks, and how many are alive
 * at once depends on the order the policy runs them (depth first: about
 * depth x F; breadth first: nearly all).  Stacks are 16 KiB, the
 * smallest mqs accepts, set as the runtime's DEFAULT stack size rather
 * than a per-task attribute because only default-size stacks go back to
 * a worker's stack cache (and are slots of shared slabs, src/stack.c).
 * Stacks were one mapping each with a guard page (two VMAs), so
 * vm.max_map_count (65530 by default) capped the live tasks near 32 K
 * whatever the RAM; a slab of up to 1,024 slots is one mapping now.
 *
 * Live mode (--live N): N tasks alive at once instead of a tree.  A
 * controller task spawns N detached tasks, each of which blocks on a
 * gate (a wait group shared by SPAWN_LIVE_PER_GATE tasks, 10^6: a wait
 * queue's insertion walks its distinct priority levels, not its
 * waiters, so one gate holds them all);
 * once all have arrived it reads the peak RSS and the number of
 * mappings, opens the gates and waits for every task to end.
 *
 *   value   ns per spawn = the spawn loop's wall time / N (each spawn
 *           may run its child until it blocks: child first).
 *   extra   rss_bytes_per_task: (peak RSS with all N alive - peak RSS
 *           before the first spawn) / N, from ru_maxrss; page tables
 *           per task the same way (VmPTE, /proc/self/status: RSS does
 *           not count them); mappings: lines
 *           of /proc/self/maps with all N alive (vm.max_map_count bounds
 *           it, 65530 by default).
 *
 * Kernel row: the same tree on pthreads (64 KiB stacks), but only up to
 * --kernel-tasks leaves (default 10^4, 11,111 threads): 1.1 M threads do
 * not fit (threads-max, the map count).  Larger sizes show as "not run"
 * with the cap in the note, so the table compares mqs with the kernel at
 * 10^4 and stands alone at 10^6.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expkit.h"
#include "internal.h" /* mqs__count_mappings */

#define SPAWN_MAX_FANOUT 64
#define SPAWN_STACK (16u * 1024u)

enum { SPAWN_X_RSS, SPAWN_X_COUNT };
static const bench_extra_col_t spawn_extras[SPAWN_X_COUNT] = {
    [SPAWN_X_RSS] = {"peak_rss_kib", "RSS KiB", 0, BENCH_FOLD_MEAN},
};
enum { SPAWN_L_RSS, SPAWN_L_PTE, SPAWN_L_MAPS, SPAWN_L_COUNT };
static const bench_extra_col_t spawn_live_extras[SPAWN_L_COUNT] = {
    [SPAWN_L_RSS] = {"rss_bytes_per_task", "RSS B/task", 0, BENCH_FOLD_MEAN},
    [SPAWN_L_PTE] = {"page_table_bytes_per_task", "PTE B/task", 0,
                     BENCH_FOLD_MEAN},
    [SPAWN_L_MAPS] = {"mappings", "mappings", 0, BENCH_FOLD_MEAN},
};
#define SPAWN_LIVE_PER_GATE 1000000

static const bench_cli_t spawn_cli = {
    .name = "spawn",
    .summary = "skynet: a tree of spawned tasks summing its leaves; ns per "
               "task and peak RSS",
    .details = BENCH_HELP_SPAWN,
    .default_tasks = "10000,1000000",
    BENCH_PEER_ROWS,
    .default_seconds = 1,
    .default_repeats = 5,
};

/* ----- The tree (pure arithmetic, tested) ----- */

/* Is t a power of f (f^0 = 1 included)? */
static bool spawn_is_power(long t, int f)
{
    if (t < 1 || f < 2)
        return false;
    while (t % f == 0)
        t /= f;
    return t == 1;
}

/* Every task of a tree with t leaves: t + t/f + ... + 1 (then 1/f = 0). */
static double spawn_tree_tasks(long t, int f)
{
    double n = 0;
    for (long level = t; level >= 1; level /= f)
        n += (double)level;
    return n;
}

static uint64_t spawn_expected_sum(uint64_t t)
{
    return t * (t - 1) / 2;
}

/* ----- One tree, in the measuring child ----- */

struct spawn_tree {
    int fanout;
    bool kernel; /* the nodes are pthreads */
    _Atomic int err; /* first spawn error (0 = none) */
};

struct spawn_node {
    struct spawn_tree *tree;
    uint64_t num, size, sum;
};

static void spawn_fail(struct spawn_tree *tree, int err)
{
    int zero = 0;
    atomic_compare_exchange_strong(&tree->err, &zero, err);
}

/* A child whose spawn failed is left out of the sum, so the root's sum
 * comes out wrong as well as the error being recorded.  The children are
 * mqs tasks on this task's runtime, or (kernel row) pthreads. */
static void *spawn_node(void *arg)
{
    struct spawn_node *n = arg;
    if (n->size == 1) {
        n->sum = n->num;
        return NULL;
    }
    struct spawn_node kids[SPAWN_MAX_FANOUT];
    bench_task_t t[SPAWN_MAX_FANOUT];
    bool kernel = n->tree->kernel;
    pthread_attr_t attr;
    if (kernel) {
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, BENCH_KERNEL_STACK);
    }
    int f = n->tree->fanout;
    uint64_t sub = n->size / (uint64_t)f;
    for (int i = 0; i < f; i++) {
        kids[i] =
            (struct spawn_node){n->tree, n->num + (uint64_t)i * sub, sub, 0};
        int rc = bench_task_start(&t[i], kernel ? NULL : mqs_runtime_self(),
                                  NULL, &attr, spawn_node, &kids[i]);
        if (rc)
            spawn_fail(n->tree, !kernel        ? rc
                                : rc == EAGAIN ? MQS_ENOMEM
                                               : MQS_ESYS);
    }
    if (kernel)
        pthread_attr_destroy(&attr);
    n->sum = 0;
    for (int i = 0; i < f; i++)
        if (t[i].started && bench_task_join(&t[i]) == 0)
            n->sum += kids[i].sum;
    return NULL;
}

/* What the child sends back. */
struct spawn_out {
    int rc;  /* 0, or -1 with err / a wrong sum */
    int err; /* an MQS_E* code from a spawn, 0 if none */
    double ns;
    uint64_t sum;
    long rss_kib;
    /* live mode: tasks spawned, peak RSS growth while all were alive,
     * mappings then */
    long spawned, rss_grown_kib, pte_grown_kib, maps;
};

struct spawn_point {
    long leaves;
    int fanout, kernel_max;
    long live; /* 0: the tree; else tasks alive at once */
};

/* Run fn(arg) as the one task of a fresh runtime of p's row, with 16 KiB
 * default stacks, and destroy it: 0, or -1 when the runtime failed (said
 * on stderr).  A spawn or join error goes into *err, the time from spawn
 * to join into *ns. */
static int spawn_in_runtime(bench_point_t *p, void *(*fn)(void *), void *arg,
                            int *err, uint64_t *ns)
{
    mqs_runtime_t *rt;
    if (bench_runtime_open("spawn", p->row->spec, p->o->workers, SPAWN_STACK,
                           &rt))
        return -1;
    mqs_task_t *t;
    uint64_t t0 = bench_now_ns();
    *err = mqs_spawn(rt, &t, NULL, fn, arg);
    if (*err == 0)
        *err = mqs_join(t, NULL);
    *ns = bench_now_ns() - t0;
    return bench_runtime_close("spawn", rt);
}

static int spawn_run_kernel(bench_point_t *p, struct spawn_node *root,
                            uint64_t *ns)
{
    cpu_set_t set;
    bench_kernel_cpus(p->o->workers, &set);
    /* The child process is ours alone: its mask is the row's mask, and
     * every thread it creates inherits it. */
    sched_setaffinity(0, sizeof set, &set);
    uint64_t t0 = bench_now_ns();
    spawn_node(root);
    *ns = bench_now_ns() - t0;
    return 0;
}

/* ----- Live mode, in the measuring child ----- */

struct spawn_live {
    long n, spawned;
    mqs_waitgroup_t *gates, done;
    atomic_long arrived;
    int err;
    uint64_t ns;
    long rss_before_kib, rss_alive_kib, pte_before_kib, pte_alive_kib, maps;
};

/* The child's one run (its tasks find it here). */
static struct spawn_live *spawn_live_cur;

static long spawn_peak_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* The page tables' size (VmPTE), in KiB; -1 if unknown. */
static long spawn_pte_kib(void)
{
    char v[64];
    if (!bench_proc_field("/proc/self/status", "VmPTE", v, sizeof v))
        return -1;
    return strtol(v, NULL, 10);
}

static void *spawn_live_task(void *gate)
{
    struct spawn_live *l = spawn_live_cur;
    atomic_fetch_add(&l->arrived, 1);
    mqs_waitgroup_wait(gate);
    mqs_waitgroup_done(&l->done);
    return NULL;
}

/* Spawn them all, wait until every one is in (none ends before its gate
 * opens), read RSS and mappings, open the gates, wait for the ends. */
static void *spawn_live_main(void *arg)
{
    struct spawn_live *l = arg;
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.detached = true;
    l->rss_before_kib = spawn_peak_rss_kib();
    l->pte_before_kib = spawn_pte_kib();
    uint64_t t0 = bench_now_ns();
    for (; l->spawned < l->n && !l->err; l->spawned++)
        l->err = mqs_spawn(mqs_runtime_self(), NULL, &a, spawn_live_task,
                           &l->gates[l->spawned / SPAWN_LIVE_PER_GATE]);
    l->spawned -= l->err != 0;
    l->ns = bench_now_ns() - t0;
    while (atomic_load(&l->arrived) < l->spawned)
        mqs_yield();
    l->rss_alive_kib = spawn_peak_rss_kib();
    l->pte_alive_kib = spawn_pte_kib();
    l->maps = mqs__count_mappings();
    mqs_waitgroup_add(&l->done, l->spawned - l->n);
    for (long g = 0; g <= (l->n - 1) / SPAWN_LIVE_PER_GATE; g++)
        mqs_waitgroup_done(&l->gates[g]);
    mqs_waitgroup_wait(&l->done);
    return NULL;
}

static int spawn_run_live(bench_point_t *p, long n, struct spawn_out *out)
{
    long ngates = (n - 1) / SPAWN_LIVE_PER_GATE + 1;
    struct spawn_live l = {.n = n};
    l.gates = calloc((size_t)ngates, sizeof *l.gates);
    if (!l.gates)
        return -1;
    for (long g = 0; g < ngates; g++) {
        mqs_waitgroup_init(&l.gates[g]);
        mqs_waitgroup_add(&l.gates[g], 1);
    }
    mqs_waitgroup_init(&l.done);
    mqs_waitgroup_add(&l.done, n);
    spawn_live_cur = &l;
    int err = 0;
    uint64_t ns;
    int rc = spawn_in_runtime(p, spawn_live_main, &l, &err, &ns) ? -1 : err;
    free(l.gates);
    *out = (struct spawn_out){
        .rc = rc || l.err ? -1 : 0, .err = l.err, .ns = (double)l.ns,
        .spawned = l.spawned,
        .rss_grown_kib = l.rss_alive_kib - l.rss_before_kib,
        .pte_grown_kib = l.pte_alive_kib - l.pte_before_kib, .maps = l.maps};
    return out->rc;
}

/* In the forked child: one tree (or the live run), the result into *out. */
static void spawn_child(bench_point_t *p, struct spawn_out *out)
{
    struct spawn_point *sp = p->ctx;
    if (sp->live) {
        spawn_run_live(p, sp->live, out);
        return;
    }
    struct spawn_tree tree = {.fanout = sp->fanout, .kernel = p->row->pseudo};
    struct spawn_node root = {&tree, 0, (uint64_t)sp->leaves, 0};
    uint64_t ns = 0;
    int err = 0, rc = p->row->pseudo
                          ? spawn_run_kernel(p, &root, &ns)
                          : spawn_in_runtime(p, spawn_node, &root, &err, &ns);
    if (err)
        spawn_fail(&tree, err);
    out->err = atomic_load(&tree.err);
    out->sum = root.sum;
    out->ns = (double)ns;
    out->rss_kib = spawn_peak_rss_kib();
    bool right = root.sum == spawn_expected_sum((uint64_t)sp->leaves);
    out->rc = rc == 0 && out->err == 0 && right ? 0 : -1;
}

/* Run spawn_child in a child process: 0, or -1 when it died or said
 * nothing. */
static int spawn_fork(bench_point_t *p, struct spawn_out *out)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        struct spawn_out o = {.rc = -1};
        spawn_child(p, &o);
        ssize_t w = write(fd[1], &o, sizeof o);
        _exit(w == (ssize_t)sizeof o ? 0 : 1);
    }
    close(fd[1]);
    /* A runtime row's child named its trace (--trace) from its copy of
     * the count: count that name here too, or every child would write
     * the same file. */
    char taken[300]; /* as bench_runtime_open's */
    if (!p->row->pseudo)
        (void)bench_trace_next(taken, sizeof taken);
    size_t got = bench_read(fd[0], out, sizeof *out);
    close(fd[0]);
    int st = bench_wait_pid(pid);
    return st == -1 || got != sizeof *out || !WIFEXITED(st) ? -1 : 0;
}

/* Why the measurement failed, into p's note and on stderr; -1. */
static int spawn_explain(bench_point_t *p, const struct spawn_out *o, bool died)
{
    const struct spawn_point *sp = p->ctx;
    uint64_t want = spawn_expected_sum((uint64_t)sp->leaves);
    if (died)
        snprintf(p->note, sizeof p->note, "failed: measuring child died");
    else if (sp->live)
        snprintf(p->note, sizeof p->note, "failed: spawn %ld of %ld: %s",
                 o->spawned + 1, sp->live, mqs_strerror(o->err));
    else if (o->err)
        snprintf(p->note, sizeof p->note, "failed: spawn: %s",
                 mqs_strerror(o->err));
    else
        snprintf(p->note, sizeof p->note, "failed: sum %llu, not %llu",
                 (unsigned long long)o->sum, (unsigned long long)want);
    fprintf(stderr, "mqs-bench spawn: %s %s: %s\n", p->row->spec, p->param,
            p->note);
    return -1;
}

static int spawn_measure(bench_point_t *p, double *value, double *extra)
{
    struct spawn_point *sp = p->ctx;
    struct spawn_out o;
    if (spawn_fork(p, &o) != 0)
        return spawn_explain(p, &o, true);
    if (o.rc != 0)
        return spawn_explain(p, &o, false);
    if (sp->live) {
        *value = o.ns / (double)sp->live;
        extra[SPAWN_L_RSS] = (double)o.rss_grown_kib * 1024 / (double)sp->live;
        extra[SPAWN_L_PTE] = (double)o.pte_grown_kib * 1024 / (double)sp->live;
        extra[SPAWN_L_MAPS] = (double)o.maps;
        return 0;
    }
    *value = o.ns / spawn_tree_tasks(sp->leaves, sp->fanout);
    extra[SPAWN_X_RSS] = (double)o.rss_kib;
    return 0;
}

static int spawn_open(bench_point_t *p)
{
    struct spawn_point *sp = p->ctx;
    if (p->row->pseudo) {
        p->workers = bench_kernel_cpus(p->o->workers, &(cpu_set_t){0});
        if (sp->live) {
            snprintf(p->note, sizeof p->note,
                     "not run: --live holds N threads (threads-max)");
            return BENCH_POINT_SKIP;
        }
        if (sp->leaves <= sp->kernel_max)
            return 0;
        snprintf(p->note, sizeof p->note, "not run: above --kernel-tasks %d",
                 sp->kernel_max);
        return BENCH_POINT_SKIP;
    }
    /* The runtime is made in each child; resolve its worker count here. */
    mqs_config_t cfg, res;
    mqs_config_init(&cfg);
    cfg.workers = p->o->workers;
    cfg.policy = p->row->spec;
    p->workers = mqs_config_resolve(&cfg, &res) == 0 ? res.workers : 0;
    return 0;
}

static const bench_point_kind_t spawn_kind = {spawn_open, spawn_measure, NULL};

/* ----- Peers ----- */

static int spawn_peer_check(const bench_peer_result_t *r, void *ctx)
{
    const struct spawn_point *sp = ctx;
    double sum = bench_peer_get(r, "sum");
    return sum == (double)spawn_expected_sum((uint64_t)sp->leaves) ? 0 : -1;
}

static const bench_peer_map_t spawn_peer_map = {
    .value_key = "ns_per_task",
    .extra_key = {[SPAWN_X_RSS] = "peak_rss_kib"},
    .check = spawn_peer_check,
};

/* Live mode: the peer holds live=N tasks blocked at once and says how
 * many it made. */
static int spawn_live_peer_check(const bench_peer_result_t *r, void *ctx)
{
    const struct spawn_point *sp = ctx;
    return bench_peer_get(r, "tasks_created") == (double)sp->live ? 0 : -1;
}

static const bench_peer_map_t spawn_live_peer_map = {
    .value_key = "ns_per_task",
    .extra_key = {[SPAWN_L_RSS] = "rss_bytes_per_task",
                  [SPAWN_L_PTE] = "page_table_bytes_per_task",
                  [SPAWN_L_MAPS] = "mappings"},
    .check = spawn_live_peer_check,
};

/* ----- Options and the table entry ----- */

struct spawn_args {
    int fanout, kernel_max, live;
    struct spawn_point cur; /* the point being measured */
};

static int spawn_options(bench_sweep_t *sw, int *argc, char **argv)
{
    struct spawn_args *a = sw->arg;
    const char *v[3] = {"10", "10000", "0"};
    const bench_xopt_t xo[] = {
        {"fanout", &v[0], &a->fanout, 2, SPAWN_MAX_FANOUT},
        {"kernel-tasks", &v[1], &a->kernel_max, 1, 1000000},
        {"live", &v[2], &a->live, 0, 100000000},
        {0}};
    return bench_take_options("spawn", argc, argv, xo, NULL);
}

static int spawn_check_sizes(const bench_opts_t *o, int fanout)
{
    for (int i = 0; i < o->ntasks; i++)
        if (!spawn_is_power(o->tasks[i], fanout))
            return bench_usage("spawn",
                               "--tasks: %d is not a power of --fanout %d",
                               o->tasks[i], fanout);
    return 0;
}

/* --live: one point per row (--tasks unused), and its own columns. */
static int spawn_prepare(bench_sweep_t *sw)
{
    struct spawn_args *a = sw->arg;
    if (!a->live)
        return spawn_check_sizes(sw->o, a->fanout);
    sw->nparams = 1;
    sw->title = "ns per spawn, all tasks alive";
    sw->extras = spawn_live_extras;
    sw->nextra = SPAWN_L_COUNT;
    return 0;
}

static int spawn_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct spawn_args *a = sw->arg;
    struct spawn_point *sp = &a->cur;
    *sp = (struct spawn_point){sw->o->tasks[i], a->fanout, a->kernel_max,
                               a->live};
    p->unit = "ns";
    /* Each run is a cold child anyway; a warm-up of 10^6 tasks would
     * only double the time. */
    p->no_warm = a->live != 0;
    p->ctx = sp;
    p->peer_map = sp->live ? &spawn_live_peer_map : &spawn_peer_map;
    if (a->live) {
        snprintf(p->param, sizeof p->param, "live=%d", a->live);
        bench_peer_args_add(&p->peer_args, "live", "%ld", sp->live);
    } else {
        snprintf(p->param, sizeof p->param, "tasks=%d", sw->o->tasks[i]);
        bench_peer_args_add(&p->peer_args, "tasks", "%ld", sp->leaves);
        bench_peer_args_add(&p->peer_args, "fanout", "%d", sp->fanout);
    }
    return 0;
}

const bench_exp_t bench_spawn_exp = {
    .cli = &spawn_cli,
    .arg_size = sizeof(struct spawn_args),
    .title = "ns per task",
    .extras = spawn_extras,
    .nextra = SPAWN_X_COUNT,
    .kind = &spawn_kind,
    .options = spawn_options,
    .prepare = spawn_prepare,
    .setup = spawn_setup,
};
