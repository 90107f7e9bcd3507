#include "graft/backend/cpu/parallel.h"
#include "graft/core/env.h"

#include <algorithm>
#include <atomic>
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
  // OpenMP's thread count is a per-thread setting: every thread that runs kernels (oneDNN reads it
  // for its GEMMs) sets it once, so that a user's thread gets the same team size as the main one
  thread_local const bool set = (omp_set_num_threads(n), true);
  (void)set;
  return n;
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
  int nt = omp_in_parallel() ? 1 : num_threads();
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
#pragma omp parallel num_threads(team)
  {
    int me = omp_get_thread_num();
    for (int64_t p = shares[me].take(true); p >= 0; p = shares[me].take(true)) run(p);
    for (int k = 1; k < team; ++k) {
      Share& other = shares[(me + k) % team];
      for (int64_t p = other.take(false); p >= 0; p = other.take(false)) run(p);
    }
  }
}

}  // namespace graft::cpu
