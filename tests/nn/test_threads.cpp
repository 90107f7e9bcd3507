// graft from many user threads at once: the same jitted function, grad, eager ops, convolutions and
// the random functions called from 8 threads give every thread the results one thread gets alone.
// (Run under ThreadSanitizer by .ci/run; see docs/threads.md for what may be shared.)
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

constexpr int kThreads = 8;

// Runs body(thread, rep) on kThreads threads at once, all starting together; the first exception of
// any thread is rethrown here.
void on_threads(int reps, const std::function<void(int, int)>& body) {
  std::atomic<int> ready{0};
  std::vector<std::exception_ptr> errors(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      ready++;
      while (ready.load() < kThreads) std::this_thread::yield();
      try {
        for (int r = 0; r < reps; ++r) body(t, r);
      } catch (...) {
        errors[size_t(t)] = std::current_exception();
      }
    });
  for (auto& th : ts) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

struct Mlp {
  nn::MLP net{{64, 32, 32, 10}};
  Tree params = net.init(random::key(0));
  Array x = random::normal(random::key(1), {16, 64});
  Array y = (arange(16) % 10).astype(DType::i32);
  Array loss(const Tree& p, const Array& xb, const Array& yb) const { return nn::cross_entropy(net(p, xb), yb); }
};

::testing::AssertionResult same_tree(const Tree& a, const Tree& b, double rtol) {
  auto la = a.leaves(), lb = b.leaves();
  if (la.size() != lb.size()) return ::testing::AssertionFailure() << "different structures";
  for (size_t i = 0; i < la.size(); ++i)
    if (auto r = close(la[i], lb[i], rtol, rtol); !r) return r;
  return ::testing::AssertionSuccess();
}

TEST(Threads, OneJittedGradientFromEightThreads) {
  Mlp m;
  auto step = jit([&m](const Tree& p, const Array& x, const Array& y) {
    return grad([&m](const Tree& p, const Array& x, const Array& y) { return m.loss(p, x, y); })(p, x, y);
  });
  Tree want = step(m.params, m.x, m.y);
  std::atomic<int> wrong{0};
  on_threads(20, [&](int, int) {
    if (!same_tree(step(m.params, m.x, m.y), want, 1e-5)) wrong++;
  });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(step.num_traces(), 1u);  // one trace, however many threads asked at once
}

TEST(Threads, EachThreadItsOwnJitGradAndEagerOps) {
  Mlp m;
  auto g = [&m](const Tree& p) { return grad([&m](const Tree& p) { return m.loss(p, m.x, m.y); })(p); };
  Tree want_grad = g(m.params);
  Array a = random::normal(random::key(5), {300, 200}), b = random::normal(random::key(6), {200, 100});
  Array want_mm = matmul(a, b), want_sum = sum(sin(a) * 2.0 + 1.0, {1});
  std::atomic<int> wrong{0};
  on_threads(5, [&](int t, int r) {
    if (!same_tree(g(m.params), want_grad, 1e-5)) wrong++;
    // a jit object made by this thread, called with a shape of its own
    auto f = jit([](const Array& x) { return tanh(x) * 0.5 + x * x; });
    Array x = full({int64_t(100 + t)}, 0.5f);
    if (!close(f(x), full({int64_t(100 + t)}, float(std::tanh(0.5) * 0.5 + 0.25)), 1e-6)) wrong++;
    if (!close(matmul(a, b), want_mm, 1e-5, 1e-5)) wrong++;
    if (!close(sum(sin(a) * 2.0 + 1.0, {1}), want_sum, 1e-5, 1e-5)) wrong++;
    (void)r;
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Threads, ConvolutionsAndTheirGradientsFromEightThreads) {
  nn::Conv2d conv{3, 8, {3, 3}};
  Tree p = conv.init(random::key(3));
  Array x = random::normal(random::key(4), {4, 3, 12, 12});
  auto loss = [&conv](const Tree& p, const Array& x) { return sum(conv(p, x) * conv(p, x)); };
  Array want_y = conv(p, x);
  Tree want_g = grad(loss)(p, x);
  std::atomic<int> wrong{0};
  on_threads(10, [&](int, int) {
    if (!close(conv(p, x), want_y, 1e-5, 1e-5)) wrong++;
    if (!same_tree(grad(loss)(p, x), want_g, 1e-5)) wrong++;
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Threads, RandomFunctionsFromEightThreads) {
  std::vector<Array> want;
  for (int t = 0; t < kThreads; ++t) want.push_back(random::normal(random::fold_in(random::key(7), t), {1000}));
  auto jitted = jit([](const Array& k) { return random::uniform(k, {500}); });
  Array want_u = jitted(random::key(8));
  std::atomic<int> wrong{0};
  on_threads(10, [&](int t, int) {
    if (!close(random::normal(random::fold_in(random::key(7), t), {1000}), want[size_t(t)], 0, 0)) wrong++;
    if (!close(jitted(random::key(8)), want_u, 0, 0)) wrong++;
  });
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace graft
