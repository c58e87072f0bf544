// main.cpp - mqs-peer-fiber, the Boost.Fiber peer of mqs-bench: runs one
// measurement of one experiment on fibers and prints one line of
// key=value pairs (bench/peers/PROTOCOL.md is the contract).
//
//   mqs-peer-fiber <experiment> key=value ...
//
// Design: a file per experiment, each reading its keys through
// peer::args (unknown keys and bad values: exit 2), running on a
// peer::pool of W worker threads and returning the pairs.  With W > 1
// the workers share fibers through boost::fibers::algo::work_stealing:
// per-thread queues with stealing are the structure of mqs's mq policy
// and of Go's Ps, where shared_work is one locked queue for all threads
// (the design the multi-queue schedulers replaced), and it is unusable
// here besides: it runs pinned fibers -- a thread's main fiber and its
// dispatcher, which moves sleeping fibers to ready -- only when the
// shared queue is empty, so under N yielding fibers no sleep ever ends
// (tried: yield tasks=16 workers=2 hangs).  Errors are
// exceptions mapped to the protocol's exit statuses: usage 2,
// unsupported 3 (e.g. wake class=rt: no realtime class), failure 1.
// Rejected: one process serving every repeat -- work_stealing
// registers its schedulers once per process, so a process is one
// measurement, as for the Go peer.
#include "peer.hpp"

#include <cstdio>
#include <iostream>

namespace {

struct experiment {
    const char *name, *keys;
    peer::pairs (*run)(peer::args &);
};

const experiment experiments[] = {
    {"yield", "tasks=N", peer::yield},
    {"ring", "tasks=N size_kib=K", peer::ring},
    {"pipe", "mode=latency|bandwidth placement=same|cross msg_kib=K", peer::pipe},
    {"wake", "clients=C hogs=K hog_yield_us=U class=normal|rt", peer::wake},
    {"mixed", "short=S long=L burst_records=N", peer::mixed},
    {"spawn", "tasks=T fanout=F", peer::spawn_exp},
    {"chat", "rooms=R users=U messages=M msg_bytes=B", peer::chat},
    {"echo", "connections=N size=B", peer::echo},
};

void usage()
{
    std::printf(
        "usage: mqs-peer-fiber <experiment> key=value ...\n\n"
        "Runs one measurement on Boost.Fiber and prints one line of key=value\n"
        "pairs (bench/peers/PROTOCOL.md).  Every experiment takes workers=W\n"
        "(threads sharing fibers by work stealing; 0 = every CPU) and\n"
        "seconds=S (length of the timed window, time-based experiments).\n"
        "Exit 0 ok, 2 bad arguments, 3 variant not supported, 1 failure.\n\n"
        "experiments:\n");
    for (const experiment &e : experiments)
        std::printf("  %-6s %s\n", e.name, e.keys);
}

int run(const experiment &e, const std::vector<std::string> &argv)
{
    try {
        peer::args a(argv);
        std::cout << e.run(a).str() << std::endl;
        return 0;
    } catch (const peer::usage_error &x) {
        std::fprintf(stderr, "mqs-peer-fiber %s: %s\n", e.name, x.what());
        return 2;
    } catch (const peer::unsupported &x) {
        std::cout << x.what() << std::endl; // the reason, into mqs-bench's note
        return 3;
    } catch (const std::exception &x) {
        std::fprintf(stderr, "mqs-peer-fiber %s: %s\n", e.name, x.what());
        return 1;
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
        usage();
        return argc < 2 ? 2 : 0;
    }
    for (const experiment &e : experiments)
        if (e.name == std::string(argv[1]))
            return run(e, std::vector<std::string>(argv + 2, argv + argc));
    std::fprintf(stderr, "mqs-peer-fiber: unknown experiment \"%s\" (try --help)\n",
                 argv[1]);
    return 2;
}
