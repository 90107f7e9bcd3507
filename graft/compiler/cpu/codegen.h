// Code generation for fused loops: a run of elementwise primitives becomes one machine-code loop
// (LLVM, see graft/runtime/cpu/llvm_jit.h) that keeps every intermediate in vector registers.
//
// The tiled executor (fusion.h) hands over a LoopSpec: the loop's operands (read at every index, or
// one value for the whole loop), its operations in order, and which values it stores. The generated
// function is `void f(char* const* ptrs, int64_t n)`: ptrs holds the operand pointers followed by
// the output pointers (and the reductions' accumulators); it computes n elements. The transcendental functions are the same
// polynomials as graft::vmath, operation for operation, so generated and interpreted loops give
// bit-identical results (for bf16 and f16 values, with excess precision off: see excess_precision() in fusion.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graft/core/array.h"
#include "graft/core/params.h"
#include "graft/core/primitive.h"

namespace graft::compiler {

struct LoopSpec {
  struct Operand {
    DType dtype;
    bool uniform = false;  ///< one value for the whole loop (read at index 0)
    Array literal;         ///< a known rank-0 value: compiled in, no pointer
    /// Prefetch (into L2) the n elements that follow this operand's block, one line per vector read:
    /// the next block's memory traffic then overlaps this block's arithmetic.
    bool prefetch_next = false;
    /// Prefetch 4 KiB ahead of every line read: a stream from memory under a loop that computes much
    /// per element, which the hardware prefetcher alone does not run far enough ahead of.
    bool prefetch_ahead = false;
    /// With rows (LoopSpec::row): one value per row, read at index i / row (a row's mean in a layer
    /// norm), or a row's worth of values read at index i % row (its scale).
    bool per_row = false, per_column = false;
  };
  struct Op {
    const Primitive* prim;
    Params params;
    std::vector<int> args;  ///< value ids: operands are 0..k-1, op j defines value k + j
    DType dtype;            ///< result dtype
  };
  std::vector<Operand> operands;
  std::vector<Op> ops;
  std::vector<int> outputs;  ///< value ids stored, in pointer order after the (non-literal) operands
  /// Per output: write with non-temporal stores (for outputs much larger than the caches, which are
  /// then not read for ownership). The pointers must be 64-byte aligned.
  std::vector<bool> streaming;
  /// Reductions folded into the loop (reduce_sum/max/min/prod of a value): each has an accumulator
  /// pointer after the output pointers, into which the loop folds its n elements; with `init` set the
  /// accumulator's old value is ignored.
  struct Reduction {
    const Primitive* prim;
    int value;
  };
  std::vector<Reduction> reductions;
  /// Elements of a row, when the loop runs over whole rows (0: a flat loop): its n elements are
  /// n / row rows, each reduction folds each row into an accumulator of its own (acc[i / row], always
  /// started afresh), and operands may be per_row or per_column. A fused loop over short rows then
  /// runs its blocks of several rows in one call with no copy of a row's values per element.
  int64_t row = 0;
};

/// f(ptrs, n, init): operands, outputs and accumulators in ptrs; init starts the accumulators afresh.
using LoopFn = void (*)(char* const* ptrs, int64_t n, int64_t init);

/// Whether the loop generator handles `prim` on operands of these types.
bool can_generate(const Primitive& prim, std::span<const DType> in, DType out, const Params& params);
/// Whether a reduction primitive can be folded into a generated loop for this dtype.
bool can_generate_reduction(const Primitive& prim, DType d);
/// Machine code for several loops, compiled as one module (one LLVM run, one cached object); null
/// functions when graft has no LLVM (or GRAFT_CODEGEN=0).
std::vector<LoopFn> generate_loops(std::span<const LoopSpec* const> specs);
/// Whether generate_loops produces code (LLVM present and GRAFT_CODEGEN not 0).
bool codegen_enabled();
/// Turns code generation on or off for kernels compiled from now on (tests compare both paths);
/// without LLVM it stays off.
void set_codegen_enabled(bool on);

}  // namespace graft::compiler
