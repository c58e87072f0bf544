package main

// mixed.go - short tasks among long CPU-bound ones, the workload of
// `mqs-bench mixed` (bench/mixed.c).  A record allocates 2 KiB, writes
// every word, reads one back and drops it (Go: make + the garbage
// collector stand for malloc/free; the buffer is kept in the task's
// holder so that escape analysis cannot put it on the stack).  A long
// task makes records back to back with no scheduling point, as on the
// mqs and kernel rows: Go preempts a goroutine asynchronously when its
// time slice is spent, as mqs and the kernel preempt theirs.  A
// short task makes burst_records records (1 ms of records as mqs-bench
// calibrated it on this machine and passes in), then sleeps 9 ms; the
// short tasks' first bursts are staggered over the 10 ms period (task i
// of S first sleeps i x 10 ms / S).  records_per_s counts the records of
// both kinds in the window; short_min, short_mean, long_min, long_mean
// and starved are the per-task figures of bench/mixed.c.  wait_ns
// (runnable-not-running time summed over the tasks) is left out: the Go
// runtime does not expose it per goroutine.

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	mixedWords    = 2048 / 8
	mixedPeriodNs = 10e6
	mixedBurstNs  = 1e6
)

var mixedSink uint64

// mixedTask is one task's state: its buffer holder and running seed.
type mixedTask struct {
	keep []uint64
	seed uint64
}

// record: allocate, write all 2 KiB, read a word back.
func (t *mixedTask) record() {
	b := make([]uint64, mixedWords)
	t.keep = b
	for i := range b {
		b[i] = t.seed + uint64(i)
	}
	t.seed += b[t.seed%mixedWords]
}

func runMixed(a *args) (pairs, error) {
	short := a.int("short", 4, 0, 1<<16)
	long := a.int("long", 2, 0, 1<<16)
	burst := a.int("burst_records", 0, 0, 1<<30)
	w, sec := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	if short+long == 0 {
		return nil, errUsage("short + long must be at least 1")
	}
	if burst < 1 {
		return nil, errUsage("burst_records=N (N >= 1, records in 1 ms) is required")
	}
	runtime.GOMAXPROCS(w)
	var f flags
	slots := make([]slot, short+long)
	var wg sync.WaitGroup
	wg.Add(short + long)
	for i := 0; i < short+long; i++ {
		t := &mixedTask{seed: uint64(i)}
		if i < short {
			phase := int64(mixedPeriodNs) * int64(i) / int64(short)
			go mixedShort(&f, &slots[i], t, burst, phase, &wg)
		} else {
			go mixedLong(&f, &slots[i], t, &wg)
		}
	}
	wall, work := window(&f, slots, sec)
	wg.Wait()
	var out pairs
	out.add("records_per_s", sum(work)/(wall/1e9))
	mixedKind(&out, "short", work[:short], wall)
	mixedKind(&out, "long", work[short:], wall)
	starved := 0.0
	for _, n := range work {
		if n == 0 {
			starved++
		}
	}
	out.add("starved", starved)
	out.add("workers", float64(w))
	return out, nil
}

// mixedKind adds <kind>_min and <kind>_mean: records/s of the slowest and
// of the mean task of a kind; nothing for a kind without tasks.
func mixedKind(out *pairs, kind string, work []float64, wall float64) {
	if len(work) == 0 {
		return
	}
	min := work[0]
	for _, n := range work {
		min = math.Min(min, n)
	}
	out.add(kind+"_min", min/(wall/1e9))
	out.add(kind+"_mean", mean(work)/(wall/1e9))
}

func mixedWaitStart(f *flags) {
	for !f.started() {
		sleepNs(1e6)
	}
}

func mixedLong(f *flags, s *slot, t *mixedTask, wg *sync.WaitGroup) {
	defer wg.Done()
	mixedWaitStart(f)
	var c uint64
	for !f.stopped() {
		t.record()
		c++
		s.set(c)
	}
	atomic.AddUint64(&mixedSink, t.seed)
}

func mixedShort(f *flags, s *slot, t *mixedTask, burst int, phase int64,
	wg *sync.WaitGroup) {
	defer wg.Done()
	mixedWaitStart(f)
	sleepNs(phase)
	var c uint64
	for !f.stopped() {
		for i := 0; i < burst; i++ {
			t.record()
			c++
			s.set(c)
		}
		sleepNs(mixedPeriodNs - mixedBurstNs)
	}
	atomic.AddUint64(&mixedSink, t.seed)
}
