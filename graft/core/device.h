// Devices: where a buffer lives. The core knows device *types* only as small integers registered by
// backends (graft/core/backend.h), so it holds no closed list of backends; the CPU is type 0.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace graft {

struct Device {
  int16_t type = 0;  ///< 0 = cpu; other types are given out as backends register (register_device_type).
  int16_t index = 0;

  static constexpr Device cpu() { return Device{0, 0}; }
  /// Device `i` of the backend registered as `type_name` ("cuda", "gpu", "sim"); ValueError when no
  /// backend of that name is known.
  static Device named(std::string_view type_name, int i = 0);
  /// Device::named("cuda", i). A build without CUDA knows the name: using the device raises an error
  /// that says how to build with it.
  static Device cuda(int i = 0);
  bool is_cpu() const { return type == 0; }
  friend bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
  friend bool operator!=(Device a, Device b) { return !(a == b); }
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, Device d);

/// Parses "cpu", "cuda", "cuda:1", or another registered backend's name (or alias) with an optional
/// index (ValueError otherwise).
Device parse_device(std::string_view s);

/// Where arrays made without an explicit device go (creation ops, results of operations whose
/// operands are not committed to a device): GRAFT_DEFAULT_DEVICE (default cpu), overridden on this
/// thread by a DefaultDevice guard. JAX's jax.default_device.
Device default_device();

/// Scoped override of the default device on this thread:
///   { graft::DefaultDevice on(graft::Device::cuda()); auto x = graft::zeros({3}); }  // x on cuda:0
class DefaultDevice {
 public:
  explicit DefaultDevice(Device d);
  ~DefaultDevice();
  DefaultDevice(const DefaultDevice&) = delete;
  DefaultDevice& operator=(const DefaultDevice&) = delete;

 private:
  Device prev_;
  bool had_prev_;
};

}  // namespace graft
