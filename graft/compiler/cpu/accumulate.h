// Products accumulated into a value: the compiler's `dot_general_add` primitive.
//
// The accumulate_dots pass (graft/compiler/passes/accumulate_dots.cpp) rewrites a product that is
// scaled and added to a value of its own type, as in an SGD update of a layer's weights,
//
//   g:f32[784,512] = dot_general[dimension_numbers=(([0], [0]), ([], []))] x dy
//   s:f32[784,512] = mul g 0.01:f32[]
//   w2:f32[784,512] = sub w s
//
// into one equation
//
//   w2:f32[784,512] = dot_general_add[alpha=-0.01 beta=1.0 dimension_numbers=(([0], [0]), ([], []))] x dy w
//
// meaning w2 = alpha * dot_general(x, dy) + beta * w: one GEMM with BLAS's beta, so the product is
// never written out and read back by a second loop. When w dies at this equation (a donated
// parameter), the result takes over w's buffer and the GEMM accumulates into it in place.
#pragma once

#include <span>

#include "graft/core/array.h"
#include "graft/core/params.h"
#include "graft/core/primitive.h"

namespace graft::compiler {

/// Operands (lhs, rhs, addend); dot_general's parameters plus `alpha` and `beta` (doubles). Compiler-
/// internal like `fusion`: made after all transformations, so it has no differentiation or batching
/// rules. Floating dtypes; the addend has the product's type.
extern const Primitive dot_general_add_p;

/// Runs dot_general_add on concrete CPU arrays: operand i is dead[i] where that is set (moved out of
/// the caller's hands, see Executable), else in[i]. The result takes over a dead addend's buffer
/// when no other handle to it exists; otherwise the addend is copied into a new buffer first.
Array run_dot_general_add(std::span<const Array> in, std::span<Array> dead, const Params& params);

}  // namespace graft::compiler
