// Backend: the small interface a device implements. The CPU backend is always present; others
// (CUDA) register themselves at build time. Nothing in the core enumerates backends.
#pragma once

#include <cstddef>
#include <string>

#include "graft/core/buffer.h"
#include "graft/core/device.h"

namespace graft {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Ref<Buffer> allocate(size_t nbytes, Device d) = 0;
  /// Copies `n` bytes between buffers that may live on different devices (one of them this one's).
  virtual void copy(const void* src, Device src_dev, void* dst, Device dst_dev, size_t n) = 0;
  /// Blocks until all work queued on `d` has finished.
  virtual void synchronize(Device d) = 0;
};

/// The backend serving device type `type` (0 = cpu), or nullptr when none is registered.
Backend* backend_for(int16_t type);
void register_backend(int16_t type, Backend* b);

}  // namespace graft
