// A persistent thread pool and parallel_for for CPU kernels (one worker per core, caller included).
#pragma once

#include <cstdint>
#include <functional>

namespace graft::cpu {

/// Number of threads kernels use (GRAFT_NUM_THREADS, default: hardware concurrency).
int num_threads();

/// Runs f(begin, end) over [0, n) split into chunks of at least `grain` items. Runs inline when the
/// work is small or when called from inside another parallel_for.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

}  // namespace graft::cpu
