// Complex arrays through the NumPy layer and the transformations: JAX's promotion, printing, the parts,
// grad with JAX's conventions (grad of a real function of z is the conjugate of df/dz-bar times 2:
// grad(|z|^2)(3+4j) = 6-8j), jit against eager, matmul against a loop, files, and the errors of the
// operations complex numbers do not have (order, the fused loops' types).
#include <complex>
#include <limits>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "graft/io/npy.h"
#include "ops/numpy_testing.h"

namespace graft::testing {
namespace {

using Z = complex128;

TEST(Complex, DTypesAndJaxPromotion) {
  EXPECT_EQ(itemsize(c64), 8u);
  EXPECT_EQ(itemsize(c128), 16u);
  EXPECT_EQ(parse_dtype("complex64"), c64);
  EXPECT_EQ(parse_dtype("c128"), c128);
  EXPECT_TRUE(is_complex(c64) && is_inexact(c64) && !is_floating(c64));
  EXPECT_EQ(real_dtype(c64), f32);
  EXPECT_EQ(complex_dtype(f64), c128);
  // jax.numpy.promote_types
  EXPECT_EQ(promote_types(f32, false, c64, false), c64);
  EXPECT_EQ(promote_types(f64, false, c64, false), c128);
  EXPECT_EQ(promote_types(f16, false, c64, false), c64);
  EXPECT_EQ(promote_types(i64, false, c64, false), c64);
  EXPECT_EQ(promote_types(c64, false, c128, false), c128);
  EXPECT_EQ(promote_types(bf16, false, c64, false), c64);
  // a weak float keeps c64; a weak complex makes f32 c64 and f64 c128, and i32 the default complex
  bool weak = false;
  EXPECT_EQ(promote_types(c64, false, f32, true, &weak), c64);
  EXPECT_FALSE(weak);
  EXPECT_EQ(promote_types(f32, false, c64, true, &weak), c64);
  EXPECT_EQ(promote_types(f64, false, c64, true, &weak), c128);
  EXPECT_EQ(promote_types(i32, false, c64, true, &weak), c64);
  EXPECT_TRUE(weak);
  Array z = zarr({Z(1, 2), Z(3, -4)}, {2}, c64);
  EXPECT_EQ((z * 2.0).dtype(), c64);
  EXPECT_EQ((z + ones({2}, f64)).dtype(), c128);
  EXPECT_EQ((z + arr({1, 2}, {2}, i32)).dtype(), c64);
  EXPECT_TRUE(close(z * 2.0, zarr({Z(2, 4), Z(6, -8)}, {2}), 0, 0));
  EXPECT_TRUE(close(z + ones({2}, f32), zarr({Z(2, 2), Z(4, -4)}, {2}), 0, 0));
}

TEST(Complex, PrintsAsNumpy) {
  std::ostringstream os;
  os << zarr({Z(1, 2), Z(3, -0.5)}, {2}, c64);
  EXPECT_NE(os.str().find("1.+2.j"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("3.-0.5j"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("complex64"), std::string::npos) << os.str();
}

TEST(Complex, PartsAngleAndConversions) {
  Array z = zarr({Z(3, 4), Z(-1, 0), Z(0, -2)}, {3});
  EXPECT_TRUE(is(real(z), f64, {3}, {3, -1, 0}));
  EXPECT_TRUE(is(imag(z), f64, {3}, {4, 0, -2}));
  EXPECT_TRUE(is(abs(z), f64, {3}, {5, 1, 2}));
  EXPECT_TRUE(close(conj(z), zarr({Z(3, -4), Z(-1, 0), Z(0, 2)}, {3}), 0, 0));
  EXPECT_TRUE(is(angle(z), f64, {3}, {std::atan2(4.0, 3.0), M_PI, -M_PI / 2}));
  EXPECT_TRUE(is(angle(z, true), f64, {3}, {std::atan2(4.0, 3.0) * 180 / M_PI, 180, -90}));
  EXPECT_TRUE(close(sign(z), zarr({Z(0.6, 0.8), Z(-1, 0), Z(0, -1)}, {3}), 1e-15, 1e-15));
  // real inputs: NumPy's real / imag / conj / angle
  Array x = arr({-2, 3}, {2});
  EXPECT_TRUE(is(real(x), f64, {2}, {-2, 3}));
  EXPECT_TRUE(is(imag(x), f64, {2}, {0, 0}));
  EXPECT_TRUE(is(angle(x), f64, {2}, {M_PI, 0}));
  Array c = complex(arr({1, 2}, {2}, i32), arr({-1, 0.5}, {2}, f32));
  EXPECT_EQ(c.dtype(), c64);
  EXPECT_TRUE(close(c, zarr({Z(1, -1), Z(2, 0.5)}, {2}), 0, 0));
  EXPECT_EQ(complex(arr({1}, {1}), arr({2}, {1})).dtype(), c128);
  // conversions: real -> complex has imaginary part 0; complex -> real keeps the real part
  EXPECT_TRUE(close(x.astype(c64), zarr({Z(-2, 0), Z(3, 0)}, {2}), 0, 0));
  EXPECT_TRUE(is(z.astype(f32), f32, {3}, {3, -1, 0}));
  EXPECT_TRUE(is(z.astype(bool_), bool_, {3}, {1, 1, 1}));
  EXPECT_TRUE(is(zarr({Z(0, 0), Z(0, 1)}, {2}).astype(i32), i32, {2}, {0, 0}));
}

TEST(Complex, ElementwiseAgainstStdComplex) {
  std::vector<Z> v = {Z(0.5, 1.0), Z(-1.5, 0.25), Z(2.0, -0.75), Z(-0.3, -0.4)};
  Array z = zarr(v, {4});
  auto check = [&](const Array& got, Z (*f)(Z)) {
    std::vector<Z> want;
    for (auto e : v) want.push_back(f(e));
    return close(got, zarr(want, {4}), 1e-14, 1e-14);
  };
  EXPECT_TRUE(check(exp(z), [](Z a) { return std::exp(a); }));
  EXPECT_TRUE(check(log(z), [](Z a) { return std::log(a); }));
  EXPECT_TRUE(check(sqrt(z), [](Z a) { return std::sqrt(a); }));
  EXPECT_TRUE(check(sin(z), [](Z a) { return std::sin(a); }));
  EXPECT_TRUE(check(tanh(z), [](Z a) { return std::tanh(a); }));
  EXPECT_TRUE(check(z * z, [](Z a) { return a * a; }));
  EXPECT_TRUE(check(1.0 / z, [](Z a) { return 1.0 / a; }));
  EXPECT_TRUE(check(power(z, 3), [](Z a) { return a * a * a; }));
  EXPECT_TRUE(check(power(z, zarr({Z(0.5, 0.5)}, {})), [](Z a) { return std::pow(a, Z(0.5, 0.5)); }));
  EXPECT_TRUE(is(z == zarr({Z(0.5, 1.0), Z(-1.5, 0), Z(2, -0.75), Z(0, 0)}, {4}), bool_, {4}, {1, 0, 1, 0}));
  EXPECT_TRUE(close(sum(z), zarr({Z(0.7, 0.1)}, {}), 1e-15, 1e-15));
  EXPECT_TRUE(close(mean(z), zarr({Z(0.175, 0.025)}, {}), 1e-15, 1e-15));
}

TEST(Complex, ReductionsOverEveryLayout) {
  // reduce_sum over leading, trailing, middle and split axes of a complex array vs a loop
  Shape s{2, 3, 4};
  std::vector<Z> v;
  for (int i = 0; i < 24; ++i) v.push_back(Z(i * 0.5 - 3, 7 - i * 0.25));
  Array z = zarr(v, s);
  for (Axes ax : {Axes{0}, Axes{2}, Axes{1}, Axes{0, 2}, Axes{0, 1, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(ax));
    Array got = sum(z, AxisArg(ax));
    Array want = complex(sum(real(z), AxisArg(ax)), sum(imag(z), AxisArg(ax)));
    EXPECT_TRUE(close(got, want, 1e-14, 1e-14));
  }
}

TEST(Complex, MatmulAgainstLoop) {
  for (DType d : {c64, c128}) {
    SCOPED_TRACE(std::string(short_name(d)));
    for (int64_t n : {3, 40}) {  // the loop and BLAS's cgemm / zgemm
      Rng rng(static_cast<uint64_t>(n));
      Array a = rng.uniform({n, n + 1}, d), b = rng.uniform({n + 1, n - 1}, d);
      auto av = a.to_vector<Z>(), bv = b.to_vector<Z>();
      std::vector<Z> want(static_cast<size_t>(n * (n - 1)));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n - 1; ++j)
          for (int64_t k = 0; k < n + 1; ++k)
            want[static_cast<size_t>(i * (n - 1) + j)] += av[static_cast<size_t>(i * (n + 1) + k)] * bv[static_cast<size_t>(k * (n - 1) + j)];
      double tol = d == c64 ? 1e-5 : 1e-13;
      EXPECT_TRUE(close(matmul(a, b), zarr(want, {n, n - 1}), tol, tol));
      // a transposed operand (the transpose flags of GEMM)
      EXPECT_TRUE(close(matmul(transpose(transpose(a)), b), zarr(want, {n, n - 1}), tol, tol));
    }
  }
}

TEST(Complex, GradFollowsJaxConventions) {
  // jax.grad(lambda z: abs(z)**2)(3+4j) == 6-8j; grad(real(z * w)) = w, grad(imag(z)) = -1j
  Array z0 = zarr({Z(3, 4)}, {});
  Array g = grad([](const Array& z) { return square(abs(z)); })(z0);
  EXPECT_EQ(g.dtype(), c128);
  EXPECT_TRUE(close(g, zarr({Z(6, -8)}, {}), 1e-12, 1e-12));
  Array w = zarr({Z(0.5, -2)}, {});
  EXPECT_TRUE(close(grad([&](const Array& z) { return real(z * w); })(z0), w, 1e-15, 1e-15));
  EXPECT_TRUE(close(grad([](const Array& z) { return imag(z); })(z0), zarr({Z(0, -1)}, {}), 0, 0));
  // d/dx |x + iy| by finite differences in the real and imaginary directions: grad = df/dx - i df/dy
  auto f = [](const Array& z) { return abs(sin(z) * z); };
  Array gz = grad(f)(z0);
  double h = 1e-6;
  double dx = (f(z0 + zarr({Z(h, 0)}, {})).item<double>() - f(z0 - zarr({Z(h, 0)}, {})).item<double>()) / (2 * h);
  double dy = (f(z0 + zarr({Z(0, h)}, {})).item<double>() - f(z0 - zarr({Z(0, h)}, {})).item<double>()) / (2 * h);
  EXPECT_TRUE(close(gz, zarr({Z(dx, -dy)}, {}), 1e-6, 1e-6));
  // a real output is required, as in JAX
  expect_throws<TypeError>([&] { grad([](const Array& z) { return z * z; })(z0); }, "real-valued");
}

TEST(Complex, InverseFunctionsAndSmallArguments) {
  // log1p and expm1 keep their digits for small z (log(1 + z) would not): z - z^2/2 + z^3/3, z + z^2/2 + z^3/6
  Z z(1e-9, -3e-9);
  Z l = log1p(zarr({z}, {})).item<Z>(), e = expm1(zarr({z}, {})).item<Z>();
  Z lw = z - z * z / 2.0 + z * z * z / 3.0, ew = z + z * z / 2.0 + z * z * z / 6.0;
  EXPECT_LT(std::abs(l - lw) / std::abs(lw), 1e-15);
  EXPECT_LT(std::abs(e - ew) / std::abs(ew), 1e-15);
  // the inverse trig and hyperbolic functions invert their forward ones on the principal branch
  Array w = zarr({Z(0.3, -0.4), Z(-0.2, 0.6)}, {2});
  EXPECT_TRUE(close(sin(arcsin(w)), w, 1e-14, 1e-14));
  EXPECT_TRUE(close(cos(arccos(w)), w, 1e-14, 1e-14));
  EXPECT_TRUE(close(tan(arctan(w)), w, 1e-14, 1e-14));
  EXPECT_TRUE(close(sinh(arcsinh(w)), w, 1e-14, 1e-14));
  EXPECT_TRUE(close(cosh(arccosh(w)), w, 1e-14, 1e-14));
  EXPECT_TRUE(close(tanh(arctanh(w)), w, 1e-14, 1e-14));
  // acosh's derivative in the left half plane (1 / sqrt(z^2 - 1) has the wrong sign there)
  Z a(-0.5, 0.7);
  Array g = grad([](const Array& v) { return real(arccosh(v)); })(zarr({a}, {}));
  Z want = 1.0 / (std::sqrt(a - 1.0) * std::sqrt(a + 1.0));  // JAX's grad of Re f is f' for holomorphic f
  EXPECT_TRUE(close(g, zarr({want}, {}), 1e-12, 1e-12));
}

TEST(Complex, JitEqualsEagerAndVmapEqualsLoop) {
  Rng rng(7);
  Array a = rng.uniform({4, 5}, c64), b = rng.uniform({5}, c64);
  auto f = [](const Array& x, const Array& y) { return exp(x * y) + conj(x) / (abs(x) + 1.0); };
  Array want = f(a, b);
  auto jf = jit(f);
  EXPECT_TRUE(close(jf(a, b), want, 1e-6, 1e-6));
  EXPECT_EQ(jf(a, b).dtype(), c64);
  Array v = vmap([&](const Array& x) { return f(x, b); })(a);
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(close(v[i], f(a[i], b), 1e-6, 1e-6)) << i;
}

TEST(Complex, CompilerKeepsImaginaryParts) {
  // simplify must not read 1+5j as 1 or 2j as 0; CSE must not merge literals differing in the imaginary part
  Array z = zarr({Z(1, 2), Z(-3, 0.5)}, {2});
  Array a = zarr({Z(1, 5)}, {}), b = zarr({Z(0, 2)}, {}), c = zarr({Z(1, 3)}, {});
  auto f = [&](const Array& x) { return lax::add(lax::mul(x, a), lax::add(lax::mul(x, c), lax::sub(x, b))); };
  Array want = f(z);
  EXPECT_TRUE(close(jit(f)(z), want, 1e-15, 1e-15));
  EXPECT_TRUE(close(want, zarr({Z(-13, 12), Z(-13, -24.5)}, {2}), 1e-15, 1e-15));
}

TEST(Complex, NumpyFunctionsOnComplex) {
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Array z = zarr({Z(1, nan), Z(inf, 0), Z(0, -inf), Z(1, 2)}, {4});
  EXPECT_TRUE(is(isnan(z), bool_, {4}, {1, 0, 0, 0}));
  EXPECT_TRUE(is(isinf(z), bool_, {4}, {0, 1, 1, 0}));
  EXPECT_TRUE(is(isfinite(z), bool_, {4}, {0, 0, 0, 1}));
  // var is the mean of |x - mean|^2, real; vdot and vecdot conjugate their first argument (NumPy's)
  Array w = zarr({Z(1, 1), Z(3, -1)}, {2});
  EXPECT_TRUE(is(var(w), f64, {}, {2}));
  EXPECT_TRUE(close(vdot(w, w), zarr({Z(12, 0)}, {}), 1e-15, 1e-15));
  EXPECT_TRUE(close(vecdot(w, w), zarr({Z(12, 0)}, {}), 1e-15, 1e-15));
  EXPECT_TRUE(close(round(zarr({Z(1.5, -2.7)}, {1})), zarr({Z(2, -3)}, {1}), 0, 0));
  // isclose compares the modulus of the difference (the imaginary part counts); infinities only to themselves
  Array p = zarr({Z(1, 1), Z(1, 1), Z(inf, 0), Z(1, nan)}, {4}), q = zarr({Z(1, 1 + 1e-9), Z(1, 1.1), Z(inf, 0), Z(1, nan)}, {4});
  EXPECT_TRUE(is(isclose(p, q), bool_, {4}, {1, 0, 1, 0}));
  // operations without a complex form say so instead of dropping the imaginary part
  expect_throws<TypeError>([&] { return floor(w); }, "floor: complex");
  expect_throws<TypeError>([&] { return logsumexp(w); }, "logsumexp: complex");
  expect_throws<TypeError>([&] { return arctan2(w, w); }, "arctan2: complex");
}

TEST(Complex, OrderIsLexicographic) {
  // NumPy's and JAX's order: by real part, then by imaginary part; the first NaN (either part) wins
  double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Array a = zarr({Z(1, 5), Z(2, -1), Z(2, 3), Z(-1, 9), Z(2, 3)}, {5});
  Array b = zarr({Z(1, 4), Z(2, 0), Z(1, 9), Z(-1, 9), Z(3, -9)}, {5});
  EXPECT_TRUE(close(maximum(a, b), zarr({Z(1, 5), Z(2, 0), Z(2, 3), Z(-1, 9), Z(3, -9)}, {5}), 0, 0));
  EXPECT_TRUE(close(minimum(a, b), zarr({Z(1, 4), Z(2, -1), Z(1, 9), Z(-1, 9), Z(2, 3)}, {5}), 0, 0));
  EXPECT_TRUE(is(less(a, b), bool_, {5}, {0, 1, 0, 0, 1}));
  EXPECT_TRUE(is(less_equal(a, b), bool_, {5}, {0, 1, 0, 1, 1}));
  EXPECT_TRUE(is(greater(a, b), bool_, {5}, {1, 0, 1, 0, 0}));
  EXPECT_TRUE(is(greater_equal(a, b), bool_, {5}, {1, 0, 1, 1, 0}));
  // reductions: the first extremum of equal values, along one axis and over several
  EXPECT_TRUE(close(max(a), zarr({Z(2, 3)}, {}), 0, 0));
  EXPECT_TRUE(close(min(a), zarr({Z(-1, 9)}, {}), 0, 0));
  EXPECT_TRUE(is(argmax(a), default_int_dtype(), {}, {2}));
  EXPECT_TRUE(is(argmin(b), default_int_dtype(), {}, {3}));
  Array m = reshape(concatenate({a, b, a, b}), {2, 2, 5});  // [a, b], [a, b]
  EXPECT_TRUE(close(max(m, Axes{0, 1}), maximum(a, b), 0, 0));
  EXPECT_TRUE(close(max(m, Axes{2}, true),
                    reshape(zarr({Z(2, 3), Z(3, -9), Z(2, 3), Z(3, -9)}, {4}), {2, 2, 1}), 0, 0));
  EXPECT_TRUE(is(argmax(m, 2), default_int_dtype(), {2, 2}, {2, 4, 2, 4}));
  Array with_nan = zarr({Z(1, 1), Z(nan, 0), Z(inf, 0), Z(0, nan)}, {4});
  EXPECT_TRUE(is(argmax(with_nan), default_int_dtype(), {}, {1}));
  EXPECT_TRUE(is(argmin(with_nan), default_int_dtype(), {}, {1}));
  EXPECT_TRUE(std::isnan(real(max(with_nan)).item<double>()));
  // an infinite imaginary part is still an extremum of its real part's tie
  EXPECT_TRUE(is(argmin(zarr({Z(0, 1), Z(2, -inf), Z(2, 0)}, {3})), default_int_dtype(), {}, {0}));
  EXPECT_TRUE(is(argmax(zarr({Z(0, 1), Z(2, -inf), Z(1, 0)}, {3})), default_int_dtype(), {}, {1}));
  // sort and argsort: JAX's order (by real part, then imaginary part, a NaN part after every number), stable
  Array s = zarr({Z(2, 1), Z(nan, 0), Z(1, 7), Z(2, -1), Z(1, nan), Z(1, 7)}, {6});
  Array sorted = sort(s);
  std::vector<Z> got = sorted.to_vector<Z>();
  std::vector<Z> want = {Z(1, 7), Z(1, 7), Z(1, nan), Z(2, -1), Z(2, 1), Z(nan, 0)};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(
        (got[i] == want[i]) ||
        (std::isnan(want[i].imag()) && got[i].real() == want[i].real() && std::isnan(got[i].imag())) ||
        (std::isnan(want[i].real()) && std::isnan(got[i].real())))
        << i << ": " << got[i];
  }
  EXPECT_TRUE(is(argsort(s), default_int_dtype(), {6}, {2, 5, 4, 3, 0, 1}));
  // the derivative of max is split between equal extrema (a holds 2 + 3i twice; grad Re(zw) = w), as the
  // real reductions'; of maximum, it goes to the larger operand (halves at ties); jit equals eager
  Array g = grad([](const Array& x) { return real(max(x) * zarr({Z(2, -1)}, {})); })(a);
  EXPECT_TRUE(close(g, zarr({Z(0, 0), Z(0, 0), Z(1, -0.5), Z(0, 0), Z(1, -0.5)}, {5}), 0, 0));
  Array g1 = grad([](const Array& x) { return real(min(x) * zarr({Z(2, -1)}, {})); })(a);
  EXPECT_TRUE(close(g1, zarr({Z(0, 0), Z(0, 0), Z(0, 0), Z(2, -1), Z(0, 0)}, {5}), 0, 0));
  // the extremum itself, not a sum: -0.0 keeps its sign, infinities stay
  Array nz = max(zarr({Z(-0.0, -0.0), Z(-1, 0)}, {2}));
  EXPECT_TRUE(std::signbit(real(nz).item<double>()) && std::signbit(imag(nz).item<double>()));
  EXPECT_TRUE(close(max(zarr({Z(inf, 1), Z(1, 0)}, {2})), zarr({Z(inf, 1)}, {}), 0, 0));
  // nanmax / nanargmax skip NaNs (an all-NaN slice: NaN and -1, as JAX)
  Array skip = zarr({Z(1, 1), Z(nan, 0), Z(3, 0), Z(0, nan)}, {4});
  EXPECT_TRUE(close(nanmax(skip), zarr({Z(3, 0)}, {}), 0, 0));
  EXPECT_TRUE(close(nanmin(skip), zarr({Z(1, 1)}, {}), 0, 0));
  EXPECT_TRUE(is(nanargmax(skip), default_int_dtype(), {}, {2}));
  EXPECT_TRUE(is(nanargmin(zarr({Z(nan, 0), Z(nan, 1)}, {2})), default_int_dtype(), {}, {-1}));
  expect_throws<ValueError>([&] { return clip(a, zarr({Z(0, 0)}, {}), std::nullopt); }, "clip: complex");
  Array gm = grad([&](const Array& x) { return real(sum(maximum(x, b))); })(a);
  EXPECT_TRUE(close(gm, zarr({Z(1, 0), Z(0, 0), Z(1, 0), Z(0.5, 0), Z(0, 0)}, {5}), 0, 0));
  auto f = [](const Array& x) { return max(x, Axes{1}) + sort(x, 1)[{Slice(), 0}] * zarr({Z(0, 1)}, {}); };
  Array x = reshape(concatenate({a, b, b, a}), {4, 5});
  EXPECT_TRUE(close(jit(f)(x), f(x), 0, 0));
}

TEST(Complex, Exp2AndFloatPowerKeepComplexValues) {
  // 2^z = e^(z ln 2) (JAX's exp2 takes complex operands); float_power promotes to inexact, not to f64
  Array z = zarr({Z(0.5, -1), Z(-2, 3)}, {2});
  EXPECT_TRUE(
      close(exp2(z), zarr({std::pow(Z(2), Z(0.5, -1)), std::pow(Z(2), Z(-2, 3))}, {2}), 1e-14, 1e-14));
  Array w = zarr({Z(1.5, 0.5), Z(0.25, -1)}, {2});
  EXPECT_TRUE(close(float_power(z, w),
                    zarr({std::pow(Z(0.5, -1), Z(1.5, 0.5)), std::pow(Z(-2, 3), Z(0.25, -1))}, {2}), 1e-14,
                    1e-14));
  EXPECT_EQ(float_power(zarr({Z(1, 1)}, {1}, c64), Array(2.0)).dtype(), c64);
  EXPECT_EQ(float_power(Array::scalar(2.0, f32), Array::scalar(3, DType::i32)).dtype(), f32);
  EXPECT_EQ(float_power(Array::scalar(2, DType::i32), Array::scalar(3, DType::i32)).dtype(),
            default_float_dtype());
}

TEST(Complex, JaxprLiteralsPrintAndParseBack) {
  complex64 c(1.5f, -2.0f);
  Array k = Array::from_data(&c, {}, c64);
  ClosedJaxpr j = make_jaxpr([&](const Array& z) { return lax::mul(z, k); })(zarr({Z(1, 1), Z(0, 2)}, {2}, c64));
  std::string text = golden(j);  // parses back to the same program and text
  EXPECT_NE(text.find("(1.5-2j):c64[]"), std::string::npos) << text;  // Python's repr, as JAX prints
  complex128 i(0, 3);
  ClosedJaxpr j2 = make_jaxpr([&](const Array& z) { return lax::add(z, Array::from_data(&i, {}, c128)); })(zarr({Z(1, 1)}, {1}));
  EXPECT_NE(golden(j2).find(" 3j:c128[]"), std::string::npos) << j2.str();
  EXPECT_NE(text.find("c64[2]"), std::string::npos) << text;
}

TEST(Complex, NpyRoundTrip) {
  auto dir = std::filesystem::temp_directory_path() / ("graft_complex_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (DType d : {c64, c128}) {
    Array z = zarr({Z(1, -2), Z(0.5, 3), Z(-7, 0)}, {3}, d);
    std::string p = (dir / (std::string(short_name(d)) + ".npy")).string();
    io::save_npy(p, z);
    Array back = io::load_npy(p);
    EXPECT_EQ(back.dtype(), d);
    EXPECT_TRUE(close(back, z, 0, 0));
  }
  std::filesystem::remove_all(dir);
}

TEST(Complex, ClearErrors) {
  Array z = zarr({Z(1, 2), Z(3, 4)}, {2});
  // lax's comparisons and reductions take ordered types (jnp's order complex values lexicographically)
  expect_throws<TypeError>([&] { return lax::lt(z, z); }, "lt");
  expect_throws<TypeError>([&] { return lax::floor(z); }, "floor");
  expect_throws<TypeError>([&] { return lax::reduce_max(z, {0}); }, "reduce_max");
  // NumPy's real-only functions refuse complex operands rather than compute on a part
  expect_throws<TypeError>([&] { return hypot(z, z); }, "hypot");
  expect_throws<TypeError>([&] { return copysign(z, z); }, "copysign");
  expect_throws<TypeError>([&] { return logaddexp2(z, z); }, "logaddexp2");
  // complex() takes real parts of f32 or f64
  expect_throws<TypeError>([&] { return lax::complex(z, z); }, "complex");
  expect_throws<TypeError>([&] { return complex(z, real(z)); }, "must be real");
}

}  // namespace
}  // namespace graft::testing
