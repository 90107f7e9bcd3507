// Buffer: reference-counted storage on a device.
#pragma once

#include <cstddef>
#include <string>

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

/// The small interface a device implements (memory and ordering; the primitives' kernels register
/// separately, see register_device_impl in graft/core/primitive.h). The CPU's is always present;
/// others (CUDA) register themselves when graft is built with them. It lives in the core so that arrays
/// can move between devices (device_put, reading a value back) without the core knowing any backend.
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

/// The backend serving device type `type` (0 = cpu), or nullptr when none is registered.
Backend* backend_for(int16_t type);
void register_backend(int16_t type, Backend* b);
/// The backend of `d`, checked to be usable: raises graft::Error naming the device and why not
/// (graft built without CUDA, no driver, no such GPU). `what` names the operation for the message.
Backend& usable_backend(Device d, const char* what);

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
