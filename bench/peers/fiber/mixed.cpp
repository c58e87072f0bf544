// mixed.cpp - short fibers among long CPU-bound ones, the workload of
// `mqs-bench mixed` (bench/mixed.c).  A record is malloc(2048), write
// every word, read one back, free.  A long fiber makes records back to
// back, yielding after each: a fiber is never preempted, so the yield
// stands where preemption stops the mqs rows' long tasks (and where
// --long-point checkpoint puts mqs_checkpoint()); without it a long fiber
// would keep its worker and the short ones would never wake.  A short fiber makes burst_records records (1 ms of records as
// mqs-bench calibrated it on this machine and passes in), then sleeps
// 9 ms; the short fibers' first bursts are staggered over the 10 ms
// period (fiber i of S first sleeps i x 10 ms / S).  records_per_s counts
// the records of both kinds in the window; short_min, short_mean,
// long_min, long_mean and starved are the per-task figures of
// bench/mixed.c.  wait_ns (runnable-not-running
// time summed over the tasks) is left out: Boost.Fiber does not keep it.
#include <algorithm>
#include <cstdlib>

#include "peer.hpp"

namespace peer {

static constexpr std::int64_t mixed_period_ns = 10000000,
                              mixed_burst_ns = 1000000;
static constexpr std::size_t mixed_words = 2048 / sizeof(std::uint64_t);
static std::atomic<std::uint64_t> mixed_sink{0};

// One record: allocate, write, read back, free.  The asm keeps the
// compiler from eliding the allocation.
static std::uint64_t mixed_record(std::uint64_t seed)
{
    auto *b = static_cast<std::uint64_t *>(std::malloc(2048));
    if (!b)
        return seed;
    __asm__ volatile("" : : "r"(b) : "memory");
    for (std::size_t i = 0; i < mixed_words; i++)
        b[i] = seed + i;
    __asm__ volatile("" : : "r"(b) : "memory");
    std::uint64_t v = b[seed % mixed_words];
    std::free(b);
    return v;
}

static void mixed_wait_start(const flags &f)
{
    while (!f.started())
        sleep_ns(1000000);
}

static void long_task(const flags &f, slot &s, std::uint64_t seed)
{
    mixed_wait_start(f);
    std::uint64_t c = 0, x = seed;
    while (!f.stopped()) {
        x += mixed_record(x);
        s.set(++c);
        boost::this_fiber::yield();
    }
    mixed_sink += x;
}

static void short_task(const flags &f, slot &s, std::uint64_t seed,
                       long burst, std::int64_t phase)
{
    mixed_wait_start(f);
    sleep_ns(phase);
    std::uint64_t c = 0, x = seed;
    while (!f.stopped()) {
        for (long i = 0; i < burst; i++) {
            x += mixed_record(x);
            s.set(++c);
        }
        sleep_ns(mixed_period_ns - mixed_burst_ns);
    }
    mixed_sink += x;
}

// <kind>_min and <kind>_mean: records/s of the slowest and of the mean
// task of a kind; nothing for a kind without tasks.
static void add_kind(pairs &out, const std::string &kind,
                     const std::vector<double> &work, double wall_ns)
{
    if (work.empty())
        return;
    double lo = *std::min_element(work.begin(), work.end());
    out.add(kind + "_min", lo / (wall_ns / 1e9));
    out.add(kind + "_mean", mean(work) / (wall_ns / 1e9));
}

pairs mixed(args &a)
{
    long nshort = a.integer("short", 4, 0, 1L << 16);
    long nlong = a.integer("long", 2, 0, 1L << 16);
    long burst = a.integer("burst_records", 0, 0, 1L << 30);
    int w = a.workers();
    double sec = a.seconds();
    a.done();
    if (nshort + nlong == 0)
        throw usage_error("short + long must be at least 1");
    if (burst < 1)
        throw usage_error(
            "burst_records=N (N >= 1, records in 1 ms) is required");
    pool workers(w);
    flags f;
    std::vector<slot> slots(static_cast<std::size_t>(nshort + nlong));
    std::vector<boost::fibers::fiber> tasks;
    for (long i = 0; i < nshort + nlong; i++) {
        auto seed = static_cast<std::uint64_t>(i);
        slot &s = slots[static_cast<std::size_t>(i)];
        if (i < nshort)
            tasks.push_back(spawn(short_task, std::cref(f), std::ref(s), seed,
                                  burst, mixed_period_ns * i / nshort));
        else
            tasks.push_back(spawn(long_task, std::cref(f), std::ref(s), seed));
    }
    window_result r = window(f, slots, sec);
    join_all(tasks);
    pairs out;
    out.add("records_per_s", sum(r.work) / (r.wall_ns / 1e9));
    auto mid = r.work.begin() + nshort;
    add_kind(out, "short", {r.work.begin(), mid}, r.wall_ns);
    add_kind(out, "long", {mid, r.work.end()}, r.wall_ns);
    out.add("starved", double(std::count(r.work.begin(), r.work.end(), 0.0)));
    out.add("workers", w);
    return out;
}

} // namespace peer
