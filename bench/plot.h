/*
 * plot.h - `--plot FILE.svg`: any experiment's results drawn by gnuplot,
 * from the results alone (the plotter knows no experiment by name).
 *
 * The rows are split into panels by unit (an experiment that reports ns
 * and MB/s gets two panels, stacked); within a panel one series per row
 * kind, and the shape follows from the params:
 *
 *   lines   every param is key=<number> with the same key ("tasks=16"):
 *           x = the number, y = value, CI half-width as error bars; x is
 *           logarithmic when the numbers are positive and span more than
 *           a factor of 10 (base 2 when all are powers of two).
 *           One x value alone is drawn as groups (bars), not as a line
 *           on an empty range.
 *   cdf     every param is pct=P with 0 <= P < 100 (a latency
 *           distribution), or at least two are and the others are not
 *           (wake's stat=max, stat=mean: left to the table, said under
 *           the panel): x = the value (log when it spans more than a
 *           factor of 10), y = P on a "nines" scale, -log10(1 - P/100),
 *           so 50, 90, 99 and 99.9 are evenly spaced; CI as x error bars.
 *   groups  anything else ("placement=same"): one group of bars per
 *           param, one bar per row kind, CI as error bars; when every
 *           param is key=name with one key, the key labels the axis and
 *           the names the groups.
 *
 * Every series has its own colour and marker (fourteen colours, then
 * dashes), the same in every panel.  A panel on a log y axis whose
 * fastest rows would bundle at its bottom (yield: the policies at 5-50 ns
 * under kernel threads at 10^5) is followed by a zoom: the rows whose
 * largest value is at most BENCH_PLOT_ZOOM times the smallest row's
 * largest, on a linear axis from zero.
 *
 * y is logarithmic when every value minus its CI is positive and the
 * values span more than a factor of BENCH_PLOT_LOGY_SPAN: the floor and a
 * kernel row can differ by 100x, and a linear axis would flatten the
 * others onto zero.  Rows whose value is NAN (a note such as "not
 * installed") are left out and named under the panel, with the number of
 * points flagged FRC.
 */
#ifndef MQS_BENCH_PLOT_H
#define MQS_BENCH_PLOT_H

#include <stdbool.h>
#include <stdio.h>

#include "output.h"

#define BENCH_PLOT_LOGX_SPAN 10.0
#define BENCH_PLOT_LOGY_SPAN 50.0
#define BENCH_PLOT_ZOOM 10.0

typedef enum bench_plot_kind {
    BENCH_PLOT_LINES,
    BENCH_PLOT_CDF,
    BENCH_PLOT_GROUPS,
} bench_plot_kind_t;

/* How the rows with this unit (and a value) are drawn, and whether x and
 * y are logarithmic.  Exposed for tests. */
typedef struct bench_plot_shape {
    bench_plot_kind_t kind;
    bool logx, logy;
    int logx_base;  /* 2 or 10 when logx                          */
    bool from_zero; /* linear y starts at 0: no value - CI below 0 */
    bool pct_only;  /* a cdf of the pct= rows; the others (stat=max,
                       ...) are left to the table                   */
} bench_plot_shape_t;

void bench_plot_shape_of(const bench_results_t *rs, const char *unit,
                         bench_plot_shape_t *out);

/* Write the gnuplot script that draws rs into svg_path.  0, or -1 when out
 * of memory or on a write error. */
int bench_plot_script(const bench_results_t *rs, const char *svg_path,
                      FILE *out);

/* gnuplot's path on $PATH into buf; false when it is not there. */
bool bench_plot_find_gnuplot(char *buf, size_t n);

/* Is gnuplot there?  When not, say so on stderr for `mqs-bench
 * <experiment>` and return false. */
bool bench_plot_have_gnuplot(const char *experiment);

/* Draw rs into svg_path: write the script to a temporary file and run
 * gnuplot on it.  0, or 1 after saying why on stderr ("gnuplot not
 * found", gnuplot failed: the script is kept and named). */
int bench_plot_svg(const bench_results_t *rs, const char *svg_path);

#endif
