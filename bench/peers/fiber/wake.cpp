// wake.cpp - latt's wake-up latency on fibers, as bench/wake.c: one
// server fiber stamps the time and try_pushes the stamp to the next
// client, from where it left off, whose channel is empty (a
// buffered_channel holding one stamp, so the server never waits; a
// client that has not taken its last stamp is not waiting and is passed
// over), then sleeps a pseudo-random 0..200 us (splitmix64, as wake.c
// draws it).  The
// client records now - stamp, the delay from wake-up to running.  K hog
// fibers spin on the clock for hog_yield_us and then yield, competing for
// the W workers.  Samples are recorded only inside the window.
//
// Exit 3 for hogs that never yield (hog_yield_us=0, the default): a fiber
// is never preempted, so such a hog would keep its thread until the end,
// the main thread's (which runs the window) among them.  Exit 3 too for
// class=rt: Boost.Fiber's schedulers have no realtime class (a priority
// algorithm would be a scheduler of our own, not Boost.Fiber's).
#include "peer.hpp"

namespace peer {

using stamp_chan = boost::fibers::buffered_channel<std::int64_t>;

static void hog(const flags &f, std::int64_t slice_ns)
{
    while (!f.stopped()) {
        for (std::int64_t t = now_ns(); now_ns() - t < slice_ns;) {
        }
        boost::this_fiber::yield();
    }
}

// The waker's pause, 0..200 us from splitmix64 as bench/wake.c draws it.
static std::int64_t wake_gap(std::uint64_t &x)
{
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return static_cast<std::int64_t>((z ^ (z >> 31)) % 200000u);
}

// Stamp and wake the first client from next on whose channel is empty
// (it has taken its last stamp: blocked or about to block), as
// bench/wake.c wakes only a waiting client; returns the new next.
static std::size_t wake_next(std::vector<std::unique_ptr<stamp_chan>> &ch,
                             std::size_t next)
{
    for (std::size_t k = 0; k < ch.size(); k++) {
        std::size_t i = (next + k) % ch.size();
        if (ch[i]->try_push(now_ns()) ==
            boost::fibers::channel_op_status::success)
            return (i + 1) % ch.size();
    }
    return next;
}

static void server(const flags &f, std::vector<std::unique_ptr<stamp_chan>> &ch)
{
    std::uint64_t x = 1;
    std::size_t next = 0;
    while (!f.stopped()) {
        next = wake_next(ch, next);
        sleep_ns(wake_gap(x));
    }
    for (auto &c : ch)
        c->close();
}

static void client(const flags &f, stamp_chan &in, std::vector<double> &out)
{
    std::int64_t stamp;
    while (in.pop(stamp) == boost::fibers::channel_op_status::success) {
        double d = double(now_ns() - stamp);
        if (f.in_window())
            out.push_back(d);
    }
}

pairs wake(args &a)
{
    long clients = a.integer("clients", 4, 1, 1L << 16);
    long hogs = a.integer("hogs", 0, 0, 1L << 16);
    long slice = a.integer("hog_yield_us", 0, 0, 10000000);
    std::string cls = a.choice("class", "normal", {"normal", "rt"});
    int w = a.workers();
    double sec = a.seconds();
    a.done();
    if (cls == "rt")
        throw unsupported("Boost.Fiber has no realtime class");
    if (hogs && !slice)
        throw unsupported("fibers are never preempted: hogs must yield "
                          "(--hog-yield U)");
    pool workers(w);
    flags f;
    std::vector<boost::fibers::fiber> tasks;
    for (long i = 0; i < hogs; i++)
        tasks.push_back(spawn(hog, std::cref(f), slice * 1000));
    std::vector<std::unique_ptr<stamp_chan>> ch;
    std::vector<std::vector<double>> samples(static_cast<std::size_t>(clients));
    for (auto &s : samples) {
        ch.push_back(std::make_unique<stamp_chan>(2));
        tasks.push_back(spawn(client, std::cref(f), std::ref(*ch.back()), std::ref(s)));
    }
    tasks.push_back(spawn(server, std::cref(f), std::ref(ch)));
    std::vector<slot> none;
    window(f, none, sec);
    join_all(tasks);
    std::vector<double> all;
    for (auto &s : samples)
        all.insert(all.end(), s.begin(), s.end());
    if (all.empty())
        throw failure("no wake-ups recorded");
    pairs out;
    add_latency(out, all);
    out.add("workers", w);
    return out;
}

} // namespace peer
