// Runs every conformance row through the checks listed in conformance.h.
#include <set>

#include "graft/runtime/cpu/lapack.h"
#include "prims/conformance.h"

namespace graft::testing {
namespace {

constexpr double kEps = 1e-5;  // finite-difference step (f64)

std::vector<Case> all_cases() {
  std::vector<Case> c = elementwise_cases();
  for (auto& more : {structural_cases(), collective_cases(), complex_cases()}) c.insert(c.end(), more.begin(), more.end());
  return c;
}

class Conformance : public ::testing::TestWithParam<Case> {};

bool float_out(const Array& a) { return is_inexact(a.dtype()); }

// f(x + eps * t) for the differentiable inputs.
Inputs perturbed(const Case& c, const Inputs& x, const Inputs& t, double eps) {
  Inputs y = x;
  for (size_t i = 0; i < x.size(); ++i)
    if (c.diff[i]) y[i] = x[i] + t[i] * eps;
  return y;
}

Inputs random_tangents(const Case& c, const Inputs& x, Rng& rng) {
  Inputs t(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    if (c.diff[i]) t[i] = rng.uniform(x[i].shape(), x[i].dtype());
  return t;
}

// sum(a * b), or for complex values the real part of the bilinear (unconjugated) pairing: JAX's
// transposes are taken with respect to it, so <J^T ct, t> = <ct, J t> holds in this form.
double vdot_all(const Inputs& a, const Inputs& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].valid() || !b[i].valid()) continue;
    auto x = values(a[i]), y = values(b[i]);
    if (is_complex(a[i].dtype())) {
      for (size_t k = 0; k + 1 < x.size(); k += 2) s += x[k] * y[k] - x[k + 1] * y[k + 1];
    } else {
      for (size_t k = 0; k < x.size(); ++k) s += x[k] * y[k];
    }
  }
  return s;
}

TEST_P(Conformance, Values) {
  const Case& c = GetParam();
  for (DType d : c.value_dtypes) {
    SCOPED_TRACE(std::string("dtype ") + std::string(short_name(d)));
    Rng rng(1);
    Inputs in = c.inputs(rng, d);
    Inputs got = run_case(c, in);
    Inputs want = c.reference(in);
    if (c.canonical) {
      got = c.canonical(got);
      want = c.canonical(want);
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].dtype(), want[k].dtype()) << "output " << k;
      DType gd = real_dtype(got[k].dtype());
      bool f32ish = gd == DType::f32 || d == DType::f32;
      double rtol = gd == DType::f64 ? 1e-12 : (f32ish ? c.rtol32 : 1e-2);
      double atol = gd == DType::f64 ? 1e-12 : (f32ish ? c.atol32 : 1e-2);
      if (!is_inexact(got[k].dtype())) rtol = atol = 0;
      EXPECT_TRUE(close(got[k], want[k], rtol, atol)) << "output " << k;
    }
  }
}

TEST_P(Conformance, JvpFD) {
  const Case& c = GetParam();
  Rng rng(2);
  Inputs x = c.inputs(rng, DType::f64);
  FlatFn f = [&](const Inputs& in) { return run_case(c, in); };
  for (int trial = 0; trial < 2; ++trial) {
    Inputs t = random_tangents(c, x, rng);
    auto [y, ty] = jvp_flat(f, x, t);
    Inputs yp = f(perturbed(c, x, t, kEps)), ym = f(perturbed(c, x, t, -kEps));
    for (size_t k = 0; k < y.size(); ++k) {
      if (!float_out(y[k])) continue;
      if (!c.smooth) {
        EXPECT_TRUE(close(ty[k], zeros_like(y[k]), 0, 0)) << "non-smooth primitive must have a zero tangent";
        continue;
      }
      Array fd = (yp[k] - ym[k]) / (2 * kEps);
      EXPECT_TRUE(close(ty[k], fd, 1e-6, 1e-7)) << "output " << k << " trial " << trial;
    }
  }
}

TEST_P(Conformance, VjpFD) {
  const Case& c = GetParam();
  if (!c.smooth) GTEST_SKIP() << "derivative is zero (checked by JvpFD)";
  Rng rng(3);
  Inputs x = c.inputs(rng, DType::f64);
  FlatFn f = [&](const Inputs& in) { return run_case(c, in); };
  VjpResult r = vjp_of_diff(c, f, x);
  Inputs cts(r.outs.size());
  for (size_t k = 0; k < r.outs.size(); ++k)
    if (float_out(r.outs[k])) cts[k] = rng.uniform(r.outs[k].shape(), r.outs[k].dtype());
  Inputs g = r.pullback(cts);
  ASSERT_EQ(g.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (!c.diff[i]) continue;
    ASSERT_TRUE(g[i].valid());
    EXPECT_EQ(g[i].shape(), x[i].shape()) << "cotangent " << i;
  }
  for (int trial = 0; trial < 2; ++trial) {
    Inputs t = random_tangents(c, x, rng);
    Inputs gd;
    for (size_t i = 0; i < x.size(); ++i) gd.push_back(c.diff[i] ? g[i] : Array());
    double lhs = vdot_all(gd, t);
    double rhs = (vdot_all(cts, f(perturbed(c, x, t, kEps))) - vdot_all(cts, f(perturbed(c, x, t, -kEps)))) / (2 * kEps);
    EXPECT_NEAR(lhs, rhs, 1e-6 * (1 + std::fabs(rhs))) << "trial " << trial;
  }
}

TEST_P(Conformance, SecondOrder) {
  const Case& c = GetParam();
  if (!c.smooth || !c.second_order) GTEST_SKIP() << "no second derivative to check";
  Rng rng(4);
  Inputs x = c.inputs(rng, DType::f64);
  Inputs t = random_tangents(c, x, rng);
  FlatFn f = [&](const Inputs& in) { return run_case(c, in); };
  Inputs y = f(x);
  Inputs ct(y.size());
  for (size_t k = 0; k < y.size(); ++k)
    if (float_out(y[k])) ct[k] = rng.uniform(y[k].shape(), y[k].dtype());
  // g(x) = <ct, J(x) t>; its gradient by reverse mode (over the forward-mode rules) vs FD
  FlatFn g = [&](const Inputs& in) {
    Inputs ty = jvp_flat(f, in, t).second;
    Array s = array(0.0);
    for (size_t k = 0; k < ty.size(); ++k)
      if (ct[k].valid()) s = s + real(sum(ty[k] * ct[k]));
    return Inputs{s};
  };
  VjpResult r = vjp_of_diff(c, g, x);
  Inputs grad = r.pullback({array(1.0)});
  Inputs s = random_tangents(c, x, rng);
  Inputs gd;
  for (size_t i = 0; i < x.size(); ++i) gd.push_back(c.diff[i] ? grad[i] : Array());
  double lhs = vdot_all(gd, s);
  double rhs =
      (g(perturbed(c, x, s, kEps))[0].item<double>() - g(perturbed(c, x, s, -kEps))[0].item<double>()) / (2 * kEps);
  EXPECT_NEAR(lhs, rhs, 2e-6 * (1 + std::fabs(rhs)));
}

// Batched inputs: example b of the batch is the row's input drawn with seed b. `axes[i]` is the batch
// axis of input i (-2: not batched; -1: its last axis).
void check_vmap(const Case& c, const std::vector<int64_t>& axes) {
  const int64_t B = 3;
  std::vector<Inputs> ex;
  for (int64_t b = 0; b < B; ++b) {
    Rng rng(static_cast<uint64_t>(10 + b));
    ex.push_back(c.inputs(rng, DType::f32));
  }
  size_t n = ex[0].size();
  for (int64_t b = 1; b < B; ++b)  // unbatched inputs are shared by all examples
    for (size_t i = 0; i < n; ++i)
      if (axes[i] == -2) ex[static_cast<size_t>(b)][i] = ex[0][i];
  Inputs stacked;
  std::vector<std::optional<int64_t>> in_axes;
  for (size_t i = 0; i < n; ++i) {
    if (axes[i] == -2) {
      stacked.push_back(ex[0][i]);
      in_axes.push_back(std::nullopt);
    } else {
      int64_t ax = axes[i] == -1 ? ex[0][i].ndim() : axes[i];
      std::vector<Array> parts;
      for (int64_t b = 0; b < B; ++b) parts.push_back(ex[static_cast<size_t>(b)][i]);
      stacked.push_back(stack(parts, ax));
      in_axes.push_back(ax);
    }
  }
  FlatFn f = [&](const Inputs& in) { return run_case(c, in); };
  Inputs got = vmap_flat(f, stacked, in_axes, {0});
  std::vector<Inputs> per;
  for (int64_t b = 0; b < B; ++b) per.push_back(f(ex[static_cast<size_t>(b)]));
  for (size_t k = 0; k < got.size(); ++k) {
    std::vector<Array> parts;
    for (int64_t b = 0; b < B; ++b) parts.push_back(per[static_cast<size_t>(b)][k]);
    EXPECT_TRUE(close(got[k], stack(parts, 0), 1e-6, 1e-6)) << "output " << k;
  }
}

TEST_P(Conformance, Vmap) {
  const Case& c = GetParam();
  Rng rng(0);
  Inputs probe = c.inputs(rng, DType::f32);
  size_t n = probe.size();
  if (n == 0) GTEST_SKIP() << "no inputs to map over";
  {
    SCOPED_TRACE("all inputs batched at axis 0");
    check_vmap(c, std::vector<int64_t>(n, 0));
  }
  {
    SCOPED_TRACE("input 0 batched at its last axis, the others unbatched");
    std::vector<int64_t> axes(n, -2);
    axes[0] = -1;
    check_vmap(c, axes);
  }
  if (n > 1) {
    SCOPED_TRACE("only the last input batched");
    std::vector<int64_t> axes(n, -2);
    axes[n - 1] = 0;
    check_vmap(c, axes);
  }
}

TEST_P(Conformance, Jit) {
  const Case& c = GetParam();
  Rng rng(5);
  Inputs x = c.inputs(rng, DType::f32);
  auto jf = jit([&c](const std::vector<Array>& in) { return run_case(c, in); });
  Inputs want = run_case(c, x);
  Inputs got = jf(x);
  Inputs again = jf(x);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_TRUE(close(got[k], want[k], 0, 0)) << "output " << k;
    EXPECT_TRUE(close(again[k], want[k], 0, 0)) << "cached call, output " << k;
  }
  EXPECT_EQ(jf.num_traces(), 1u);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Prims, Conformance, ::testing::ValuesIn(all_cases()), case_name);

// Every primitive in primitives.def has a row: adding a primitive without one fails here.
TEST(Coverage, EveryPrimitiveHasARow) {
  std::set<const Primitive*> covered;
  for (auto& c : all_cases()) covered.insert(c.prim);
  for (const Primitive* p : prims::all_primitives()) {
    // built without LAPACK, the linear-algebra primitives raise NotImplementedError (tests/ops/test_linalg.cpp)
    bool linalg = p == &prims::cholesky_p || p == &prims::triangular_solve_p || p == &prims::lu_p ||
                  p == &prims::lu_pivots_to_permutation_p || p == &prims::eigh_p || p == &prims::qr_p ||
                  p == &prims::svd_p || p == &prims::eig_p;
    if (linalg && !cpu::lapack::available()) continue;
    EXPECT_TRUE(covered.count(p)) << "primitive '" << p->name << "' has no conformance row";
  }
}

TEST(Coverage, RowNamesAreUnique) {
  std::set<std::string> names;
  for (auto& c : all_cases()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

}  // namespace
}  // namespace graft::testing
