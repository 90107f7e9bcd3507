// SmallVector<T, N>: a vector that keeps up to N elements inline (no heap allocation).
//
// Used for shapes and for the argument/result lists of primitives, which are almost always short;
// keeping them inline is what lets an eager primitive run without heap churn on its hot path.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <new>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace graft {

template <class T, size_t N>
class SmallVector {
 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;
  using size_type = size_t;
  using reference = T&;
  using const_reference = const T&;

  SmallVector() noexcept = default;
  explicit SmallVector(size_t n) { resize(n); }
  SmallVector(size_t n, const T& v) { assign(n, v); }
  SmallVector(std::initializer_list<T> il) { append(il.begin(), il.end()); }
  template <class It, class = decltype(*std::declval<It>())>
  SmallVector(It first, It last) {
    append(first, last);
  }
  SmallVector(std::span<const T> s) { append(s.begin(), s.end()); }  // NOLINT
  SmallVector(const std::vector<T>& v) { append(v.begin(), v.end()); }  // NOLINT
  SmallVector(const SmallVector& o) { append(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { steal(std::move(o)); }
  template <size_t M>
  SmallVector(const SmallVector<T, M>& o) {  // NOLINT
    append(o.begin(), o.end());
  }
  ~SmallVector() { destroy(); }

  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      clear();
      append(o.begin(), o.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      destroy();
      data_ = inline_data();
      size_ = 0;
      cap_ = N;
      steal(std::move(o));
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> il) {
    clear();
    append(il.begin(), il.end());
    return *this;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return cap_; }
  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  T& front() noexcept { return data_[0]; }
  const T& front() const noexcept { return data_[0]; }
  T& back() noexcept { return data_[size_ - 1]; }
  const T& back() const noexcept { return data_[size_ - 1]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  std::reverse_iterator<T*> rbegin() noexcept { return std::reverse_iterator<T*>(end()); }
  std::reverse_iterator<T*> rend() noexcept { return std::reverse_iterator<T*>(begin()); }

  operator std::span<const T>() const noexcept { return {data_, size_}; }  // NOLINT
  operator std::span<T>() noexcept { return {data_, size_}; }              // NOLINT
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void push_back(const T& v) {
    if (size_ == cap_) {
      T tmp(v);  // v may alias an element
      grow(cap_ * 2);
      new (data_ + size_) T(std::move(tmp));
    } else {
      new (data_ + size_) T(v);
    }
    ++size_;
  }
  void push_back(T&& v) {
    if (size_ == cap_) {
      T tmp(std::move(v));
      grow(cap_ * 2);
      new (data_ + size_) T(std::move(tmp));
    } else {
      new (data_ + size_) T(std::move(v));
    }
    ++size_;
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T(std::forward<A>(a)...));
    return back();
  }
  void pop_back() noexcept { data_[--size_].~T(); }
  void clear() noexcept {
    std::destroy(data_, data_ + size_);
    size_ = 0;
  }
  void resize(size_t n) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) new (data_ + i) T();
    if (n < size_) std::destroy(data_ + n, data_ + size_);
    size_ = n;
  }
  void resize(size_t n, const T& v) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) new (data_ + i) T(v);
    if (n < size_) std::destroy(data_ + n, data_ + size_);
    size_ = n;
  }
  void assign(size_t n, const T& v) {
    clear();
    resize(n, v);
  }
  template <class It>
  void append(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  template <class It>
  void assign(It first, It last) {
    clear();
    append(first, last);
  }
  /// Inserts [first, last) before pos (which must not point into that range).
  template <class It>
  T* insert(T* pos, It first, It last) {
    size_t idx = pos - data_, old = size_;
    append(first, last);
    std::rotate(data_ + idx, data_ + old, data_ + size_);
    return data_ + idx;
  }
  T* insert(T* pos, const T& v) {
    size_t idx = pos - data_;
    push_back(v);
    std::rotate(data_ + idx, data_ + size_ - 1, data_ + size_);
    return data_ + idx;
  }
  T* erase(T* pos) {
    std::move(pos + 1, end(), pos);
    pop_back();
    return pos;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }

 private:
  T* inline_data() noexcept { return reinterpret_cast<T*>(storage_); }
  bool is_inline() const noexcept { return data_ == reinterpret_cast<const T*>(storage_); }
  void grow(size_t n) {
    n = std::max<size_t>(n, 4);
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    std::uninitialized_move(data_, data_ + size_, fresh);
    std::destroy(data_, data_ + size_);
    if (!is_inline()) ::operator delete(data_, std::align_val_t(alignof(T)));
    data_ = fresh;
    cap_ = n;
  }
  void destroy() noexcept {
    std::destroy(data_, data_ + size_);
    if (!is_inline()) ::operator delete(data_, std::align_val_t(alignof(T)));
  }
  void steal(SmallVector&& o) noexcept {
    if (o.is_inline()) {
      std::uninitialized_move(o.data_, o.data_ + o.size_, data_);
      size_ = o.size_;
      o.clear();
    } else {
      data_ = o.data_;
      size_ = o.size_;
      cap_ = o.cap_;
      o.data_ = o.inline_data();
      o.size_ = 0;
      o.cap_ = N;
    }
  }

  alignas(T) unsigned char storage_[N * sizeof(T)];
  T* data_ = reinterpret_cast<T*>(storage_);
  size_t size_ = 0;
  size_t cap_ = N;
};

}  // namespace graft
