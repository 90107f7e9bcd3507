// Attention and the transformer language model: against loops in f64, derivatives against finite
// differences, vmap against a loop, jit against eager, causality, and a model that learns a text.
#include <cmath>
#include <iostream>
#include <limits>

#include "graft/runtime/cpu/dot_kernels.h"
#include "graft/runtime/cpu/features.h"
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

// Fused attention (blocks of 64, online softmax, causal blocks skipped) against the composite: values
// and the gradients of q, k and v, causal, masked (padding with a row that sees nothing, and a random
// mask per head), cross-attention, lengths that are not multiples of the block, under jit and vmap;
// f64 to 1e-12, f32 to 1e-5, bf16 to its rounding.
struct AttnCase {
  Shape q, k, v;
  bool causal;
  int mask;  // 0: none, 1: padding [B, 1, 1, S] hiding batch 0's keys entirely, 2: random [B, H, T, S]
};

std::optional<Array> make_mask(Rng& rng, const AttnCase& c) {
  if (c.mask == 0) return std::nullopt;
  int64_t B = c.q[0], H = c.q[2], T = c.q[1], S = c.k[1];
  if (c.mask == 1) {
    std::vector<double> m(static_cast<size_t>(B * S), 1.0);
    for (int64_t s = 0; s < S; ++s) m[static_cast<size_t>(s)] = 0;  // batch 0 sees nothing
    for (int64_t b = 1; b < B; ++b) m[static_cast<size_t>(b * S + S - 1)] = 0;
    return concrete(m, {B, 1, 1, S}, DType::bool_);
  }
  return rng.uniform({B, H, T, S}, f32) > -0.6;
}

// Turns AVX-512 off for the scope (on: the kernels every other CPU runs), whatever ends it.
struct WithoutAvx512 {
  explicit WithoutAvx512(bool on) { cpu::disable_avx512_for_testing(on); }
  ~WithoutAvx512() { cpu::disable_avx512_for_testing(false); }
  WithoutAvx512(const WithoutAvx512&) = delete;
  WithoutAvx512& operator=(const WithoutAvx512&) = delete;
};

std::vector<AttnCase> attention_cases() {
  return {
      {{2, 70, 3, 8}, {2, 70, 3, 8}, {2, 70, 3, 5}, true, 0},  // causal, one partial block (blocks of 128)
      {{1, 130, 2, 16}, {1, 130, 2, 16}, {1, 130, 2, 16}, true, 0},  // two blocks, the second partial
      {{1, 150, 2, 8}, {1, 150, 2, 8}, {1, 150, 2, 8}, true, 0},     // causal: 64-row panels, a partial one
      {{2, 150, 2, 4}, {2, 260, 2, 4}, {2, 260, 2, 3}, false, 0},    // cross-attention over three key blocks
      {{2, 140, 2, 8}, {2, 200, 2, 8}, {2, 200, 2, 8}, false, 1},    // padding across blocks
      {{1, 200, 2, 4}, {1, 200, 2, 4}, {1, 200, 2, 4}, true, 2},     // causal and a random mask across blocks
      {{2, 5, 2, 4}, {2, 9, 2, 4}, {2, 9, 2, 3}, false, 0},          // cross-attention, tiny
      {{2, 66, 2, 8}, {2, 67, 2, 8}, {2, 67, 2, 8}, false, 1},       // padding, an empty row
      {{2, 65, 2, 4}, {2, 65, 2, 4}, {2, 65, 2, 4}, true, 2},        // causal and a random mask
      {{1, 131, 3, 7}, {1, 131, 3, 7}, {1, 131, 3, 33}, true, 0},    // odd head sizes, Dv past a vector
      {{1, 100, 2, 32}, {1, 100, 2, 32}, {1, 100, 2, 48}, true, 0},  // whole vectors: f32 operands in place
  };
}

TEST(FusedAttention, EqualsTheCompositeInValuesAndGradients) {
  Rng rng(11);
  for (const AttnCase& c : attention_cases()) {
    // f32 twice: on the AVX-512 kernels (where the CPU has them) and on sgemm with the generic
    // softmax, what other CPUs run
    for (int pass = 0; pass < 3; ++pass) {
      const DType d = pass == 0 ? f64 : f32;
      WithoutAvx512 generic(pass == 2);
      double tol = d == f64 ? 1e-12 : 1e-5;
      Array q = rng.uniform(c.q, d, -2, 2), k = rng.uniform(c.k, d, -2, 2), v = rng.uniform(c.v, d);
      std::optional<Array> mask = make_mask(rng, c);
      Array w = rng.uniform({c.q[0], c.q[1], c.q[2], c.v[3]}, d);
      auto run = [&](nn::AttentionImpl impl) {
        return [&, impl](const Array& a, const Array& b, const Array& e) {
          return nn::dot_product_attention(a, b, e, c.causal, mask, impl);
        };
      };
      auto composite = run(nn::AttentionImpl::composite), fused = run(nn::AttentionImpl::fused);
      std::string what = std::string(short_name(d)) + (pass == 2 ? " without AVX-512" : "") +
                         " T=" + std::to_string(c.q[1]) + " mask=" + std::to_string(c.mask) +
                         (c.causal ? " causal" : "");
      Array want = composite(q, k, v);
      EXPECT_TRUE(close(fused(q, k, v), want, tol, tol)) << what;
      std::string program = make_jaxpr(fused)(q, k, v).str();
      EXPECT_NE(program.find("flash_attention"), std::string::npos) << program;
      EXPECT_EQ(program.find("exp"), std::string::npos) << "no softmax written out:\n" << program;
      EXPECT_TRUE(close(jit(fused)(q, k, v), want, tol, tol)) << what << " (jit)";
      auto loss = [&](auto f) {
        return [f, &w](const Array& a, const Array& b, const Array& e) { return sum(f(a, b, e) * w); };
      };
      auto gw = grad(loss(composite), {0, 1, 2})(q, k, v);
      auto gf = grad(loss(fused), {0, 1, 2})(q, k, v);
      auto gj = jit(grad(loss(fused), {0, 1, 2}))(q, k, v);
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(close(gf[i], gw[i], tol, tol)) << what << " gradient " << i;
        EXPECT_TRUE(close(gj[i], gw[i], tol, tol)) << what << " gradient " << i << " (jit)";
      }
    }
  }
}

TEST(FusedAttention, VmapMatchesALoopForValuesAndGradients) {
  Rng rng(12);
  Array q = rng.uniform({3, 2, 70, 2, 8}), k = rng.uniform({3, 2, 70, 2, 8}), v = rng.uniform({3, 2, 70, 2, 8});
  auto f = [](const Array& a, const Array& b, const Array& e) {
    return nn::dot_product_attention(a, b, e, true, std::nullopt, nn::AttentionImpl::fused);
  };
  auto g = grad([&](const Array& a, const Array& b, const Array& e) { return sum(square(f(a, b, e))); }, {0, 1, 2});
  Array batched = vmap(f)(q, k, v);
  // k unbatched: the rule broadcasts it over the mapped axis
  Array half = vmap(f, {.in_axes = {0, std::nullopt, 0}})(q, k[{0}], v);
  auto grads = vmap(g)(q, k, v);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(close(batched[{i}], f(q[{i}], k[{i}], v[{i}]), 1e-6, 1e-6)) << i;
    EXPECT_TRUE(close(half[{i}], f(q[{i}], k[{0}], v[{i}]), 1e-6, 1e-6)) << i;
    auto gi = g(q[{i}], k[{i}], v[{i}]);
    for (size_t j = 0; j < 3; ++j) EXPECT_TRUE(close(grads[j][{i}], gi[j], 1e-5, 1e-6)) << i << " " << j;
  }
}

TEST(FusedAttention, Bf16ComputesInF32AndForwardModeIsATypeError) {
  Rng rng(13);
  // 200 positions: two blocks of keys, so the online softmax rescales (alpha != 1) in the halves' path
  Array q = rng.uniform({2, 200, 2, 8}), k = rng.uniform({2, 200, 2, 8}), v = rng.uniform({2, 200, 2, 8});
  auto run = [](nn::AttentionImpl impl) {
    return [impl](const Array& a, const Array& b, const Array& e) { return nn::dot_product_attention(a, b, e, true, std::nullopt, impl); };
  };
  Array want = run(nn::AttentionImpl::composite)(q, k, v);
  Array got = run(nn::AttentionImpl::fused)(q.astype(bf16), k.astype(bf16), v.astype(bf16));
  EXPECT_EQ(got.dtype(), bf16);
  EXPECT_TRUE(close(got.astype(f32), want, 2e-2, 2e-2));
  // the gradients of the halves' path (dense f32 copies of each head, stored back in bf16)
  Array w = rng.uniform({2, 200, 2, 8});
  auto loss = [&](nn::AttentionImpl impl) {
    return [&, impl](const Array& a, const Array& b, const Array& e) { return sum(run(impl)(a, b, e).astype(f32) * w); };
  };
  auto gw = grad(loss(nn::AttentionImpl::composite), {0, 1, 2})(q, k, v);
  auto gb = jit(grad(loss(nn::AttentionImpl::fused), {0, 1, 2}))(q.astype(bf16), k.astype(bf16), v.astype(bf16));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(gb[i].dtype(), bf16);
    EXPECT_TRUE(close(gb[i].astype(f32), gw[i], 3e-2, 3e-2)) << "gradient " << i;
  }
  expect_throws<TypeError>([&] { jvp(run(nn::AttentionImpl::fused), {q, k, v}, {q, k, v}); }, "forward-mode");
}

// Half heads three ways, each against the composite in f32 on the same half values: bf16 on the
// CPU's bf16 dot products (cpu::bf16dot, where it has them), halves widened onto the f32 kernels
// (GRAFT_NATIVE_BF16=0's path on an AVX-512 CPU, and f16's), and the generic heads (sgemm on dense f32
// copies: what a CPU without AVX-512 runs). Every case above (partial blocks and panels, masks, rows
// that see nothing, odd head sizes), values and gradients under jit. Tolerances are bf16's: the
// weights and the logits' gradients are rounded to bf16 for the native products, as a bf16 composite
// would round them.
TEST(FusedAttention, HalvesOnEveryKernelFamilyMatchTheComposite) {
  Rng rng(14);
  for (int way = 0; way < 3; ++way) {
    if (way == 0 && !cpu::bf16dot::available()) {
      std::cout << "no AVX512-BF16 here: the native bf16 heads are not tested\n";
      continue;
    }
    if (way == 1 && !cpu::f32dot::available()) {
      std::cout << "no AVX-512 here: the widened heads are not tested\n";
      continue;
    }
    cpu::set_native_bf16_for_testing(way == 0 ? 1 : 0);
    WithoutAvx512 generic(way == 2);
    for (DType half : {bf16, f16}) {
      if (way == 0 && half == f16) continue;  // f16 has no native products
      for (const AttnCase& c : attention_cases()) {
        Array q = rng.uniform(c.q, half, -2, 2), k = rng.uniform(c.k, half, -2, 2),
              v = rng.uniform(c.v, half);
        std::optional<Array> mask = make_mask(rng, c);
        Array w = rng.uniform({c.q[0], c.q[1], c.q[2], c.v[3]}, f32);
        auto run = [&](nn::AttentionImpl impl) {
          return [&, impl](const Array& a, const Array& b, const Array& e) {
            return nn::dot_product_attention(a, b, e, c.causal, mask, impl);
          };
        };
        const char* ways[] = {"native", "widened", "generic"};
        std::string what = std::string(ways[way]) + " " + std::string(short_name(half)) +
                           " T=" + std::to_string(c.q[1]) + " S=" + std::to_string(c.k[1]) +
                           " D=" + std::to_string(c.q[3]) + " mask=" + std::to_string(c.mask) +
                           (c.causal ? " causal" : "");
        Array want = run(nn::AttentionImpl::composite)(q.astype(f32), k.astype(f32), v.astype(f32));
        // eagerly too: without native bf16 products jit runs a bf16 head on the f32 values around it
        // (passes::register_bf16_in_f32), eager calls run the half heads themselves
        for (bool jitted : {true, false}) {
          Array got =
              jitted ? jit(run(nn::AttentionImpl::fused))(q, k, v) : run(nn::AttentionImpl::fused)(q, k, v);
          EXPECT_EQ(got.dtype(), half);
          EXPECT_TRUE(close(got.astype(f32), want, 1.5e-2, 1.5e-2))
              << what << (jitted ? " (jit)" : " (eager)");
        }
        auto loss = [&](nn::AttentionImpl impl) {
          return [&, impl](const Array& a, const Array& b, const Array& e) {
            return sum(run(impl)(a, b, e).astype(f32) * w);
          };
        };
        auto gw =
            grad(loss(nn::AttentionImpl::composite), {0, 1, 2})(q.astype(f32), k.astype(f32), v.astype(f32));
        auto gb = jit(grad(loss(nn::AttentionImpl::fused), {0, 1, 2}))(q, k, v);
        for (size_t i = 0; i < 3; ++i) {
          EXPECT_EQ(gb[i].dtype(), half);
          EXPECT_TRUE(close(gb[i].astype(f32), gw[i], 3e-2, 3e-2)) << what << " gradient " << i;
        }
      }
    }
  }
  cpu::set_native_bf16_for_testing(-1);
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
