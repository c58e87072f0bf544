/*
 * expkit.h - the experiment toolkit: what every experiment beyond
 * common.h shares (ring, pipe, wake, mixed, spawn, chat; yield for the
 * runtime and CPU helpers).
 *
 *   options   an experiment's own options, lifted out of argv before
 *             the common parser sees them (expkit.c)
 *   rows      a runtime per policy row with the MQS_POLICY relabel
 *             check, the CPUs of a kernel row, a peer run (expkit.c)
 *   points    one data point: open, warm-up, repeats under the
 *             precision driver, extras averaged, close; a sweep of
 *             every (row, parameter) point (point.c)
 *
 * A row kind is three calls (open once per point, measure once per
 * repeat, close) and the driver does the rest the same way for every
 * kind, so the rows of a table (policy, kernel, peer) are measured by
 * one rule.  An experiment whose sample is just "measure for S seconds"
 * can use bench_point_estimate(), which runs the same warm-up-and-repeat
 * loop over a sample function.
 *
 * This header replaces two kits written in parallel (expkit for ring,
 * pipe and wake; point for mixed, spawn and chat) that did each of these
 * jobs twice.
 */
#ifndef MQS_BENCH_EXPKIT_H
#define MQS_BENCH_EXPKIT_H

#include <sched.h>
#include <stddef.h>

#include "common.h"
#include "mqs.h"
#include "peer.h"

/* ------------------------------------------------------------------ */
/* Options an experiment adds                                          */
/* ------------------------------------------------------------------ */

/* --name VALUE or --name=VALUE; *value points into argv (or stays as it
 * was when the option is absent). */
typedef struct bench_xopt {
    const char *name;
    const char **value;
} bench_xopt_t;

/*
 * Take the options of xo (NULL-name terminated) out of argv before
 * bench_parse_options() sees them, compacting argv and *argc.  An option
 * named in refuse (NULL-terminated, may be NULL) is a usage error ("does
 * not apply").  Nothing after "--" is looked at.  Returns 0 or
 * BENCH_EXIT_USAGE after printing why.
 */
int bench_take_options(const char *exp, int *argc, char **argv,
                       const bench_xopt_t *xo, const char *const *refuse);

/* ------------------------------------------------------------------ */
/* Rows                                                                */
/* ------------------------------------------------------------------ */

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

/*
 * One peer measurement: run mqs-peer-<peer> <exp> args (with workers=W,
 * W = `workers` or every allowed CPU when 0, and seconds=S appended),
 * into *r.  0, or a bench_peer_status with the reason (a row note) in
 * why.
 */
int bench_peer_sample(const char *peer, const char *exp,
                      const char *const *args, int workers, double seconds,
                      bench_peer_result_t *r, char *why, size_t whylen);

/* ------------------------------------------------------------------ */
/* Data points                                                         */
/* ------------------------------------------------------------------ */

/* open/measure: no value for this row, and that is not a failure (the
 * peer is not installed, the kernel cannot run that size); note says why. */
#define BENCH_POINT_SKIP 1

typedef struct bench_point bench_point_t;

typedef struct bench_point_kind {
    /* Once per point, before the warm-up: 0, BENCH_POINT_SKIP or -1. */
    int (*open)(bench_point_t *p);
    /* One measurement: the value, and each extra (NAN where it has none;
     * extra has p->nextra slots, preset to NAN).  p->warmup tells the
     * warm-up run, which may be shorter.  0, BENCH_POINT_SKIP or -1. */
    int (*measure)(bench_point_t *p, double *value, double *extra);
    /* Undo open (also after a failed open). */
    void (*close)(bench_point_t *p);
} bench_point_kind_t;

struct bench_point {
    /* set by the experiment */
    const char *experiment;
    const bench_opts_t *o;
    bench_progress_t *progress;
    const bench_row_spec_t *row;
    char param[48];
    const char *unit;
    int nextra;
    const bench_point_kind_t *kind;
    void *ctx;    /* the experiment's own state for this point */
    bool no_warm; /* skip the warm-up measurement */
    /* set by the kind */
    int workers;   /* workers (or CPUs) the row ran on */
    char note[96]; /* why there is no value, or a remark on the extras */
    bool warmup;
};

/*
 * Open, warm up, repeat until precise, close; fill *res (whose row,
 * param and note point into p).  Extras are the means over the repeats.
 * Returns 0 (also for a skipped row: value NAN, note set) or -1 when a
 * measurement failed (value NAN, note "failed").
 */
int bench_point_run(bench_point_t *p, bench_result_t *res);

/* One sample of a data point: measure for `seconds`, store the value. */
typedef int (*bench_sample_fn)(void *ctx, double seconds, double *value);

/*
 * The driver's warm-up-then-repeat loop over a sample function: warm up
 * (one sample of seconds/4, unless warm is false), then sample until
 * precise (o->prec), showing progress as row/param.  Returns 0 or the
 * first non-zero a sample returned; *est as far as it got.
 */
int bench_point_estimate(const bench_opts_t *o, bench_progress_t *pg,
                         const char *row, const char *param, bool warm,
                         bench_sample_fn fn, void *ctx, bench_estimate_t *est);

/* The row of one estimate (value NAN and the note when rc != 0). */
bench_result_t bench_result_of(const char *row, const char *param,
                               int workers, const char *unit, int rc,
                               const bench_estimate_t *est, const char *note);

/* ----- a whole experiment: every row at every parameter value ----- */

typedef struct bench_sweep bench_sweep_t;
struct bench_sweep {
    const char *experiment;
    const bench_opts_t *o;
    int nparams; /* parameter values per row */
    /* Prepare the point of row p->row at parameter index i: set
     * p->param, unit, nextra, kind and ctx (which must stay valid until
     * the next call).  0, or -1 to give up. */
    int (*setup)(bench_sweep_t *sw, int i, bench_point_t *p);
    void *arg; /* the experiment's own */
};

/* Run every (row, parameter) point in order with a progress line,
 * appending one result each to rs.  Returns 0, or -1 when a point
 * failed (the others still run) or memory ran out. */
int bench_sweep_run(bench_sweep_t *sw, bench_results_t *rs);

/* Run the sweep and print its results in sw->o->format on stdout.
 * Returns the exit status: 0, or 1 when a point failed or printing did. */
int bench_sweep_report(bench_sweep_t *sw, const char *title,
                       const bench_extra_col_t *extras, int nextra);

/* ----- the peer row kind ----- */

/* How a peer's output maps onto a point: the key of the value, and for
 * each extra the key (NULL: none) and a factor to convert it. */
typedef struct bench_peer_map {
    const char *value_key;
    double value_scale;
    const char *extra_key[BENCH_MAX_EXTRA];
    double extra_scale[BENCH_MAX_EXTRA];
    /* optional: reject a result (e.g. a wrong sum); 0 ok, -1 bad. */
    int (*check)(const bench_peer_result_t *r, void *ctx);
} bench_peer_map_t;

/* The experiment's peer state: the experiment's own args ("k=v",
 * NULL-terminated); the kind appends workers= and seconds= from p->o
 * (bench_peer_sample). */
typedef struct bench_peer_point {
    const bench_peer_map_t *map;
    char argbuf[BENCH_PEER_MAX_KEYS][48];
    const char *args[BENCH_PEER_MAX_KEYS + 1];
    int nargs;
    void *check_ctx;
} bench_peer_point_t;

/* Append "key=value" to pp's arguments (ignored past the maximum). */
void bench_peer_arg(bench_peer_point_t *pp, const char *key, double value);
/* The peer row kind: p->ctx is a bench_peer_point_t. */
extern const bench_point_kind_t bench_peer_kind;

#endif
