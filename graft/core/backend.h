// Device types as the core sees them: a small integer with a name ("cpu" is type 0) and a runtime,
// the Backend interface below (memory, copies between devices, ordering). The core moves arrays
// between devices through it without knowing any backend.
//
// The core holds no list of backends. graft/backends/builtin.cpp registers the ones graft was built
// with; the core calls it (register_builtin_backends) once, before its first lookup, so nothing
// depends on static initializers a linker may drop. A program registers more with register_backend
// (graft/backends/backend.h), which also takes a backend's kernels and compiler passes and calls
// register_device_type here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "graft/core/buffer.h"
#include "graft/core/device.h"

namespace graft {

/// The small interface a device implements (memory and ordering; the primitives' kernels register
/// separately, see register_device_impl in graft/core/primitive.h).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// Whether device `index` can be used; when not, `why` says what is missing (no driver, no GPU).
  virtual bool available(int index, std::string* why) const = 0;
  virtual Ref<Buffer> allocate(size_t nbytes, Device d) = 0;
  /// Copies `n` bytes between memory on different devices (one of them this backend's; the other
  /// the CPU or this backend's). Ordered after the work queued on the device so far; a copy to the
  /// host returns when the bytes are there.
  virtual void copy(const void* src, Device src_dev, void* dst, Device dst_dev, size_t n) = 0;
  /// Blocks until all work queued on `d` has finished; raises the errors that work produced.
  virtual void synchronize(Device d) = 0;
};

/// How many device types a process holds at most (the CPU's included).
inline constexpr int kMaxDeviceTypes = 8;

/// The host's runtime (device type 0): 64-byte aligned memory from the recycling allocator.
Backend& host_backend();

/// Registers a device type and returns its id. "cpu" is always type 0; other names get the next free
/// id, in the order they are registered. A name registered again keeps its id and takes the new
/// runtime and aliases. `runtime` may be null with a `missing` reason: a backend graft knows of but was
/// built without ("graft was built without CUDA (configure ...)"); its devices parse and print, and
/// using one raises ValueError with that reason. ValueError when all kMaxDeviceTypes ids are taken or
/// the name is empty or taken as another type's alias.
int16_t register_device_type(const std::string& name, const std::vector<std::string>& aliases, Backend* runtime,
                             const std::string& missing = "");
/// The id of the device type registered as `name` or with it as an alias; -1 when there is none.
int16_t find_device_type(std::string_view name);
/// The name devices of `type` print with ("cuda"); "device<type>" when nothing is registered there.
std::string device_type_name(int16_t type);
/// The names of the registered device types, in id order ("cpu, cuda, ...": for error messages).
std::string device_type_names();

/// The runtime serving device type `type` (0 = cpu), or nullptr when none is registered or it was not
/// built.
Backend* backend_for(int16_t type);
/// The backend of `d`, checked to be usable: raises graft::Error naming the device and why not
/// (graft built without it, no driver, no such GPU). `what` names the operation for the message.
Backend& usable_backend(Device d, const char* what);

/// Registers the backends graft was built with. Defined by the library's top layer
/// (graft/backends/builtin.cpp); the core calls it once, before its first lookup of a device type.
void register_builtin_backends();

}  // namespace graft
