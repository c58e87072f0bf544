package main

// stats.go - the figures derived from per-task counts and samples,
// defined as mqs-bench defines them (bench/stats.c, bench/yield.c):
// sample standard deviation (n-1), nearest-rank percentiles, fairness
// as min/mean, tasks with no work, and stdev/mean.

import (
	"math"
	"sort"
)

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

func mean(x []float64) float64 { return sum(x) / float64(len(x)) }

func stdev(x []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	m, ss := mean(x), 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

// addFairness appends the yield tester's fairness figures of work.
func addFairness(out *pairs, work []float64) {
	m, min, zero := mean(work), work[0], 0.0
	for _, w := range work {
		min = math.Min(min, w)
		if w == 0 {
			zero++
		}
	}
	fair, ndev := 0.0, 0.0
	if m > 0 {
		fair = min / m
		if len(work) > 1 {
			ndev = stdev(work) / m
		}
	}
	out.add("fairness_min_over_mean", fair)
	out.add("zero_work_tasks", zero)
	out.add("norm_dev", ndev)
}

// percentile: nearest rank of sorted x, p in (0, 1].
func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

// addLatency appends the wake experiment's distribution keys.
func addLatency(out *pairs, x []float64) {
	sort.Float64s(x)
	for _, q := range []struct {
		key string
		p   float64
	}{{"p50_ns", .50}, {"p90_ns", .90}, {"p99_ns", .99}, {"p999_ns", .999}} {
		out.add(q.key, percentile(x, q.p))
	}
	out.add("max_ns", x[len(x)-1])
	out.add("mean_ns", mean(x))
	if len(x) > 1 {
		out.add("stdev_ns", stdev(x))
	}
	out.add("samples", float64(len(x)))
}
