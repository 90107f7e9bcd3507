// Buffer: reference-counted storage on a device.
#pragma once

#include <cstddef>

#include "graft/core/device.h"
#include "graft/core/ref.h"

namespace graft {

/// Alignment of every CPU buffer graft allocates (one cache line; enough for AVX-512 loads).
inline constexpr size_t kBufferAlign = 64;

class Buffer : public RefCounted {
 public:
  using Deleter = void (*)(void* data, size_t nbytes, Device d);
  Buffer(void* data, size_t nbytes, Device d, Deleter del) : data_(data), nbytes_(nbytes), device_(d), del_(del) {}
  ~Buffer() override {
    if (del_) del_(data_, nbytes_, device_);
  }
  /// Allocates `nbytes` of uninitialized, 64-byte aligned host memory.
  static Ref<Buffer> allocate_cpu(size_t nbytes);
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter del_;
};

}  // namespace graft
