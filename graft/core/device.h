// Devices: where a buffer lives. The core knows device *types* only as small integers registered by
// backends, so it holds no closed list of backends.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace graft {

struct Device {
  int16_t type = 0;  ///< 0 = cpu; other types are registered by backends (1 = cuda).
  int16_t index = 0;

  static constexpr Device cpu() { return Device{0, 0}; }
  static constexpr Device cuda(int i = 0) { return Device{1, static_cast<int16_t>(i)}; }
  bool is_cpu() const { return type == 0; }
  friend bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
  friend bool operator!=(Device a, Device b) { return !(a == b); }
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, Device d);

/// Parses "cpu", "cuda", "cuda:1", or another registered backend's name with an optional index
/// (ValueError otherwise).
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
