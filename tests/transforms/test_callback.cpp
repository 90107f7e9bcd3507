// Host callbacks: pure_callback, io_callback and debug_callback eagerly, under jit (kept, dropped or merged
// as their effects allow), vmap (once per example), grad (no derivative; debug callbacks see primals), and
// the errors for results of the wrong type.
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

TEST(Callback, PureCallbackEagerJitAndVmap) {
  int calls = 0;
  HostFn twice = [&](const std::vector<Array>& a) {
    ++calls;
    EXPECT_TRUE(a[0].is_concrete());
    return std::vector<Array>{a[0] * 2.0, sum(a[0])};
  };
  auto f = [&](const Array& x) {
    auto r = pure_callback(twice, {x.aval(), Aval({}, x.dtype())}, {x});
    return r[0] + r[1];
  };
  Array x = array({1.0, 2.0, 3.0});
  EXPECT_TRUE(close(f(x), array({8.0, 10.0, 12.0})));
  EXPECT_EQ(calls, 1);
  auto jf = jit(f);
  EXPECT_TRUE(close(jf(x), array({8.0, 10.0, 12.0})));
  EXPECT_TRUE(close(jf(x * 2.0), array({16.0, 20.0, 24.0})));
  EXPECT_EQ(calls, 3);  // traced without calling it; called at each execution
  // vmap: once per example, each seeing an unbatched row
  Array xs = array({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).reshape({2, 3});
  calls = 0;
  Array ys = vmap(f)(xs);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(close(ys[{1}], f(xs[{1}])));
  // an unused pure callback may be dropped by jit
  calls = 0;
  auto unused = jit([&](const Array& v) {
    (void)pure_callback(twice, {v.aval(), Aval({}, v.dtype())}, {v});
    return v + 1.0;
  });
  (void)unused(x);
  EXPECT_EQ(calls, 0);
}

TEST(Callback, IoAndDebugCallbacksAreKeptInOrder) {
  std::vector<double> log;
  HostFn record = [&](const std::vector<Array>& a) {
    log.push_back(a[0].astype(f64).item<double>());
    return std::vector<Array>{};
  };
  auto f = jit([&](const Array& v) {
    (void)io_callback(record, {}, {v});
    debug_callback([&](const std::vector<Array>& a) { log.push_back(-a[0].astype(f64).item<double>()); }, {v * 2.0});
    (void)io_callback(record, {}, {v + 1.0});
    return v;
  });
  (void)f(array(1.0));
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0], 1.0);
  EXPECT_EQ(log[1], -2.0);
  EXPECT_EQ(log[2], 2.0);
  // under grad, the debug callback sees the primal value; pure and io callbacks have no derivative
  log.clear();
  Array g = grad([&](const Array& v) {
    debug_callback([&](const std::vector<Array>& a) { log.push_back(a[0].astype(f64).item<double>()); }, {v});
    return v * v;
  })(array(3.0));
  EXPECT_NEAR(g.item<double>(), 6.0, 0);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], 3.0);
  expect_throws<NotImplementedError>([&] {
    (void)grad([&](const Array& v) {
      return pure_callback([](const std::vector<Array>& a) { return std::vector<Array>{a[0]}; }, {v.aval()}, {v})[0];
    })(array(3.0));
  }, "has no derivative");
  // vmap of a debug callback: once per example
  log.clear();
  (void)vmap([&](const Array& v) {
    debug_callback([&](const std::vector<Array>& a) { log.push_back(a[0].astype(f64).item<double>()); }, {v});
    return v;
  })(array({5.0, 6.0}));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1], 6.0);
}

TEST(Callback, ResultsOfTheWrongTypeAreErrors) {
  Array x = array({1.0f, 2.0f});
  expect_throws<TypeError>([&] {
    (void)pure_callback([](const std::vector<Array>& a) { return std::vector<Array>{a[0].astype(f64)}; }, {x.aval()}, {x});
  }, "result 0 of the callback has type f64[2], f32[2] was promised");
  expect_throws<TypeError>([&] {
    (void)pure_callback([](const std::vector<Array>&) { return std::vector<Array>{}; }, {x.aval()}, {x});
  }, "returned 0 arrays, 1 were promised");
  expect_throws<ValueError>([&] { (void)pure_callback(HostFn(), {x.aval()}, {x}); }, "empty");
}

}  // namespace
}  // namespace graft
