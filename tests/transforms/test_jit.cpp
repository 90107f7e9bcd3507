// jit: the trace cache, static arguments, compile logging, and the errors of traced code.
#include <cstdlib>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

TEST(Jit, TracesOncePerSignature) {
  int traces = 0;
  auto f = jit([&traces](const Array& x) {
    ++traces;
    return x * 2.0 + 1.0;
  });
  Array a = array({1.0f, 2.0f}), b = array({3.0f, 4.0f});
  EXPECT_TRUE(close(f(a), array({3.0f, 5.0f})));
  EXPECT_TRUE(close(f(b), array({7.0f, 9.0f})));
  EXPECT_EQ(traces, 1);
  f(array({1.0f, 2.0f, 3.0f}));  // new shape
  EXPECT_EQ(traces, 2);
  f(array({1.0, 2.0}));  // new dtype
  EXPECT_EQ(traces, 3);
  f(a);
  EXPECT_EQ(traces, 3);
  EXPECT_EQ(f.num_traces(), 3u);
  auto copy = f;  // copies share the cache
  copy(b);
  EXPECT_EQ(traces, 3);
}

TEST(Jit, WeakTypeIsPartOfTheKey) {
  int traces = 0;
  auto f = jit([&traces](const Array& x) {
    ++traces;
    return x;
  });
  f(Array(2.0f));        // weak
  f(array(2.0f));        // strong
  EXPECT_EQ(traces, 2);
}

TEST(Jit, StaticArgumentsKeyTheCache) {
  int traces = 0;
  auto f = jit([&traces](const Array& x, int n, const std::string& mode) {
    ++traces;
    Array y = x;
    for (int i = 0; i < n; ++i) y = y * 2.0;  // Python-style loop over a static count
    return mode == "neg" ? -y : y;
  });
  Array x = array({1.0f});
  EXPECT_NEAR(f(x, 3, std::string("pos")).item<float>(), 8, 0);
  EXPECT_NEAR(f(x, 3, std::string("neg")).item<float>(), -8, 0);
  EXPECT_NEAR(f(x, 2, std::string("pos")).item<float>(), 4, 0);
  EXPECT_NEAR(f(x, 3, std::string("pos")).item<float>(), 8, 0);
  EXPECT_EQ(traces, 3);
}

// Regression: static doubles were keyed by their 6-digit printing, so the second call below returned
// the first call's result.
TEST(Jit, StaticFloatsKeyTheCacheByTheirExactValue) {
  auto f = jit([](const Array& x, double s) { return x * s; });
  Array x = array({1.0});
  EXPECT_EQ(f(x, 0.1234561).item<double>(), 0.1234561);
  EXPECT_EQ(f(x, 0.1234564).item<double>(), 0.1234564);
  EXPECT_EQ(f(x, 1e-300).item<double>(), 1e-300);
  EXPECT_EQ(f(x, 1.0000000000000002).item<double>(), 1.0000000000000002);
  EXPECT_EQ(f.num_traces(), 4u);
  EXPECT_EQ(f(x, 0.1234561).item<double>(), 0.1234561);
  EXPECT_EQ(f.num_traces(), 4u);
  // 0.0 and -0.0 compare equal but are different values
  EXPECT_TRUE(std::signbit(f(array({1.0}), -0.0).item<double>()));
  EXPECT_FALSE(std::signbit(f(array({1.0}), 0.0).item<double>()));
}

TEST(Jit, StaticArgumentsOfDifferentTypesAreDifferentKeys) {
  // a generic function called with 1 and 1.0: int and double arguments must not share a trace
  int traces = 0;
  auto f = jit([&traces](const Array& x, auto s) {
    ++traces;
    return std::is_integral_v<decltype(s)> ? x + 100.0 : x * static_cast<double>(s);
  });
  Array x = array({2.0});
  EXPECT_EQ(f(x, 1).item<double>(), 102.0);
  EXPECT_EQ(f(x, 1.0).item<double>(), 2.0);
  EXPECT_EQ(traces, 2);
}

TEST(Jit, StaticStringsAndContainersAreKeyedUnambiguously) {
  // strings are length-prefixed: ("a|", "b") and ("a", "|b") used to spell the same key
  auto f = jit([](const Array& x, const std::string& a, const std::string& b) {
    return x + static_cast<double>(a.size() * 10 + b.size());
  });
  Array x = array({0.0});
  EXPECT_EQ(f(x, std::string("a|"), std::string("b")).item<double>(), 21.0);
  EXPECT_EQ(f(x, std::string("a"), std::string("|b")).item<double>(), 12.0);
  auto g = jit([](const Array& x, const std::vector<double>& w) {
    Array y = x;
    for (double v : w) y = y * v;
    return y;
  });
  EXPECT_EQ(g(array({1.0}), std::vector<double>{0.1234561}).item<double>(), 0.1234561);
  EXPECT_EQ(g(array({1.0}), std::vector<double>{0.1234564}).item<double>(), 0.1234564);
  EXPECT_EQ(g(array({1.0}), std::vector<double>{2.0, 3.0}).item<double>(), 6.0);
}

TEST(Jit, DictKeysWithSeparatorsKeyTheCacheUnambiguously) {
  // {"a:*,b": x} and {"a": x, "b": y} spelled the same structure string
  auto f = jit([](const std::map<std::string, Array>& m) {
    Array s = zeros({}, DType::f64);
    for (auto& [k, v] : m) s = s + sum(v) * static_cast<double>(k.size());
    return s;
  });
  std::map<std::string, Array> one{{"a:*,b", array({1.0, 1.0})}};
  std::map<std::string, Array> two{{"a", array({1.0})}, {"b", array({1.0})}};
  EXPECT_EQ(f(one).item<double>(), 10.0);
  EXPECT_EQ(f(two).item<double>(), 2.0);
  Tree t1 = Tree::dict({{"x', 'y", Tree(array({1.0}))}});
  Tree t2 = Tree::dict({{"x", Tree(array({1.0}))}, {"y", Tree()}});
  EXPECT_NE(t1.structure(), t2.structure());
}

TEST(Jit, LargeIntegerConstantsKeepTheirExactValue) {
  // 2^60 and 2^60 + 1 were equal through a conversion to double: CSE merged them and generated loops
  // baked in 2^60 for both
  int64_t a = int64_t(1) << 60, b = a + 1;
  uint64_t c = 0x9E3779B97F4A7C15ULL;
  Array A = Array::from_data(&a, {}, DType::i64), B = Array::from_data(&b, {}, DType::i64);
  Array C = Array::from_data(&c, {}, DType::u64);
  auto f = jit([&](const Array& x) { return std::vector<Array>{x + A, x + B, x * 3 + B}; });
  auto r = f(zeros({5}, DType::i64));
  EXPECT_EQ(r[0][4].item<int64_t>(), a);
  EXPECT_EQ(r[1][4].item<int64_t>(), b);
  EXPECT_EQ(r[2][4].item<int64_t>(), b);
  auto g = jit([&](const Array& x) { return (x ^ C) + C; });
  uint64_t one = 1;
  Array u = g(full({3}, 0, DType::u64) + Array::from_data(&one, {}, DType::u64));
  EXPECT_EQ(u[2].item<uint64_t>(), (1 ^ c) + c);
}

TEST(Jit, LogCompilesSaysWhy) {
  setenv("GRAFT_LOG_COMPILES", "1", 1);
  auto f = jit([](const Array& x) { return x + 1.0; }, {.name = "adder"});
  ::testing::internal::CaptureStderr();
  f(array({1.0f, 2.0f}));
  f(array({1.0f, 2.0f}));
  f(array({1.0f, 2.0f, 3.0f}));
  std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("GRAFT_LOG_COMPILES");
  EXPECT_NE(log.find("tracing jit(adder) for (f32[2]) -- first call"), std::string::npos) << log;
  EXPECT_NE(log.find("array argument 0 changed from f32[2] to f32[3]"), std::string::npos) << log;
  // exactly two traces were logged (the second call hit the cache)
  size_t n = 0;
  for (size_t p = log.find("tracing jit"); p != std::string::npos; p = log.find("tracing jit", p + 1)) ++n;
  EXPECT_EQ(n, 2u);
}

TEST(Jit, ClosedOverArraysAreConstants) {
  Array w = array({1.0f, 2.0f});
  auto f = jit([&w](const Array& x) { return x * w; });
  EXPECT_TRUE(close(f(array({3.0f, 3.0f})), array({3.0f, 6.0f})));
  auto j = make_jaxpr(f)(array({3.0f, 3.0f}));
  // the outer jaxpr holds w as a constvar, passed to the jit call as an argument
  EXPECT_EQ(j.jaxpr->constvars.size(), 1u);
  EXPECT_EQ(j.consts.size(), 1u);
}

TEST(Jit, MultipleOutputsAndPytrees) {
  auto f = jit([](const Array& x, const Array& y) { return std::make_tuple(x + y, x * y, std::vector<Array>{x - y}); });
  auto [s, p, d] = f(array({1.0f}), array({2.0f}));
  EXPECT_EQ(s.item<float>(), 3);
  EXPECT_EQ(p.item<float>(), 2);
  EXPECT_EQ(d[0].item<float>(), -1);
}

TEST(Jit, MatchesEagerOnAModel) {
  Rng rng(3);
  Array W1 = rng.uniform({8, 16}), b1 = rng.uniform({16}), W2 = rng.uniform({16, 3});
  Array x = rng.uniform({5, 8});
  Array labels = one_hot(array({0, 2, 1, 1, 0}), 3);
  auto loss = [&](const Array& W1, const Array& x) {
    Array h = relu(matmul(x, W1) + b1);
    return -mean(sum(log_softmax(matmul(h, W2)) * labels, -1));
  };
  auto eager = value_and_grad(loss)(W1, x);
  auto jitted = jit(value_and_grad(loss))(W1, x);
  EXPECT_TRUE(close(jitted.first, eager.first, 1e-6));
  EXPECT_TRUE(close(jitted.second, eager.second, 1e-5, 1e-6));
}

TEST(Jit, ConcretizationErrorNamesTheTransformation) {
  auto f = [](const Array& x) -> Array {
    if (x > 0.0) return x;  // branching on a traced value
    return -x;
  };
  try {
    jit(f)(array(1.0f));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("jit"), std::string::npos) << m;
    EXPECT_NE(m.find("bool[]"), std::string::npos) << m;
    EXPECT_NE(m.find("where"), std::string::npos) << m;  // says what to use instead
  }
  try {
    vmap(f)(array({1.0f, -1.0f}));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("vmap"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jit([](const Array& x) { return array(x.item<float>()); })(array(1.0f)), ConcretizationError);
}

TEST(Jit, LeakedTracerIsReported) {
  Array leaked;
  auto f = [&leaked](const Array& x) {
    leaked = x * 2.0;
    return x;
  };
  jit(f)(array(1.0f));
  try {
    Array y = leaked + 1.0;
    FAIL() << "using a leaked tracer must fail";
  } catch (const TracerLeakError& e) {
    EXPECT_NE(std::string(e.what()).find("leaked"), std::string::npos) << e.what();
  }
}

TEST(Jit, DonatedArgumentsAreUpdatedInPlaceAndDeleted) {
  // p - 0.1 * g is one fused loop: its output takes the donated p's buffer
  auto step = jit([](const Array& p, const Array& g) { return p - g * 0.1; }, {.name = "sgd", .donate_argnums = {0}});
  Rng rng(3);
  Array p = rng.uniform({1000}), g = rng.uniform({1000});
  Array expect = p - g * 0.1;
  const void* storage = p.raw_data();
  Array p2 = step(p, g);
  EXPECT_TRUE(close(p2, expect, 0, 0));
  EXPECT_EQ(p2.raw_data(), storage);  // in place
  EXPECT_TRUE(p.concrete()->deleted());
  EXPECT_FALSE(g.concrete()->deleted());  // not donated
  // every later use of the donated array is a clear error, eager or jitted
  expect_throws<ValueError>([&] { p.to_vector<float>(); }, "donated");
  expect_throws<ValueError>([&] { (void)(p + 1.0); }, "donated");
  expect_throws<ValueError>([&] { step(p, g); }, "donated");
  EXPECT_NE(to_string(p).find("deleted"), std::string::npos);
  // the result feeds the next call, which updates it in place again
  Array p3 = step(p2, g);
  EXPECT_TRUE(close(p3, expect - g * 0.1, 1e-6));
  EXPECT_EQ(p3.raw_data(), storage);
  EXPECT_EQ(step.num_traces(), 1u);
}

TEST(Jit, DonationTakesEveryLeafOfATree) {
  auto step = jit([](const Tree& p, const Array& x) { return Tree::dict({{"w", p["w"].array() * x}, {"b", p["b"].array() + x}}); },
                  {.donate_argnums = {0}});
  Array w = array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f}), b = array({1.0f, 1.0f, 1.0f, 1.0f, 1.0f});
  Tree p = Tree::dict({{"w", w}, {"b", b}});
  Tree q = step(p, array({2.0f, 2.0f, 2.0f, 2.0f, 2.0f}));
  EXPECT_TRUE(close(q["w"].array(), array({2.0f, 4.0f, 6.0f, 8.0f, 10.0f})));
  EXPECT_TRUE(close(q["b"].array(), array({3.0f, 3.0f, 3.0f, 3.0f, 3.0f})));
  EXPECT_TRUE(w.concrete()->deleted());
  EXPECT_TRUE(b.concrete()->deleted());
}

TEST(Jit, SharedStorageIsNotTakenByDonation) {
  auto f = jit([](const Array& a, const Array& b) { return a * 2.0 + b; }, {.donate_argnums = {0}});
  // a view sharing its buffer with a live array is read, not taken
  Array base = arange(0.0, 12.0).astype(f32);
  Array view = reshape(base, {12});
  Array r = f(view, base);
  EXPECT_TRUE(close(r, base * 3.0));
  EXPECT_FALSE(base.concrete()->deleted());
  // an array passed both as the donated and as another argument is not taken either
  Array x = arange(0.0, 12.0).astype(f32);
  EXPECT_TRUE(close(f(x, x), x * 3.0));
  EXPECT_FALSE(x.concrete()->deleted());
  // nor under another transformation: donation applies to eager calls only
  Array y = arange(0.0, 12.0).astype(f32);
  Array gy = grad([&](const Array& v) { return sum(f(v, v)); })(y);
  EXPECT_TRUE(close(gy, full_like(y, 3.0)));
  EXPECT_FALSE(y.concrete()->deleted());
}

TEST(Jit, DonateArgnumsIsChecked) {
  auto f = jit([](const Array& a, int k) { return a * double(k); }, {.name = "scale", .donate_argnums = {1}});
  expect_throws<TypeError>([&] { f(array({1.0f}), 2); }, "jit(scale): donated argument 1 is static");
  auto g = jit([](const Array& a) { return a; }, {.name = "id", .donate_argnums = {3}});
  expect_throws<ValueError>([&] { g(array({1.0f})); }, "donate_argnums has 3");
}

TEST(Jit, DonationLowersThePeakOfATrainingStep) {
  // SGD with momentum on a 2-layer MLP: the new velocity and parameters need fresh buffers unless the
  // old ones are donated (each gradient is taken over by one of the two updates)
  auto loss = [](const Tree& p, const Array& x) {
    return sum(square(matmul(relu(matmul(x, p["w1"].array())), p["w2"].array())));
  };
  auto step = [&](const Tree& p, const Tree& v, const Array& x) {
    Tree g = grad(loss)(p, x);
    std::map<std::string, Tree> np, nv;
    for (const char* k : {"w1", "w2"}) {
      Array vk = v[k].array() * 0.9 + g[k].array();
      nv[k] = vk;
      np[k] = p[k].array() - vk * 0.01;
    }
    return std::make_pair(Tree(np), Tree(nv));
  };
  Rng rng(1);
  Tree p = Tree::dict({{"w1", rng.uniform({64, 256})}, {"w2", rng.uniform({256, 32})}});
  Tree v = Tree::dict({{"w1", rng.uniform({64, 256})}, {"w2", rng.uniform({256, 32})}});
  Array x = rng.uniform({16, 64});
  auto expect = jit(step)(p, v, x);
  ClosedJaxpr j = make_jaxpr(step)(p, v, x);
  Executable plain(j), donating(j, "step", {true, true, true, true, false});
  int64_t param_bytes = (64 * 256 + 256 * 32) * 4, x_bytes = 16 * 64 * 4;
  EXPECT_EQ(plain.argument_bytes(), 2 * param_bytes + x_bytes);
  EXPECT_EQ(donating.argument_bytes(), x_bytes);
  // a call's whole footprint: without donation the old and new values of w1 (at least) coexist
  int64_t without = plain.argument_bytes() + plain.peak_bytes(), with = donating.argument_bytes() + donating.peak_bytes();
  EXPECT_LE(with + 64 * 256 * 4, without) << with << " vs " << without;
  auto jitted = jit(step, {.donate_argnums = {0, 1}});
  auto [np, nv] = jitted(p, v, x);
  for (const char* k : {"w1", "w2"}) {
    EXPECT_TRUE(close(np[k].array(), expect.first[k].array(), 1e-6));
    EXPECT_TRUE(close(nv[k].array(), expect.second[k].array(), 1e-6));
    EXPECT_TRUE(p[k].array().concrete()->deleted());
  }
}

TEST(Jit, ShapeErrorsNameOpShapesAndDtypes) {
  try {
    add(ones({3}), ones({4}));
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("(3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(4)"), std::string::npos) << m;
  }
  try {
    lax::add(ones({3}), ones({3}, i32));
    FAIL();
  } catch (const TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[3]"), std::string::npos) << m;
    EXPECT_NE(m.find("i32[3]"), std::string::npos) << m;
  }
  try {
    matmul(ones({2, 3}), ones({4, 5}));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
  // the same checks fire while tracing
  EXPECT_THROW(jit([](const Array& x) { return lax::sin(x.astype(i32)); })(array(1.0f)), TypeError);
}

// ---- custom derivatives ------------------------------------------------------------------------------
TEST(Custom, CustomJvpIsUsedByEveryTransformation) {
  int rule_calls = 0;
  // log(1 + exp(x)) with a stable derivative rule
  auto softplus_c = custom_jvp([](const Array& x) { return log1p(exp(x)); },
                               [&rule_calls](const std::vector<Array>& p, const std::vector<Array>& t) {
                                 ++rule_calls;
                                 Array y = log1p(exp(p[0]));
                                 return std::make_pair(y, t[0] * sigmoid(p[0]));
                               });
  Array x = array({-1.0, 0.0, 2.0});
  EXPECT_TRUE(close(softplus_c(x), log1p(exp(x))));
  EXPECT_EQ(rule_calls, 0);  // eager evaluation does not need the rule
  auto f = [&](const Array& x) { return sum(softplus_c(x)); };
  EXPECT_TRUE(close(grad(f)(x), sigmoid(x), 1e-12));
  EXPECT_GT(rule_calls, 0);
  EXPECT_TRUE(close(jvp(softplus_c, {x}, {ones_like(x)}).second, sigmoid(x), 1e-12));
  EXPECT_TRUE(close(jit(grad(f))(x), sigmoid(x), 1e-12));
  EXPECT_TRUE(close(vmap(grad(f))(stack({x, -x})), stack({sigmoid(x), sigmoid(-x)}), 1e-12));
  // second derivative through the rule (the rule is itself differentiable)
  EXPECT_TRUE(close(grad([&](const Array& x) { return sum(grad(f)(x)); })(x), sigmoid(x) * (1.0 - sigmoid(x)), 1e-12));
  EXPECT_NE(make_jaxpr(f)(x).str().find("custom_jvp_call"), std::string::npos);
}

TEST(Custom, CustomJvpOverridesTheDerivative) {
  // a deliberately different rule proves the rule (not autodiff of the body) is used
  auto f = custom_jvp([](const Array& x) { return x * x; },
                      [](const std::vector<Array>& p, const std::vector<Array>& t) {
                        return std::make_pair(p[0] * p[0], t[0] * 100.0);
                      });
  EXPECT_NEAR(grad([&](const Array& x) { return f(x); })(array(3.0)).item<double>(), 100, 1e-12);
}

TEST(Custom, CustomVjp) {
  // clip the gradient to [-1, 1] in the backward pass
  auto clip_grad = custom_vjp([](const Array& x) { return x; },
                              [](const std::vector<Array>& p) { return std::make_pair(p[0], std::vector<Array>{}); },
                              [](const std::vector<Array>&, const Array& ct) {
                                return std::vector<Array>{clip(ct, Array(-1.0), Array(1.0))};
                              });
  auto f = [&](const Array& x) { return sum(clip_grad(x) * array({5.0, 0.5, -3.0})); };
  Array x = array({1.0, 2.0, 3.0});
  EXPECT_TRUE(close(grad(f)(x), array({1.0, 0.5, -1.0}), 1e-12));
  EXPECT_TRUE(close(jit(grad(f))(x), array({1.0, 0.5, -1.0}), 1e-12));
  // vmap of a custom_vjp function, and grad through it
  auto g = [&](const Array& x) { return sum(vmap(clip_grad)(x) * 5.0); };
  EXPECT_TRUE(close(grad(g)(stack({x, x})), ones({2, 3}, f64), 1e-12));
  // forward mode is refused, as in JAX
  EXPECT_THROW(jvp(clip_grad, {x}, {x}), TypeError);
}

TEST(Custom, CustomVjpResidualsFromForward) {
  // y = exp(x); bwd uses the saved output
  auto myexp = custom_vjp([](const Array& x) { return exp(x); },
                          [](const std::vector<Array>& p) {
                            Array y = exp(p[0]);
                            return std::make_pair(y, std::vector<Array>{y});
                          },
                          [](const std::vector<Array>& res, const Array& ct) { return std::vector<Array>{ct * res[0]}; });
  Array x = array({0.5, -1.0});
  EXPECT_TRUE(close(grad([&](const Array& x) { return sum(myexp(x) * x); })(x), exp(x) * (x + 1.0), 1e-12));
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {
using namespace graft::testing;

TEST(Jit, CompileTimeEvalKeepsConstantsConcrete) {
  bool concrete_inside = false, traced_inside = true;
  auto f = jit([&](const Array& x) {
    Array c, y;
    {
      CompileTimeEvalScope eval;
      c = sum(array({1.0f, 2.0f, 3.0f}));  // constants only: computed now
      y = x * c;                            // a traced operand: staged into the program as usual
    }
    concrete_inside = c.is_concrete();
    traced_inside = y.is_tracer();
    // a value known while tracing can drive C++ control flow
    return c.item<float>() > 5.0f ? y + 1.0f : y - 1.0f;
  });
  EXPECT_TRUE(close(f(array({1.0f, 2.0f})), array({7.0f, 13.0f})));
  EXPECT_TRUE(concrete_inside);
  EXPECT_TRUE(traced_inside);
  // without the scope the same sum is traced, and asking for its value is an error
  auto g = jit([](const Array& x) {
    Array c = sum(array({1.0f, 2.0f, 3.0f}));
    return c.item<float>() > 5.0f ? x : -x;
  });
  EXPECT_THROW(g(array({1.0f})), ConcretizationError);
  // the scope nests inside grad and vmap as well
  auto h = grad([](const Array& x) {
    CompileTimeEvalScope eval;
    Array k = exp(Array(0.0f));
    return sum(x * x * k);
  });
  EXPECT_TRUE(close(h(array({1.0f, 3.0f})), array({2.0f, 6.0f})));
}

}  // namespace
}  // namespace graft
