// jit's ahead-of-time stages (jit(f).lower(args...) -> Lowered -> compile() -> Compiled) and the cost
// analysis they report, against flop and byte counts worked out by hand.
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

Array randn(uint64_t seed, const Shape& s, DType d = DType::f32) { return random::normal(random::key(seed), s, d); }

TEST(Aot, LowerCompileAndCallMatchJit) {
  int traces = 0;
  auto f = jit([&traces](const Array& w, const Array& x) {
    ++traces;
    return sum(tanh(matmul(x, w)));
  });
  Array w = randn(1, {16, 8}), x = randn(2, {4, 16});
  auto lowered = f.lower(w, x);
  EXPECT_EQ(traces, 1);
  std::string text = lowered.as_text();
  EXPECT_NE(text.find("dot_general"), std::string::npos) << text;
  EXPECT_NE(text.find("tanh"), std::string::npos) << text;
  auto compiled = lowered.compile();
  Array got = compiled(w, x);
  EXPECT_TRUE(close(got, sum(tanh(matmul(x, w)))));
  EXPECT_TRUE(close(f(w, x), got));
  EXPECT_EQ(traces, 1);  // lowering filled the jitted function's cache
  EXPECT_EQ(f.num_traces(), 1u);
  // other types are an error, not a retrace
  EXPECT_THROW(compiled(w, randn(3, {5, 16})), TypeError);
  EXPECT_THROW(compiled(w, x.astype(DType::f64)), TypeError);
  EXPECT_EQ(traces, 1);
}

TEST(Aot, CostOfAMatrixProductLayer) {
  const int64_t B = 4, K = 16, N = 8;
  auto f = jit([](const Array& w, const Array& x) { return sum(tanh(matmul(x, w))); });
  auto c = f.lower(randn(1, {K, N}), randn(2, {B, K})).cost_analysis();
  // dot 2BKN, tanh BN (transcendental), the sum BN
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * B * K * N + B * N + B * N);
  EXPECT_DOUBLE_EQ(c.transcendentals, double(B * N));
  // dot reads w and x and writes BN; tanh reads and writes BN; the sum reads BN and writes one
  EXPECT_DOUBLE_EQ(c.bytes_accessed, 4.0 * ((K * N + B * K + B * N) + 2 * B * N + (B * N + 1)));
}

TEST(Aot, FusionCutsTheCompiledProgramsTraffic) {
  auto f = jit([](const Array& x) { return exp(x * 2.0f + 1.0f) - x; });
  Array x = randn(3, {256, 256});
  auto lowered = f.lower(x);
  auto compiled = lowered.compile();
  auto lc = lowered.cost_analysis(), cc = compiled.cost_analysis();
  EXPECT_NE(compiled.as_text().find("fusion"), std::string::npos) << compiled.as_text();
  // the same arithmetic, far less memory traffic: one read of x and one write of the result
  EXPECT_DOUBLE_EQ(cc.flops, lc.flops);
  EXPECT_DOUBLE_EQ(cc.transcendentals, double(x.size()));
  EXPECT_GE(lc.bytes_accessed, 4 * cc.bytes_accessed);
  EXPECT_DOUBLE_EQ(cc.bytes_accessed, 2.0 * 4 * x.size());
  EXPECT_TRUE(close(compiled(x), exp(x * 2.0f + 1.0f) - x));
  auto m = compiled.memory_analysis();
  EXPECT_EQ(m.argument_bytes, 4 * x.size());
  EXPECT_EQ(m.output_bytes, 4 * x.size());
  EXPECT_GE(m.peak_bytes, m.output_bytes);
}

TEST(Aot, CostOfLoopsBranchesAndConvolutions) {
  const int64_t T = 5, D = 6;
  auto rnn = jit([](const Array& w, const Array& xs) {
    auto [h, hs] = scan([&](const Array& h, const Array& x) { return std::pair{matmul(h, w) + x, h}; },
                        zeros({D}), xs);
    return h;
  });
  auto c = rnn.lower(randn(1, {D, D}), randn(2, {T, D})).cost_analysis();
  EXPECT_DOUBLE_EQ(c.flops, T * (2.0 * D * D + D));  // the body, length times
  // a cond costs its dearer branch
  auto pick = jit([](const Array& p, const Array& x) {
    return cond(p, [](const Array& v) { return matmul(v, v); }, [](const Array& v) { return v + 1.0f; }, x);
  });
  auto cc = pick.lower(Array(true), randn(3, {8, 8})).cost_analysis();
  EXPECT_DOUBLE_EQ(cc.flops, 2.0 * 8 * 8 * 8 + 1);  // and the predicate's conversion to an index
  // NCHW / OIHW, valid 3x3 on 5x5: 3 features x 3 x 3 results, each 2 x (2 features x 9) flops
  auto conv = jit([](const Array& x, const Array& k) {
    return lax::conv_general_dilated(x, k, {1, 1}, {{0, 0}, {0, 0}}, {}, {}, lax::ConvDims::nchw(2));
  });
  auto cv = conv.lower(randn(4, {1, 2, 5, 5}), randn(5, {3, 2, 3, 3})).cost_analysis();
  EXPECT_DOUBLE_EQ(cv.flops, 27.0 * 2 * 18);
}

TEST(Aot, PytreesAndStructureChecks) {
  auto f = jit([](const std::vector<Array>& xs) { return std::pair{xs[0] + xs[1], xs[0] * xs[1]}; });
  std::vector<Array> xs{randn(1, {3}), randn(2, {3})};
  auto compiled = f.lower(xs).compile();
  auto [s, p] = compiled(xs);
  EXPECT_TRUE(close(s, xs[0] + xs[1]));
  EXPECT_TRUE(close(p, xs[0] * xs[1]));
  EXPECT_THROW(compiled(std::vector<Array>{xs[0]}), TypeError);
  EXPECT_EQ(compiled.flat().out_avals().size(), 2u);
}

TEST(Aot, LoweringInsideATransformationNeedsItsValuesAsArguments) {
  Array y = randn(2, {3});
  EXPECT_THROW(grad([&](const Array& x) {
                 auto inner = jit([&](const Array& v) { return v * x; });
                 inner.lower(y);
                 return sum(x);
               })(randn(1, {3})),
               TypeError);
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {
using namespace graft::testing;

TEST(NameScope, EquationsCarryTheirScopesThroughTracingAndCompiling) {
  auto layer = [](const Array& w, const Array& x) { return tanh(matmul(x, w) + 1.0f); };
  auto f = jit([&](const Array& w, const Array& x) {
    Array h;
    {
      NameScope outer("model");
      h = named_call(layer, "layer1")(w, x);
      {
        NameScope inner("head");
        h = h * 2.0f;
      }
    }
    return sum(h);
  });
  Array w = random::normal(random::key(1), {4, 4}), x = random::normal(random::key(2), {3, 4});
  auto lowered = f.lower(w, x);
  std::string plain = lowered.as_text();
  EXPECT_EQ(plain.find("#"), std::string::npos) << plain;  // JAX's default printing shows no scopes
  std::string named = to_string(lowered.jaxpr(), PrintOptions{.name_stack = true});
  EXPECT_NE(named.find("dot_general"), std::string::npos);
  EXPECT_NE(named.find("# [model/layer1]"), std::string::npos) << named;
  EXPECT_NE(named.find("# [model/head]"), std::string::npos) << named;
  // the reduction ran outside every scope
  size_t sum_at = named.find("reduce_sum");
  ASSERT_NE(sum_at, std::string::npos);
  EXPECT_EQ(named.substr(sum_at, named.find('\n', sum_at) - sum_at).find("#"), std::string::npos) << named;
  // the optimized program keeps them (the fused loop takes its first member's)
  std::string optimized = to_string(lowered.compile().flat().program(), PrintOptions{.name_stack = true});
  EXPECT_NE(optimized.find("# [model/layer1]"), std::string::npos) << optimized;
  EXPECT_TRUE(close(f(w, x), sum(tanh(matmul(x, w) + 1.0f) * 2.0f)));
  EXPECT_EQ(current_name_stack(), nullptr);
}

}  // namespace
}  // namespace graft
