// Transformations composed in any order and depth.
#include "graft/transforms/control.h"
#include "graft/transforms/remat.h"
#include "testing.h"

// Structs registered as pytree nodes (graft/transforms/pytree.h): children only, and children with a
// static field that jit keys its cache on.
namespace test_nodes {
struct Layer {
  graft::Array w, b;
  std::string name = "layer";
};
struct Scaled {
  graft::Array x;
  double scale = 1;
};
struct Model {
  std::vector<Layer> layers;
  graft::Array bias;
};
}  // namespace test_nodes
GRAFT_PYTREE_NODE(test_nodes::Layer, &test_nodes::Layer::w, &test_nodes::Layer::b);
GRAFT_PYTREE_NODE(test_nodes::Model, &test_nodes::Model::layers, &test_nodes::Model::bias);
template <>
struct graft::PyTreeNode<test_nodes::Scaled> {
  static constexpr auto children = std::make_tuple(&test_nodes::Scaled::x);
  static constexpr auto statics = std::make_tuple(&test_nodes::Scaled::scale);
};

namespace graft {
namespace {
using namespace graft::testing;
using test_nodes::Layer;
using test_nodes::Model;
using test_nodes::Scaled;

TEST(Composition, GradOfGradOfSinIsMinusSin) {
  auto f = [](const Array& x) { return sin(x); };
  auto d2 = grad(grad(f));
  for (double v : {-2.0, -0.3, 0.0, 0.7, 1.9}) {
    Array x = array(v);
    EXPECT_NEAR(d2(x).item<double>(), -std::sin(v), 1e-12);
    EXPECT_NEAR(grad(grad(grad(f)))(x).item<double>(), -std::cos(v), 1e-12);
  }
  // and under jit
  EXPECT_NEAR(jit(d2)(array(0.7)).item<double>(), -std::sin(0.7), 1e-12);
}

TEST(Composition, HessianOfQuadraticForm) {
  Rng rng(7);
  Array A = rng.uniform({4, 4}, f64);
  Array b = rng.uniform({4}, f64);
  auto f = [&](const Array& x) { return 0.5 * dot(x, matmul(A, x)) + dot(b, x); };
  Array x = rng.uniform({4}, f64);
  Array H = hessian(f)(x);
  EXPECT_TRUE(close(H, (A + A.T()) * 0.5, 1e-12, 1e-12));
  EXPECT_TRUE(close(grad(f)(x), matmul((A + A.T()) * 0.5, x) + b, 1e-12, 1e-12));
  // jacfwd(jacfwd) and jacrev(jacrev) agree too
  EXPECT_TRUE(close(jacfwd(jacfwd(f))(x), H, 1e-12, 1e-12));
  EXPECT_TRUE(close(jacrev(jacrev(f))(x), H, 1e-12, 1e-12));
}

TEST(Composition, VmapOfGradGivesPerExampleGradients) {
  Rng rng(8);
  Array w = rng.uniform({3}, f64);
  Array xs = rng.uniform({5, 3}, f64), ys = rng.uniform({5}, f64);
  auto loss = [](const Array& w, const Array& x, const Array& y) { return square(dot(w, x) - y); };
  Array per = vmap(grad(loss), {.in_axes = {std::nullopt, 0, 0}})(w, xs, ys);
  ASSERT_EQ(per.shape(), (Shape{5, 3}));
  for (int64_t i = 0; i < 5; ++i) {
    Array xi = xs[i], yi = ys[i];
    EXPECT_TRUE(close(per[i], grad(loss)(w, xi, yi), 1e-12, 1e-12));
    EXPECT_TRUE(close(per[i], (dot(w, xi) - yi) * 2.0 * xi, 1e-12, 1e-12));
  }
  // the mean of per-example gradients is the gradient of the mean loss
  auto mean_loss = [&](const Array& w) { return mean(vmap(loss, {.in_axes = {std::nullopt, 0, 0}})(w, xs, ys)); };
  EXPECT_TRUE(close(mean(per, 0), grad(mean_loss)(w), 1e-12, 1e-12));
}

TEST(Composition, JacfwdEqualsJacrevOnRandomFunctions) {
  Rng rng(9);
  Array M = rng.uniform({3, 4}, f64);
  std::vector<std::function<Array(const Array&)>> fs = {
      [&](const Array& x) { return tanh(matmul(M, x)) * x[{slice(0, 3)}]; },
      [&](const Array& x) { return softmax(x) * exp(x[{slice(none, none, -1)}]); },
      [&](const Array& x) { return cumsum(x * x) / (1.0 + abs(x)); },
      [&](const Array& x) { return concatenate({sin(x), log1p(x * x), sort(x)}) ; },
      [&](const Array& x) { return matmul(M, x).at({1}).add(x[2] * x[3]); },
  };
  for (size_t k = 0; k < fs.size(); ++k) {
    Array x = rng.uniform({4}, f64);
    Array jf = jacfwd(fs[k])(x), jr = jacrev(fs[k])(x);
    EXPECT_TRUE(close(jf, jr, 1e-12, 1e-12)) << "function " << k;
    // and both against finite differences, row by row
    Array y = fs[k](x);
    for (int64_t i = 0; i < y.size(); ++i) {
      auto fi = [&](const Array& z) { return fs[k](z)[i]; };
      EXPECT_TRUE(close(jr[i], num_grad(fi, x), 1e-6, 1e-7)) << "function " << k << " row " << i;
    }
  }
}

TEST(Composition, ClosuresOverArrays) {
  Array w = array({1.0, 2.0, 3.0});
  auto f = [&w](const Array& x) { return sum(w * sin(x)); };
  Array x = array({0.1, 0.2, 0.3});
  EXPECT_TRUE(close(grad(f)(x), w * cos(x), 1e-12));
  EXPECT_TRUE(close(jit(grad(f))(x), w * cos(x), 1e-12));
  // a closure over a traced value of an enclosing transformation (grad of a function that builds
  // and differentiates an inner closure)
  auto outer = [](const Array& a) {
    auto inner = [&a](const Array& x) { return sum(a * x * x); };
    return sum(grad(inner)(a));  // = sum(2 a^2)
  };
  EXPECT_TRUE(close(grad(outer)(x), x * 4.0, 1e-12));
}

TEST(Composition, NestedJit) {
  auto inner = jit([](const Array& x) { return x * x; });
  auto outer = jit([&](const Array& x) { return inner(x) + inner(x * 2.0); });
  Array x = array({1.0f, 2.0f});
  EXPECT_TRUE(close(outer(x), x * x * 5.0));
  EXPECT_TRUE(close(grad([&](const Array& x) { return sum(outer(x)); })(x), x * 10.0));
  EXPECT_TRUE(close(jit(grad([&](const Array& x) { return sum(outer(x)); }))(x), x * 10.0));
  EXPECT_TRUE(close(vmap(outer)(stack({x, x * 3.0})), stack({x * x * 5.0, x * x * 45.0})));
}

TEST(Composition, JitOfVmapOfGradAndFriends) {
  Rng rng(10);
  Array xs = rng.uniform({4, 3}, f64);
  auto f = [](const Array& x) { return sum(sin(x) * x); };
  auto df = [](const Array& x) { return cos(x) * x + sin(x); };
  Array want = df(xs);
  EXPECT_TRUE(close(jit(vmap(grad(f)))(xs), want, 1e-12));
  EXPECT_TRUE(close(vmap(jit(grad(f)))(xs), want, 1e-12));
  EXPECT_TRUE(close(vmap(grad(jit(f)))(xs), want, 1e-12));
  EXPECT_TRUE(close(grad([&](const Array& x) { return sum(vmap(f)(x)); })(xs), want, 1e-12));
  // vmap of jacrev: per-row Jacobians
  auto g = [](const Array& x) { return x * sum(x); };
  Array J = vmap(jacrev(g))(xs);
  ASSERT_EQ(J.shape(), (Shape{4, 3, 3}));
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(close(J[i], jacfwd(g)(xs[i]), 1e-12));
}

TEST(Composition, JvpOfGrad) {
  // forward-over-reverse: Hessian-vector product
  auto f = [](const Array& x) { return sum(exp(x) * x); };
  Array x = array({0.1, -0.4, 0.9}), v = array({1.0, 2.0, -1.0});
  auto [g, hv] = jvp(grad(f), {x}, {v});
  EXPECT_TRUE(close(g, exp(x) * (x + 1.0), 1e-12));
  EXPECT_TRUE(close(hv, exp(x) * (x + 2.0) * v, 1e-12));
  // reverse-over-forward agrees
  auto gv = [&](const Array& x) { return sum(jvp(f, {x}, {v}).second); };
  EXPECT_TRUE(close(grad(gv)(x), hv, 1e-12));
}

TEST(Composition, NoPerturbationConfusion) {
  // d/dx [x * d/dy (x + y)] at y: the inner derivative is 1, so the result is 1 (not 2)
  auto f = [](const Array& x) {
    auto inner = [&x](const Array& y) { return x + y; };
    return x * grad(inner)(array(1.0));
  };
  EXPECT_NEAR(grad(f)(array(3.0)).item<double>(), 1.0, 1e-12);
  // the same with forward mode nested in forward mode
  auto g = [](const Array& x) {
    auto inner = [&x](const Array& y) { return x * y; };
    return jvp(inner, {array(2.0)}, {array(1.0)}).second;  // = x
  };
  EXPECT_NEAR(jvp(g, {array(5.0)}, {array(1.0)}).second.item<double>(), 1.0, 1e-12);
}

TEST(Composition, ValueAndGradWithArgnumsAndAux) {
  auto f = [](const Array& a, const Array& b) { return sum(a * b * b); };
  Array a = array({1.0, 2.0}), b = array({3.0, 4.0});
  auto [val, gs] = value_and_grad(f, {0, 1})(a, b);
  EXPECT_NEAR(val.item<double>(), 9 + 32, 1e-12);
  EXPECT_TRUE(close(gs[0], b * b));
  EXPECT_TRUE(close(gs[1], a * b * 2.0));
  Array g1 = grad(f, 1)(a, b);
  EXPECT_TRUE(close(g1, a * b * 2.0));
  auto with_aux = [](const Array& x) { return std::make_pair(sum(x * x), x * 10.0); };
  auto [gx, aux] = grad(with_aux, GradOptions{.has_aux = true})(a);
  EXPECT_TRUE(close(gx, a * 2.0));
  EXPECT_TRUE(close(aux, a * 10.0));
  auto [va, ga] = value_and_grad(with_aux, GradOptions{.has_aux = true})(a);
  EXPECT_NEAR(va.first.item<double>(), 5, 1e-12);
  EXPECT_TRUE(close(va.second, a * 10.0));
  EXPECT_TRUE(close(ga, a * 2.0));
}

TEST(Composition, PytreeParameters) {
  Tree params = Tree::dict({{"w", array({1.0, 2.0})}, {"b", array(0.5)}});
  Array x = array({3.0, -1.0});
  auto loss = [](const Tree& p, const Array& x) { return square(dot(p["w"].array(), x) + p["b"].array()); };
  Tree g = grad(loss)(params, x);
  double r = 1 * 3 + 2 * -1 + 0.5;
  EXPECT_TRUE(close(g["w"], x * (2 * r), 1e-12));
  EXPECT_NEAR(g["b"].array().item<double>(), 2 * r, 1e-12);
  EXPECT_EQ(g.structure(), params.structure());
  // jit and vmap of pytree functions; an SGD step as tree_map
  auto step = jit([&](const Tree& p, const Array& x) {
    Tree gp = grad(loss)(p, x);
    return tree_map([](const Array& w, const Array& d) { return w - d * 0.1; }, p, gp);
  });
  Tree p2 = step(params, x);
  EXPECT_TRUE(close(p2["w"], params["w"].array() - x * (0.2 * r), 1e-12));
  // std containers work too
  std::vector<Array> ws = {array(2.0), array(3.0)};
  auto prod2 = [](const std::vector<Array>& w) { return w[0] * w[1]; };
  std::vector<Array> gw = grad(prod2)(ws);
  EXPECT_NEAR(gw[0].item<double>(), 3, 1e-12);
  EXPECT_NEAR(gw[1].item<double>(), 2, 1e-12);
  std::map<std::string, Array> named = {{"a", array(2.0)}};
  auto sq = [](const std::map<std::string, Array>& m) { return m.at("a") * m.at("a"); };
  EXPECT_NEAR(grad(sq)(named).at("a").item<double>(), 4, 1e-12);
}

TEST(Composition, RegisteredStructsAreNodes) {
  Rng rng(5);
  Layer l{rng.uniform({3, 2}, f64), rng.uniform({2}, f64), "dense"};
  Array x = rng.uniform({4, 3}, f64);
  auto loss = [](const Layer& p, const Array& x) { return sum(square(matmul(x, p.w) + p.b)); };
  Layer g = grad(loss)(l, x);
  EXPECT_EQ(g.name, "dense");  // the members it does not name come from the argument
  Array y = matmul(x, l.w) + l.b;
  EXPECT_TRUE(close(g.w, matmul(x.T(), y * 2.0), 1e-12));
  EXPECT_TRUE(close(g.b, sum(y * 2.0, 0), 1e-12));
  // nested: a vector of registered nodes inside a registered node, under jit and value_and_grad
  Model m{{l, Layer{rng.uniform({2, 2}, f64), rng.uniform({2}, f64)}}, rng.uniform({2}, f64)};
  auto mloss = [](const Model& m, const Array& x) {
    Array h = x;
    for (auto& layer : m.layers) h = tanh(matmul(h, layer.w) + layer.b);
    return sum(h + m.bias);
  };
  auto [v, gm] = jit(value_and_grad(mloss))(m, x);
  EXPECT_NEAR(v.item<double>(), mloss(m, x).item<double>(), 1e-12);
  ASSERT_EQ(gm.layers.size(), 2u);
  EXPECT_TRUE(close(gm.layers[1].w, grad(mloss)(m, x).layers[1].w, 1e-12));
  EXPECT_EQ(gm.layers[0].name, "dense");
  // vmap over a batch of layers; scan with a node as its carry; checkpoint
  Layer batch{rng.uniform({5, 3, 2}, f64), rng.uniform({5, 2}, f64)};
  Array ys = vmap([&](const Layer& p) { return loss(p, x); })(batch);
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_NEAR(ys[{i}].item<double>(), loss(Layer{batch.w[{i}], batch.b[{i}]}, x).item<double>(), 1e-12);
  auto step = [](const Layer& c, const Array& xi) {
    Layer next = c;
    next.b = c.b + sum(matmul(expand_dims(xi, 0), c.w), 0);
    return std::make_pair(next, sum(next.b));
  };
  auto [last, sums] = scan(step, l, x);
  EXPECT_EQ(last.name, "dense");
  EXPECT_TRUE(close(last.b, l.b + sum(matmul(x, l.w), 0), 1e-12));
  EXPECT_EQ(sums.shape(), Shape({4}));
  EXPECT_TRUE(close(grad(checkpoint(loss))(l, x).w, g.w, 1e-12));
  // static fields are part of jit's cache key
  int traces = 0;
  auto scaled = jit([&](const Scaled& s) {
    ++traces;
    return s.x * s.scale;
  });
  Array one = array(1.0).astype(f64);
  EXPECT_NEAR(scaled(Scaled{one, 2.0}).item<double>(), 2.0, 0);
  EXPECT_NEAR(scaled(Scaled{one, 3.0}).item<double>(), 3.0, 0);
  EXPECT_NEAR(scaled(Scaled{one * 5.0, 3.0}).item<double>(), 15.0, 0);
  EXPECT_EQ(traces, 2);
}

TEST(Composition, VjpReturnsOneCotangentPerArgument) {
  auto f = [](const Array& x, const Array& y) { return x * sin(y); };
  Array x = array({1.0, 2.0}), y = array({0.3, 0.4});
  auto [out, pullback] = vjp(f, x, y);
  EXPECT_TRUE(close(out, x * sin(y)));
  auto [cx, cy] = pullback(ones_like(out));
  EXPECT_TRUE(close(cx, sin(y), 1e-12));
  EXPECT_TRUE(close(cy, x * cos(y), 1e-12));
  // the pullback can be called again, and under jit
  auto [cx2, cy2] = pullback(array({2.0, 0.0}));
  EXPECT_TRUE(close(cx2, array({2 * std::sin(0.3), 0.0}), 1e-12));
}

// linearize: the JVP from stored residuals (f is not run again), equal to jvp; linear_transpose: the
// transpose of a linear function, equal to its vjp, and the error for one that is not linear
TEST(Composition, LinearizeAndLinearTranspose) {
  Rng rng(11);
  Array x = rng.uniform({5}, f64), w = rng.uniform({3, 5}, f64);
  int calls = 0;
  auto f = [&](const Array& v, const Array& m) {
    ++calls;
    return std::make_pair(sin(matmul(m, v)) * 2.0, sum(v * v));
  };
  auto [y, f_jvp] = linearize(f, x, w);
  EXPECT_EQ(calls, 1);
  Array tx = rng.uniform({5}, f64), tw = rng.uniform({3, 5}, f64);
  auto lin = f_jvp(tx, tw);
  auto lin2 = f_jvp(tx * 2.0, tw * 2.0);
  EXPECT_EQ(calls, 1);
  auto [yy, ty] = jvp([&](const Array& v, const Array& m) { return f(v, m); }, {x, w}, {tx, tw});
  (void)yy;
  EXPECT_TRUE(close(y.first, f(x, w).first, 1e-15, 0));
  EXPECT_TRUE(close(lin.first, ty.first, 1e-12, 1e-14));
  EXPECT_TRUE(close(lin.second, ty.second, 1e-12, 1e-14));
  EXPECT_TRUE(close(lin2.first, ty.first * 2.0, 1e-12, 1e-14));  // linear in the tangents

  auto g = [&](const Array& v) { return std::make_pair(matmul(w, v) * 3.0, sum(v)); };
  auto g_t = linear_transpose(g, x);
  Array ct0 = rng.uniform({3}, f64), ct1 = array(2.0).astype(f64);
  auto [gx] = g_t(std::make_pair(ct0, ct1));
  auto [out, pb] = vjp(g, x);
  (void)out;
  auto [vx] = pb(std::make_pair(ct0, ct1));
  EXPECT_TRUE(close(gx, vx, 1e-13, 1e-14));
  EXPECT_TRUE(close(gx, matmul(w.T(), ct0) * 3.0 + 2.0, 1e-13, 1e-14));
  expect_throws<NotImplementedError>([&] {
    auto t = linear_transpose([](const Array& v) { return sin(v); }, x);
    (void)t(x);
  }, "sin has no transpose rule");
  expect_throws<ValueError>([&] { (void)linear_transpose([](const Array& v) { return v * v; }, x); },
                            "not linear");
  // eval_shape: types only, nothing computed
  std::vector<Aval> shapes = eval_shape_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{matmul(a[0], a[1]), sum(a[0])}; },
      {Aval({4000, 3000}, f32), Aval({3000, 2}, f32)});
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].shape, Shape({4000, 2}));
  EXPECT_EQ(shapes[1].shape, Shape{});
  EXPECT_EQ(shapes[1].dtype, f32);
}

TEST(Composition, PythonStyleControlFlowUnderGrad) {
  // under grad values are concrete, so branching on them works (as in JAX)
  auto f = [](const Array& x) -> Array {
    if (x > 0.0) return x * x;
    return -x;
  };
  EXPECT_NEAR(grad(f)(array(3.0)).item<double>(), 6, 1e-12);
  EXPECT_NEAR(grad(f)(array(-3.0)).item<double>(), -1, 1e-12);
}

TEST(Composition, StopGradient) {
  auto f = [](const Array& x) { return x * stop_gradient(x); };
  EXPECT_NEAR(grad(f)(array(3.0)).item<double>(), 3, 1e-12);
  // the first derivative is stop_gradient(x), whose own derivative is zero
  EXPECT_NEAR(grad(grad(f))(array(3.0)).item<double>(), 0, 1e-12);
}

TEST(Composition, MaxAtTiesSplitsTheDerivative) {
  // JAX's balanced rule: d max(x, y) at x == y gives 1/2 to each
  auto f = [](const Array& x, const Array& y) { return maximum(x, y); };
  auto g = grad(f, {0, 1})(array(2.0), array(2.0));
  EXPECT_NEAR(g[0].item<double>(), 0.5, 1e-12);
  EXPECT_NEAR(g[1].item<double>(), 0.5, 1e-12);
  // reduce_max spreads it over the tied maxima
  auto h = [](const Array& x) { return max(x); };
  EXPECT_TRUE(close(grad(h)(array({1.0, 3.0, 3.0})), array({0.0, 0.5, 0.5})));
}

TEST(Composition, AListOfOneArgnumGivesAListOfOneGradient) {
  // grad(f, {0}) used to mean grad(f, 0): a braced list picked the single-argnum overload
  auto f = [](const Array& x, const Array& y) { return sum(x * y); };
  std::vector<Array> g = grad(f, {0})(array({1.0, 2.0}), array({3.0, 4.0}));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(close(g[0], array({3.0, 4.0})));
  std::vector<Array> g1 = grad(f, {1})(array({1.0, 2.0}), array({3.0, 4.0}));
  EXPECT_TRUE(close(g1[0], array({1.0, 2.0})));
  auto [v, gv] = value_and_grad(f, {1})(array({1.0, 2.0}), array({3.0, 4.0}));
  static_assert(std::is_same_v<decltype(gv), std::vector<Array>>);
  EXPECT_EQ(gv.size(), 1u);
  Array single = grad(f, 1)(array({1.0, 2.0}), array({3.0, 4.0}));  // an int still means one gradient
  EXPECT_TRUE(close(single, array({1.0, 2.0})));
  expect_throws<ValueError>([&] { grad(f, std::vector<int>{})(array({1.0}), array({1.0})); }, "argnums is empty");
}

TEST(Composition, IntegerInputsHaveNoGradient) {
  auto f = [](const Array& x) { return sum(x.astype(f32)); };
  EXPECT_THROW(grad(f)(array({1, 2})), TypeError);
  // vjp gives zeros for them
  auto h = [](const Array& x, const Array& i) { return x * i.astype(f32); };
  auto [out, pb] = vjp(h, array(2.0f), array(3));
  auto [cx, ci] = pb(array(1.0f));
  EXPECT_NEAR(cx.item<double>(), 3, 1e-6);
  EXPECT_EQ(ci.dtype(), i32);
  EXPECT_EQ(ci.item<int>(), 0);
}

TEST(Composition, GradOfNonScalarOutputIsAnError) {
  auto f = [](const Array& x) { return x * 2.0; };
  try {
    grad(f)(array({1.0, 2.0}));
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("scalar-output"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace graft
