/*
 * histogram.h - a log-linear latency histogram in the manner of Gil
 * Tene's HdrHistogram: exact below 2^P, then every power of two split
 * into 2^P equal sub-buckets, so any recorded value is known to within a
 * relative error of 2^-P (P = BENCH_HIST_PRECISION_BITS = 7: under 0.8%
 * per bucket, under 0.4% once reported at the bucket's midpoint) over the
 * whole uint64_t range, at a fixed 7,424 counters (58 KiB).
 *
 * Count, minimum, maximum, mean and standard deviation are kept exactly
 * beside the buckets (Welford's running moments), so only percentiles
 * carry the bucket error.  Percentiles use the nearest-rank definition
 * (the value at rank ceil(p/100 n), rank 1 for p = 0) and
 * report the midpoint of the bucket holding that rank, clamped to the
 * exact minimum and maximum: p = 0 is the minimum, p = 100 the maximum.
 *
 * Recording does no allocation and no locking: one histogram per
 * recording thread or task, merged afterwards.
 */
#ifndef MQS_BENCH_HISTOGRAM_H
#define MQS_BENCH_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_HIST_PRECISION_BITS 7
#define BENCH_HIST_SUB (1u << BENCH_HIST_PRECISION_BITS)
/* Index of UINT64_MAX plus one: (64 - P) magnitudes of 2^P, plus 2^P
 * exact values below 2^P. */
#define BENCH_HIST_BUCKETS                                                     \
    ((size_t)(64 - BENCH_HIST_PRECISION_BITS + 1) * BENCH_HIST_SUB)

typedef struct bench_hist {
    uint64_t *counts; /* BENCH_HIST_BUCKETS counters                  */
    uint64_t n, min, max;
    double mean, m2; /* running mean and sum of squared deviations    */
} bench_hist_t;

/* Allocate an empty histogram: 0, or -1 when out of memory. */
int bench_hist_init(bench_hist_t *h);
void bench_hist_free(bench_hist_t *h);
/* Empty it again (keeps the counters' memory). */
void bench_hist_reset(bench_hist_t *h);

void bench_hist_record(bench_hist_t *h, uint64_t v);
/* Add every sample of src to dst. */
void bench_hist_merge(bench_hist_t *dst, const bench_hist_t *src);

/* Nearest-rank percentile p (0..100); NAN when empty or p out of range. */
double bench_hist_percentile(const bench_hist_t *h, double p);
double bench_hist_mean(const bench_hist_t *h);  /* NAN when empty  */
double bench_hist_stdev(const bench_hist_t *h); /* sample; NAN if n < 2 */
double bench_hist_max(const bench_hist_t *h);   /* NAN when empty  */

/* The bucket of v and the range [lowest, highest] of values it holds
 * (exposed for tests). */
size_t bench_hist_index(uint64_t v);
uint64_t bench_hist_lowest(size_t index);
uint64_t bench_hist_highest(size_t index);

#endif
