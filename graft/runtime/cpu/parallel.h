// A persistent thread pool and parallel_for for CPU kernels (one worker per core, caller included).
//
// The pool is OpenMP's team, shared with oneDNN's GEMMs and convolutions. It degrades gracefully when
// the cores are shared with other busy processes: a parallel region whose workers arrive late (they
// were descheduled, so the region would wait for them at its closing barrier) counts as contended, and
// while most recent regions are, kernels and GEMMs run on the calling thread alone, probing again with
// the whole team every so often. One thread then gets its fair share of a core instead of a team
// waiting, region after region, on whichever member the scheduler left out (a training epoch took 32x
// longer with two other busy processes on the 2 cores; with this, about 2.5x).
#pragma once

#include <cstdint>
#include <functional>

namespace graft::cpu {

/// Number of threads kernels use when the cores are free (GRAFT_NUM_THREADS, default: hardware
/// concurrency).
int num_threads();

/// The threads kernels use now: num_threads(), or 1 while the cores are contended (see above).
/// Callers that run their own OpenMP code (oneDNN) pass this on with use_kernel_threads().
int kernel_threads();

/// Sets this thread's OpenMP team size to kernel_threads() (what oneDNN reads); returns it.
int use_kernel_threads();

/// Runs f(begin, end) over [0, n) split into chunks of at least `grain` items. Runs inline when the
/// work is small, when called from inside another parallel_for, or while the cores are contended.
/// Thread t starts on the t-th contiguous share of the range (the same at every call of the same size,
/// so an op finds what the previous one wrote in its own core's caches) and, once done, takes pieces
/// of the others' shares.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

/// Whether kernels fall back to one thread while the cores are contended (default on;
/// GRAFT_ADAPTIVE_THREADS=0 keeps the whole team whatever the load).
void set_adaptive_threads(bool on);

/// For tests and benchmarks: how many parallel regions found their team late, and how many times
/// kernels fell back to one thread.
struct ContentionStats {
  int64_t late_regions = 0, fallbacks = 0;
};
ContentionStats contention_stats();

}  // namespace graft::cpu
