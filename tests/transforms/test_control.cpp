// Structured control flow: cond / switch_, while_loop, fori_loop, scan — against plain C++ loops,
// finite differences (f64), vmap against a loop of calls, jit against eager, golden jaxprs, errors.
#include <cmath>
#include <pthread.h>

#include <thread>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

// ---- cond -----------------------------------------------------------------------------------------------

Array piecewise(const Array& x) {
  return cond(
      sum(x) > 0.0, [](const Array& v) { return sin(v) * v; }, [](const Array& v) { return cos(v) + v * v; }, x);
}

TEST(Cond, PicksTheBranchEagerlyAndUnderJit) {
  Array pos = array({0.5, 1.5, -0.25}), neg = array({-0.5, 0.25, -1.0});
  auto ref = [](const std::vector<double>& v, bool t) {
    std::vector<double> r;
    for (double e : v) r.push_back(t ? std::sin(e) * e : std::cos(e) + e * e);
    return r;
  };
  auto jf = jit(piecewise);
  for (auto [x, t] : {std::pair{pos, true}, std::pair{neg, false}}) {
    auto want = concrete(ref(values(x), t), x.shape(), f64);
    EXPECT_TRUE(close(piecewise(x), want, 1e-12, 1e-12));
    EXPECT_TRUE(close(jf(x), want, 1e-12, 1e-12));
  }
  EXPECT_EQ(jf.num_traces(), 1u);  // one trace serves both branches
}

TEST(Cond, SwitchClampsTheIndex) {
  std::vector<std::function<Array(const Array&)>> fs{[](const Array& v) { return v + 1.0; },
                                                     [](const Array& v) { return v * 10.0; },
                                                     [](const Array& v) { return -v; }};
  Array x = array({2.0f, 3.0f});
  for (int i : {-3, 0, 1, 2, 7}) {
    int k = std::clamp(i, 0, 2);
    Array want = k == 0 ? x + 1.0 : k == 1 ? x * 10.0 : -x;
    EXPECT_TRUE(close(switch_(array(i).astype(i32), fs, x), want)) << i;
  }
}

TEST(Cond, CapturedArraysBecomeOperands) {
  Array w = array({1.0, 2.0, 3.0});
  auto f = [&](const Array& x) {
    return cond(x > 0.0, [&] { return w * x; }, [&] { return w - x; });
  };
  auto j = make_jaxpr(f)(array(1.0));
  // the captured w is an explicit operand of cond, not a constant inside a branch
  EXPECT_EQ(j.jaxpr->eqns.back().inputs.size(), 3u);  // index, w, x
  for (auto& b : j.jaxpr->eqns.back().params.get_jaxprs("branches")) EXPECT_TRUE(b->consts.empty());
  EXPECT_TRUE(close(f(array(2.0)), w * 2.0));
  EXPECT_TRUE(close(f(array(-2.0)), w + 2.0));
}

TEST(Cond, GoldenJaxpr) {
  auto f = [](const Array& x) {
    return cond(x > 0.0f, [](const Array& v) { return sin(v); }, [](const Array& v) { return cos(v); }, x);
  };
  EXPECT_EQ(testing::golden(make_jaxpr(f)(array(1.0f))),
            "{ lambda ; a:f32[]. let\n"
            "    b:bool[] = gt a 0.0:f32[]\n"
            "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b\n"
            "    d:f32[] = cond[\n"
            "      branches=(\n"
            "        { lambda ; e:f32[]. let f:f32[] = cos e in (f,) }\n"
            "        { lambda ; g:f32[]. let h:f32[] = sin g in (h,) }\n"
            "      )\n"
            "    ] c a\n"
            "  in (d,) }");
}

TEST(Cond, JvpAndGradMatchFiniteDifferences) {
  for (auto v : {std::vector<double>{0.5, 1.5, -0.25}, std::vector<double>{-0.5, 0.25, -1.0}}) {
    Array x = concrete(v, {3}, f64);
    auto loss = [](const Array& x) { return sum(piecewise(x)); };
    Array want = num_grad(loss, x);
    EXPECT_TRUE(close(grad(loss)(x), want, 1e-7, 1e-8));
    EXPECT_TRUE(close(jit(grad(loss))(x), want, 1e-7, 1e-8));
    EXPECT_TRUE(close(grad(jit(loss))(x), want, 1e-7, 1e-8));
    Array t = concrete({1.0, -2.0, 0.5}, {3}, f64);
    auto [y, dy] = jvp(piecewise, {x}, {t});
    Array fd = (piecewise(x + t * 1e-6) - piecewise(x - t * 1e-6)) / 2e-6;
    EXPECT_TRUE(close(dy, fd, 1e-6, 1e-7));
  }
}

TEST(Cond, SecondDerivative) {
  auto f = [](const Array& x) {
    return cond(x < 1.0, [](const Array& v) { return v * v * v; }, [](const Array& v) { return exp(v); }, x);
  };
  EXPECT_NEAR(grad(grad(f))(array(0.5)).item<double>(), 3.0, 1e-12);
  EXPECT_NEAR(grad(grad(f))(array(2.0)).item<double>(), std::exp(2.0), 1e-9);
}

TEST(Cond, VmapWithBatchedOperandAndBatchedPredicate) {
  Array xs = concrete({0.5, -1.0, 2.0, -0.1}, {4}, f64);
  auto f = [](const Array& x) {
    return cond(x > 0.0, [](const Array& v) { return sqrt(v); }, [](const Array& v) { return v * 3.0; }, x);
  };
  Array got = vmap(f)(xs);
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(values(got)[i], f(xs[i]).item<double>(), 1e-12) << i;
  // unbatched predicate, batched operand
  Array p = array(true);
  auto g = [&](const Array& x) {
    return cond(p, [](const Array& v) { return v + 1.0; }, [](const Array& v) { return v - 1.0; }, x);
  };
  EXPECT_TRUE(close(vmap(g)(xs), xs + 1.0));
  EXPECT_TRUE(close(jit(vmap(f))(xs), got));
}

TEST(Cond, ErrorsNameTheTypes) {
  Array x = array({1.0f, 2.0f});
  try {
    cond(array(true), [](const Array& v) { return v; }, [](const Array& v) { return sum(v); }, x);
    FAIL() << "no error";
  } catch (const TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("f32[2]"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[]"), std::string::npos) << m;
  }
  try {
    cond(array(1.5f), [](const Array& v) { return v; }, [](const Array& v) { return v; }, x);
    FAIL() << "no error";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("predicate must be a boolean"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cond(array({true, false}), [](const Array& v) { return v; }, [](const Array& v) { return v; }, x),
               TypeError);
}

// ---- scan -----------------------------------------------------------------------------------------------

// an RNN cell: h' = tanh(W h + U x + b), y = h'
std::pair<Array, Array> rnn(const Array& W, const Array& U, const Array& b, const Array& h0, const Array& xs) {
  return scan([&](const Array& h, const Array& x) {
    Array hn = tanh(matmul(W, h) + matmul(U, x) + b);
    return std::pair{hn, hn * 2.0};
  }, h0, xs);
}

TEST(Scan, MatchesALoop) {
  Rng rng(3);
  Array W = rng.uniform({4, 4}, f64) * 0.5, U = rng.uniform({4, 3}, f64), b = rng.uniform({4}, f64);
  Array h0 = rng.uniform({4}, f64), xs = rng.uniform({6, 3}, f64);
  auto [h, ys] = rnn(W, U, b, h0, xs);
  Array r = h0;
  for (int64_t t = 0; t < 6; ++t) {
    r = tanh(matmul(W, r) + matmul(U, xs[t]) + b);
    EXPECT_TRUE(close(ys[t], r * 2.0, 1e-12, 1e-12)) << t;
  }
  EXPECT_TRUE(close(h, r, 1e-12, 1e-12));
  auto jr = jit([](const Array& W, const Array& U, const Array& b, const Array& h0, const Array& xs) {
    return rnn(W, U, b, h0, xs);
  });
  auto [jh, jys] = jr(W, U, b, h0, xs);
  EXPECT_TRUE(close(jh, h, 1e-12, 1e-12));
  EXPECT_TRUE(close(jys, ys, 1e-12, 1e-12));
}

TEST(Scan, ReverseAndLengthWithoutXs) {
  Array xs = array({1.0, 2.0, 3.0});
  auto [c, ys] = scan([](const Array& c, const Array& x) { return std::pair{c * 10.0 + x, c}; }, array(0.0), xs,
                      ScanOptions{std::nullopt, true});
  EXPECT_DOUBLE_EQ(c.item<double>(), 321.0);  // 3, then 32, then 321
  EXPECT_EQ(values(ys), (std::vector<double>{32.0, 3.0, 0.0}));  // ys stored at their index
  auto [n, none] = scan([](const Array& c, const std::vector<Array>&) { return std::pair{c + 1.0, std::vector<Array>{}}; },
                        array(0.0), std::vector<Array>{}, ScanOptions{5});
  EXPECT_DOUBLE_EQ(n.item<double>(), 5.0);
  EXPECT_DOUBLE_EQ(fori_loop(0, 10, [](const Array& i, const Array& c) { return c + i.astype(f64); }, array(0.0))
                       .item<double>(),
                   45.0);
}

TEST(Scan, GoldenJaxpr) {
  auto f = [](const Array& c, const Array& xs) {
    return scan([](const Array& c, const Array& x) { return std::pair{c + x, c * x}; }, c, xs);
  };
  EXPECT_EQ(testing::golden(make_jaxpr(f)(array(0.0f), array({1.0f, 2.0f}))),
            "{ lambda ; a:f32[] b:f32[2]. let\n"
            "    c:f32[] d:f32[2] = scan[\n"
            "      ft_in=((), (None,), (None,))\n"
            "      ft_out=((None,), (RightsOnly(Right(None)),))\n"
            "      jaxpr={ lambda ; e:f32[] f:f32[]. let\n"
            "          g:f32[] = add e f\n"
            "          h:f32[] = mul e f\n"
            "        in (g, h) }\n"
            "      length=2\n"
            "      reverse=False\n"
            "      unroll=1\n"
            "    ] a b\n"
            "  in (c, d) }");
}

TEST(Scan, GradientsMatchFiniteDifferences) {
  Rng rng(5);
  Array W = rng.uniform({3, 3}, f64) * 0.5, U = rng.uniform({3, 2}, f64), b = rng.uniform({3}, f64);
  Array h0 = rng.uniform({3}, f64), xs = rng.uniform({5, 2}, f64);
  auto loss = [&](const Array& W, const Array& U, const Array& b, const Array& h0, const Array& xs) {
    auto [h, ys] = rnn(W, U, b, h0, xs);
    return sum(h * h) + sum(sin(ys));
  };
  std::vector<Array> args{W, U, b, h0, xs};
  auto g = grad(loss, {0, 1, 2, 3, 4})(W, U, b, h0, xs);
  auto jg = jit(grad(loss, {0, 1, 2, 3, 4}))(W, U, b, h0, xs);
  auto gj = grad(jit(loss), {0, 1, 2, 3, 4})(W, U, b, h0, xs);
  for (size_t k = 0; k < args.size(); ++k) {
    auto fk = [&](const Array& v) {
      std::vector<Array> a = args;
      a[k] = v;
      return loss(a[0], a[1], a[2], a[3], a[4]);
    };
    Array want = num_grad(fk, args[k]);
    EXPECT_TRUE(close(g[k], want, 1e-6, 1e-8)) << k;
    EXPECT_TRUE(close(jg[k], want, 1e-6, 1e-8)) << k;
    EXPECT_TRUE(close(gj[k], want, 1e-6, 1e-8)) << k;
  }
  // forward mode
  Array t = rng.uniform({3, 3}, f64);
  auto fw = [&](const Array& w) { return loss(w, U, b, h0, xs); };
  auto [y, dy] = jvp(fw, {W}, {t});
  double fd = (fw(W + t * 1e-6).item<double>() - fw(W - t * 1e-6).item<double>()) / 2e-6;
  EXPECT_NEAR(dy.item<double>(), fd, 1e-6);
}

TEST(Scan, ConstantInitialCarryIsDifferentiable) {
  // the carry starts as a constant (zero tangent) and picks up a tangent from a const
  auto f = [](const Array& w) {
    return scan([&](const Array& c, const Array& x) { return std::pair{c * w + x, c}; }, array(1.0), array({1.0, 2.0}))
        .first;
  };
  // c1 = w + 1, c2 = (w + 1) w + 2: d/dw = 2w + 1
  EXPECT_NEAR(grad(f)(array(3.0)).item<double>(), 7.0, 1e-12);
  EXPECT_NEAR(grad(grad(f))(array(3.0)).item<double>(), 2.0, 1e-12);
}

TEST(Scan, VmapMatchesALoop) {
  Rng rng(9);
  Array W = rng.uniform({3, 3}, f64) * 0.5, U = rng.uniform({3, 2}, f64), b = rng.uniform({3}, f64);
  Array h0s = rng.uniform({4, 3}, f64), xss = rng.uniform({4, 5, 2}, f64);
  auto f = [&](const Array& h0, const Array& xs) { return rnn(W, U, b, h0, xs); };
  auto [hb, ysb] = vmap(f)(h0s, xss);
  for (int64_t i = 0; i < 4; ++i) {
    auto [h, ys] = f(h0s[i], xss[i]);
    EXPECT_TRUE(close(hb[i], h, 1e-12, 1e-12)) << i;
    EXPECT_TRUE(close(ysb[i], ys, 1e-12, 1e-12)) << i;
  }
  // batched weights (a const) with an unbatched carry
  Array Ws = rng.uniform({4, 3, 3}, f64) * 0.5;
  auto g = [&](const Array& W) { return rnn(W, U, b, h0s[0], xss[0]).first; };
  Array gb = vmap(g)(Ws);
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(close(gb[i], g(Ws[i]), 1e-12, 1e-12)) << i;
}

TEST(Scan, Errors) {
  Array xs = array({1.0f, 2.0f});
  EXPECT_THROW(scan([](const Array& c, const Array& x) { return std::pair{sum(c) + x, c}; }, array({0.0f, 0.0f}), xs),
               TypeError);
  EXPECT_THROW(scan([](const Array& c, const Array& x) { return std::pair{c, x}; }, array(0.0f), array(1.0f)),
               ShapeError);
  EXPECT_THROW(scan([](const Array& c, const std::vector<Array>&) { return std::pair{c, c}; }, array(0.0f),
                    std::vector<Array>{}),
               ValueError);
}

// ---- while_loop ---------------------------------------------------------------------------------------

TEST(While, MatchesALoopEagerlyAndUnderJit) {
  auto f = [](const Array& x) {
    return while_loop([](const Array& v) { return sum(v) < 100.0; }, [](const Array& v) { return v * 2.0 + 1.0; }, x);
  };
  Array x = array({1.0, 2.0});
  std::vector<double> r{1.0, 2.0};
  while (r[0] + r[1] < 100.0) r = {r[0] * 2 + 1, r[1] * 2 + 1};
  EXPECT_EQ(values(f(x)), r);
  EXPECT_EQ(values(jit(f)(x)), r);
  // max_steps bounds the iterations
  auto g = [](const Array& x) {
    return while_loop([](const Array&) { return array(true); }, [](const Array& v) { return v + 1.0; }, x,
                      WhileOptions{7});
  };
  EXPECT_DOUBLE_EQ(g(array(0.0)).item<double>(), 7.0);
}

TEST(While, GoldenJaxpr) {
  auto f = [](const Array& x) {
    return while_loop([](const Array& v) { return v < 10.0f; }, [](const Array& v) { return v * 2.0f; }, x);
  };
  EXPECT_EQ(testing::golden(make_jaxpr(f)(array(1.0f))),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = while[\n"
            "      body_jaxpr={ lambda ; c:f32[]. let d:f32[] = mul c 2.0:f32[] in (d,) }\n"
            "      body_nconsts=0\n"
            "      cond_jaxpr={ lambda ; e:f32[]. let f:bool[] = lt e 10.0:f32[] in (f,) }\n"
            "      cond_nconsts=0\n"
            "    ] a\n"
            "  in (b,) }");
}

// Newton's method for sqrt(a), 1000 iterations counted in the carry
Array newton_sqrt(const Array& a) {
  using C = std::pair<Array, Array>;
  C init{Array::scalar(0, i32), a};
  return while_loop([](const C& c) { return c.first < 1000; },
                    [&](const C& c) { return C{c.first + 1, 0.5 * (c.second + a / c.second)}; }, init)
      .second;
}

TEST(While, GradThroughAThousandIterationsOfNewton) {
  for (double v : {2.0, 9.0, 0.3}) {
    Array a = array(v);
    EXPECT_NEAR(newton_sqrt(a).item<double>(), std::sqrt(v), 1e-12);
    EXPECT_NEAR(grad(newton_sqrt)(a).item<double>(), 0.5 / std::sqrt(v), 1e-10) << v;
    auto [y, dy] = jvp(newton_sqrt, {a}, {array(1.0)});
    EXPECT_NEAR(dy.item<double>(), 0.5 / std::sqrt(v), 1e-10) << v;
  }
}

TEST(While, GradMatchesFiniteDifferencesWithADataDependentTripCount) {
  // iterate until the value exceeds 10: the trip count depends on x, the derivative is piecewise smooth
  auto f = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return while_loop([](const C& c) { return c.second < 10.0; },
                      [](const C& c) { return C{c.first * 1.5 + sin(c.second), c.second + c.first}; }, C{x, x})
        .first;
  };
  for (double v : {0.7, 1.3, 2.9}) {
    Array x = array(v);
    double fd = (f(array(v + 1e-6)).item<double>() - f(array(v - 1e-6)).item<double>()) / 2e-6;
    EXPECT_NEAR(grad(f)(x).item<double>(), fd, 1e-5 * std::max(1.0, std::abs(fd))) << v;
  }
}

TEST(While, ReverseModeUnderJitWithABound) {
  // under jit the trip count is traced: with max_steps the loop's residuals go to bounded buffers
  auto newton = [](const Array& a) {
    return while_loop([&](const Array& x) { return abs(x * x - a) > 1e-12 * a; },
                      [&](const Array& x) { return 0.5 * (x + a / x); }, a, WhileOptions{200});
  };
  for (double v : {2.0, 9.0, 0.3}) {
    EXPECT_NEAR(jit(grad(newton))(array(v)).item<double>(), 0.5 / std::sqrt(v), 1e-9) << v;
    EXPECT_NEAR(grad(jit(newton))(array(v)).item<double>(), 0.5 / std::sqrt(v), 1e-9) << v;
    EXPECT_NEAR(grad(newton)(array(v)).item<double>(), 0.5 / std::sqrt(v), 1e-9) << v;
  }
  // a bound smaller than the trip count stops the loop there, in value and derivative alike
  auto doubling = [](const Array& x) {
    return while_loop([](const Array& v) { return v < 1e6; }, [](const Array& v) { return v * 2.0; }, x,
                      WhileOptions{3});
  };
  EXPECT_DOUBLE_EQ(jit(doubling)(array(1.0)).item<double>(), 8.0);
  EXPECT_DOUBLE_EQ(jit(grad(doubling))(array(1.0)).item<double>(), 8.0);
  EXPECT_DOUBLE_EQ(grad(doubling)(array(1.0)).item<double>(), 8.0);
}

TEST(While, VmapWithABatchedPredicateRunsEachLaneToItsEnd) {
  auto f = [](const Array& x) {
    return while_loop([](const Array& v) { return v < 100.0; }, [](const Array& v) { return v * 3.0; }, x);
  };
  Array xs = array({1.0, 50.0, 200.0, 7.0});
  Array got = vmap(f)(xs);
  for (int64_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(values(got)[i], f(xs[i]).item<double>()) << i;
  EXPECT_TRUE(close(jit(vmap(f))(xs), got));
}

// A predicate the same on every lane (it reads only an unbatched carry) keeps the loop as it is: the
// batched body steps every lane, no select, the counter stays unbatched; the batched carries are as a
// loop of calls gives them. A carry the body makes batched joins the batched ones (fixpoint).
TEST(While, VmapWithAnUnbatchedPredicateNeedsNoSelect) {
  using C = std::pair<Array, Array>;
  auto f = [](const Array& x) {
    C r = while_loop([](const C& c) { return c.first < 4.0; },
                     [](const C& c) { return C{c.first + 1.0, sin(c.second) + c.first}; }, C{array(0.0), x});
    return r.second;
  };
  Array xs = array({0.3, -1.0, 2.5});
  Array got = vmap(f)(xs);
  for (int64_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(values(got)[i], f(xs[i]).item<double>()) << i;
  std::string text = make_jaxpr(vmap(f))(xs).str();
  EXPECT_EQ(text.find("select"), std::string::npos) << text;
  EXPECT_EQ(text.find("reduce_or"), std::string::npos) << text;
  EXPECT_TRUE(close(jit(vmap(f))(xs), got));
  // the counter picks up the batched value after one step: both carries batched, predicate too
  auto g = [](const Array& x) {
    C r = while_loop([](const C& c) { return c.first < 4.0; },
                     [](const C& c) { return C{c.first + c.second * c.second + 0.5, c.second * 0.5}; }, C{array(0.0), x});
    return r.first;
  };
  Array gs = vmap(g)(xs);
  for (int64_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(values(gs)[i], g(xs[i]).item<double>()) << i;
}

TEST(While, ForiLoopWithTracedBounds) {
  auto f = [](const Array& x, const Array& n) {
    return fori_loop(Array::scalar(0, i32), n, [](const Array& i, const Array& c) { return c * 1.5 + i.astype(f64); },
                     x);
  };
  double r = 2.0;
  for (int i = 0; i < 5; ++i) r = r * 1.5 + i;
  Array n = Array::scalar(5, i32);
  EXPECT_DOUBLE_EQ(f(array(2.0), n).item<double>(), r);
  EXPECT_DOUBLE_EQ(jit(f)(array(2.0), n).item<double>(), r);  // the bound is traced: a while loop
  EXPECT_NEAR(grad(f)(array(2.0), n).item<double>(), std::pow(1.5, 5), 1e-12);
}

TEST(While, ErrorsAreClear) {
  EXPECT_THROW(while_loop([](const Array& v) { return v; }, [](const Array& v) { return v; }, array(1.0f)), TypeError);
  EXPECT_THROW(while_loop([](const Array& v) { return v < 1.0f; }, [](const Array& v) { return sum(v); },
                          array({1.0f, 2.0f})),
               TypeError);
  // reverse mode inside jit needs the trip count
  auto f = [](const Array& x) {
    return while_loop([](const Array& v) { return v < 10.0; }, [](const Array& v) { return v * 2.0; }, x);
  };
  EXPECT_THROW(jit(grad(f))(array(1.0)), NotImplementedError);
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {
using namespace graft::testing;

// ---- recursion ------------------------------------------------------------------------------------------

Recursive make_factorial() {
  return Recursive("factorial", [](const Recursive& self, const std::vector<Array>& a) {
    const Array &r = a[0], &x = a[1];
    return std::vector<Array>{cond(x <= 1.0, [&] { return r; }, [&] { return self(r * x, x - 1.0); })};
  });
}

TEST(Recursion, FactorialEagerlyUnderJitJvpAndGrad) {
  Recursive factorial = make_factorial();
  auto f = [&](const Array& r, const Array& x) { return factorial(r, x); };
  Array r = array(1.0), x = array(3.0);
  EXPECT_DOUBLE_EQ(f(r, x).item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(f(r, array(5.0)).item<double>(), 120.0);
  EXPECT_DOUBLE_EQ(jit(f)(r, x).item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(jit(f)(r, array(4.0)).item<double>(), 24.0);  // one trace, any depth
  auto [y, dy] = jvp([&](const Array& r) { return factorial(r, x); }, {r}, {array(1.0)});
  EXPECT_DOUBLE_EQ(dy.item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(grad(f)(r, x).item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(jit(grad(f))(r, x).item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(grad(jit(f))(r, x).item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(jit(grad(f))(array(2.0), array(4.0)).item<double>(), 24.0);
}

TEST(Recursion, TheRecursiveCallIsACallNotAnInfiniteTrace) {
  Recursive factorial = make_factorial();
  std::string s = make_jaxpr([&](const Array& r, const Array& x) { return factorial(r, x); })(array(1.0f), array(3.0f)).str();
  EXPECT_NE(s.find("call[callee=factorial]"), std::string::npos) << s;
}

TEST(Recursion, GradOfARecursionWithWorkAfterTheCall) {
  // f(x, n) = sin(f(x, n - 1)), f(x, 0) = x: the derivative is a product of cosines
  Recursive f("nested_sin", [](const Recursive& self, const std::vector<Array>& a) {
    const Array &x = a[0], &n = a[1];
    return std::vector<Array>{cond(n <= 0.0, [&] { return x; }, [&] { return sin(self(x, n - 1.0)); })};
  });
  double v = 0.7, d = 1.0;
  for (int i = 0; i < 4; ++i) {
    d *= std::cos(v);
    v = std::sin(v);
  }
  auto g = [&](const Array& x) { return f(x, array(4.0)); };
  EXPECT_NEAR(g(array(0.7)).item<double>(), v, 1e-12);
  EXPECT_NEAR(grad(g)(array(0.7)).item<double>(), d, 1e-12);
  auto [y, dy] = jvp(g, {array(0.7)}, {array(1.0)});
  EXPECT_NEAR(dy.item<double>(), d, 1e-12);
  auto jv = jit([&](const Array& x) { return jvp(g, {x}, {array(1.0)}).second; });
  EXPECT_NEAR(jv(array(0.7)).item<double>(), d, 1e-12);
  // under jit the recursion is not unrolled: the backward pass transposes calls of the jvp'd function,
  // computing their primal results forward (the rule that says which results are primal)
  EXPECT_NEAR(jit(grad(g))(array(0.7)).item<double>(), d, 1e-12);
  EXPECT_NEAR(grad(jit(g))(array(0.7)).item<double>(), d, 1e-12);
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {
using namespace graft::testing;

// The seeds' recursion written naively, as JAX users write it: the function calls itself through cond,
// whose branches are both traced, so tracing never ends. It used to overflow the stack.
Array naive_factorial(const Array& x) {
  return cond(x <= 1.0, [](const Array& x) { return ones_like(x); }, [](const Array& x) { return x * naive_factorial(x - 1.0); },
              x);
}

TEST(Recursion, ANaiveRecursionThroughCondIsAnErrorNotACrash) {
  expect_throws<RecursionError>([] { naive_factorial(array(5.0)); }, "graft::Recursive");
  expect_throws<RecursionError>([] { jit(naive_factorial)(array(5.0)); }, "nested");
  expect_throws<RecursionError>([] { grad(naive_factorial)(array(5.0)); }, "cond");
  // the thread is usable afterwards: its trace stack unwound
  EXPECT_DOUBLE_EQ((array(2.0) * 3.0).item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(jit([](const Array& x) { return x + 1.0; })(array(1.0)).item<double>(), 2.0);
}

TEST(Recursion, ANaiveRecursionOnASmallStackIsAnErrorToo) {
  // 1000 levels need more than a 1 MiB stack: the stack check stops it first
  std::string what;
  std::thread t([&] {
    try {
      naive_factorial(array(5.0));
    } catch (const RecursionError& e) {
      what = e.what();
    }
  });
  // std::thread cannot set a stack size: run the same on a pthread with 1 MiB
  t.join();
  EXPECT_NE(what.find("Recursive"), std::string::npos) << what;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(1) << 20);
  pthread_t th;
  static std::string small_what;
  ASSERT_EQ(pthread_create(&th, &attr,
                           [](void*) -> void* {
                             try {
                               naive_factorial(array(5.0));
                             } catch (const RecursionError& e) {
                               small_what = e.what();
                             }
                             return nullptr;
                           },
                           nullptr),
            0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_NE(small_what.find("stack is nearly exhausted"), std::string::npos) << small_what;
}

}  // namespace
}  // namespace graft
