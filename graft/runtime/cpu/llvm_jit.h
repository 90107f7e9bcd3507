// Machine code for generated kernels: LLVM's ORC JIT (Debian's LLVM 14) with a persistent cache of
// object files, so that a second process finds its kernels compiled.
//
// The compiler emits an LLVM module (graft/compiler/cpu/codegen.cpp); jit_compile() compiles it for the
// host CPU (its vector extensions: AVX2, AVX-512, ...), links it into the process and returns the
// addresses of its functions. Objects are cached on disk under $GRAFT_CACHE_DIR (default
// $XDG_CACHE_HOME/graft or ~/.cache/graft), keyed by the caller's key and the host CPU;
// GRAFT_CACHE_DIR=off disables the disk cache. The directory is kept under GRAFT_CACHE_MAX_BYTES
// (default 256 MiB) by deleting the objects used least recently after each new one is written.
// Each file ("k<hash>.gko") holds a header (a magic number, the object's size and 128-bit hash, and
// the full key it was compiled for) before the object: a truncated, overwritten or foreign file is
// compiled again, never loaded; pruning touches only files named and headed so. Files are written to
// a fresh temporary name (O_EXCL | O_NOFOLLOW) and renamed;
// jit_load_cached() links a cached object with RuntimeDyld alone, without starting the ORC JIT.
// The caller names each module by a key that identifies its code (graft/compiler/cpu/codegen.cpp hashes
// the loops' descriptions, the code generator's build and the host CPU).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace graft::cpu {

/// Whether graft was built with LLVM code generation.
bool have_llvm_jit();

/// Compiles `module` (created in `context`) and returns the addresses of `symbols` in it; the object
/// is cached on disk under `key` (which must identify the module's code). Throws graft::Error if LLVM
/// reports a failure.
std::vector<void*> jit_compile(std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module,
                               const std::vector<std::string>& symbols, const std::string& key);
/// The addresses of `symbols` in the object cached under `key`, or an empty vector when there is none
/// (then build the module and call jit_compile). Skips building and printing IR on a hit.
std::vector<void*> jit_load_cached(const std::string& key, const std::vector<std::string>& symbols);

/// The bytes of a cache file holding `object` (n bytes) compiled for `key`: a header (magic number,
/// the object's size and 128-bit hash, the key), then the object.
std::string make_cache_file(const std::string& key, const char* object, size_t n);
/// Where the object lies in a cache file's bytes (offset, size), if the file is whole and was written
/// for `key`; nullopt for anything else (truncated, changed, another key's, not a cache file).
std::optional<std::pair<size_t, size_t>> cached_object_in(const std::string& file, const std::string& key);

/// Other compiled artifacts in the same disk cache (directory, file header, checks and size limit
/// as the objects'; "gkp" is the only other extension pruning knows): `payload` stored under `key` (which must identify it) with extension `ext`.
void cache_put(const std::string& key, const std::string& payload, const std::string& ext);
/// The payload stored under `key`, if a whole file written for that key and host CPU is there.
std::optional<std::string> cache_get(const std::string& key, const std::string& ext);

/// Counters for tests and benchmarks: modules compiled by LLVM, and modules found in the disk cache.
struct JitStats {
  int64_t compiled = 0, cache_hits = 0;
};
JitStats jit_stats();

/// The host CPU name and features LLVM targets (e.g. "znver4 +avx512f,...").
std::string jit_target();

}  // namespace graft::cpu
