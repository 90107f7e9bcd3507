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
  /// The most bytes of intermediates alive at once (inputs and constants excluded).
  int64_t peak_bytes = 0;

  /// "eqn 0 dot_general -> #0 f32[128,512]" lines, then "peak N bytes in K buffers".
  std::string str(const Jaxpr& j) const;
};

/// Plans the intermediates of j. A fused loop's output reuses an operand dying at it when its kernel
/// allows (FusedKernel); other outputs reuse a free buffer of their exact size, else get a new one.
MemoryPlan plan_memory(const ClosedJaxpr& j);

}  // namespace graft::compiler
