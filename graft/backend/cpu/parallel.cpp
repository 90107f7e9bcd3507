#include "graft/backend/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace graft::cpu {

namespace {
thread_local bool tl_in_pool = false;

class Pool {
 public:
  explicit Pool(int n) : n_(n) {
    for (int i = 1; i < n_; ++i) workers_.emplace_back([this, i] { loop(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return n_; }

  // Runs task(i) for i in [0, n_) on all threads; returns when all are done.
  void run(const std::function<void(int)>& task) {
    std::lock_guard<std::mutex> serial(run_mu_);
    {
      std::lock_guard<std::mutex> lk(mu_);
      task_ = &task;
      pending_ = n_ - 1;
      ++generation_;
    }
    cv_.notify_all();
    tl_in_pool = true;
    task(0);
    tl_in_pool = false;
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  void loop(int idx) {
    tl_in_pool = true;
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* task;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        task = task_;
      }
      (*task)(idx);
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (--pending_ == 0) done_cv_.notify_one();
      }
    }
  }

  int n_;
  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* task_ = nullptr;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

int configured_threads() {
  if (const char* e = std::getenv("GRAFT_NUM_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

Pool& pool() {
  static Pool* p = new Pool(configured_threads());  // leaked on purpose: no join at exit
  return *p;
}
}  // namespace

int num_threads() { return pool().size(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  int nt = tl_in_pool ? 1 : num_threads();
  if (nt <= 1 || n <= grain) {
    f(0, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(nt, (n + grain - 1) / grain);
  std::function<void(int)> task = [&](int i) {
    if (i >= chunks) return;
    int64_t b = n * i / chunks, e = n * (i + 1) / chunks;
    if (b < e) f(b, e);
  };
  pool().run(task);
}

}  // namespace graft::cpu
