// graft::random: Threefry known answers, JAX's recorded values, both bit-generation modes, and the
// distributions.
#include <algorithm>
#include <numeric>
#include <set>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

Array u32s(std::vector<uint32_t> v) { return array(v); }

std::vector<uint32_t> words(const Array& a) { return a.to_vector<uint32_t>(); }

// Restores the default mode after a test that changes it.
struct ModeGuard {
  bool saved = random::threefry_partitionable();
  explicit ModeGuard(bool on) { random::set_threefry_partitionable(on); }
  ~ModeGuard() { random::set_threefry_partitionable(saved); }
};

TEST(Threefry, Random123KnownAnswers) {
  // Random123 kat_vectors, threefry2x32 with 20 rounds: counter, key -> output
  struct Kat {
    uint32_t c0, c1, k0, k1, y0, y1;
  } kats[] = {{0, 0, 0, 0, 0x6b200159u, 0x99ba4efeu},
              {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0x1cb996fcu, 0xbb002be7u},
              {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xc4923a9cu, 0x483df7a0u}};
  for (auto& k : kats) {
    Arrays y = lax::threefry2x32(array(k.k0), array(k.k1), array(k.c0), array(k.c1));
    EXPECT_EQ(y[0].item<uint32_t>(), k.y0);
    EXPECT_EQ(y[1].item<uint32_t>(), k.y1);
  }
  // vectorized: the same three at once, with broadcast keys
  Arrays y = lax::threefry2x32(array(0u), array(0u), u32s({0, 0}), u32s({0, 0}));
  EXPECT_EQ(words(y[0]), (std::vector<uint32_t>{0x6b200159u, 0x6b200159u}));
}

TEST(Random, KeysFromSeeds) {
  EXPECT_EQ(words(random::key(0)), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(words(random::key(42)), (std::vector<uint32_t>{0, 42}));
  EXPECT_EQ(words(random::key((uint64_t(3) << 32) | 7)), (std::vector<uint32_t>{3, 7}));
  EXPECT_EQ(words(random::key_data(random::key(5))), (std::vector<uint32_t>{0, 5}));
  EXPECT_THROW(random::split(array({1.0f, 2.0f})), TypeError);
}

TEST(Random, LegacyModeMatchesJaxRecordedValues) {
  ModeGuard legacy(false);
  EXPECT_EQ(words(random::split(random::key(0))),
            (std::vector<uint32_t>{4146024105u, 967050713u, 2718843009u, 1272950319u}));
  EXPECT_EQ(words(random::split(random::key(0), 3)),
            (std::vector<uint32_t>{2467461003u, 428148500u, 3186719485u, 3840466878u, 2562233961u, 1946702221u}));
  EXPECT_EQ(words(random::bits(random::key(0), {3})), (std::vector<uint32_t>{4146024105u, 1351547692u, 2718843009u}));
}

// JAX's recorded draws (tests/random_test.py of JAX 0.11.1, drawn in the legacy mode), seeded as JAX
// seeds them: zlib.adler32 of the sampler's name and "threefry2x32". python/tests/test_random_jax_values.py
// checks the whole table from Python.
TEST(Random, LegacyModeDrawsJaxsRecordedDistributionValues) {
  ModeGuard legacy(false);
  auto near = [](const Array& got, std::vector<double> want, const char* name) {
    auto g = got.astype(f64).to_vector<double>();
    ASSERT_EQ(g.size(), want.size()) << name;
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-5 * std::abs(want[i]) + 1e-6) << name << " " << i;
  };
  Shape five{5};
  near(random::normal(random::key(1193674498), five), {-1.173234, -1.511662, 0.070593, -0.099764, 1.052845}, "normal");
  near(random::uniform(random::key(1338574713), five), {0.298671, 0.073213, 0.873356, 0.260549, 0.412797}, "uniform");
  near(random::gamma(random::key(1038747260), Array(0.8f), five), {0.824221, 1.724476, 0.502882, 5.386132, 0.685543},
       "gamma");
  near(random::loggamma(random::key(1440221118), Array(0.8f), five),
       {0.240559, -3.575443, -0.450946, -2.161372, -2.943277}, "loggamma");
  near(random::beta(random::key(923534869), Array(0.8f), Array(0.9f), five),
       {0.13259, 0.824893, 0.948363, 0.964155, 0.235448}, "beta");
  near(random::dirichlet(random::key(1590822961), array({0.5f, 0.6f, 0.7f}), Shape{2}),
       {0.003128, 0.009694, 0.987178, 0.025938, 0.479091, 0.494971}, "dirichlet");
  near(random::poisson(random::key(1349191556), Array(5.0f), five), {7, 3, 6, 11, 6}, "poisson");
  near(random::randint(random::key(1319372649), five, Array(0), Array(10)), {0, 5, 7, 7, 5}, "randint");
  near(random::truncated_normal(random::key(2846034731), 0.0, 2.0, five),
       {0.582807, 1.709771, 0.159513, 0.861376, 0.36148}, "truncated_normal");
  near(random::cauchy(random::key(1175914230), five), {-0.088416, -10.169713, 3.49677, -1.18056, 0.34556}, "cauchy");
  near(random::gumbel(random::key(1179715317), five), {2.06701, 0.911726, 0.145736, 0.185427, -0.00711}, "gumbel");
  near(random::maxwell(random::key(1331627891), five), {3.070779, 0.908479, 1.521317, 0.875551, 1.306137}, "maxwell");
  near(random::multivariate_normal(random::key(3497659512), ones({1, 3}), eye(3), Shape{2}),
       {1.067826, 1.215599, 0.234166, -0.237534, 1.32591, 1.413987}, "multivariate_normal");
  near(random::bits(random::key(942802475), five, DType::u8), {10, 158, 82, 54, 158}, "bits u8");
  near(random::bits(random::key(942802475), five, DType::u16), {6738, 38161, 50695, 57337, 61600}, "bits u16");
  // JAX's testPRNGValues
  near(random::randint(random::key(0), {3, 3}, Array(0), Array(8)), {2, 1, 3, 6, 1, 5, 6, 3, 4}, "randint 0..8");
  EXPECT_EQ(words(random::split(random::key(0), 4)),
            (std::vector<uint32_t>{2285895361u, 1501764800u, 1518642379u, 4090693311u, 433833334u, 4221794875u,
                                   839183663u, 3740430601u}));
}

TEST(Random, PartitionableModeIsFoldInSymmetric) {
  ModeGuard on(true);
  Array k = random::key(1234);
  Array ks = random::split(k, 5);
  ASSERT_EQ(ks.shape(), (Shape{5, 2}));
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(words(ks[static_cast<int64_t>(i)]), words(random::fold_in(k, i)));
  // split(k)[i] is threefry(k, (hi(i), lo(i)))
  Arrays y = lax::threefry2x32(array(0u), array(1234u), array(0u), array(3u));
  EXPECT_EQ(words(ks[3]), (std::vector<uint32_t>{y[0].item<uint32_t>(), y[1].item<uint32_t>()}));
  // bits: y0 ^ y1 of the flat index
  Array b = random::bits(k, {2, 2});
  Arrays z = lax::threefry2x32(array(0u), array(1234u), array(0u), array(2u));
  EXPECT_EQ(words(b)[2], z[0].item<uint32_t>() ^ z[1].item<uint32_t>());
}

TEST(Random, FoldInIsTheSameInBothModes) {
  Array a, b;
  {
    ModeGuard m(true);
    a = random::fold_in(random::key(7), 99u);
  }
  {
    ModeGuard m(false);
    b = random::fold_in(random::key(7), 99u);
  }
  EXPECT_EQ(words(a), words(b));
}

TEST(Random, UniformIsBuiltFromTheMantissaBits) {
  Array k = random::key(3);
  Array b = random::bits(k, {100});
  Array u = random::uniform(k, {100});
  auto bw = words(b);
  auto uv = u.to_vector<float>();
  for (size_t i = 0; i < bw.size(); ++i) {
    uint32_t fb = (bw[i] >> 9) | 0x3f800000u;
    float f;
    std::memcpy(&f, &fb, 4);
    EXPECT_EQ(uv[i], f - 1.0f);  // bit-exact, as jax.random.uniform
    EXPECT_GE(uv[i], 0.0f);
    EXPECT_LT(uv[i], 1.0f);
  }
  Array r = random::uniform(k, {1000}, f64, -2.0, 3.0);
  EXPECT_EQ(r.dtype(), f64);
  EXPECT_GE(min(r).item<double>(), -2.0);
  EXPECT_LT(max(r).item<double>(), 3.0);
  EXPECT_NEAR(mean(r).item<double>(), 0.5, 0.15);
  for (DType d : {f16, bf16}) {
    Array h = random::uniform(k, {1000}, d);
    EXPECT_EQ(h.dtype(), d);
    EXPECT_GE(min(h).item<float>(), 0.0f);
    EXPECT_LT(max(h).item<float>(), 1.0f);
  }
}

TEST(Random, NormalMoments) {
  Array x = random::normal(random::key(11), {20000});
  EXPECT_NEAR(mean(x).item<double>(), 0.0, 0.03);
  EXPECT_NEAR(std(x).item<double>(), 1.0, 0.03);
  // about 68.3% within one standard deviation
  EXPECT_NEAR(mean(abs(x) < 1.0).item<double>(), 0.6827, 0.015);
  Array t = random::truncated_normal(random::key(12), -2.0, 2.0, {5000});
  EXPECT_GT(min(t).item<float>(), -2.0f);
  EXPECT_LT(max(t).item<float>(), 2.0f);
}

TEST(Random, BernoulliCategoricalPermutation) {
  Array b = random::bernoulli(random::key(5), Array(0.3), Shape{10000});
  EXPECT_EQ(b.dtype(), bool_);
  EXPECT_NEAR(mean(b).item<double>(), 0.3, 0.02);
  Array logits = log(array({0.2f, 0.5f, 0.3f}));
  Array c = random::categorical(random::key(6), logits, -1, Shape{20000});
  const double probs[] = {0.2, 0.5, 0.3};
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(mean(c == k).item<double>(), probs[k], 0.015);
  Array p = random::permutation(random::key(8), 1000);
  auto v = p.to_vector<int>();
  std::vector<int> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> want(1000);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(sorted, want);
  EXPECT_NE(v, want);
  Array rows = random::permutation(random::key(8), arange(20.0).reshape({10, 2}));
  EXPECT_EQ(rows.shape(), (Shape{10, 2}));
  EXPECT_TRUE(close(sum(rows, 0), array({90.0f, 100.0f})));
}

TEST(Random, DeterministicAndIndependent) {
  EXPECT_TRUE(array_equal(random::normal(random::key(1), {50}), random::normal(random::key(1), {50})));
  Array ks = random::split(random::key(1));
  EXPECT_FALSE(array_equal(random::normal(ks[0], {50}), random::normal(ks[1], {50})));
}

TEST(Random, WorksUnderJitAndVmap) {
  auto sample = [](const Array& k) { return random::uniform(k, {4}); };
  Array k = random::key(9);
  EXPECT_TRUE(close(jit(sample)(k), sample(k), 0, 0));
  Array ks = random::split(k, 3);
  Array batched = vmap(sample)(ks);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(close(batched[i], sample(ks[i]), 0, 0));
  // a jitted function of a key does not retrace for new keys
  auto jf = jit(sample);
  jf(ks[0]);
  jf(ks[1]);
  EXPECT_EQ(jf.num_traces(), 1u);
}

TEST(Random, KeyDataTakesTheBatchesOfKeysThatSplitReturns) {
  Array ks = random::split(random::key(3), 4);
  EXPECT_TRUE(array_equal(random::key_data(ks), ks));
  Array nested = random::split(ks[0], 6).reshape({2, 3, 2});
  EXPECT_EQ(random::key_data(nested).shape(), (Shape{2, 3, 2}));
  expect_throws<TypeError>([] { random::key_data(zeros({3}, DType::u32)); }, "u32[..., 2]");
  // the sampling functions take one key and say what to do with a batch
  expect_throws<TypeError>([&] { random::uniform(ks, {2}); }, "index one (keys[0]) or map over them with vmap");
  expect_throws<TypeError>([&] { random::split(ks); }, "got a batch of keys u32[4,2]");
}

}  // namespace
}  // namespace graft
