// jit's batch polymorphism (JitOptions::polymorphic / buckets): one compile serves many batch sizes,
// with the results of the exact program at each size; what cannot be masked falls back to exact
// compiles, never to wrong answers.
#include <gtest/gtest.h>

#include "graft/nn/nn.h"
#include "graft/random/random.h"
#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

Array data(uint32_t seed, const Shape& s) { return random::normal(random::key(seed), s); }
Array labels(uint32_t seed, int64_t n, int64_t classes) {
  return floor(random::uniform(random::key(seed), {n}) * static_cast<double>(classes)).astype(DType::i32);
}

// Runs f exactly (plain jit, one compile per size) and polymorphically on the first n rows of the
// same inputs, for every n in sizes, and compares every output.
template <class F, class... Rows>
void expect_same_as_exact(const F& poly, const F& exact, const std::vector<int64_t>& sizes, double rtol,
                          const Rows&... rows) {
  for (int64_t n : sizes) {
    auto a = poly(rows[{slice(0, n)}]...);
    auto b = exact(rows[{slice(0, n)}]...);
    std::vector<Array> la = tree_flatten(a), lb = tree_flatten(b);
    ASSERT_EQ(la.size(), lb.size());
    for (size_t i = 0; i < la.size(); ++i) {
      ASSERT_EQ(la[i].aval(), lb[i].aval()) << "output " << i << " at batch " << n;
      if (is_floating(la[i].dtype()))
        EXPECT_TRUE(close(la[i], lb[i], rtol, 1e-6)) << "output " << i << " at batch " << n;
      else
        EXPECT_EQ(values(la[i]), values(lb[i])) << "output " << i << " at batch " << n;
    }
  }
}

TEST(Polymorphic, ReductionsOverTheBatchSeeOnlyItsRows) {
  auto f = [](const Array& x) {
    return std::vector<Array>{mean(x, 0), sum(x, 0), max(x, 0), min(x, 0), var(x, 0), argmax(x, 0), argmin(x, 0),
                              cumsum(x, 0, true), cumsum(x, 0), exp(x) * 2.0, logsumexp(x, 0), mean(x)};
  };
  auto poly = jit(f, {.name = "f", .polymorphic = {"b, ..."}});
  auto exact = jit(f, {.name = "f"});
  Array x = data(0, {16, 3}) - 2.0;  // all negative in places: padding with zeros would change max
  expect_same_as_exact(poly, exact, {16, 11, 16, 5, 9, 2}, 1e-5, x);
  EXPECT_EQ(poly.num_compiles(), 1u);
  EXPECT_EQ(exact.num_compiles(), 5u);
  // one row: graft's ops skip broadcasts to equal shapes, so the function is another program there,
  // which gets an exact compile of its own
  expect_same_as_exact(poly, exact, {1}, 1e-5, x);
  EXPECT_EQ(poly.num_compiles(), 2u);
}

// The seeds' workload: an MLP's training step, whose last batch is smaller.
TEST(Polymorphic, TrainingStepCompilesOnceForFullAndPartialBatches) {
  nn::Linear l1{20, 16}, l2{16, 5};
  Tree params = Tree::dict({{"l1", l1.init(random::key(1))}, {"l2", l2.init(random::key(2))}});
  auto step = [=](const Tree& p, const Array& x, const Array& y) {
    auto loss = [&](const Tree& q) { return nn::cross_entropy(l2(q["l2"], relu(l1(q["l1"], x))), y); };
    auto [l, g] = value_and_grad(loss)(p);
    Tree updated = tree_map([](const Array& w, const Array& dw) { return w - dw * 0.1; }, p, g);
    return std::make_tuple(updated, l);
  };
  auto poly = jit(step, {.name = "step", .polymorphic = {"", "b, ...", "b"}});
  auto exact = jit(step, {.name = "step"});
  Array x = data(3, {32, 20});
  Array y = labels(4, 32, 5);
  for (int64_t n : {32, 20, 32, 7}) {
    auto [pa, la] = poly(params, x[{slice(0, n)}], y[{slice(0, n)}]);
    auto [pb, lb] = exact(params, x[{slice(0, n)}], y[{slice(0, n)}]);
    EXPECT_TRUE(close(la, lb, 1e-5)) << n;
    std::vector<Array> wa = tree_flatten(pa), wb = tree_flatten(pb);
    for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(close(wa[i], wb[i], 1e-5, 1e-6)) << n << " leaf " << i;
  }
  EXPECT_EQ(poly.num_compiles(), 1u);
}

TEST(Polymorphic, ConvolutionPoolingAndTheirGradients) {
  nn::Conv2d c{1, 4, {3, 3}};
  nn::Linear d{4 * 3 * 3, 3};
  Tree params = Tree::dict({{"c", c.init(random::key(5))}, {"d", d.init(random::key(6))}});
  auto grads = [=](const Tree& p, const Array& x, const Array& y) {
    auto loss = [&](const Tree& q) {
      Array h = nn::max_pool2d(relu(c(q["c"], x)), {2, 2});  // 8 -> 6 -> 3
      h = reshape(h, {h.shape(0), -1});
      return nn::cross_entropy(d(q["d"], h), y);
    };
    return value_and_grad(loss)(p);
  };
  auto poly = jit(grads, {.name = "cnn", .polymorphic = {"", "b, ...", "b"}});
  auto exact = jit(grads, {.name = "cnn"});
  Array x = data(7, {8, 1, 8, 8});
  Array y = labels(8, 8, 3);
  for (int64_t n : {8, 5, 2}) {
    auto [la, ga] = poly(params, x[{slice(0, n)}], y[{slice(0, n)}]);
    auto [lb, gb] = exact(params, x[{slice(0, n)}], y[{slice(0, n)}]);
    EXPECT_TRUE(close(la, lb, 1e-5)) << n;
    std::vector<Array> wa = tree_flatten(ga), wb = tree_flatten(gb);
    for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(close(wa[i], wb[i], 1e-4, 1e-6)) << n << " leaf " << i;
  }
  EXPECT_EQ(poly.num_compiles(), 1u);
}

TEST(Polymorphic, LookupsAndTheirScatteredGradients) {
  Array table = data(9, {10, 4});
  auto f = [](const Array& t, const Array& ids) {
    auto loss = [&](const Array& tt) { return sum(square(take(tt, ids, 0))) / 3.0; };
    return std::make_pair(take(t, ids, 0), grad(loss)(t));
  };
  auto poly = jit(f, {.name = "embed", .polymorphic = {"", "b"}});
  auto exact = jit(f, {.name = "embed"});
  Array ids = labels(10, 12, 10);
  for (int64_t n : {12, 4, 9}) {
    auto [ea, ga] = poly(table, ids[{slice(0, n)}]);
    auto [eb, gb] = exact(table, ids[{slice(0, n)}]);
    EXPECT_TRUE(close(ea, eb)) << n;
    EXPECT_TRUE(close(ga, gb)) << n;
  }
  EXPECT_EQ(poly.num_compiles(), 1u);
}

TEST(Polymorphic, ConstantsComputedFromTheBatchSize) {
  // the batch size used as a number in C++: its formula is found and computed from the real size
  auto f = [](const Array& x) {
    double n = static_cast<double>(x.shape(0));
    return std::make_tuple(sum(x, 0) / n, sum(x, 0) * (1.0 / n), sum(x, 0) / (n - 1.0), x * (2.0 * n + 3.0));
  };
  auto poly = jit(f, {.name = "consts", .polymorphic = {"b, ..."}});
  auto exact = jit(f, {.name = "consts"});
  expect_same_as_exact(poly, exact, {32, 30, 17, 3, 32}, 1e-6, data(11, {32, 2}));
  EXPECT_EQ(poly.num_compiles(), 1u);
}

TEST(Polymorphic, RandomDrawsAcrossTheBatchAreTheExactProgramsDraws) {
  // partitionable threefry draws element i from counter i, so the first rows agree bit for bit
  auto f = [](const Array& key, const Array& x) { return x * random::bernoulli(key, Array(0.5), x.shape()); };
  auto poly = jit(f, {.name = "dropout", .polymorphic = {"", "b, ..."}});
  auto exact = jit(f, {.name = "dropout"});
  Array x = data(12, {16, 5});
  for (int64_t n : {16, 13, 4}) {
    Array a = poly(random::key(13), x[{slice(0, n)}]), b = exact(random::key(13), x[{slice(0, n)}]);
    EXPECT_EQ(values(a), values(b)) << n;
  }
  EXPECT_EQ(poly.num_compiles(), 1u);
}

TEST(Polymorphic, BucketsChooseTheProgram) {
  auto f = [](const Array& x) { return sum(x * x, 0); };
  auto poly = jit(f, {.name = "b", .polymorphic = {"b, ..."}, .buckets = {8, 32}});
  auto exact = jit(f, {.name = "b"});
  expect_same_as_exact(poly, exact, {3, 20, 7, 8, 32, 1}, 1e-5, data(14, {40, 3}));
  EXPECT_EQ(poly.num_compiles(), 2u);  // buckets 8 and 32
  expect_same_as_exact(poly, exact, {40, 35}, 1e-5, data(14, {40, 3}));
  EXPECT_EQ(poly.num_compiles(), 3u);  // past the buckets: a program of its own size, which 35 then uses
}

TEST(Polymorphic, WhatCannotBeMaskedCompilesPerSizeAndStaysRight) {
  auto sorts = [](const Array& x) { return sort(x, 0); };
  auto poly = jit(sorts, {.name = "sorts", .polymorphic = {"b"}});
  auto exact = jit(sorts, {.name = "sorts"});
  expect_same_as_exact(poly, exact, {8, 5, 8}, 0, data(15, {8}));
  EXPECT_EQ(poly.num_compiles(), 2u);

  // a C++ branch on the batch size: sizes on the other side of it get their own exact program
  auto branches = [](const Array& x) { return x.shape(0) > 10 ? sum(x, 0) * 2.0 : sum(x, 0) * 3.0; };
  auto pb = jit(branches, {.name = "branches", .polymorphic = {"b, ..."}});
  auto eb = jit(branches, {.name = "branches"});
  expect_same_as_exact(pb, eb, {16, 12, 5, 4, 13}, 1e-5, data(16, {16, 2}));
  EXPECT_EQ(pb.num_compiles(), 3u);  // bucket 16 (serving 12 and 13), then 5 and 4 exactly
}

TEST(Polymorphic, AFunctionThatOnlyTakesSomeSizesCompilesPerSize) {
  // pairs of rows: the probe at 7 rows fails to trace, so each size compiles, and errors stay the caller's
  auto pairs = [](const Array& x) { return sum(reshape(x, {x.shape(0) / 2, 2}), 1); };
  auto poly = jit(pairs, {.name = "pairs", .polymorphic = {"b"}});
  auto exact = jit(pairs, {.name = "pairs"});
  expect_same_as_exact(poly, exact, {8, 6}, 1e-6, data(19, {8}));
  EXPECT_EQ(poly.num_compiles(), 2u);
  expect_throws<ShapeError>([&] { poly(data(19, {5})); }, "reshape");
}

TEST(Polymorphic, OutputsKeepTheirBatchAxisWhereverItIs) {
  auto f = [](const Array& x) { return std::make_pair(transpose(x), reshape(x, {-1})); };
  auto poly = jit(f, {.name = "t", .polymorphic = {"b, 3"}});
  auto exact = jit(f, {.name = "t"});
  expect_same_as_exact(poly, exact, {6, 4, 1}, 0, data(17, {6, 3}));
  EXPECT_EQ(poly.num_compiles(), 1u);
}

TEST(Polymorphic, TransformationsOfAPolymorphicFunctionTraceExactly) {
  auto f = jit([](const Array& x) { return mean(square(x)); }, {.name = "f", .polymorphic = {"b"}});
  Array x = data(18, {6});
  Array g = grad([&](const Array& v) { return f(v); })(x);
  EXPECT_TRUE(close(g, x * (2.0 / 6.0)));
  Array per_row = vmap([&](const Array& v) { return f(v); })(reshape(x, {2, 3}));
  EXPECT_TRUE(close(per_row, mean(square(reshape(x, {2, 3})), 1)));
}

TEST(Polymorphic, BadSpecsAndMismatchedBatchesAreClearErrors) {
  auto f = [](const Array& x, const Array& y) { return x + y; };
  expect_throws<ValueError>([&] { jit(f, {.polymorphic = {"b, b"}}); }, "names the batch dimension twice");
  expect_throws<ValueError>([&] { jit(f, {.polymorphic = {"3, 4"}}); }, "names no batch dimension");
  expect_throws<ValueError>([&] { jit(f, {.polymorphic = {"b", "n"}}); }, "one batch dimension is supported");
  expect_throws<ValueError>([&] { jit(f, {.polymorphic = {"..., b"}}); }, "must come last");
  auto g = jit(f, {.name = "g", .polymorphic = {"b", "b"}});
  expect_throws<ShapeError>([&] { g(data(1, {4}), data(2, {5})); }, "the batch dimension is 4 in array 0");
  expect_throws<ShapeError>([&] { g(data(1, {4, 2}), data(2, {4, 2})); }, "does not fit its polymorphic spec (b)");
  auto h = jit(f, {.name = "h", .polymorphic = {"b", "b", "b"}});
  expect_throws<ValueError>([&] { h(data(1, {4}), data(2, {4})); }, "3 polymorphic specs for a call with 2 arguments");
  expect_throws<ValueError>([&] { jit(f, {.polymorphic = {"b"}, .buckets = {0}}); }, "bucket sizes must be positive");
}

TEST(Polymorphic, LogSaysWhichSizesCompile) {
  setenv("GRAFT_LOG_COMPILES", "1", 1);
  auto f = jit([](const Array& x) { return sum(x); }, {.name = "logged", .polymorphic = {"b"}});
  ::testing::internal::CaptureStderr();
  f(data(1, {8}));
  f(data(1, {6}));
  std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("GRAFT_LOG_COMPILES");
  EXPECT_NE(log.find("jit(logged): batch 8 compiles the program of bucket 8"), std::string::npos) << log;
  EXPECT_NE(log.find("jit(logged): batch 6 runs in the program of bucket 8"), std::string::npos) << log;
}

}  // namespace
}  // namespace graft
