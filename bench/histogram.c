/*
 * histogram.c - the log-linear histogram of histogram.h.
 *
 * Bucket layout: values below 2^P have a bucket each.  A larger value v
 * with its top bit at position m is shifted right by s = m - P, leaving a
 * sub-bucket number in [2^P, 2^(P+1)); its index is s * 2^P + that
 * number, which continues the exact range without a gap (v = 2^P lands
 * on index 2^P).  The width of a bucket is 2^s <= v / 2^P, hence the
 * bounded relative error.  The index is a count-leading-zeros, a shift
 * and an add, cheap enough to record in a measured loop.
 *
 * Rejected: a fixed-width histogram (microsecond bins lose the p50 of a
 * 2 µs wake-up and need millions of bins for a 10 ms max); keeping every
 * sample and sorting (exact, but memory grows with the run and the merge
 * is a concatenation; the 2009 latt kept running sums only, which gives
 * no percentiles at all).
 */
#include "histogram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t bench_hist_index(uint64_t v)
{
    if (v < BENCH_HIST_SUB)
        return (size_t)v;
    unsigned m = 63u - (unsigned)__builtin_clzll(v);
    unsigned s = m - BENCH_HIST_PRECISION_BITS;
    return (size_t)s * BENCH_HIST_SUB + (size_t)(v >> s);
}

uint64_t bench_hist_lowest(size_t index)
{
    if (index < 2 * BENCH_HIST_SUB)
        return index;
    size_t s = index / BENCH_HIST_SUB - 1;
    uint64_t sub = index - s * BENCH_HIST_SUB;
    return sub << s;
}

/* One below the next bucket's lowest (which wraps to 0 past the last). */
uint64_t bench_hist_highest(size_t index)
{
    return bench_hist_lowest(index + 1) - 1;
}

int bench_hist_init(bench_hist_t *h)
{
    h->counts = calloc(BENCH_HIST_BUCKETS, sizeof *h->counts);
    bench_hist_reset(h);
    return h->counts ? 0 : -1;
}

void bench_hist_free(bench_hist_t *h)
{
    free(h->counts);
    h->counts = NULL;
}

void bench_hist_reset(bench_hist_t *h)
{
    if (h->counts)
        memset(h->counts, 0, BENCH_HIST_BUCKETS * sizeof *h->counts);
    h->n = 0;
    h->min = UINT64_MAX;
    h->max = 0;
    h->mean = h->m2 = 0;
}

void bench_hist_record(bench_hist_t *h, uint64_t v)
{
    h->counts[bench_hist_index(v)]++;
    h->n++;
    h->min = v < h->min ? v : h->min;
    h->max = v > h->max ? v : h->max;
    double d = (double)v - h->mean;
    h->mean += d / (double)h->n;
    h->m2 += d * ((double)v - h->mean);
}

/* Chan, Golub and LeVeque's pairwise update of the moments. */
void bench_hist_merge(bench_hist_t *dst, const bench_hist_t *src)
{
    if (src->n == 0)
        return;
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
    double na = (double)dst->n, nb = (double)src->n, n = na + nb;
    double d = src->mean - dst->mean;
    dst->mean += d * nb / n;
    dst->m2 += src->m2 + d * d * na * nb / n;
    dst->n += src->n;
    dst->min = src->min < dst->min ? src->min : dst->min;
    dst->max = src->max > dst->max ? src->max : dst->max;
}

double bench_hist_percentile(const bench_hist_t *h, double p)
{
    if (h->n == 0 || !(p >= 0 && p <= 100))
        return NAN;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->n);
    rank = rank < 1 ? 1 : rank > h->n ? h->n : rank;
    uint64_t seen = 0;
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            double lo = (double)bench_hist_lowest(i);
            double hi = (double)bench_hist_highest(i);
            return fmin(fmax(lo + (hi - lo) / 2, (double)h->min),
                        (double)h->max); /* the midpoint, clamped */
        }
    }
    return (double)h->max; /* not reached: the counts sum to n */
}

double bench_hist_mean(const bench_hist_t *h)
{
    return h->n ? h->mean : NAN;
}

double bench_hist_stdev(const bench_hist_t *h)
{
    return h->n > 1 ? sqrt(h->m2 / (double)(h->n - 1)) : NAN;
}

double bench_hist_max(const bench_hist_t *h)
{
    return h->n ? (double)h->max : NAN;
}
