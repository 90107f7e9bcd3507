// What the compiler knows of the device a program is optimized for, per device type: the passes its
// backend asks for and whether it generates fused loops. Backends set it when they register
// (graft/backends/backend.h); the CPU's is registered with the built-in backends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace graft {
struct Eqn;
}

namespace graft::compiler {

struct Target {
  /// The per-target passes of the pipeline (Pass::per_target) this device's programs run, e.g. the
  /// CPU's accumulate_dots or a GPU's gemm_epilogues. Others are left out.
  std::vector<std::string> passes;
  /// A code generator runs `fusion` bodies on this device (its backend's fusion kernel): jit runs the
  /// program optimized for the device. Otherwise a jitted program runs there op by op. (The CPU's fused
  /// loops are the fusion primitive's own kernel, graft/compiler/cpu/: jit always compiles for the CPU.)
  bool fused_loops = false;
  /// Which equations its code generator compiles (null: every one the fuse pass groups). The fuse pass
  /// leaves the others out of this target's groups, so that one equation the generator lacks (a complex
  /// sine on a GPU) does not send a whole group op by op.
  bool (*fusible)(const Eqn& e) = nullptr;
};

/// Sets device type `device_type`'s target; ValueError when a pass it names is not a per-target pass of
/// the pipeline.
void set_target(int16_t device_type, Target t);
/// The target of `device_type` (an empty one when its backend set none).
Target target_of(int16_t device_type);

/// The target the pipeline optimizes for on this thread: optimize sets it for its passes (a
/// TargetScope); outside optimize, the CPU's.
const Target& current_target();
/// Makes `device_type`'s target the current one on this thread while it lives.
class TargetScope {
 public:
  explicit TargetScope(int16_t device_type);
  ~TargetScope();
  TargetScope(const TargetScope&) = delete;
  TargetScope& operator=(const TargetScope&) = delete;

 private:
  const Target* saved_;
  Target mine_;
};

}  // namespace graft::compiler
