// yield.cpp - N fibers loop on boost::this_fiber::yield, each counting
// its yields in a counter in its own frame, which its slot points to;
// ns per yield = wall x min(N, W) / total yields, fairness from the
// per-fiber counts.  The loop of mqs-bench's policy rows with
// this_fiber::yield for mqs_yield.
#include "peer.hpp"

namespace peer {

static void yielder(const flags &f, slot &s)
{
    std::atomic<std::uint64_t> c{0};
    s.bind(c);
    while (!f.started())
        boost::this_fiber::yield();
    while (!f.stopped()) {
        boost::this_fiber::yield();
        c.store(c.load(std::memory_order_relaxed) + 1,
                std::memory_order_relaxed);
    }
}

pairs yield(args &a)
{
    long n = a.integer("tasks", 1, 1, 1L << 22);
    int w = a.workers();
    double sec = a.seconds();
    a.done();
    pool workers(w);
    flags f;
    std::vector<slot> slots(static_cast<std::size_t>(n));
    std::vector<boost::fibers::fiber> tasks;
    for (slot &s : slots)
        tasks.push_back(spawn(yielder, std::cref(f), std::ref(s)));
    window_result r = window(f, slots, sec);
    join_all(tasks);
    double total = sum(r.work);
    if (total == 0)
        throw failure("no yields counted");
    pairs out;
    out.add("ns_per_yield", r.wall_ns * std::min<long>(n, w) / total);
    add_fairness(out, r.work);
    out.add("workers", w);
    return out;
}

} // namespace peer
