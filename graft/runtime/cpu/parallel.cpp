#include "graft/runtime/cpu/parallel.h"
#include "graft/core/env.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include <omp.h>

namespace graft::cpu {

// One team of threads for everything: graft's kernels and oneDNN's GEMMs both run on OpenMP (the
// runtime oneDNN is built with), so the two never compete for the cores with separate pools, and
// a parallel region starts on threads that are still spinning from the previous one.
namespace {
int configured_threads() {
  if (int64_t n = env::integer("GRAFT_NUM_THREADS", 0, 1, 4096)) return static_cast<int>(n);
  return std::max(1, omp_get_max_threads());
}
}  // namespace

int num_threads() {
  static const int n = configured_threads();
  return n;
}

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Contention: a worker that joins its region more than kLateNs after the region began was not running
// (descheduled, or asleep after a long idle spell). `late` is a moving score of the recent regions
// (fixed point, 1024 = all late); above kDegradeScore kernels run on one thread for `backoff_ns`, then
// probe with the whole team again. The backoff doubles while probes find the cores still busy (up to
// a second) and resets once a probe finds them free.
constexpr int64_t kLateNs = 300'000;
constexpr int kDegradeScore = 400;
constexpr int64_t kMinBackoffNs = 50'000'000, kMaxBackoffNs = 1'000'000'000;

struct Contention {
  std::atomic<int> late{0};
  std::atomic<int64_t> until{0};  // single-threaded until this time
  std::atomic<int64_t> backoff{kMinBackoffNs};
  std::atomic<bool> probing{false};
  std::atomic<int64_t> late_regions{0}, fallbacks{0};

  bool degraded() const { return until.load(std::memory_order_relaxed) > now_ns(); }
  void record(int64_t arrival_ns) {
    bool is_late = arrival_ns > kLateNs;
    if (is_late) late_regions.fetch_add(1, std::memory_order_relaxed);
    int old = late.load(std::memory_order_relaxed);
    int next = old - old / 8 + (is_late ? 1024 / 8 : 0);
    late.store(next, std::memory_order_relaxed);
    if (probing.load(std::memory_order_relaxed)) {
      probing.store(false, std::memory_order_relaxed);
      if (!is_late) {  // the cores are free again
        backoff.store(kMinBackoffNs, std::memory_order_relaxed);
        late.store(0, std::memory_order_relaxed);
        return;
      }
      backoff.store(std::min(kMaxBackoffNs, 2 * backoff.load(std::memory_order_relaxed)), std::memory_order_relaxed);
      next = 1024;
    }
    if (next > kDegradeScore) {
      until.store(now_ns() + backoff.load(std::memory_order_relaxed), std::memory_order_relaxed);
      fallbacks.fetch_add(1, std::memory_order_relaxed);
      probing.store(true, std::memory_order_relaxed);  // the first region after the backoff decides
      late.store(0, std::memory_order_relaxed);
    }
  }
};

Contention& contention() {
  static Contention* c = new Contention();  // never destroyed: kernels may run during exit
  return *c;
}

std::atomic<int> g_adaptive{-1};  // -1: not read from the environment yet
bool adaptive() {
  int a = g_adaptive.load(std::memory_order_relaxed);
  if (a < 0) {
    a = env::flag("GRAFT_ADAPTIVE_THREADS", true) ? 1 : 0;
    g_adaptive.store(a, std::memory_order_relaxed);
  }
  return a == 1;
}

}  // namespace

void set_adaptive_threads(bool on) {
  g_adaptive.store(on ? 1 : 0);
  if (!on) contention().until.store(0);
}

int kernel_threads() { return adaptive() && contention().degraded() ? 1 : num_threads(); }

int use_kernel_threads() {
  int t = kernel_threads();
  // OpenMP's team size is a per-thread setting: every thread that runs oneDNN code sets it
  thread_local int set = 0;
  if (set != t) {
    omp_set_num_threads(t);
    set = t;
  }
  return t;
}

ContentionStats contention_stats() {
  return {contention().late_regions.load(), contention().fallbacks.load()};
}

namespace {

// The pieces [lo, hi) of one thread's share, packed in one word so that the owner (taking from the
// front) and a thief (taking from the back) never hand out the same piece.
struct alignas(64) Share {
  std::atomic<uint64_t> v{0};
  void set(uint32_t lo, uint32_t hi) { v.store(uint64_t(hi) << 32 | lo, std::memory_order_relaxed); }
  int64_t take(bool front) {
    uint64_t old = v.load(std::memory_order_relaxed);
    for (;;) {
      uint32_t lo = static_cast<uint32_t>(old), hi = static_cast<uint32_t>(old >> 32);
      if (lo >= hi) return -1;
      uint64_t next = front ? (uint64_t(hi) << 32 | (lo + 1)) : (uint64_t(hi - 1) << 32 | lo);
      if (v.compare_exchange_weak(old, next, std::memory_order_relaxed)) return front ? lo : hi - 1;
    }
  }
};

}  // namespace

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  int nt = omp_in_parallel() ? 1 : kernel_threads();
  if (nt <= 1 || n <= grain) {
    f(0, n);
    return;
  }
  int64_t pieces = (n + grain - 1) / grain;
  int team = static_cast<int>(std::min<int64_t>(nt, pieces));
  // Thread t owns the t-th contiguous share of the range, the same share at every call of the same
  // size: an op reading what the previous one wrote finds its part in its own core's caches (on this
  // VM a value written by the other core costs 2x to read: eager x + b over 1024x512, whose
  // broadcast copy and add were split dynamically, took 155 us; with fixed shares, 79). Each share is
  // cut into up to 8 pieces; a thread that finishes its own takes the others' from their far end, so
  // a core slowed down by the shared machine does not leave the other waiting at the barrier.
  int64_t parts = std::min<int64_t>(pieces, int64_t(team) * 8);
  Share on_stack[8];  // no allocation for the usual team sizes
  std::unique_ptr<Share[]> on_heap(team > 8 ? new Share[static_cast<size_t>(team)] : nullptr);
  Share* shares = on_heap ? on_heap.get() : on_stack;
  for (int t = 0; t < team; ++t)
    shares[t].set(static_cast<uint32_t>(parts * t / team), static_cast<uint32_t>(parts * (t + 1) / team));
  auto run = [&](int64_t p) {
    int64_t b = n * p / parts, e = n * (p + 1) / parts;
    if (b < e) f(b, e);
  };
  // the latest moment a worker joined (relative to the start): how late the team was
  std::atomic<int64_t> arrival{0};
  const int64_t t0 = now_ns();
#pragma omp parallel num_threads(team)
  {
    int me = omp_get_thread_num();
    if (me != 0) {
      int64_t a = now_ns() - t0, prev = arrival.load(std::memory_order_relaxed);
      while (a > prev && !arrival.compare_exchange_weak(prev, a, std::memory_order_relaxed)) {
      }
    }
    for (int64_t p = shares[me].take(true); p >= 0; p = shares[me].take(true)) run(p);
    for (int k = 1; k < team; ++k) {
      Share& other = shares[(me + k) % team];
      for (int64_t p = other.take(false); p >= 0; p = other.take(false)) run(p);
    }
  }
  // a calling thread's first region starts OpenMP's workers (milliseconds): not a sign of contention
  thread_local bool started = false;
  if (started) contention().record(arrival.load(std::memory_order_relaxed));
  started = true;
}

}  // namespace graft::cpu
