// chat.cpp - the chatroom benchmark in one process, on fibers.  Each
// room has U users; each user is four fibers, as the original's client
// and server threads and as mqs-bench's own rows: a sender that pushes M
// messages of B bytes to its upstream channel, a server reader that puts
// each on the out-queue of every other user of the room, a server writer
// that moves its user's out-queue onto the user's downstream channel,
// and a receiver that pops (U-1) x M messages from it and copies each
// payload into its own buffer.  A message is filled once by its sender
// and shared read-only by its recipients (shared_ptr); the receiver's
// copy is the one a socket read makes.  Channels are buffered_channel of
// capacity 64 (a power of two; its ring keeps one slot free, so 63
// messages, against mqs-bench's 64).  msgs_per_s = R x U x M x (U-1)
// deliveries / wall, from the first spawn to the last receipt.  Not
// time-based: seconds is accepted and ignored.
#include "peer.hpp"

#include <cstring>

namespace peer {

using message = std::shared_ptr<const std::vector<char>>;
using msg_chan = boost::fibers::buffered_channel<message>;

static std::atomic<std::uint64_t> chat_sink{0};

static void sender(msg_chan &up, long msgs, long size, int who)
{
    for (long m = 0; m < msgs; m++)
        up.push(std::make_shared<const std::vector<char>>(
            static_cast<std::size_t>(size), char(who + m)));
    up.close();
}

static void handler(msg_chan &up, std::vector<std::unique_ptr<msg_chan>> &inbox,
                    std::size_t self)
{
    message m;
    while (up.pop(m) == boost::fibers::channel_op_status::success)
        for (std::size_t i = 0; i < inbox.size(); i++)
            if (i != self)
                inbox[i]->push(m);
}

// The server's writer: n messages from the user's out-queue to its
// downstream channel.
static void writer(msg_chan &outq, msg_chan &down, long n)
{
    for (long i = 0; i < n; i++)
        down.push(outq.value_pop());
}

static void receiver(msg_chan &in, long n, long size)
{
    std::vector<char> buf(static_cast<std::size_t>(size));
    std::uint64_t acc = 0;
    for (long i = 0; i < n; i++) {
        message m = in.value_pop();
        std::memcpy(buf.data(), m->data(), buf.size());
        acc += static_cast<unsigned char>(buf[0]);
    }
    chat_sink += acc;
}

// One room's channels; they must outlive its fibers.
struct room {
    std::vector<std::unique_ptr<msg_chan>> up, outq, down;
};

// echo: the same limit as chat over TCP (PROTOCOL.md); the keys are
// still checked, so a bad one is a usage error as elsewhere.
pairs echo(args &a)
{
    a.integer("connections", 1, 1, 100000);
    a.integer("size", 64, 1, 1L << 20);
    a.workers();
    a.seconds();
    a.done();
    throw unsupported("Boost.Fiber has no socket I/O that blocks only the "
                      "fiber");
}

pairs chat(args &a)
{
    long rooms = a.integer("rooms", 1, 1, 1L << 16);
    long users = a.integer("users", 20, 2, 1L << 16);
    long msgs = a.integer("messages", 100, 1, 1L << 24);
    long size = a.integer("msg_bytes", 100, 1, 1L << 20);
    bool tcp = a.choice("transport", "chan", {"tcp", "chan"}) == "tcp";
    int w = a.workers();
    a.seconds();
    a.done();
    if (tcp)
        throw unsupported("Boost.Fiber has no socket I/O that blocks only "
                          "the fiber (transport=tcp)");
    pool workers(w);
    std::vector<room> rs(static_cast<std::size_t>(rooms));
    std::vector<boost::fibers::fiber> tasks;
    std::int64_t t0 = now_ns();
    for (room &r : rs) {
        for (long u = 0; u < users; u++) {
            r.up.push_back(std::make_unique<msg_chan>(64));
            r.outq.push_back(std::make_unique<msg_chan>(64));
            r.down.push_back(std::make_unique<msg_chan>(64));
        }
        for (long u = 0; u < users; u++) {
            std::size_t i = static_cast<std::size_t>(u);
            long n = (users - 1) * msgs;
            tasks.push_back(spawn(sender, std::ref(*r.up[i]), msgs, size, int(u)));
            tasks.push_back(spawn(handler, std::ref(*r.up[i]), std::ref(r.outq), i));
            tasks.push_back(spawn(writer, std::ref(*r.outq[i]), std::ref(*r.down[i]), n));
            tasks.push_back(spawn(receiver, std::ref(*r.down[i]), n, size));
        }
    }
    join_all(tasks);
    double wall = double(now_ns() - t0);
    pairs out;
    out.add("msgs_per_s", double(rooms * users * msgs * (users - 1)) / (wall / 1e9));
    out.add("workers", w);
    return out;
}

} // namespace peer
