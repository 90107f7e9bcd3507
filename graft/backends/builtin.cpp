// The backends graft is built with: one registration each. The core calls this once, before its first
// lookup of a device type (graft/core/backend.h). Adding a backend: its folder here, one line below,
// and its detection in CMakeLists.txt (docs/architecture.md, "Adding a backend").
#include "graft/backends/backend.h"
#include "graft/compiler/epilogue.h"
#include "graft/prims/rules.h"

#if GRAFT_HAVE_CUDA
#include "graft/backends/cuda/cuda.h"
#endif

namespace graft {

namespace {

// The CPU: the host's runtime; its kernels are the primitives' own impl rules and its fused loops the
// compiler's tiled executor (graft/compiler/cpu/), so the descriptor adds only the passes it wants.
BackendDescriptor cpu_backend() {
  BackendDescriptor b;
  b.name = "cpu";
  b.runtime = &host_backend();
  b.passes = {"widen_half_products", "accumulate_dots"};
  return b;
}

}  // namespace

void register_builtin_backends() {
  // decompositions serve every device type: a primitive a device has no kernel for, written with ones
  // it may have
  prims::register_device_decompositions();
  compiler::register_epilogue_decompositions();

  backends::add(cpu_backend());
#if GRAFT_HAVE_CUDA
  backends::add(cuda::backend());
#else
  register_device_type("cuda", {"gpu"}, nullptr,
                       "graft was built without CUDA (configure with -DGRAFT_WITH_CUDA=ON where the CUDA toolkit is "
                       "installed)");
#endif
}

}  // namespace graft
