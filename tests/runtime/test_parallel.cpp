// cpu::parallel_for: every index exactly once in contiguous pieces, each thread starting on its own
// share of the range (locality between consecutive ops), and idle threads taking a slow one's pieces.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "graft/runtime/cpu/parallel.h"

namespace graft::cpu {
namespace {

TEST(ParallelFor, covers_every_index_once_in_contiguous_pieces) {
  for (int64_t n : {1, 7, 1000, 4096, 100003})
    for (int64_t grain : {1, 3, 64, 5000, 200000}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::atomic<int64_t> pieces{0};
      parallel_for(n, grain, [&](int64_t b, int64_t e) {
        ASSERT_LT(b, e);
        pieces++;
        for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "n=" << n << " grain=" << grain;
      if (n <= grain) {
        EXPECT_EQ(pieces.load(), 1);
      }
    }
  parallel_for(0, 1, [](int64_t, int64_t) { FAIL() << "no work for n = 0"; });
}

TEST(ParallelFor, each_thread_starts_on_its_own_share) {
  if (num_threads() < 2) GTEST_SKIP() << "one thread";
  set_adaptive_threads(false);  // the team, even if other tests load the machine meanwhile
  // thread 0 waits in its first piece until another thread has begun: that thread's first piece must
  // be the front of its own share, not the next piece after thread 0's (a shared counter's order)
  const int64_t n = 1 << 20;
  std::atomic<int64_t> first_other{-1};
  std::atomic<int> team{0};
  parallel_for(n, 1 << 10, [&](int64_t b, int64_t) {
    int me = omp_get_thread_num();
    team = omp_get_num_threads();
    if (me == 0) {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (first_other.load() < 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    } else if (me == 1) {
      int64_t none = -1;
      first_other.compare_exchange_strong(none, b);
    }
  });
  set_adaptive_threads(true);
  ASSERT_GE(team.load(), 2);
  EXPECT_EQ(first_other.load(), n / team.load());
}

TEST(ParallelFor, idle_threads_take_a_slow_threads_pieces) {
  if (num_threads() < 2) GTEST_SKIP() << "one thread";
  // thread 0 stalls in its first piece; the others finish their shares and take the rest of its share
  set_adaptive_threads(false);
  const int64_t n = 1 << 16;
  std::mutex mu;
  std::vector<std::pair<int64_t, int>> runs;
  std::atomic<int> team{0};
  parallel_for(n, 1 << 8, [&](int64_t b, int64_t) {
    int me = omp_get_thread_num();
    team = omp_get_num_threads();
    if (b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::lock_guard<std::mutex> lk(mu);
    runs.push_back({b, me});
  });
  set_adaptive_threads(true);
  int stolen = 0;
  for (auto [b, who] : runs) stolen += b > 0 && b < n / team.load() && who != 0;
  EXPECT_GT(stolen, 0);
}

}  // namespace
}  // namespace graft::cpu

namespace graft::cpu {
namespace {

// Kernels keep their team while the cores are free, fall back to one thread while other busy threads
// share the cores (a team would wait, region after region, on whichever member the scheduler left
// out), and take the whole team again once the load is gone.
TEST(ParallelFor, falls_back_to_one_thread_under_a_competing_load_and_recovers) {
  if (num_threads() < 2) GTEST_SKIP() << "one thread";
  set_adaptive_threads(true);
  auto regions = [](int count) {
    std::atomic<int64_t> sink{0};
    for (int i = 0; i < count; ++i)
      parallel_for(1 << 16, 1 << 10, [&](int64_t b, int64_t e) {
        int64_t s = 0;
        for (int64_t k = b; k < e; ++k) s += k;
        sink += s;
      });
  };
  // a busy thread per core and one more, each yielding never
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (int t = 0; t < 2 * num_threads() + 1; ++t)
    load.emplace_back([&] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  auto before = contention_stats();
  bool fell_back = false;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fell_back && std::chrono::steady_clock::now() < until) {
    regions(20);
    fell_back = kernel_threads() == 1;
  }
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_TRUE(fell_back) << "late regions: " << contention_stats().late_regions - before.late_regions;
  EXPECT_GT(contention_stats().fallbacks, before.fallbacks);
  // the load is gone: a probe after the backoff (at most a second) finds the team prompt again
  bool recovered = false;
  until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!recovered && std::chrono::steady_clock::now() < until) {
    regions(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    recovered = kernel_threads() == num_threads();
  }
  EXPECT_TRUE(recovered);
}

TEST(ParallelFor, the_fallback_can_be_switched_off) {
  if (num_threads() < 2) GTEST_SKIP() << "one thread";
  set_adaptive_threads(false);
  EXPECT_EQ(kernel_threads(), num_threads());
  set_adaptive_threads(true);
}

}  // namespace
}  // namespace graft::cpu
