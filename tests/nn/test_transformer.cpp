// Attention and the transformer language model: against loops in f64, derivatives against finite
// differences, vmap against a loop, jit against eager, causality, and a model that learns a text.
#include <cmath>
#include <limits>

#include "testing.h"

namespace graft {
namespace {
using namespace graft::testing;

// softmax(q.k / sqrt(D)) v by loops over every index, in f64; allowed(b, h, t, s) masks pairs.
template <class Allowed>
std::vector<double> attention_loops(const Array& q, const Array& k, const Array& v, Allowed allowed) {
  auto Q = values(q), K = values(k), V = values(v);
  int64_t B = q.shape()[0], T = q.shape()[1], H = q.shape()[2], D = q.shape()[3], S = k.shape()[1], E = v.shape()[3];
  std::vector<double> out(static_cast<size_t>(B * T * H * E), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> w(static_cast<size_t>(S));
        double mx = -INFINITY, total = 0;
        bool some = false;
        for (int64_t s = 0; s < S; ++s) {
          if (!allowed(b, h, t, s)) continue;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += Q[static_cast<size_t>(((b * T + t) * H + h) * D + d)] * K[static_cast<size_t>(((b * S + s) * H + h) * D + d)];
          w[static_cast<size_t>(s)] = dot / std::sqrt(double(D));
          mx = std::max(mx, w[static_cast<size_t>(s)]);
          some = true;
        }
        if (!some) continue;
        for (int64_t s = 0; s < S; ++s)
          if (allowed(b, h, t, s)) total += (w[static_cast<size_t>(s)] = std::exp(w[static_cast<size_t>(s)] - mx));
        for (int64_t s = 0; s < S; ++s) {
          if (!allowed(b, h, t, s)) continue;
          for (int64_t e = 0; e < E; ++e)
            out[static_cast<size_t>(((b * T + t) * H + h) * E + e)] +=
                w[static_cast<size_t>(s)] / total * V[static_cast<size_t>(((b * S + s) * H + h) * E + e)];
        }
      }
  return out;
}

TEST(Attention, MatchesLoopsWithCausalAndExplicitMasks) {
  Rng rng(1);
  Array q = rng.uniform({2, 3, 2, 4}, f64), k = rng.uniform({2, 5, 2, 4}, f64), v = rng.uniform({2, 5, 2, 3}, f64);
  auto all = [](int64_t, int64_t, int64_t, int64_t) { return true; };
  EXPECT_TRUE(close(nn::dot_product_attention(q, k, v), concrete(attention_loops(q, k, v, all), {2, 3, 2, 3}, f64), 1e-12, 1e-12));
  // causal: as many queries as keys
  Array kc = rng.uniform({2, 3, 2, 4}, f64), vc = rng.uniform({2, 3, 2, 3}, f64);
  auto causal = [](int64_t, int64_t, int64_t t, int64_t s) { return s <= t; };
  EXPECT_TRUE(close(nn::dot_product_attention(q, kc, vc, true), concrete(attention_loops(q, kc, vc, causal), {2, 3, 2, 3}, f64),
                    1e-12, 1e-12));
  // an explicit mask [B, 1, 1, S] (padding): key 3 and 4 of batch 1 hidden; batch 0 row... all hidden -> zeros
  std::vector<double> m(10, 1.0);
  m[8] = m[9] = 0;
  for (int i = 0; i < 5; ++i) m[static_cast<size_t>(i)] = 0;  // batch 0 sees nothing
  Array mask = concrete(m, {2, 1, 1, 5}, DType::bool_);
  auto padded = [&](int64_t b, int64_t, int64_t, int64_t s) { return m[static_cast<size_t>(b * 5 + s)] != 0; };
  Array got = nn::dot_product_attention(q, k, v, false, mask);
  EXPECT_TRUE(close(got, concrete(attention_loops(q, k, v, padded), {2, 3, 2, 3}, f64), 1e-12, 1e-12));
  EXPECT_EQ(values(got[{0}]), std::vector<double>(18, 0.0));
  // errors name the operation and the shapes
  expect_throws<ShapeError>([&] { nn::dot_product_attention(q, k[{slice(0, 1)}], v); }, "do not agree");
  expect_throws<ShapeError>([&] { nn::dot_product_attention(q, k, v, true); }, "causal attention needs as many queries");
  expect_throws<TypeError>([&] { nn::dot_product_attention(q, k.astype(f32), v); }, "one floating dtype");
  expect_throws<ShapeError>([&] { nn::dot_product_attention(ones({3, 4}), k, v); }, "[batch, length, heads, head_dim]");
}

TEST(Attention, GradientsMatchFiniteDifferences) {
  Rng rng(2);
  nn::MultiHeadAttention mha{6, 2, true};
  Tree p = tree_map([](const Array& a) { return a.astype(f64); }, mha.init(random::key(3)));
  Array x = rng.uniform({2, 4, 6}, f64);
  auto loss = [&](const Array& xx) { return sum(square(mha(p, xx)) * 0.5 + mha(p, xx)); };
  EXPECT_TRUE(close(grad(loss)(x), num_grad(loss, x), 1e-6, 1e-7));
  // and with respect to the query projection's weights
  auto loss_w = [&](const Array& w) {
    Tree q = p;
    q["query"]["w"] = w;
    return sum(square(mha(q, x)));
  };
  Array w = p["query"]["w"].array();
  EXPECT_TRUE(close(grad(loss_w)(w), num_grad(loss_w, w), 1e-6, 1e-7));
}

TEST(Attention, VmapMatchesALoopAndJitMatchesEager) {
  Rng rng(4);
  Array q = rng.uniform({3, 2, 5, 2, 4}), k = rng.uniform({3, 2, 5, 2, 4}), v = rng.uniform({3, 2, 5, 2, 4});
  auto f = [](const Array& q, const Array& k, const Array& v) { return nn::dot_product_attention(q, k, v, true); };
  Array batched = vmap(f)(q, k, v);
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(close(batched[{i}], f(q[{i}], k[{i}], v[{i}]), 1e-6, 1e-6));
  EXPECT_TRUE(close(jit(f)(q[{0}], k[{0}], v[{0}]), f(q[{0}], k[{0}], v[{0}]), 1e-5, 1e-6));
}

TEST(TransformerLM, ShapesCausalityAndErrors) {
  nn::TransformerLM lm{.vocab = 50, .dim = 16, .heads = 4, .layers = 2, .max_len = 12};
  Tree p = lm.init(random::key(0));
  // embeddings 50x16 + 12x16, 2 blocks of (2 layer norms, 4 projections, a 4x MLP), a final norm, the head
  int64_t block = 2 * 32 + 4 * (16 * 16 + 16) + (16 * 64 + 64) + (64 * 16 + 16);
  EXPECT_EQ(nn::num_params(p), 50 * 16 + 12 * 16 + 2 * block + 32 + 16 * 50 + 50);
  Array ids = Rng(5).ints({3, 10}, DType::i32, 0, 49);
  Array logits = lm(p, ids);
  EXPECT_EQ(logits.shape(), (Shape{3, 10, 50}));
  // position t sees tokens up to t only: changing token 6 leaves positions 0..5 alone
  std::vector<double> changed = values(ids);
  changed[6] = double((int64_t(changed[6]) + 1) % 50);
  Array other = lm(p, concrete(changed, {3, 10}, DType::i32));
  EXPECT_TRUE(close(other[{0, slice(0, 6)}], logits[{0, slice(0, 6)}], 1e-6, 1e-6));
  EXPECT_FALSE(close(other[{0, slice(6, 10)}], logits[{0, slice(6, 10)}], 1e-6, 1e-6));
  expect_throws<ShapeError>([&] { lm(p, zeros({1, 13}, DType::i32)); }, "13 positions, more than max_len = 12");
  expect_throws<ShapeError>([&] { lm(p, zeros({1, 5})); }, "ids must be integers");
  expect_throws<ValueError>([&] { nn::MultiHeadAttention{10, 3}.init(random::key(0)); }, "multiple of heads");
  // dropout draws from the key; without one the model is deterministic
  nn::TransformerLM drop = lm;
  drop.dropout = 0.5;
  EXPECT_TRUE(close(drop(p, ids), logits, 1e-6, 1e-6));
  EXPECT_FALSE(close(drop(p, ids, random::key(1)), logits, 1e-3, 1e-3));
}

// A repeating text is learned: the loss falls far below the uniform guess's log(vocab) in a few
// dozen Adam steps of a jitted training step.
TEST(TransformerLM, LearnsARepeatingText) {
  std::string text;
  while (text.size() < 600) text += "the cat sat on the mat. ";
  std::vector<double> bytes(text.begin(), text.end());
  Array tokens = concrete(bytes, {static_cast<int64_t>(bytes.size())}, DType::i32);
  const int64_t len = 16;
  std::vector<Array> xs, ys;
  for (int64_t i = 0; i + len + 1 < tokens.shape()[0]; i += 7) {
    xs.push_back(tokens[{slice(i, i + len)}]);
    ys.push_back(tokens[{slice(i + 1, i + len + 1)}]);
  }
  Array x = stack(xs, 0), y = stack(ys, 0);
  nn::TransformerLM lm{.vocab = 128, .dim = 32, .heads = 2, .layers = 1, .max_len = len};
  Tree p = lm.init(random::key(7));
  auto opt = optim::adam(3e-3);
  Tree s = opt.init(p);
  auto step = jit([&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
    auto [l, g] = value_and_grad([&](const Tree& q) { return nn::cross_entropy(lm(q, x), y); })(p);
    auto [u, s2] = opt.update(g, s, p);
    return std::make_tuple(optim::apply_updates(p, u), s2, l);
  });
  double first = 0, last = 0;
  for (int i = 0; i < 60; ++i) {
    Array l;
    std::tie(p, s, l) = step(p, s, x, y);
    (i == 0 ? first : last) = l.item<double>();
  }
  EXPECT_NEAR(first, std::log(128.0), 0.5);
  EXPECT_LT(last, 1.0) << "from " << first;
}

}  // namespace
}  // namespace graft
