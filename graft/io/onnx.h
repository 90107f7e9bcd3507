// ONNX export of inference programs: an exported program (graft/io/export.h) written as an ONNX model
// (opset 17) that ONNX runtimes and tools read.
//
//   Exported e = export_fn(predict, {.name = "mlp", .in_names = {"images"}, .out_names = {"logits"}})(x);
//   io::save_onnx("mlp.onnx", e);
//
// The protobuf is written directly (no protobuf library): inputs and outputs by the program's names
// and types, the constants as initializers, one or a few ONNX nodes per equation, jit calls inlined.
// The common inference primitives are mapped: elementwise arithmetic, comparisons and selects,
// casts, dot_general (MatMul / Einsum), NCHW convolutions and max pooling, reductions, argmax, reshape,
// transpose and broadcasts. Any other primitive is a NotImplementedError naming it. Checked with the
// onnx package's checker and shape inference, and by evaluating the model's nodes against graft's
// outputs (python/tests/test_onnx.py).
#pragma once

#include <string>

#include "graft/io/export.h"

namespace graft::io {

/// The bytes of an ONNX model (a ModelProto) computing the exported program.
std::string onnx_model_bytes(const Exported& program);
/// Writes the ONNX model atomically.
void save_onnx(const std::string& path, const Exported& program);

}  // namespace graft::io
