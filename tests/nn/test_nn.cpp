// graft::nn: initializers, layers, losses and metrics against hand-computed values.
#include <cmath>
#include <limits>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

TEST(Init, VarianceScalingStatistics) {
  Array k = random::key(0);
  // glorot_uniform on [400, 600]: limit sqrt(6 / 1000)
  Array w = nn::glorot_uniform()(k, {400, 600}, f32);
  double lim = std::sqrt(6.0 / 1000);
  EXPECT_LE(max(abs(w)).item<double>(), lim);
  EXPECT_NEAR(std(w).item<double>(), lim / std::sqrt(3.0), 0.01 * lim);
  // he_normal: std sqrt(2 / fan_in), truncated at 2 std
  Array h = nn::he_normal()(k, {500, 300}, f32);
  EXPECT_NEAR(std(h).item<double>(), std::sqrt(2.0 / 500), 0.02 * std::sqrt(2.0 / 500));
  EXPECT_LE(max(abs(h)).item<double>(), 2 * std::sqrt(2.0 / 500) / 0.87962566103423978 + 1e-6);
  // conv kernels OIHW: fan_in = I * H * W
  Array c = nn::lecun_normal(1, 0)(k, {64, 32, 3, 3}, f32);
  EXPECT_NEAR(std(c).item<double>(), std::sqrt(1.0 / (32 * 9)), 0.03 * std::sqrt(1.0 / (32 * 9)));
  // seeded by keys: same key, same weights
  EXPECT_TRUE(array_equal(nn::glorot_uniform()(k, {3, 4}, f32), nn::glorot_uniform()(k, {3, 4}, f32)));
  EXPECT_THROW(nn::variance_scaling(1, "fan_sideways", "normal"), ValueError);
}

// jax.nn.initializers' names: constants, normal / uniform / truncated_normal with JAX's defaults, orthogonal
// (orthonormal columns or rows whatever the shape and column_axis) and delta_orthogonal (an orthogonal
// matrix at the kernel's spatial center, zeros elsewhere), the xavier / kaiming aliases.
TEST(Init, JaxNamedInitializers) {
  namespace ini = nn::initializers;
  Array k = random::key(1);
  EXPECT_TRUE(array_equal(ini::zeros()(k, {2, 3}, f32), zeros({2, 3})));
  EXPECT_TRUE(array_equal(ini::ones()(k, {2}, f64), ones({2}, f64)));
  EXPECT_TRUE(array_equal(ini::constant(0.5)(k, {2}, f32), full({2}, 0.5)));
  Array n = ini::normal()(k, {200, 200}, f32);
  EXPECT_NEAR(std(n).item<double>(), 1e-2, 3e-4);
  Array u = ini::uniform()(k, {200, 200}, f32);  // [0, 0.01), as JAX's
  EXPECT_GE(min(u).item<double>(), 0.0);
  EXPECT_LT(max(u).item<double>(), 1e-2);
  Array t = ini::truncated_normal(0.1)(k, {200, 200}, f32);
  EXPECT_LE(max(abs(t)).item<double>(), 0.2 + 1e-6);
  EXPECT_NEAR(std(t).item<double>(), 0.1 * 0.87962566103423978, 3e-3);
  EXPECT_TRUE(array_equal(ini::xavier_uniform()(k, {3, 4}, f32), nn::glorot_uniform()(k, {3, 4}, f32)));
  EXPECT_TRUE(array_equal(ini::kaiming_normal()(k, {3, 4}, f32), nn::he_normal()(k, {3, 4}, f32)));
  // orthogonal: tall gives orthonormal columns, wide orthonormal rows; column_axis picks the columns
  for (Shape s : {Shape{6, 4}, Shape{4, 6}}) {
    Array q = ini::orthogonal(2.0)(k, s, f64);
    EXPECT_EQ(q.shape(), s);
    Array g = s[0] >= s[1] ? matmul(transpose(q, {1, 0}), q) : matmul(q, transpose(q, {1, 0}));
    EXPECT_TRUE(close(g, eye(std::min(s[0], s[1]), std::nullopt, 0, f64) * 4.0, 1e-12, 1e-12)) << shape_str(s);
  }
  Array q3 = ini::orthogonal(1.0, 0)(k, {3, 2, 4}, f64);  // columns along axis 0: [8, 3] after moving it last
  Array m = reshape(moveaxis(q3, 0, -1), {8, 3});
  EXPECT_TRUE(close(matmul(transpose(m, {1, 0}), m), eye(3, std::nullopt, 0, f64), 1e-12, 1e-12));
  EXPECT_THROW(ini::orthogonal()(k, {5}, f32), ValueError);
  // delta_orthogonal: [3, 3, in 2, out 4]
  Array dk = ini::delta_orthogonal()(k, {3, 3, 2, 4}, f64);
  Array c = dk[{1, 1}];
  EXPECT_TRUE(close(matmul(c, transpose(c, {1, 0})), eye(2, std::nullopt, 0, f64), 1e-12, 1e-12));
  EXPECT_NEAR(sum(abs(dk)).item<double>(), sum(abs(c)).item<double>(), 1e-12);  // nothing off the center
  EXPECT_THROW(ini::delta_orthogonal()(k, {3, 3, 4, 2}, f32), ValueError);  // in > out
  // an even kernel holds it at (k - 1) // 2, as JAX's
  Array d4 = ini::delta_orthogonal()(k, {4, 2, 4}, f64);
  EXPECT_NEAR(sum(abs(d4[{1}])).item<double>(), sum(abs(d4)).item<double>(), 1e-12);
  EXPECT_GT(sum(abs(d4[{1}])).item<double>(), 0.5);
}

TEST(Layers, LinearAndMLP) {
  nn::Linear lin{3, 2};
  Tree p = lin.init(random::key(1));
  EXPECT_EQ(p["w"].array().shape(), (Shape{3, 2}));
  p["w"] = array({{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}});
  p["b"] = array({0.5f, -0.5f});
  Array y = lin(p, array({{1.0f, 0.0f, -1.0f}}));
  EXPECT_TRUE(close(y, array({{1 - 5 + 0.5f, 2 - 6 - 0.5f}})));
  EXPECT_THROW(lin(p, ones({2, 4})), ShapeError);
  nn::MLP mlp{{4, 8, 3}};
  Tree mp = mlp.init(random::key(2));
  EXPECT_EQ(mp.size(), 2u);
  EXPECT_EQ(nn::num_params(mp), 4 * 8 + 8 + 8 * 3 + 3);
  Array x = random::normal(random::key(3), {5, 4});
  Array manual = matmul(relu(matmul(x, mp[0]["w"].array()) + mp[0]["b"].array()), mp[1]["w"].array()) + mp[1]["b"].array();
  EXPECT_TRUE(close(mlp(mp, x), manual));
}

TEST(Layers, Conv2dMatchesAHandComputedConvolution) {
  nn::Conv2d conv{1, 1, {2, 2}};
  Tree p = conv.init(random::key(4));
  p["w"] = array(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2});
  p["b"] = array({10.0f});
  Array x = arange(9.0, f32).reshape({1, 1, 3, 3});
  // top-left window [[0,1],[3,4]] . [[1,2],[3,4]] = 0 + 2 + 9 + 16 = 27
  Array y = conv(p, x);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_TRUE(close(y, array(std::vector<float>{37, 47, 67, 77}, {1, 1, 2, 2})));
  nn::Conv2d same{1, 1, {3, 3}, {1, 1}, "SAME"};
  Tree ps = same.init(random::key(5));
  EXPECT_EQ(same(ps, x).shape(), (Shape{1, 1, 3, 3}));
  nn::Conv2d strided{3, 8, {3, 3}, {2, 2}, "SAME"};
  EXPECT_EQ(strided(strided.init(random::key(6)), ones({2, 3, 28, 28})).shape(), (Shape{2, 8, 14, 14}));
}

TEST(Layers, Pooling) {
  Array x = arange(16.0, f32).reshape({1, 1, 4, 4});
  EXPECT_TRUE(close(nn::max_pool2d(x, {2, 2}), array(std::vector<float>{5, 7, 13, 15}, {1, 1, 2, 2})));
  EXPECT_TRUE(close(nn::avg_pool2d(x, {2, 2}), array(std::vector<float>{2.5, 4.5, 10.5, 12.5}, {1, 1, 2, 2})));
  // SAME average pooling does not count the padding
  Array a = nn::avg_pool2d(ones({1, 1, 3, 3}), {2, 2}, {{1, 1}}, "SAME");
  EXPECT_TRUE(close(a, ones({1, 1, 3, 3})));
  // max-pool gradient goes to the maximum of each window
  Array g = grad([](const Array& x) { return sum(nn::max_pool2d(x, {2, 2})); })(x);
  EXPECT_TRUE(close(g, array(std::vector<float>{0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1}, {1, 1, 4, 4})));
}

TEST(Layers, MaxPoolNaNsTiesAndLeftovers) {
  // 2x2 windows over a 3x5 plane: a NaN wins its window, ties send the gradient to the first
  // maximum (row-major), and the row and column no window covers get a zero gradient
  float nan = std::numeric_limits<float>::quiet_NaN();
  Array x = array(std::vector<float>{1, 7, 2, 2, 9,   //
                                     7, 3, nan, 0, 9,  //
                                     9, 9, 9, 9, 9},
                  {1, 1, 3, 5});
  std::vector<float> y = nn::max_pool2d(x, {2, 2}).to_vector<float>();
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0], 7.0f);
  EXPECT_TRUE(std::isnan(y[1]));
  Array g = grad([](const Array& x) { return sum(nn::max_pool2d(x * 1.0, {2, 2})); })(x.at({0, 0, 1, 2}).set(5.0f));
  EXPECT_TRUE(close(g, array(std::vector<float>{0, 1, 0, 0, 0,  //
                                                0, 0, 1, 0, 0,  //
                                                0, 0, 0, 0, 0},
                             {1, 1, 3, 5})));
}

TEST(Layers, DropoutKeepsTheExpectation) {
  Array x = ones({10000});
  Array y = nn::dropout(random::key(7), x, 0.25);
  EXPECT_NEAR(mean(y == 0.0).item<double>(), 0.25, 0.02);
  EXPECT_TRUE(close(max(y), array(float(1 / 0.75))));
  EXPECT_NEAR(mean(y).item<double>(), 1.0, 0.03);
  EXPECT_TRUE(array_equal(nn::dropout(random::key(7), x, 0.25, false), x));
  EXPECT_TRUE(array_equal(nn::dropout(random::key(7), x, 0.25), y));  // the key decides
  EXPECT_THROW(nn::dropout(random::key(7), x, 1.0), ValueError);
}

TEST(Layers, LayerNormAndBatchNorm) {
  nn::LayerNorm ln{4};
  Tree p = ln.init();
  Array x = array({{1.0f, 2.0f, 3.0f, 4.0f}});
  // mean 2.5, var 1.25
  Array want = (x - 2.5) / std::sqrt(1.25 + 1e-5);
  EXPECT_TRUE(close(ln(p, x), want, 1e-5));
  nn::BatchNorm bn{2, -1, 0.9};
  Tree bp = bn.init(), bs = bn.init_state();
  Array b = array({{1.0f, 10.0f}, {3.0f, 30.0f}});
  auto [y, s2] = bn(bp, bs, b, true);
  // per feature: mean (2, 20), var (1, 100)
  EXPECT_TRUE(close(y, array({{-1.0f, -1.0f}, {1.0f, 1.0f}}), 1e-4));
  EXPECT_TRUE(close(s2["mean"].array(), array({0.2f, 2.0f})));
  EXPECT_TRUE(close(s2["var"].array(), array({1.0f, 10.9f})));
  auto [ye, se] = bn(bp, s2, b, false);
  EXPECT_TRUE(close(ye, (b - s2["mean"].array()) / sqrt(s2["var"].array() + 1e-5), 1e-5));
  EXPECT_TRUE(array_equal(se["mean"].array(), s2["mean"].array()));
}

// Layer norm's and GELU's derivative rules (custom_jvp: the normalization's own, gelu'(x) from x)
// against finite differences of the values in f64: first and second order, forward and reverse, each
// input; vmap against a loop and jit against eager.
TEST(Layers, LayerNormDerivativesMatchFiniteDifferences) {
  testing::Rng rng(5);
  nn::LayerNorm ln{6, 1e-3};
  Array x = rng.uniform({3, 6}, f64, -2, 2), g = rng.uniform({6}, f64, 0.5, 1.5), b = rng.uniform({6}, f64);
  Array w = rng.uniform({3, 6}, f64);
  auto f = [&](const Array& xx, const Array& gg, const Array& bb) {
    Tree p = Tree::dict({{"scale", gg}, {"bias", bb}});
    return sum(ln(p, xx) * w + square(ln(p, xx)) * 0.3);
  };
  // the value: (x - mean) / sqrt(var + eps) * g + b
  Tree p = Tree::dict({{"scale", g}, {"bias", b}});
  Array m = mean(x, -1, true), v = mean(square(x - m), -1, true);
  EXPECT_TRUE(testing::close(ln(p, x), (x - m) / sqrt(v + 1e-3) * g + b, 1e-12, 1e-12));
  EXPECT_TRUE(testing::close(grad(f, 0)(x, g, b), testing::num_grad([&](const Array& z) { return f(z, g, b); }, x), 1e-6, 1e-7));
  EXPECT_TRUE(testing::close(grad(f, 1)(x, g, b), testing::num_grad([&](const Array& z) { return f(x, z, b); }, g), 1e-6, 1e-7));
  EXPECT_TRUE(testing::close(grad(f, 2)(x, g, b), testing::num_grad([&](const Array& z) { return f(x, g, z); }, b), 1e-6, 1e-7));
  // forward mode, and the derivative of the gradient (second order through the rule)
  Array t = rng.uniform({3, 6}, f64);
  auto fx = [&](const Array& z) { return f(z, g, b); };
  auto [y, dy] = jvp(fx, {x}, {t});
  double h = 1e-6;
  EXPECT_NEAR(dy.item<double>(), (fx(x + t * h).item<double>() - fx(x - t * h).item<double>()) / (2 * h), 1e-6);
  auto gx = [&](const Array& z) { return grad(fx)(z); };
  auto [gy, hv] = jvp(gx, {x}, {t});
  EXPECT_TRUE(testing::close(hv, (gx(x + t * h) - gx(x - t * h)) / (2 * h), 1e-5, 1e-6));
  // vmap and jit
  auto apply = [&](const Array& z) { return ln(p, z); };
  Array xs = rng.uniform({4, 3, 6}, f64);
  Array batched = vmap(apply)(xs);
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(testing::close(batched[{i}], apply(xs[{i}]), 1e-12, 1e-12));
  EXPECT_TRUE(testing::close(jit(grad(fx))(x), grad(fx)(x), 1e-12, 1e-12));
}

TEST(Layers, GeluDerivativesMatchFiniteDifferences) {
  testing::Rng rng(6);
  Array x = concatenate({rng.uniform({40}, f64, -6, 6), array({0.0, -1e-3, 1e-3, 30.0, -30.0})});
  for (bool approximate : {true, false}) {
    // the value against the formula evaluated elementwise in double
    std::vector<double> xv = x.to_vector<double>(), want;
    for (double z : xv)
      want.push_back(approximate ? 0.5 * z * (1 + std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)))
                                 : 0.5 * z * (1 + std::erf(z / std::sqrt(2.0))));
    EXPECT_TRUE(testing::close(gelu(x, approximate), array(want), 1e-14, 1e-14)) << approximate;
    auto f = [approximate](const Array& z) { return sum(gelu(z, approximate)); };
    EXPECT_TRUE(testing::close(grad(f)(x), testing::num_grad(f, x), 1e-7, 1e-8)) << approximate;
    // second order: the derivative of gelu' against finite differences of it
    auto d1 = [f](const Array& z) { return grad(f)(z); };
    auto d2 = [d1](const Array& z) { return sum(d1(z)); };
    EXPECT_TRUE(testing::close(grad(d2)(x), testing::num_grad(d2, x), 1e-6, 1e-7)) << approximate;
    Array xs = rng.uniform({3, 7}, f64, -3, 3);
    auto g1 = [approximate](const Array& z) { return gelu(z, approximate); };
    Array batched = vmap(grad([approximate](const Array& z) { return sum(gelu(z, approximate)); }))(xs);
    for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(testing::close(batched[{i}], grad(f)(xs[{i}]), 1e-12, 1e-12));
    EXPECT_TRUE(testing::close(jit(g1)(xs), g1(xs), 1e-12, 1e-12));
  }
}

TEST(Layers, Embedding) {
  nn::Embedding emb{5, 3};
  Tree p = emb.init(random::key(8));
  Array ids = array({{4, 0}, {1, 1}});
  Array e = emb(p, ids);
  EXPECT_EQ(e.shape(), (Shape{2, 2, 3}));
  EXPECT_TRUE(array_equal(e[{1, 0}], p["table"].array()[1]));
  EXPECT_THROW(emb(p, array({1.0f})), TypeError);
}

TEST(Losses, AgainstHandComputedValues) {
  Array logits = array({{2.0, 1.0, 0.1}, {0.5, 2.5, 0.0}});
  Array labels = array({0, 1});
  auto lse = [](double a, double b, double c) { return std::log(std::exp(a) + std::exp(b) + std::exp(c)); };
  double want = ((lse(2.0, 1.0, 0.1) - 2.0) + (lse(0.5, 2.5, 0.0) - 2.5)) / 2;
  EXPECT_NEAR(nn::cross_entropy(logits, labels).item<double>(), want, 1e-12);
  EXPECT_NEAR(nn::softmax_cross_entropy(logits, one_hot(labels, 3, f64)).item<double>(), want, 1e-12);
  // d CE / d logits = (softmax - one_hot) / batch
  Array g = grad([&](const Array& l) { return nn::cross_entropy(l, labels); })(logits);
  EXPECT_TRUE(close(g, (softmax(logits) - one_hot(labels, 3, f64)) / 2.0, 1e-12));
  EXPECT_NEAR(nn::mse(array({1.0, 2.0}), array({0.0, 4.0})).item<double>(), 2.5, 1e-12);
  double bce = (std::log1p(std::exp(-2.0)) + (2.0 + std::log1p(std::exp(-2.0)))) / 2;  // x=2,t=1 and x=2,t=0
  EXPECT_NEAR(nn::binary_cross_entropy_with_logits(array({2.0, 2.0}), array({1.0, 0.0})).item<double>(), bce, 1e-12);
  EXPECT_NEAR(nn::accuracy(logits, array({0, 0})).item<double>(), 0.5, 0);
  EXPECT_THROW(nn::cross_entropy(logits, array({0.0f, 1.0f})), TypeError);
}

}  // namespace
}  // namespace graft
