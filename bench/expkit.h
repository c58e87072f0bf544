/*
 * expkit.h - the experiment toolkit: what every experiment shares beyond
 * common.h.
 *
 *   options   an experiment's own options, lifted out of argv before
 *             the common parser sees them (expkit.c)
 *   rows      a runtime per policy row with the MQS_POLICY relabel
 *             check, the CPUs of a kernel row, a sample's window
 *             (expkit.c)
 *   points    one data point: open, warm-up, repeats under the
 *             precision driver, extras folded, close; the peer row kind;
 *             a sweep of every (row, parameter) point; an experiment's
 *             main (point.c)
 *
 * An experiment is a table entry (bench_exp_t): its CLI, its columns,
 * the row kind of each kind of row, and a setup that prepares the point
 * at each parameter value.  A row kind is three calls (open once per
 * point, measure once per repeat, close) and the one driver does the
 * rest the same way for every kind, so the rows of a table (policy,
 * kernel, floor, peer) are measured by one rule; peer rows all go
 * through one kind, which runs the peer program and maps its keys.
 */
#ifndef MQS_BENCH_EXPKIT_H
#define MQS_BENCH_EXPKIT_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>

#include "common.h"
#include "mqs.h"
#include "peer.h"

/* ----- Options an experiment adds ----- */

/* --name VALUE or --name=VALUE; *value points into argv (or stays as it
 * was when the option is absent).  With out, *value (given or not) is an
 * integer in min..max, parsed into *out. */
typedef struct bench_xopt {
    const char *name;
    const char **value;
    int *out;
    long min, max;
} bench_xopt_t;

/*
 * Take the options of xo (NULL-name terminated) out of argv before
 * bench_parse_options() sees them, compacting argv and *argc, then parse
 * the integer ones in xo's order.  An option named in refuse
 * (NULL-terminated, may be NULL) is a usage error ("does not apply").
 * Nothing after "--" is looked at.  Returns 0 or BENCH_EXIT_USAGE after
 * printing why.
 */
int bench_take_options(const char *exp, int *argc, char **argv,
                       const bench_xopt_t *xo, const char *const *refuse);

/* ----- Rows ----- */

/*
 * Create the runtime of policy row spec ("mq", "mq:k=v") with `workers`
 * workers (0 = the default) and default task stack size stack_size (0 =
 * the default), refusing a runtime whose policy is not the row's
 * (MQS_POLICY in the environment would silently relabel it).  0, or -1
 * with the reason on stderr ("mqs-bench <exp>: ...").
 */
int bench_runtime_open(const char *exp, const char *spec, int workers,
                       size_t stack_size, mqs_runtime_t **rt);

/* Destroy it, reporting an error on stderr (then -1); NULL is a no-op. */
int bench_runtime_close(const char *exp, mqs_runtime_t *rt);

/* The first `workers` CPUs this process may use (all when workers is
 * 0), at most max, into cpus[]; returns how many. */
int bench_cpu_list(int workers, int *cpus, int max);
/* A set of cpus[0..n). */
void bench_cpuset_of(const int *cpus, int n, cpu_set_t *set);
/* The CPUs kernel threads of a kernel row may use, as one shared mask:
 * bench_cpu_list(workers) as a set.  Returns how many. */
int bench_kernel_cpus(int workers, cpu_set_t *set);

#define BENCH_KERNEL_STACK (64u * 1024u) /* most kernel rows' thread stack */

/* Attributes of a kernel row's thread: the mask of the first `workers`
 * CPUs (bench_kernel_cpus), `stack` bytes of stack (0: the default). */
void bench_thread_attr(pthread_attr_t *a, int workers, size_t stack);

/* One task of a measurement: an mqs task or (kernel row) a thread. */
typedef struct bench_task {
    mqs_task_t *task; /* policy rows, for mqs_task_stats() */
    pthread_t thread;
    bool started, kernel;
} bench_task_t;

/* Start fn(arg) as an mqs task on rt with attributes a or, rt NULL, a
 * thread with attributes ka.  0, or the error of mqs_spawn or
 * pthread_create (not said: see bench_task_error). */
int bench_task_start(bench_task_t *t, mqs_runtime_t *rt,
                     const mqs_task_attr_t *a, const pthread_attr_t *ka,
                     void *(*fn)(void *), void *arg);
/* "mqs-bench <exp>: <row>: mqs_spawn: <why>" (or pthread_create). */
void bench_task_error(const char *exp, const char *row, bool kernel, int rc);
/* Join it if it started: 0 or the join's error. */
int bench_task_join(bench_task_t *t);

/*
 * The n tasks of one measurement: mqs tasks on rt, or (rt NULL) kernel
 * threads with bench_thread_attr(workers, stack).  Task i runs fn(arg +
 * i * stride).
 */
typedef struct bench_group {
    const char *exp; /* for messages, set by bench_group_start */
    mqs_runtime_t *rt;
    int workers;
    size_t stack;
    const char *name; /* mqs tasks are named "<name>-<i>" (NULL: default) */
    int started;
    bench_task_t *t;
} bench_group_t;

/* Start them; 0, or -1 with the reason on stderr ("mqs-bench <exp>:
 * <row>: ..."), those started still to be joined. */
int bench_group_start(bench_group_t *g, const char *exp, const char *row,
                      int n, void *(*fn)(void *), void *arg, size_t stride);
/* Join those started and free the group; 0, or -1 when a join failed. */
int bench_group_join(bench_group_t *g);

#define BENCH_CACHELINE 64

/* The flags every task of a sample polls, written by the main thread:
 * on a cache line of their own. */
typedef struct bench_flags {
    _Atomic int start, stop;
} __attribute__((aligned(BENCH_CACHELINE))) bench_flags_t;

/* Is flag f set?  Relaxed: a task that sees it a turn late costs
 * nothing, and a fence per turn would be in every figure. */
static inline bool bench_flag(const _Atomic int *f)
{
    return atomic_load_explicit(f, memory_order_relaxed) != 0;
}

/* One more on a counter only its task writes: a load and a store, not a
 * locked read-modify-write; the main thread reads it relaxed. */
static inline void bench_count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* The window of a sample whose tasks stamp their own start: wait for
 * *started (a loaded host may take a while to run the first task), let
 * it run `seconds`, then set *stop. */
void bench_window(_Atomic int *started, _Atomic int *stop, double seconds);

/* ----- Data points ----- */

/* open/measure: no value for this row, and that is not a failure (the
 * peer is not installed, the kernel cannot run that size); note says why. */
#define BENCH_POINT_SKIP 1

typedef struct bench_point bench_point_t;

typedef struct bench_point_kind {
    /* Once per point, before the warm-up: 0, BENCH_POINT_SKIP or -1. */
    int (*open)(bench_point_t *p);
    /* One measurement of bench_point_seconds(p): the value, and each
     * extra (NAN where it has none; extra has p->nextra slots, preset to
     * NAN).  p->warmup tells the warm-up run.  0, BENCH_POINT_SKIP or -1. */
    int (*measure)(bench_point_t *p, double *value, double *extra);
    /* Undo open (also after a failed open); may be NULL. */
    void (*close)(bench_point_t *p);
} bench_point_kind_t;

/* How an extra column is folded over the repeats (its `fold`). */
enum bench_fold {
    BENCH_FOLD_MEAN = 0, /* the mean of the values measured (default)   */
    BENCH_FOLD_MIN,      /* the least: a worst case where less is worse */
    BENCH_FOLD_MAX,      /* the greatest                                */
    BENCH_FOLD_REPEATS,  /* not measured: the number of repeats         */
};

/* How a peer's output maps onto a point: the key of the value, and for
 * each extra the key (NULL: none) and a factor to convert it (0 = 1). */
typedef struct bench_peer_map {
    const char *value_key;
    double value_scale;
    const char *extra_key[BENCH_MAX_EXTRA];
    double extra_scale[BENCH_MAX_EXTRA];
    /* optional: reject a result (e.g. a wrong sum); ctx is the point's
     * ctx.  0 ok, -1 bad. */
    int (*check)(const bench_peer_result_t *r, void *ctx);
    /* optional: the value and extras from r, in place of the keys above;
     * 0, or -1 when r lacks what it needs. */
    int (*convert)(bench_point_t *p, const bench_peer_result_t *r,
                   double *value, double *extra);
} bench_peer_map_t;

struct bench_point {
    /* set by the driver (bench_sweep_run), or a test */
    const char *experiment;
    const bench_opts_t *o;
    bench_progress_t *progress;
    const bench_row_spec_t *row;
    const bench_point_kind_t *kind; /* the row's, chosen from the table */
    const bench_extra_col_t *extras; /* their folds; NULL: all means */
    /* set by the experiment's setup */
    char param[48];
    const char *unit;
    int nextra;   /* preset by the sweep: its columns' */
    void *ctx;    /* the experiment's own state for this point */
    bool no_warm; /* skip the warm-up measurement */
    /* peer rows: what to pass (bench_peer_args_add; workers= and
     * seconds= are added) and how to read what comes back */
    const bench_peer_map_t *peer_map;
    bench_peer_args_t peer_args;
    /* optional: add the point's results to rs (default: res itself);
     * 0 or -1 (no memory). */
    int (*emit)(bench_point_t *p, bench_result_t *res, bench_results_t *rs);
    /* set by the kind (setup may preset it for a peer row) */
    mqs_runtime_t *rt; /* bench_row_open's runtime; NULL: none */
    int workers;   /* workers (or CPUs) the row ran on */
    char note[96]; /* why there is no value, or a remark on the extras */
    bool warmup;
    /* set by the driver once measured: every measurement succeeded */
    bool ok;
};

/* Open what p's row runs on: a policy row's runtime with --workers
 * workers into p->rt (bench_runtime_open), or for a kernel row nothing
 * (p->rt NULL); either way p->workers is what the row runs on.  0 or -1.
 * A row kind's open and close may be these two. */
int bench_row_open(bench_point_t *p);
/* Close what bench_row_open opened; p->rt becomes NULL. */
void bench_row_close(bench_point_t *p);

/* The seconds one measurement of p runs: o->seconds, a quarter of it for
 * the warm-up. */
double bench_point_seconds(const bench_point_t *p);

/*
 * Open, warm up (one measurement, thrown away, unless p->no_warm), repeat
 * under bench_repeat_until_precise (o->prec), close; fill *res (whose row,
 * param and note point into p) with the estimate and the extras folded by
 * p->extras.  Returns 0 (also for a skipped row: value NAN, note set) or -1
 * when a measurement failed (value NAN, note "failed" unless the kind
 * said more).
 */
int bench_point_run(bench_point_t *p, bench_result_t *res);

/* The peer row kind: runs mqs-peer-<row> once per measurement with
 * p->peer_args, maps its output with p->peer_map; a peer that is not
 * installed or does not support the experiment is a skipped row. */
extern const bench_point_kind_t bench_peer_kind;

/* ----- Experiments: a table entry each, run by bench_exp_main ----- */

/* The kind of a pseudo row, by name; name NULL: the policy rows. */
typedef struct bench_row_kind {
    const char *name;
    const bench_point_kind_t *kind;
} bench_row_kind_t;

typedef struct bench_sweep bench_sweep_t;

typedef struct bench_exp {
    const bench_cli_t *cli;
    size_t arg_size;   /* the experiment's own state (sw->arg), zeroed */
    const char *title; /* table heading: "ns per yield" */
    const bench_extra_col_t *extras;
    int nextra;
    /* the kind of the policy rows and of a "kernel" row, unless kinds
     * names one; peer rows use bench_peer_kind */
    const bench_point_kind_t *kind;
    const bench_row_kind_t *kinds; /* {NULL, NULL}-terminated, or NULL */
    /* optional: take the experiment's own options out of argv into
     * sw->arg (and sw->nparams when they are its parameter values),
     * before the common parser; 0 or BENCH_EXIT_USAGE. */
    int (*options)(bench_sweep_t *sw, int *argc, char **argv);
    /* optional: after the common options, check them and set what the
     * defaults do not (sw->nparams, title, extras); 0 or
     * BENCH_EXIT_USAGE. */
    int (*prepare)(bench_sweep_t *sw);
    /* Prepare the point of p->row at parameter index i: p->param, unit,
     * ctx (valid until the next call), peer args; 0, or -1 to give up. */
    int (*setup)(bench_sweep_t *sw, int i, bench_point_t *p);
    /* optional: free what options and prepare made in sw->arg */
    void (*done)(bench_sweep_t *sw);
} bench_exp_t;

/* One run of an experiment: every row at every parameter value. */
struct bench_sweep {
    const bench_exp_t *e;
    const bench_opts_t *o;
    int nparams;        /* values per row: o->ntasks unless options set it */
    const char *title;  /* from e, unless prepare changed them */
    const bench_extra_col_t *extras;
    int nextra;
    void *arg; /* the experiment's own */
};

/* Run every (row, parameter) point in order with a progress line,
 * appending its results to rs.  Returns 0, or -1 when a point failed
 * (the others still run) or memory ran out. */
int bench_sweep_run(bench_sweep_t *sw, bench_results_t *rs);

/* The whole experiment (argv[0] its name): its options, the common
 * options, the sweep, the output.  Returns the exit status: 0 (also after
 * --help), 1 when a point failed or printing did, BENCH_EXIT_USAGE. */
int bench_exp_main(const bench_exp_t *e, int argc, char **argv);

#endif
