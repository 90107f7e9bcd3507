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
  /// Whether graft may write into this storage when its last array lets go of it (donation, a
  /// program's outputs reusing an input's memory). False for memory another library lent graft
  /// (DLPack): it stays read-only, and may be less aligned than graft's own.
  virtual bool reusable() const { return true; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter del_;
};

/// Uninitialized scratch memory for kernels, drawn from the same recycling allocator as arrays (so
/// large temporaries do not fault in fresh pages on every call). T must be trivially copyable.
template <class T>
class ScratchBuffer {
 public:
  explicit ScratchBuffer(size_t n)
      : buf_(Buffer::allocate_cpu(n * sizeof(T))), p_(static_cast<T*>(buf_->data())), n_(n) {}
  ScratchBuffer(size_t n, const T& fill) : ScratchBuffer(n) {
    for (size_t i = 0; i < n; ++i) p_[i] = fill;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  size_t size() const { return n_; }

 private:
  Ref<Buffer> buf_;
  T* p_;
  size_t n_;
};

}  // namespace graft
