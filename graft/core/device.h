// Devices: where a buffer lives. The core knows device *types* only as small integers registered by
// backends, so it holds no closed list of backends.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

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

}  // namespace graft
