// Masking over a batch dimension: one program compiled at a bucket size b serves every batch size
// n <= b (the inputs padded to b rows), with the same results on the first n rows as the program
// traced at n. What jit's shape polymorphism runs on (JitOptions::polymorphic, graft/transforms/polymorphic.h).
//
// graft's shapes are concrete, so the symbolic batch dimension is found by tracing the function at two
// sizes and comparing the programs: the dimensions that differ are the batch's (an axis of size f·b
// for a fixed f), the constants that differ are formulas in b (a mean's count, f·b + d or
// 1/(f·b + d) with integers f and d), and everything else must be equal. The masked program then
//   - computes those constants from the batch size n, a new last input (i32[]);
//   - keeps the padded rows out of everything that combines rows: a reduction, a contraction (dot or
//     convolution), a reverse cumulative scan or a scatter over the batch axis sees its identity
//     (0, 1, -inf, ...) there, selected, not multiplied, so that padded rows holding inf or NaN
//     cannot leak;
//   - refuses (NotImplementedError naming the equation) what masking cannot express: sorting, reversing
//     or gathering along the batch, two batch axes in one value, the batch inside control flow.
// Rows at or past n of the batch-sized outputs are unspecified; the caller slices them off.
//
// A new size n is checked before the program serves it: the function traced at n must be the program
// at b up to the batch dimension, and its batch-dependent constants must equal the formulas at n, bit
// for bit. A function that branches on the batch size in C++ therefore gets an exact compile for the
// sizes where it does, never a wrong answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graft/ir/jaxpr.h"

namespace graft {

/// Where a value's batch dimension is: axis `axis` has size factor·b (a flattened batch of rows of
/// `factor` elements when factor > 1); axis < 0: the value does not depend on the batch size.
struct BatchAxis {
  int64_t axis = -1;
  int64_t factor = 1;
  bool batched() const { return axis >= 0; }
  friend bool operator==(const BatchAxis& a, const BatchAxis& b) { return a.axis == b.axis && a.factor == b.factor; }
};

/// A constant of the program that depends on the batch size n: value = f·n + d, or 1/(f·n + d), with
/// integers f and d, computed in f64 (i64 for integer constants) and converted to the constant's dtype.
struct SizeFormula {
  size_t eqn = 0, input = 0;  ///< the literal operand it replaces
  DType dtype = DType::f32;
  bool weak = false;
  bool reciprocal = false;
  double f = 1, d = 0;
  /// The value at batch size n (what the masked program computes), as a concrete scalar.
  Array at(int64_t n) const;
};

/// A program masked over its batch dimension.
struct MaskedProgram {
  int64_t bucket = 0;                 ///< the batch size it was traced at (its inputs' batch dimension)
  ClosedJaxpr jaxpr;                  ///< the inputs of the traced program, then n: i32[]
  std::vector<BatchAxis> out_axes;    ///< of each output
  ClosedJaxpr reference;              ///< the program traced at `bucket`, calls inlined (for checks)
  std::vector<BatchAxis> var_axes;    ///< the batch axis of every variable of `reference`, in order
  std::vector<SizeFormula> formulas;  ///< its batch-dependent literals
};

/// Builds the masked program from the function traced at the bucket size b and at another size p
/// (any size the function accepts, smaller or larger). Throws NotImplementedError saying why when
/// the program cannot be masked.
MaskedProgram mask_batch(const ClosedJaxpr& at_b, int64_t b, const ClosedJaxpr& at_p, int64_t p);

/// Checks that the function traced at n computes what `m` computes at n (see above); throws
/// NotImplementedError saying where they differ.
void check_batch_size(const MaskedProgram& m, const ClosedJaxpr& at_n, int64_t n);

}  // namespace graft
