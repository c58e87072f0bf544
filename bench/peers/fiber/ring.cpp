// ring.cpp - lmbench lat_ctx on fibers: N fibers in a ring pass one
// token over buffered channels; each, on receiving it, sums its own
// K KiB array (every 8-byte word) and passes it on.  hop_ns = window
// wall / hops (touching included); touch_ns = summing one of the N
// arrays alone, in ring order (the same cache footprint), without
// switching.  A negative token is the stop signal, passed once round.
// Channels are buffered_channel of capacity 2 (room for one token).
// tasks=1 exits 3: a ring of one fiber passes the token to itself
// without ever blocking, and with no preemption it would keep its
// worker forever (the Go peer's ring of one is preempted).
#include "peer.hpp"

namespace peer {

using token_chan = boost::fibers::buffered_channel<long>;

static std::atomic<std::uint64_t> ring_sink{0}; // keeps the sums alive

static std::uint64_t sum_words(const std::vector<std::uint64_t> &b)
{
    std::uint64_t s = 0;
    for (std::uint64_t v : b)
        s += v;
    return s;
}

static void ring_task(const flags &f, slot &s,
                      const std::vector<std::uint64_t> &buf, token_chan &in,
                      token_chan &out)
{
    std::uint64_t c = 0, acc = 0;
    for (;;) {
        long t = in.value_pop();
        if (t < 0) {
            out.push(t);
            break;
        }
        acc += sum_words(buf);
        if (f.stopped()) {
            out.push(-1);
            break;
        }
        s.set(++c);
        out.push(t + 1);
    }
    ring_sink += acc;
}

// ns to sum one array, over passes of all of them for at least min_sec.
static double touch_ns(const std::vector<std::vector<std::uint64_t>> &bufs,
                       double min_sec)
{
    if (bufs[0].empty())
        return 0;
    std::uint64_t acc = 0;
    long passes = 0;
    std::int64_t t0 = now_ns();
    while (passes == 0 || now_ns() - t0 < min_sec * 1e9) {
        for (const auto &b : bufs)
            acc += sum_words(b);
        passes++;
    }
    ring_sink += acc;
    return double(now_ns() - t0) / double(passes * long(bufs.size()));
}

pairs ring(args &a)
{
    long n = a.integer("tasks", 2, 1, 1L << 20);
    long kib = a.integer("size_kib", 0, 0, 1L << 20);
    int w = a.workers();
    double sec = a.seconds();
    a.done();
    if (n < 2)
        throw unsupported("a ring of one fiber never gives up its worker");
    pool workers(w);
    std::size_t un = static_cast<std::size_t>(n);
    std::vector<std::vector<std::uint64_t>> bufs(
        un, std::vector<std::uint64_t>(static_cast<std::size_t>(kib) * 128));
    std::vector<std::unique_ptr<token_chan>> ch;
    for (std::size_t i = 0; i < un; i++)
        ch.push_back(std::make_unique<token_chan>(2));
    flags f;
    std::vector<slot> slots(un);
    std::vector<boost::fibers::fiber> tasks;
    for (std::size_t i = 0; i < un; i++)
        tasks.push_back(spawn(ring_task, std::cref(f), std::ref(slots[i]),
                              std::cref(bufs[i]), std::ref(*ch[i]),
                              std::ref(*ch[(i + 1) % un])));
    ch[0]->push(0);
    window_result r = window(f, slots, sec);
    join_all(tasks);
    double hops = sum(r.work);
    if (hops == 0)
        throw failure("no hops counted");
    pairs out;
    out.add("hop_ns", r.wall_ns / hops);
    out.add("touch_ns", touch_ns(bufs, sec / 4));
    out.add("workers", w);
    return out;
}

} // namespace peer
