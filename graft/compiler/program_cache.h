// The whole-program cache: what compiling a jaxpr produced (the optimized program and its memory
// plan) kept on disk beside the kernels' objects (graft/runtime/cpu/llvm_jit.h), so that another
// process compiling the same program reads it instead of optimizing again.
//
// The key is the program's text with its constants' types and bytes, the donated inputs, the graft
// binary (its path, size and modification time: a rebuilt compiler never reads an older one's
// programs) and the host CPU. The optimized program is stored as text (graft/compiler/jaxpr_text.h)
// with its constants; the file's header and hash reject damaged files, which are then compiled again.
// GRAFT_CACHE_DIR=off turns it off with the object cache; GRAFT_DUMP_IR and GRAFT_VERIFY_IR bypass
// it (the passes run, to be seen or checked), and GRAFT_SKIP_PASSES is part of the key.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graft/compiler/memory_plan.h"
#include "graft/ir/jaxpr.h"

namespace graft::compiler {

struct CachedProgram {
  ClosedJaxpr program;
  /// The memory plan's releases (per equation, the variables whose last use it is) and sizes.
  std::vector<std::vector<const Var*>> release;
  int64_t peak_bytes = 0, argument_bytes = 0;
};

/// Something that sets this process's programs apart from other processes' with the same build and
/// program (distributed::initialize sets the rank: a program may fold the process's index).
void set_program_cache_salt(const std::string& salt);

/// The cache key of compiling `original` with these donated inputs; empty when the program is not
/// cached (no cache directory, or constants too large to be worth keeping).
std::string program_cache_key(const ClosedJaxpr& original, const std::vector<bool>& donated);
/// The program cached under `key`, if any.
std::optional<CachedProgram> load_cached_program(const std::string& key);
/// Caches an optimized program and its memory plan under `key`, if it reads back from its text
/// exactly (programs holding this process's objects, such as a mesh's communicators, are not cached).
void store_cached_program(const std::string& key, const ClosedJaxpr& program, const MemoryPlan& plan);

/// The bytes of a cache entry and their reading (exposed for tests; nullopt for damaged bytes).
std::string program_entry_bytes(const ClosedJaxpr& program, const MemoryPlan& plan);
std::optional<CachedProgram> read_program_entry(const std::string& bytes);

}  // namespace graft::compiler
