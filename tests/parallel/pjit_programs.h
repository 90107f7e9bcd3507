// The programs sharded jit is checked on, shared by the one-process tests (meshes of 1-8 hand-made CPU
// devices, tests/parallel/test_pjit.cpp) and the multi-process ones (one device per MPI rank,
// tests/distributed/test_distributed.cpp): models, their pieces, their gradients and training steps,
// control flow and the shape operations, each with the layouts of its arguments over a mesh with axes
// "data" and "model". Every size that a layout splits divides by 1, 2, 3, 4 and 8 over "data" and by 2
// over "model", so that one table runs on every mesh the tests build.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <graft/graft.h>

#include "testing.h"

namespace graft::testing {

/// softmax cross-entropy of logits against soft labels y, averaged over the batch
inline Array xent(const Array& logits, const Array& y) {
  Array lse = logsumexp(logits, {-1}, true);
  return -mean(sum((logits - lse) * y, {-1}));
}

inline Array layer_norm(const Array& x) {
  Array mu = mean(x, {-1}, true);
  Array v = mean(square(x - mu), {-1}, true);
  return (x - mu) * rsqrt(v + 1e-5);
}

/// multi-head attention on [batch, length, heads * dim] with heads split out by a reshape (causal: each
/// position attends to itself and the ones before it)
inline Array attention(const Array& x, const Array& wq, const Array& wk, const Array& wv, int64_t heads,
                       bool causal = false) {
  int64_t b = x.shape()[0], t = x.shape()[1], d = wq.shape()[1] / heads;
  auto split = [&](const Array& y) { return transpose(reshape(y, {b, t, heads, d}), {0, 2, 1, 3}); };
  Array q = split(matmul(x, wq)), k = split(matmul(x, wk)), v = split(matmul(x, wv));
  Array s = einsum("bhqd,bhkd->bhqk", {q, k}) / std::sqrt(static_cast<double>(d));
  if (causal) {
    Array keep = tril(ones({t, t}, DType::bool_));
    s = where(keep, s, full_like(s, -1e9));
  }
  Array o = einsum("bhqk,bhkd->bhqd", {softmax(s, -1), v});
  return reshape(transpose(o, {0, 2, 1, 3}), {b, t, heads * d});
}

/// One program: f on args, whose argument i is laid out as in[i] over the mesh.
struct PjitProgram {
  std::string name;
  FlatFn f;
  std::vector<Array> args;
  std::vector<std::optional<PartitionSpec>> in;
  double tol = 1e-12;  ///< against plain jit: relative to each element and to the output's largest
};

namespace pjit_programs_detail {

using Loss = std::function<Array(const std::vector<Array>&)>;

/// The loss of all arguments and its gradients with respect to the first n.
inline FlatFn value_and_grads(Loss loss, size_t n) {
  return [loss, n](const std::vector<Array>& a) {
    std::vector<Array> p(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n));
    auto [l, g] = value_and_grad([&](const std::vector<Array>& q) {
      std::vector<Array> all = q;
      all.insert(all.end(), a.begin() + static_cast<std::ptrdiff_t>(n), a.end());
      return loss(all);
    })(p);
    std::vector<Array> r{l};
    r.insert(r.end(), g.begin(), g.end());
    return r;
  };
}

inline Array mlp(const std::vector<Array>& a) {  // a: w1, b1, w2, b2, x
  return matmul(relu(matmul(a[4], a[0]) + a[1]), a[2]) + a[3];
}
inline Array mlp_loss(const std::vector<Array>& a) { return xent(mlp(a), a[5]); }

inline Array conv(const Array& x, const Array& k, int64_t groups = 1) {
  return lax::conv_general_dilated(x, k, {1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, lax::ConvDims::nchw(2), groups);
}

// a transformer block: attention (heads over "model" in the layouts below) with a residual, layer norm,
// an MLP with a residual
inline Array block(const std::vector<Array>& a) {  // a: wq, wk, wv, wo, fc1, fc2, x
  Array h = a[6] + matmul(attention(a[6], a[0], a[1], a[2], 2, true), a[3]);
  Array n = layer_norm(h);
  return h + matmul(gelu(matmul(n, a[4])), a[5]);
}

}  // namespace pjit_programs_detail

/// The table: f64 unless named f32 (checked to 1e-5 then).
inline std::vector<PjitProgram> pjit_programs() {
  using namespace pjit_programs_detail;
  using OP = std::optional<PartitionSpec>;
  const std::optional<std::string> none;
  Rng rng(2026);
  auto u = [&](Shape s, DType d = DType::f64) { return rng.uniform(std::move(s), d) - 0.5; };
  const int64_t B = 24;  // the batch: divides by 1, 2, 3, 4 and 8
  OP rep = P(), data = P("data"), model = P("model"), cols = P(none, "model");
  std::vector<PjitProgram> t;

  // ---- the MLP: data parallel, FSDP, Megatron, both; a training step with momentum; f32 -------------
  std::vector<Array> mlp_args{u({24, 48}), u({48}), u({48, 24}), u({24}), u({B, 24}), softmax(u({B, 24}), -1)};
  t.push_back({"mlp, data parallel", value_and_grads(mlp_loss, 4), mlp_args, {rep, rep, rep, rep, data, data}});
  t.push_back({"mlp, fsdp", value_and_grads(mlp_loss, 4), mlp_args, {data, data, data, data, data, data}});
  t.push_back({"mlp, megatron", value_and_grads(mlp_loss, 4), mlp_args, {cols, model, model, rep, data, data}});
  t.push_back({"mlp, fsdp + megatron", value_and_grads(mlp_loss, 4), mlp_args,
               {P("data", "model"), model, P("model", "data"), data, data, data}});
  {
    std::vector<Array> a32;
    for (const Array& x : mlp_args) a32.push_back(x.astype(DType::f32));
    t.push_back({"mlp f32, data parallel", value_and_grads(mlp_loss, 4), a32, {rep, rep, rep, rep, data, data}, 1e-5});
  }
  {
    // one SGD-with-momentum step: parameters and velocities in (FSDP), updated out
    FlatFn step = [](const std::vector<Array>& a) {
      std::vector<Array> p(a.begin(), a.begin() + 4), v(a.begin() + 4, a.begin() + 8);
      std::vector<Array> g = grad([&](const std::vector<Array>& q) { return mlp_loss({q[0], q[1], q[2], q[3], a[8], a[9]}); })(p);
      std::vector<Array> out;
      for (size_t k = 0; k < 4; ++k) out.push_back(v[k] * 0.9 + g[k]);
      for (size_t k = 0; k < 4; ++k) out.push_back(p[k] - out[k] * 0.1);
      return out;
    };
    std::vector<Array> a(mlp_args.begin(), mlp_args.begin() + 4);
    for (size_t k = 0; k < 4; ++k) a.push_back(u(mlp_args[k].shape()));
    a.push_back(mlp_args[4]);
    a.push_back(mlp_args[5]);
    t.push_back({"sgd momentum step, fsdp", step, a, {data, data, data, data, data, data, data, data, data, data}});
    // one Adam step over Megatron's layouts (moments laid out as their parameters)
    FlatFn adam = [](const std::vector<Array>& a) {
      std::vector<Array> p(a.begin(), a.begin() + 4);
      std::vector<Array> g = grad([&](const std::vector<Array>& q) { return mlp_loss({q[0], q[1], q[2], q[3], a[12], a[13]}); })(p);
      std::vector<Array> out;
      for (size_t k = 0; k < 4; ++k) {
        Array m = a[4 + k] * 0.9 + g[k] * 0.1, v = a[8 + k] * 0.999 + square(g[k]) * 0.001;
        out.push_back(p[k] - m / (sqrt(v) + 1e-8) * 0.01);
        out.push_back(m);
        out.push_back(v);
      }
      return out;
    };
    std::vector<Array> b(mlp_args.begin(), mlp_args.begin() + 4);
    for (size_t k = 0; k < 4; ++k) b.push_back(u(mlp_args[k].shape()));
    for (size_t k = 0; k < 4; ++k) b.push_back(square(u(mlp_args[k].shape())));
    b.push_back(mlp_args[4]);
    b.push_back(mlp_args[5]);
    std::vector<OP> meg{cols, model, model, rep};
    std::vector<OP> in;
    for (int r = 0; r < 3; ++r) in.insert(in.end(), meg.begin(), meg.end());
    in.push_back(data);
    in.push_back(data);
    t.push_back({"adam step, megatron", adam, b, in});
  }

  // ---- transformer pieces ---------------------------------------------------------------------------
  t.push_back({"layer norm, scale and shift over model",
               value_and_grads([](const std::vector<Array>& a) { return sum(square(layer_norm(a[2]) * a[0] + a[1])); }, 3),
               {u({16}), u({16}), u({B, 4, 16})}, {model, model, data}});
  t.push_back({"softmax cross-entropy, classes over model",
               value_and_grads([](const std::vector<Array>& a) { return xent(a[0], a[1]); }, 1),
               {u({B, 16}) * 4.0, softmax(u({B, 16}), -1)}, {P("data", "model"), P("data", "model")}});
  t.push_back({"attention, heads over model",
               value_and_grads([](const std::vector<Array>& a) { return sum(square(attention(a[3], a[0], a[1], a[2], 2))); }, 4),
               {u({16, 16}), u({16, 16}), u({16, 16}), u({B, 4, 16})}, {cols, cols, cols, data}});
  t.push_back({"causal attention f32, heads over model",
               value_and_grads(
                   [](const std::vector<Array>& a) { return sum(square(attention(a[3], a[0], a[1], a[2], 2, true))); }, 4),
               {u({16, 16}, DType::f32), u({16, 16}, DType::f32), u({16, 16}, DType::f32), u({B, 5, 16}, DType::f32)},
               // (its gradients sum thousands of f32 products: plain jit's and the partitioned program's
               // are each about 1.6e-5 of the largest off the f64 values, in different directions)
               {cols, cols, cols, data}, 3e-5});
  t.push_back({"transformer block, megatron",
               value_and_grads([](const std::vector<Array>& a) { return sum(square(block(a))); }, 6),
               {u({24, 24}), u({24, 24}), u({24, 24}), u({24, 24}), u({24, 48}), u({48, 24}), u({B, 4, 24})},
               {cols, cols, cols, model, cols, model, data}});
  t.push_back({"transformer block, fsdp",
               value_and_grads([](const std::vector<Array>& a) { return sum(square(block(a))); }, 6),
               {u({24, 24}), u({24, 24}), u({24, 24}), u({24, 24}), u({24, 48}), u({48, 24}), u({B, 4, 24})},
               {P(none, "data"), P(none, "data"), P(none, "data"), data, P(none, "data"), data, data}});

  // ---- convolutions ---------------------------------------------------------------------------------
  t.push_back({"cnn, data parallel",
               value_and_grads(
                   [](const std::vector<Array>& a) {
                     Array c = relu(conv(a[4], a[0]) + reshape(a[1], {1, 4, 1, 1}));
                     Array h = reshape(nn::max_pool2d(c, {2, 2}), {a[4].shape()[0], 36});
                     return xent(matmul(h, a[2]) + a[3], a[5]);
                   },
                   4),
               {u({4, 2, 3, 3}), u({4}), u({36, 6}), u({6}), u({B, 2, 6, 6}), softmax(u({B, 6}), -1)},
               {rep, rep, rep, rep, data, data}});
  t.push_back({"convolution, output channels over model",
               value_and_grads([](const std::vector<Array>& a) { return sum(square(tanh(conv(a[2], a[0]) + reshape(a[1], {1, 4, 1, 1})))); }, 2),
               {u({4, 2, 3, 3}), u({4}), u({B, 2, 5, 5})}, {model, model, data}});
  t.push_back({"depthwise convolution",
               value_and_grads([](const std::vector<Array>& a) { return sum(square(conv(a[1], a[0], 2))); }, 2),
               {u({2, 1, 3, 3}), u({B, 2, 5, 5})}, {rep, data}});

  // ---- control flow ---------------------------------------------------------------------------------
  t.push_back({"scan rnn",
               value_and_grads(
                   [](const std::vector<Array>& a) {
                     auto [h, hs] = scan([&](const Array& h, const Array& xt) {
                       Array n = tanh(matmul(h, a[0]) + xt);
                       return std::pair{n, n};
                     }, a[1], a[2]);
                     return sum(square(hs)) + sum(h);
                   },
                   2),
               {u({16, 16}), u({B, 16}), u({5, B, 16})}, {cols, data, P(none, "data")}});
  t.push_back({"cond on a sum of the data",
               value_and_grads(
                   [](const std::vector<Array>& a) {
                     return sum(cond(sum(a[0]) > 0.0, [](const Array& v) { return tanh(v) * 2.0; },
                                     [](const Array& v) { return -v; }, a[0]));
                   },
                   1),
               {u({B, 6}) + 0.1}, {data}});
  t.push_back({"bounded while loop",
               value_and_grads(
                   [](const std::vector<Array>& a) {
                     using C = std::pair<Array, Array>;
                     C r = while_loop([](const C& c) { return logical_and(c.first < 6.0, sum(square(c.second)) < 40.0); },
                                      [&](const C& c) { return C{c.first + 1.0, tanh(matmul(c.second, a[0])) * 1.7 + c.second}; },
                                      C{zeros({}, DType::f64), a[1]}, WhileOptions{.max_steps = 8});
                     return sum(r.second) + r.first;
                   },
                   2),
               {u({8, 8}), u({B, 8})}, {rep, data}});

  // ---- indexing ---------------------------------------------------------------------------------------
  {
    std::vector<int32_t> ids;
    for (int64_t k = 0; k < B * 3; ++k) ids.push_back(static_cast<int32_t>((k * 7) % 20));
    t.push_back({"embedding lookup and its scattered gradient",
                 value_and_grads([](const std::vector<Array>& a) { return sum(square(take(a[0], a[1], 0))); }, 1),
                 {u({20, 16}), array(ids, {B, 3})}, {cols, data}});
  }
  t.push_back({"dynamic slice at a traced start",
               [](const std::vector<Array>& a) {
                 std::vector<Array> start{a[1], zeros({}, DType::i32)};
                 return std::vector<Array>{lax::dynamic_slice(a[0], start, {8, 16}) * 2.0};
               },
               {u({B, 16}), array(std::vector<int32_t>{5}, {})}, {data, rep}});

  // ---- reductions and shapes --------------------------------------------------------------------------
  t.push_back({"reductions over split dimensions",
               [](const std::vector<Array>& a) {
                 const Array& x = a[0];
                 return std::vector<Array>{max(x, {1}), min(x, {0}), sum(x), mean(x, {0}), argmax(x, 1),
                                           logsumexp(x, {1})};
               },
               {u({B, 16})}, {P("data", "model")}});
  t.push_back({"reshape and transpose around a product",
               value_and_grads(
                   [](const std::vector<Array>& a) {
                     Array h = matmul(reshape(a[1], {a[1].shape()[0], 48}), a[0]);
                     return sum(square(transpose(h, {1, 0})));
                   },
                   2),
               {u({48, 16}), u({B, 8, 6})}, {cols, data}});
  t.push_back({"concatenate, pad and slice",
               [](const std::vector<Array>& a) {
                 Array c = concatenate({a[0], a[1]}, 1);
                 Array p = pad(c, {{0, 0}, {1, 2}}, 0.5);
                 return std::vector<Array>{tanh(p[{slice(), slice(1, 13)}]), c};
               },
               {u({B, 8}), u({B, 4})}, {data, P("data", "model")}});
  t.push_back({"batched product contracting over model",
               value_and_grads([](const std::vector<Array>& a) { return sum(square(einsum("bij,bjk->bik", {a[0], a[1]}))); }, 2),
               {u({B, 4, 16}), u({B, 16, 6})}, {P("data", none, "model"), P("data", "model")}});
  t.push_back({"cumulative sum and sort along split dimensions",
               [](const std::vector<Array>& a) {
                 return std::vector<Array>{cumsum(a[0], 1), sort(a[0], 0), cumsum(a[0], 0, true)};
               },
               {u({B, 16})}, {P("data", "model")}});
  t.push_back({"gelu with bias and residual f32",
               value_and_grads([](const std::vector<Array>& a) { return sum(square(a[2] + gelu(matmul(a[2], a[0]) + a[1]))); }, 3),
               {u({16, 16}, DType::f32), u({16}, DType::f32), u({B, 16}, DType::f32)}, {cols, model, data}, 1e-5});

  // ---- transformations inside -------------------------------------------------------------------------
  t.push_back({"vmap of a per-example loss",
               [](const std::vector<Array>& a) {
                 const Array& w = a[0];
                 auto per = [&](const Array& xi) { return sum(tanh(matmul(xi, w))); };
                 Array losses = vmap(per)(a[1]);
                 Array g = grad([&](const Array& w2) {
                   return sum(vmap([&](const Array& xi) { return sum(tanh(matmul(xi, w2))); })(a[1]));
                 })(w);
                 return std::vector<Array>{losses, g};
               },
               {u({16, 4}), u({B, 16})}, {rep, data}});
  t.push_back({"checkpointed layers",
               value_and_grads(
                   [](const std::vector<Array>& a) {
                     auto layer = checkpoint([](const Array& x, const Array& w) { return tanh(matmul(x, w)); });
                     return sum(square(layer(layer(a[2], a[0]), a[1])));
                   },
                   2),
               {u({16, 16}), u({16, 16}), u({B, 16})}, {cols, model, data}});
  return t;
}

/// A random valid layout of an array of shape s over m: per dimension none, one or two of the mesh's
/// axes (in a random order), each axis used once, the dimension divisible by its axes' sizes.
inline PartitionSpec random_spec(const Mesh& m, const Shape& s, std::mt19937& gen) {
  PartitionSpec p;
  size_t na = m.axis_names().size();
  std::vector<bool> used(na, false);
  for (size_t d = 0; d < s.size(); ++d) {
    SpecDim sd;
    int64_t n = 1;
    for (size_t i = 0, want = gen() % 3; i < want; ++i) {
      size_t k = gen() % na;
      if (used[k] || s[d] % (n * m.shape()[k]) != 0) continue;
      used[k] = true;
      n *= m.shape()[k];
      sd.axes.push_back(m.axis_names()[k]);
    }
    p.dims.push_back(sd);
  }
  return p;
}

/// `got` equals `want` output by output, to the program's tolerance.
inline ::testing::AssertionResult same_outputs(const PjitProgram& p, const std::vector<Array>& got,
                                               const std::vector<Array>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, want " << want.size();
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].shape() != want[k].shape() || got[k].dtype() != want[k].dtype())
      return ::testing::AssertionFailure() << "output " << k << ": " << got[k].aval().str() << ", want " << want[k].aval().str();
    // to tol relative to each element and to the output's largest (sums in another order)
    double scale = std::max(1.0, max(abs(want[k].astype(DType::f64))).item<double>());
    ::testing::AssertionResult r = close(got[k], want[k], p.tol, p.tol * scale);
    if (!r) {
      std::string m = r.message();
      return ::testing::AssertionFailure() << "output " << k << ": " << m.substr(0, m.find('\n'));
    }
  }
  return ::testing::AssertionSuccess();
}

/// Runs `run` (a partitioned call of p) and compares its outputs with `want`; an exception is a failure
/// that names it, so that one program's error does not hide the others'.
template <class Run>
::testing::AssertionResult runs_like(const PjitProgram& p, Run&& run, const std::vector<Array>& want) {
  try {
    return same_outputs(p, run(), want);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "raised: " << e.what();
  }
}

}  // namespace graft::testing
