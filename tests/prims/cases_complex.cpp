// Conformance rows over complex64 / complex128: the complex primitives (real, imag, conj, complex), the
// elementwise primitives that take complex operands (references from std::complex<double>), and the
// linear structural primitives, whose complex rows are their real rows applied to both parts.
#include <algorithm>
#include <complex>
#include <numbers>
#include <set>

#include "prims/conformance.h"

// GCC 12 at -O1 reports Case's default value_dtypes ({f32, f64}) as maybe uninitialized once the row
// builders inline into complex_cases(): a false positive (the other row files build the same Case).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace graft::testing {

namespace {
using namespace graft::prims;
using Z = complex128;
const Shape kShape{3, 4};

// Elementwise reference over complex inputs (rank 0 broadcasts), computed in complex128 and stored in
// out(in[0]'s dtype): a real output dtype keeps the real part.
std::function<Inputs(const Inputs&)> zref(std::function<Z(const std::vector<Z>&)> f, std::function<DType(DType)> out) {
  return [f, out](const Inputs& in) {
    Shape s;
    for (auto& a : in)
      if (a.ndim() > 0) s = a.shape();
    std::vector<std::vector<Z>> vals;
    for (auto& a : in) vals.push_back(a.to_vector<Z>());
    std::vector<Z> o(static_cast<size_t>(numel(s))), args(in.size());
    for (size_t e = 0; e < o.size(); ++e) {
      for (size_t k = 0; k < in.size(); ++k) args[k] = vals[k][in[k].ndim() == 0 ? 0 : e];
      o[e] = f(args);
    }
    DType od = out(in[0].dtype());
    Array r = Array::empty(Aval(s, od));
    convert_elements(o.data(), DType::c128, r.concrete()->data(), od, static_cast<int64_t>(o.size()));
    return Inputs{r};
  };
}
DType same(DType d) { return d; }

// Complex rows compute in float for c64: a few ulps of the parts, relative to the modulus.
void complex_tolerance(Case& c) {
  c.rtol32 = 2e-5;
  c.atol32 = 2e-5;
}

// f(z) for z with both parts uniform in [lo, hi).
Case zunary(std::string name, const Primitive& p, double lo, double hi, std::function<Z(Z)> f,
            std::function<DType(DType)> out = same, bool smooth = true, Params params = {}) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.params = std::move(params);
  c.inputs = [lo, hi](Rng& r, DType d) { return Inputs{r.uniform(kShape, complex_dtype(d), lo, hi)}; };
  c.reference = zref([f](const std::vector<Z>& a) { return f(a[0]); }, out);
  c.diff = {true};
  c.smooth = smooth;
  complex_tolerance(c);
  return c;
}

Case zbinary(std::string name, const Primitive& p, double alo, double ahi, double blo, double bhi,
             std::function<Z(Z, Z)> f, bool scalar_b = false) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.inputs = [=](Rng& r, DType d) {
    DType z = complex_dtype(d);
    return Inputs{r.uniform(kShape, z, alo, ahi), r.uniform(scalar_b ? Shape{} : kShape, z, blo, bhi)};
  };
  c.reference = zref([f](const std::vector<Z>& a) { return f(a[0], a[1]); }, same);
  c.diff = {true, true};
  complex_tolerance(c);
  return c;
}

// Equality rows: parts drawn from {-1, 0, 1} so that ties occur.
Case zcompare(std::string name, const Primitive& p, bool equal) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.inputs = [](Rng& r, DType d) {
    DType fd = real_dtype(complex_dtype(d));
    auto part = [&] { return r.ints(kShape, fd, -1, 1); };
    Array a = lax::complex(part(), part()), b = lax::complex(part(), part());
    return Inputs{a, b};
  };
  c.reference = [equal](const Inputs& in) {
    auto a = in[0].to_vector<Z>(), b = in[1].to_vector<Z>();
    std::vector<double> o(a.size());
    for (size_t i = 0; i < a.size(); ++i) o[i] = (a[i] == b[i]) == equal;
    return Inputs{Rng::from_doubles(o, in[0].shape(), DType::bool_)};
  };
  c.diff = {false, false};
  c.smooth = false;
  return c;
}

// A real row's linear primitive over complex operands: its floating inputs become complex (a second
// draw gives the imaginary parts), and the reference is the real reference applied to the real and the
// imaginary parts.
Case on_complex_parts(const Case& base) {
  Case c = base;
  c.name = base.name + "_complex";
  c.value_dtypes = {DType::f32, DType::f64};  // complex parts are f32 or f64
  auto inputs = base.inputs;
  c.inputs = [inputs](Rng& r, DType d) {
    Inputs re = inputs(r, d), im = inputs(r, d), out;
    for (size_t i = 0; i < re.size(); ++i)
      out.push_back(is_floating(re[i].dtype()) ? lax::complex(re[i], im[i]) : re[i]);
    return out;
  };
  auto ref = base.reference;
  c.reference = [ref](const Inputs& in) {
    Inputs re, im, out;
    for (auto& x : in) {
      re.push_back(is_complex(x.dtype()) ? lax::real(x) : x);
      im.push_back(is_complex(x.dtype()) ? lax::imag(x) : x);
    }
    Inputs a = ref(re), b = ref(im);
    for (size_t k = 0; k < a.size(); ++k) out.push_back(lax::complex(a[k], b[k]));
    return out;
  };
  complex_tolerance(c);
  return c;
}

// The product of complex matrices from the real row's reference: (a + ib)(c + id) = ac - bd + i(ad + bc).
Case dot_complex(const Case& base) {
  Case c = on_complex_parts(base);
  auto ref = base.reference;
  c.reference = [ref](const Inputs& in) {
    Array a = lax::real(in[0]), b = lax::imag(in[0]), x = lax::real(in[1]), y = lax::imag(in[1]);
    Array re = ref({a, x})[0] - ref({b, y})[0], im = ref({a, y})[0] + ref({b, x})[0];
    return Inputs{lax::complex(re, im)};
  };
  return c;
}

// ---- the FFT: naive DFTs in complex128 ------------------------------------------------------------------
// One 1-D DFT along `axis` of a row-major array of shape `shape` (sign -1 forward, +1 inverse scaled by 1/n).
std::vector<Z> dft_axis(const std::vector<Z>& x, const Shape& shape, int64_t axis, int sign) {
  int64_t n = shape[axis], inner = 1, outer = 1;
  for (int64_t i = axis + 1; i < static_cast<int64_t>(shape.size()); ++i) inner *= shape[i];
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  std::vector<Z> y(x.size());
  const double pi = std::acos(-1.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in)
      for (int64_t k = 0; k < n; ++k) {
        Z acc = 0;
        for (int64_t j = 0; j < n; ++j)
          acc += x[(o * n + j) * inner + in] * std::polar(1.0, sign * 2 * pi * static_cast<double>(j * k % n) / n);
        y[(o * n + k) * inner + in] = sign > 0 ? acc / static_cast<double>(n) : acc;
      }
  return y;
}

// The fft primitive's reference: type 0-3 over the trailing `lens`, from the definitions (RFFT: the FFT of
// the real input, its last axis cut to n/2 + 1; IRFFT: the inverse DFT over the leading axes, then
// y_j = (1/n) sum_k m_k Re(X_k e^{2 pi i jk/n}) along the last, m_k = 1 for k = 0 and k = n/2, else 2).
Inputs fft_reference(const Inputs& in, int64_t type, const IntList& lens) {
  std::vector<Z> x = in[0].to_vector<Z>();
  Shape shape = in[0].shape();
  int64_t nd = static_cast<int64_t>(shape.size()), k = static_cast<int64_t>(lens.size()), n = lens.back();
  DType part = is_complex(in[0].dtype()) ? real_dtype(in[0].dtype()) : in[0].dtype();
  auto pack = [](const std::vector<Z>& v, const Shape& s, DType d) {
    Array r = Array::empty(Aval(s, d));
    convert_elements(v.data(), DType::c128, r.concrete()->data(), d, static_cast<int64_t>(v.size()));
    return r;
  };
  if (type <= 2) {
    for (int64_t a = nd - k; a < nd; ++a) x = dft_axis(x, shape, a, type == 1 ? 1 : -1);
    if (type < 2) return Inputs{pack(x, shape, in[0].dtype())};
    Shape out = shape;
    out.back() = n / 2 + 1;
    std::vector<Z> y;
    for (size_t i = 0; i < x.size(); ++i)
      if (static_cast<int64_t>(i) % n <= n / 2) y.push_back(x[i]);
    return Inputs{pack(y, out, complex_dtype(part))};
  }
  for (int64_t a = nd - k; a < nd - 1; ++a) x = dft_axis(x, shape, a, 1);
  int64_t m = shape.back(), rows = static_cast<int64_t>(x.size()) / m;
  Shape out = shape;
  out.back() = n;
  std::vector<Z> y(static_cast<size_t>(rows * n));
  const double pi = std::acos(-1.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t f = 0; f < m; ++f) {
        double mult = f == 0 || (n % 2 == 0 && f == n / 2) ? 1 : 2;
        acc += mult * (x[r * m + f] * std::polar(1.0, 2 * pi * static_cast<double>(j * f % n) / n)).real();
      }
      y[r * n + j] = acc / n;
    }
  return Inputs{pack(y, out, part)};
}

Case fft_case(std::string name, int64_t type, Shape in_shape, IntList lens) {
  Case c;
  c.name = std::move(name);
  c.prim = &fft_p;
  c.params = {{"fft_type", type}, {"fft_lengths", lens}};
  c.inputs = [type, in_shape](Rng& r, DType d) {
    return Inputs{r.uniform(in_shape, type == 2 ? d : complex_dtype(d), -1, 1)};
  };
  c.reference = [type, lens](const Inputs& in) { return fft_reference(in, type, lens); };
  c.diff = {true};
  complex_tolerance(c);
  return c;
}

}  // namespace

std::vector<Case> complex_cases() {
  std::vector<Case> v;
  auto real_of = [](DType d) { return real_dtype(d); };
  // ---- the complex primitives -----------------------------------------------------------------------------
  v.push_back(zunary("real", real_p, -2, 2, [](Z z) { return Z(z.real()); }, real_of));
  v.push_back(zunary("imag", imag_p, -2, 2, [](Z z) { return Z(z.imag()); }, real_of));
  v.push_back(zunary("conj", conj_p, -2, 2, [](Z z) { return std::conj(z); }));
  v.push_back(make_case(
      "complex", complex_p, {},
      [](Rng& r, DType d) { return Inputs{r.uniform(kShape, d, -2, 2), r.uniform(kShape, d, -2, 2)}; },
      zref([](const std::vector<Z>& a) { return Z(a[0].real(), a[1].real()); }, [](DType d) { return complex_dtype(d); }),
      {true, true}));
  // ---- elementwise primitives on complex operands --------------------------------------------------------
  v.push_back(zunary("neg_complex", neg_p, -2, 2, [](Z z) { return -z; }));
  v.push_back(zunary("exp_complex", exp_p, -1.5, 1.5, [](Z z) { return std::exp(z); }));
  // log and the square roots keep away from their branch cut (the negative real axis)
  v.push_back(zunary("log_complex", log_p, 0.2, 1.5, [](Z z) { return std::log(z); }));
  v.push_back(zunary("sqrt_complex", sqrt_p, 0.2, 1.5, [](Z z) { return std::sqrt(z); }));
  v.push_back(zunary("rsqrt_complex", rsqrt_p, 0.2, 1.5, [](Z z) { return 1.0 / std::sqrt(z); }));
  v.push_back(zunary("sin_complex", sin_p, -1.5, 1.5, [](Z z) { return std::sin(z); }));
  v.push_back(zunary("cos_complex", cos_p, -1.5, 1.5, [](Z z) { return std::cos(z); }));
  v.push_back(zunary("tan_complex", tan_p, -0.7, 0.7, [](Z z) { return std::tan(z); }));
  v.push_back(zunary("sinh_complex", sinh_p, -1.5, 1.5, [](Z z) { return std::sinh(z); }));
  v.push_back(zunary("cosh_complex", cosh_p, -1.5, 1.5, [](Z z) { return std::cosh(z); }));
  v.push_back(zunary("tanh_complex", tanh_p, -0.7, 0.7, [](Z z) { return std::tanh(z); }));
  // the inverse functions and log1p / expm1, away from their branch cuts
  v.push_back(zunary("asin_complex", asin_p, -0.7, 0.7, [](Z z) { return std::asin(z); }));
  v.push_back(zunary("acos_complex", acos_p, -0.7, 0.7, [](Z z) { return std::acos(z); }));
  v.push_back(zunary("atan_complex", atan_p, -0.7, 0.7, [](Z z) { return std::atan(z); }));
  v.push_back(zunary("asinh_complex", asinh_p, -0.7, 0.7, [](Z z) { return std::asinh(z); }));
  v.push_back(zunary("acosh_complex", acosh_p, 0.3, 1.5, [](Z z) { return std::acosh(z); }));
  v.push_back(zunary("atanh_complex", atanh_p, -0.7, 0.7, [](Z z) { return std::atanh(z); }));
  v.push_back(zunary("log1p_complex", log1p_p, -0.7, 1.5, [](Z z) { return std::log(1.0 + z); }));
  v.push_back(zunary("expm1_complex", expm1_p, -1.5, 1.5, [](Z z) { return std::exp(z) - 1.0; }));
  v.push_back(zunary("square_complex", square_p, -2, 2, [](Z z) { return z * z; }));
  v.push_back(zunary("integer_pow_complex", integer_pow_p, -1.5, 1.5, [](Z z) { return z * z * z; }, same, true,
                     {{"y", int64_t(3)}}));
  v.push_back(zunary("integer_pow_complex_negative", integer_pow_p, 0.3, 1.5, [](Z z) { return 1.0 / (z * z); }, same,
                     true, {{"y", int64_t(-2)}}));
  // |z| is smooth away from 0; sign's derivative is zero (JAX's rule)
  v.push_back(zunary("abs_complex", abs_p, 0.2, 1.5, [](Z z) { return Z(std::abs(z)); }, real_of));
  v.push_back(zunary("abs_complex_negative", abs_p, -1.5, -0.2, [](Z z) { return Z(std::abs(z)); }, real_of));
  v.push_back(zunary("sign_complex", sign_p, -2, 2, [](Z z) { return z / std::abs(z); }, same, false));
  v.push_back(zbinary("add_complex", add_p, -2, 2, -2, 2, [](Z a, Z b) { return a + b; }));
  v.push_back(zbinary("add_complex_scalar", add_p, -2, 2, -2, 2, [](Z a, Z b) { return a + b; }, true));
  v.push_back(zbinary("sub_complex", sub_p, -2, 2, -2, 2, [](Z a, Z b) { return a - b; }));
  v.push_back(zbinary("mul_complex", mul_p, -2, 2, -2, 2, [](Z a, Z b) { return a * b; }));
  v.push_back(zbinary("mul_complex_scalar", mul_p, -2, 2, -2, 2, [](Z a, Z b) { return a * b; }, true));
  v.push_back(zbinary("div_complex", div_p, -2, 2, 0.3, 1.5, [](Z a, Z b) { return a / b; }));
  v.push_back(zbinary("add_any_complex", add_any_p, -2, 2, -2, 2, [](Z a, Z b) { return a + b; }));
  v.push_back(zbinary("pow_complex", pow_p, 0.3, 1.5, -1, 1, [](Z a, Z b) { return std::pow(a, b); }));
  v.push_back(zunary("exp2_complex", exp2_p, -1.5, 1.5, [](Z z) { return std::exp(z * std::numbers::ln2); }));
  // max / min order complex values lexicographically (real part, then imaginary part), as JAX's lax.max
  auto lex_less = [](Z a, Z b) {
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  };
  v.push_back(zbinary("max_complex", max_p, -2, 2, -2, 2, [=](Z a, Z b) { return lex_less(a, b) ? b : a; }));
  v.push_back(zbinary("min_complex", min_p, -2, 2, -2, 2, [=](Z a, Z b) { return lex_less(b, a) ? b : a; }));
  for (bool is_max : {true, false}) {  // parts from {-1, 0, 1}: equal real parts, and equal values
    Case c = zcompare(is_max ? "max_complex_ties" : "min_complex_ties", is_max ? max_p : min_p, true);
    c.reference =
        zref([=](const std::vector<Z>& a) { return lex_less(a[0], a[1]) == is_max ? a[1] : a[0]; }, same);
    v.push_back(c);
  }
  v.push_back(zcompare("eq_complex", eq_p, true));
  v.push_back(zcompare("ne_complex", ne_p, false));
  {
    Case c = zunary("convert_complex_to_real", convert_element_type_p, -2, 2, [](Z z) { return Z(z.real()); },
                    [](DType) { return DType::f64; }, true, {{"new_dtype", DType::f64}, {"weak_type", false}});
    v.push_back(c);
    v.push_back(make_case(
        "convert_real_to_complex", convert_element_type_p, {{"new_dtype", DType::c128}, {"weak_type", false}},
        [](Rng& g, DType d) { return Inputs{g.uniform(kShape, d, -2, 2)}; },
        zref([](const std::vector<Z>& a) { return a[0]; }, [](DType) { return DType::c128; }), {true}));
  }
  // ---- the FFT (odd, even and prime lengths; one to three dimensions; batched) ------------------------------
  v.push_back(fft_case("fft", 0, {3, 5}, {5}));
  v.push_back(fft_case("fft_2d", 0, {2, 3, 4}, {3, 4}));
  v.push_back(fft_case("ifft", 1, {2, 6}, {6}));
  v.push_back(fft_case("ifft_3d", 1, {2, 3, 2}, {2, 3, 2}));
  v.push_back(fft_case("rfft_even", 2, {3, 6}, {6}));
  v.push_back(fft_case("rfft_odd", 2, {2, 7}, {7}));
  v.push_back(fft_case("rfft_2d", 2, {2, 3, 4}, {3, 4}));
  v.push_back(fft_case("irfft_even", 3, {3, 4}, {6}));
  v.push_back(fft_case("irfft_odd", 3, {2, 4}, {7}));
  v.push_back(fft_case("irfft_2d", 3, {2, 3, 3}, {3, 4}));
  v.push_back(fft_case("irfft_2d_odd", 3, {3, 3}, {3, 5}));
  // ---- linear structural primitives: the real rows on both parts ------------------------------------------
  const std::set<const Primitive*> linear = {&broadcast_in_dim_p, &reshape_p,    &transpose_p,     &squeeze_p,
                                             &rev_p,              &slice_p,      &pad_p,           &concatenate_p,
                                             &dynamic_slice_p,    &dynamic_update_slice_p,         &gather_p,
                                             &scatter_add_p,      &select_n_p,   &reduce_sum_p,    &cumsum_p,
                                             &copy_p};
  // (rows over floating inputs: the integer rows' values have no imaginary part to draw)
  auto floating_row = [](const Case& c) {
    return std::find(c.value_dtypes.begin(), c.value_dtypes.end(), DType::f32) != c.value_dtypes.end();
  };
  for (auto& c : structural_cases())
    if (linear.count(c.prim) && floating_row(c)) v.push_back(on_complex_parts(c));
  for (auto& c : elementwise_cases())
    if (linear.count(c.prim) && floating_row(c)) v.push_back(on_complex_parts(c));
  for (auto& c : structural_cases())
    if (c.prim == &dot_general_p) v.push_back(dot_complex(c));
  // ---- products over axes (complex multiplies mix the parts) ------------------------------------------------
  for (IntList axes : {IntList{1}, IntList{0, 1}}) {
    Case c = make_case(
        std::string("reduce_prod_complex_") + (axes.size() == 1 ? "rows" : "all"), reduce_prod_p, {{"axes", axes}},
        [](Rng& r, DType d) { return Inputs{r.uniform(kShape, complex_dtype(d), -1.2, 1.2)}; },
        [axes](const Inputs& in) {
          std::vector<Z> x = in[0].to_vector<Z>();
          int64_t rows = kShape[0], cols = kShape[1];
          std::vector<Z> o(axes.size() == 1 ? static_cast<size_t>(rows) : 1, Z(1));
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) o[axes.size() == 1 ? static_cast<size_t>(i) : 0] *= x[i * cols + j];
          Shape s = axes.size() == 1 ? Shape{rows} : Shape{};
          Array r = Array::empty(Aval(s, in[0].dtype()));
          convert_elements(o.data(), DType::c128, r.concrete()->data(), in[0].dtype(), static_cast<int64_t>(o.size()));
          return Inputs{r};
        },
        {true});
    complex_tolerance(c);
    v.push_back(c);
  }
  for (auto& c : linalg_complex_cases()) v.push_back(c);
  return v;
}

}  // namespace graft::testing
