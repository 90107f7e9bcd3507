// Placement: where an operation runs, given where its operands live (JAX's rules). Eager primitives
// (graft/core/trace.cpp), jitted programs (graft/compiler/executable.cpp) and fused loops
// (graft/compiler/fusion.cpp) all ask this one function.
//
//   - an operand committed to a device (device_put, or the result of an operation on committed
//     operands) pins the operation there; operands committed to two devices are an error;
//   - otherwise the operation runs on the default device (graft::default_device());
//   - uncommitted operands that live elsewhere (C++ scalars, arrays made on the CPU) move there.
#pragma once

#include <span>

#include "graft/core/array.h"

namespace graft {

struct Placement {
  Device device;           ///< where the operation runs
  bool committed = false;  ///< an operand is committed there: so are the results
  bool moves = false;      ///< some concrete operand lives on another device and must move
};

/// The placement of an operation named `what` on `operands` (and `more`: a program's constants, say).
/// Tracers and null arrays are ignored. Raises ValueError naming `what`, both devices and the operands'
/// types when operands are committed to different devices.
Placement place(std::span<const Array> operands, const char* what, std::span<const Array> more = {});

}  // namespace graft
