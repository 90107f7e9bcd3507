#include "graft/backends/backend.h"

#include "graft/compiler/fusion.h"
#include "graft/compiler/pipeline.h"
#include "graft/compiler/target.h"
#include "graft/core/error.h"

namespace graft {

namespace backends {

int16_t add(const BackendDescriptor& b) {
  if (b.name.empty()) fail<ValueError>("register_backend: the backend needs a name");
  if (!b.runtime) fail<ValueError>("register_backend: backend '", b.name, "' has no runtime");
  for (const std::string& name : b.passes)  // before anything is registered: a bad descriptor leaves no trace
    if (!compiler::pass_named(name).per_target)
      fail<ValueError>("register_backend: pass '", name, "' runs for every target; a backend can only ask for per-target "
                       "passes");
  compiler::Target target{b.passes, b.fusion != nullptr, b.fusible};
  int16_t type = register_device_type(b.name, b.aliases, b.runtime);
  compiler::set_target(type, std::move(target));
  if (b.kernels) b.kernels(type);
  if (b.fusion) register_device_impl(type, compiler::fusion_p, b.fusion);
  if (b.communicator) register_device_communicator(type, b.communicator);
  return type;
}

}  // namespace backends

int16_t register_backend(const BackendDescriptor& b) {
  find_device_type("cpu");  // the built-in backends first: they keep the first ids
  return backends::add(b);
}

}  // namespace graft
