package main

// pipe.go - lmbench's pipe latency and bandwidth on channels.
//
// latency: two goroutines bounce one byte over a pair of unbuffered
// channels; rtt_ns = window wall / round trips.  placement=same runs
// them with GOMAXPROCS=1 (one worker).  placement=cross runs GOMAXPROCS=2
// and locks each goroutine to its own OS thread (runtime.LockOSThread):
// Go cannot pin a goroutine to a P, and without the lock its scheduler
// would run both on one P (the woken receiver goes to the sender's
// runnext), which would be the same-worker figure again.
//
// bandwidth: a producer copies msg_kib KiB into a free buffer and sends
// it; the consumer copies it out into its own buffer and returns the
// buffer (two buffers circulate).  Two copies per message, as a pipe's
// write and read make.  mb_per_s = MiB copied out / window seconds.
// Without placement= it runs on the workers given; with it, as latency.

import (
	"runtime"
	"sync"
)

func runPipe(a *args) (pairs, error) {
	mode := a.choice("mode", "latency", "latency", "bandwidth")
	_, given := a.kv["placement"]
	place := a.choice("placement", "same", "same", "cross")
	kib := a.int("msg_kib", 64, 1, 1<<20)
	w, sec := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	lock := false
	if mode == "latency" || given {
		w, lock = 1, place == "cross"
		if lock {
			w = 2
		}
	}
	runtime.GOMAXPROCS(w)
	var out pairs
	if mode == "latency" {
		out.add("rtt_ns", pipeLatency(sec, lock))
	} else {
		out.add("mb_per_s", pipeBandwidth(sec, lock, kib*1024))
	}
	out.add("workers", float64(w))
	return out, nil
}

func pipeLatency(sec float64, lock bool) float64 {
	ping, pong := make(chan byte), make(chan byte)
	var f flags
	slots := make([]slot, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the echo side
		defer wg.Done()
		lockThread(lock)
		for b := range ping {
			pong <- b
		}
	}()
	go func() { // the timed side
		defer wg.Done()
		lockThread(lock)
		var c uint64
		b := byte(1)
		for !f.stopped() {
			ping <- b
			b = <-pong
			c++
			slots[0].set(c)
		}
		close(ping)
	}()
	wall, work := window(&f, slots, sec)
	wg.Wait()
	return wall / work[0]
}

func lockThread(lock bool) {
	if lock {
		runtime.LockOSThread()
	}
}

func pipeBandwidth(sec float64, lock bool, size int) float64 {
	free, full := make(chan []byte, 2), make(chan []byte, 2)
	free <- make([]byte, size)
	free <- make([]byte, size)
	var f flags
	slots := make([]slot, 1)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // producer
		defer wg.Done()
		lockThread(lock)
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(i)
		}
		for b := range free {
			if f.stopped() {
				break
			}
			copy(b, src)
			full <- b
		}
		close(full)
	}()
	go func() { // consumer
		defer wg.Done()
		lockThread(lock)
		dst := make([]byte, size)
		var c uint64
		for b := range full {
			copy(dst, b)
			c++
			slots[0].set(c)
			free <- b
		}
	}()
	wall, work := window(&f, slots, sec)
	wg.Wait()
	return work[0] * float64(size) / (1 << 20) / (wall / 1e9)
}
