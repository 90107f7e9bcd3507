// A persistent thread pool and parallel_for for CPU kernels (one worker per core, caller included).
#pragma once

#include <cstdint>
#include <functional>

namespace graft::cpu {

/// Number of threads kernels use (GRAFT_NUM_THREADS, default: hardware concurrency).
int num_threads();

/// Runs f(begin, end) over [0, n) split into chunks of at least `grain` items. Runs inline when the
/// work is small or when called from inside another parallel_for. Thread t starts on the t-th
/// contiguous share of the range (the same at every call of the same size, so an op finds what the
/// previous one wrote in its own core's caches) and, once done, takes pieces of the others' shares.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

}  // namespace graft::cpu
