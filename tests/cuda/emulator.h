// Runs graft's generated CUDA C++ kernels on the CPU, for tests on machines without a GPU.
//
// The sources are compiled by the host's C++ compiler (the one that built the tests) behind a header
// that makes CUDA's built-ins host code: the threads of a block are std::threads that meet at a
// barrier for __syncthreads(), warp shuffles exchange values through the block (so every thread of
// the block must reach them together, as graft's kernels are written to), __shared__ variables are
// statics (blocks run one after another), atomics are std::atomic_ref. The shared object is loaded
// with dlopen. Launching runs `grid` blocks of `block` threads with CUDA's argument convention (an
// array of pointers to the arguments).
//
// It checks what the generated code computes: indexing, the order of loops and reductions, lanes
// sharing a row through shuffles, conversions. Timing, memory coalescing and the real compiler are
// the GPU's (NVRTC compiles every source for sm_90 in the CUDA tests).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace graft::testing {

class EmulatedModule {
 public:
  /// Compiles several kernel sources (each with its own prelude) into one shared object; kernel i
  /// is `names[i]` of `sources[i]`. Throws std::runtime_error with the compiler's output on failure.
  EmulatedModule(const std::vector<std::string>& sources, const std::vector<std::string>& names);
  ~EmulatedModule();
  EmulatedModule(const EmulatedModule&) = delete;
  EmulatedModule& operator=(const EmulatedModule&) = delete;
  /// Runs kernel i over grid x block threads; args[k] points at the k-th argument.
  void launch(size_t i, unsigned grid, unsigned block, void** args) const;

  /// Whether a host compiler is known (GRAFT_TEST_CXX, set by the build).
  static bool available();

 private:
  void* handle_ = nullptr;
  std::vector<void (*)(unsigned, unsigned, void**)> entries_;
  std::string dir_;
};

}  // namespace graft::testing
