// gemm_epilogues (programs for devices): bias adds folded into their products (with a ReLU read only
// there), weight gradients paired with their bias gradients; the rewritten program computes what the
// original did, and the pass leaves alone what it must not take.
#include "graft/compiler/epilogue.h"
#include "graft/compiler/pipeline.h"
#include "testing.h"

namespace graft {
namespace {
using testing::close;
using testing::Rng;
using testing::expect_throws;

Arrays run(const ClosedJaxpr& j, std::vector<Array> args) { return eval_jaxpr(j, args); }

std::vector<std::string> prims_of(const ClosedJaxpr& j) {
  std::vector<std::string> v;
  for (auto& e : j.jaxpr->eqns) v.push_back(e.prim->name);
  return v;
}
int count(const std::vector<std::string>& v, const std::string& p) { return static_cast<int>(std::count(v.begin(), v.end(), p)); }

TEST(GemmEpilogues, BiasAndReluFoldIntoTheProduct) {
  Rng rng(1);
  Array x = rng.uniform({8, 5}), w = rng.uniform({5, 6}), b = rng.uniform({6});
  auto inference = [](const Array& x, const Array& w, const Array& b) { return relu(matmul(x, w) + b); };
  ClosedJaxpr j = make_jaxpr(inference)(x, w, b);
  ClosedJaxpr r = compiler::run_pass("gemm_epilogues", compiler::run_pass("simplify", j));
  auto names = prims_of(compiler::run_pass("dce", r));
  EXPECT_EQ(count(names, "dot_bias"), 1) << r;
  EXPECT_EQ(count(names, "dot_general"), 0) << r;
  EXPECT_EQ(count(names, "select_n") + count(names, "gt"), 0) << r;  // the ReLU went into it
  for (auto& e : r.jaxpr->eqns)
    if (e.prim == &compiler::dot_bias_p) {
      EXPECT_TRUE(e.params.get_bool("relu"));
    }
  auto max_relu = [](const Array& x, const Array& w, const Array& b) { return maximum(matmul(x, w) + b, zeros({1})); };
  ClosedJaxpr rm = compiler::run_pass("gemm_epilogues", compiler::run_pass("simplify", make_jaxpr(max_relu)(x, w, b)));
  EXPECT_EQ(count(prims_of(compiler::run_pass("dce", rm)), "max"), 0) << rm;
  EXPECT_TRUE(close(run(rm, {x, w, b})[0], max_relu(x, w, b)));
  EXPECT_TRUE(close(run(r, {x, w, b})[0], inference(x, w, b)));
  // the pre-activation read elsewhere (a training step's ReLU mask): the bias only
  auto both = [](const Array& x, const Array& w, const Array& b) {
    Array h = matmul(x, w) + b;
    return std::vector<Array>{relu(h), h * 2.0};
  };
  ClosedJaxpr r2 = compiler::run_pass("gemm_epilogues", compiler::run_pass("simplify", make_jaxpr(both)(x, w, b)));
  auto n2 = prims_of(r2);
  EXPECT_EQ(count(n2, "dot_bias"), 1) << r2;
  EXPECT_EQ(count(n2, "select_n"), 1);  // the pre-activation is read twice: the ReLU stays
  auto want = both(x, w, b);
  auto got = run(r2, {x, w, b});
  EXPECT_TRUE(close(got[0], want[0]) && close(got[1], want[1]));
}

TEST(GemmEpilogues, WeightGradientsPairWithBiasGradients) {
  Rng rng(2);
  Array x = rng.uniform({16, 5}), w = rng.uniform({5, 6}), b = rng.uniform({6}), y = rng.uniform({16, 6});
  auto loss = [&](const Array& w, const Array& b) { return mean(square(tanh(matmul(x, w) + b) - y)); };
  auto g = [&](const Array& w, const Array& b) { return grad(loss, {0, 1})(w, b); };
  ClosedJaxpr j = compiler::optimize(make_jaxpr(g)(w, b), {.passes = {{"gemm_epilogues"}}});
  auto names = prims_of(j);
  EXPECT_EQ(count(names, "dot_bias_grad"), 1) << j;
  EXPECT_EQ(count(names, "dot_bias"), 1) << j;
  auto want = g(w, b);
  auto got = run(j, {w, b});
  EXPECT_TRUE(close(got[0], want[0], 1e-5, 1e-6));
  EXPECT_TRUE(close(got[1], want[1], 1e-5, 1e-6));
  // the CPU's program keeps the primitives (its fused loops already read each product once)
  auto cpu = prims_of(compiler::optimize(make_jaxpr(g)(w, b)));
  EXPECT_EQ(count(cpu, "dot_bias") + count(cpu, "dot_bias_grad"), 0);
}

TEST(GemmEpilogues, LeavesAloneWhatItMustNotTake) {
  Rng rng(3);
  // batched products, integer products, a bias along the other axis, a product read twice
  auto batched = [](const Array& x, const Array& w, const Array& b) { return matmul(x, w) + b; };
  auto names = prims_of(compiler::run_pass("gemm_epilogues", make_jaxpr(batched)(ones({2, 3, 4}), ones({2, 4, 5}), ones({5}))));
  EXPECT_EQ(count(names, "dot_bias"), 0);
  auto ints = [](const Array& x, const Array& w, const Array& b) { return matmul(x, w) + b; };
  names = prims_of(compiler::run_pass("gemm_epilogues",
                                      make_jaxpr(ints)(ones({3, 4}, DType::i32), ones({4, 5}, DType::i32), ones({5}, DType::i32))));
  EXPECT_EQ(count(names, "dot_bias"), 0);
  auto rows = [](const Array& x, const Array& w, const Array& b) { return matmul(x, w) + reshape(b, {3, 1}); };
  names = prims_of(compiler::run_pass("gemm_epilogues", make_jaxpr(rows)(ones({3, 4}), ones({4, 3}), ones({3}))));
  EXPECT_EQ(count(names, "dot_bias"), 0);
  auto twice = [](const Array& x, const Array& w, const Array& b) {
    Array p = matmul(x, w);
    return std::vector<Array>{p + b, p};
  };
  names = prims_of(compiler::run_pass("gemm_epilogues", make_jaxpr(twice)(ones({3, 4}), ones({4, 5}), ones({5}))));
  EXPECT_EQ(count(names, "dot_bias"), 0);
  // bad operands of the primitive itself are a clear error
  expect_throws<ShapeError>([] { bind(compiler::dot_bias_p, {ones({3, 4}), ones({4, 5}), ones({4})},
                                      {{"dimension_numbers", make_ref<lax::DotDims>(IntList{1}, IntList{0}, IntList{}, IntList{})},
                                       {"relu", false}}); },
                            "the bias f32[4] must be a vector of the product's 5 columns");
}

}  // namespace
}  // namespace graft
