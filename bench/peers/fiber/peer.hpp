// peer.hpp - what the experiments of mqs-peer-fiber share: arguments,
// the output line, the clock, the measurement window, the statistics and
// the worker pool.  See main.cpp for the program and
// bench/peers/PROTOCOL.md for the contract.
#ifndef MQS_PEER_FIBER_HPP
#define MQS_PEER_FIBER_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/fiber/all.hpp>

namespace peer {

// ---- errors: each maps to an exit status ------------------------------

struct usage_error : std::runtime_error { // exit 2
    using std::runtime_error::runtime_error;
};
struct unsupported : std::runtime_error { // exit 3
    using std::runtime_error::runtime_error;
};
struct failure : std::runtime_error { // exit 1
    using std::runtime_error::runtime_error;
};

// ---- arguments -----------------------------------------------------------

// key=value arguments; each getter marks its key used, done() rejects
// keys no getter asked for and reports the first bad value.
class args {
  public:
    explicit args(const std::vector<std::string> &argv);
    long integer(const std::string &key, long def, long min, long max);
    double number(const std::string &key, double def, double min,
                  double max);
    std::string choice(const std::string &key, const std::string &def,
                       const std::vector<std::string> &allowed);
    bool given(const std::string &key) const { return kv_.count(key) != 0; }
    // workers (0 = every CPU) and seconds, which every experiment takes.
    int workers();
    double seconds();
    void done();

  private:
    void fail(const std::string &why);
    std::map<std::string, std::string> kv_;
    std::set<std::string> used_;
    std::string err_;
};

// ---- output ----------------------------------------------------------------

class pairs {
  public:
    void add(const std::string &key, double v) { kv_.emplace_back(key, v); }
    std::string str() const;

  private:
    std::vector<std::pair<std::string, double>> kv_;
};

// ---- clock -----------------------------------------------------------------

inline std::int64_t now_ns()
{
    using namespace std::chrono;
    return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch())
        .count();
}

inline void sleep_ns(std::int64_t ns)
{
    boost::this_fiber::sleep_for(std::chrono::nanoseconds(ns));
}

// Fiber stacks: 16 KiB, the smallest mqs task stack, so that a million
// fibers fit as a million mqs tasks do.
constexpr std::size_t stack_bytes = 16 * 1024;

inline boost::fibers::fixedsize_stack stack() { return boost::fibers::fixedsize_stack(stack_bytes); }

// Start f as a fiber with the peer's stack size.
template <typename F, typename... A> boost::fibers::fiber spawn(F &&f, A &&...a)
{
    return boost::fibers::fiber(std::allocator_arg, stack(), std::forward<F>(f),
                                std::forward<A>(a)...);
}

// ---- the measurement window ------------------------------------------------

// One task's counter on its own cache line, written only by that task;
// or (bind) a pointer to a counter in the task's own stack frame, which
// a switch touches anyway, so that counting adds no line to a turn (the
// yield experiment, as mqs-bench's own rows: bench/yield.c).
struct alignas(64) slot {
    std::atomic<std::uint64_t> n{0};
    std::atomic<std::atomic<std::uint64_t> *> at{nullptr};
    void set(std::uint64_t v) { n.store(v, std::memory_order_relaxed); }
    void bind(std::atomic<std::uint64_t> &c) { at.store(&c, std::memory_order_release); }
    std::uint64_t get() const
    {
        std::atomic<std::uint64_t> *c = at.load(std::memory_order_acquire);
        return (c ? *c : n).load(std::memory_order_relaxed);
    }
};

// Written by the window, read by every task.  open: between the
// snapshots, for experiments that record samples (wake, mixed).
struct alignas(64) flags {
    std::atomic<int> start{0}, open{0}, stop{0};
    bool started() const { return start.load(std::memory_order_relaxed); }
    bool in_window() const { return open.load(std::memory_order_relaxed); }
    bool stopped() const { return stop.load(std::memory_order_relaxed); }
};

struct window_result {
    double wall_ns;
    std::vector<double> work; // per slot, inside the window
};

// mqs-bench's window: start, settle, snapshot, sleep seconds, snapshot,
// stop.  Runs on the calling fiber, which sleeps as a fiber so the
// tasks keep its worker.
window_result window(flags &f, std::vector<slot> &slots, double seconds);

// ---- statistics ------------------------------------------------------------

double sum(const std::vector<double> &x);
double mean(const std::vector<double> &x);
double stdev(const std::vector<double> &x); // n - 1; NAN below 2
void add_fairness(pairs &out, const std::vector<double> &work);
void add_latency(pairs &out, std::vector<double> x);


// ---- workers ---------------------------------------------------------------

// W worker threads sharing fibers: the calling thread is worker 0 and
// W - 1 threads are started; each registers work_stealing (suspend
// false: a worker with an empty queue keeps stealing, because a
// suspended one is woken only for fibers readied on it and would never
// steal again).  workers == 1: the default round_robin, no threads.
// Destroy it from the fiber that created it, after every task ended.
class pool {
  public:
    explicit pool(int workers);
    ~pool();
    pool(const pool &) = delete;
    pool &operator=(const pool &) = delete;

  private:
    void serve();
    std::vector<std::thread> threads_;
    std::mutex mtx_;
    boost::fibers::condition_variable_any cv_;
    bool done_ = false;
    int workers_;
};

// Join every fiber of v.
void join_all(std::vector<boost::fibers::fiber> &v);

// Experiments: read the keys, run, return the line's pairs.
pairs yield(args &a);
pairs ring(args &a);
pairs pipe(args &a);
pairs wake(args &a);
pairs mixed(args &a);
pairs spawn_exp(args &a);
pairs chat(args &a);
pairs echo(args &a);

} // namespace peer

#endif
