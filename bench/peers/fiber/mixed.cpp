// mixed.cpp - short interactive fibers among long CPU-bound ones.  A
// record is the fixed unit of work of common.cpp (1000 splitmix64
// rounds).  A long fiber does records back to back, yielding after
// each (a fiber is never preempted; without the yield it would keep its
// worker).  A short fiber has a 10% duty cycle: in every 1 ms period it
// does records for 100 us from when it runs, then sleeps until the
// period's end; its wait is how late it runs after the period's start.
// records_per_s counts both kinds' records in the window; wait_ns is the
// short fibers' mean wait inside the window.
#include "peer.hpp"

namespace peer {

static constexpr std::int64_t mixed_period_ns = 1000000, mixed_busy_ns = 100000;
static std::atomic<std::uint64_t> mixed_sink{0};

struct wait_sum {
    double ns = 0, n = 0;
};

static void long_task(const flags &f, slot &s)
{
    std::uint64_t c = 0, x = 1;
    while (!f.stopped()) {
        x = record(x);
        s.set(++c);
        boost::this_fiber::yield();
    }
    mixed_sink += x;
}

static void short_task(const flags &f, slot &s, wait_sum &ws)
{
    std::uint64_t c = 0, x = 2;
    std::int64_t period = now_ns();
    while (!f.stopped()) {
        std::int64_t woke = now_ns();
        if (f.in_window()) {
            ws.ns += double(woke - period);
            ws.n++;
        }
        while (now_ns() - woke < mixed_busy_ns) {
            x = record(x);
            s.set(++c);
        }
        period += mixed_period_ns;
        std::int64_t d = period - now_ns();
        if (d > 0)
            sleep_ns(d);
        else
            period = now_ns(); // overran: the next period starts now
    }
    mixed_sink += x;
}

pairs mixed(args &a)
{
    long nshort = a.integer("short", 4, 0, 1L << 16);
    long nlong = a.integer("long", 2, 0, 1L << 16);
    int w = a.workers();
    double sec = a.seconds();
    a.done();
    if (nshort + nlong == 0)
        throw usage_error("short + long must be at least 1");
    pool workers(w);
    flags f;
    std::vector<slot> slots(static_cast<std::size_t>(nshort + nlong));
    std::vector<wait_sum> waits(static_cast<std::size_t>(nshort));
    std::vector<boost::fibers::fiber> tasks;
    for (std::size_t i = 0; i < slots.size(); i++)
        tasks.push_back(i < waits.size()
                            ? spawn(short_task, std::cref(f), std::ref(slots[i]),
                                    std::ref(waits[i]))
                            : spawn(long_task, std::cref(f), std::ref(slots[i])));
    window_result r = window(f, slots, sec);
    join_all(tasks);
    pairs out;
    out.add("records_per_s", sum(r.work) / (r.wall_ns / 1e9));
    wait_sum total;
    for (const wait_sum &x : waits) {
        total.ns += x.ns;
        total.n += x.n;
    }
    if (total.n > 0)
        out.add("wait_ns", total.ns / total.n);
    out.add("workers", w);
    return out;
}

} // namespace peer
