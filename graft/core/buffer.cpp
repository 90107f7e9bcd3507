#include "graft/core/buffer.h"

#include <cstdlib>
#include <new>

#include "graft/core/device.h"

namespace graft {

namespace {
void free_cpu(void* p, size_t, Device) { std::free(p); }
}  // namespace

Ref<Buffer> Buffer::allocate_cpu(size_t nbytes) {
  size_t rounded = (nbytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
  void* p = std::aligned_alloc(kBufferAlign, rounded ? rounded : kBufferAlign);
  if (!p) throw std::bad_alloc();
  return make_ref<Buffer>(p, nbytes, Device::cpu(), &free_cpu);
}

std::string Device::str() const {
  return (type == 0 ? std::string("cpu") : type == 1 ? std::string("cuda") : "device" + std::to_string(type)) +
         ":" + std::to_string(index);
}
std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

}  // namespace graft
