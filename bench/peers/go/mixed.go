package main

// mixed.go - short interactive tasks among long CPU-bound ones.  A
// record is the fixed unit of CPU work of stats.go (1000 splitmix64
// rounds).  A long task does records back to back, yielding
// (runtime.Gosched) after each.  A short task has a 10% duty cycle: in
// every 1 ms period it does records for 100 us (by the clock, from when
// it runs), then
// sleeps until the period's end; its wait is how late it runs after the
// period's start (sleep overshoot plus queueing behind the long tasks).
// records_per_s counts the records of both kinds in the window; wait_ns
// is the mean wait of the short tasks' wake-ups in the window.

import (
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	mixedPeriodNs = 1e6
	mixedBusyNs   = 1e5
)

var mixedSink uint64

type waitSum struct {
	ns, n float64
}

func runMixed(a *args) (pairs, error) {
	short := a.int("short", 4, 0, 1<<16)
	long := a.int("long", 2, 0, 1<<16)
	w, sec := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	if short+long == 0 {
		return nil, errUsage("short + long must be at least 1")
	}
	runtime.GOMAXPROCS(w)
	var f flags
	slots := make([]slot, short+long)
	waits := make([]waitSum, short)
	var wg sync.WaitGroup
	wg.Add(short + long)
	for i := 0; i < short; i++ {
		go shortTask(&f, &slots[i], &waits[i], &wg)
	}
	for i := short; i < short+long; i++ {
		go longTask(&f, &slots[i], &wg)
	}
	wall, work := window(&f, slots, sec)
	wg.Wait()
	var out pairs
	out.add("records_per_s", sum(work)/(wall/1e9))
	var ws waitSum
	for _, x := range waits {
		ws.ns, ws.n = ws.ns+x.ns, ws.n+x.n
	}
	if ws.n > 0 {
		out.add("wait_ns", ws.ns/ws.n)
	}
	out.add("workers", float64(w))
	return out, nil
}

func longTask(f *flags, s *slot, wg *sync.WaitGroup) {
	defer wg.Done()
	var c uint64
	x := uint64(1)
	for !f.stopped() {
		x = record(x)
		c++
		s.set(c)
		runtime.Gosched()
	}
	atomic.AddUint64(&mixedSink, x)
}

func shortTask(f *flags, s *slot, ws *waitSum, wg *sync.WaitGroup) {
	defer wg.Done()
	var c uint64
	x := uint64(2)
	period := now()
	for !f.stopped() {
		woke := now()
		if f.inWindow() {
			ws.ns += float64(woke - period)
			ws.n++
		}
		for now()-woke < mixedBusyNs {
			x = record(x)
			c++
			s.set(c)
		}
		period += mixedPeriodNs
		if d := period - now(); d > 0 {
			sleepNs(d)
		} else {
			period = now() // overran: start the next period now
		}
	}
	atomic.AddUint64(&mixedSink, x)
}
