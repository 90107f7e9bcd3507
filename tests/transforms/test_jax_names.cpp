// JAX's top-level names for graft's C++ spellings: eval_shape / ShapeDtypeStruct, disable_jit (a jitted
// body runs eagerly and sees concrete values, nothing traced), named_scope, ensure_compile_time_eval,
// remat and checkpoint_policies.
#include <graft/graft.h>

#include "testing.h"

namespace graft::testing {
namespace {

TEST(JaxNames, EvalShape) {
  auto f = [](const Array& x, const Array& y) { return std::pair{matmul(x, y), sum(x)}; };
  std::vector<ShapeDtypeStruct> s = eval_shape(f, zeros({2, 3}), zeros({3, 4}, DType::f64));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].shape, (Shape{2, 4}));
  EXPECT_EQ(s[0].dtype, DType::f64);
  EXPECT_EQ(s[1].shape, Shape{});
  EXPECT_THROW(eval_shape(f, zeros({2, 3}), zeros({2, 4})), Error);  // the shapes do not contract
}

TEST(JaxNames, DisableJit) {
  int concrete = 0;
  auto body = [&](const Array& x) {
    concrete += x.is_concrete();
    return x * 2.0;
  };
  auto f = jit(body);
  {
    disable_jit off;
    EXPECT_TRUE(jit_disabled());
    EXPECT_TRUE(close(f(ones({3})), full({3}, 2.0), 0, 0));
    EXPECT_TRUE(close(f(ones({3})), full({3}, 2.0), 0, 0));
  }
  EXPECT_FALSE(jit_disabled());
  EXPECT_EQ(concrete, 2);  // both calls ran the body on concrete values
  EXPECT_EQ(f.num_traces(), 0u);
  f(ones({3}));
  EXPECT_EQ(f.num_traces(), 1u);  // traced again once the scope is gone
  EXPECT_EQ(concrete, 2);
}

TEST(JaxNames, ScopesRematAndPolicies) {
  std::string stack;
  auto g = [&](const Array& x) {
    named_scope s("block");
    stack = *current_name_stack();
    return tanh(x) * 3.0;
  };
  make_jaxpr(g)(ones({2}));
  EXPECT_EQ(stack, "block");
  EXPECT_EQ(current_name_stack(), nullptr);
  // inside jit, values made from constants under ensure_compile_time_eval are concrete
  bool folded = false, traced = false;
  jit([&](const Array& v) {
    Array c;
    {
      ensure_compile_time_eval now;
      c = ones({2}) * 2.0;
    }
    folded = c.is_concrete();
    traced = !v.is_concrete();
    return v + c;
  })(ones({2}));
  EXPECT_TRUE(folded);
  EXPECT_TRUE(traced);
  Array x = Array(0.7);
  auto h = [](const Array& v) { return sin(sin(v)); };
  for (const CheckpointPolicy& p : {checkpoint_policies::nothing_saveable(), checkpoint_policies::dots_saveable(),
                                    checkpoint_policies::everything_saveable()}) {
    EXPECT_NEAR(grad(remat(h, p))(x).item<double>(), grad(h)(x).item<double>(), 1e-15);
  }
}

}  // namespace
}  // namespace graft::testing
namespace graft::testing {
namespace {
// A custom_jvp function may branch on its input's value where JAX allows it: called eagerly, and under
// grad / jvp of an eager call (whose primal values are concrete); under jit the branch needs a
// concrete value and says so.
TEST(JaxNames, CustomJvpBranchesOnConcreteValues) {
  auto f = custom_jvp(
      [](const Array& x) { return x.item<double>() > 0 ? x * x : -x; },
      [](const std::vector<Array>& p, const std::vector<Array>& t) {
        bool pos = p[0].item<double>() > 0;
        return std::make_pair(pos ? p[0] * p[0] : -p[0], pos ? t[0] * p[0] * 2.0 : -t[0]);
      });
  EXPECT_NEAR(f(Array(3.0)).item<double>(), 9.0, 1e-12);
  EXPECT_NEAR(grad(f)(Array(3.0)).item<double>(), 6.0, 1e-12);
  EXPECT_NEAR(grad(f)(Array(-2.0)).item<double>(), -1.0, 1e-12);
  EXPECT_NEAR(jvp(f, {Array(-2.0)}, {Array(1.0)}).second.item<double>(), -1.0, 1e-12);
  EXPECT_THROW(jit(f)(Array(3.0)), Error);
}
}  // namespace
}  // namespace graft::testing
