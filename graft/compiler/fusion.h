// Fused loops: the `fusion` primitive and the geometry of the groups it holds, the same for every
// target. The fuse pass (graft/compiler/passes/fuse.cpp) makes the groups; each backend's code
// generator runs them: the CPU's tiled executor and LLVM loops (graft/compiler/cpu/fused_kernel.h),
// CUDA's kernels (graft/backends/cuda/fusion_codegen.h).
//
// The fuse pass replaces a group of equations by one equation
//
//   d:f32[4096,4096] = fusion[jaxpr={ lambda ; a:f32[4096,4096]. let b = reduce_max[axes=(1,)] a; ... }] x
//
// whose body holds elementwise primitives (anything with a map tile kernel), broadcasts of its
// operands, reshapes, and reductions over trailing axes. All full-sized values of the body have the
// same number of elements N (the domain); reductions fold rows of C contiguous elements (the same C
// for every reduction of a group), so row-sized values have R = N / C elements.
#pragma once

#include <cstdint>
#include <optional>

#include "graft/core/primitive.h"
#include "graft/ir/jaxpr.h"

namespace graft::compiler {

extern const Primitive fusion_p;

/// Longest row a fused loop holds whole; longer rows are processed in chunks (single phase only).
inline constexpr int64_t kMaxRowElements = 16384;

/// Values at least this large are beyond the caches (about half of an L3): the fuse pass makes a fused
/// loop of even a lone elementwise equation producing one, and the CPU writes them with non-temporal
/// stores.
inline constexpr int64_t kStreamingBytes = int64_t(16) << 20;

/// How a fused loop reads an operand broadcast into its domain: element f of the result (flat,
/// row-major) reads operand element (f / inner) % mod.
struct BroadcastPattern {
  int64_t inner = 1, mod = 1;
};
/// The pattern of broadcast_in_dim(operand -> result, dims), if the operand's non-unit dimensions
/// map to one contiguous block of the result's dimensions (ignoring unit dimensions).
std::optional<BroadcastPattern> broadcast_pattern(const Shape& operand, const Shape& result, const IntList& dims);

/// The row length C of a reduction a fused loop can run: a reduce primitive with a tile kernel whose
/// reduced axes are the operand's trailing axes and span at least 2 elements. 0 otherwise.
int64_t fusible_row_length(const Eqn& e);

/// A fusion equation's body.
const ClosedJaxpr& fusion_body(const Params& params);

/// Whether fused loops keep bf16 and f16 intermediates in f32 registers, rounding only the values they
/// store (default; as XLA's fusions with xla_allow_excess_precision and PyTorch Inductor's do: more
/// accurate and fewer instructions than eager evaluation, which rounds every operation's result).
/// GRAFT_EXCESS_PRECISION=0 rounds after every operation, which gives eager's bits exactly. Explicit
/// conversions to a half type always round: a value converted to bf16 and back is rounded. On CPUs
/// without bf16 arithmetic the compiler goes further (passes.h, widen_half_products): bf16 arithmetic
/// runs on f32 values, and a matrix product or a sum of a conversion of an f32 value to bf16 reads the value
/// before it (XLA's simplify-fp-conversions). Every backend's fused-loop generator follows it.
bool excess_precision();
/// Sets it for loops compiled from now on (tests).
void set_excess_precision(bool on);

}  // namespace graft::compiler
