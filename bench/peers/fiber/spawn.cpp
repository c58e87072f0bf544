// spawn.cpp - skynet on fibers, written as Boost.Fiber's own skynet
// (performance/fiber/skynet_*.cpp in Boost): every inner node starts
// `fanout` detached child fibers with launch::dispatch (the child runs
// at once, the parent waits in the ready queue), each responsible for
// 1/fanout of the leaf ids below it; leaves push their id into the
// parent's buffered_channel, inner nodes push the sum of their
// children's.  dispatch, not post: in post's FIFO order every leaf
// would exist before the first ran (a million stacks at once).  The
// channel holds fanout values, so a child never waits for its parent.
// ns_per_task = wall / every fiber created (tasks_created); peak_rss_kib
// from getrusage.  Not time-based: seconds is accepted and ignored.
#include "peer.hpp"

#include <sys/resource.h>

namespace peer {

using sum_chan = boost::fibers::buffered_channel<std::uint64_t>;

static std::size_t chan_capacity(std::uint64_t fanout)
{
    std::size_t c = 2;
    while (c < fanout + 1) // a ring of c slots holds c - 1
        c *= 2;
    return c;
}

static void skynet(sum_chan &up, std::uint64_t num, std::uint64_t size,
                   std::uint64_t div)
{
    if (size == 1) {
        up.push(num);
        return;
    }
    sum_chan rc(chan_capacity(div));
    for (std::uint64_t i = 0; i < div; i++)
        boost::fibers::fiber(boost::fibers::launch::dispatch, std::allocator_arg,
                             stack(), skynet, std::ref(rc), num + i * (size / div),
                             size / div, div)
            .detach();
    std::uint64_t s = 0;
    for (std::uint64_t i = 0; i < div; i++)
        s += rc.value_pop();
    up.push(s);
}

pairs spawn_exp(args &a)
{
    if (a.integer("live", 0, 0, 1L << 30) > 0)
        throw unsupported("live mode: not written for Boost.Fiber yet");
    long t = a.integer("tasks", 1000000, 1, 1L << 30);
    long fan = a.integer("fanout", 10, 2, 1L << 20);
    int w = a.workers();
    a.seconds();
    a.done();
    long created = 0;
    for (long n = t;; n /= fan) {
        created += n;
        if (n == 1)
            break;
        if (n % fan)
            throw usage_error("tasks must be a power of fanout");
    }
    pool workers(w);
    sum_chan c(2);
    std::int64_t t0 = now_ns();
    spawn(skynet, std::ref(c), 0, std::uint64_t(t), std::uint64_t(fan)).detach();
    std::uint64_t got = c.value_pop();
    double wall = double(now_ns() - t0);
    std::uint64_t want = std::uint64_t(t) * std::uint64_t(t - 1) / 2;
    if (got != want)
        throw failure("sum " + std::to_string(got) + ", want " + std::to_string(want));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    pairs out;
    out.add("ns_per_task", wall / double(created));
    out.add("peak_rss_kib", double(ru.ru_maxrss));
    out.add("sum", double(got));
    out.add("tasks_created", double(created));
    out.add("workers", w);
    return out;
}

} // namespace peer
