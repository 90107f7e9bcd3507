// What graft's oneDNN callers share (GEMM and convolution): one CPU engine, and primitives whose
// scratch memory the caller supplies. Internal to graft/runtime/cpu; only built with oneDNN.
//
// oneDNN's default "library" scratchpad is one buffer per process: two threads executing primitives
// at once overwrite each other's scratch (4 threads running the same cached matmul got 1,068 wrong
// values of 8,000). With scratchpad_mode::user every execution gets its own, so a cached primitive
// can be executed from any number of threads at once, which oneDNN allows for immutable primitives.
#pragma once

#ifdef GRAFT_HAVE_DNNL
#include <mutex>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "graft/core/buffer.h"

namespace graft::cpu {

/// The process's oneDNN CPU engine.
dnnl::engine& dnnl_engine();

/// Attributes for every primitive graft makes: the caller passes the scratchpad (see above).
dnnl::primitive_attr dnnl_attr();

/// Held while a primitive is made: making one is rare (once per shape and team size) and oneDNN's own
/// primitive cache is then used from one thread at a time (executing is concurrent).
std::mutex& dnnl_create_mutex();

/// Executes `prim` (made with dnnl_attr() from a descriptor whose scratchpad is `scratch`) with its own
/// scratch memory, drawn from graft's recycling allocator.
void dnnl_execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratch, dnnl::stream& s,
                  std::unordered_map<int, dnnl::memory> args);

}  // namespace graft::cpu
#endif
