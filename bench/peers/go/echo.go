package main

// echo.go - an echo server over loopback TCP, as bench/echo.c: N
// connections (127.0.0.1, the net package, Nagle off: its default); per
// connection a server goroutine that reads exactly B bytes and writes
// them back, until the client closes, and a client goroutine in a closed
// loop: write B bytes, read the B bytes back and check them (as
// bench/echo.c's client does), one request.  The latency of a request
// runs from just before the write to the last byte read.
//
// Two modes.  With listen_fd=L ready_fd=R (what mqs-bench passes) it is
// the server only: it accepts N connections on the inherited listening
// socket L, writes one byte to R when all are in, echoes until each
// closes and prints served=N workers=W; mqs-bench's own client (a
// forked process with one epoll loop, the one every C row is measured
// with) dials, counts and times the requests, so the Go row differs
// from the others in the server alone.  Without them (standalone use)
// it is its own client and server: both sides goroutines of this one
// process on the same GOMAXPROCS workers, with no second process to
// switch to, so those figures are not comparable with mqs-bench's rows.
//
// Counted in the window as the other time-based experiments: each client
// counts its requests in its own slot, and requests_per_s is the
// requests completed between the window's snapshots / the window; each
// client keeps its own latency samples of the requests completed while
// the window is open (no shared lock per request) and they are merged
// afterwards for the nearest-rank percentiles.  At stop each client
// finishes its request in flight and closes its end; its server reads
// EOF at a request boundary and exits, so any I/O error is a failure.
//
// Descriptors: 2 per connection (both ends are in this process).  Go
// raises the soft RLIMIT_NOFILE to the hard limit at start (Go >= 1.19);
// a run that needs more than that exits 3 rather than failing halfway
// through the connects.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"sync"
	"syscall"
)

const echoSpareFds = 32 // stdio, the listener, the runtime's epoll and pipes

// echoRun holds the first I/O error; taken only on the error path.
type echoRun struct {
	mu  sync.Mutex
	err error
}

func (r *echoRun) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

func runEcho(a *args) (pairs, error) {
	conns := a.int("connections", 1, 1, 100000)
	size := a.int("size", 64, 1, 1<<20)
	lfd := a.int("listen_fd", -1, 0, 1<<20)
	rfd := a.int("ready_fd", -1, 0, 1<<20)
	w, sec := a.common()
	if err := a.done(); err != nil {
		return nil, err
	}
	if (lfd < 0) != (rfd < 0) {
		return nil, errUsage("listen_fd and ready_fd go together")
	}
	if lfd >= 0 {
		return echoServe(lfd, rfd, conns, size, w)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil, err
	}
	if need := uint64(2*conns + echoSpareFds); need > lim.Cur {
		return nil, errUnsupported(fmt.Sprintf(
			"needs %d descriptors, the limit is %d", need, lim.Cur))
	}
	runtime.GOMAXPROCS(w)
	pairsOf, err := chatConns(conns) // [0] client end, [1] server end
	if err != nil {
		return nil, err
	}
	var f flags
	var r echoRun
	var wg sync.WaitGroup
	slots := make([]slot, conns)
	samples := make([][]float64, conns)
	wg.Add(2 * conns)
	for i, p := range pairsOf {
		go echoServer(p[1], size, &r, &wg)
		go echoClient(&f, p[0], size, &slots[i], &samples[i], &r, &wg)
	}
	wall, work := window(&f, slots, sec)
	wg.Wait()
	if r.err != nil {
		return nil, fmt.Errorf("echo over tcp: %v", r.err)
	}
	var all []float64
	for _, s := range samples {
		all = append(all, s...)
	}
	var out pairs
	out.add("requests_per_s", sum(work)/(wall/1e9))
	if len(all) > 0 { // none: left out, as a key the run could not measure
		sort.Float64s(all)
		out.add("p50_ns", percentile(all, .50))
		out.add("p99_ns", percentile(all, .99))
		out.add("p999_ns", percentile(all, .999))
	}
	out.add("samples", float64(len(all)))
	out.add("workers", float64(w))
	return out, nil
}

// echoServer echoes whole requests until the client closes its end
// (io.EOF at a request boundary); anything else is a failure.
func echoServer(c net.Conn, size int, r *echoRun, wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.Close()
	buf := make([]byte, size)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			if err != io.EOF {
				r.fail(fmt.Errorf("server read: %v", err))
			}
			return
		}
		if _, err := c.Write(buf); err != nil {
			r.fail(fmt.Errorf("server write: %v", err))
			return
		}
	}
}

// echoClient runs requests back to back until stop, then closes its end
// between requests so that its server sees a clean EOF.
func echoClient(f *flags, c net.Conn, size int, s *slot, out *[]float64,
	r *echoRun, wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.Close()
	req := make([]byte, size)
	for i := range req {
		req[i] = byte('a' + i%26) // bench/echo.c's pattern
	}
	resp := make([]byte, size) // a buffer of its own: the reply is copied
	var n uint64
	for !f.stopped() {
		t := now()
		if _, err := c.Write(req); err != nil {
			r.fail(fmt.Errorf("client write: %v", err))
			return
		}
		if _, err := io.ReadFull(c, resp); err != nil {
			r.fail(fmt.Errorf("client read: %v", err))
			return
		}
		d := now() - t
		if !bytes.Equal(resp, req) { // echo.c's client checks every byte
			r.fail(fmt.Errorf("client read: the reply differs from the request"))
			return
		}
		n++
		s.set(n)
		if f.inWindow() {
			*out = append(*out, float64(d))
		}
	}
}

// echoServe is the server-only mode: accept conns connections on the
// inherited listener lfd, say so on rfd, echo until every client
// closes.
func echoServe(lfd, rfd, conns, size, w int) (pairs, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil, err
	}
	if need := uint64(conns + echoSpareFds); need > lim.Cur {
		return nil, errUnsupported(fmt.Sprintf(
			"needs %d descriptors, the limit is %d", need, lim.Cur))
	}
	runtime.GOMAXPROCS(w)
	lf, rf := os.NewFile(uintptr(lfd), "listener"), os.NewFile(uintptr(rfd), "ready")
	ln, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		return nil, fmt.Errorf("listen_fd=%d: %v", lfd, err)
	}
	defer ln.Close()
	var r echoRun
	var wg sync.WaitGroup
	wg.Add(conns)
	for i := 0; i < conns; i++ {
		c, err := ln.Accept() // net sets TCP_NODELAY by default
		if err != nil {
			return nil, fmt.Errorf("accept: %v", err)
		}
		go echoServer(c, size, &r, &wg)
	}
	_, err = rf.Write([]byte{'r'})
	rf.Close()
	if err != nil {
		return nil, fmt.Errorf("ready_fd=%d: %v", rfd, err)
	}
	wg.Wait()
	if r.err != nil {
		return nil, fmt.Errorf("echo over tcp: %v", r.err)
	}
	var out pairs
	out.add("served", float64(conns))
	out.add("workers", float64(w))
	return out, nil
}
