package main

// yield.go - N goroutines loop on runtime.Gosched, each counting its
// yields in its own slot; ns per yield = wall x min(N, GOMAXPROCS) /
// total yields, fairness from the per-goroutine counts.  The same loop
// as mqs-bench's policy rows, with Gosched for mqs_yield, except where
// the count lives: those rows (and the fiber peer) count in the task's
// own stack frame, which a switch touches anyway; a Go variable whose
// address the window reads escapes to the heap (and would share lines
// between goroutines), so the count stays in the slot, one more cache
// line per turn (it shows only with thousands of goroutines).

import (
	"runtime"
	"sync"
)

func runYield(a *args) (pairs, error) {
	n := a.int("tasks", 1, 1, 1<<22)
	w, sec := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	runtime.GOMAXPROCS(w)
	var f flags
	slots := make([]slot, n)
	var wg sync.WaitGroup
	for i := range slots {
		wg.Add(1)
		go yielder(&f, &slots[i], &wg)
	}
	wall, work := window(&f, slots, sec)
	wg.Wait()
	total := sum(work)
	if total == 0 {
		return nil, errorf("no yields counted")
	}
	busy := n
	if w < n {
		busy = w
	}
	var out pairs
	out.add("ns_per_yield", wall*float64(busy)/total)
	addFairness(&out, work)
	out.add("workers", float64(w))
	return out, nil
}

func yielder(f *flags, s *slot, wg *sync.WaitGroup) {
	defer wg.Done()
	for !f.started() {
		runtime.Gosched()
	}
	var c uint64
	for !f.stopped() {
		runtime.Gosched()
		c++
		s.set(c)
	}
}
