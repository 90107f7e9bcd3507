// Helpers shared by the rules files: error messages, symbolic zeros, batching and elementwise loops.
#pragma once

#include <span>
#include <string>

#include "graft/runtime/cpu/parallel.h"
#include "graft/core/error.h"
#include "graft/core/primitive.h"
#include "graft/core/trace.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"

namespace graft::prims {

// ---- errors -----------------------------------------------------------------------------------------
/// "f32[3], f32[4]".
std::string avals_str(AvalPtrs in);
/// Throws ShapeError: "<prim>: <why> (operands f32[3], f32[4])".
[[noreturn]] void shape_error(const Primitive& p, AvalPtrs in, const std::string& why);
/// Throws TypeError: "<prim>: <why> (operands ...)".
[[noreturn]] void type_error(const Primitive& p, AvalPtrs in, const std::string& why);
void check_arity(const Primitive& p, AvalPtrs in, size_t n);

// ---- dtype classes (bit masks over DType) --------------------------------------------------------------
constexpr uint32_t bit(DType d) { return 1u << static_cast<int>(d); }
constexpr uint32_t kMaskFloat = bit(DType::f16) | bit(DType::bf16) | bit(DType::f32) | bit(DType::f64);
constexpr uint32_t kMaskSInt = bit(DType::i8) | bit(DType::i16) | bit(DType::i32) | bit(DType::i64);
constexpr uint32_t kMaskUInt = bit(DType::u8) | bit(DType::u16) | bit(DType::u32) | bit(DType::u64);
constexpr uint32_t kMaskInt = kMaskSInt | kMaskUInt;
constexpr uint32_t kMaskBool = bit(DType::bool_);
constexpr uint32_t kMaskNum = kMaskFloat | kMaskInt;
constexpr uint32_t kMaskAll = kMaskNum | kMaskBool;
constexpr uint32_t kMaskComplex = bit(DType::c64) | bit(DType::c128);
/// Floating or complex (NumPy's inexact).
constexpr uint32_t kMaskInexact = kMaskFloat | kMaskComplex;
/// Every dtype, complex included (kMaskAll is the real ones: the ordered types).
constexpr uint32_t kMaskAny = kMaskAll | kMaskComplex;
/// "floating", "integer or boolean", ... for error messages.
std::string mask_str(uint32_t mask);

// ---- params -----------------------------------------------------------------------------------------
IntList to_ints(std::span<const int64_t> s);
Shape to_shape(const IntList& v);

// ---- symbolic zeros (null Arrays) -----------------------------------------------------------------------
inline bool is_zero(const Array& t) { return !t.valid(); }
/// t, or zeros of `a` if t is a symbolic zero.
Array instantiate(const Array& t, const Aval& a);
/// Null-aware sum (add_any).
Array add_tangents(const Array& a, const Array& b);
/// Broadcasts a rank-0 t to `a`'s shape (no-op otherwise).
Array broadcast_to_aval(const Array& t, const Aval& a);
/// Sums ct down to `a` when `a` was a rank-0 operand of a broadcasting elementwise op.
Array unbroadcast(const Array& ct, const Aval& a);
/// Avals of a span of arrays.
Avals avals_of(std::span<const Array> xs);

// ---- batching -------------------------------------------------------------------------------------
/// x with its batch dim moved to 0 (unbatched values are broadcast to `size` along a new axis 0).
Array batch_to_front(const Array& x, int64_t bdim, int64_t size);
/// Rule for n-ary elementwise primitives whose operands have equal shapes or rank 0.
BatchResult batch_elementwise(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                              const BatchInfo& axis, const Params& params);
/// Shape rule helper for elementwise ops: all operands equal or rank 0; returns the common shape.
Shape elementwise_shape(const Primitive& p, AvalPtrs in);

/// Registers the decompositions of graft/prims/decompose.cpp (called once, with the built-in
/// backends: graft/backends/builtin.cpp).
void register_device_decompositions();

/// JVP rule of primitives linear in all operands: the tangent is the primitive applied to the tangents
/// (zeros instantiated).
JvpResult linear_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                     const Params& params);
/// JVP rule of primitives whose outputs have no derivative (integer results, comparisons).
JvpResult zero_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params);
/// Reads a rank-0 integer array as int64 (concrete only).
int64_t scalar_index(const Array& x);

/// Rule for unary primitives applied independently along every axis (batch dim passes through).
BatchResult batch_unary(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                        const BatchInfo& axis, const Params& params);

// ---- kernels --------------------------------------------------------------------------------------
/// Elements per parallel task of elementwise kernels.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

/// Size of a dimension of size d after dilation (d - 1 gaps of dil - 1 points): 0 stays 0.
inline int64_t dilate_dim(int64_t d, int64_t dil) { return d == 0 ? 0 : 1 + dil * (d - 1); }
/// Padding of the window operation (convolution or reduce_window) that maps an output cotangent back
/// onto the input: per dimension (before, after). in/win/out are the spatial sizes.
std::vector<std::pair<int64_t, int64_t>> window_grad_padding(const IntList& in, const IntList& win,
                                                             const IntList& strides, const IntList& out,
                                                             const std::vector<std::pair<int64_t, int64_t>>& padding,
                                                             const IntList& base_dilation,
                                                             const IntList& window_dilation);

/// A concrete array with x's data viewed as `a` (same byte size): shares the buffer when it can.
Array alias_as(const Array& x, const Aval& a);

/// Allocates the outputs of a primitive on the CPU.
Arrays alloc_outputs(std::span<const Aval> avals);

/// Runs f(begin, end) in parallel over n elements.
template <class F>
void elementwise_for(int64_t n, F&& f) {
  if (n <= kElementwiseGrain) {
    f(int64_t(0), n);
  } else {
    cpu::parallel_for(n, kElementwiseGrain, f);
  }
}

}  // namespace graft::prims
