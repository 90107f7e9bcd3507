// Collectives composed with the transformations: their JVP and transpose rules (run inside vmap with
// an axis name) against the derivatives of the whole mapped function (which only use the batching
// rules, themselves checked by finite differences in tests/prims), and data-parallel gradients against
// the single-device full-batch gradient.
#include "graft/core/axis_names.h"
#include "graft/transforms/control.h"
#include "prims/conformance.h"

namespace graft::testing {
namespace {

using Ax = std::vector<std::optional<int64_t>>;

bool invariant_over(const Case& c, const std::string& axis) {
  if (c.prim == &prims::all_gather_invariant_p)
    return c.params.get_object<AxisNames>("axis_name").set() & axis_bit(axis);
  bool reduces = c.prim == &prims::psum_p || c.prim == &prims::pmax_p || c.prim == &prims::pmin_p;
  return reduces && (c.params.get_object<AxisNames>("axes").set() & axis_bit(axis));
}

// body once per member of c's named axes; `in_axes(level)` / `out_axes(level)` per level.
Inputs map_levels(const Case& c, const Inputs& in, const FlatFn& body, const std::function<Ax(size_t)>& in_axes,
                  const std::function<Ax(size_t)>& out_axes, size_t level = 0) {
  if (level == c.named_axes.size()) return body(in);
  auto& [name, size] = c.named_axes[level];
  return vmap_flat([&](const Inputs& x) { return map_levels(c, x, body, in_axes, out_axes, level + 1); }, in,
                   in_axes(level), out_axes(level), name, size);
}

Inputs bind_row(const Case& c, const Inputs& x) {
  Arrays out = bind(*c.prim, x, c.params);
  return Inputs(out.begin(), out.end());
}

class CollectiveRules : public ::testing::TestWithParam<Case> {};

// d/dt of the primitive inside the map (its JVP rule) == d/dt of the mapped function.
TEST_P(CollectiveRules, JvpInsideTheMap) {
  const Case& c = GetParam();
  if (c.diff.empty()) GTEST_SKIP() << "no operands";
  Rng rng(7);
  Inputs x = c.inputs(rng, DType::f64);
  Inputs t{rng.uniform(x[0].shape(), DType::f64)};
  Inputs outer = jvp_flat([&](const Inputs& in) { return run_case(c, in); }, x, t).second;
  Inputs inner = map_named(
      c, {x[0], t[0]}, [&](const Inputs& xt) { return jvp_flat([&](const Inputs& in) { return bind_row(c, in); },
                                                               {xt[0]}, {xt[1]})
                                                          .second; },
      {0, 0}, {0});
  ASSERT_EQ(inner.size(), outer.size());
  EXPECT_TRUE(close(inner[0], outer[0], 1e-12, 1e-12));
}

// The primitive's transpose inside the map == the VJP of the mapped function, with cotangents typed
// like the outputs: one shared cotangent for an output invariant over an axis (psum's), one per member
// otherwise.
TEST_P(CollectiveRules, VjpInsideTheMap) {
  const Case& c = GetParam();
  if (c.diff.empty()) GTEST_SKIP() << "no operands";
  Rng rng(8);
  Inputs x = c.inputs(rng, DType::f64);
  auto out_ax = [&](size_t level) {
    return Ax{invariant_over(c, c.named_axes[level].first) ? std::nullopt : std::optional<int64_t>(0)};
  };
  VjpResult r = vjp_flat(
      [&](const Inputs& in) {
        return map_levels(c, in, [&](const Inputs& xi) { return bind_row(c, xi); }, [](size_t) { return Ax{0}; },
                          out_ax);
      },
      x);
  Array ct = rng.uniform(r.outs[0].shape(), DType::f64);
  Inputs outer = r.pullback({ct});
  Inputs inner = map_levels(
      c, {x[0], ct},
      [&](const Inputs& xc) {
        VjpResult ri = vjp_flat([&](const Inputs& in) { return bind_row(c, in); }, {xc[0]});
        return ri.pullback({xc[1]});
      },
      [&](size_t level) { return Ax{0, out_ax(level)[0]}; }, [](size_t) { return Ax{0}; });
  EXPECT_TRUE(close(inner[0], outer[0], 1e-12, 1e-12));
}

std::string row_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(Collectives, CollectiveRules, ::testing::ValuesIn(collective_cases()), row_name);

// ---- data-parallel gradients ---------------------------------------------------------------------------
Array loss(const Array& w, const Array& x, const Array& y) {
  Array d = tanh(matmul(x, w)) - y;
  return sum(d * d);
}

struct Batch {
  Array w, x, y, xs, ys;  // xs / ys: the batch split over 4 members, [4, 2, ...]
};
Batch batch() {
  Rng rng(11);
  Batch b{rng.uniform({3, 2}, DType::f64), rng.uniform({8, 3}, DType::f64), rng.uniform({8, 2}, DType::f64), {}, {}};
  b.xs = reshape(b.x, {4, 2, 3});
  b.ys = reshape(b.y, {4, 2, 2});
  return b;
}

// JAX issue 3970: grad of a loss that ends in psum is the full-batch gradient, not the axis size times it.
TEST(DataParallel, GradOfPsumIsTheFullBatchGradient) {
  Batch b = batch();
  Array want = grad(loss)(b.w, b.x, b.y);
  auto step = [](const Array& w, const Array& x, const Array& y) {
    return grad([&](const Array& v) { return psum(loss(v, x, y), "i"); })(w);
  };
  VmapOptions o{{std::nullopt, 0, 0}, {std::nullopt}, "i", std::nullopt};
  EXPECT_TRUE(close(vmap(step, o)(b.w, b.xs, b.ys), want, 1e-12, 1e-12));
  // jitted, and jit inside the map
  EXPECT_TRUE(close(jit(vmap(step, o))(b.w, b.xs, b.ys), want, 1e-12, 1e-12));
  EXPECT_TRUE(close(vmap(jit(step), o)(b.w, b.xs, b.ys), want, 1e-12, 1e-12));
  // grad through a jit and a scan inside the map: their bodies' backward passes place the sums
  auto through_jit = [](const Array& w, const Array& x, const Array& y) {
    return grad([&](const Array& v) { return psum(jit(loss)(v, x, y), "i"); })(w);
  };
  EXPECT_TRUE(close(vmap(through_jit, o)(b.w, b.xs, b.ys), want, 1e-12, 1e-12));
  auto through_scan = [](const Array& w, const Array& x, const Array& y) {
    return grad([&](const Array& v) {
      auto [c, ys] = scan([&](const Array& acc, const Array& xy) {
        Array l = loss(v, reshape(xy[{slice(0, 3)}], {1, 3}), reshape(xy[{slice(3, 5)}], {1, 2}));
        return std::pair{acc + l, l};
      }, zeros({}, DType::f64), concatenate({x, y}, 1));
      return psum(c, "i");
    })(w);
  };
  EXPECT_TRUE(close(vmap(through_scan, o)(b.w, b.xs, b.ys), want, 1e-12, 1e-12));
  // pmean: the gradient of the mean over members
  auto mean_step = [](const Array& w, const Array& x, const Array& y) {
    return value_and_grad([&](const Array& v) { return pmean(loss(v, x, y), "i"); })(w);
  };
  auto [l, g] = vmap(mean_step, o)(b.w, b.xs, b.ys);
  EXPECT_NEAR(l.item<double>(), loss(b.w, b.x, b.y).item<double>() / 4, 1e-12);
  EXPECT_TRUE(close(g, want / 4.0, 1e-12, 1e-12));
}

// Without the psum, each member's gradient of its own loss with respect to a replicated parameter is
// summed over the members (the transpose of the implicit broadcast), so it is still replicated.
TEST(DataParallel, GradOfAReplicatedParameterIsSummed) {
  Batch b = batch();
  Array want = grad(loss)(b.w, b.x, b.y);
  auto step = [](const Array& w, const Array& x, const Array& y) { return grad(loss)(w, x, y); };
  EXPECT_TRUE(close(vmap(step, {{std::nullopt, 0, 0}, {std::nullopt}, "i", std::nullopt})(b.w, b.xs, b.ys), want,
                    1e-12, 1e-12));
  // an anonymous vmap keeps per-example gradients (nothing names the axis)
  Array per = vmap(step, {{std::nullopt, 0, 0}, {0}, "", std::nullopt})(b.w, b.xs, b.ys);
  ASSERT_EQ(per.shape(), (Shape{4, 3, 2}));
  EXPECT_TRUE(close(sum(per, 0), want, 1e-12, 1e-12));
  EXPECT_TRUE(close(per[0], grad(loss)(b.w, b.xs[0], b.ys[0]), 1e-12, 1e-12));
}

// Two named axes at once: data parallel over "data", the members of "model" each holding a column
// block of w (model parallel); psum over both gives the full-batch gradient's blocks.
TEST(DataParallel, TwoAxes) {
  Batch b = batch();
  Array want = grad(loss)(b.w, b.x, b.y);  // [3, 2]
  Array ws = moveaxis(reshape(b.w, {3, 2, 1}), 1, 0);  // [model 2, 3, 1]
  Array yt = moveaxis(reshape(b.ys, {4, 2, 2, 1}), 2, 0);  // [model 2, data 4, 2, 1]
  auto step = [](const Array& w, const Array& x, const Array& y) {
    return grad([&](const Array& v) { return psum(loss(v, x, y), {"data", "model"}); })(w);
  };
  auto over_data = vmap(step, {{std::nullopt, 0, 0}, {std::nullopt}, "data", std::nullopt});
  Array g = vmap(over_data, {{0, std::nullopt, 0}, {0}, "model", std::nullopt})(ws, b.xs, yt);  // [2, 3, 1]
  EXPECT_TRUE(close(reshape(moveaxis(g, 0, 1), {3, 2}), want, 1e-12, 1e-12));
}

// A scan whose body all-reduces: the carry is the running all-reduced sum.
TEST(DataParallel, ScanBodyCallsPsum) {
  Rng rng(12);
  Array xs = rng.uniform({4, 5, 2}, DType::f64);  // [member, step, 2]
  auto f = [](const Array& x) {  // x: [5, 2] on each member
    auto [c, ys] = scan([](const Array& carry, const Array& xt) {
      Array s = carry + psum(xt * xt, "i");
      return std::pair{s, s};
    }, zeros({2}, DType::f64), x);
    return c;
  };
  Array c = vmap(f, {{0}, {std::nullopt}, "i", std::nullopt})(xs);
  EXPECT_TRUE(close(c, sum(xs * xs, {0, 1}), 1e-12, 1e-12));
  // and its gradient: d/dx of sum(c) = 2 x, on every member
  auto g = vmap(grad([&](const Array& x) { return sum(f(x)); }), {{0}, {0}, "i", std::nullopt})(xs);
  EXPECT_TRUE(close(g, xs * 2.0, 1e-12, 1e-12));
}

// The sums over the members that reverse mode owes a replicated parameter run once each, on the
// parameter's gradient — not on the [batch, n] cotangent of the broadcast bias (deferred through the
// transposes that are invariant over the axis) — and a replicated term (a weight penalty) joins the
// summed gradient once.
TEST(DataParallel, SumsRunOnceOnTheParameterGradients) {
  Rng rng(21);
  Array w = rng.uniform({3, 2}, DType::f64), bias = rng.uniform({2}, DType::f64);
  Array xs = rng.uniform({4, 5, 3}, DType::f64), ys = rng.uniform({4, 5, 2}, DType::f64);
  auto member_loss = [](const Array& w, const Array& b, const Array& x, const Array& y) {
    Array d = tanh(matmul(x, w) + b) - y;
    return mean(d * d);
  };
  auto objective = [&](const Array& w, const Array& b, const Array& x, const Array& y) {
    return pmean(member_loss(w, b, x, y), "i") + 0.1 * sum(w * w);
  };
  std::string printed;
  auto step = [&](const Array& w, const Array& b, const Array& x, const Array& y) {
    auto g = [&](const Array& w, const Array& b) -> std::vector<Array> {
      return grad([&](const Array& w, const Array& b) { return objective(w, b, x, y); }, {0, 1})(w, b);
    };
    std::ostringstream s;
    s << make_jaxpr(g)(w, b);
    printed = s.str();
    return g(w, b);
  };
  auto got = vmap(step, {{std::nullopt, std::nullopt, 0, 0}, {std::nullopt, std::nullopt}, "i", std::nullopt})(w, bias, xs, ys);
  // the reference: the full batch's mean loss, plus the penalty
  Array x = reshape(xs, {20, 3}), y = reshape(ys, {20, 2});
  std::vector<Array> want =
      grad([&](const Array& w, const Array& b) { return member_loss(w, b, x, y) + 0.1 * sum(w * w); }, {0, 1})(w, bias);
  EXPECT_TRUE(close(got[0], want[0], 1e-12, 1e-12));
  EXPECT_TRUE(close(got[1], want[1], 1e-12, 1e-12));
  // psums in the backward pass: the loss's (forward), then one per parameter, of the parameter's shape
  std::istringstream lines(printed);
  std::vector<std::string> psums;
  for (std::string l; std::getline(lines, l);)
    if (l.find("psum[") != std::string::npos) psums.push_back(l);
  ASSERT_EQ(psums.size(), 3u) << printed;
  for (auto& l : psums) EXPECT_EQ(l.find("[5,2]"), std::string::npos) << "a batch-sized sum: " << l << "\n" << printed;
}

// make_jaxpr prints collectives as JAX does, and types varying values.
TEST(Collectives, Jaxpr) {
  Array xs = zeros({4, 3});
  std::string printed;
  auto f = [&](const Array& x) {
    std::ostringstream s;
    s << make_jaxpr([](const Array& v) { return psum(v * 2.0, "i"); })(x);
    printed = s.str();
    return x;
  };
  vmap(f, {{0}, {0}, "i", std::nullopt})(xs);
  EXPECT_NE(printed.find("psum[axes=('i',)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("f32[3]{V:i}"), std::string::npos) << printed;
}

TEST(Collectives, Errors) {
  Array x = ones({3});
  EXPECT_THROW(psum(x, "i"), ValueError);  // no map binds "i"
  auto f = [](const Array& v) { return v; };
  // a varying output cannot be returned as invariant
  EXPECT_THROW(vmap(f, {{0}, {std::nullopt}, "i", std::nullopt})(ones({4, 3})), ValueError);
  auto bad_scatter = [](const Array& v) { return psum_scatter(v, "i", 0, true); };  // 5 rows over 4 members
  EXPECT_THROW(vmap(bad_scatter, {{0}, {0}, "i", std::nullopt})(ones({4, 5})), Error);
  auto bad_perm = [](const Array& v) { return ppermute(v, "i", {{0, 1}, {1, 1}}); };  // member 1 receives twice
  EXPECT_THROW(vmap(bad_perm, {{0}, {0}, "i", std::nullopt})(ones({4, 5})), Error);
  auto out_of_axis = [](const Array& v) { return ppermute(v, "i", {{0, 7}}); };
  EXPECT_THROW(vmap(out_of_axis, {{0}, {0}, "i", std::nullopt})(ones({4, 5})), Error);
}

}  // namespace
}  // namespace graft::testing
