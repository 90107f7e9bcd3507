// Checks that run a program on another device and compare it with the CPU, shared by the CUDA tests
// (on a GPU) and the simulated device's (everywhere): placement and errors, transformations and
// control flow on device arrays, and every conformance row's values, derivatives, vmap and jit.
#pragma once

#include <sstream>
#include <string>

#include "graft/compiler/fusion.h"
#include "graft/compiler/pipeline.h"
#include "graft/io/export.h"
#include "prims/conformance.h"

namespace graft::testing {

inline Inputs to_device(const Inputs& in, Device d) {
  Inputs out;
  for (const Array& x : in) out.push_back(x.valid() ? device_put(x, d) : x);
  return out;
}

// Every conformance row but the collectives': elementwise, structural (linear algebra included) and
// complex (FFT and complex linear algebra included).
inline std::vector<Case> device_cases() {
  std::vector<Case> c = elementwise_cases();
  for (auto& more : {structural_cases(), complex_cases()}) c.insert(c.end(), more.begin(), more.end());
  return c;
}

/// device_put, committed placement, moving uncommitted operands, the mixing error, the default
/// device, reading values back.
inline void check_round_trip_and_placement(Device d) {
  const std::string name = d.str();
  Array x = concrete({1, 2, 3, 4, 5, 6}, {2, 3});
  Array g = device_put(x, d);
  EXPECT_EQ(g.device(), d);
  EXPECT_TRUE(g.concrete()->committed());
  EXPECT_EQ(g.to_vector<float>(), x.to_vector<float>());
  Array y = (g * 2.0f + 1.0f).block_until_ready();  // weak scalars move to the committed device
  EXPECT_EQ(y.device(), d);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5, 7, 9, 11, 13}));
  expect_throws<ValueError>([&] { (void)y.raw_data(); }, "lives on " + name);
  Array c = device_put(x, Device::cpu());  // committed to the CPU
  expect_throws<ValueError>([&] { (void)(c + g); }, "committed to different devices, cpu:0 and " + name);
  Array u = x + g;  // x is not committed: it moves
  EXPECT_EQ(u.device(), d);
  {
    DefaultDevice on(d);
    Array z = zeros({4}, DType::f32);
    EXPECT_EQ(z.device(), d);
    EXPECT_FALSE(z.concrete()->committed());
  }
  std::ostringstream os;
  os << g;
  EXPECT_NE(os.str().find("[[1., 2., 3.]"), std::string::npos) << os.str();
}

/// grad, vmap, jit (softmax: a fused program on the CPU), cond and while_loop on device arrays.
inline void check_transformations_and_control_flow(Device d) {
  Rng rng(3);
  Array w = rng.uniform({5, 4}, DType::f32), x = rng.uniform({8, 5}, DType::f32);
  auto loss = [](const Array& w, const Array& x) { return mean(square(tanh(matmul(x, w)))); };
  auto g_cpu = grad([&](const Array& w) { return loss(w, x); })(w);
  Array wg = device_put(w, d), xg = device_put(x, d);
  auto g_dev = grad([&](const Array& w) { return loss(w, xg); })(wg);
  EXPECT_EQ(g_dev.device(), d);
  EXPECT_TRUE(close(g_dev, g_cpu, 1e-5, 1e-6));
  Array v = vmap([](const Array& r) { return sum(exp(r)); })(xg);
  EXPECT_EQ(v.device(), d);
  EXPECT_TRUE(close(v, vmap([](const Array& r) { return sum(exp(r)); })(x), 1e-5, 1e-5));
  auto jf = jit([](const Array& a) { return softmax(a, -1); });
  Array want = jf(x);  // compiled for the CPU first: the device call reuses the program
  Array j = jf(xg);
  EXPECT_EQ(j.device(), d);
  EXPECT_TRUE(close(j, want, 1e-5, 1e-6));
  auto jg = jit(grad([&](const Array& w) { return loss(w, xg); }));
  Array jgd = jg(wg);
  EXPECT_EQ(jgd.device(), d);
  EXPECT_TRUE(close(jgd, g_cpu, 1e-5, 1e-6));
  auto branch = [](const Array& p, const Array& a) {
    return cond(p, [](const Array& a) { return a * 2.0f; }, [](const Array& a) { return a - 1.0f; }, a);
  };
  Array c = branch(sum(xg) > 0.0f, xg);
  EXPECT_EQ(c.device(), d);
  EXPECT_TRUE(close(c, branch(sum(x) > 0.0f, x)));
  auto loop = [](const Array& a) {
    return while_loop([](const Array& s) { return sum(s) < 1000.0f; }, [](const Array& s) { return s * 2.0f + 1.0f; }, a);
  };
  Array l = loop(xg);
  EXPECT_EQ(l.device(), d);
  EXPECT_TRUE(close(l, loop(x)));
}

/// The row's values on the device equal the CPU's, in every dtype it lists.
inline void check_values_match_the_cpu(const Case& c, Device d) {
  for (DType t : c.value_dtypes) {
    SCOPED_TRACE(std::string("dtype ") + std::string(short_name(t)));
    Rng rng(1);
    Inputs in = c.inputs(rng, t);
    Inputs want = run_case(c, in);
    Inputs got = run_case(c, to_device(in, d));
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      if (!in.empty() && c.prim != &prims::device_put_p) {
        EXPECT_EQ(got[k].device(), d) << "output " << k;
      }
      EXPECT_EQ(got[k].dtype(), want[k].dtype());
      bool fl = is_floating(got[k].dtype());
      double tol = !fl ? 0 : got[k].dtype() == DType::f64 ? 1e-12 : got[k].dtype() == DType::f32 ? 2e-6 : 1e-2;
      EXPECT_TRUE(close(got[k], want[k], tol, tol)) << "output " << k;
    }
  }
}

/// Forward and reverse derivatives (f64) on the device equal the CPU's.
inline void check_derivatives_match_the_cpu(const Case& c, Device d) {
  Rng rng(2);
  Inputs x = c.inputs(rng, DType::f64);
  Inputs t;
  for (size_t i = 0; i < x.size(); ++i) t.push_back(c.diff[i] ? rng.uniform(x[i].shape(), x[i].dtype()) : Array());
  FlatFn f = [&](const Inputs& in) { return run_case(c, in); };
  auto [y, ty] = jvp_flat(f, x, t);
  auto [yg, tyg] = jvp_flat(f, to_device(x, d), to_device(t, d));
  for (size_t k = 0; k < ty.size(); ++k)
    if (ty[k].valid() && tyg[k].valid()) {
      EXPECT_TRUE(close(tyg[k], ty[k], 1e-10, 1e-10)) << "jvp output " << k;
    }
  VjpResult v = vjp_of_diff(c, f, x), vg = vjp_of_diff(c, f, to_device(x, d));
  Inputs ct;
  for (auto& o : v.outs) ct.push_back(is_floating(o.dtype()) ? rng.uniform(o.shape(), o.dtype()) : Array());
  Inputs g = v.pullback(ct), gg = vg.pullback(to_device(ct, d));
  for (size_t i = 0; i < g.size(); ++i)
    if (c.diff[i] && g[i].valid() && gg[i].valid()) {
      EXPECT_TRUE(close(gg[i], g[i], 1e-10, 1e-10)) << "vjp input " << i;
    }
}

/// vmap and jit on device arrays equal the CPU's (the jitted function is compiled for the CPU first,
/// so the device call reuses a CPU program, fused loops included).
inline void check_vmap_and_jit_match_the_cpu(const Case& c, Device d) {
  Rng rng(5);
  Inputs x = c.inputs(rng, DType::f32);
  if (x.empty()) GTEST_SKIP() << "no inputs";
  FlatFn f = [&](const Inputs& in) { return run_case(c, in); };
  Inputs stacked;
  for (auto& a : x) stacked.push_back(stack({a, a, a}, 0));
  std::vector<std::optional<int64_t>> axes(x.size(), 0);
  Inputs want = vmap_flat(f, stacked, axes, {0});
  Inputs got = vmap_flat(f, to_device(stacked, d), axes, {0});
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(close(got[k], want[k], 2e-6, 2e-6)) << "vmap output " << k;
  auto jf = jit([&c](const std::vector<Array>& in) { return run_case(c, in); });
  Inputs jw = jf(x), jg = jf(to_device(x, d));
  for (size_t k = 0; k < jg.size(); ++k) {
    if (c.prim != &prims::device_put_p) {
      EXPECT_EQ(jg[k].device(), d) << "jit output " << k;
    }
    EXPECT_TRUE(close(jg[k], jw[k], 2e-6, 2e-6)) << "jit output " << k;
  }
}

/// A jitted training step (an MLP with a softmax cross-entropy and an Adam-style update: fused
/// elementwise chains, broadcasts and row reductions) on device arrays, against the same step on the
/// CPU; its outputs stay on the device. Returns the step's results on the device.
inline std::vector<Array> check_jitted_training_step(Device d) {
  Rng rng(5);
  Array w1 = rng.uniform({20, 32}, DType::f32, -0.3, 0.3), w2 = rng.uniform({32, 10}, DType::f32, -0.3, 0.3);
  Array b1 = rng.uniform({32}, DType::f32, -0.1, 0.1), v = rng.uniform({32, 10}, DType::f32, 0, 0.01);
  Array x = rng.uniform({16, 20}, DType::f32), y = rng.ints({16}, DType::i32, 0, 9);
  auto loss = [](const Array& w1, const Array& b1, const Array& w2, const Array& x, const Array& y) {
    Array logits = matmul(relu(matmul(x, w1) + b1), w2);
    Array lse = log(sum(exp(logits - max(logits, -1, true)), -1)) + max(logits, -1);
    return mean(lse - sum(logits * one_hot(y, 10), -1));
  };
  auto step = [&](const Array& w1, const Array& b1, const Array& w2, const Array& v, const Array& x, const Array& y) {
    auto [l, g] = value_and_grad(loss, {0, 1, 2})(w1, b1, w2, x, y);
    Array v2 = v * 0.9 + square(g[2]) * 0.1;
    return std::vector<Array>{w1 - g[0] * 0.1, b1 - g[1] * 0.1, w2 - g[2] * 0.1 / (sqrt(v2) + 1e-3), v2, l};
  };
  auto js = jit(step);
  std::vector<Array> want = js(w1, b1, w2, v, x, y);
  std::vector<Array> got = js(device_put(w1, d), device_put(b1, d), device_put(w2, d), device_put(v, d),
                              device_put(x, d), device_put(y, d));
  EXPECT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
    EXPECT_EQ(got[k].device(), d) << "output " << k;
    EXPECT_TRUE(close(got[k], want[k], 1e-4, 1e-5)) << "output " << k;
  }
  return got;
}

/// The main job's training step with every array made on the device (a DefaultDevice, as
/// `--device cuda` runs): an MLP, Adam on a cosine schedule, the step jitted with donated state and a
/// polymorphic batch (full and partial batches in one program), and a polymorphic evaluation. The
/// constants the trace makes live on the device; losses and accuracy match the same run on the CPU.
inline void check_main_job_step_on_the_default_device(Device d) {
  auto run = [](std::optional<Device> on) {
    std::optional<DefaultDevice> scope;
    if (on) scope.emplace(*on);
    nn::MLP net{{12, 16, 5}};
    Tree params = net.init(random::key(0));
    auto opt = optim::adam(optim::cosine_decay(1e-2, 6));
    Tree state = opt.init(params);
    auto step = jit(
        [&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
          auto [l, g] = value_and_grad([&](const Tree& q) { return nn::cross_entropy(net(q, x), y); })(p);
          auto [u, s2] = opt.update(g, s, p);
          return std::make_tuple(optim::apply_updates(p, u), s2, l);
        },
        {.name = "train_step", .donate_argnums = {0, 1}, .polymorphic = {"", "", "b, ...", "b"}});
    auto evaluate = jit([&](const Tree& p, const Array& x, const Array& y) { return sum(argmax(net(p, x), -1) == y); },
                        {.name = "eval", .polymorphic = {"", "b, ...", "b"}});
    Rng rng(9);
    std::vector<double> out;
    for (int64_t b : {8, 8, 5}) {  // the last batch is partial
      Array x = rng.uniform({b, 12}, DType::f32), y = rng.ints({b}, DType::i32, 0, 4);
      if (on) x = device_put(x, *on), y = device_put(y, *on);
      Array l;
      std::tie(params, state, l) = step(params, state, x, y);
      if (on) {
        EXPECT_EQ(l.device(), *on);
      }
      out.push_back(l.item<double>());
      out.push_back(static_cast<double>(evaluate(params, x, y).item<int64_t>()));
    }
    return out;
  };
  std::vector<double> want = run(std::nullopt), got = run(d);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "result " << i;
}

/// The main job's CNN (convolutions, ReLU, max pooling, dropout with a key) trained under a default
/// device, then exported as the main job exports its classifier: a program whose constants (the
/// input's normalization, the weights) were made on the device. Losses and the exported program's
/// logits match the CPU's.
inline void check_cnn_step_and_export_on_the_default_device(Device d) {
  auto run = [](std::optional<Device> on) {
    std::optional<DefaultDevice> scope;
    if (on) scope.emplace(*on);
    nn::Conv2d c1{1, 4, {3, 3}};
    nn::Linear d1{4 * 4 * 4, 10};
    auto init = [&](const Array& k) {
      Array ks = random::split(k, 2);
      return Tree::dict({{"conv1", c1.init(ks[0])}, {"dense1", d1.init(ks[1])}});
    };
    auto apply = [&](const Tree& p, const Array& x, const std::optional<Array>& key) {
      Array h = nn::max_pool2d(relu(c1(p["conv1"], x)), {2, 2});  // 10 -> 8 -> 4
      h = reshape(h, {h.shape(0), -1});
      if (key) h = nn::dropout(*key, h, 0.25);
      return d1(p["dense1"], h);
    };
    Tree params = init(random::key(0));
    auto opt = optim::adam(optim::cosine_decay(1e-2, 6));
    Tree state = opt.init(params);
    auto step = jit(
        [&](const Tree& p, const Tree& s, const Array& x, const Array& y, const Array& key) {
          auto [l, g] = value_and_grad([&](const Tree& q) { return nn::cross_entropy(apply(q, x, key), y); })(p);
          auto [u, s2] = opt.update(g, s, p);
          return std::make_tuple(optim::apply_updates(p, u), s2, l);
        },
        {.name = "train_step", .donate_argnums = {0, 1}, .polymorphic = {"", "", "b, ...", "b", ""}});
    Rng rng(4);
    std::vector<double> out;
    for (int64_t b : {6, 6, 4}) {
      Array x = rng.uniform({b, 1, 10, 10}, DType::f32), y = rng.ints({b}, DType::i32, 0, 9);
      if (on) x = device_put(x, *on), y = device_put(y, *on);
      Array l;
      std::tie(params, state, l) = step(params, state, x, y, random::key(static_cast<uint32_t>(b)));
      out.push_back(l.item<double>());
    }
    // the export: raw bytes in, normalized inside (constants made here), logits and labels out
    Array pixels = rng.uniform({5, 100}, DType::f32);  // made on the device: the constants below live there
    if (on) pixels = device_put(pixels, *on);
    Array mean = graft::mean(pixels), stdev = sqrt(graft::mean(square(pixels - mean)));
    auto classify = [&](const Array& images) {
      Array x = (images.astype(DType::f32) / 255.0f - mean) / stdev;
      Array logits = apply(params, reshape(x, {images.shape(0), 1, 10, 10}), std::nullopt);
      return std::make_pair(logits, argmax(logits, -1));
    };
    Array raw = rng.ints({3, 100}, DType::u8, 0, 255);
    Exported e = export_fn(classify, {.name = "classifier", .in_names = {"images"}, .out_names = {"logits", "labels"}})(raw);
    Exported back = deserialize_exported(e.serialize(), "classifier.graft");
    Arrays r = back.call(std::vector<Array>{raw});
    for (float v : r[0].to_vector<float>()) out.push_back(v);
    return out;
  };
  std::vector<double> want = run(std::nullopt), got = run(d);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "result " << i;
}

/// A donated parameter is updated in place by a jitted (fused) update on the device; without donation
/// the argument keeps its buffer and values.
inline void check_donated_update_in_place(Device d) {
  auto update = [](const Array& w, const Array& g) { return w - g * 0.5; };
  auto step = jit(update, {.donate_argnums = {0}});
  Array w = device_put(concrete({1, 2, 3, 4, 5, 6, 7, 8}, {8}), d), g = device_put(ones({8}), d);
  const void* before = w.concrete()->data();
  Array w2 = step(w, g);
  EXPECT_EQ(w2.device(), d);
  EXPECT_EQ(w2.concrete()->data(), before) << "the update did not reuse the donated buffer";
  EXPECT_EQ(w2.to_vector<float>(), (std::vector<float>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5}));
  expect_throws<ValueError>([&] { (void)w.to_vector<float>(); }, "deleted");
  Array v = device_put(concrete({1, 2, 3, 4, 5, 6, 7, 8}, {8}), d);
  Array v2 = jit(update)(v, g);
  EXPECT_NE(v2.concrete()->data(), v.concrete()->data());
  EXPECT_EQ(v.to_vector<float>()[0], 1.0f);
}

/// Jitted programs whose fused loops take every shape of generated kernel (vectors and scalars,
/// lanes of a warp, a warp, a block a row, rows too long for registers, half floats) on the device,
/// against the same programs on the CPU. `large`: sizes a GPU runs at once (the emulator takes
/// smaller ones).
inline void check_fused_programs(Device d, bool large = true) {
  Rng rng(9);
  auto chain = [](const Array& x) { return tanh(x) * 0.5 + x * x - 1.0; };
  auto sm = [](const Array& x) { return softmax(x, -1); };
  auto lsm = [](const Array& x) { return log_softmax(x, -1); };
  auto ln = [](const Array& x) { return (x - mean(x, -1, true)) * rsqrt(var(x, -1, true) + 1e-5); };
  auto half = [](const Array& x) { return exp(x.astype(DType::bf16) * 0.5).astype(DType::f32); };
  std::vector<std::pair<std::function<Array(const Array&)>, Shape>> cases = {
      {chain, {large ? 1 << 20 : 4096}}, {chain, {1001}}, {sm, {large ? 64 : 4, 4096}}, {sm, {19, 10}}, {sm, {40, 100}},
      {lsm, {5, 3000}}, {lsm, {large ? 3 : 1, 20000}}, {ln, {33, 48}}, {half, {64, 33}}};
  for (auto& [f, shape] : cases) {
    Array x = rng.uniform(shape);
    auto jf = jit(f);
    Array want = jf(x), got = jf(device_put(x, d));
    EXPECT_EQ(got.device(), d);
    EXPECT_TRUE(close(got, want, shape.size() == 2 && shape[0] == 64 && shape[1] == 33 ? 1e-2 : 2e-5, 1e-6))
        << x.aval().str();
  }
  // complex values in one fused kernel: the arithmetic, parts, conversions, a selection and the
  // elementary functions (complex64 and complex128, and a complex literal)
  auto cx = [](const Array& z, const Array& w) {
    Array q = (z * w + conj(z) * 2.0) / (w + 3.0) - exp(z * 0.5) + sqrt(w) * log(abs(z) + 1.0);
    return where(real(z) > 0, q, -q) + complex(imag(w), real(z)).astype(q.dtype()) + lax::integer_pow(z, 3);
  };
  for (DType t : {DType::f32, DType::f64}) {
    Shape shape{large ? 1 << 18 : 999};
    Array z = complex(rng.uniform(shape, t, -2, 2), rng.uniform(shape, t, -2, 2));
    Array w = complex(rng.uniform(shape, t, -2, 2), rng.uniform(shape, t, -2, 2));
    auto jf = jit(cx);
    Array want = jf(z, w), got = jf(device_put(z, d), device_put(w, d));
    EXPECT_EQ(got.device(), d);
    EXPECT_TRUE(close(got, want, t == DType::f32 ? 2e-5 : 1e-12, 1e-6)) << z.aval().str();
  }
}

/// jit places its program as eager code would: with committed operands where they live, else on the
/// default device (uncommitted operands elsewhere move there).
inline void check_jit_placement(Device d) {
  auto f = jit([](const Array& x) { return tanh(x) * 2.0 + 1.0; });
  Array x = concrete({0.5, -1, 2, 3}, {4});
  Array want = f(x);
  Array u;
  {
    DefaultDevice on(d);
    u = x + 0.0;  // made on the device, not committed
    EXPECT_EQ(u.device(), d);
    EXPECT_EQ(f(x).device(), d);  // the default device: the CPU operand moves there
    Array c = device_put(x, Device::cpu());
    EXPECT_TRUE(f(c).device().is_cpu());  // committed to the CPU: runs there
  }
  Array r = f(u);  // uncommitted on the device, the default device the CPU: runs on the CPU
  EXPECT_TRUE(r.device().is_cpu());
  EXPECT_TRUE(close(r, want));
  Array g = f(device_put(x, d));
  EXPECT_EQ(g.device(), d);
  EXPECT_TRUE(g.concrete()->committed());
  EXPECT_TRUE(close(g, want, 1e-6, 1e-6));
  // operands committed to two devices: the same error as an eager primitive's (graft/core/placement.h),
  // from the jitted program and from a fused loop bound on its own
  auto h = jit([](const Array& a, const Array& b) { return tanh(a) * b; });
  Array on_cpu = device_put(x, Device::cpu()), on_d = device_put(x, d);
  expect_throws<ValueError>([&] { h(on_cpu, on_d); }, "jit: its operands are committed to different devices, cpu:0 and " +
                                                          d.str());
  ClosedJaxpr opt = compiler::optimize(make_jaxpr([](const Array& a, const Array& b) { return tanh(a) * b; })(x, x));
  int fused = 0;
  for (auto& e : opt.jaxpr->eqns)
    if (e.prim == &compiler::fusion_p && ++fused)
      expect_throws<ValueError>([&] { bind(compiler::fusion_p, {on_cpu, on_d}, e.params); },
                                "fusion: its operands are committed to different devices");
  EXPECT_EQ(fused, 1);
}

}  // namespace graft::testing
