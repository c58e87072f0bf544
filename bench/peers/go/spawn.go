package main

// spawn.go - the classic skynet benchmark, as its Go version is written:
// the root goroutine spawns `fanout` children, each responsible for
// 1/fanout of the leaf ids below it, down to leaves that send their id
// up an unbuffered channel; every inner node sums its children's
// answers and sends the sum to its parent.  tasks must be a power of
// fanout.  ns_per_task = wall / every goroutine created (inner nodes
// and root included, tasks_created); peak_rss_kib from getrusage.  Not
// time-based: seconds is accepted and ignored.

import (
	"runtime"
	"syscall"
)

func runSpawn(a *args) (pairs, error) {
	t := a.int("tasks", 1000000, 1, 1<<30)
	fan := a.int("fanout", 10, 2, 1<<20)
	w, _ := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	created := 0
	for n := t; ; n /= fan {
		created += n
		if n == 1 {
			break
		}
		if n%fan != 0 {
			return nil, errUsage("tasks must be a power of fanout")
		}
	}
	runtime.GOMAXPROCS(w)
	c := make(chan uint64)
	t0 := now()
	go skynet(c, 0, uint64(t), uint64(fan))
	got := <-c
	wall := float64(now() - t0)
	if want := uint64(t) * uint64(t-1) / 2; got != want {
		return nil, errorf("sum %d, want %d", got, want)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil, err
	}
	var out pairs
	out.add("ns_per_task", wall/float64(created))
	out.add("peak_rss_kib", float64(ru.Maxrss))
	out.add("sum", float64(got))
	out.add("tasks_created", float64(created))
	out.add("workers", float64(w))
	return out, nil
}

func skynet(c chan<- uint64, num, size, div uint64) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan uint64)
	for i := uint64(0); i < div; i++ {
		go skynet(rc, num+i*(size/div), size/div, div)
	}
	var s uint64
	for i := uint64(0); i < div; i++ {
		s += <-rc
	}
	c <- s
}
