// Test utilities: deterministic random arrays, numeric comparisons, finite differences.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "graft/compiler/jaxpr_text.h"
#include "graft/graft.h"
#include "graft/runtime/cpu/features.h"

namespace graft::testing {

/// cpu::set_native_bf16_for_testing(on) for a scope: the detected value comes back at its end, also
/// when an assertion throws.
struct NativeBf16 {
  explicit NativeBf16(int on) { cpu::set_native_bf16_for_testing(on); }
  ~NativeBf16() { cpu::set_native_bf16_for_testing(-1); }
  NativeBf16(const NativeBf16&) = delete;
  NativeBf16& operator=(const NativeBf16&) = delete;
};

/// n floats uniform in [-1, 1) from a seed, for kernels tested on raw buffers.
inline std::vector<float> uniform_floats(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(g);
  return v;
}

/// Deterministic random arrays.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : gen_(seed) {}
  /// Uniform values in [lo, hi) of dtype d.
  /// Complex d: both parts uniform in [lo, hi).
  Array uniform(const Shape& shape, DType d = DType::f32, double lo = -1, double hi = 1) {
    std::uniform_real_distribution<double> u(lo, hi);
    if (is_complex(d)) {
      std::vector<complex128> z(static_cast<size_t>(numel(shape)));
      for (auto& x : z) {
        double re = u(gen_);
        x = complex128(re, u(gen_));
      }
      Array out = Array::empty(Aval(shape, d));
      convert_elements(z.data(), DType::c128, out.concrete()->data(), d, static_cast<int64_t>(z.size()));
      return out;
    }
    std::vector<double> v(static_cast<size_t>(numel(shape)));
    for (auto& x : v) x = u(gen_);
    return from_doubles(v, shape, d);
  }
  /// Uniform integers in [lo, hi].
  Array ints(const Shape& shape, DType d, int64_t lo, int64_t hi) {
    std::uniform_int_distribution<int64_t> u(lo, hi);
    std::vector<double> v(static_cast<size_t>(numel(shape)));
    for (auto& x : v) x = static_cast<double>(u(gen_));
    return from_doubles(v, shape, d);
  }
  Array bools(const Shape& shape) { return ints(shape, DType::bool_, 0, 1); }
  double real(double lo = 0, double hi = 1) { return std::uniform_real_distribution<double>(lo, hi)(gen_); }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen_); }
  static Array from_doubles(const std::vector<double>& v, const Shape& shape, DType d) {
    Array out = Array::empty(Aval(shape, d));
    convert_elements(v.data(), DType::f64, out.concrete()->data(), d, static_cast<int64_t>(v.size()));
    return out;
  }

 private:
  std::mt19937_64 gen_;
};

/// The elements as doubles; a complex array's as (real, imaginary) pairs, so that comparisons check both parts.
inline std::vector<double> values(const Array& a) {
  if (!is_complex(a.dtype())) return a.to_vector<double>();
  auto z = a.to_vector<complex128>();
  std::vector<double> v;
  v.reserve(2 * z.size());
  for (auto& e : z) v.push_back(e.real()), v.push_back(e.imag());
  return v;
}

/// Asserts same shape and |a - b| <= atol + rtol * |b| elementwise (NaNs must match).
/// Expects fn() to throw E with `words` in its message.
template <class E, class Fn>
void expect_throws(Fn&& fn, const std::string& words) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception mentioning '" << words << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

inline ::testing::AssertionResult close(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-6) {
  if (!a.valid() || !b.valid()) return ::testing::AssertionFailure() << "null array";
  if (a.shape() != b.shape())
    return ::testing::AssertionFailure() << "shapes differ: " << a.aval().str() << " vs " << b.aval().str();
  if (is_complex(a.dtype()) != is_complex(b.dtype()))
    return ::testing::AssertionFailure() << "one is complex, the other not: " << a.aval().str() << " vs " << b.aval().str();
  auto x = values(a), y = values(b);
  for (size_t i = 0; i < x.size(); ++i) {
    bool both_nan = std::isnan(x[i]) && std::isnan(y[i]);
    bool same_inf = std::isinf(x[i]) && x[i] == y[i];
    if (both_nan || same_inf) continue;
    if (!(std::fabs(x[i] - y[i]) <= atol + rtol * std::fabs(y[i])))
      return ::testing::AssertionFailure() << "element " << i << ": " << x[i] << " vs " << y[i] << " (diff "
                                           << std::fabs(x[i] - y[i]) << ")\n  got:      " << a
                                           << "\n  expected: " << b;
  }
  return ::testing::AssertionSuccess();
}

inline Array concrete(const std::vector<double>& v, const Shape& s, DType d = DType::f32) {
  return Rng::from_doubles(v, s, d);
}

/// The gradient of a scalar function by central differences, one coordinate at a time (f64).
inline Array num_grad(const std::function<Array(const Array&)>& f, const Array& x, double eps = 1e-6) {
  auto xv = values(x);
  std::vector<double> g(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    auto p = xv, m = xv;
    p[i] += eps;
    m[i] -= eps;
    g[i] = (f(concrete(p, x.shape(), DType::f64)).item<double>() - f(concrete(m, x.shape(), DType::f64)).item<double>()) /
           (2 * eps);
  }
  return concrete(g, x.shape(), DType::f64);
}

/// The text of a jaxpr for golden tests, after checking that it parses back (graft/compiler/jaxpr_text.h)
/// to the same program and the same text: every golden jaxpr is a parser test too.
inline std::string golden(const ClosedJaxpr& j) {
  std::string text = j.str();
  try {
    ClosedJaxpr back = parse_jaxpr(text, jaxpr_constants(j));
    std::string why;
    EXPECT_TRUE(same_program(j, back, &why)) << "the parsed jaxpr differs: " << why << "\n" << text;
    EXPECT_EQ(back.str(), text) << "the parsed jaxpr prints differently";
  } catch (const Error& e) {
    ADD_FAILURE() << "parse_jaxpr failed: " << e.what() << "\n" << text;
  }
  return text;
}

}  // namespace graft::testing
