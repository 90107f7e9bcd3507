#include "graft/backend/backend.h"

#include <array>
#include <cstring>
#include <mutex>

#include "graft/core/error.h"

namespace graft {

namespace {
class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Ref<Buffer> allocate(size_t nbytes, Device) override { return Buffer::allocate_cpu(nbytes); }
  void copy(const void* src, Device, void* dst, Device, size_t n) override { std::memcpy(dst, src, n); }
  void synchronize(Device) override {}
};

constexpr int kMaxTypes = 8;
std::array<Backend*, kMaxTypes>& registry() {
  static CpuBackend cpu;
  static std::array<Backend*, kMaxTypes> r = {&cpu};
  return r;
}
}  // namespace

Backend* backend_for(int16_t type) {
  if (type < 0 || type >= kMaxTypes) return nullptr;
  return registry()[static_cast<size_t>(type)];
}

void register_backend(int16_t type, Backend* b) {
  if (type <= 0 || type >= kMaxTypes) fail<ValueError>("register_backend: bad device type ", type);
  registry()[static_cast<size_t>(type)] = b;
}

}  // namespace graft
