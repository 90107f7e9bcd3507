// Element types and JAX's type-promotion lattice (with weakly typed scalars).
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <utility>

#include "graft/core/half.h"

namespace graft {

/// Element type of an array. The order is part of the ABI of the kernel dispatch tables.
enum class DType : uint8_t { bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, c64, c128 };
inline constexpr int kNumDTypes = 15;

/// The C++ types of complex64 / complex128 elements (two IEEE floats, real part first, as NumPy and
/// CUDA store them).
using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

// Short names for users: graft::f32 etc.
inline constexpr DType bool_ = DType::bool_;
inline constexpr DType i8 = DType::i8;
inline constexpr DType i16 = DType::i16;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType u8 = DType::u8;
inline constexpr DType u16 = DType::u16;
inline constexpr DType u32 = DType::u32;
inline constexpr DType u64 = DType::u64;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr DType c64 = DType::c64;
inline constexpr DType c128 = DType::c128;

size_t itemsize(DType d);
/// The jaxpr spelling: f32, i32, bool, bf16 ...
std::string_view short_name(DType d);
/// NumPy's spelling: float32, int32, bool, bfloat16 ...
std::string_view long_name(DType d);
/// Parses either spelling; throws ValueError otherwise.
DType parse_dtype(std::string_view s);
std::ostream& operator<<(std::ostream& os, DType d);

/// Real floating point (f16, bf16, f32, f64): complex dtypes are not floating, as in NumPy's
/// issubdtype(complex64, floating) == False.
constexpr bool is_floating(DType d) { return d >= DType::f16 && d <= DType::f64; }
constexpr bool is_complex(DType d) { return d == DType::c64 || d == DType::c128; }
/// Floating or complex: the dtypes that carry derivatives (NumPy's `inexact`).
constexpr bool is_inexact(DType d) { return d >= DType::f16; }
/// The real dtype of a complex one's parts (c64 -> f32, c128 -> f64); other dtypes map to themselves.
constexpr DType real_dtype(DType d) { return d == DType::c64 ? DType::f32 : d == DType::c128 ? DType::f64 : d; }
/// The complex dtype whose parts are `d` (f64 -> c128, the other floats -> c64; complex maps to itself).
constexpr DType complex_dtype(DType d) {
  return d == DType::f64 || d == DType::c128 ? DType::c128 : DType::c64;
}
constexpr bool is_integer(DType d) { return d >= DType::i8 && d <= DType::u64; }
constexpr bool is_unsigned(DType d) { return d >= DType::u8 && d <= DType::u64; }
constexpr bool is_signed_int(DType d) { return d >= DType::i8 && d <= DType::i64; }
constexpr bool is_bool(DType d) { return d == DType::bool_; }

/// Result dtype of combining two operands, following JAX's lattice. A weak operand (a C++ scalar
/// such as the 2.0 in `x * 2.0`) only contributes its kind (int/float), so `f16 * 2.0` stays f16.
/// `*weak_out` is set when the result is itself weak (both operands weak, or a weak operand whose
/// kind wins: `i32 * 2.0` is a weak float of the mode's default dtype, f32, or f64 with x64).
/// Complex sits above the floats as in JAX: f32 + c64 -> c64, f64 + c64 -> c128, f32 * 1j -> c64.
DType promote_types(DType a, bool weak_a, DType b, bool weak_b, bool* weak_out = nullptr);
/// Default dtypes for weak scalars (JAX with x64 disabled): int -> i32, float -> f32.
constexpr DType default_int = DType::i32;
constexpr DType default_float = DType::f32;
/// The default dtypes of the running mode (config::enable_x64()): i32 / f32, or i64 / f64 with x64.
/// Integer operands of an operation that needs floating point are promoted to default_float_dtype().
DType default_int_dtype();
DType default_float_dtype();
/// c64, or c128 with x64: the dtype of a weak complex result (a C++ std::complex<double> scalar).
DType default_complex_dtype();

// ---- C++ type <-> DType -------------------------------------------------------------------------
template <class T>
struct dtype_of;
#define GRAFT_DTYPE_OF(T, D) \
  template <>                \
  struct dtype_of<T> {       \
    static constexpr DType value = D; \
  };
GRAFT_DTYPE_OF(bool, DType::bool_)
GRAFT_DTYPE_OF(int8_t, DType::i8)
GRAFT_DTYPE_OF(int16_t, DType::i16)
GRAFT_DTYPE_OF(int32_t, DType::i32)
GRAFT_DTYPE_OF(int64_t, DType::i64)
GRAFT_DTYPE_OF(uint8_t, DType::u8)
GRAFT_DTYPE_OF(uint16_t, DType::u16)
GRAFT_DTYPE_OF(uint32_t, DType::u32)
GRAFT_DTYPE_OF(uint64_t, DType::u64)
GRAFT_DTYPE_OF(float16, DType::f16)
GRAFT_DTYPE_OF(bfloat16, DType::bf16)
GRAFT_DTYPE_OF(float, DType::f32)
GRAFT_DTYPE_OF(double, DType::f64)
GRAFT_DTYPE_OF(complex64, DType::c64)
GRAFT_DTYPE_OF(complex128, DType::c128)
#undef GRAFT_DTYPE_OF
template <class T>
inline constexpr DType dtype_v = dtype_of<T>::value;

/// The C++ type of a DType: type_of_t<DType::f32> is float.
template <DType D>
struct type_of;
#define GRAFT_TYPE_OF(T, D) \
  template <>               \
  struct type_of<D> {       \
    using type = T;         \
  };
GRAFT_TYPE_OF(bool, DType::bool_)
GRAFT_TYPE_OF(int8_t, DType::i8)
GRAFT_TYPE_OF(int16_t, DType::i16)
GRAFT_TYPE_OF(int32_t, DType::i32)
GRAFT_TYPE_OF(int64_t, DType::i64)
GRAFT_TYPE_OF(uint8_t, DType::u8)
GRAFT_TYPE_OF(uint16_t, DType::u16)
GRAFT_TYPE_OF(uint32_t, DType::u32)
GRAFT_TYPE_OF(uint64_t, DType::u64)
GRAFT_TYPE_OF(float16, DType::f16)
GRAFT_TYPE_OF(bfloat16, DType::bf16)
GRAFT_TYPE_OF(float, DType::f32)
GRAFT_TYPE_OF(double, DType::f64)
GRAFT_TYPE_OF(complex64, DType::c64)
GRAFT_TYPE_OF(complex128, DType::c128)
#undef GRAFT_TYPE_OF
template <DType D>
using type_of_t = typename type_of<D>::type;

template <class T>
struct TypeTag {
  using type = T;
};

/// Throws TypeError "<what>: complex dtypes (c64) are not supported": the complex case of visit_dtype.
[[noreturn]] void complex_unsupported(DType d, std::string_view what = "this operation");

/// Calls f(TypeTag<T>{}) with the C++ type of d: `visit_dtype(d, [&](auto t) { using T = ...; })`.
/// Real dtypes only (most kernels have no complex form): a complex d throws TypeError. Kernels that
/// handle complex use visit_any_dtype.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_: return f(TypeTag<bool>{});
    case DType::i8: return f(TypeTag<int8_t>{});
    case DType::i16: return f(TypeTag<int16_t>{});
    case DType::i32: return f(TypeTag<int32_t>{});
    case DType::i64: return f(TypeTag<int64_t>{});
    case DType::u8: return f(TypeTag<uint8_t>{});
    case DType::u16: return f(TypeTag<uint16_t>{});
    case DType::u32: return f(TypeTag<uint32_t>{});
    case DType::u64: return f(TypeTag<uint64_t>{});
    case DType::f16: return f(TypeTag<float16>{});
    case DType::bf16: return f(TypeTag<bfloat16>{});
    case DType::f32: return f(TypeTag<float>{});
    case DType::f64: return f(TypeTag<double>{});
    case DType::c64:
    case DType::c128: complex_unsupported(d);
  }
  return f(TypeTag<float>{});
}

/// visit_dtype over every dtype, complex64 / complex128 included.
template <class F>
decltype(auto) visit_any_dtype(DType d, F&& f) {
  if (d == DType::c64) return f(TypeTag<complex64>{});
  if (d == DType::c128) return f(TypeTag<complex128>{});
  return visit_dtype(d, std::forward<F>(f));
}

template <class T>
inline constexpr bool is_complex_v = std::is_same_v<T, complex64> || std::is_same_v<T, complex128>;

/// The type arithmetic is done in: f32 for the 16-bit floats, the type itself otherwise.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

}  // namespace graft
