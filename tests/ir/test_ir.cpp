// The IR as a public data structure: build a jaxpr by hand (placeholder style), verify, print,
// evaluate and transform it.
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

// f(x, y) = sin(x) * y, built equation by equation.
ClosedJaxpr sin_times() {
  JaxprBuilder bld;
  VarRef x = bld.add_input(Aval({3}, f32));
  VarRef y = bld.add_input(Aval({3}, f32));
  VarRef s = bld.add_eqn(prims::sin_p, {x})[0];
  VarRef p = bld.add_eqn(prims::mul_p, {s, y})[0];
  bld.set_outputs({p});
  return bld.build();
}

TEST(IR, BuildPrintVerifyEvaluate) {
  ClosedJaxpr j = sin_times();
  EXPECT_NO_THROW(verify(*j.jaxpr));
  EXPECT_EQ(testing::golden(j), "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = sin a; d:f32[3] = mul c b in (d,) }");
  Array x = array({0.5f, 1.0f, 2.0f}), y = array({2.0f, 3.0f, 4.0f});
  Arrays out = eval_jaxpr(j, std::vector<Array>{x, y});
  EXPECT_TRUE(close(out[0], sin(x) * y));
}

TEST(IR, HandBuiltJaxprIsTransformable) {
  ClosedJaxpr j = sin_times();
  auto f = [&](const Array& x, const Array& y) {
    Arrays o = eval_jaxpr(j, std::vector<Array>{x, y});
    return sum(o[0]);
  };
  Array x = array({0.5f, 1.0f, 2.0f}), y = array({2.0f, 3.0f, 4.0f});
  auto g = grad(f, {0, 1})(x, y);
  EXPECT_TRUE(close(g[0], cos(x) * y));
  EXPECT_TRUE(close(g[1], sin(x)));
  // jit and vmap of the evaluator too
  EXPECT_TRUE(close(jit(f)(x, y), f(x, y)));
  Array xs = stack({x, x * 2.0}), ys = stack({y, y});
  EXPECT_TRUE(close(vmap(f)(xs, ys), stack({f(x, y), f(x * 2.0, y)})));
}

TEST(IR, ConstvarsAndLiterals) {
  JaxprBuilder bld;
  VarRef w = bld.add_const(array({1.0f, 2.0f}));
  VarRef x = bld.add_input(Aval({2}, f32));
  VarRef a = bld.add_eqn(prims::mul_p, {x, w})[0];
  VarRef b = bld.add_eqn(prims::add_p, {a, Atom::lit(Array::scalar(1.0, f32))})[0];
  bld.set_outputs({b});
  ClosedJaxpr j = bld.build();
  verify(*j.jaxpr);
  // 84 columns on one line: more than 80, so one equation per line
  EXPECT_EQ(testing::golden(j),
            "{ lambda a:f32[2]; b:f32[2]. let\n    c:f32[2] = mul b a\n    d:f32[2] = add c 1.0:f32[]\n  in (d,) }");
  EXPECT_TRUE(close(eval_jaxpr(j, std::vector<Array>{array({3.0f, 4.0f})})[0], array({4.0f, 9.0f})));
}

TEST(IR, VerifierCatchesIllTypedEquations) {
  auto j = std::make_shared<Jaxpr>();
  VarRef x = make_ref<Var>(Aval({3}, f32));
  VarRef y = make_ref<Var>(Aval({4}, f32));  // wrong: sin keeps the shape
  j->invars = {x};
  j->eqns.push_back(Eqn{&prims::sin_p, {Atom(x)}, {y}, {}});
  j->outvars = {Atom(y)};
  try {
    verify(*j);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("sin"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f32[4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f32[3]"), std::string::npos) << msg;
  }
}

TEST(IR, VerifierCatchesUseBeforeDefinition) {
  auto j = std::make_shared<Jaxpr>();
  VarRef x = make_ref<Var>(Aval({3}, f32));
  VarRef undefined = make_ref<Var>(Aval({3}, f32));
  VarRef y = make_ref<Var>(Aval({3}, f32));
  j->invars = {x};
  j->eqns.push_back(Eqn{&prims::add_p, {Atom(x), Atom(undefined)}, {y}, {}});
  j->outvars = {Atom(y)};
  EXPECT_THROW(verify(*j), Error);
}

TEST(IR, VerifierCatchesRedefinition) {
  auto j = std::make_shared<Jaxpr>();
  VarRef x = make_ref<Var>(Aval({3}, f32));
  j->invars = {x};
  j->eqns.push_back(Eqn{&prims::sin_p, {Atom(x)}, {x}, {}});
  j->outvars = {Atom(x)};
  EXPECT_THROW(verify(*j), Error);
}

TEST(IR, TracedJaxprsVerify) {
  Array v = array({1.0f, 2.0f, 3.0f});
  auto f = [](const Array& x) { return sum(log_softmax(x) * x) + max(x); };
  EXPECT_NO_THROW(verify(*make_jaxpr(f)(v).jaxpr));
  EXPECT_NO_THROW(verify(*make_jaxpr(grad(f))(v).jaxpr));
  EXPECT_NO_THROW(verify(*make_jaxpr(hessian(f))(v).jaxpr));
  EXPECT_NO_THROW(verify(*make_jaxpr(vmap(grad(f)))(stack({v, v})).jaxpr));
}

TEST(IR, NamesContinuePastZ) {
  auto f = [](const Array& x) {
    Array y = x;
    for (int i = 0; i < 30; ++i) y = sin(y);
    return y;
  };
  std::string s = make_jaxpr(f)(array(1.0f)).str();
  EXPECT_NE(s.find("ba:f32[] = sin z"), std::string::npos) << s;
  EXPECT_NE(s.find("in (be,) }"), std::string::npos) << s;
}

TEST(IR, UnusedResultsPrintAsUnderscore) {
  auto f = [](const Array& x) {
    Array unused = exp(x);
    (void)unused;
    return x * 2.0;
  };
  EXPECT_EQ(testing::golden(make_jaxpr(f)(array(1.0f))),
            "{ lambda ; a:f32[]. let _:f32[] = exp a; b:f32[] = mul a 2.0:f32[] in (b,) }");
}

TEST(IR, LiteralSpellings) {
  auto f = [](const Array& x) { return x * 1e-05 + 1e16 + 0.1; };
  EXPECT_EQ(testing::golden(make_jaxpr(f)(array(1.0f))),
            "{ lambda ; a:f32[]. let\n    b:f32[] = mul a 1e-05:f32[]\n    c:f32[] = add b 1e+16:f32[]\n"
            "    d:f32[] = add c 0.1:f32[]\n  in (d,) }");
  auto g = [](const Array& x) { return where(x > 0, x, x + 3); };
  EXPECT_EQ(testing::golden(make_jaxpr(g)(array({1, 2}))),
            "{ lambda ; a:i32[2]. let\n    b:i32[2] = add a 3:i32[]\n    c:bool[2] = gt a 0:i32[]\n"
            "    d:i32[2] = select_n c b a\n  in (d,) }");
}

}  // namespace
}  // namespace graft
