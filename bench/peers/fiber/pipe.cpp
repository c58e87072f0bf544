// pipe.cpp - lmbench's pipe latency and bandwidth on Boost.Fiber
// channels.
//
// latency: two fibers bounce one byte over a pair of unbuffered_channel;
// rtt_ns = window wall / round trips.  placement=same: both on one
// worker (round_robin, no other thread).  placement=cross: the echo side
// is the main fiber of a second thread (round_robin there too), so each
// hop crosses threads; fibers on different threads do not migrate.
//
// bandwidth: a producer copies msg_kib KiB into a free buffer and pushes
// it; the consumer copies it into its own buffer and returns the buffer
// (two circulate, buffered_channel of capacity 4).  Two copies per
// message, as a pipe's write and read.  mb_per_s = MiB copied out per
// second of window.  Without placement= it runs on the W workers given
// (work_stealing); with it, placed as latency.
#include "peer.hpp"

#include <cstring>

namespace peer {

using byte_chan = boost::fibers::unbuffered_channel<char>;
using buf_chan = boost::fibers::buffered_channel<char *>;

// Run side b (passive) and side a (counting in slots[0]) and the window:
// cross puts b on a thread of its own, else both are fibers on w workers.
template <typename B, typename A>
static window_result placed(bool cross, int w, B b, A a, flags &f,
                            std::vector<slot> &slots, double sec)
{
    if (cross) {
        std::thread tb(b);
        boost::fibers::fiber fa = spawn(a);
        window_result r = window(f, slots, sec);
        fa.join();
        tb.join();
        return r;
    }
    pool workers(w);
    boost::fibers::fiber fb = spawn(b), fa = spawn(a);
    window_result r = window(f, slots, sec);
    fa.join();
    fb.join();
    return r;
}

static double latency(bool cross, double sec)
{
    byte_chan ping, pong;
    flags f;
    std::vector<slot> slots(1);
    auto echo = [&] {
        char c;
        while (ping.pop(c) == boost::fibers::channel_op_status::success)
            pong.push(c);
    };
    auto timed = [&] {
        std::uint64_t n = 0;
        char c = 1;
        while (!f.stopped()) {
            ping.push(c);
            c = pong.value_pop();
            slots[0].set(++n);
        }
        ping.close();
    };
    window_result r = placed(cross, 1, echo, timed, f, slots, sec);
    return r.wall_ns / r.work[0];
}

static double bandwidth(bool cross, int w, std::size_t size, double sec)
{
    buf_chan free_bufs(4), full(4);
    std::vector<char> pool_mem(2 * size), src(size, 'x'), dst(size);
    free_bufs.push(pool_mem.data());
    free_bufs.push(pool_mem.data() + size);
    flags f;
    std::vector<slot> slots(1);
    auto producer = [&] {
        while (!f.stopped()) {
            char *b = free_bufs.value_pop();
            std::memcpy(b, src.data(), size);
            full.push(b);
        }
        full.close();
    };
    auto consumer = [&] {
        std::uint64_t n = 0;
        char *b;
        while (full.pop(b) == boost::fibers::channel_op_status::success) {
            std::memcpy(dst.data(), b, size);
            slots[0].set(++n);
            free_bufs.push(b);
        }
    };
    window_result r = placed(cross, w, producer, consumer, f, slots, sec);
    return r.work[0] * double(size) / (1 << 20) / (r.wall_ns / 1e9);
}

pairs pipe(args &a)
{
    std::string mode = a.choice("mode", "latency", {"latency", "bandwidth"});
    bool given = a.given("placement");
    bool cross = a.choice("placement", "same", {"same", "cross"}) == "cross";
    long kib = a.integer("msg_kib", 64, 1, 1L << 20);
    int w = a.workers();
    double sec = a.seconds();
    a.done();
    if (mode == "latency" || given)
        w = cross ? 2 : 1;
    pairs out;
    if (mode == "latency")
        out.add("rtt_ns", latency(cross, sec));
    else
        out.add("mb_per_s",
                bandwidth(cross, cross ? 1 : w, std::size_t(kib) * 1024, sec));
    out.add("workers", w);
    return out;
}

} // namespace peer
