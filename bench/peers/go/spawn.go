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
	"bufio"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

func runSpawn(a *args) (pairs, error) {
	if live := a.int("live", 0, 0, 1<<30); live > 0 {
		return runSpawnLive(a, live)
	}
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

// Live mode (live=N): N goroutines alive at once, all blocked on one
// channel, as mqs-bench spawn --live holds N tasks.  ns_per_task = the
// spawn loop's wall time / N (each goroutine runs until it blocks: with
// GOMAXPROCS=1 the spawner runs on and the goroutines run when it
// waits for them); rss_bytes_per_task = (peak RSS with all N blocked -
// peak RSS before) / N; page_table_bytes_per_task from VmPTE the same
// way; mappings = lines of /proc/self/maps while all are alive.
func runSpawnLive(a *args, n int) (pairs, error) {
	w, _ := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	runtime.GOMAXPROCS(w)
	rssBefore, pteBefore := peakRSSKiB(), statusKiB("VmPTE:")
	var arrived, done sync.WaitGroup
	gate := make(chan struct{})
	arrived.Add(n)
	done.Add(n)
	t0 := now()
	for i := 0; i < n; i++ {
		go func() {
			arrived.Done()
			<-gate
			done.Done()
		}()
	}
	ns := float64(now()-t0) / float64(n)
	arrived.Wait()
	rssAlive, pteAlive, maps := peakRSSKiB(), statusKiB("VmPTE:"), countMaps()
	close(gate)
	done.Wait()
	var out pairs
	out.add("ns_per_task", ns)
	out.add("rss_bytes_per_task", float64(rssAlive-rssBefore)*1024/float64(n))
	if pteBefore >= 0 && pteAlive >= 0 {
		out.add("page_table_bytes_per_task", float64(pteAlive-pteBefore)*1024/float64(n))
	}
	out.add("mappings", float64(maps))
	out.add("peak_rss_kib", float64(rssAlive))
	out.add("tasks_created", float64(n))
	out.add("workers", float64(w))
	return out, nil
}

func peakRSSKiB() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss
}

// statusKiB reads one "Key: N kB" line of /proc/self/status; -1 if absent.
func statusKiB(key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, key) {
			rest := line[len(key):]
			var v int64
			for _, c := range strings.TrimSpace(rest) {
				if c < '0' || c > '9' {
					break
				}
				v = v*10 + int64(c-'0')
			}
			return v
		}
	}
	return -1
}

func countMaps() int64 {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return -1
	}
	return int64(strings.Count(string(b), "\n"))
}
