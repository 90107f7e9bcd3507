#include "graft/ops/numpy_dtypes.h"

#include <cmath>

#include "graft/ops/internal.h"

namespace graft {

DType dtype(std::string_view name) { return parse_dtype(name); }

bool isdtype(DType d, std::string_view kind) {
  if (kind == "bool") return d == DType::bool_;
  if (kind == "signed integer") return is_signed_int(d);
  if (kind == "unsigned integer") return is_unsigned(d);
  if (kind == "integral") return is_integer(d);
  if (kind == "real floating") return is_floating(d);
  if (kind == "complex floating") return is_complex(d);
  if (kind == "numeric") return d != DType::bool_;
  DType other;
  try {
    other = parse_dtype(kind);
  } catch (const ValueError&) {
    fail<ValueError>("isdtype: unknown kind '", kind, "' (a dtype's name, 'bool', 'signed integer', 'unsigned ",
                     "integer', 'integral', 'real floating', 'complex floating' or 'numeric')");
  }
  return d == other;
}

finfo::finfo(DType d) {
  if (!is_inexact(d)) fail<ValueError>("finfo: ", long_name(d), " is not an inexact (floating or complex) type");
  dtype = real_dtype(d);
  switch (dtype) {
    case DType::f16: nmant = 10, nexp = 5; break;
    case DType::bf16: nmant = 7, nexp = 8; break;
    case DType::f32: nmant = 23, nexp = 8; break;
    default: nmant = 52, nexp = 11; break;
  }
  bits = static_cast<int>(itemsize(dtype) * 8);
  maxexp = 1 << (nexp - 1);
  minexp = 2 - maxexp;
  precision = static_cast<int>(std::floor(nmant * std::log10(2.0)));
  eps = std::ldexp(1.0, -nmant);
  epsneg = std::ldexp(1.0, -nmant - 1);
  max = (2 - eps) * std::ldexp(1.0, maxexp - 1);
  min = -max;
  tiny = smallest_normal = std::ldexp(1.0, minexp);
  smallest_subnormal = std::ldexp(1.0, minexp - nmant);
  resolution = std::pow(10.0, -precision);
}

iinfo::iinfo(DType d) {
  if (!is_integer(d)) fail<ValueError>("iinfo: ", long_name(d), " is not an integer type");
  dtype = d;
  bits = static_cast<int>(itemsize(d) * 8);
  if (is_unsigned(d)) {
    min = 0;
    max = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  } else {
    min = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
    max = (uint64_t(1) << (bits - 1)) - 1;
  }
}

namespace {
// NumPy's kinds in casting order: a value may move to a kind to its right under "same_kind".
int kind_rank(DType d) {
  if (d == DType::bool_) return 0;
  if (is_unsigned(d)) return 1;
  if (is_signed_int(d)) return 2;
  if (is_floating(d)) return 3;
  return 4;
}
int bits_of(DType d) { return static_cast<int>(itemsize(d) * 8); }
// The bits of a float's (or a complex's parts') type.
int float_bits(DType d) { return bits_of(real_dtype(d)); }

bool safe(DType a, DType b) {
  if (a == b || a == DType::bool_) return true;
  if (b == DType::bool_) return false;
  if (is_integer(a)) {
    int n = bits_of(a);
    if (is_integer(b)) {
      if (is_unsigned(a)) return is_unsigned(b) ? bits_of(b) >= n : bits_of(b) > n;
      return is_signed_int(b) && bits_of(b) >= n;
    }
    if (b == DType::bf16) return false;
    // NumPy's table: a float twice the integer's width (i8 -> f16, i16 -> f32, i32 -> f64), and its one
    // exception, 64-bit integers -> f64 (and c128)
    return float_bits(b) >= 2 * n || (n == 64 && float_bits(b) == 64);
  }
  if (is_floating(a)) {
    if (is_floating(b)) return b != DType::f16 && a != DType::f64 && (a != DType::f32 || b == DType::f64) &&
                               !(a == DType::f16 && b == DType::bf16) && !(a == DType::bf16 && b == DType::f16);
    return is_complex(b) && float_bits(b) >= bits_of(a);
  }
  return is_complex(b) && bits_of(b) >= bits_of(a);
}
}  // namespace

bool can_cast(DType from, DType to, std::string_view casting) {
  if (casting == "no" || casting == "equiv") return from == to;
  if (casting == "safe") return safe(from, to);
  if (casting == "same_kind") return safe(from, to) || kind_rank(to) >= kind_rank(from);
  if (casting == "unsafe") return true;
  fail<ValueError>("can_cast: casting must be 'no', 'equiv', 'safe', 'same_kind' or 'unsafe', got '", casting, "'");
}

DType result_type(const std::vector<Array>& xs) {
  if (xs.empty()) fail<ValueError>("result_type: at least one array or dtype is required");
  DType d = ops_detail::checked(xs[0], "result_type").dtype();
  bool weak = xs[0].aval().weak_type;
  for (size_t i = 1; i < xs.size(); ++i) {
    const Array& x = ops_detail::checked(xs[i], "result_type");
    d = promote_types(d, weak, x.dtype(), x.aval().weak_type, &weak);
  }
  return d;
}

DType result_type(const std::vector<DType>& ds) {
  if (ds.empty()) fail<ValueError>("result_type: at least one array or dtype is required");
  DType d = ds[0];
  for (size_t i = 1; i < ds.size(); ++i) d = promote_types(d, false, ds[i], false);
  return d;
}

bool isscalar(const Array& x) { return ops_detail::checked(x, "isscalar").ndim() == 0; }
bool iterable(const Array& x) { return ops_detail::checked(x, "iterable").ndim() > 0; }

}  // namespace graft
