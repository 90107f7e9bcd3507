// Cost analysis: the arithmetic and memory traffic a program implies, as XLA's HloCostAnalysis counts
// them (what JAX's `compiled.cost_analysis()` reports), for jit's ahead-of-time stages and for
// roofline estimates.
//
//   CostAnalysis c = cost_analysis(jaxpr);   // c.flops, c.transcendentals, c.bytes_accessed
#pragma once

#include "graft/ir/jaxpr.h"

namespace graft::compiler {

struct CostAnalysis {
  /// Floating-point (and integer) operations: 2·M·N·K for a matrix product, 2 per multiply-add of a
  /// convolution's window, one per element of an elementwise result, one per element reduced.
  double flops = 0;
  /// Elementwise results of exp, log, tanh, logistic, trig, erf, pow, sqrt, rsqrt, ... (each also one flop).
  double transcendentals = 0;
  /// Bytes read and written by the program's top-level operations: every operand and result of each
  /// equation, once. A fused loop counts only its operands and results (what it keeps in registers
  /// costs nothing), so the optimized program's figure is what fusion saves memory traffic to.
  double bytes_accessed = 0;
};

/// The cost of running j once. Bodies of higher-order primitives count as they run: a scan's body
/// `length` times, a while loop's condition and body once (its trip count is unknown, as XLA counts it),
/// the most expensive branch of a cond, calls (jit, custom rules, checkpoint, fusion) their jaxpr.
/// Primitives without a formula here (sorts, linear algebra, collectives) count their bytes only.
CostAnalysis cost_analysis(const ClosedJaxpr& j);

}  // namespace graft::compiler
