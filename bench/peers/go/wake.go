package main

// wake.go - latt's wake-up latency on goroutines, as bench/wake.c: one
// server goroutine stamps the time and sends the stamp to the next
// client, from where it left off, whose channel is empty (capacity 1, so
// the server never waits; a client that has not taken its last stamp is
// not waiting and is passed over), then sleeps a pseudo-random 0..200 us
// (splitmix64, as wake.c draws it).  The client records now - stamp: the delay from wake-up
// to running.  K hog goroutines meanwhile compute, competing with the
// clients for the workers: by default a counter loop that checks only the
// stop flag, which the Go runtime preempts by itself (asynchronous
// preemption, 10 ms slices); with hog_yield_us=U > 0 they spin on the
// clock for U us and then yield (runtime.Gosched).  Samples are recorded
// only inside the window.
//
// class=rt exits 3: Go has no realtime class (no goroutine priority).

import (
	"runtime"
	"sync"
	"sync/atomic"
)

const wakeGapMaxNs = 200000

var hogSink uint64 // the hogs' counts, so that their loops compute

func runWake(a *args) (pairs, error) {
	clients := a.int("clients", 4, 1, 1<<16)
	hogs := a.int("hogs", 0, 0, 1<<16)
	yieldUs := a.int("hog_yield_us", 0, 0, 1e7)
	class := a.choice("class", "normal", "normal", "rt")
	w, sec := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	if class == "rt" {
		return nil, errUnsupported("Go has no realtime class")
	}
	runtime.GOMAXPROCS(w)
	var f flags
	var wg sync.WaitGroup
	for i := 0; i < hogs; i++ {
		wg.Add(1)
		go hog(&f, int64(yieldUs)*1000, &wg)
	}
	chans := make([]chan int64, clients)
	samples := make([][]float64, clients)
	for i := range chans {
		chans[i] = make(chan int64, 1)
		wg.Add(1)
		go wakeClient(&f, chans[i], &samples[i], &wg)
	}
	wg.Add(1)
	go wakeServer(&f, chans, &wg)
	window(&f, nil, sec)
	wg.Wait()
	var all []float64
	for _, s := range samples {
		all = append(all, s...)
	}
	if len(all) == 0 {
		return nil, errorf("no wake-ups recorded")
	}
	var out pairs
	addLatency(&out, all)
	out.add("workers", float64(w))
	return out, nil
}

// hog computes until stop: without pause (sliceNs 0), or sliceNs at a
// time, then yields.
func hog(f *flags, sliceNs int64, wg *sync.WaitGroup) {
	defer wg.Done()
	var n uint64
	for sliceNs == 0 && !f.stopped() {
		n++
	}
	atomic.AddUint64(&hogSink, n)
	for !f.stopped() {
		for t := now(); now()-t < sliceNs; {
		}
		runtime.Gosched()
	}
}

// wakeGap: the waker's pause, 0..200 us from splitmix64 as bench/wake.c
// draws it.
func wakeGap(x *uint64) int64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) % wakeGapMaxNs)
}

// wakeNext stamps and wakes the first client from next on whose channel
// is empty (it has taken its last stamp, so it is blocked or about to
// block), as bench/wake.c wakes only a waiting client; returns the new
// next.
func wakeNext(chans []chan int64, next int) int {
	for k := 0; k < len(chans); k++ {
		i := (next + k) % len(chans)
		select {
		case chans[i] <- now():
			return (i + 1) % len(chans)
		default:
		}
	}
	return next
}

func wakeServer(f *flags, chans []chan int64, wg *sync.WaitGroup) {
	defer wg.Done()
	x, next := uint64(1), 0
	for !f.stopped() {
		next = wakeNext(chans, next)
		sleepNs(wakeGap(&x))
	}
	for _, c := range chans {
		close(c)
	}
}

// wakeClient records the delay of every wake-up inside the window.
func wakeClient(f *flags, in <-chan int64, out *[]float64, wg *sync.WaitGroup) {
	defer wg.Done()
	for stamp := range in {
		d := now() - stamp
		if f.inWindow() {
			*out = append(*out, float64(d))
		}
	}
}
