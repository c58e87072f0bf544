// wake.cpp - latt's wake-up latency on fibers.  One server fiber sleeps
// a pseudo-random 100..1000 us (a fixed xorshift sequence), stamps the
// time and try_pushes the stamp to the next client round-robin (a
// buffered_channel holding one stamp, so the server never waits; a
// client that has not run since its last wake-up is skipped).  The
// client records now - stamp, the delay from wake-up to running.  K hog
// fibers spin for hog_slice_us and then yield, competing for the W
// workers.  Samples are recorded only inside the window.
//
// class=rt exits 3: Boost.Fiber's schedulers have no realtime class (a
// priority algorithm would be a scheduler of our own, not Boost.Fiber's).
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

static void server(const flags &f, std::vector<std::unique_ptr<stamp_chan>> &ch)
{
    std::uint64_t x = 88172645463325252ull;
    for (std::size_t i = 0; !f.stopped(); i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sleep_ns(static_cast<std::int64_t>(100000 + x % 900000));
        ch[i % ch.size()]->try_push(now_ns());
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
    long slice = a.integer("hog_slice_us", 1000, 1, 10000000);
    std::string cls = a.choice("class", "normal", {"normal", "rt"});
    int w = a.workers();
    double sec = a.seconds();
    a.done();
    if (cls == "rt")
        throw unsupported("Boost.Fiber has no realtime class");
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
