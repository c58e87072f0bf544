/*
 * point.h - one data point of an experiment (a row at one parameter
 * value): the warm-up, the repeats under the precision driver, the
 * extras averaged over the repeats and the result row, for any kind of
 * row.  Also what the row kinds of several experiments share: a runtime
 * for a policy row, the CPU mask of a kernel row, a peer row, and the
 * experiment-specific options the common parser does not know.
 *
 * An experiment describes a row kind by three calls (open once per
 * point, measure once per repeat, close) and fills a bench_point_t; the
 * driver does the rest the same way for every kind, so the three rows of
 * a table (policy, kernel, peer) are measured by one rule.
 */
#ifndef MQS_BENCH_POINT_H
#define MQS_BENCH_POINT_H

#include <sched.h>
#include <stddef.h>

#include "common.h"
#include "mqs.h"
#include "peer.h"

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
    void *ctx; /* the experiment's own state for this point */
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

/* Run the sweep and print its results in sw->o->format on stdout: the
 * one place the mixed, spawn and chat experiments print.  Returns the
 * exit status: 0, or 1 when a point failed or printing did. */
int bench_sweep_report(bench_sweep_t *sw, const char *title,
                       const bench_extra_col_t *extras, int nextra);

/* ----- policy rows ----- */

/*
 * Create a runtime for policy row spec ("mq", "mq:k=v") with `workers`
 * (0 = default) and default stack size stack_size (0 = default), and
 * check that the environment's MQS_POLICY did not relabel it.  Prints
 * why on failure ("mqs-bench <exp>: ...") and returns -1.
 */
int bench_point_runtime_open(const char *exp, const char *spec, int workers,
                       size_t stack_size, mqs_runtime_t **rt);
/* Destroy it, printing an error if there is one; -1 then. */
int bench_point_runtime_close(const char *exp, mqs_runtime_t *rt);

/* ----- kernel rows ----- */

/* The CPUs kernel threads may use: every allowed one, or with workers W
 * the first W of them (a shared mask).  Returns how many. */
int bench_kernel_cpus(int workers, cpu_set_t *set);

/* ----- peer rows ----- */

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

/* The experiment's peer state: args it fills ("k=v", NULL-terminated). */
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

/* ----- options of one experiment ----- */

/*
 * Take the experiment's own options (--name V or --name=V, for each name
 * in names, NULL-terminated) out of argv before the common parser sees
 * it: values[i] gets the value of names[i] (unchanged when absent) and
 * *argc shrinks.  A name with no value is a usage error
 * (BENCH_EXIT_USAGE, message printed); 0 otherwise.  Stops at "--".
 */
int bench_point_take_options(const char *exp, int *argc, char **argv,
                       const char *const *names, const char **values);

#endif
