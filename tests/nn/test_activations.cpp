// jax.nn's activations in C++ (graft/nn/activations.cpp) against their definitions evaluated per
// element in double, gradients against central differences, and vmap / jit against eager.
#include <cmath>
#include <functional>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

struct Row {
  const char* name;
  std::function<Array(const Array&)> f;
  std::function<double(double)> ref;
};

double sigm(double v) { return 1 / (1 + std::exp(-v)); }
double relu6(double v) { return std::min(std::max(v, 0.0), 6.0); }

std::vector<Row> rows() {
  const double a = 1.6732632423543772848170429916717, s = 1.0507009873554804934193349852946;
  return {
      {"identity", [](const Array& x) { return nn::identity(x); }, [](double v) { return v; }},
      {"swish", [](const Array& x) { return nn::swish(x); }, [](double v) { return v * sigm(v); }},
      {"celu", [](const Array& x) { return nn::celu(x, 0.7); },
       [](double v) { return std::max(v, 0.0) + std::min(0.0, 0.7 * std::expm1(v / 0.7)); }},
      {"selu", [](const Array& x) { return nn::selu(x); },
       [=](double v) { return s * (v > 0 ? v : a * std::expm1(v)); }},
      {"mish", [](const Array& x) { return nn::mish(x); }, [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }},
      {"hard_sigmoid", [](const Array& x) { return nn::hard_sigmoid(x); }, [](double v) { return relu6(v + 3) / 6; }},
      {"hard_silu", [](const Array& x) { return nn::hard_silu(x); }, [](double v) { return v * relu6(v + 3) / 6; }},
      {"hard_swish", [](const Array& x) { return nn::hard_swish(x); }, [](double v) { return v * relu6(v + 3) / 6; }},
      {"hard_tanh", [](const Array& x) { return nn::hard_tanh(x); }, [](double v) { return std::clamp(v, -1.0, 1.0); }},
      {"soft_sign", [](const Array& x) { return nn::soft_sign(x); }, [](double v) { return v / (std::abs(v) + 1); }},
      {"squareplus", [](const Array& x) { return nn::squareplus(x, 3.0); },
       [](double v) { return (v + std::sqrt(v * v + 3.0)) / 2; }},
      {"sparse_plus", [](const Array& x) { return nn::sparse_plus(x); },
       [](double v) { return v <= -1 ? 0.0 : v >= 1 ? v : (v + 1) * (v + 1) / 4; }},
      {"sparse_sigmoid", [](const Array& x) { return nn::sparse_sigmoid(x); },
       [](double v) { return v <= -1 ? 0.0 : v >= 1 ? 1.0 : (v + 1) / 2; }},
  };
}

// points away from the kinks (where finite differences straddle two pieces)
const std::vector<double> kPoints = {-4.1, -2.3, -0.77, -0.31, 0.13, 0.58, 0.93, 1.7, 3.3, 5.2};

TEST(Activations, MatchTheirDefinitionsAndDerivatives) {
  Array x = concrete(kPoints, {static_cast<int64_t>(kPoints.size())}, DType::f64);
  for (const Row& r : rows()) {
    SCOPED_TRACE(r.name);
    std::vector<double> want;
    for (double v : kPoints) want.push_back(r.ref(v));
    EXPECT_TRUE(close(r.f(x), concrete(want, x.shape(), DType::f64), 1e-13, 1e-15));
    auto total = [&](const Array& v) { return sum(r.f(v)); };
    EXPECT_TRUE(close(grad(total)(x), num_grad(total, x), 1e-6, 1e-8));
    EXPECT_TRUE(close(jit(r.f)(x), r.f(x), 1e-14, 1e-15));
    EXPECT_TRUE(close(vmap(r.f)(x.reshape({2, 5})), r.f(x).reshape({2, 5}), 1e-14, 1e-15));
    EXPECT_EQ(r.f(x.astype(DType::f32)).dtype(), DType::f32);
  }
}

TEST(Activations, GluLogMeanExpLog1mexpStandardize) {
  Array x = random::normal(random::key(3), {3, 6}, DType::f64);
  auto xv = values(x);
  std::vector<double> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(xv[i * 6 + j] * sigm(xv[i * 6 + j + 3]));
  EXPECT_TRUE(close(nn::glu(x), concrete(want, {3, 3}, DType::f64), 1e-13, 1e-15));
  EXPECT_THROW(nn::glu(random::normal(random::key(1), {2, 5})), ValueError);
  std::vector<double> lme;
  for (int i = 0; i < 3; ++i) {
    double m = 0;
    for (int j = 0; j < 6; ++j) m += std::exp(xv[i * 6 + j]) / 6;
    lme.push_back(std::log(m));
  }
  EXPECT_TRUE(close(nn::logmeanexp(x, 1), concrete(lme, {3}, DType::f64), 1e-13, 1e-15));
  EXPECT_EQ(nn::logmeanexp(x, 1, true).shape(), (Shape{3, 1}));
  std::vector<double> pts = {1e-10, 1e-3, 0.5, 3.0, 50.0};
  std::vector<double> l1m;
  for (double v : pts) l1m.push_back(v < std::log(2.0) ? std::log(-std::expm1(-v)) : std::log1p(-std::exp(-v)));
  EXPECT_TRUE(close(nn::log1mexp(concrete(pts, {5}, DType::f64)), concrete(l1m, {5}, DType::f64), 1e-13, 0));
  Array z = nn::standardize(x, 1, 0.0);
  EXPECT_TRUE(close(mean(z, 1), zeros({3}, DType::f64), 0, 1e-14));
  EXPECT_TRUE(close(var(z, 1), ones({3}, DType::f64), 1e-12, 1e-12));
}

}  // namespace
}  // namespace graft
