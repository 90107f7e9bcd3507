// Executable: a jaxpr compiled for repeated execution (what a cached jit call runs).
//
// Compiling runs the optimization pipeline (graft/compiler/pipeline.h: inlining, simplification,
// constant folding, CSE, DCE, fusion), then lowering resolves every variable to a slot, precomputes output types (no shape rules at run
// time), and computes liveness so that each intermediate buffer is released right after its last
// use (the peak memory of a run is reported by `peak_bytes`).
//
// On another device (operands committed to a GPU, or a GPU as the default device) the same traced
// program is optimized for that device type (graft/compiler/target.h: the same fused groups, the
// passes its backend asks for) on its first run there, when its backend generates fused loops; each
// step is then dispatched to the device's kernels, and intermediates are released at their last use
// as on the CPU. A device without fused loops runs the traced program op by op.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "graft/core/backend.h"
#include "graft/ir/jaxpr.h"

namespace graft {

namespace compiler {
class FusedKernel;
}

class Executable {
 public:
  /// Optimizes and lowers j; `name` names the program in GRAFT_DUMP_IR files. Inputs marked in
  /// `donated` are taken over by run(): their storage serves the program's values (in place where
  /// a fused loop allows) and the caller's arrays are deleted (using them raises ValueError).
  explicit Executable(const ClosedJaxpr& j, const std::string& name = "jit", std::vector<bool> donated = {});
  /// Runs on concrete CPU arrays; `args` must match the jaxpr's input types. A donated argument whose
  /// storage is shared (a view of another array, or passed twice) is used without being taken.
  Arrays run(std::span<const Array> args) const;
  /// The most bytes alive at once of intermediates, results and donated arguments
  /// (graft/compiler/memory_plan.h; fused loops' in-place outputs counted once).
  int64_t peak_bytes() const { return peak_bytes_; }
  /// Bytes of the arguments that are not donated (held by the caller for the whole run).
  int64_t argument_bytes() const { return argument_bytes_; }
  size_t num_steps() const { return cpu_.steps.size(); }
  /// The optimized program this executable runs on the CPU.
  const ClosedJaxpr& program() const { return program_; }
  /// The program optimized for devices of `device_type` (null until a run on one whose backend
  /// generates fused loops).
  const ClosedJaxpr* device_program(int16_t device_type) const;
  /// Where compiling went (GRAFT_LOG_COMPILES=1 prints it).
  struct Stats {
    double optimize_ms = 0, kernels_ms = 0;  ///< optimize_ms includes the program cache's lookup
    int fused_loops = 0;
    bool cached_program = false;  ///< the optimized program came from the disk cache
  };
  const Stats& stats() const { return stats_; }

  /// The executable cached on j (built on first use).
  static const Executable& of(const ClosedJaxpr& j, const std::string& name = "jit");

 private:
  struct Step {
    const Primitive* prim;
    SmallVector<int32_t, 4> in;
    SmallVector<int32_t, 2> out;
    SmallVector<int32_t, 2> release;  ///< slots whose last use is this step
    std::vector<Aval> out_avals;
    Params params;
    const compiler::FusedKernel* fused;  ///< a fused loop: run directly, reusing dead operands
    std::string label;                   ///< its row in the GRAFT_PROFILE table (set when profiling)
  };
  /// A program resolved to slots: what run() walks.
  struct Lowered {
    ClosedJaxpr program;
    std::vector<Step> steps;
    std::vector<Array> slot_init;  ///< consts and literals, placed before the run
    std::vector<int32_t> in_slots, out_slots;
    int32_t num_slots = 0;
  };
  static void lower(const ClosedJaxpr& cj, const std::vector<std::vector<const Var*>>& release, bool cpu, Lowered& L);
  Arrays run_lowered(const Lowered& L, std::span<const Array> args, std::optional<Device> device) const;
  /// A device program's constants and literals on device `d`, moved there on its first run.
  const std::vector<Array>& slot_init_on(const Lowered& L, Device d) const;
  /// Argument i moved to device `d`: a host array passed again (a closed-over constant that jit passes
  /// as an argument) moves once.
  Array argument_on(size_t i, const Array& x, Device d) const;
  const Lowered* device_lowering(int16_t device_type) const;
  ClosedJaxpr program_;
  /// The program as traced, before the CPU's passes: what devices optimize for themselves, or run op
  /// by op.
  ClosedJaxpr traced_;
  std::string name_;
  Stats stats_;
  Lowered cpu_;
  mutable std::mutex device_mu_;
  mutable std::unique_ptr<Lowered> device_[kMaxDeviceTypes];
  mutable std::map<std::pair<int16_t, int16_t>, std::vector<Array>> device_slots_;  ///< by device (type, index)
  /// by device: per argument, the last host array moved there and its copy
  mutable std::map<std::pair<int16_t, int16_t>, std::vector<std::pair<Array, Array>>> device_args_;
  std::vector<Aval> in_avals_;
  std::vector<bool> donated_;
  int64_t peak_bytes_ = 0, argument_bytes_ = 0;
};

}  // namespace graft
