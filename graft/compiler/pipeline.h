// The compiler's pass pipeline: what `jit` does to a traced program before running it.
//
// A pass rewrites a closed jaxpr into an equivalent one. The pipeline is a flat list of named passes
// (graft/compiler/passes/, one per file), run in order:
//
//   inline → simplify → fold_constants → cse → dce → [widen_half_products] → [accumulate_dots] → [gemm_epilogues] → fuse → dce
//
// Passes in brackets are per target: they run for the device types whose backend asks for them
// (graft/compiler/target.h). The CPU asks for widen_half_products (bf16 products in f32 where the CPU
// has no bf16 dot products) and accumulate_dots (products accumulated in place by the CPU's GEMM), the CUDA backend for gemm_epilogues (cuBLASLt's bias epilogues). The fused groups are the
// same for every target; each backend's code generator compiles them (the CPU's: graft/compiler/cpu/,
// CUDA's: graft/backends/cuda/fusion_codegen.h).
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

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graft/ir/jaxpr.h"

namespace graft::compiler {

/// A named rewrite of closed jaxprs.
struct Pass {
  const char* name;
  const char* purpose;
  ClosedJaxpr (*run)(const ClosedJaxpr& j);
  /// Runs only for targets whose backend asks for it (Target::passes): rewrites for one backend's
  /// kernels or libraries.
  bool per_target = false;
};

/// The passes `optimize` runs, in order.
const std::vector<Pass>& pipeline();
/// The pass called `name` (throws ValueError naming the known passes otherwise).
const Pass& pass_named(const std::string& name);

struct OptimizeOptions {
  /// Names the program in GRAFT_DUMP_IR files.
  std::string name = "jit";
  /// Type-check after every pass (default: in debug builds, or when GRAFT_VERIFY_IR=1).
  bool verify = false;
  /// The device type the program is for (0: the CPU): which per-target passes run.
  int16_t device_type = 0;
  /// The per-target passes to run instead of those device_type's backend asks for (tests and tools:
  /// {"gemm_epilogues"} shows a GPU's program on any machine).
  std::optional<std::vector<std::string>> passes;
};

/// Runs the pipeline on j.
ClosedJaxpr optimize(const ClosedJaxpr& j, const OptimizeOptions& opts = {});
/// Runs one pass (with verification), e.g. for golden tests.
ClosedJaxpr run_pass(const std::string& name, const ClosedJaxpr& j);

}  // namespace graft::compiler
