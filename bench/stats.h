/*
 * stats.h - the statistics every mqs-bench experiment reports with:
 * mean, sample standard deviation, median, Student t
 * 95% confidence intervals, and the repeat-until-precise driver behind
 * the "FRC" flag of the 2001 yield tables.
 *
 * Conventions: arrays are of double; functions that need order take an
 * array already sorted ascending (bench_sort() sorts one in place), so
 * nothing here allocates except the driver's sample buffer.  Undefined
 * results (the stdev of one sample, the median of nothing) are NAN, a
 * confidence half-width that cannot be had yet is INFINITY.
 */
#ifndef MQS_BENCH_STATS_H
#define MQS_BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>

double bench_mean(const double *x, size_t n);
/* Sample standard deviation (divides by n - 1); NAN when n < 2. */
double bench_stdev(const double *x, size_t n);
/* Sort ascending in place. */
void bench_sort(double *x, size_t n);
/* Median of a sorted array (mean of the middle two when n is even). */
double bench_median(const double *sorted, size_t n);

/*
 * Two-sided 95% critical value of Student's t with df degrees of freedom:
 * a table for df 1..30, above that the Cornish-Fisher expansion around
 * the normal quantile 1.95996 (within 1e-4 of the true value for df > 30,
 * tending to 1.960).  NAN for df < 1.
 */
double bench_t95(int df);
/* Half-width of the 95% confidence interval of the mean of n samples
 * with sample standard deviation sd: t95(n-1) * sd / sqrt(n).
 * INFINITY when n < 2. */
double bench_ci95(double sd, size_t n);

/* ----- repeat until precise ----- */

/* One measurement: store a sample in *value, return 0, or a non-zero
 * code that aborts the driver (passed back as its result).  repeat counts
 * from 0. */
typedef int (*bench_measure_fn)(void *ctx, int repeat, double *value);

typedef struct bench_precision {
    int min_repeats;  /* always taken (>= 1)                            */
    int max_repeats;  /* never exceeded (>= min_repeats)                */
    double ci_target; /* stop once ci95 <= ci_target * |mean|           */
    double budget_s;  /* ... or once this much wall time is spent       */
} bench_precision_t;

typedef struct bench_estimate {
    double mean, stdev, ci95; /* ci95: half-width, same unit as mean  */
    int n;                    /* samples taken                         */
    bool frc;                 /* the CI target was not reached: "FRC"  */
} bench_estimate_t;

/*
 * Take min_repeats samples, then keep sampling until the 95% CI
 * half-width is within ci_target of the mean, or budget_s seconds (since
 * the first sample began) or max_repeats samples are spent; in the last
 * two cases the estimate is flagged frc.  Returns 0, -1 when out of
 * memory or the precision is malformed, or what measure returned.
 */
int bench_repeat_until_precise(const bench_precision_t *prec,
                               bench_measure_fn measure, void *ctx,
                               bench_estimate_t *out);

/* Summarise samples taken some other way (same rule for frc). */
void bench_estimate_of(const double *x, size_t n, double ci_target,
                       bench_estimate_t *out);

#endif
