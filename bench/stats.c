/*
 * stats.c - summary statistics and the repeat-until-precise driver.
 *
 * The 2001 multi-queue yield tables gave each figure with a confidence
 * interval and wrote "FRC" next to those whose interval could not be
 * brought within the target in the time allowed.  The driver here does
 * the same: a minimum number of repeats, then more until the Student t
 * 95% half-width is within a fraction of the mean or a wall-time budget
 * is spent.  Student t (not the normal 1.96) because repeats are few:
 * with five samples t is 2.776, and a normal interval would be 30% too
 * narrow.
 *
 * The t quantiles are a table up to df 30 and the Cornish-Fisher
 * expansion above: an exact inverse of the incomplete beta function would
 * be a page of numerics for a value that changes in the fourth digit.
 * Sorting is left to the caller so nothing allocates.  (Percentiles are
 * the histogram's, histogram.h: wake is the one experiment with any.)
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

#include "common.h"

double bench_mean(const double *x, size_t n)
{
    if (n == 0)
        return NAN;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s / (double)n;
}

/* Two passes: the one-pass sum-of-squares formula loses every digit when
 * the spread is small against the mean, which is the precise case. */
double bench_stdev(const double *x, size_t n)
{
    if (n < 2)
        return NAN;
    double m = bench_mean(x, n), ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - m) * (x[i] - m);
    return sqrt(ss / (double)(n - 1));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort(double *x, size_t n)
{
    qsort(x, n, sizeof *x, cmp_double);
}

double bench_median(const double *sorted, size_t n)
{
    if (n == 0)
        return NAN;
    if (n % 2)
        return sorted[n / 2];
    return (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* t_{0.975, df} for df 1..30, four decimals. */
static const double t95_table[30] = {
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
    2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
    2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
    2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
};

/* Cornish-Fisher expansion of the t quantile in powers of 1/df
 * (Abramowitz & Stegun 26.7.5). */
static double t_cornish_fisher(double z, double df)
{
    double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
    double g1 = (z3 + z) / 4;
    double g2 = (5 * z5 + 16 * z3 + 3 * z) / 96;
    double g3 = (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384;
    double g4 = (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / 92160;
    return z + g1 / df + g2 / (df * df) + g3 / (df * df * df) +
           g4 / (df * df * df * df);
}

double bench_t95(int df)
{
    if (df < 1)
        return NAN;
    if (df <= 30)
        return t95_table[df - 1];
    return t_cornish_fisher(1.959963984540054, df);
}

double bench_ci95(double sd, size_t n)
{
    if (n < 2)
        return INFINITY;
    return bench_t95((int)(n - 1)) * sd / sqrt((double)n);
}

void bench_estimate_of(const double *x, size_t n, double ci_target,
                       bench_estimate_t *out)
{
    out->n = (int)n;
    out->mean = bench_mean(x, n);
    out->stdev = bench_stdev(x, n);
    out->ci95 = bench_ci95(out->stdev, n); /* INFINITY below 2 */
    /* Written so that a NAN anywhere counts as not reached. */
    out->frc = !(out->ci95 <= ci_target * fabs(out->mean));
}

int bench_repeat_until_precise(const bench_precision_t *prec,
                               bench_measure_fn measure, void *ctx,
                               bench_estimate_t *out)
{
    bool ok = prec->min_repeats >= 1 &&
              prec->max_repeats >= prec->min_repeats && prec->ci_target > 0 &&
              prec->budget_s >= 0;
    double *x = ok ? malloc((size_t)prec->max_repeats * sizeof *x) : NULL;
    if (!x)
        return -1;
    uint64_t t0 = bench_now_ns();
    uint64_t budget_ns = (uint64_t)(prec->budget_s * 1e9);
    int n = 0, rc = 0;
    for (;;) {
        rc = measure(ctx, n, &x[n]);
        if (rc != 0)
            break;
        n++;
        bench_estimate_of(x, (size_t)n, prec->ci_target, out);
        if (n < prec->min_repeats)
            continue;
        if (!out->frc || n == prec->max_repeats ||
            bench_now_ns() - t0 >= budget_ns)
            break;
    }
    free(x);
    return rc;
}
