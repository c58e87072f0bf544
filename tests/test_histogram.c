/*
 * test_histogram.c - the log-linear histogram behind `mqs-bench wake`
 * (bench/histogram.c), against known inputs: the bucket layout (exact
 * below 2^P, contiguous and of bounded relative width above), exact
 * moments, nearest-rank percentiles compared with the sorted-array
 * definition (nearest_rank, below), and merging.
 */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "helpers.h"

#include "../bench/common.c"
#include "../bench/report_machine.c"
#include "../bench/histogram.c"
#include "../bench/output.c"
#include "../bench/peer.c"
#include "../bench/plot.c"
#include "../bench/stats.c"

/* The nearest-rank percentile p of a sorted array: the sample at rank
 * ceil(p/100 n), rank 1 for p = 0; NAN when n == 0 or p is outside
 * 0..100. */
static double nearest_rank(const double *sorted, size_t n, double p)
{
    if (n == 0 || !(p >= 0 && p <= 100))
        return NAN;
    double r = ceil(p / 100.0 * (double)n);
    size_t rank = r < 1 ? 1 : (size_t)r;
    return sorted[(rank > n ? n : rank) - 1];
}

TEST(nearest_rank_oracle)
{
    const double x[] = {15, 20, 35, 40, 50};
    CHECK_NEAR(nearest_rank(x, 5, 0), 15, 0);
    CHECK_NEAR(nearest_rank(x, 5, 5), 15, 0);
    CHECK_NEAR(nearest_rank(x, 5, 30), 20, 0);
    CHECK_NEAR(nearest_rank(x, 5, 40), 20, 0);
    CHECK_NEAR(nearest_rank(x, 5, 50), 35, 0);
    CHECK_NEAR(nearest_rank(x, 5, 100), 50, 0);
    CHECK(isnan(nearest_rank(x, 5, 101)));
    CHECK(isnan(nearest_rank(x, 0, 50)));
}

TEST(hist_exact_below_precision)
{
    for (uint64_t v = 0; v < 2 * BENCH_HIST_SUB; v++) {
        CHECK_EQ(bench_hist_index(v), v);
        CHECK_EQ(bench_hist_lowest(v), v);
        CHECK_EQ(bench_hist_highest(v), v);
    }
    CHECK_EQ(bench_hist_index(2 * BENCH_HIST_SUB), 2 * BENCH_HIST_SUB);
    CHECK_EQ(bench_hist_index(2 * BENCH_HIST_SUB + 1), 2 * BENCH_HIST_SUB);
    CHECK_EQ(bench_hist_index(UINT64_MAX), BENCH_HIST_BUCKETS - 1);
    CHECK_EQ(bench_hist_highest(BENCH_HIST_BUCKETS - 1), UINT64_MAX);
}

/* Every bucket starts one past the previous one's end, holds exactly the
 * values that map to it, and is narrower than 2^-P of its lowest value. */
TEST(hist_buckets_contiguous_bounded)
{
    for (size_t i = 1; i < BENCH_HIST_BUCKETS; i++) {
        uint64_t lo = bench_hist_lowest(i), hi = bench_hist_highest(i);
        CHECK_EQ(lo, bench_hist_highest(i - 1) + 1);
        CHECK_EQ(bench_hist_index(lo), i);
        CHECK_EQ(bench_hist_index(hi), i);
        CHECK_LE((double)(hi - lo), (double)lo / BENCH_HIST_SUB);
    }
}

TEST(hist_moments_exact)
{
    bench_hist_t h;
    CHECK_EQ(bench_hist_init(&h), 0);
    CHECK(isnan(bench_hist_mean(&h)));
    CHECK(isnan(bench_hist_percentile(&h, 50)));
    CHECK(isnan(bench_hist_max(&h)));
    static const uint64_t v[] = {2, 4, 4, 4, 5, 5, 7, 9};
    for (size_t i = 0; i < 8; i++)
        bench_hist_record(&h, v[i]);
    CHECK_EQ(h.n, 8);
    CHECK_NEAR(bench_hist_mean(&h), 5.0, 1e-12);
    CHECK_NEAR(bench_hist_stdev(&h), sqrt(32.0 / 7.0), 1e-12);
    CHECK_EQ(h.min, 2);
    CHECK_NEAR(bench_hist_max(&h), 9, 0);
    /* Exact range: percentiles are samples, nearest rank. */
    CHECK_NEAR(bench_hist_percentile(&h, 0), 2, 0);
    CHECK_NEAR(bench_hist_percentile(&h, 50), 4, 0);
    CHECK_NEAR(bench_hist_percentile(&h, 62.5), 5, 0);
    CHECK_NEAR(bench_hist_percentile(&h, 63), 5, 0);
    CHECK_NEAR(bench_hist_percentile(&h, 90), 9, 0);
    CHECK_NEAR(bench_hist_percentile(&h, 100), 9, 0);
    CHECK(isnan(bench_hist_percentile(&h, 101)));
    CHECK(isnan(bench_hist_percentile(&h, -1)));
    bench_hist_reset(&h);
    CHECK_EQ(h.n, 0);
    CHECK(isnan(bench_hist_mean(&h)));
    bench_hist_free(&h);
}

/* Log-uniform random samples over 1 ns .. 10 s: every percentile within
 * half a bucket (2^-(P+1) relative) of the sorted-array nearest rank. */
TEST(hist_percentiles_match_sorted)
{
    enum { N = 20000 };
    static double x[N];
    bench_hist_t h;
    CHECK_EQ(bench_hist_init(&h), 0);
    uint64_t seed = 42;
    for (int i = 0; i < N; i++) {
        double u = (double)(rng_next(&seed) >> 11) / 9007199254740992.0;
        uint64_t v = (uint64_t)exp(u * log(1e10));
        x[i] = (double)v;
        bench_hist_record(&h, v);
    }
    bench_sort(x, N);
    static const double ps[] = {0, 1, 10, 50, 90, 99, 99.9, 99.99, 100};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        double want = nearest_rank(x, N, ps[k]);
        double got = bench_hist_percentile(&h, ps[k]);
        CHECK_NEAR(got, want, want / (2.0 * BENCH_HIST_SUB) + 0.5);
    }
    CHECK_NEAR(bench_hist_mean(&h), bench_mean(x, N), 1e-9 * bench_mean(x, N));
    CHECK_NEAR(bench_hist_stdev(&h), bench_stdev(x, N),
               1e-9 * bench_stdev(x, N));
    bench_hist_free(&h);
}

/* Merging two halves gives the histogram of the whole. */
TEST(hist_merge_equals_whole)
{
    bench_hist_t a, b, all;
    CHECK_EQ(bench_hist_init(&a), 0);
    CHECK_EQ(bench_hist_init(&b), 0);
    CHECK_EQ(bench_hist_init(&all), 0);
    uint64_t seed = 7;
    for (int i = 0; i < 5000; i++) {
        uint64_t v = rng_next(&seed) % (i < 3000 ? 1000 : 1000000);
        bench_hist_record(i % 3 ? &a : &b, v);
        bench_hist_record(&all, v);
    }
    bench_hist_t empty;
    CHECK_EQ(bench_hist_init(&empty), 0);
    bench_hist_merge(&a, &empty); /* a no-op */
    bench_hist_merge(&a, &b);
    CHECK_EQ(a.n, all.n);
    CHECK_EQ(a.min, all.min);
    CHECK_EQ(a.max, all.max);
    for (size_t i = 0; i < BENCH_HIST_BUCKETS; i++)
        if (a.counts[i] != all.counts[i])
            CHECK_EQ(a.counts[i], all.counts[i]);
    CHECK_NEAR(bench_hist_mean(&a), bench_hist_mean(&all), 1e-6);
    CHECK_NEAR(bench_hist_stdev(&a), bench_hist_stdev(&all), 1e-6);
    CHECK_NEAR(bench_hist_percentile(&a, 99), bench_hist_percentile(&all, 99),
               0);
    /* Merging into an empty one copies. */
    bench_hist_merge(&empty, &b);
    CHECK_EQ(empty.n, b.n);
    CHECK_NEAR(bench_hist_mean(&empty), bench_hist_mean(&b), 1e-9);
    bench_hist_free(&a);
    bench_hist_free(&b);
    bench_hist_free(&all);
    bench_hist_free(&empty);
}
