// Explicit graphs (the Theano / TF1 paradigm): placeholders, Function, grad of a graph.
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

TEST(Graph, PlaceholdersBuildAJaxprThatRuns) {
  Array c = array({1.0f, -1.0f, 0.5f});  // a captured constant becomes a constvar
  Function f = [&] {
    Graph g("f");
    Array x = g.placeholder({3}), w = g.placeholder({3});
    Array y = sum(sin(x) * w + c);
    return g.function({x, w}, {y});
  }();
  EXPECT_EQ(testing::golden(f.jaxpr()),
            "{ lambda a:f32[3]; b:f32[3] c:f32[3]. let\n"
            "    d:f32[3] = sin b\n"
            "    e:f32[3] = mul d c\n"
            "    f:f32[3] = add e a\n"
            "    g:f32[] = reduce_sum[axes=(0,)] f\n"
            "  in (g,) }");
  Array x = array({0.1f, 0.2f, 0.3f}), w = array({2.0f, 3.0f, 4.0f});
  EXPECT_TRUE(close(f({x, w})[0], sum(sin(x) * w + c)));
  // a Function composes with the transformations like any function
  EXPECT_TRUE(close(jit([&](const Array& x) { return f({x, w})[0]; })(x), sum(sin(x) * w + c)));
}

TEST(Graph, GradOfAGraphIsAGraph) {
  Function f = [] {
    Graph g("loss");
    Array x = g.placeholder({3}, f64), w = g.placeholder({3}, f64);
    return g.function({w, x}, {sum(tanh(x * w))});  // inputs in any order
  }();
  Function df = grad(f, {0, 1});
  EXPECT_EQ(df.jaxpr().in_avals().size(), 2u);
  EXPECT_EQ(df.jaxpr().out_avals().size(), 2u);
  Array w = array({0.5, -1.0, 2.0}), x = array({1.0, 0.3, -0.2});
  auto want = grad([](const Array& w, const Array& x) { return sum(tanh(x * w)); }, {0, 1})(w, x);
  auto got = df({w, x});
  EXPECT_TRUE(close(got[0], want[0], 1e-12, 1e-12));
  EXPECT_TRUE(close(got[1], want[1], 1e-12, 1e-12));
  // and grad of the grad graph (second derivative along w)
  Function d2 = grad(Function([&] {
                       Graph g("dw_sum");
                       Array w2 = g.placeholder({3}, f64), x2 = g.placeholder({3}, f64);
                       return g.function({w2, x2}, {sum(df({w2, x2})[0])});
                     }().jaxpr(), "dw_sum"));
  Array t = tanh(x * w);
  EXPECT_TRUE(close(d2({w, x})[0], -2.0 * t * (1.0 - t * t) * x * x, 1e-12, 1e-12));
}

TEST(Graph, Errors) {
  Graph g;
  Array x = g.placeholder({2}), y = g.placeholder({2});
  Array z = x + y;
  EXPECT_THROW(g.function({x}, {z}), ValueError);  // z depends on y, which is not an input
  Graph h;
  Array a = h.placeholder({2});
  Function f = h.function({a}, {a * 2.0f});
  EXPECT_THROW(f({array({1.0f, 2.0f, 3.0f})}), TypeError);
  EXPECT_THROW(h.placeholder({1}), ValueError);
}

}  // namespace
}  // namespace graft
