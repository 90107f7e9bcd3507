// NumPy's dtype vocabulary in C++ (jax.numpy's float32, int8, ..., floating, integer, finfo, iinfo,
// can_cast, result_type, isdtype, issubdtype). As graft::complex64 is std::complex<float>, the scalar
// names are C++ types (graft::float32 is float, graft::float16 and graft::bfloat16 the half types), so
// dtype<T>() and dtype_v<T> give their DType; the abstract names (floating, integer, ...) are tag types
// for issubdtype.
//
//   Array x = zeros({3}, dtype<float32>());
//   if (issubdtype<floating>(x.dtype())) ...
//   double eps = finfo(bf16).eps;                  // 0.0078125
//   bool ok = can_cast(i32, f64);                  // true ("safe")
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "graft/core/half.h"
#include "graft/ops/ops.h"

namespace graft {

// ---- scalar types --------------------------------------------------------------------------------------
using int8 = int8_t;
using int16 = int16_t;
using int32 = int32_t;
using int64 = int64_t;
using uint8 = uint8_t;
using uint16 = uint16_t;
using uint32 = uint32_t;
using uint64 = uint64_t;
using float32 = float;
using float64 = double;
/// NumPy's aliases: single (float32), double (float64; `double_` here), float_ (float64), int_ (int64).
/// (NumPy's `uint` is left out: glibc's ::uint, unsigned int, would become ambiguous in user code.)
using single = float;
using double_ = double;
using float_ = double;
using int_ = int64_t;
/// jax.numpy.ndarray: graft's array.
using ndarray = Array;

/// The DType of the scalar type T (dtype<float32>() == f32).
template <class T>
constexpr DType dtype() {
  return dtype_v<T>;
}
/// The DType NumPy's name (or graft's short one) spells: dtype("float32"), dtype("bf16").
DType dtype(std::string_view name);

// ---- abstract types (NumPy's scalar hierarchy), for issubdtype ---------------------------------------------
struct generic {
  static constexpr bool contains(DType) { return true; }
};
struct number : generic {
  static constexpr bool contains(DType d) { return d != DType::bool_; }
};
struct inexact : number {
  static constexpr bool contains(DType d) { return is_inexact(d); }
};
struct floating : inexact {
  static constexpr bool contains(DType d) { return is_floating(d); }
};
struct complexfloating : inexact {
  static constexpr bool contains(DType d) { return is_complex(d); }
};
struct integer : number {
  static constexpr bool contains(DType d) { return is_integer(d); }
};
struct signedinteger : integer {
  static constexpr bool contains(DType d) { return is_signed_int(d); }
};
struct unsignedinteger : integer {
  static constexpr bool contains(DType d) { return is_unsigned(d); }
};
/// Strings, bytes and objects: graft has no dtype of these kinds.
struct flexible : generic {
  static constexpr bool contains(DType) { return false; }
};
struct character : flexible {
  static constexpr bool contains(DType) { return false; }
};
struct object_ : generic {
  static constexpr bool contains(DType) { return false; }
};

/// Whether d is of kind K (an abstract type above) or is the scalar type K's dtype.
template <class K>
constexpr bool issubdtype(DType d) {
  if constexpr (std::is_base_of_v<generic, K>) {
    return K::contains(d);
  } else {
    return d == dtype_v<K>;
  }
}
/// issubdtype between two dtypes: whether they are equal (the concrete types are the leaves).
constexpr bool issubdtype(DType a, DType b) { return a == b; }
/// The Array API's isdtype: `kind` is a dtype's name or one of "bool", "signed integer", "unsigned
/// integer", "integral", "real floating", "complex floating", "numeric".
bool isdtype(DType d, std::string_view kind);

// ---- limits ------------------------------------------------------------------------------------------------
/// Machine limits of a floating (or complex: its parts') dtype, as numpy.finfo / ml_dtypes for bf16.
struct finfo {
  explicit finfo(DType d);
  DType dtype;      ///< the real dtype described
  int bits;         ///< storage bits
  int nmant;        ///< explicit mantissa bits
  int nexp;         ///< exponent bits
  int maxexp;       ///< the smallest power of 2 that overflows
  int minexp;       ///< the exponent of the smallest normal number
  int precision;    ///< decimal digits: floor(nmant * log10(2))
  double eps;       ///< 2^-nmant: the gap between 1 and the next number
  double epsneg;    ///< 2^-(nmant + 1): the gap between 1 and the number below it
  double max;       ///< the largest finite number
  double min;       ///< -max
  double tiny;      ///< the smallest positive normal number (= smallest_normal)
  double smallest_normal;
  double smallest_subnormal;
  double resolution;  ///< 10^-precision
};
/// Limits of an integer dtype, as numpy.iinfo (bool is not one: a ValueError, as NumPy's).
struct iinfo {
  explicit iinfo(DType d);
  DType dtype;
  int bits;
  int64_t min;
  uint64_t max;
};

// ---- casting and promotion ------------------------------------------------------------------------------------
/// NumPy's can_cast on dtypes: casting "no" / "equiv" (the same dtype), "safe" (every value kept: bool to
/// anything, integers to wider integers or to floats with enough mantissa as NumPy's table, floats to wider
/// floats and complex), "same_kind" (safe, or within a kind and downward: f64 -> f32, i64 -> i8, ints to
/// floats) or "unsafe" (always).
bool can_cast(DType from, DType to, std::string_view casting = "safe");
/// JAX's result_type: the dtype of combining the operands by its lattice (weak scalars count by kind).
DType result_type(const std::vector<Array>& xs);
DType result_type(const std::vector<DType>& ds);

/// jax.numpy.isscalar for arrays: whether x has rank 0; iterable: whether it has a dimension to iterate.
bool isscalar(const Array& x);
bool iterable(const Array& x);

}  // namespace graft
