// dot_general_add (graft/compiler/cpu/accumulate.h) and the accumulate_dots pass: jitted programs whose
// products accumulate into a value against the same programs run eagerly, in place on donated
// arguments and never on the caller's arrays otherwise.
#include "testing.h"

#include <cstdlib>

#include "graft/runtime/cpu/gemm.h"
#include "graft/compiler/cpu/accumulate.h"
#include "graft/compiler/memory_plan.h"
#include "graft/compiler/pipeline.h"

namespace graft {
namespace {

using testing::close;
using testing::Rng;

// Number of equations of primitive `name` in f's optimized program.
template <class F, class... A>
int count_eqns(const char* name, F f, const A&... args) {
  ClosedJaxpr opt = compiler::optimize(make_jaxpr(f)(args...));
  int k = 0;
  for (auto& e : opt.jaxpr->eqns) k += std::string(e.prim->name) == name;
  return k;
}

TEST(AccumulateDots, jit_matches_eager_for_every_form_and_layout) {
  Rng rng(1);
  for (DType d : {DType::f32, DType::f64}) {
    double tol = d == DType::f32 ? 1e-5 : 1e-12;
    // odd sizes; x^T g (the weight gradient's layout), a v^T (the input gradient's), plain; each
    // product a different one (cse would merge equal ones, and a product read twice is not taken)
    Array w = rng.uniform({37, 23}, d), x = rng.uniform({19, 37}, d), g = rng.uniform({19, 23}, d);
    Array a = rng.uniform({37, 11}, d), b = rng.uniform({11, 23}, d), v = rng.uniform({23, 11}, d);
    auto f = [](const Array& w, const Array& x, const Array& g, const Array& a, const Array& b, const Array& v) {
      return std::vector<Array>{w - matmul(transpose(x), g) * 0.01,   // SGD
                                matmul(a, b) - w,                      // beta -1
                                w + -matmul(a, transpose(v)),          // neg
                                0.25 * matmul(a * 2.0, b) + w * 2.0,    // an addend made by a loop
                                matmul(transpose(x), g * 3.0) + w};
    };
    EXPECT_EQ(count_eqns("dot_general_add", f, w, x, g, a, b, v), 5) << short_name(d);
    auto want = f(w, x, g, a, b, v);
    auto got = jit(f)(w, x, g, a, b, v);
    for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(close(got[k], want[k], tol, tol)) << short_name(d) << " " << k;
  }
  // batch dimensions: [B, M, K] x [B, K, N] + [B, M, N]
  Array p = rng.uniform({3, 5, 7}), q = rng.uniform({3, 7, 4}), c = rng.uniform({3, 5, 4});
  auto bf = [](const Array& p, const Array& q, const Array& c) {
    return c - 0.5 * lax::dot_general(p, q, lax::DotDims({2}, {1}, {0}, {0}));
  };
  EXPECT_EQ(count_eqns("dot_general_add", bf, p, q, c), 1);
  EXPECT_TRUE(close(jit(bf)(p, q, c), bf(p, q, c)));
}

TEST(AccumulateDots, the_callers_addend_is_never_written) {
  Rng rng(2);
  Array w = rng.uniform({64, 32}), x = rng.uniform({16, 64}), g = rng.uniform({16, 32});
  Array before = w * 1.0;
  auto step = jit([](const Array& w, const Array& x, const Array& g) { return w - matmul(transpose(x), g) * 0.1; });
  Array out = step(w, x, g);
  EXPECT_TRUE(close(w, before, 0, 0));
  EXPECT_NE(out.raw_data(), w.raw_data());
  EXPECT_TRUE(close(out, before - matmul(transpose(x), g) * 0.1));
}

TEST(AccumulateDots, a_donated_addend_is_updated_in_place) {
  Rng rng(3);
  Array w = rng.uniform({64, 32}), x = rng.uniform({16, 64}), g = rng.uniform({16, 32});
  Array want = w - matmul(transpose(x), g) * 0.1;
  auto step = jit([](const Array& w, const Array& x, const Array& g) { return w - matmul(transpose(x), g) * 0.1; },
                  {.name = "sgd", .donate_argnums = {0}});
  for (int i = 0; i < 2; ++i) {
    Array w2 = w * 1.0;
    const void* storage = w2.raw_data();
    Array out = step(w2, x, g);
    EXPECT_EQ(out.raw_data(), storage) << "call " << i;
    EXPECT_TRUE(close(out, want)) << "call " << i;
  }
  // the memory plan says the same
  ClosedJaxpr opt = compiler::optimize(make_jaxpr([](const Array& w, const Array& x, const Array& g) {
    return w - matmul(transpose(x), g) * 0.1;
  })(w, x, g));
  std::string plan = compiler::plan_memory(opt, {true, false, false}).str(*opt.jaxpr);
  EXPECT_NE(plan.find("dot_general_add -> #0 f32[64,32] (in place of operand 2)"), std::string::npos) << plan;
}

TEST(AccumulateDots, bad_operands_are_named) {
  Array a = ones({2, 3}), b = ones({3, 4});
  Params p{{"dimension_numbers", Ref<const ParamObject>(new lax::DotDims({1}, {0}, {}, {}))},
           {"alpha", 1.0},
           {"beta", 1.0}};
  try {
    eval_primitive(compiler::dot_general_add_p, std::vector<Array>{a, b, ones({2, 5})}, p);
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("dot_general_add: the addend f32[2,5] must have the product's type f32[2,4]"),
              std::string::npos)
        << e.what();
  }
  Array ia = ones({2, 3}, DType::i32), ib = ones({3, 4}, DType::i32);
  EXPECT_THROW(eval_primitive(compiler::dot_general_add_p, std::vector<Array>{ia, ib, ones({2, 4}, DType::i32)}, p),
               TypeError);
  // evaluated directly (not in place): the addend is copied, then accumulated into
  Array c = full({2, 4}, 1.0f);
  Array r = eval_primitive(compiler::dot_general_add_p, std::vector<Array>{a, b, c},
                           p.with("alpha", -2.0).with("beta", 0.5))[0];
  EXPECT_TRUE(close(r, full({2, 4}, -5.5f)));
  EXPECT_TRUE(close(c, full({2, 4}, 1.0f)));
}

TEST(AccumulateDots, skipped_by_name) {
  Array w = ones({4, 3}), x = ones({2, 4}), g = ones({2, 3});
  auto f = [](const Array& w, const Array& x, const Array& g) { return w - matmul(transpose(x), g); };
  setenv("GRAFT_SKIP_PASSES", "accumulate_dots", 1);
  int skipped = count_eqns("dot_general_add", f, w, x, g);
  setenv("GRAFT_SKIP_PASSES", "accumulate_dots,vectorize", 1);
  EXPECT_THROW(count_eqns("dot_general_add", f, w, x, g), ValueError);
  unsetenv("GRAFT_SKIP_PASSES");
  EXPECT_EQ(skipped, 0);
  EXPECT_EQ(count_eqns("dot_general_add", f, w, x, g), 1);
}

// cpu::gemm's alpha and beta on every path (oneDNN or BLAS for f32/f64, graft's loop for the rest),
// against a reference loop; beta 0 never reads C (NaN there does not propagate).
TEST(Gemm, alpha_and_beta_on_every_path) {
  Rng rng(4);
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{33, 17, 29}, {4, 3, 2}}) {
          Array A = rng.uniform(ta ? Shape{K, M} : Shape{M, K}, d), B = rng.uniform(tb ? Shape{N, K} : Shape{K, N}, d);
          Array C0 = rng.uniform({M, N}, d);
          std::vector<double> a = A.to_vector<double>(), b = B.to_vector<double>(), c0 = C0.to_vector<double>();
          for (auto [alpha, beta] : {std::pair<double, double>{1, 0}, {-0.5, 1}, {2, -1.5}}) {
            Array C = C0 * 1.0;
            if (beta == 0) C = full({M, N}, NAN, d);
            cpu::gemm(d, ta, tb, M, N, K, A.raw_data(), ta ? M : K, B.raw_data(), tb ? K : N, C.concrete()->data(), N,
                      alpha, beta);
            double tol = d == DType::f16 ? 2e-2 : d == DType::bf16 ? 4e-2 : (d == DType::f32 ? 1e-5 : 1e-12);
            std::vector<double> c = C.to_vector<double>();
            bool ok = true;
            for (int64_t m = 0; m < M && ok; ++m)
              for (int64_t n = 0; n < N && ok; ++n) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k)
                  s += a[ta ? k * M + m : m * K + k] * b[tb ? n * K + k : k * N + n];
                double want = alpha * s + (beta == 0 ? 0 : beta * c0[m * N + n]);
                double got = c[m * N + n];
                ok = std::abs(got - want) <= tol * (1 + std::abs(want));
                EXPECT_TRUE(ok) << short_name(d) << " ta=" << ta << " tb=" << tb << " M=" << M << " alpha=" << alpha
                                << " beta=" << beta << " at (" << m << "," << n << "): " << got << " vs " << want;
              }
          }
        }
  }
}

}  // namespace
}  // namespace graft
