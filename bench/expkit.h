/*
 * expkit.h - pieces the ring, pipe and wake experiments share beyond
 * common.h: options of their own beside the common set, a runtime per
 * policy row, the CPUs a kernel row may use, one peer sample, and the
 * warm-up-then-repeat driver of one data point.  (yield.c has private
 * copies of the runtime and CPU helpers; it could move to these.)
 */
#ifndef MQS_BENCH_EXPKIT_H
#define MQS_BENCH_EXPKIT_H

#include <sched.h>

#include "common.h"
#include "mqs.h"
#include "peer.h"

/* ----- options an experiment adds ----- */

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
 * not apply").  Returns 0 or BENCH_EXIT_USAGE after printing why.
 */
int bench_take_options(const char *exp, int *argc, char **argv,
                       const bench_xopt_t *xo, const char *const *refuse);

/* ----- rows ----- */

/* Create the runtime of policy row spec with `workers` workers (0 = the
 * default), refusing a runtime whose policy is not the row's (MQS_POLICY
 * in the environment would silently relabel it).  0 or -1 with the
 * reason on stderr. */
int bench_runtime_open(const char *exp, const char *spec, int workers,
                       mqs_runtime_t **rt);
/* Destroy it, reporting an error on stderr; NULL is a no-op. */
void bench_runtime_close(const char *exp, mqs_runtime_t *rt);

/* The first `workers` CPUs this process may use (all when workers is
 * 0), at most max, into cpus[]; returns how many. */
int bench_cpu_list(int workers, int *cpus, int max);
/* A set of cpus[0..n). */
void bench_cpuset_of(const int *cpus, int n, cpu_set_t *set);

/* ----- data points ----- */

/* One sample of a data point: measure for `seconds`, store the value. */
typedef int (*bench_sample_fn)(void *ctx, double seconds, double *value);

/*
 * Warm up (one sample of seconds/4, unless warm is false), then sample
 * until precise (bench_repeat_until_precise with o->prec), showing
 * progress.  Returns 0 or the first non-zero a sample returned.
 */
int bench_point_estimate(const bench_opts_t *o, bench_progress_t *pg,
                         const char *row, const char *param, bool warm,
                         bench_sample_fn fn, void *ctx, bench_estimate_t *est);

/* The row of one estimate (value NAN and the note when rc != 0). */
bench_result_t bench_result_of(const char *row, const char *param,
                               int workers, const char *unit, int rc,
                               const bench_estimate_t *est, const char *note);

/*
 * One peer measurement: run mqs-peer-<peer> <exp> args (with workers=W
 * and seconds=S appended), into *r.  0, or a bench_peer_status with the
 * reason (a row note) in why.
 */
int bench_peer_sample(const char *peer, const char *exp,
                      const char *const *args, int workers, double seconds,
                      bench_peer_result_t *r, char *why, size_t whylen);

#endif
