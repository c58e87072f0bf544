package main

// wake.go - latt's wake-up latency on goroutines.  One server goroutine
// sleeps a pseudo-random 100..1000 us (a fixed xorshift sequence), then
// stamps the time and sends the stamp to the next client round-robin
// over the client's channel (capacity 1, so the server never waits for
// the client).  The client records now - stamp: the delay from wake-up
// to running.  K hog goroutines meanwhile spin for hog_slice_us each and
// then yield (runtime.Gosched), competing with the clients for the
// workers.  Samples are recorded only inside the window.
//
// class=rt exits 3: Go has no realtime class (no goroutine priority).

import (
	"runtime"
	"sync"
)

func runWake(a *args) (pairs, error) {
	clients := a.int("clients", 4, 1, 1<<16)
	hogs := a.int("hogs", 0, 0, 1<<16)
	slice := a.int("hog_slice_us", 1000, 1, 1e7)
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
		go hog(&f, int64(slice)*1000, &wg)
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

// hog spins for sliceNs at a time, then yields, until stop.
func hog(f *flags, sliceNs int64, wg *sync.WaitGroup) {
	defer wg.Done()
	for !f.stopped() {
		for t := now(); now()-t < sliceNs; {
		}
		runtime.Gosched()
	}
}

func wakeServer(f *flags, chans []chan int64, wg *sync.WaitGroup) {
	defer wg.Done()
	x := uint64(88172645463325252)
	for i := 0; !f.stopped(); i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		sleepNs(int64(100e3 + x%900e3))
		select {
		case chans[i%len(chans)] <- now():
		default: // that client has not run since its last wake-up
		}
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
