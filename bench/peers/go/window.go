package main

// window.go - the measurement window shared by the time-based
// experiments, the same as mqs-bench's: every task counts its own events
// in a padded slot; the main goroutine lets them start, settles, takes
// a snapshot of all counters, sleeps `seconds`, takes another and
// raises stop.  Only events between the snapshots count, so start-up
// and the stragglers that see stop late stay out of the figure.

import (
	"math"
	"sync/atomic"
)

const settleMaxNs = 20e6 // 20 ms for every task to reach its loop

// slot is one task's counter, alone on its cache line; written only by
// that task (atomically, so the snapshot reads a whole value).
type slot struct {
	n uint64
	_ [56]byte
}

func (s *slot) set(v uint64) { atomic.StoreUint64(&s.n, v) }

// flags are read by every task and written by the main goroutine.
// open is set between the two snapshots, for experiments that record
// samples rather than count (wake, mixed).
type flags struct {
	start, open, stop int32
	_                 [52]byte
}

func (f *flags) started() bool  { return atomic.LoadInt32(&f.start) != 0 }
func (f *flags) stopped() bool  { return atomic.LoadInt32(&f.stop) != 0 }
func (f *flags) inWindow() bool { return atomic.LoadInt32(&f.open) != 0 }

// window runs the timed part over slots; it returns the wall time of the
// window and each slot's count within it.  The caller starts the tasks
// before and waits for them after (they exit on f.stopped()).
func window(f *flags, slots []slot, seconds float64) (wallNs float64, work []float64) {
	win := seconds * 1e9
	atomic.StoreInt32(&f.start, 1)
	sleepNs(int64(math.Min(win/10, settleMaxNs)))
	t0, c0 := snapshot(slots)
	atomic.StoreInt32(&f.open, 1)
	sleepNs(int64(win))
	atomic.StoreInt32(&f.open, 0)
	t1, c1 := snapshot(slots)
	atomic.StoreInt32(&f.stop, 1)
	work = make([]float64, len(slots))
	for i := range slots {
		work[i] = float64(c1[i] - c0[i])
	}
	return float64(t1 - t0), work
}

// snapshot reads every counter; the time is the snapshot's midpoint.
func snapshot(slots []slot) (int64, []uint64) {
	a := now()
	c := make([]uint64, len(slots))
	for i := range slots {
		c[i] = atomic.LoadUint64(&slots[i].n)
	}
	return a + (now()-a)/2, c
}
