package main

// ring.go - lmbench lat_ctx on goroutines: N goroutines in a ring pass
// one token; each, on receiving it, sums its own K KiB array (read
// every 8-byte word) and passes it on.  hop_ns = window wall / hops
// (touching included); touch_ns = summing one of the N arrays alone, in
// the same round-robin order and so with the same cache footprint,
// without switching.  Channels have capacity 1 (a send to a waiting
// receiver hands over directly, as unbuffered would; the capacity lets a
// ring of one task pass the token to itself).

import (
	"runtime"
	"sync"
	"sync/atomic"
)

var ringSink uint64 // keeps the sums alive

func runRing(a *args) (pairs, error) {
	n := a.int("tasks", 2, 1, 1<<20)
	kib := a.int("size_kib", 0, 0, 1<<20)
	w, sec := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	runtime.GOMAXPROCS(w)
	bufs := make([][]uint64, n)
	ch := make([]chan int, n)
	for i := range bufs {
		bufs[i] = make([]uint64, kib*1024/8)
		ch[i] = make(chan int, 1)
	}
	var f flags
	slots := make([]slot, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go ringTask(&f, &slots[i], bufs[i], ch[i], ch[(i+1)%n], &wg)
	}
	ch[0] <- 0
	wall, work := window(&f, slots, sec)
	wg.Wait()
	hops := sum(work)
	if hops == 0 {
		return nil, errorf("no hops counted")
	}
	var out pairs
	out.add("hop_ns", wall/hops)
	out.add("touch_ns", touchNs(bufs, sec/4))
	out.add("workers", float64(w))
	return out, nil
}

func sumWords(b []uint64) uint64 {
	var s uint64
	for _, v := range b {
		s += v
	}
	return s
}

// ringTask: receive, touch, count, pass on; a negative token is the
// stop signal, passed once round the ring.
func ringTask(f *flags, s *slot, buf []uint64, in <-chan int, out chan<- int, wg *sync.WaitGroup) {
	defer wg.Done()
	var c, acc uint64
	for {
		t := <-in
		if t < 0 {
			out <- t
			break
		}
		acc += sumWords(buf)
		if f.stopped() {
			out <- -1
			break
		}
		c++
		s.set(c)
		out <- t + 1
	}
	atomic.AddUint64(&ringSink, acc)
}

// touchNs: ns to sum one array, over passes of all arrays in ring order
// for at least minSec (at least one pass).
func touchNs(bufs [][]uint64, minSec float64) float64 {
	if len(bufs[0]) == 0 {
		return 0
	}
	var acc uint64
	passes := 0
	t0 := now()
	for passes == 0 || float64(now()-t0) < minSec*1e9 {
		for _, b := range bufs {
			acc += sumWords(b)
		}
		passes++
	}
	ringSink += acc
	return float64(now()-t0) / float64(passes*len(bufs))
}
