// Command mqs-peer-go is the Go peer of mqs-bench: it runs one
// measurement of one experiment on goroutines and prints one line of
// key=value pairs (see bench/peers/PROTOCOL.md, the contract).
//
//	mqs-peer-go <experiment> key=value ...
//
// Design: one file per experiment, each reading its keys through args
// (which rejects unknown keys and bad values with exit 2) and returning
// the pairs to print.  Workers are GOMAXPROCS.  Only the standard library
// is used, so the build needs no network; cgo is not needed either
// (getrusage comes from package syscall).
//
// Where Go cannot do what the mqs workload does, the experiment says so
// in its file and exits 3 (no realtime class: wake class=rt).  Rejected:
// one long-running process serving every repeat -- one runtime per
// process is all Go offers, and a fresh process per measurement keeps
// the garbage of one run out of the next.
package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	exitUsage       = 2
	exitUnsupported = 3
)

type experiment struct {
	name string
	keys string // for --help
	run  func(a *args) (pairs, error)
}

var experiments = []experiment{
	{"yield", "tasks=N", runYield},
	{"ring", "tasks=N size_kib=K", runRing},
	{"pipe", "mode=latency|bandwidth placement=same|cross msg_kib=K", runPipe},
	{"wake", "clients=C hogs=K hog_yield_us=U class=normal|rt", runWake},
	{"mixed", "short=S long=L burst_records=N", runMixed},
	{"spawn", "tasks=T fanout=F", runSpawn},
	{"chat", "rooms=R users=U messages=M msg_bytes=B", runChat},
	{"echo", "connections=N size=B", runEcho},
}

// errUnsupported: the variant cannot be done faithfully here (exit 3).
type errUnsupported string

func (e errUnsupported) Error() string { return string(e) }

// errUsage: a bad argument (exit 2).
type errUsage string

func (e errUsage) Error() string { return string(e) }

func usage() {
	fmt.Print("usage: mqs-peer-go <experiment> key=value ...\n\n" +
		"Runs one measurement on goroutines and prints one line of key=value\n" +
		"pairs (bench/peers/PROTOCOL.md).  Every experiment takes workers=W\n" +
		"(GOMAXPROCS; 0 = every CPU) and seconds=S (length of the timed\n" +
		"window, time-based experiments).  Exit 0 ok, 2 bad arguments,\n" +
		"3 variant not supported, 1 failure.\n\nexperiments:\n")
	for _, e := range experiments {
		fmt.Printf("  %-6s %s\n", e.name, e.keys)
	}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "--help" || os.Args[1] == "-h" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(exitUsage)
		}
		return
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

func run(name string, argv []string) int {
	for _, e := range experiments {
		if e.name != name {
			continue
		}
		a, err := parseArgs(argv)
		var out pairs
		if err == nil {
			out, err = e.run(a)
		}
		return report(name, out, err)
	}
	fmt.Fprintf(os.Stderr, "mqs-peer-go: unknown experiment %q (try --help)\n", name)
	return exitUsage
}

func report(name string, out pairs, err error) int {
	switch err.(type) {
	case nil:
		fmt.Println(out.String())
		return 0
	case errUsage:
		fmt.Fprintf(os.Stderr, "mqs-peer-go %s: %v\n", name, err)
		return exitUsage
	case errUnsupported:
		fmt.Println(err) // the reason, into mqs-bench's note
		return exitUnsupported
	default:
		fmt.Fprintf(os.Stderr, "mqs-peer-go %s: %v\n", name, err)
		return 1
	}
}

// ---- arguments ---------------------------------------------------------

// args holds key=value arguments; each getter marks its key used, and
// done() rejects any key no getter asked for.
type args struct {
	kv   map[string]string
	used map[string]bool
	err  error
}

func parseArgs(argv []string) (*args, error) {
	a := &args{kv: map[string]string{}, used: map[string]bool{}}
	for _, s := range argv {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, errUsage(fmt.Sprintf("%q is not key=value", s))
		}
		if _, dup := a.kv[k]; dup {
			return nil, errUsage(fmt.Sprintf("%s given twice", k))
		}
		a.kv[k] = v
	}
	return a, nil
}

func (a *args) fail(format string, v ...interface{}) {
	if a.err == nil {
		a.err = errUsage(fmt.Sprintf(format, v...))
	}
}

func (a *args) int(key string, def, min, max int) int {
	a.used[key] = true
	s, ok := a.kv[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		a.fail("%s=%s: want an integer in %d..%d", key, s, min, max)
		return def
	}
	return n
}

func (a *args) float(key string, def, min, max float64) float64 {
	a.used[key] = true
	s, ok := a.kv[key]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= min && f <= max) {
		a.fail("%s=%s: want a number in %g..%g", key, s, min, max)
		return def
	}
	return f
}

func (a *args) choice(key, def string, allowed ...string) string {
	a.used[key] = true
	s, ok := a.kv[key]
	if !ok {
		return def
	}
	for _, c := range allowed {
		if s == c {
			return s
		}
	}
	a.fail("%s=%s: want one of %s", key, s, strings.Join(allowed, ", "))
	return def
}

// common reads workers and seconds; workers 0 means every CPU.
func (a *args) common() (workers int, seconds float64) {
	workers = a.int("workers", 0, 0, 4096)
	if workers == 0 {
		workers = runtime.NumCPU()
	}
	return workers, a.float("seconds", 0.2, 0.001, 3600)
}

// done reports the first bad or unknown key.
func (a *args) done() error {
	if a.err != nil {
		return a.err
	}
	var unknown []string
	for k := range a.kv {
		if !a.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return errUsage("unknown key " + strings.Join(unknown, ", "))
	}
	return nil
}

// ---- output ------------------------------------------------------------

type pair struct {
	key string
	val float64
}

type pairs []pair

func (p *pairs) add(key string, val float64) { *p = append(*p, pair{key, val}) }

func (p pairs) String() string {
	var b strings.Builder
	for i, kv := range p {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv.key + "=" + number(kv.val))
	}
	return b.String()
}

// number: integers in full (a skynet sum must compare exactly), other
// values to 10 significant digits.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 10, 64)
}

// ---- clock -------------------------------------------------------------

var epoch = time.Now()

// now is monotonic nanoseconds since the program started.
func now() int64 { return int64(time.Since(epoch)) }

func sleepNs(ns int64) { time.Sleep(time.Duration(ns)) }

func errorf(format string, v ...interface{}) error { return fmt.Errorf(format, v...) }
