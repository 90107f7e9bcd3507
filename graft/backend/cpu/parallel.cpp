#include "graft/backend/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#include <omp.h>

namespace graft::cpu {

// One team of threads for everything: graft's kernels and oneDNN's GEMMs both run on OpenMP (the
// runtime oneDNN is built with), so the two never compete for the cores with separate pools, and
// a parallel region starts on threads that are still spinning from the previous one.
namespace {
int configured_threads() {
  if (const char* e = std::getenv("GRAFT_NUM_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  return std::max(1, omp_get_max_threads());
}
}  // namespace

int num_threads() {
  static const int n = [] {
    int t = configured_threads();
    omp_set_num_threads(t);
    return t;
  }();
  return n;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  int nt = omp_in_parallel() ? 1 : num_threads();
  if (nt <= 1 || n <= grain) {
    f(0, n);
    return;
  }
  int64_t pieces = (n + grain - 1) / grain;
  int team = static_cast<int>(std::min<int64_t>(nt, pieces));
  // Up to 8 pieces per thread, handed out as threads finish: on a shared machine one core is often
  // slower than the other, and a static split would leave the faster one waiting at the barrier.
  int64_t parts = std::min<int64_t>(pieces, int64_t(team) * 8);
  std::atomic<int64_t> next{0};
#pragma omp parallel num_threads(team)
  {
    for (int64_t p = next++; p < parts; p = next++) {
      int64_t b = n * p / parts, e = n * (p + 1) / parts;
      if (b < e) f(b, e);
    }
  }
}

}  // namespace graft::cpu
