// Kernel templates for elementwise primitive families: a functor F with a static `apply` becomes one
// kernel per allowed dtype, gathered into a table indexed by DType.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "graft/core/dtype.h"
#include "graft/prims/rules.h"

namespace graft::prims {

// ---- two's-complement arithmetic for signed integers (no UB on overflow, like XLA) ------------------------
template <class C>
inline C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return static_cast<C>(a + b);
  }
}
template <class C>
inline C wrap_sub(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return static_cast<C>(a - b);
  }
}
template <class C>
inline C wrap_mul(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<std::common_type_t<C, unsigned>>;
    return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// ---- unary ------------------------------------------------------------------------------------------
using UnaryKernel = void (*)(const void* in, void* out, int64_t n, int64_t iparam);

template <class F, class T>
void unary_kernel(const void* in, void* out, int64_t n, int64_t ip) {
  using C = compute_t<T>;
  using R = decltype(F::apply(C{}, ip));
  using O = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
  const T* a = static_cast<const T*>(in);
  O* o = static_cast<O*>(out);
  elementwise_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = static_cast<O>(F::apply(static_cast<C>(a[i]), ip));
  });
}

template <class F, uint32_t M, DType D>
constexpr UnaryKernel unary_kernel_for() {
  if constexpr ((M & bit(D)) != 0) {
    return &unary_kernel<F, type_of_t<D>>;
  } else {
    return nullptr;
  }
}
template <class F, uint32_t M, size_t... I>
constexpr std::array<UnaryKernel, kNumDTypes> unary_table(std::index_sequence<I...>) {
  return {unary_kernel_for<F, M, static_cast<DType>(I)>()...};
}
template <class F, uint32_t M>
constexpr std::array<UnaryKernel, kNumDTypes> unary_kernels() {
  return unary_table<F, M>(std::make_index_sequence<kNumDTypes>());
}

// ---- binary -----------------------------------------------------------------------------------------
/// a_step / b_step are 0 for a rank-0 operand (broadcast) and 1 otherwise.
using BinaryKernel = void (*)(const void* a, const void* b, void* out, int64_t n, int a_step, int b_step);

template <class F, class T>
void binary_kernel(const void* pa, const void* pb, void* out, int64_t n, int as, int bs) {
  using C = compute_t<T>;
  using R = decltype(F::apply(C{}, C{}));
  using O = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
  const T* a = static_cast<const T*>(pa);
  const T* b = static_cast<const T*>(pb);
  O* o = static_cast<O*>(out);
  elementwise_for(n, [&](int64_t lo, int64_t hi) {
    if (as && bs) {
      for (int64_t i = lo; i < hi; ++i) o[i] = static_cast<O>(F::apply(static_cast<C>(a[i]), static_cast<C>(b[i])));
    } else if (bs) {
      C x = static_cast<C>(a[0]);
      for (int64_t i = lo; i < hi; ++i) o[i] = static_cast<O>(F::apply(x, static_cast<C>(b[i])));
    } else if (as) {
      C y = static_cast<C>(b[0]);
      for (int64_t i = lo; i < hi; ++i) o[i] = static_cast<O>(F::apply(static_cast<C>(a[i]), y));
    } else {
      for (int64_t i = lo; i < hi; ++i) o[i] = static_cast<O>(F::apply(static_cast<C>(a[0]), static_cast<C>(b[0])));
    }
  });
}

template <class F, uint32_t M, DType D>
constexpr BinaryKernel binary_kernel_for() {
  if constexpr ((M & bit(D)) != 0) {
    return &binary_kernel<F, type_of_t<D>>;
  } else {
    return nullptr;
  }
}
template <class F, uint32_t M, size_t... I>
constexpr std::array<BinaryKernel, kNumDTypes> binary_table(std::index_sequence<I...>) {
  return {binary_kernel_for<F, M, static_cast<DType>(I)>()...};
}
template <class F, uint32_t M>
constexpr std::array<BinaryKernel, kNumDTypes> binary_kernels() {
  return binary_table<F, M>(std::make_index_sequence<kNumDTypes>());
}

/// Shape rule + kernel call shared by binary and comparison primitives.
struct BinaryInfo {
  uint32_t mask;
  bool bool_out;
  std::array<BinaryKernel, kNumDTypes> kernels;
  /// Forward derivative given primals a, b, output y and tangents (either may be null).
  Array (*jvp)(const Array& a, const Array& b, const Array& y, const Array& ta, const Array& tb);
};
Avals binary_shape(const Primitive& p, AvalPtrs in, const Params& params);
Arrays binary_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params);

}  // namespace graft::prims
