// CUDA C++ source of graft's GPU kernels, generated from one description per primitive and compiled
// with NVRTC at first use (graft/backends/cuda/runtime.h caches the cubins on disk). Plain strings:
// nothing here needs CUDA, so tests compile every kernel for sm_90 on machines without a GPU.
//
// Elementwise primitives are described by an expression over `a`, `b`, `c` (the operands, in their
// compute type: f16/bf16 are computed in f32, as on the CPU) and `p` (an integer parameter), e.g.
// "a + b" or "g_max(a, b)"; the helpers (g_*) live in the prelude and follow the CPU's semantics
// (NaN propagation, integer division by zero, shift counts, saturating float-to-int conversion).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graft/core/dtype.h"

namespace graft::cuda_kernels {

/// The types, f16/bf16 conversions (ld / st<T>) and g_* helpers every kernel source starts with.
const char* prelude();
/// The C type values of `d` are computed in (f16/bf16: float, bool: bool, others their storage type).
std::string compute_type(DType d);
/// The C type `d` is stored as (f16, bf16, boolean, c64 and c128 are structs of the prelude; the complex
/// ones {re, im} with the CPU's arithmetic).
std::string storage_type(DType d);
/// An expression converting `x` (of from's compute type) to to's compute type, with the CPU's
/// semantics (NaN to 0 and saturation for float to integer, nonzero to true; complex to real keeps the
/// real part, real to complex has imaginary part 0).
std::string convert_expr(const std::string& x, DType from, DType to);

/// The expression of elementwise primitive `prim` for operands of `dtype`, or nullopt when it has no
/// GPU kernel for that type (then it runs through the host).
std::optional<std::string> elementwise_expr(const std::string& prim, DType dtype);
/// Every elementwise primitive with a description (for tests).
std::vector<std::string> elementwise_prims();
/// Its operands: 1, 2, or 3 for select_n (two cases) and clamp (for tests).
int elementwise_arity(const std::string& prim);

/// An elementwise kernel: out[i] = expr(in_0[i], ...), each operand either full-sized or one element
/// (broadcast). Kernel name: `name`. Arguments: out, in_0..in_{n-1}, n (i64), scalar mask (u32), p (i64).
/// `first_is_pred`: operand 0 is a selector (select_n), read as an integer whatever the compute type.
std::string elementwise_source(const std::string& name, const std::string& expr, const std::vector<DType>& in,
                               DType compute, DType out, bool first_is_pred = false);
/// Conversion of every element from `from` to `to` (CPU semantics). Arguments: out, in, n.
std::string convert_source(const std::string& name, DType from, DType to);
/// For every multi-index k of an iteration shape of up to 8 dims: out[out_offset + k . out_stride] =
/// in[in_offset + k . in_stride] (input strides may be 0 or negative), elements of `bytes` bytes (1, 2,
/// 4, 8 or 16).
/// Arguments: out, in, n, StridedArgs (by value; layout in graft/backends/cuda/primitives.cpp).
std::string strided_copy_source(const std::string& name, int bytes);
/// Reduction of the inner `inner` elements of rows addressed through StridedArgs: one block per output
/// element. op: sum, max, min, prod, and, or, argmax, argmin. Arguments: out, in, nout, inner, ReduceArgs.
std::string reduce_source(const std::string& name, const std::string& op, DType in, DType out);
/// out[i] = (i / inner) % size: the index along one axis. Arguments: out, n, inner, size.
std::string iota_source(const std::string& name, DType out);
/// Fills n elements of `bytes` bytes (up to 16) with one value. Arguments: out, n, value (u64 bits: the
/// low word), value_hi (u64: the high word of a 16-byte value).
std::string fill_source(const std::string& name, int bytes);

/// threefry2x32 (bit-identical to the CPU's). Arguments: y0, y1, k0, k1, c0, c1, n, scalar mask (bit
/// k: operand k has one element).
std::string threefry_source(const std::string& name);
/// A running reduction along one axis, one thread per row, in the CPU's arithmetic (f32 sums kept in
/// f64, f64 sums compensated, integer sums wrapping, NaN sticking in max/min). op: sum, max, min.
/// Arguments: out, in, outer, n, inner, reverse (int).
std::string cumulative_source(const std::string& name, const std::string& op, DType dtype);
/// The strided copy of strided_copy_source, moved by start indices read on the device (one scalar per
/// index operand, of the given types, each clamped to [0, max]): added to the input offset
/// (dynamic_slice) or the output offset (dynamic_update_slice). Arguments: out, in, n, StridedArgs,
/// DynamicArgs {to_out, max[8], stride[8]}, then the index operands.
std::string dynamic_copy_source(const std::string& name, int bytes, const std::vector<DType>& index_types);

/// gather: out[i] = window b's start (starts[b], an operand offset) + offset w of element i, or `fill`
/// where ok[b] is false; (b, w) from IndexArgs {ndim, shape, bmul, wmul} over the output's dims.
/// Arguments: out, operand, starts (i64), ok (bool), n, IndexArgs, fill (u64 bits), fill_hi (the high word
/// of a 16-byte fill value). Elements of 1, 2, 4, 8 or 16 bytes.
std::string gather_source(const std::string& name, int bytes);
/// scatter_add with atomics: out[starts[b] + w] += updates[i] where ok[b], (b, w) as gather's over the
/// updates' dims; nullopt for a dtype without atomicAdd. Arguments: out, updates, starts, ok, n, IndexArgs.
std::optional<std::string> scatter_add_source(const std::string& name, DType dtype);

/// scatter with replacement, deterministically as the CPU (the last window wins): first every target's
/// highest window number (atomicMax into an i64 array filled with -1), then only that window writes.
/// Arguments: winner, starts, ok, n, IndexArgs; and out, updates, winner, starts, ok, n, IndexArgs.
std::string scatter_winner_source(const std::string& name);
std::string scatter_set_source(const std::string& name, int bytes);
/// scatter_mul / scatter_min / scatter_max (op: mul, min, max) by compare-and-swap, for 4- and 8-byte
/// types (nullopt otherwise). Arguments: out, updates, starts, ok, n, IndexArgs.
std::optional<std::string> scatter_combine_source(const std::string& name, const std::string& op, DType dtype);
/// One pass of a stable merge sort of every row's permutation (i32) by the lexicographic total order of
/// the keys (their types given; NaN last, -0.0 before 0.0, as the CPU's sort): runs of `width` merged in
/// pairs. Arguments: out, in, rows, n, width, then the keys (rows x n each).
std::string sort_pass_source(const std::string& name, const std::vector<DType>& key_types);
/// out[r, j] = in[r, perm[r, j]] over rows of n elements of `bytes` bytes. Arguments: out, in, perm,
/// total, n.
std::string take_rows_source(const std::string& name, int bytes);

}  // namespace graft::cuda_kernels
