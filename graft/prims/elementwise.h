// Kernel templates for elementwise primitive families: a functor F with a static `apply` becomes one
// kernel per allowed dtype, gathered into a table indexed by DType.
#pragma once

#include <algorithm>
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
  } else if constexpr (is_complex_v<C>) {
    // the textbook product, as NumPy and XLA compute it (std::complex's operator* is a library call per
    // element that also turns NaN results into infinities, C99's Annex G: (inf + nan i)^2 is inf + nan i
    // there, NaN + NaN i in NumPy and JAX). Written so that contracting it into FMAs changes nothing (the
    // vectorized and the scalar loops agree bit for bit): complex64's products are exact in double, and
    // complex128's sums take one product through an explicit fma.
    if constexpr (std::is_same_v<C, complex64>) {
      double ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
      return C(static_cast<float>(ar * br - ai * bi), static_cast<float>(ar * bi + ai * br));
    } else {
      return C(std::fma(a.real(), b.real(), -(a.imag() * b.imag())),
               std::fma(a.real(), b.imag(), a.imag() * b.real()));
    }
  } else {
    return a * b;
  }
}

// ---- eager execution of a tile kernel ----------------------------------------------------------------------
/// Runs tile kernel k over every element of `out` (operands of out's shape, or rank 0 and broadcast), in
/// parallel chunks of at least `grain` elements: the eager form of a primitive whose only kernel is its
/// tile function (clamp, regularized_incomplete_beta). At most four operands.
inline void run_tiles(const TileKernel& k, Array& out, std::span<const Array> in, int64_t grain = kElementwiseGrain) {
  constexpr size_t kMax = 4;
  int64_t sz = static_cast<int64_t>(itemsize(out.dtype()));
  std::array<uint8_t, kMax> step{};
  for (size_t i = 0; i < in.size() && i < kMax; ++i) step[i] = in[i].ndim() == 0 && out.ndim() != 0 ? 0 : 1;
  char* o = static_cast<char*>(out.concrete()->data());
  auto run = [&](int64_t b, int64_t e) {
    std::array<const void*, kMax> ptrs{};
    for (size_t i = 0; i < in.size() && i < kMax; ++i)
      ptrs[i] = static_cast<const char*>(in[i].raw_data()) + (step[i] ? b * sz : 0);
    k.map(k, o + b * sz, ptrs.data(), step.data(), e - b);
  };
  if (out.size() <= grain) {
    run(0, out.size());
  } else {
    cpu::parallel_for(out.size(), grain, run);
  }
}

// ---- unary ------------------------------------------------------------------------------------------
// Each family's kernel is written once as a tile function (the form fused loops call, see
// graft/core/primitive.h's TileKernel); the eager kernel runs the same function over parallel chunks.
using UnaryKernel = void (*)(const void* in, void* out, int64_t n, int64_t iparam);

/// The stored type of a kernel's result R for operands of stored type T: bool for predicates, the real
/// part's type for a real result of complex operands (abs, real, imag), the complex type for a complex
/// result of real operands (complex), T otherwise (the 16-bit floats computed in f32 store as T).
template <class T>
struct real_part {
  using type = T;
};
template <class V>
struct real_part<std::complex<V>> {
  using type = V;
};
template <class T, class R>
using stored_result_t =
    std::conditional_t<std::is_same_v<R, bool>, bool,
                       std::conditional_t<is_complex_v<T> && !is_complex_v<R>, typename real_part<T>::type,
                                          std::conditional_t<!is_complex_v<T> && is_complex_v<R>, R, T>>>;

template <class F, class T>
using unary_out_t = stored_result_t<T, decltype(F::apply(compute_t<T>{}, int64_t{}))>;

// Half tiles by rows: operands widened and results rounded a row of kHalfRow values at a time
// (core/half.h's widen and narrow) around a loop over f32 values, where that beats converting each
// value inline: f16 where the build has F16C (8 values an instruction against a dozen integer
// operations a value), both ways; bf16 in unary tiles, whose f32 loops (exp, tanh) then vectorize
// (a bf16 add is faster inline). The bits are the same either way.
#if defined(__F16C__)
inline constexpr bool kF16C = true;
#else
inline constexpr bool kF16C = false;
#endif
template <class T>
inline constexpr bool kUnaryByRows = (kF16C && std::is_same_v<T, float16>) || std::is_same_v<T, bfloat16>;
template <class T>
inline constexpr bool kBinaryByRows = (kF16C && std::is_same_v<T, float16>);
inline constexpr int64_t kHalfRow = 256;

template <class F, class T>
void unary_tile(const TileKernel& k, void* out, const void* const* in, const uint8_t* step, int64_t n) {
  using C = compute_t<T>;
  using O = unary_out_t<F, T>;
  const T* a = static_cast<const T*>(in[0]);
  O* o = static_cast<O*>(out);
  int64_t ip = k.iparam;
  if constexpr (kUnaryByRows<T> && std::is_same_v<O, T> &&
                std::is_same_v<decltype(F::apply(C{}, int64_t{})), float>) {
    if (step[0]) {
      float x[kHalfRow];
      for (int64_t i0 = 0; i0 < n; i0 += kHalfRow) {
        int64_t m = std::min(kHalfRow, n - i0);
        widen(a + i0, x, m);
        for (int64_t i = 0; i < m; ++i) x[i] = F::apply(x[i], ip);
        narrow(x, o + i0, m);
      }
      return;
    }
  }
  if (step[0]) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::apply(static_cast<C>(a[i]), ip));
  } else {
    O v = static_cast<O>(F::apply(static_cast<C>(a[0]), ip));
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <class F, class T>
void unary_kernel(const void* in, void* out, int64_t n, int64_t ip) {
  using O = unary_out_t<F, T>;
  TileKernel k;
  k.iparam = ip;
  const uint8_t step = 1;
  elementwise_for(n, [&](int64_t b, int64_t e) {
    const void* a = static_cast<const T*>(in) + b;
    unary_tile<F, T>(k, static_cast<O*>(out) + b, &a, &step, e - b);
  });
}

template <class F, uint32_t M, DType D>
constexpr MapTileFn unary_tile_for() {
  if constexpr ((M & bit(D)) != 0) {
    return &unary_tile<F, type_of_t<D>>;
  } else {
    return nullptr;
  }
}
template <class F, uint32_t M, size_t... I>
constexpr std::array<MapTileFn, kNumDTypes> unary_tile_table(std::index_sequence<I...>) {
  return {unary_tile_for<F, M, static_cast<DType>(I)>()...};
}
template <class F, uint32_t M>
constexpr std::array<MapTileFn, kNumDTypes> unary_tiles() {
  return unary_tile_table<F, M>(std::make_index_sequence<kNumDTypes>());
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
using binary_out_t = stored_result_t<T, decltype(F::apply(compute_t<T>{}, compute_t<T>{}))>;

template <class F, class T>
void binary_tile(const TileKernel&, void* out, const void* const* in, const uint8_t* step, int64_t n) {
  using C = compute_t<T>;
  using O = binary_out_t<F, T>;
  const T* a = static_cast<const T*>(in[0]);
  const T* b = static_cast<const T*>(in[1]);
  O* o = static_cast<O*>(out);
  if constexpr (kBinaryByRows<T> && std::is_same_v<O, T> &&
                std::is_same_v<decltype(F::apply(C{}, C{})), float>) {
    if (step[0] || step[1]) {
      float x[kHalfRow], y[kHalfRow];
      for (int64_t i0 = 0; i0 < n; i0 += kHalfRow) {
        int64_t m = std::min(kHalfRow, n - i0);
        if (step[0])
          widen(a + i0, x, m);
        else
          std::fill(x, x + m, static_cast<float>(a[0]));
        if (step[1])
          widen(b + i0, y, m);
        else
          std::fill(y, y + m, static_cast<float>(b[0]));
        for (int64_t i = 0; i < m; ++i) x[i] = F::apply(x[i], y[i]);
        narrow(x, o + i0, m);
      }
      return;
    }
  }
  if (step[0] && step[1]) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::apply(static_cast<C>(a[i]), static_cast<C>(b[i])));
  } else if (step[1]) {
    C x = static_cast<C>(a[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::apply(x, static_cast<C>(b[i])));
  } else if (step[0]) {
    C y = static_cast<C>(b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<O>(F::apply(static_cast<C>(a[i]), y));
  } else {
    O v = static_cast<O>(F::apply(static_cast<C>(a[0]), static_cast<C>(b[0])));
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <class F, class T>
void binary_kernel(const void* pa, const void* pb, void* out, int64_t n, int as, int bs) {
  using O = binary_out_t<F, T>;
  TileKernel k;
  const uint8_t step[2] = {static_cast<uint8_t>(as), static_cast<uint8_t>(bs)};
  elementwise_for(n, [&](int64_t lo, int64_t hi) {
    const void* in[2] = {static_cast<const T*>(pa) + (as ? lo : 0), static_cast<const T*>(pb) + (bs ? lo : 0)};
    binary_tile<F, T>(k, static_cast<O*>(out) + lo, in, step, hi - lo);
  });
}

template <class F, uint32_t M, DType D>
constexpr MapTileFn binary_tile_for() {
  if constexpr ((M & bit(D)) != 0) {
    return &binary_tile<F, type_of_t<D>>;
  } else {
    return nullptr;
  }
}
template <class F, uint32_t M, size_t... I>
constexpr std::array<MapTileFn, kNumDTypes> binary_tile_table(std::index_sequence<I...>) {
  return {binary_tile_for<F, M, static_cast<DType>(I)>()...};
}
template <class F, uint32_t M>
constexpr std::array<MapTileFn, kNumDTypes> binary_tiles() {
  return binary_tile_table<F, M>(std::make_index_sequence<kNumDTypes>());
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
  std::array<MapTileFn, kNumDTypes> tiles;
  /// Forward derivative given primals a, b, output y and tangents (either may be null).
  Array (*jvp)(const Array& a, const Array& b, const Array& y, const Array& ta, const Array& tb);
  /// The result is the complex dtype of real operands (the complex primitive).
  bool complex_out = false;
};
Avals binary_shape(const Primitive& p, AvalPtrs in, const Params& params);
Arrays binary_impl(const Primitive& p, std::span<const Array> in, std::span<const Aval> out, const Params& params);
TileKernel binary_tile_rule(const Primitive& p, std::span<const Aval> in, const Params& params);

}  // namespace graft::prims
