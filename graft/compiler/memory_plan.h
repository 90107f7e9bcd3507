// Memory planning: when each intermediate of a program dies, which buffer each one occupies, and
// the program's peak. The Executable releases values at the points the plan gives (their buffers go
// back to the allocator's free lists and serve the next same-sized value), and fused loops write into
// a dying operand's buffer where the plan says so.
//
//   MemoryPlan p = plan_memory(optimized_program);
//   std::cout << p.str(*optimized_program.jaxpr);   // one line per equation, then the peak
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graft/ir/jaxpr.h"

namespace graft::compiler {

struct MemoryPlan {
  /// Per equation: per output, the buffer it occupies (-1 for results nobody reads).
  std::vector<std::vector<int>> buffer;
  /// Per equation: its operand (index) whose buffer an output takes over in place, or -1.
  std::vector<std::vector<int>> in_place;
  /// Per equation: the variables whose last use it is (inputs, consts and outputs of the program are
  /// never released).
  std::vector<std::vector<const Var*>> release;
  std::vector<int64_t> buffer_bytes;
  /// Per program input: the buffer of a donated argument, else -1.
  std::vector<int> arg_buffer;
  /// The most bytes alive at once of intermediates, results and donated arguments (constants and
  /// the other arguments excluded).
  int64_t peak_bytes = 0;
  /// Bytes of the arguments not donated: the caller holds them for the whole run, so a call's peak
  /// is argument_bytes + peak_bytes.
  int64_t argument_bytes = 0;

  /// "arg 0 (donated) -> #0 f32[512]" lines, "eqn 0 dot_general -> #1 f32[128,512]" lines, then
  /// "peak N bytes in K buffers (+ M bytes of arguments)".
  std::string str(const Jaxpr& j) const;
};

/// Plans the intermediates of j. A fused loop's output reuses an operand dying at it when its kernel
/// allows (FusedKernel), a dot_general_add's its addend (accumulate.h); other outputs reuse a free
/// buffer of their exact size, else get a new one.
/// Inputs marked in `donated` (jit's donate_argnums) are planned like intermediates: they die at
/// their last use and their buffers serve later values, in place where a fused loop allows.
MemoryPlan plan_memory(const ClosedJaxpr& j, const std::vector<bool>& donated = {});

}  // namespace graft::compiler
