// The compiler's pass pipeline: what `jit` does to a traced program before running it.
//
// A pass rewrites a closed jaxpr into an equivalent one. The pipeline is a flat list of named passes
// (graft/compiler/passes/, one per file), run in order:
//
//   inline → simplify → fold_constants → cse → dce → accumulate_dots → gemm_epilogues → fuse → dce
//
// A program for a GPU (OptimizeOptions::target) leaves out the passes that rewrite for the CPU's
// kernels (accumulate_dots: products accumulated in place by the CPU's GEMM) and the CPU leaves out
// those for devices' libraries (gemm_epilogues: cuBLASLt's bias epilogues); the fused loops are the
// same groups for both, compiled by the CUDA generator (graft/compiler/cuda_fusion.h) on a GPU.
//
// GRAFT_SKIP_PASSES=name,name leaves passes out (every name must be a pass's). With GRAFT_DUMP_IR=dir
// every run writes the IR before and after each pass to
// dir/<program>.<NN>.<pass>.txt; the verifier type-checks the IR after every pass in debug builds
// (and always when GRAFT_VERIFY_IR=1), naming the pass that broke it.
//
//   ClosedJaxpr j = graft::make_jaxpr(f)(x);
//   ClosedJaxpr opt = graft::compiler::optimize(j);   // fused, simplified; same results
//   std::cout << opt;
#pragma once

#include <string>
#include <vector>

#include "graft/ir/jaxpr.h"

namespace graft::compiler {

/// A named rewrite of closed jaxprs.
struct Pass {
  const char* name;
  const char* purpose;
  ClosedJaxpr (*run)(const ClosedJaxpr& j);
  bool cpu_only = false;     ///< rewrites for the CPU's kernels: left out of programs for other devices
  bool device_only = false;  ///< rewrites for devices' libraries (cuBLASLt's epilogues): not on the CPU
};

/// Where an optimized program runs.
enum class Target { cpu, device };

/// The passes `optimize` runs, in order.
const std::vector<Pass>& pipeline();
/// The pass called `name` (throws ValueError naming the known passes otherwise).
const Pass& pass_named(const std::string& name);

struct OptimizeOptions {
  /// Names the program in GRAFT_DUMP_IR files.
  std::string name = "jit";
  /// Type-check after every pass (default: in debug builds, or when GRAFT_VERIFY_IR=1).
  bool verify = false;
  /// The CPU, or another device (a GPU): passes marked cpu_only are left out.
  Target target = Target::cpu;
};

/// Runs the pipeline on j.
ClosedJaxpr optimize(const ClosedJaxpr& j, const OptimizeOptions& opts = {});
/// Runs one pass (with verification), e.g. for golden tests.
ClosedJaxpr run_pass(const std::string& name, const ClosedJaxpr& j);

}  // namespace graft::compiler
