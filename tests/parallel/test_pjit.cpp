// Sharded jit (pjit) on one process: programs partitioned over meshes of 1-8 hand-made CPU devices equal
// plain jit (f64 to 1e-12), whatever the shardings; the partitioned programs hold the collectives that
// data parallelism, FSDP and Megatron's tensor parallelism need, and no others; errors name the array,
// the dimension and the mesh.
#include <graft/graft.h>

#include "parallel/devices.h"
#include "parallel/pjit_programs.h"
#include "testing.h"

namespace graft::testing {
namespace {

using OS = std::optional<NamedSharding>;
NamedSharding ns(const Mesh& m, PartitionSpec p) { return NamedSharding{m, std::move(p)}; }

// ---- programs ------------------------------------------------------------------------------------------
// parameters: w1, b1, w2, b2
using Mlp = std::vector<Array>;

Array mlp(const Mlp& p, const Array& x) { return matmul(relu(matmul(x, p[0]) + p[1]), p[2]) + p[3]; }

Array mlp_loss(const Mlp& p, const Array& x, const Array& y) { return xent(mlp(p, x), y); }

Mlp init(Rng& rng, int64_t in, int64_t hidden, int64_t out) {
  return Mlp{rng.uniform({in, hidden}, DType::f64), rng.uniform({hidden}, DType::f64),
             rng.uniform({hidden, out}, DType::f64), rng.uniform({out}, DType::f64)};
}

std::map<std::string, int> count(const PjitLowered& l) {
  std::map<std::string, int> c;
  for (auto& [name, bytes] : l.collectives()) ++c[name];
  return c;
}

void expect_close(const std::vector<Array>& a, const std::vector<Array>& b, double tol = 1e-12) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(close(a[i], b[i], tol, tol)) << "output " << i;
}

// ---- equivalence -----------------------------------------------------------------------------------------
// The seeds' MLP (scaled down) with its batch over "data", over 1, 2, 4 and 8 devices: forward, loss and
// gradients equal jit's.
TEST(Pjit, DataParallelMlpOverOneToEightDevices) {
  Rng rng(1);
  Mlp p = init(rng, 12, 16, 8);
  Array x = rng.uniform({16, 12}, DType::f64), y = softmax(rng.uniform({16, 8}, DType::f64), -1);
  auto ref = jit(value_and_grad(mlp_loss))(p, x, y);
  for (int n : {1, 2, 4, 8}) {
    Mesh m(cpus(n), {"data"});
    auto f = pjit(value_and_grad(mlp_loss), {.in_shardings = {OS(), OS(ns(m, P("data"))), OS(ns(m, P("data")))}});
    auto [l, g] = f(p, x, y);
    EXPECT_NEAR(l.item<double>(), ref.first.item<double>(), 1e-12) << n << " devices";
    expect_close(g, ref.second);
    auto fwd = pjit(mlp, {.in_shardings = {OS(), OS(ns(m, P("data")))}})(p, x);
    EXPECT_TRUE(close(fwd, mlp(p, x), 1e-12, 1e-12));
  }
}

// Megatron's MLP: the first layer split by columns, the second by rows over "model"; with the batch over
// "data" too on a 2 x 2 mesh.
TEST(Pjit, TensorParallelMlpOnTwoAxes) {
  Rng rng(2);
  Mlp p = init(rng, 6, 8, 4);
  Array x = rng.uniform({8, 6}, DType::f64), y = softmax(rng.uniform({8, 4}, DType::f64), -1);
  Mesh m(cpus(4), {"data", "model"}, {2, 2});
  // per-leaf shardings of the parameters: pjit takes one sharding per argument, so the parameters
  // are passed as separate arguments here
  auto loss4 = [](const Array& w1, const Array& b1, const Array& w2, const Array& b2, const Array& x, const Array& y) {
    return mlp_loss(Mlp{w1, b1, w2, b2}, x, y);
  };
  auto vg = value_and_grad(loss4, {0, 1, 2, 3});
  auto f = pjit(vg, {.in_shardings = {OS(ns(m, P(std::nullopt, "model"))), OS(ns(m, P("model"))),
                                      OS(ns(m, P("model"))), OS(), OS(ns(m, P("data"))), OS(ns(m, P("data")))}});
  auto [l, g] = f(p[0], p[1], p[2], p[3], x, y);
  auto [lr, gr] = jit(vg)(p[0], p[1], p[2], p[3], x, y);
  EXPECT_NEAR(l.item<double>(), lr.item<double>(), 1e-12);
  expect_close({g[0], g[1], g[2], g[3]},
               {gr[0], gr[1], gr[2], gr[3]});
}

// The shared table of programs (tests/parallel/pjit_programs.h: the MLP under data parallelism, FSDP,
// Megatron and both, training steps, transformer pieces and blocks, CNNs, scan / cond / while, an
// embedding's scattered gradient, reductions and shape operations over split dimensions, vmap and
// checkpoint inside) over 1, 2, 4 and 8 devices, on meshes with one "model" member and with two: every
// output equals plain jit's (f64 to 1e-12, f32 to 1e-5).
TEST(Pjit, ProgramsOverOneToEightDevices) {
  std::vector<PjitProgram> programs = pjit_programs();
  ASSERT_GE(programs.size(), 20u);
  std::vector<std::vector<Array>> want;
  for (const PjitProgram& p : programs) want.push_back(jit(p.f)(p.args));
  for (auto [data, model] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 2}, {8, 1}}) {
    Mesh m(cpus(static_cast<int>(data * model)), {"data", "model"}, {data, model});
    for (size_t k = 0; k < programs.size(); ++k) {
      const PjitProgram& p = programs[k];
      EXPECT_TRUE(runs_like(p, [&] { return pjit_flat(p.f, m, p.in, {}, p.args); }, want[k]))
          << p.name << " on a " << data << " x " << model << " mesh";
    }
  }
  // and with random valid layouts of every argument (the property test over the table)
  std::mt19937 gen(32);
  for (const Mesh& m : {Mesh(cpus(4), {"data", "model"}, {2, 2}), Mesh(cpus(8), {"data", "model"}, {4, 2})}) {
    for (size_t k = 0; k < programs.size(); ++k) {
      const PjitProgram& p = programs[k];
      std::vector<std::optional<PartitionSpec>> in;
      std::string specs;
      for (const Array& x : p.args) {
        in.push_back(random_spec(m, x.shape(), gen));
        specs += " " + in.back()->str();
      }
      EXPECT_TRUE(runs_like(p, [&] { return pjit_flat(p.f, m, in, {}, p.args); }, want[k])) << p.name << " on " << m.str() << ":" << specs;
    }
  }
}

// Layer norm, softmax cross-entropy, attention (heads over "model" after a reshape), a scan RNN, a
// cond and an embedding lookup with its scattered gradient: each with its gradient, equal to jit.
TEST(Pjit, TransformerPiecesAndControlFlow) {
  Rng rng(3);
  Mesh m(cpus(4), {"data", "model"}, {2, 2});
  Array x = rng.uniform({4, 6, 8}, DType::f64);
  Array wq = rng.uniform({8, 8}, DType::f64), wk = rng.uniform({8, 8}, DType::f64), wv = rng.uniform({8, 8}, DType::f64);
  OS batch = ns(m, P("data")), cols = ns(m, P(std::nullopt, "model"));
  {
    auto f = [](const Array& x) { return sum(square(layer_norm(x))); };
    auto g = pjit(value_and_grad(f), {.in_shardings = {batch}})(x);
    auto r = value_and_grad(f)(x);
    expect_close({g.first, g.second}, {r.first, r.second});
  }
  {
    auto f = [](const Array& x, const Array& wq, const Array& wk, const Array& wv) {
      return sum(square(attention(x, wq, wk, wv, 2)));
    };
    auto vg = value_and_grad(f, {0, 1, 2, 3});
    auto [l, g] = pjit(vg, {.in_shardings = {batch, cols, cols, cols}})(x, wq, wk, wv);
    auto [lr, gr] = vg(x, wq, wk, wv);
    EXPECT_NEAR(l.item<double>(), lr.item<double>(), 1e-10);
    expect_close({g[0], g[1], g[2], g[3]},
                 {gr[0], gr[1], gr[2], gr[3]}, 1e-10);
  }
  {
    Array h0 = rng.uniform({4, 8}, DType::f64), xs = rng.uniform({5, 4, 8}, DType::f64), w = rng.uniform({8, 8}, DType::f64);
    auto rnn = [](const Array& w, const Array& h0, const Array& xs) {
      auto [h, hs] = scan([&](const Array& h, const Array& xt) {
        Array n = tanh(matmul(h, w) + xt);
        return std::pair{n, n};
      }, h0, xs);
      return sum(square(hs)) + sum(h);
    };
    auto vg = value_and_grad(rnn, {0, 1});
    auto [l, g] = pjit(vg, {.in_shardings = {cols, batch, OS(ns(m, P(std::nullopt, "data")))}})(w, h0, xs);
    auto [lr, gr] = vg(w, h0, xs);
    EXPECT_NEAR(l.item<double>(), lr.item<double>(), 1e-10);
    expect_close({g[0], g[1]}, {gr[0], gr[1]}, 1e-10);
  }
  {
    auto f = [](const Array& x) {
      return cond(sum(x) > 0.0, [](const Array& v) { return v * 2.0; }, [](const Array& v) { return -v; }, x);
    };
    EXPECT_TRUE(close(pjit(f, {.in_shardings = {batch}})(x), f(x), 1e-12, 1e-12));
  }
  {
    Array table = rng.uniform({10, 8}, DType::f64);
    Array ids = array(std::vector<int32_t>{1, 3, 3, 9, 0, 2, 7, 7}, {4, 2});
    auto f = [](const Array& table, const Array& ids) { return sum(square(take(table, ids, 0))); };
    auto g = pjit(grad(f), {.in_shardings = {cols, batch}})(table, ids);
    EXPECT_TRUE(close(g, grad(f)(table, ids), 1e-12, 1e-12));
  }
}

// Control flow is partitioned inside: a scan RNN with its batch split runs its body on each device's
// rows (no collective in the loop; one sum of the loss), its carry keeping the layout; a cond's branches
// run on blocks; both equal jit, with their gradients.
TEST(Pjit, ScanAndCondBodiesRunOnBlocks) {
  Rng rng(12);
  Mesh m(cpus(4), {"data"});
  OS batch = ns(m, P("data")), rows = ns(m, P(std::nullopt, "data"));
  Array w = rng.uniform({8, 8}, DType::f64), h0 = rng.uniform({8, 8}, DType::f64), xs = rng.uniform({5, 8, 8}, DType::f64);
  auto rnn = [](const Array& w, const Array& h0, const Array& xs) {
    auto [h, hs] = scan([&](const Array& h, const Array& xt) {
      Array n = tanh(matmul(h, w) + xt);
      return std::pair{n, n};
    }, h0, xs);
    return sum(square(hs)) + sum(h);
  };
  auto f = pjit(rnn, {.in_shardings = {OS(), batch, rows}});
  EXPECT_NEAR(f(w, h0, xs).item<double>(), rnn(w, h0, xs).item<double>(), 1e-10);
  auto l = f.lower(w, h0, xs);
  for (auto& [name, bytes] : l.collectives()) EXPECT_EQ(bytes, 8) << name << "\n" << l.as_text();  // scalars only
  EXPECT_LE(l.collectives().size(), 2u) << l.as_text();
  auto vg = value_and_grad(rnn, {0, 1, 2});
  auto [lv, g] = pjit(vg, {.in_shardings = {OS(), batch, rows}})(w, h0, xs);
  auto [lr, gr] = vg(w, h0, xs);
  EXPECT_NEAR(lv.item<double>(), lr.item<double>(), 1e-10);
  expect_close(g, gr, 1e-10);
  auto c = [](const Array& x) {
    return cond(sum(x) > 0.0, [](const Array& v) { return tanh(v) * 2.0; }, [](const Array& v) { return -v; }, x);
  };
  auto pc = pjit(c, {.in_shardings = {batch}});
  Array x = rng.uniform({8, 3}, DType::f64);
  EXPECT_TRUE(close(pc(x), c(x), 1e-12, 1e-12));
  EXPECT_TRUE(close(pc(-x - 2.0), c(-x - 2.0), 1e-12, 1e-12));
  auto lc = pc.lower(x);
  EXPECT_EQ(lc.collectives().size(), 1u) << lc.as_text();  // the predicate's sum; the branches need none
  EXPECT_TRUE(close(grad([&](const Array& v) { return sum(pc(v)); })(x), grad([&](const Array& v) { return sum(c(v)); })(x),
                    1e-12, 1e-12));
}

// A while_loop with its carry's batch split runs its body on each device's rows; the predicate, a sum
// over the whole carry, is reduced across devices (the only collectives: scalars), so every device
// iterates alike; a body that transposes its carry moves it each iteration; gradients (bounded loop)
// equal jit's.
TEST(Pjit, WhileLoopBodiesRunOnBlocks) {
  Rng rng(21);
  Mesh m(cpus(4), {"data"});
  OS batch = ns(m, P("data"));
  Array w = rng.uniform({8, 8}, DType::f64) * 0.5, h0 = rng.uniform({8, 8}, DType::f64);
  auto grow = [](const Array& w, const Array& h0) {
    using C = std::pair<Array, Array>;
    C r = while_loop([](const C& c) { return logical_and(c.first < 6.0, sum(square(c.second)) < 150.0); },
                     [&w](const C& c) { return C{c.first + 1.0, tanh(matmul(c.second, w)) * 1.7 + c.second}; },
                     C{zeros({}, DType::f64), h0}, WhileOptions{.max_steps = 8});
    return std::pair{r.first, r.second};
  };
  auto f = pjit(grow, {.in_shardings = {OS(), batch}, .out_shardings = {OS(), batch}});
  auto [n, h] = f(w, h0);
  auto [nr, hr] = grow(w, h0);
  EXPECT_EQ(n.item<double>(), nr.item<double>());
  EXPECT_GT(nr.item<double>(), 1.0);
  EXPECT_LT(nr.item<double>(), 6.0);  // the data-dependent half of the predicate stopped it
  EXPECT_TRUE(close(h, hr, 1e-12, 1e-12));
  auto l = f.lower(w, h0);
  EXPECT_GE(l.collectives().size(), 1u) << l.as_text();
  for (auto& [name, bytes] : l.collectives()) EXPECT_EQ(bytes, 8) << name << "\n" << l.plan_text() << l.as_text();
  // a body whose carry comes back transposed: the loop keeps one layout and moves the body's result to it
  auto flip = [](const Array& h0) {
    return while_loop([](const Array& h) { return sum(h) < 40.0; }, [](const Array& h) { return transpose(h, {1, 0}) + 1.0; },
                      h0);
  };
  EXPECT_TRUE(close(pjit(flip, {.in_shardings = {batch}})(h0), flip(h0), 1e-12, 1e-12));
  auto loss = [&](const Array& w, const Array& h0) { return sum(grow(w, h0).second); };
  auto vg = value_and_grad(loss, {0, 1});
  auto [lv, g] = pjit(vg, {.in_shardings = {OS(), batch}})(w, h0);
  auto [lr, gr] = vg(w, h0);
  EXPECT_NEAR(lv.item<double>(), lr.item<double>(), 1e-10);
  expect_close(g, gr, 1e-10);
}

// A CNN (convolution, ReLU, max pooling, a dense layer, softmax cross-entropy) with its batch over
// "data", over 1, 2 and 4 devices: loss and gradients equal jit's, and the partitioned program is data
// parallelism's: one psum per gradient and the loss, nothing gathered (the kernel's gradient, a
// convolution contracting the batch, is a partial sum; pooling's derivative runs on blocks).
TEST(Pjit, DataParallelCnnRunsConvolutionsAndPoolingOnBlocks) {
  Rng rng(22);
  Array x = rng.uniform({8, 2, 6, 6}, DType::f64), y = softmax(rng.uniform({8, 4}, DType::f64), -1);
  std::vector<Array> p{rng.uniform({3, 2, 3, 3}, DType::f64), rng.uniform({3}, DType::f64),
                       rng.uniform({27, 4}, DType::f64), rng.uniform({4}, DType::f64)};
  auto loss = [](const Array& k, const Array& kb, const Array& w, const Array& b, const Array& x, const Array& y) {
    Array c = lax::conv_general_dilated(x, k, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, lax::ConvDims::nchw(2));
    c = relu(c + reshape(kb, {1, 3, 1, 1}));
    Array h = reshape(nn::max_pool2d(c, {2, 2}), {x.shape()[0], 27});
    return xent(matmul(h, w) + b, y);
  };
  auto vg = value_and_grad(loss, {0, 1, 2, 3});
  auto [lr, gr] = vg(p[0], p[1], p[2], p[3], x, y);
  for (int n : {1, 2, 4}) {
    Mesh m(cpus(n), {"data"});
    OS data = ns(m, P("data"));
    auto f = pjit(vg, {.in_shardings = {OS(), OS(), OS(), OS(), data, data}, .out_shardings = {OS(ns(m, P()))}});
    auto [l, g] = f(p[0], p[1], p[2], p[3], x, y);
    EXPECT_NEAR(l.item<double>(), lr.item<double>(), 1e-12) << n << " devices";
    expect_close(g, gr, 1e-12);
    if (n < 4) continue;
    auto low = f.lower(p[0], p[1], p[2], p[3], x, y);
    auto c = count(low);
    EXPECT_EQ(c["psum"], 5) << low.plan_text() << low.as_text();
    EXPECT_EQ(c.size(), 1u) << low.plan_text() << low.as_text();
    int64_t bytes = 0;
    for (auto& [name, b] : low.collectives()) bytes += b;
    EXPECT_EQ(bytes, (3 * 2 * 3 * 3 + 3 + 27 * 4 + 4 + 1) * 8);
  }
  // a depthwise convolution (feature groups) keeps its batch split: no collective forward; its gradients
  // equal jit's
  Array dk = rng.uniform({2, 1, 3, 3}, DType::f64);
  auto depthwise = [](const Array& k, const Array& x) {
    return sum(square(lax::conv_general_dilated(x, k, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, lax::ConvDims::nchw(2), 2)));
  };
  Mesh m4(cpus(4), {"data"});
  OS data4 = ns(m4, P("data"));
  auto fwd = pjit([&](const Array& k, const Array& x) {
    return lax::conv_general_dilated(x, k, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, lax::ConvDims::nchw(2), 2);
  }, {.in_shardings = {OS(), data4}, .out_shardings = {data4}});
  EXPECT_TRUE(fwd.lower(dk, x).collectives().empty()) << fwd.lower(dk, x).plan_text();
  auto dvg = value_and_grad(depthwise, {0, 1});
  auto [dl, dg] = pjit(dvg, {.in_shardings = {OS(), data4}})(dk, x);
  auto [dlr, dgr] = dvg(dk, x);
  EXPECT_NEAR(dl.item<double>(), dlr.item<double>(), 1e-12);
  expect_close(dg, dgr, 1e-12);
}

// Operands that split a dimension differently: the layout that moves the fewest bytes wins, whatever
// the operands' order — gathering the bool mask split by columns, not the two f64 operands split by rows.
TEST(Pjit, ElementwiseConflictsMoveTheFewestBytes) {
  Rng rng(24);
  Mesh m(cpus(4), {"data"});
  OS rows = ns(m, P("data")), cols = ns(m, P(std::nullopt, "data"));
  Array mask = rng.uniform({8, 8}, DType::f64) > 0.5, x = rng.uniform({8, 8}, DType::f64), y = rng.uniform({8, 8}, DType::f64);
  auto f = [](const Array& mask, const Array& x, const Array& y) { return where(mask, x, y); };
  auto g = pjit(f, {.in_shardings = {cols, rows, rows}});
  EXPECT_TRUE(close(g(mask, x, y), f(mask, x, y), 0, 0));
  auto l = g.lower(mask, x, y);
  auto c = count(l);
  EXPECT_EQ(c["all_gather_invariant"], 1) << l.plan_text() << l.as_text();
  int64_t bytes = 0;
  for (auto& [name, b] : l.collectives()) bytes += b;
  EXPECT_EQ(bytes, 8 * 2) << l.plan_text();  // the mask's column block, one byte per element
  EXPECT_EQ(l.out_specs[0], P("data")) << l.plan_text();
}

// A property test: random valid shardings of every argument and output (each dimension over a random
// mesh axis or none, each axis at most once) over meshes of 1, 2, 4 and 8 devices, for programs that
// exercise every propagation rule: equal to jit.
TEST(Pjit, RandomShardingsEqualJit) {
  Rng rng(4);
  std::mt19937 gen(5);
  // meshes of 1, 2 and 4 devices on one axis and of 8 on three (where a dimension may split over two)
  std::vector<Mesh> meshes{Mesh(cpus(1), {"a"}), Mesh(cpus(2), {"a"}), Mesh(cpus(4), {"a"}),
                           Mesh(cpus(8), {"a", "b", "c"}, {2, 2, 2})};
  Array a = rng.uniform({4, 8}, DType::f64), b = rng.uniform({8, 6}, DType::f64), c = rng.uniform({4, 6}, DType::f64);
  Array t = rng.uniform({2, 4, 8}, DType::f64);
  std::vector<std::function<std::vector<Array>(const std::vector<Array>&)>> programs = {
      [](const std::vector<Array>& v) { return std::vector<Array>{tanh(matmul(v[0], v[1])) * v[2] + 1.0}; },
      [](const std::vector<Array>& v) { return std::vector<Array>{softmax(matmul(v[0], v[1]) + v[2], -1)}; },
      [](const std::vector<Array>& v) {
        Array r = reshape(transpose(v[3], {1, 0, 2}), {4, 16});
        return std::vector<Array>{sum(r, {1}), max(v[0], {0}), cumsum(v[2], 1), sort(v[0], 0)};
      },
      [](const std::vector<Array>& v) {
        return std::vector<Array>{einsum("bij,jk->bik", {v[3], v[1]}), layer_norm(v[2]), reshape(v[1], {2, 4, 6})};
      },
      [](const std::vector<Array>& v) {
        auto g = grad([](const Array& a, const Array& b, const Array& c) { return sum(square(matmul(a, b) - c)); },
                      {0, 1})(v[0], v[1], v[2]);
        return std::vector<Array>{g[0], g[1]};
      },
      [](const std::vector<Array>& v) {  // a lookup and its scattered gradient
        Array ids = argmax(v[0], 1);
        Array g = grad([&](const Array& table) { return sum(square(take(table, ids, 0)) * v[2]); })(v[1]);
        return std::vector<Array>{take(v[1], ids, 0), g};
      },
  };
  std::vector<Array> args{a, b, c, t};
  int checked = 0;
  for (size_t pi = 0; pi < programs.size(); ++pi) {
    FlatFn f = programs[pi];
    std::vector<Array> ref = f(args);
    for (int trial = 0; trial < 8; ++trial) {
      const Mesh& m = meshes[static_cast<size_t>(trial) % meshes.size()];
      std::vector<std::optional<PartitionSpec>> in;
      for (auto& x : args) in.push_back(random_spec(m, x.shape(), gen));
      std::vector<std::optional<PartitionSpec>> out;
      for (auto& r : ref)
        out.push_back(trial % 3 ? std::optional<PartitionSpec>(random_spec(m, r.shape(), gen)) : std::nullopt);
      std::vector<Array> got = pjit_flat(f, m, in, out, args);
      std::string what = "program " + std::to_string(pi) + " trial " + std::to_string(trial) + " " + m.str() + ":";
      for (auto& s : in) what += " " + s->str();
      SCOPED_TRACE(what);
      expect_close(got, ref, 1e-11);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 48);
}

// ---- communication -----------------------------------------------------------------------------------------

// Data parallelism: the replicated parameters' gradients are each summed once (one psum per gradient
// and one for the loss), nothing is gathered. FSDP: every parameter gathered in the forward pass (the
// backward pass reuses it) and every gradient reduce-scattered. Megatron: one psum forward (the row-
// parallel layer's partial sums) and one backward (the input's gradient through the column-parallel layer).
TEST(Pjit, CollectivesOfDataParallelFsdpAndMegatron) {
  Rng rng(6);
  Mlp p = init(rng, 8, 16, 4);
  Array x = rng.uniform({8, 8}, DType::f64), y = softmax(rng.uniform({8, 4}, DType::f64), -1);
  Mesh m(cpus(4), {"data"});
  auto loss4 = [](const Array& w1, const Array& b1, const Array& w2, const Array& b2, const Array& x, const Array& y) {
    return mlp_loss(Mlp{w1, b1, w2, b2}, x, y);
  };
  auto vg = value_and_grad(loss4, {0, 1, 2, 3});
  OS data = ns(m, P("data"));
  {
    auto f = pjit(vg, {.in_shardings = {OS(), OS(), OS(), OS(), data, data}, .out_shardings = {OS(ns(m, P()))}});
    auto l = f.lower(p[0], p[1], p[2], p[3], x, y);
    auto c = count(l);
    EXPECT_EQ(c["psum"], 5) << l.as_text();
    EXPECT_EQ(c.size(), 1u) << l.as_text();
    int64_t bytes = 0;
    for (auto& [n, b] : l.collectives()) bytes += b;
    EXPECT_EQ(bytes, (8 * 16 + 16 + 16 * 4 + 4 + 1) * 8);  // every gradient once, and the loss
  }
  {
    // FSDP: parameters split over "data" along their first dimension, gradients returned so
    OS p0 = ns(m, P("data"));
    auto f = pjit(vg, {.in_shardings = {p0, p0, p0, p0, data, data},
                       .out_shardings = {OS(ns(m, P())), p0, p0, p0, p0}});
    auto l = f.lower(p[0], p[1], p[2], p[3], x, y);
    auto c = count(l);
    EXPECT_EQ(c["all_gather_invariant"], 4) << l.plan_text() << l.as_text();
    EXPECT_EQ(c["reduce_scatter"], 4) << l.plan_text() << l.as_text();
    EXPECT_EQ(c["psum"], 1) << l.as_text();  // the loss
    EXPECT_EQ(c.size(), 3u) << l.as_text();
    // the analytic minimum: each device gathers every parameter's other blocks once (its own block
    // goes in), and reduce-scatters every gradient whole
    const int64_t param_bytes = (8 * 16 + 16 + 16 * 4 + 4) * 8;
    std::map<std::string, int64_t> bytes;
    for (auto& [n, b] : l.collectives()) bytes[n] += b;
    EXPECT_EQ(bytes["all_gather_invariant"], param_bytes / 4);
    EXPECT_EQ(bytes["reduce_scatter"], param_bytes);
    EXPECT_EQ(bytes["psum"], 8);
    auto [lv, g] = f(p[0], p[1], p[2], p[3], x, y);
    auto [lr, gr] = jit(vg)(p[0], p[1], p[2], p[3], x, y);
    EXPECT_NEAR(lv.item<double>(), lr.item<double>(), 1e-12);
    expect_close({g[0], g[3]}, {gr[0], gr[3]});
  }
  {
    Mesh mm(cpus(4), {"model"});
    auto fwd = [](const Array& w1, const Array& b1, const Array& w2, const Array& b2, const Array& x) {
      return mlp(Mlp{w1, b1, w2, b2}, x);
    };
    auto f = pjit(fwd, {.in_shardings = {OS(ns(mm, P(std::nullopt, "model"))), OS(ns(mm, P("model"))),
                                         OS(ns(mm, P("model"))), OS(), OS()}});
    auto l = f.lower(p[0], p[1], p[2], p[3], x);
    auto c = count(l);
    EXPECT_EQ(c["psum"], 1) << l.as_text();
    EXPECT_EQ(c.size(), 1u) << l.as_text();
    EXPECT_TRUE(close(f(p[0], p[1], p[2], p[3], x), mlp(p, x), 1e-12, 1e-12));
    // with its gradients: the backward pass needs no more communication (the hidden layer's gradient
    // stays split like the hidden layer; the input is not differentiated)
    auto g = pjit(vg, {.in_shardings = {OS(ns(mm, P(std::nullopt, "model"))), OS(ns(mm, P("model"))),
                                        OS(ns(mm, P("model"))), OS(), OS(), OS()}});
    auto lg = g.lower(p[0], p[1], p[2], p[3], x, y);
    auto cg = count(lg);
    EXPECT_EQ(cg["psum"], 1) << lg.plan_text() << lg.as_text();
    auto [lv, gv] = g(p[0], p[1], p[2], p[3], x, y);
    auto [lr, gr] = jit(vg)(p[0], p[1], p[2], p[3], x, y);
    EXPECT_NEAR(lv.item<double>(), lr.item<double>(), 1e-12);
    expect_close(gv, gr);
  }
}

// Megatron's transformer block (attention heads and MLP hidden units over "model"): two all-reduces
// forward (after the attention's output projection and after fc2), and two more in the backward pass
// (the block input's gradient through the column-split projections: query / key / value and fc1).
TEST(Pjit, MegatronBlockAllReducesTwiceEachWay) {
  nn::TransformerBlock block{.dim = 16, .heads = 4};
  Tree p = block.init(random::key(0), DType::f64);
  Rng rng(13);
  Array x = rng.uniform({2, 8, 16}, DType::f64);
  Mesh m(cpus(2), {"model"});
  auto ps = nn::parameter_shardings(p, m, {.tensor = "model"});
  auto fwd = [&](const Tree& q, const Array& v) { return block(q, v); };
  auto f = pjit(fwd, {.in_leaf_shardings = {ps, {}}});
  auto lf = f.lower(p, x);
  EXPECT_EQ(count(lf)["psum"], 2) << lf.plan_text();
  EXPECT_EQ(count(lf).size(), 1u) << lf.as_text();
  EXPECT_TRUE(close(f(p, x), block(p, x), 1e-12, 1e-12));
  // the input's gradient (the parameters' stay split like them: no communication for them)
  auto bwd = [&](const Tree& q, const Array& v) { return grad([&](const Array& w) { return sum(square(block(q, w))); })(v); };
  auto b = pjit(bwd, {.in_leaf_shardings = {ps, {}}});
  auto lb = b.lower(p, x);
  EXPECT_EQ(count(lb)["psum"], 4) << lb.plan_text();
  EXPECT_EQ(count(lb).size(), 1u) << lb.as_text();
  EXPECT_TRUE(close(b(p, x), bwd(p, x), 1e-11, 1e-11));
}

// FSDP over 4 devices: each device holds a quarter of the parameters and of Adam's state (measured on
// the sharded arrays' blocks), up to what does not divide (the step count).
TEST(Pjit, FsdpHoldsAQuarterPerDevice) {
  nn::TransformerLM lm{.vocab = 256, .dim = 64, .heads = 4, .layers = 2, .max_len = 32};
  Tree params = lm.init(random::key(0));
  Tree state = optim::adam(1e-3).init(params);
  Mesh m(cpus(4), {"data"});
  double total = 0, per_device = 0;
  for (const Tree* t : {&params, &state}) {
    auto sh = nn::parameter_shardings(*t, m, {.fsdp = "data"});
    auto leaves = t->leaves();
    ASSERT_EQ(sh.size(), leaves.size());
    for (size_t i = 0; i < leaves.size(); ++i) {
      ShardedArray s = device_put(leaves[i], *sh[i]);
      total += static_cast<double>(leaves[i].size() * static_cast<int64_t>(itemsize(leaves[i].dtype())));
      per_device += static_cast<double>(s.addressable_data(0).size() * static_cast<int64_t>(itemsize(leaves[i].dtype())));
    }
  }
  std::printf("FSDP over 4 devices: %.0f of %.0f parameter and optimizer bytes per device (%.4f)\n", per_device, total,
              per_device / total);
  EXPECT_LE(per_device, total / 4 * 1.05) << per_device << " of " << total << " bytes";
  EXPECT_GE(per_device, total / 4);
}

// The transformer's training step (Adam) with its layouts written as annotations only (nn::Layout):
// data parallel, Megatron (heads and MLP hidden units over "model": fused attention runs on the heads
// each device holds), FSDP (parameters and Adam's state over "data"), and both: one step equals jit's.
TEST(Pjit, TransformerTrainingStepUnderLayouts) {
  nn::TransformerLM lm{.vocab = 16, .dim = 16, .heads = 4, .layers = 1, .max_len = 8};
  Tree params = lm.init(random::key(0), DType::f64);
  auto opt = optim::adam(1e-2);
  Tree state = opt.init(params);
  Rng rng(10);
  Array x = astype(floor(rng.uniform({4, 8}, DType::f64) * 8.0 + 8.0), DType::i32);
  Array y = astype(floor(rng.uniform({4, 8}, DType::f64) * 8.0 + 8.0), DType::i32);
  auto step = [&](const Tree& p, const Tree& s, const Array& x, const Array& y) {
    auto [loss, g] = value_and_grad([&](const Tree& q) { return nn::cross_entropy(lm(q, x), y); })(p);
    auto [u, s2] = opt.update(g, s, p);
    return std::make_tuple(optim::apply_updates(p, u), s2, loss);
  };
  auto [p_ref, s_ref, l_ref] = jit(step)(params, state, x, y);
  Mesh m(cpus(4), {"data", "model"}, {2, 2});
  NamedSharding batch{m, P("data")};
  for (nn::Layout layout : {nn::Layout{}, nn::Layout{.tensor = "model"}, nn::Layout{.fsdp = "data"},
                            nn::Layout{.fsdp = "data", .tensor = "model"}}) {
    SCOPED_TRACE("fsdp '" + layout.fsdp + "', tensor '" + layout.tensor + "'");
    auto ps = nn::parameter_shardings(params, m, layout), ss = nn::parameter_shardings(state, m, layout);
    std::vector<std::optional<NamedSharding>> outs = ps;
    outs.insert(outs.end(), ss.begin(), ss.end());
    outs.push_back(NamedSharding{m, P()});
    auto f = pjit(step, {.in_leaf_shardings = {ps, ss, {batch}, {batch}}, .out_shardings = outs});
    auto [p1, s1, l1] = f(params, state, x, y);
    EXPECT_NEAR(l1.template item<double>(), l_ref.template item<double>(), 1e-10);
    auto a = p1.leaves(), b = p_ref.leaves();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(close(a[i], b[i], 1e-9, 1e-9)) << "parameter " << i;
    if (!layout.tensor.empty()) {
      std::string plan = f.lower(params, state, x, y).plan_text();
      EXPECT_NE(plan.find("flash_attention(P('data', None, 'model')"), std::string::npos) << plan;
    }
  }
  // Megatron's split of the first block's MLP, FSDP's of its rows, Adam's state like its parameter
  auto ps = nn::parameter_shardings(params, m, {.fsdp = "data", .tensor = "model"});
  auto paths = leaf_shardings(params, [](const std::string& path, const Array&) {
    return std::optional<NamedSharding>(NamedSharding{Mesh(cpus(1), {"x"}), P(path.c_str())});
  });
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::string& path = paths[i]->spec.dims[0].axes[0];
    if (path == "blocks.0.fc1.w") {
      EXPECT_EQ(ps[i]->spec, P("data", "model"));
    } else if (path == "blocks.0.fc2.w") {
      EXPECT_EQ(ps[i]->spec, P("model", "data"));
    } else if (path == "blocks.0.fc1.b") {
      EXPECT_EQ(ps[i]->spec, P("model"));
    } else if (path == "ln.scale") {
      EXPECT_EQ(ps[i]->spec, P("data"));
    }
  }
  EXPECT_EQ(nn::parameter_sharding("mu.blocks.0.fc1.w", Aval({16, 64}, DType::f32), m, {.tensor = "model"}).spec,
            P(std::nullopt, "model"));
}

// ---- the interface -------------------------------------------------------------------------------------------
TEST(Pjit, ShardedArraysInAndOut) {
  Rng rng(7);
  Mesh m(cpus(4), {"data", "model"}, {2, 2});
  Array a = rng.uniform({4, 6}, DType::f64), b = rng.uniform({6, 8}, DType::f64);
  ShardedArray sa = device_put(a, ns(m, P("data"))), sb = device_put(b, ns(m, P(std::nullopt, "model")));
  auto f = pjit([](const Array& a, const Array& b) { return matmul(a, b); });
  std::vector<ShardedArray> r = f(sa, sb);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].sharding().spec, P("data", "model"));
  EXPECT_TRUE(close(r[0].gather(), matmul(a, b), 1e-12, 1e-12));
  EXPECT_EQ(r[0].addressable_shards().size(), 4u);
  EXPECT_EQ(r[0].addressable_data(0).shape(), (Shape{2, 4}));
  // an out_sharding overrides what propagation chose
  auto g = pjit([](const Array& a, const Array& b) { return matmul(a, b); },
                {.out_shardings = {OS(ns(m, P(std::nullopt, "data")))}});
  auto r2 = g(sa, sb);
  EXPECT_EQ(r2[0].sharding().spec, P(std::nullopt, "data"));
  EXPECT_TRUE(close(r2[0].gather(), matmul(a, b), 1e-12, 1e-12));
  auto r3 = g(sa, sb);  // a cache hit still knows the layouts
  EXPECT_EQ(r3[0].sharding().spec, P(std::nullopt, "data"));
  EXPECT_EQ(g.num_traces(), 1u);
}

// One dimension split over several mesh axes (P(('data', 'model')), the major first): data parallelism
// over a whole 2 x 2 mesh, FSDP over both axes, and moves between such splits and single-axis ones;
// values equal jit, and the cost model counts the bytes the program sends.
TEST(Pjit, DimensionsSplitOverSeveralAxes) {
  Rng rng(12);
  Mlp p = init(rng, 8, 16, 4);
  Array x = rng.uniform({8, 8}, DType::f64), y = softmax(rng.uniform({8, 4}, DType::f64), -1);
  Mesh m(cpus(4), {"data", "model"}, {2, 2});
  const SpecDim both{"data", "model"};
  auto loss4 = [](const Array& w1, const Array& b1, const Array& w2, const Array& b2, const Array& x, const Array& y) {
    return mlp_loss(Mlp{w1, b1, w2, b2}, x, y);
  };
  auto vg = value_and_grad(loss4, {0, 1, 2, 3});
  auto [lr, gr] = jit(vg)(p[0], p[1], p[2], p[3], x, y);
  auto plan_bytes = [&](const PjitLowered& l) { return plan_collective_bytes(*l.global.jaxpr, l.plan, l.mesh); };
  auto sent = [](const PjitLowered& l) {
    int64_t b = 0;
    for (auto& [n, v] : l.collectives()) b += v;
    return b;
  };
  OS batch = ns(m, P(both));
  {
    // data parallel over all four devices: the gradients and the loss all-reduced once each, over both axes
    auto f = pjit(vg, {.in_shardings = {OS(), OS(), OS(), OS(), batch, batch}, .out_shardings = {OS(ns(m, P()))}});
    auto l = f.lower(p[0], p[1], p[2], p[3], x, y);
    auto c = count(l);
    EXPECT_EQ(c["psum"], 5) << l.as_text();
    EXPECT_EQ(c.size(), 1u) << l.as_text();
    EXPECT_EQ(sent(l), (8 * 16 + 16 + 16 * 4 + 4 + 1) * 8);
    EXPECT_DOUBLE_EQ(plan_bytes(l), static_cast<double>(sent(l)));
    EXPECT_NE(l.plan_text().find("P(('data', 'model'))"), std::string::npos) << l.plan_text();
    auto [lv, g] = f(p[0], p[1], p[2], p[3], x, y);
    EXPECT_NEAR(lv.item<double>(), lr.item<double>(), 1e-12);
    expect_close(g, gr);
  }
  {
    // FSDP over both axes: each parameter's first dimension in four blocks, gathered minor axis first
    // (two gathers), its gradient reduce-scattered major axis first (two)
    OS p0 = ns(m, P(both));
    auto f = pjit(vg, {.in_shardings = {p0, p0, p0, p0, batch, batch}, .out_shardings = {OS(ns(m, P())), p0, p0, p0, p0}});
    auto l = f.lower(p[0], p[1], p[2], p[3], x, y);
    auto c = count(l);
    EXPECT_EQ(c["all_gather_invariant"], 8) << l.plan_text() << l.as_text();
    EXPECT_EQ(c["reduce_scatter"], 8) << l.plan_text() << l.as_text();
    EXPECT_EQ(c["psum"], 1) << l.as_text();
    EXPECT_DOUBLE_EQ(plan_bytes(l), static_cast<double>(sent(l)));
    auto [lv, g] = f(p[0], p[1], p[2], p[3], x, y);
    EXPECT_NEAR(lv.item<double>(), lr.item<double>(), 1e-12);
    expect_close(g, gr);
    EXPECT_EQ(l.local.jaxpr->invars[0]->aval.shape, (Shape{2, 16}));  // a quarter of w1 per device
  }
  // moves: from both axes to "data" alone gathers over "model" only; to ("model", "data") gathers whole
  // and slices; from "data" to both slices (no collective)
  auto ident = [](const Array& a) { return a * 2.0; };
  Array a = rng.uniform({8, 3}, DType::f64);
  for (auto [from, to, gathers] : std::vector<std::tuple<PartitionSpec, PartitionSpec, int>>{
           {P(both), P("data"), 1}, {P(both), P(SpecDim{"model", "data"}), 2}, {P("data"), P(both), 0},
           {P(both), P(), 2}, {P("model"), P(both), 1}}) {
    auto f = pjit(ident, {.in_shardings = {OS(ns(m, from))}, .out_shardings = {OS(ns(m, to))}});
    auto l = f.lower(a);
    EXPECT_EQ(count(l)["all_gather_invariant"], gathers) << from.str() << " -> " << to.str() << l.as_text();
    EXPECT_DOUBLE_EQ(plan_bytes(l), static_cast<double>(sent(l)));
    ShardedArray r = f(device_put(a, ns(m, from)))[0];
    EXPECT_EQ(r.sharding().spec, to);
    EXPECT_TRUE(close(r.gather(), a * 2.0, 0, 0)) << from.str() << " -> " << to.str();
  }
  // a partial sum scattered over both axes: the gradient of a split contraction
  auto mm = [](const Array& a, const Array& b) { return matmul(a, b); };
  Array b = rng.uniform({8, 8}, DType::f64), c = rng.uniform({8, 4}, DType::f64);
  auto f = pjit(mm, {.in_shardings = {OS(ns(m, P(std::nullopt, both))), OS(ns(m, P(both)))}, .out_shardings = {batch}});
  auto l = f.lower(b, c);
  EXPECT_EQ(count(l)["reduce_scatter"], 2) << l.as_text();
  EXPECT_EQ(count(l).size(), 1u) << l.as_text();
  EXPECT_DOUBLE_EQ(plan_bytes(l), static_cast<double>(sent(l)));
  EXPECT_TRUE(close(f(b, c), matmul(b, c), 1e-12, 1e-12));
  // errors: an axis twice, a dimension that does not divide over both
  EXPECT_THROW(pjit(ident, {.in_shardings = {OS(ns(m, P(SpecDim{"data", "data"})))}})(a), ValueError);
  EXPECT_THROW(pjit(ident, {.in_shardings = {OS(ns(m, P(std::nullopt, both)))}})(a), ValueError);
}

// Donation (a training step's parameters and optimizer state): the donated arguments are deleted after
// the call, the update is written into the donated buffer, the results feed the next call, and the
// values equal the undonated step's.
TEST(Pjit, DonatedArgumentsAreTakenOver) {
  Rng rng(23);
  Mesh m(cpus(4), {"data"});
  OS rows = ns(m, P("data"));
  Array w = rng.uniform({8, 6}, DType::f64), x = rng.uniform({8, 6}, DType::f64);
  auto sgd = [](const Array& w, const Array& x) {
    Array g = grad([&](const Array& v) { return sum(square(v * x)); })(w);
    return std::pair{w - g * 0.1, sum(g)};
  };
  auto plain = pjit(sgd, {.in_shardings = {rows, rows}});
  auto step = pjit(sgd, {.in_shardings = {rows, rows}, .donate_argnums = {0}});
  auto [want1, s1] = plain(w, x);
  auto [want2, s2] = plain(want1, x);
  Array w0 = w + 0.0;  // a copy to donate
  auto [w1, t1] = step(w0, x);
  EXPECT_TRUE(w0.concrete()->deleted());
  EXPECT_FALSE(x.concrete()->deleted());
  expect_throws<ValueError>([&] { (void)(w0 + 1.0); }, "donated");
  const void* storage = w1.raw_data();
  auto [w2, t2] = step(w1, x);
  EXPECT_TRUE(w1.concrete()->deleted());
  EXPECT_EQ(w2.raw_data(), storage);  // in place: the update's result took the donated buffer
  EXPECT_TRUE(close(w2, want2, 0, 0));
  EXPECT_EQ(t2.item<double>(), s2.item<double>());
  EXPECT_EQ(step.num_traces(), 1u);
}

TEST(Pjit, ShardingConstraintPinsAnIntermediate) {
  Rng rng(8);
  Mesh m(cpus(2), {"data"});
  Array a = rng.uniform({4, 6}, DType::f64);
  auto f = [&m](const Array& a) { return sum(with_sharding_constraint(tanh(a), ns(m, P(std::nullopt, "data"))), {1}); };
  EXPECT_TRUE(close(f(a), sum(tanh(a), {1}), 0, 0));  // the identity outside sharded jit
  auto pf = pjit(f, {.in_shardings = {OS(ns(m, P("data")))}});
  EXPECT_TRUE(close(pf(a), f(a), 1e-12, 1e-12));
  auto l = pf.lower(a);
  EXPECT_NE(l.plan_text().find("sharding_constraint(P(None, 'data') <- P('data'))"), std::string::npos) << l.plan_text();
  EXPECT_NE(l.as_text().find("all_gather_invariant"), std::string::npos) << l.as_text();
  // derivatives and batches keep the pin
  EXPECT_TRUE(close(grad([&](const Array& a) { return sum(f(a)); })(a), 1.0 - square(tanh(a)), 1e-12, 1e-12));
  Array stacked = rng.uniform({3, 4, 6}, DType::f64);
  EXPECT_TRUE(close(vmap(f)(stacked), sum(tanh(stacked), {2}), 1e-12, 1e-12));
}

TEST(Pjit, ComposesWithGradVmapAndJit) {
  Rng rng(9);
  Mesh m(cpus(2), {"data"});
  Array w = rng.uniform({3, 2}, DType::f64), x = rng.uniform({4, 3}, DType::f64);
  auto f = [](const Array& w, const Array& x) { return sum(tanh(matmul(x, w))); };
  auto pf = pjit(f, {.in_shardings = {OS(), OS(ns(m, P("data")))}});
  EXPECT_TRUE(close(grad(pf)(w, x), grad(f)(w, x), 1e-12, 1e-12));
  EXPECT_TRUE(close(jit(pf)(w, x), f(w, x), 1e-12, 1e-12));
  Array ws = rng.uniform({5, 3, 2}, DType::f64);
  auto vf = vmap([&](const Array& w) { return pf(w, x); });
  EXPECT_TRUE(close(vf(ws), vmap([&](const Array& w) { return f(w, x); })(ws), 1e-12, 1e-12));
}

TEST(Pjit, ClearErrors) {
  Mesh m(cpus(4), {"data"});
  Array a = zeros({6, 4}, DType::f32);
  auto f = [](const Array& a) { return a * 2.0; };
  try {
    pjit(f, {.in_shardings = {OS(ns(m, P("data")))}})(a);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    std::string s = e.what();
    EXPECT_NE(s.find("argument leaf 0"), std::string::npos) << s;
    EXPECT_NE(s.find("dimension 0 has 6 entries"), std::string::npos) << s;
    EXPECT_NE(s.find("Mesh('data': 4)"), std::string::npos) << s;
  }
  EXPECT_THROW(pjit(f)(a), ValueError);  // no mesh anywhere
  EXPECT_THROW(pjit(f, {.in_shardings = {OS(ns(m, P("model")))}})(zeros({8, 4}, DType::f32)), ValueError);
  Mesh other(cpus(2), {"data"});
  EXPECT_THROW(pjit(f, {.in_shardings = {OS(ns(m, P("data")))}, .out_shardings = {OS(ns(other, P()))}})(
                   zeros({8, 4}, DType::f32)),
               ValueError);
  EXPECT_THROW(pjit(f, {.in_shardings = {OS(ns(m, P())), OS(ns(m, P()))}})(a), ValueError);  // two for one argument
}

}  // namespace
}  // namespace graft::testing
