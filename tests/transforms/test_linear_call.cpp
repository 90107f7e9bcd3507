// linear_call: a linear function with the transpose the caller gives. Forward mode applies it to the
// tangents, reverse mode uses the given transpose (never the function's derivative), the transposed call
// transposes back, vmap batches both, jit stages it; residual tangents take the caller's residual rule,
// or differentiate the function without one.
#include <graft/graft.h>

#include "testing.h"

namespace graft::testing {
namespace {

// y = s * (A x): residuals {A, s}, linear x
std::vector<Array> apply(const std::vector<Array>& res, const std::vector<Array>& lin) {
  return {matmul(res[0], lin[0]) * res[1]};
}
std::vector<Array> apply_t(const std::vector<Array>& res, const std::vector<Array>& ct) {
  return {matmul(transpose(res[0], {1, 0}), ct[0]) * res[1]};
}

TEST(LinearCall, ForwardReverseTransposeVmapJit) {
  Rng rng(5);
  Array a = rng.uniform({3, 4}, DType::f64), s = Array(2.0), x = rng.uniform({4}, DType::f64);
  Array ct = rng.uniform({3}, DType::f64);
  auto f = [&](const Array& v) { return linear_call(apply, apply_t, {a, s}, {v})[0]; };
  Array want = matmul(a, x) * 2.0;
  EXPECT_TRUE(close(f(x), want, 1e-14, 0));
  EXPECT_TRUE(close(jit(f)(x), want, 1e-14, 0));
  auto [y, t] = jvp(f, {x}, {x * 3.0});
  EXPECT_TRUE(close(t, want * 3.0, 1e-14, 0));
  auto [out, pull] = vjp(f, x);
  Array at = matmul(transpose(a, {1, 0}), ct) * 2.0;
  EXPECT_TRUE(close(std::get<0>(pull(ct)), at, 1e-14, 0));
  // reverse mode uses the transpose given, not fun's derivative: a wrong one shows
  auto wrong = [&](const Array& v) {
    return sum(linear_call(apply, [](const std::vector<Array>& r, const std::vector<Array>& c) {
      return std::vector<Array>{zeros({4}, DType::f64) * sum(c[0]) + r[1]};
    }, {a, s}, {v})[0]);
  };
  EXPECT_TRUE(close(grad(wrong)(x), full({4}, 2.0, DType::f64), 0, 0));
  // the transpose of the transpose is fun
  auto back = [&](const Array& c) { return std::get<0>(vjp(f, x).second(c)); };
  auto [_, pull2] = vjp(back, ct);
  EXPECT_TRUE(close(std::get<0>(pull2(x)), want, 1e-14, 0));
  // vmap over the linear input and over a residual
  Array xs = rng.uniform({5, 4}, DType::f64);
  EXPECT_TRUE(close(vmap(f)(xs), matmul(xs, transpose(a, {1, 0})) * 2.0, 1e-14, 0));
  Array as = rng.uniform({2, 3, 4}, DType::f64);
  auto per_a = [&](const Array& ai) { return linear_call(apply, apply_t, {ai, s}, {x})[0]; };
  EXPECT_TRUE(close(vmap(per_a)(as), matmul(as, x) * 2.0, 1e-14, 0));
  EXPECT_TRUE(close(vmap(grad([&](const Array& v) { return sum(square(f(v))); }))(xs),
                    matmul(matmul(xs, transpose(a, {1, 0})) * 8.0, a), 1e-12, 0));
}

TEST(LinearCall, ResidualTangents) {
  Rng rng(6);
  Array a = rng.uniform({3, 4}, DType::f64), x = rng.uniform({4}, DType::f64);
  // without a residual rule: fun is differentiated in its residuals (d/ds of s * A x is A x)
  auto by_s = [&](const Array& s) { return sum(linear_call(apply, apply_t, {a, s}, {x})[0]); };
  EXPECT_NEAR(grad(by_s)(Array(2.0)).item<double>(), sum(matmul(a, x)).item<double>(), 1e-12);
  // with one: the caller's rule gives the residuals' part (here a marked one: 10 * A x per unit of s)
  int calls = 0;
  LinearResJvp marked = [&](const std::vector<Array>& res, const std::vector<Array>& dres, const std::vector<Array>& lin,
                            const std::vector<Array>&) {
    ++calls;
    return std::vector<Array>{matmul(res[0], lin[0]) * dres[1] * 10.0};
  };
  auto by_s2 = [&](const Array& s) {
    return sum(linear_call(apply, apply_t, {a, s}, {x}, "marked", marked, LinearResJvp{})[0]);
  };
  auto [v, t] = jvp(by_s2, {Array(2.0)}, {Array(1.0)});
  EXPECT_NEAR(t.item<double>(), 10.0 * sum(matmul(a, x)).item<double>(), 1e-12);
  EXPECT_GE(calls, 1);
}

}  // namespace
}  // namespace graft::testing
