// graft::linalg (NumPy's and SciPy's linear algebra on the factorization primitives): defining identities
// (a x = b, L L^T = a, a v = v diag(w), q r = a, u s vh = a, the Moore-Penrose conditions), known values,
// derivatives against finite differences in f64 (Jacobi's formula for det, a Gaussian process's negative
// log likelihood through cholesky), jit and vmap against eager, and the errors. The primitives themselves
// are checked row by row in tests/prims/cases_linalg.cpp.
#include <cmath>
#include <limits>

#include "graft/ops/linalg.h"
#include "graft/runtime/cpu/lapack.h"
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

class Linalg : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::lapack::available()) {
      expect_throws<NotImplementedError>([] { (void)linalg::cholesky(eye(2)); }, "needs LAPACK");
      GTEST_SKIP() << "graft was built without LAPACK: the linear-algebra primitives raise NotImplementedError";
    }
  }
};

Array randn(Rng& r, const Shape& s) { return r.uniform(s, DType::f64); }
// Well conditioned square matrices: random plus a dominant diagonal.
Array well(Rng& r, const Shape& s) {
  return randn(r, s) + eye(s.back(), std::nullopt, 0, DType::f64) * 3.0;
}
Array spd(Rng& r, int64_t n) {
  Array b = randn(r, {n, n});
  return matmul(b, transpose(b)) + eye(n, std::nullopt, 0, DType::f64) * static_cast<double>(n);
}
Array mT(const Array& x) { return swapaxes(x, -1, -2); }
Array eye64(int64_t n) { return eye(n, std::nullopt, 0, DType::f64); }

TEST_F(Linalg, SolveInvAndBroadcasting) {
  Rng r(1);
  Array a = well(r, {4, 4}), b = randn(r, {4, 2}), v = randn(r, {4});
  EXPECT_TRUE(close(matmul(a, linalg::solve(a, b)), b, 1e-12, 1e-12));
  Array x = linalg::solve(a, v);
  EXPECT_EQ(x.shape(), (Shape{4}));
  EXPECT_TRUE(close(matmul(a, x), v, 1e-12, 1e-12));
  EXPECT_TRUE(close(matmul(a, linalg::inv(a)), eye64(4), 1e-12, 1e-12));
  // a stack of matrices against one right-hand side, and batches broadcast
  Array as = well(r, {3, 4, 4}), bs = randn(r, {1, 4, 2});
  Array xs = linalg::solve(as, bs);
  EXPECT_EQ(xs.shape(), (Shape{3, 4, 2}));
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_TRUE(close(xs[{i}], linalg::solve(as[{i}], bs[{0}]), 1e-12, 1e-12));
  // integers promote to the default float
  Array ai = array({{2, 0}, {0, 4}});
  EXPECT_TRUE(close(linalg::solve(ai, array({2, 2})), array({1.0f, 0.5f})));
}

TEST_F(Linalg, DetAndSlogdet) {
  Array a = array({{2.0, 1.0, 0.0}, {1.0, 3.0, 1.0}, {0.0, 1.0, 4.0}});
  EXPECT_NEAR(linalg::det(a).item<double>(), 2 * (12 - 1) - 1 * (4 - 0), 1e-12);  // 18
  // a permutation with one swap has det -1; a singular matrix det 0 and slogdet (0, -inf)
  Array p = array({{0.0, 1.0}, {1.0, 0.0}});
  EXPECT_NEAR(linalg::det(p).item<double>(), -1, 1e-15);
  auto [s, l] = linalg::slogdet(p);
  EXPECT_EQ(s.item<double>(), -1);
  EXPECT_NEAR(l.item<double>(), 0, 1e-15);
  auto [s0, l0] = linalg::slogdet(array({{1.0, 2.0}, {2.0, 4.0}}));
  EXPECT_EQ(s0.item<double>(), 0);
  EXPECT_TRUE(std::isinf(l0.item<double>()) && l0.item<double>() < 0);
  Rng r(2);
  Array m = randn(r, {2, 5, 5});
  auto [sg, ld] = linalg::slogdet(m);
  EXPECT_TRUE(close(sg * exp(ld), linalg::det(m), 1e-10, 1e-12));
}

TEST_F(Linalg, DerivativesOfDetSolveAndInv) {
  Rng r(3);
  Array a = well(r, {4, 4}), b = randn(r, {4, 3});
  // Jacobi's formula: d det / d a = det(a) inv(a)^T; d log|det| / d a = inv(a)^T
  Array g = grad([](const Array& x) { return linalg::det(x); })(a);
  EXPECT_TRUE(close(g, linalg::det(a) * mT(linalg::inv(a)), 1e-10, 1e-12));
  Array gl = grad([](const Array& x) { return linalg::slogdet(x).second; })(a);
  EXPECT_TRUE(close(gl, mT(linalg::inv(a)), 1e-10, 1e-12));
  auto loss = [&](const Array& x) { return sum(square(linalg::solve(x, b))) + sum(sin(linalg::inv(x))); };
  EXPECT_TRUE(close(grad(loss)(a), num_grad(loss, a), 1e-7, 1e-8));
  auto lb = [&](const Array& y) { return sum(square(linalg::solve(a, y))); };
  EXPECT_TRUE(close(grad(lb)(b), num_grad(lb, b), 1e-7, 1e-8));
  // forward mode through the same rules
  Array t = randn(r, {4, 4});
  auto [y, ty] = jvp([](const Array& x) { return linalg::det(x); }, {a}, {t});
  double fd = (linalg::det(a + t * 1e-6).item<double>() - linalg::det(a - t * 1e-6).item<double>()) / 2e-6;
  EXPECT_NEAR(ty.item<double>(), fd, 1e-6 * std::fabs(fd));
}

TEST_F(Linalg, CholeskyAndChoSolve) {
  Rng r(4);
  Array a = spd(r, 5), b = randn(r, {5, 2});
  Array l = linalg::cholesky(a);
  EXPECT_TRUE(close(matmul(l, mT(l)), a, 1e-12, 1e-12));
  EXPECT_TRUE(close(l, tril(l), 0, 0));
  EXPECT_TRUE(close(matmul(a, linalg::cho_solve(l, b)), b, 1e-11, 1e-12));
  Array u = mT(l);  // the upper factor: u^T u = a
  EXPECT_TRUE(close(matmul(a, linalg::cho_solve(u, b, /*lower=*/false)), b, 1e-11, 1e-12));
  // not positive definite: NaNs (JAX's convention), never an exception
  Array bad = linalg::cholesky(array({{1.0, 2.0}, {2.0, 1.0}}));
  for (double x : values(bad)) EXPECT_TRUE(std::isnan(x));
  // only the lower triangle is read without symmetrization
  Array lower_only = tril(a) + triu(full_like(a, 100.0), 1);
  EXPECT_TRUE(close(linalg::cholesky(lower_only, false), l, 1e-12, 1e-12));
}

// A Gaussian process's negative log likelihood: y^T K^-1 y / 2 + log det K / 2 through the Cholesky factor.
TEST_F(Linalg, GaussianProcessLikelihoodGradient) {
  Rng r(5);
  Array xs = randn(r, {6, 1}) * 3.0, y = randn(r, {6});
  auto nll = [&](const Array& params) {
    Array ls = params[{0}], noise = params[{1}];
    Array d = xs - mT(xs);
    Array k = exp(-square(d) / (2.0 * square(ls))) + eye64(6) * (square(noise) + 1e-6);
    Array l = linalg::cholesky(k);
    Array alpha = linalg::cho_solve(l, y);
    return 0.5 * sum(y * alpha) + sum(log(diagonal(l)));
  };
  Array p = array({0.8, 0.3});
  EXPECT_TRUE(close(grad(nll)(p), num_grad(nll, p), 1e-6, 1e-8));
  // the same through jit, and the likelihood against slogdet's
  EXPECT_TRUE(close(jit(nll)(p), nll(p), 1e-12, 1e-12));
}

TEST_F(Linalg, TriangularSolves) {
  Rng r(6);
  Array a = well(r, {4, 4}), b = randn(r, {4, 3}), v = randn(r, {4});
  Array up = triu(a), lo = tril(a);
  EXPECT_TRUE(close(matmul(up, linalg::solve_triangular(a, b)), b, 1e-12, 1e-12));  // SciPy's default: upper
  EXPECT_TRUE(close(matmul(lo, linalg::solve_triangular(a, v, true)), v, 1e-12, 1e-12));
  EXPECT_TRUE(close(matmul(mT(lo), linalg::solve_triangular(a, b, true, 1)), b, 1e-12, 1e-12));
  Array unit = tril(a, -1) + eye64(4);
  EXPECT_TRUE(close(matmul(unit, linalg::solve_triangular(a, b, true, 0, true)), b, 1e-12, 1e-12));
  expect_throws<ValueError>([&] { (void)linalg::solve_triangular(a, b, true, 3); }, "trans must be 0, 1 or 2");
}

TEST_F(Linalg, LuFactorizations) {
  Rng r(7);
  for (Shape s : {Shape{4, 4}, Shape{3, 5}, Shape{5, 3}, Shape{2, 3, 4}}) {
    SCOPED_TRACE(shape_str(s));
    Array a = randn(r, s);
    auto [p, l, u] = linalg::lu(a);
    EXPECT_TRUE(close(matmul(p, matmul(l, u)), a, 1e-12, 1e-12));
    EXPECT_TRUE(close(l, tril(l), 0, 0));
    EXPECT_TRUE(close(u, triu(u), 0, 0));
  }
  Array a = well(r, {4, 4}), b = randn(r, {4, 2});
  auto [lu, piv] = linalg::lu_factor(a);
  EXPECT_EQ(piv.dtype(), DType::i32);
  EXPECT_TRUE(close(matmul(a, linalg::lu_solve(lu, piv, b)), b, 1e-12, 1e-12));
  EXPECT_TRUE(close(matmul(mT(a), linalg::lu_solve(lu, piv, b, 1)), b, 1e-12, 1e-12));
  expect_throws<ShapeError>([&] { (void)linalg::lu_solve(lu, piv, randn(r, {3, 2})); }, "b has 3 rows");
}

TEST_F(Linalg, EighAndItsGradient) {
  Rng r(8);
  Array b = randn(r, {5, 5});
  Array a = b + mT(b) + array(std::vector<double>{0, 3, 6, 9, 12}).reshape({1, 5}) * eye64(5);
  auto [w, v] = linalg::eigh(a);
  EXPECT_TRUE(close(matmul(a, v), v * w.reshape({1, 5}), 1e-11, 1e-11));
  EXPECT_TRUE(close(matmul(mT(v), v), eye64(5), 1e-12, 1e-12));
  for (int64_t i = 1; i < 5; ++i) EXPECT_LT(w[{i - 1}].item<double>(), w[{i}].item<double>());
  EXPECT_TRUE(close(linalg::eigvalsh(a), w, 1e-12, 1e-12));
  // UPLO='U' without symmetrization reads the upper triangle
  Array upper_only = triu(a) + tril(full_like(a, -50.0), -1);
  EXPECT_TRUE(close(linalg::eigh(upper_only, "U", false).first, w, 1e-11, 1e-11));
  // the symmetrized input's gradient: d/da sum(w * c) = V diag(c) V^T (symmetric)
  Array c = array(std::vector<double>{1, -2, 0.5, 3, 1});
  auto f = [&](const Array& x) { return sum(linalg::eigh(x).first * c); };
  EXPECT_TRUE(close(grad(f)(a), num_grad(f, a), 1e-7, 1e-8));
  auto fv = [&](const Array& x) { return sum(square(linalg::eigh(x).second) * b); };  // sign-invariant
  EXPECT_TRUE(close(grad(fv)(a), num_grad(fv, a), 1e-6, 1e-8));
}

TEST_F(Linalg, QrModes) {
  Rng r(9);
  for (Shape s : {Shape{5, 3}, Shape{3, 5}, Shape{4, 4}, Shape{2, 5, 3}}) {
    SCOPED_TRACE(shape_str(s));
    Array a = randn(r, s);
    int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
    for (const char* mode : {"reduced", "complete"}) {
      auto [q, rr] = linalg::qr(a, mode);
      int64_t qc = std::string(mode) == "complete" ? m : k;
      EXPECT_EQ(q.shape().back(), qc);
      EXPECT_TRUE(close(matmul(q, rr), a, 1e-12, 1e-12));
      EXPECT_TRUE(close(matmul(mT(q), q), broadcast_to(eye64(qc), matmul(mT(q), q).shape()), 1e-12, 1e-12));
      EXPECT_TRUE(close(rr, triu(rr), 0, 0));
    }
    auto [none, r_only] = linalg::qr(a, "r");
    EXPECT_FALSE(none.valid());
    EXPECT_TRUE(close(r_only, linalg::qr(a).second, 0, 0));
  }
  // derivatives: defined for tall reduced factors, NotImplementedError for wide ones (as JAX)
  Array tall = randn(r, {5, 3});
  auto f = [](const Array& x) {
    auto [q, rr] = linalg::qr(x);
    return sum(sin(q)) + sum(square(rr));
  };
  EXPECT_TRUE(close(grad(f)(tall), num_grad(f, tall), 1e-7, 1e-8));
  expect_throws<NotImplementedError>([&] { (void)grad(f)(randn(r, {3, 5})); }, "qr: derivatives");
}

TEST_F(Linalg, SvdPinvRankLstsq) {
  Rng r(10);
  for (Shape s : {Shape{5, 3}, Shape{3, 5}, Shape{2, 4, 4}}) {
    SCOPED_TRACE(shape_str(s));
    Array a = randn(r, s);
    int64_t m = s[s.size() - 2], n = s.back();
    for (bool full : {true, false}) {
      auto [u, sv, vh] = linalg::svd(a, full);
      EXPECT_EQ(u.shape().back(), full ? m : std::min(m, n));
      Array uk = full ? u[{ellipsis, slice(0, std::min(m, n))}] : u;
      Array vk = full ? vh[{ellipsis, slice(0, std::min(m, n)), slice()}] : vh;
      EXPECT_TRUE(close(matmul(uk * expand_dims(sv, -2), vk), a, 1e-12, 1e-12));
      Array utu = matmul(mT(u), u), vvt = matmul(vh, mT(vh));
      EXPECT_TRUE(close(utu, broadcast_to(eye64(utu.shape().back()), utu.shape()), 1e-12, 1e-12));
      EXPECT_TRUE(close(vvt, broadcast_to(eye64(vvt.shape().back()), vvt.shape()), 1e-12, 1e-12));
    }
    EXPECT_TRUE(close(linalg::svdvals(a), std::get<1>(linalg::svd(a, false)), 1e-12, 1e-12));
    // Moore-Penrose: a p a = a, p a p = p
    Array p = linalg::pinv(a);
    EXPECT_TRUE(close(matmul(a, matmul(p, a)), a, 1e-11, 1e-12));
    EXPECT_TRUE(close(matmul(p, matmul(a, p)), p, 1e-11, 1e-12));
  }
  // a rank-2 matrix
  Array x = randn(r, {5, 2}), y = randn(r, {2, 4});
  Array low = matmul(x, y);
  EXPECT_EQ(linalg::matrix_rank(low).item<int32_t>(), 2);
  EXPECT_EQ(linalg::matrix_rank(randn(r, {3, 3, 4})).shape(), (Shape{3}));
  EXPECT_TRUE(close(matmul(low, matmul(linalg::pinv(low), low)), low, 1e-10, 1e-11));
  // least squares = the normal equations' solution for a full-rank tall a
  Array a = randn(r, {8, 3}), b = randn(r, {8});
  auto [sol, resid, rank, sv] = linalg::lstsq(a, b);
  Array normal = linalg::solve(matmul(mT(a), a), matmul(mT(a), b));
  EXPECT_TRUE(close(sol, normal, 1e-10, 1e-12));
  EXPECT_NEAR(resid.item<double>(), sum(square(matmul(a, sol) - b)).item<double>(), 1e-12);
  EXPECT_EQ(rank.item<int32_t>(), 3);
  // the derivative of the singular values and of a sign-invariant function of the vectors
  Array m = randn(r, {4, 3});
  auto fs = [](const Array& z) { return sum(linalg::svdvals(z) * array(std::vector<double>{1.0, 2.0, -1.0})); };
  EXPECT_TRUE(close(grad(fs)(m), num_grad(fs, m), 1e-7, 1e-8));
  auto fu = [](const Array& z) {
    auto [u, s, vh] = linalg::svd(z, false);
    return sum(square(u) * 0.3) + sum(square(vh) * s.reshape({3, 1}));
  };
  EXPECT_TRUE(close(grad(fu)(m), num_grad(fu, m), 1e-6, 1e-8));
  expect_throws<NotImplementedError>(
      [&] { (void)grad([](const Array& z) { return sum(std::get<0>(linalg::svd(z, true))); })(m); },
      "full_matrices=false");
}

TEST_F(Linalg, MatrixPowerNormCondMultiDot) {
  Rng r(11);
  Array a = well(r, {3, 3});
  EXPECT_TRUE(close(linalg::matrix_power(a, 0), eye64(3), 0, 0));
  EXPECT_TRUE(close(linalg::matrix_power(a, 5), matmul(a, matmul(a, matmul(a, matmul(a, a)))), 1e-12, 1e-12));
  EXPECT_TRUE(close(linalg::matrix_power(a, -2), linalg::inv(matmul(a, a)), 1e-11, 1e-12));
  Array v = array(std::vector<double>{3, -4, 0, 1});
  auto nv = [&](linalg::NormOrd o) { return linalg::norm(v, o).item<double>(); };
  EXPECT_NEAR(nv({}), std::sqrt(26.0), 1e-14);
  EXPECT_NEAR(nv(1), 8, 1e-14);
  EXPECT_NEAR(nv(INFINITY), 4, 1e-14);
  EXPECT_NEAR(nv(-INFINITY), 0, 1e-14);
  EXPECT_NEAR(nv(0), 3, 1e-14);
  EXPECT_NEAR(nv(3), std::cbrt(27.0 + 64 + 1), 1e-12);
  Array m = array({{1.0, -2.0}, {3.0, 4.0}});
  auto nm = [&](linalg::NormOrd o) { return linalg::norm(m, o).item<double>(); };
  EXPECT_NEAR(nm({}), std::sqrt(30.0), 1e-14);
  EXPECT_NEAR(nm("fro"), std::sqrt(30.0), 1e-14);
  EXPECT_NEAR(nm(1), 6, 1e-14);   // largest column sum
  EXPECT_NEAR(nm(-1), 4, 1e-14);
  EXPECT_NEAR(nm(INFINITY), 7, 1e-14);  // largest row sum
  EXPECT_NEAR(nm(-INFINITY), 3, 1e-14);
  Array s = linalg::svdvals(m);
  EXPECT_NEAR(nm(2), s[{0}].item<double>(), 1e-14);
  EXPECT_NEAR(nm(-2), s[{1}].item<double>(), 1e-14);
  EXPECT_NEAR(nm("nuc"), sum(s).item<double>(), 1e-13);
  // axes and keepdims; matrix norms of a stack over explicit axes in either order
  Array st = randn(r, {2, 3, 4});
  EXPECT_EQ(linalg::norm(st, {}, {1}, true).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(linalg::norm(st, 2, {2, 1}, true).shape(), (Shape{2, 1, 1}));
  EXPECT_NEAR(linalg::norm(st, 1, {0, 2})[{1}].item<double>(),
              max(sum(abs(st[{slice(), 1, slice()}]), 0)).item<double>(), 1e-14);
  expect_throws<ValueError>([&] { (void)linalg::norm(v, "fro"); }, "is for matrices");
  EXPECT_NEAR(linalg::cond(m).item<double>(), (s[{0}] / s[{1}]).item<double>(), 1e-13);
  EXPECT_NEAR(linalg::cond(m, "fro").item<double>(),
              (linalg::norm(m, "fro") * linalg::norm(linalg::inv(m), "fro")).item<double>(), 1e-12);
  Array p = randn(r, {2, 30}), q = randn(r, {30, 3}), w = randn(r, {3, 40}), z = randn(r, {40});
  EXPECT_TRUE(close(linalg::multi_dot({p, q, w, z}), matmul(matmul(matmul(p, q), w), z), 1e-12, 1e-12));
  EXPECT_TRUE(close(linalg::multi_dot({z, mT(w), mT(q)}), matmul(matmul(z, mT(w)), mT(q)), 1e-12, 1e-12));
}

// e^A: known values (a rotation, a nilpotent, a diagonal), e^A e^-A = I far beyond the approximant's
// radius (squarings), a Taylor series at small norm, f32, batches, the derivative, jit and vmap
TEST_F(Linalg, Expm) {
  double t = 2.5;
  Array rot = linalg::expm(array(std::vector<double>{0, t, -t, 0}, {2, 2}));
  EXPECT_TRUE(close(rot, array(std::vector<double>{std::cos(t), std::sin(t), -std::sin(t), std::cos(t)}, {2, 2}),
                    1e-14, 1e-14));
  Array nil = linalg::expm(array(std::vector<double>{0, 3, 0, 0}, {2, 2}));
  EXPECT_TRUE(close(nil, array(std::vector<double>{1, 3, 0, 1}, {2, 2}), 0, 1e-15));
  Array d = linalg::expm(array(std::vector<double>{-30, 0, 0, 8}, {2, 2}));
  EXPECT_TRUE(close(d, array(std::vector<double>{std::exp(-30.0), 0, 0, std::exp(8.0)}, {2, 2}), 1e-13, 0));
  EXPECT_TRUE(close(linalg::expm(zeros({3, 3}, DType::f64)), eye64(3), 0, 1e-15));
  Rng r(21);
  for (double scale : {0.05, 1.0}) {
    Array a = randn(r, {5, 5}) * scale;
    EXPECT_TRUE(close(matmul(linalg::expm(a), linalg::expm(-a)), eye64(5), 1e-12, 1e-12)) << scale;
  }
  // symmetric matrices through their eigendecomposition, V diag(e^w) V^T, far beyond the approximant's radius
  for (double scale : {2.0, 8.0}) {
    Array b = randn(r, {5, 5}) * scale, sym = b + mT(b);
    auto [w, v] = linalg::eigh(sym);
    Array want = matmul(v * expand_dims(exp(w), 0), mT(v));
    double top = max(abs(want)).item<double>();
    EXPECT_TRUE(close(linalg::expm(sym), want, 0, 1e-13 * top)) << scale;
  }
  // Σ a^k / k! at a small norm
  Array a = randn(r, {4, 4}) * 0.1, term = eye64(4), series = eye64(4);
  for (int k = 1; k < 25; ++k) {
    term = matmul(term, a) / static_cast<double>(k);
    series = series + term;
  }
  EXPECT_TRUE(close(linalg::expm(a), series, 1e-14, 1e-15));
  EXPECT_TRUE(close(linalg::expm(a.astype(DType::f32)), series.astype(DType::f32), 1e-6, 1e-6));
  // a batch of very different norms: each matrix squares its own number of times
  Array batch = stack({a, randn(r, {4, 4}) * 4.0, randn(r, {4, 4}) * 0.001});
  Array eb = linalg::expm(batch);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(close(eb[{i}], linalg::expm(batch[{i}]), 1e-14, 1e-14)) << i;
  EXPECT_TRUE(close(vmap([](const Array& x) { return linalg::expm(x); })(batch), eb, 1e-14, 1e-14));
  EXPECT_TRUE(close(jit([](const Array& x) { return linalg::expm(x); })(batch), eb, 1e-14, 1e-14));
  // derivative by finite differences, also where squarings happen; the Fréchet derivative of a diagonal
  Array w = randn(r, {4, 4});
  for (double scale : {0.3, 5.0}) {
    Array x = randn(r, {4, 4}) * scale;
    auto loss = [&](const Array& m) { return sum(linalg::expm(m) * w); };
    EXPECT_TRUE(close(grad(loss)(x), num_grad(loss, x), 1e-6, 1e-7)) << scale;
  }
  // too many halvings needed: NaN, as JAX
  EXPECT_TRUE(std::isnan(values(linalg::expm(eye64(2) * 1e3, 2))[0]));
  expect_throws<ShapeError>([] { (void)linalg::expm(ones({2, 3})); }, "linalg.expm: needs square");
}

TEST_F(Linalg, JitAndVmapMatchEager) {
  Rng r(12);
  Array as = well(r, {3, 4, 4}), bs = randn(r, {3, 4});
  auto f = [](const Array& a, const Array& b) {
    return linalg::solve(a, b) + linalg::slogdet(a).second + sum(linalg::eigh(a).first);
  };
  std::vector<Array> loop;
  for (int64_t i = 0; i < 3; ++i) {
    loop.push_back(f(as[{i}], bs[{i}]));
    EXPECT_TRUE(close(jit(f)(as[{i}], bs[{i}]), loop.back(), 1e-12, 1e-12));
  }
  EXPECT_TRUE(close(vmap(f)(as, bs), stack(loop), 1e-12, 1e-12));
  EXPECT_TRUE(close(jit(vmap(f))(as, bs), stack(loop), 1e-12, 1e-12));
  // f32 through the same functions
  Array a32 = as.astype(DType::f32), b32 = bs.astype(DType::f32);
  EXPECT_EQ(linalg::solve(a32[{0}], b32[{0}]).dtype(), DType::f32);
  Array x32 = linalg::solve(a32, expand_dims(b32, -1));
  EXPECT_TRUE(close(x32, linalg::solve(as, expand_dims(bs, -1)).astype(DType::f32), 1e-4, 1e-5));
}

TEST_F(Linalg, Errors) {
  expect_throws<ShapeError>([] { (void)linalg::solve(ones({3, 4}), ones({3})); }, "linalg.solve: needs square");
  expect_throws<ShapeError>([] { (void)linalg::inv(ones({3})); }, "at least two dimensions");
  expect_throws<ShapeError>([] { (void)linalg::solve(eye(3), ones({4})); }, "b must have 3 rows");
  expect_throws<TypeError>([] { (void)lax::cholesky(eye(3).astype(DType::bf16)); }, "cholesky: takes f32, f64, c64 or c128");
  expect_throws<ShapeError>([] { (void)lax::triangular_solve(eye(3), ones({4, 2})); }, "b's rows must match");
  expect_throws<TypeError>([] { (void)lax::triangular_solve(eye(3), ones({3, 2}, DType::f64)); }, "same dtype");
  expect_throws<ValueError>([] { (void)linalg::qr(eye(3), "economic"); }, "mode must be");
  expect_throws<ValueError>([] { (void)linalg::eigh(eye(3), "X"); }, "UPLO");
  expect_throws<ShapeError>([] { (void)tril(ones({3})); }, "tril: needs");
}

}  // namespace
}  // namespace graft
