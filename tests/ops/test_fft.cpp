// graft::fft (NumPy's jax.numpy.fft) against NumPy's values (numpy.fft, printed to 17 digits) and
// properties: crops and pads, norms, the n-dimensional forms against one axis at a time, round trips,
// promotion, derivatives against finite differences, jit against eager, vmap against a loop, errors.
// The fft primitive's own rows (values against naive DFTs, JVP / VJP, vmap, jit) are in
// tests/prims/cases_complex.cpp.
#include <complex>

#include "graft/ops/fft.h"
#include "ops/numpy_testing.h"

namespace graft::testing {
namespace {

using Z = complex128;

TEST(Fft, OneAxisMatchesNumpy) {
  Array x = arr({1, 2, 3, 4, 5}, {5});
  Array y = fft::fft(x);
  EXPECT_EQ(y.dtype(), c128);
  EXPECT_TRUE(close(y,
                    zarr({Z(15, 0), Z(-2.5, 3.4409548011779334), Z(-2.5, 0.8122992405822659),
                          Z(-2.5, -0.8122992405822659), Z(-2.5, -3.4409548011779334)},
                         {5}),
                    1e-14, 1e-14));
  // n crops or pads; "ortho" scales by 1/sqrt(n)
  EXPECT_TRUE(close(fft::fft(x, 3), zarr({Z(6, 0), Z(-1.5, 0.8660254037844386), Z(-1.5, -0.8660254037844386)}, {3}),
                    1e-14, 1e-14));
  EXPECT_TRUE(close(fft::fft(x, 7, -1, "ortho"),
                    zarr({Z(5.669467095138408, 0), Z(-2.467844571017525, -1.53248075335263),
                          Z(1.309064737348688, -0.5405028369441074), Z(-0.3530780583680722, 0.9270164097032625),
                          Z(-0.3530780583680722, -0.9270164097032625), Z(1.309064737348688, 0.5405028369441074),
                          Z(-2.467844571017525, 1.53248075335263)},
                         {7}),
                    1e-14, 1e-14));
  // ifft inverts fft under every norm
  for (const char* norm : {"backward", "ortho", "forward"})
    EXPECT_TRUE(close(fft::ifft(fft::fft(x, std::nullopt, -1, norm), std::nullopt, -1, norm), x.astype(c128), 1e-14,
                      1e-14))
        << norm;
}

TEST(Fft, HermitianTransformsMatchNumpy) {
  Array z = zarr({Z(1, 2), Z(0, -1), Z(3, 0), Z(0.5, -0.5)}, {4});
  EXPECT_TRUE(is(fft::irfft(z), f64, {6},
                 {1.25, -0.1279915320718537, 0.03867513459481287, 1.0833333333333333, -0.5386751345948129,
                  -0.7053418012614794},
                 1e-14, 1e-14));
  EXPECT_TRUE(is(fft::irfft(z, 5, -1, "forward"), f64, {5},
                 {7., -1.9519889336593776, 4.029672470834631, 1.6785314616647384, -5.756214998839992}, 1e-14, 1e-14));
  EXPECT_TRUE(is(fft::hfft(z), f64, {6},
                 {7.5, -4.232050807568877, -3.232050807568877, 6.5, 0.2320508075688772, -0.7679491924311228}, 1e-14,
                 1e-14));
  EXPECT_TRUE(is(fft::hfft(z, 5, -1, "ortho"), f64, {5},
                 {3.1304951684997055, -2.574257606102019, 0.7506620901308875, 1.8021243143691548, -0.8729559893979392},
                 1e-14, 1e-14));
  Array x = arr({1, 2, 3, 4, 5}, {5});
  EXPECT_TRUE(close(fft::ihfft(x), zarr({Z(3, 0), Z(-0.5, -0.6881909602355867), Z(-0.5, -0.1624598481164532)}, {3}),
                    1e-14, 1e-14));
  // rfft is fft's first n/2 + 1 terms; irfft(rfft(x), n) is x for odd and even n
  Rng rng(3);
  for (int64_t n : {7, 8}) {
    Array r = rng.uniform({3, n}, f64);
    Array full = fft::fft(r);
    EXPECT_TRUE(close(fft::rfft(r), lax::slice_in_dim(full, 0, n / 2 + 1, 1, 1), 1e-13, 1e-13)) << n;
    EXPECT_TRUE(close(fft::irfft(fft::rfft(r), n), r, 1e-13, 1e-13)) << n;
  }
}

TEST(Fft, ManyAxesAreOneAxisAtATime) {
  Rng rng(5);
  Array x = rng.uniform({2, 3, 4}, c128);
  Array seq = fft::fft(fft::fft(fft::fft(x, std::nullopt, 0), std::nullopt, 1), std::nullopt, 2);
  EXPECT_TRUE(close(fft::fftn(x), seq, 1e-13, 1e-13));
  // axes in any order, with s cropping and padding; fft2 is the last two axes
  Array two = fft::fft(fft::fft(x, 5, 0), 2, 2);
  EXPECT_TRUE(close(fft::fftn(x, Shape{2, 5}, Axes{2, 0}), two, 1e-13, 1e-13));
  EXPECT_TRUE(close(fft::fft2(x), fft::fft(fft::fft(x, std::nullopt, 1), std::nullopt, 2), 1e-13, 1e-13));
  EXPECT_TRUE(close(fft::ifftn(fft::fftn(x, std::nullopt, std::nullopt, "ortho"), std::nullopt, std::nullopt, "ortho"),
                    x, 1e-13, 1e-13));
  // only s: its last s.size() axes
  EXPECT_TRUE(close(fft::fftn(x, Shape{3, 6}), fft::fft(fft::fft(x, 3, 1), 6, 2), 1e-13, 1e-13));
  // rfftn halves the last of the axes; irfftn inverts it given the lengths
  Array r = rng.uniform({3, 4, 5}, f64);
  Array rf = fft::rfftn(r, std::nullopt, Axes{0, 2});
  EXPECT_EQ(rf.shape(), (Shape{3, 4, 3}));
  EXPECT_TRUE(close(rf, lax::slice_in_dim(fft::fftn(r, std::nullopt, Axes{0, 2}), 0, 3, 1, 2), 1e-13, 1e-13));
  EXPECT_TRUE(close(fft::irfftn(rf, Shape{3, 5}, Axes{0, 2}), r, 1e-13, 1e-13));
  EXPECT_TRUE(close(fft::irfft2(fft::rfft2(r), Shape{4, 5}), r, 1e-13, 1e-13));
}

TEST(Fft, FrequenciesAndShifts) {
  EXPECT_TRUE(is(fft::fftfreq(5, 0.5, f64), f64, {5}, {0, 0.4, 0.8, -0.8, -0.4}));
  EXPECT_TRUE(is(fft::fftfreq(6, 1.0, f64), f64, {6},
                 {0, 0.16666666666666666, 0.3333333333333333, -0.5, -0.3333333333333333, -0.16666666666666666}));
  EXPECT_TRUE(is(fft::rfftfreq(7, 2.0, f64), f64, {4}, {0, 0.07142857142857142, 0.14285714285714285, 0.21428571428571427}));
  EXPECT_EQ(fft::fftfreq(4).dtype(), default_float_dtype());
  EXPECT_TRUE(is(fft::fftshift(arange(5.0, f64)), f64, {5}, {3, 4, 0, 1, 2}));
  EXPECT_TRUE(is(fft::ifftshift(arange(5.0, f64)), f64, {5}, {2, 3, 4, 0, 1}));
  EXPECT_TRUE(is(fft::fftshift(arange(6.0, f64).reshape({2, 3})), f64, {2, 3}, {5, 3, 4, 2, 0, 1}));
  EXPECT_TRUE(is(fft::fftshift(arange(6.0, f64).reshape({2, 3}), 1), f64, {2, 3}, {2, 0, 1, 5, 3, 4}));
}

TEST(Fft, PromotesAsJax) {
  EXPECT_EQ(fft::fft(ones({4}, f32)).dtype(), c64);
  EXPECT_EQ(fft::fft(ones({4}, bf16)).dtype(), c64);
  EXPECT_EQ(fft::fft(ones({4}, i32)).dtype(), complex_dtype(default_float_dtype()));
  EXPECT_EQ(fft::rfft(ones({4}, f32)).dtype(), c64);
  EXPECT_EQ(fft::irfft(ones({3}, c64)).dtype(), f32);
  EXPECT_EQ(fft::irfft(ones({3}, f32)).dtype(), f32);  // a real spectrum is read as complex
  // f32 agrees with f64 to f32's precision
  Rng rng(9);
  Array x = rng.uniform({4, 33}, f64);
  EXPECT_TRUE(close(fft::rfft(x.astype(f32)).astype(c128), fft::rfft(x), 1e-5, 1e-5));
}

TEST(Fft, DerivativesMatchFiniteDifferences) {
  Rng rng(11);
  Array x = rng.uniform({6}, f64);
  Array w = rng.uniform({4}, c128);
  // a real function of rfft (Parseval's weights included) and of irfft, the latter on a complex input
  auto f = [&](const Array& v) { return sum(real(fft::rfft(v) * w)) + sum(square(abs(fft::rfft(v, 5)))); };
  Array g = grad(f)(x);
  double h = 1e-6;
  for (int64_t i = 0; i < 6; ++i) {
    Array e = lax::pad(arr({h}, {1}), Array::scalar(0.0, f64), {{i, 5 - i, 0}});
    double fd = (f(x + e).item<double>() - f(x - e).item<double>()) / (2 * h);
    EXPECT_NEAR(g[i].item<double>(), fd, 1e-6) << i;
  }
  Array z = rng.uniform({4}, c128);
  Array u = rng.uniform({6}, f64);
  auto k = [&](const Array& s) { return sum(fft::irfft(s, 6) * u) + sum(square(fft::irfft(s * s, 7))); };
  Array gz = grad(k)(z);
  for (int64_t i = 0; i < 4; ++i)
    for (int part = 0; part < 2; ++part) {
      std::vector<Z> d(4, Z(0, 0));
      d[i] = part == 0 ? Z(h, 0) : Z(0, h);
      Array e = zarr(d, {4});
      double fd = (k(z + e).item<double>() - k(z - e).item<double>()) / (2 * h);
      Z gi = gz[i].item<Z>();
      // JAX's convention: grad = df/dx - i df/dy
      EXPECT_NEAR(part == 0 ? gi.real() : -gi.imag(), fd, 1e-6) << i << " " << part;
    }
}

TEST(Fft, JitEqualsEagerAndVmapEqualsLoop) {
  Rng rng(13);
  Array x = rng.uniform({3, 8}, f32);
  auto f = [](const Array& v) { return fft::irfft(fft::rfft(v) * fft::rfftfreq(8, 1.0, f32), 8); };
  Array want = f(x);
  EXPECT_TRUE(close(jit(f)(x), want, 1e-6, 1e-6));
  Array in = rng.uniform({2, 3, 4}, c64);
  VmapOptions axis1;
  axis1.in_axes = {1};
  Array vm = vmap([](const Array& v) { return fft::fft2(v); }, axis1)(in);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_TRUE(close(vm[i], fft::fft2(lax::squeeze(lax::slice_in_dim(in, i, i + 1, 1, 1), {1})), 1e-5, 1e-5)) << i;
}

TEST(Fft, ErrorsNameTheProblem) {
  Array z = ones({4}, c64);
  expect_throws<TypeError>([&] { return fft::rfft(z); }, "rfft: takes a real input");
  expect_throws<ValueError>([&] { return fft::fft(ones({4}), std::nullopt, -1, "both"); }, "invalid norm value 'both'");
  expect_throws<ValueError>([&] { return fft::fftn(ones({2, 2}), std::nullopt, Axes{0, -2}); }, "repeated axis");
  expect_throws<ValueError>([&] { return fft::fftn(ones({2, 2}), Shape{2}, Axes{0, 1}); }, "must match");
  expect_throws<ValueError>([&] { return fft::irfft(ones({1}, c64)); }, "invalid number of data points (0)");
  expect_throws<ValueError>([&] { return fft::fft(ones({4}), 0); }, "invalid number of data points (0)");
  expect_throws<ValueError>([&] { return fft::fft(ones({4}), std::nullopt, 1); }, "axis 1 is out of bounds");
  expect_throws<ShapeError>([&] { return lax::fft(ones({4}, c64), lax::FftType::FFT, {5}); }, "fft_lengths (5,)");
  expect_throws<ShapeError>([&] { return lax::fft(ones({4}, c64), lax::FftType::IRFFT, {8}); }, "n/2 + 1 = 5");
  expect_throws<TypeError>([&] { return lax::fft(ones({4}, f32), lax::FftType::FFT, {4}); }, "c64 or c128");
  expect_throws<ValueError>([&] { return fft::fftfreq(0); }, "n must be positive");
}

}  // namespace
}  // namespace graft::testing
