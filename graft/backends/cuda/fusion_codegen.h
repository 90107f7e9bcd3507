// Fused loops for the GPU: a `fusion` body (graft/compiler/fusion.h) as one CUDA kernel.
//
// The fuse pass groups equations once, for every target; this is the second code generator for the
// groups it makes (the first is the CPU's tiled executor with its LLVM loops). The kernel is CUDA
// C++ source, compiled with NVRTC by the CUDA runtime (graft/backends/cuda/runtime.h) and cached on
// disk like every kernel; generating it needs no GPU, so its source is tested everywhere.
//
// Two shapes of kernel:
// - elementwise (no reductions): one thread per `vector` consecutive elements in a grid-stride loop;
//   full-sized operands and outputs move as aligned vectors of 16 bytes when every one of them has
//   the same element size, intermediates never leave registers.
// - rows (reductions over the trailing R x C): `threads_per_row` threads share a row (a group of
//   lanes of a warp for short rows, a warp, or the whole block for long ones). The body runs in
//   loops over the row, one per level of reductions it needs (softmax: max, then the sum of exp, then
//   the quotient); each reduction folds its lane's elements, then the lanes by warp shuffles (and
//   shared memory across warps), so every lane holds the row's value for the next loop. Values a
//   later loop reads again stay in registers when a lane holds at most 16 elements of the row;
//   longer rows recompute them from the operands (which the L2 cache then serves).
// Values of f16/bf16 are computed in f32 and rounded to their type after every operation, as the CPU
// does, and conversions, NaN rules and integer semantics are the element kernels' (kernels.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/ir/jaxpr.h"

namespace graft::cuda {

/// A fused body as one CUDA kernel.
struct CudaFusedKernel {
  static constexpr const char* kName = "graft_fused";  ///< the kernel's extern "C" name
  std::string source;  ///< CUDA C++ with the prelude (compiles with NVRTC, no headers)
  int64_t n = 0;       ///< elements of the domain
  int64_t row = 0;     ///< reductions' row length C (0: an elementwise kernel)
  int64_t rows = 0;    ///< n / row
  int vector = 1;      ///< consecutive elements a thread moves as one aligned vector (elementwise; rows with row_vectors)
  int threads_per_row = 0;  ///< rows: lanes that share a row
  int rows_per_block = 1;
  int block = 256;     ///< threads per block
  int loops = 1;       ///< passes over each row (levels of reductions + 1)
  bool cached = false;  ///< rows: values read by later loops stay in registers
  /// What the grid spreads over (a block takes one at a time): vectors of elements, or groups of
  /// rows_per_block rows. A launch needs at most this many blocks.
  int64_t units = 0;
  /// The kernel's arguments, all device pointers: the body's inputs (consts first, then invars), then
  /// its outputs.
  std::vector<DType> inputs, outputs;
  /// Per output: the inputs (indices into `inputs`) whose buffer it may take over when the caller will
  /// not read that input again — elementwise kernels only, where every thread reads an element of such
  /// an input before it writes the same element of the output (an in-place update: a donated
  /// parameter updated by the optimizer).
  std::vector<std::vector<int>> reusable;
  /// "elementwise 1048576 (vector 4)" or "rows 8192x8192, 1024 lanes a row, 3 loops, cached".
  std::string describe() const;
};

struct CudaFusionOptions {
  /// Most elements a thread moves as one vector (1 turns vector accesses off: operands not aligned
  /// to 16 bytes).
  int max_vector = 8;
  /// Rows longer than 32: about how many elements of a row each lane holds (a power of 2; the lanes
  /// of a row are then row / row_elements, between 32 and 1024). 0: GRAFT_CUDA_ROW_ELEMS, else 8.
  int row_elements = 0;
  /// Rows: each lane moves its elements as vectors of 16 bytes (when the row and every full-sized
  /// operand allow it). 1 on, 0 off, -1: GRAFT_CUDA_ROW_VECTORS (off by default until measured on a GPU).
  int row_vectors = -1;
};

/// Whether the generator compiles equation `e` in a fused body: every real-valued one the fuse pass
/// groups; complex ones where the element kernels have an expression for them (arithmetic, parts,
/// conversions, selections, exp / log / sqrt / abs), not complex reductions. The CUDA target's
/// fusible predicate (compiler::Target).
bool cuda_fusible(const Eqn& e);

/// The kernel of a fusion body, or nullopt when the body holds an operation the generator does not
/// compile (then `why` says which; the body runs op by op instead).
std::optional<CudaFusedKernel> cuda_fused_kernel(const ClosedJaxpr& body, const CudaFusionOptions& opts = {},
                                                 std::string* why = nullptr);

/// The outputs of a launch of `k` on `dev` for operands `in` (the body's invars; its `nconsts`
/// constants come first in k.inputs): each a new array, or a dead operand's buffer where k.reusable
/// allows it and nothing else holds that operand.
Arrays fused_outputs(const CudaFusedKernel& k, size_t nconsts, std::span<const Array> in, std::span<const Aval> outs,
                     Device dev);

}  // namespace graft::cuda
