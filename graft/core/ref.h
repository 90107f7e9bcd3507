// Intrusive reference counting: Ref<T> is a shared pointer whose count lives inside the object, so a
// handle is one pointer and making an object is one allocation.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace graft {

/// Base class for intrusively counted objects. The count starts at zero; a Ref takes the first share.
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;

  void retain() const noexcept { rc_.fetch_add(1, std::memory_order_relaxed); }
  void release() const noexcept {
    if (rc_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  int32_t use_count() const noexcept { return rc_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<int32_t> rc_{0};
};

/// A counted handle to a RefCounted object (nullable).
template <class T>
class Ref {
 public:
  Ref() noexcept = default;
  Ref(std::nullptr_t) noexcept {}  // NOLINT
  explicit Ref(T* p) noexcept : p_(p) {
    if (p_) p_->retain();
  }
  Ref(const Ref& o) noexcept : p_(o.p_) {
    if (p_) p_->retain();
  }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <class U>
  Ref(const Ref<U>& o) noexcept : p_(o.get()) {  // NOLINT: upcast
    if (p_) p_->retain();
  }
  ~Ref() {
    if (p_) p_->release();
  }
  Ref& operator=(const Ref& o) noexcept {
    Ref(o).swap(*this);
    return *this;
  }
  Ref& operator=(Ref&& o) noexcept {
    Ref(std::move(o)).swap(*this);
    return *this;
  }
  void swap(Ref& o) noexcept { std::swap(p_, o.p_); }
  void reset() noexcept { Ref().swap(*this); }

  T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  friend bool operator==(const Ref& a, const Ref& b) noexcept { return a.p_ == b.p_; }

 private:
  T* p_ = nullptr;
};

template <class T, class... A>
Ref<T> make_ref(A&&... a) {
  return Ref<T>(new T(std::forward<A>(a)...));
}

}  // namespace graft
