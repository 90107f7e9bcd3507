// Machine code for generated kernels: LLVM's ORC JIT (Debian's LLVM 14) with a persistent cache of
// object files, so that a second process finds its kernels compiled.
//
// The compiler emits an LLVM module (graft/compiler/codegen.cpp); compile() optimizes it for the
// host CPU (its vector extensions: AVX2, AVX-512, ...), links it into the process and returns the
// address of `symbol`. Objects are cached on disk under $GRAFT_CACHE_DIR (default
// $XDG_CACHE_HOME/graft or ~/.cache/graft), keyed by a hash of the module's IR and the host CPU;
// GRAFT_CACHE_DIR=off disables the disk cache. Files are written to a temporary name and renamed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace graft::cpu {

/// Whether graft was built with LLVM code generation.
bool have_llvm_jit();

/// Compiles `module` (created in `context`) and returns the address of `symbol` in it. Throws
/// graft::Error if LLVM reports a failure.
void* jit_compile(std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module,
                  const std::string& symbol);

/// Counters for tests and benchmarks: modules compiled by LLVM, and modules found in the disk cache.
struct JitStats {
  int64_t compiled = 0, cache_hits = 0;
};
JitStats jit_stats();

/// The host CPU name and features LLVM targets (e.g. "znver4 +avx512f,...").
std::string jit_target();

}  // namespace graft::cpu
