// GEMM epilogues: a layer's bias add (and ReLU) fused into its matrix product, and the bias gradient
// computed by the weight gradient's product — what cuBLASLt's epilogues do in one call.
//
// The gemm_epilogues pass (graft/compiler/passes/gemm_epilogues.cpp; programs for devices) rewrites
//
//   c:f32[128,512] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
//   d:f32[128,512] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(128, 512)] b
//   e:f32[128,512] = add c d                    (and f = max e 0.0, when e is read only there)
//
// into `e = dot_bias[relu=False ...] x w b`, and a weight gradient beside its bias gradient
//
//   dw:f32[784,512] = dot_general[dimension_numbers=(([0], [0]), ([], []))] x g
//   db:f32[512] = reduce_sum[axes=(0,)] g
//
// into `dw, db = dot_bias_grad[...] x g`. On a CUDA device each is one cuBLASLt matmul (epilogues
// BIAS / RELU_BIAS and BGRADA); elsewhere they run as the primitives they replace.
#pragma once

#include "graft/core/primitive.h"

namespace graft::compiler {

/// (lhs, rhs, bias) -> dot_general(lhs, rhs) + bias over the last axis, then max(., 0) when the
/// boolean parameter `relu` is set; dot_general's parameters otherwise. Matrices only (no batch
/// dimensions), floating types. Compiler-internal: no differentiation or batching rules.
extern const Primitive dot_bias_p;
/// (lhs, rhs) -> (dot_general(lhs, rhs), reduce_sum(rhs, axes=(0,))) where the product contracts axis 0
/// of both (a weight gradient x^T g and its bias gradient). Compiler-internal.
extern const Primitive dot_bias_grad_p;

/// Registers both as device decompositions (the primitives they replaced), for devices without
/// epilogue kernels. Called once with the built-in backends (graft/backends/builtin.cpp).
void register_epilogue_decompositions();

}  // namespace graft::compiler
