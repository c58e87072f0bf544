// common.cpp - arguments, output, window, statistics and the worker pool
// of mqs-peer-fiber (declared, and explained, in peer.hpp).
#include "peer.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include <sched.h>

namespace peer {

// ---- arguments -----------------------------------------------------------

args::args(const std::vector<std::string> &argv)
{
    for (const std::string &s : argv) {
        std::size_t eq = s.find('=');
        if (eq == std::string::npos || eq == 0)
            throw usage_error("\"" + s + "\" is not key=value");
        if (!kv_.emplace(s.substr(0, eq), s.substr(eq + 1)).second)
            throw usage_error(s.substr(0, eq) + " given twice");
    }
}

void args::fail(const std::string &why)
{
    if (err_.empty())
        err_ = why;
}

long args::integer(const std::string &key, long def, long min, long max)
{
    used_.insert(key);
    auto it = kv_.find(key);
    if (it == kv_.end())
        return def;
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end || errno || v < min || v > max) {
        fail(key + "=" + it->second + ": want an integer in " +
             std::to_string(min) + ".." + std::to_string(max));
        return def;
    }
    return v;
}

double args::number(const std::string &key, double def, double min,
                    double max)
{
    used_.insert(key);
    auto it = kv_.find(key);
    if (it == kv_.end())
        return def;
    char *end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end || !(v >= min && v <= max)) {
        std::ostringstream m;
        m << key << "=" << it->second << ": want a number in " << min << ".."
          << max;
        fail(m.str());
        return def;
    }
    return v;
}

std::string args::choice(const std::string &key, const std::string &def,
                         const std::vector<std::string> &allowed)
{
    used_.insert(key);
    auto it = kv_.find(key);
    if (it == kv_.end())
        return def;
    if (std::find(allowed.begin(), allowed.end(), it->second) != allowed.end())
        return it->second;
    std::string list;
    for (const std::string &c : allowed)
        list += (list.empty() ? "" : ", ") + c;
    fail(key + "=" + it->second + ": want one of " + list);
    return def;
}

int args::workers()
{
    int w = static_cast<int>(integer("workers", 0, 0, 4096));
    cpu_set_t set;
    if (w == 0 && sched_getaffinity(0, sizeof set, &set) == 0)
        w = CPU_COUNT(&set); // the CPUs this process may use, as Go's NumCPU
    return std::max(w, 1);
}

double args::seconds() { return number("seconds", 0.2, 0.001, 3600); }

void args::done()
{
    if (!err_.empty())
        throw usage_error(err_);
    std::string unknown;
    for (const auto &kv : kv_)
        if (!used_.count(kv.first))
            unknown += (unknown.empty() ? "" : ", ") + kv.first;
    if (!unknown.empty())
        throw usage_error("unknown key " + unknown);
}

// ---- output ----------------------------------------------------------------

// Integers in full (a skynet sum must compare exactly), the rest to 10
// significant digits.
std::string pairs::str() const
{
    std::string s;
    char buf[64];
    for (const auto &kv : kv_) {
        double v = kv.second;
        if (v == std::trunc(v) && std::fabs(v) < 1e15)
            std::snprintf(buf, sizeof buf, "%.0f", v);
        else
            std::snprintf(buf, sizeof buf, "%.10g", v);
        s += (s.empty() ? "" : " ") + kv.first + "=" + buf;
    }
    return s;
}

// ---- the measurement window ------------------------------------------------

static std::int64_t snapshot(std::vector<slot> &slots,
                             std::vector<std::uint64_t> &c)
{
    std::int64_t a = now_ns();
    c.resize(slots.size());
    for (std::size_t i = 0; i < slots.size(); i++)
        c[i] = slots[i].get();
    return a + (now_ns() - a) / 2;
}

window_result window(flags &f, std::vector<slot> &slots, double seconds)
{
    const double win = seconds * 1e9, settle_max = 20e6;
    std::vector<std::uint64_t> c0, c1;
    f.start.store(1);
    sleep_ns(static_cast<std::int64_t>(std::min(win / 10, settle_max)));
    std::int64_t t0 = snapshot(slots, c0);
    f.open.store(1);
    sleep_ns(static_cast<std::int64_t>(win));
    f.open.store(0);
    std::int64_t t1 = snapshot(slots, c1);
    f.stop.store(1);
    window_result r{static_cast<double>(t1 - t0), {}};
    for (std::size_t i = 0; i < slots.size(); i++)
        r.work.push_back(static_cast<double>(c1[i] - c0[i]));
    return r;
}

// ---- statistics ------------------------------------------------------------

double sum(const std::vector<double> &x)
{
    double s = 0;
    for (double v : x)
        s += v;
    return s;
}

double mean(const std::vector<double> &x) { return sum(x) / x.size(); }

double stdev(const std::vector<double> &x)
{
    if (x.size() < 2)
        return NAN;
    double m = mean(x), ss = 0;
    for (double v : x)
        ss += (v - m) * (v - m);
    return std::sqrt(ss / (x.size() - 1));
}

void add_fairness(pairs &out, const std::vector<double> &work)
{
    double m = mean(work), lo = *std::min_element(work.begin(), work.end());
    double zero = static_cast<double>(std::count(work.begin(), work.end(), 0.0));
    out.add("fairness_min_over_mean", m > 0 ? lo / m : 0);
    out.add("zero_work_tasks", zero);
    out.add("norm_dev", m > 0 && work.size() > 1 ? stdev(work) / m : 0);
}

// Nearest rank, p in (0, 1], as bench_percentile_nearest.
static double percentile(const std::vector<double> &sorted, double p)
{
    long i = static_cast<long>(std::ceil(p * sorted.size())) - 1;
    return sorted[static_cast<std::size_t>(std::max(0L, i))];
}

void add_latency(pairs &out, std::vector<double> x)
{
    std::sort(x.begin(), x.end());
    out.add("p50_ns", percentile(x, 0.50));
    out.add("p90_ns", percentile(x, 0.90));
    out.add("p99_ns", percentile(x, 0.99));
    out.add("p999_ns", percentile(x, 0.999));
    out.add("max_ns", x.back());
    out.add("mean_ns", mean(x));
    if (x.size() > 1)
        out.add("stdev_ns", stdev(x));
    out.add("samples", static_cast<double>(x.size()));
}

// ---- workers ---------------------------------------------------------------

namespace {
// Every worker registers its scheduler before any steals from another.
class thread_barrier {
  public:
    explicit thread_barrier(int n) : left_(n) {}
    void wait()
    {
        std::unique_lock<std::mutex> lk(m_);
        if (--left_ == 0)
            cv_.notify_all();
        else
            cv_.wait(lk, [this] { return left_ == 0; });
    }

  private:
    std::mutex m_;
    std::condition_variable cv_;
    int left_;
};
} // namespace

pool::pool(int workers) : workers_(workers)
{
    if (workers_ == 1)
        return;
    using boost::fibers::algo::work_stealing;
    auto ready = std::make_shared<thread_barrier>(workers_);
    for (int i = 1; i < workers_; i++)
        threads_.emplace_back([this, ready] {
            boost::fibers::use_scheduling_algorithm<work_stealing>(workers_);
            ready->wait();
            serve();
        });
    boost::fibers::use_scheduling_algorithm<work_stealing>(workers_);
    ready->wait();
}

// A worker thread's main fiber: wait (as a fiber, so the thread keeps
// running others) until the pool ends.
void pool::serve()
{
    std::unique_lock<std::mutex> lk(mtx_);
    cv_.wait(lk, [this] { return done_; });
}

pool::~pool()
{
    {
        std::lock_guard<std::mutex> lk(mtx_);
        done_ = true;
    }
    cv_.notify_all();
    for (std::thread &t : threads_)
        t.join();
}

void join_all(std::vector<boost::fibers::fiber> &v)
{
    for (boost::fibers::fiber &f : v)
        f.join();
}

} // namespace peer
