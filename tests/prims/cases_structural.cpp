// Conformance rows: reductions, shape/layout, slicing, gather/scatter, dot_general, scans, sort.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "prims/conformance.h"

namespace graft::testing {

namespace {
using namespace graft::prims;
using V = std::vector<int64_t>;

constexpr auto make = make_case;

std::function<Inputs(Rng&, DType)> one_input(Shape s, double lo = -1, double hi = 1) {
  return [s, lo, hi](Rng& r, DType d) { return Inputs{r.uniform(s, d, lo, hi)}; };
}

// ---- reductions ------------------------------------------------------------------------------------
std::function<Inputs(const Inputs&)> ref_reduce(V axes, std::function<double(double, double)> f, double init,
                                                std::optional<DType> out = std::nullopt) {
  return [=](const Inputs& in) {
    T x(in[0]);
    Shape os;
    for (int64_t k = 0; k < static_cast<int64_t>(x.s.size()); ++k)
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) os.push_back(x.s[k]);
    T o(os, init);
    for_each_index(x.s, [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> oi;
      for (int64_t k = 0; k < static_cast<int64_t>(idx.size()); ++k)
        if (std::find(axes.begin(), axes.end(), k) == axes.end()) oi.push_back(idx[static_cast<size_t>(k)]);
      o.at(oi) = f(o.at(oi), x.at(idx));
    });
    return Inputs{o.array(out.value_or(in[0].dtype()))};
  };
}

Case reduce(std::string name, const Primitive& p, Shape s, V axes, std::function<double(double, double)> f,
            double init, double lo = -1, double hi = 1) {
  return make(std::move(name), p, {{"axes", IntList(axes.begin(), axes.end())}}, one_input(s, lo, hi),
              ref_reduce(axes, f, init), {true});
}

Case arg(std::string name, const Primitive& p, Shape s, int64_t axis, bool is_max) {
  Case c = make(std::move(name), p, {{"axes", IntList{axis}}, {"index_dtype", DType::i32}}, one_input(s),
                [=](const Inputs& in) {
                  T x(in[0]);
                  Shape os = x.s;
                  os.erase(os.begin() + axis);
                  T o(os, 0), best(os, is_max ? -INFINITY : INFINITY);
                  for_each_index(x.s, [&](const std::vector<int64_t>& idx) {
                    std::vector<int64_t> oi = idx;
                    oi.erase(oi.begin() + axis);
                    double v = x.at(idx);
                    if (is_max ? v > best.at(oi) : v < best.at(oi)) {
                      best.at(oi) = v;
                      o.at(oi) = static_cast<double>(idx[static_cast<size_t>(axis)]);
                    }
                  });
                  return Inputs{o.array(DType::i32)};
                },
                {false});
  c.smooth = false;
  return c;
}

// ---- dot_general ----------------------------------------------------------------------------------------
Case dot(std::string name, Shape ls, Shape rs, V lc, V rc, V lb, V rb) {
  auto dims = Ref<const ParamObject>(new lax::DotDims(IntList(lc.begin(), lc.end()), IntList(rc.begin(), rc.end()),
                                                      IntList(lb.begin(), lb.end()), IntList(rb.begin(), rb.end())));
  return make(
      std::move(name), dot_general_p,
      {{"dimension_numbers", dims}, {"precision", ParamValue()}, {"preferred_element_type", ParamValue()}},
      [=](Rng& r, DType d) { return Inputs{r.uniform(ls, d), r.uniform(rs, d)}; },
      [=](const Inputs& in) {
        T a(in[0]), b(in[1]);
        auto free = [](const Shape& s, const V& c, const V& bt) {
          V f;
          for (int64_t k = 0; k < static_cast<int64_t>(s.size()); ++k)
            if (std::find(c.begin(), c.end(), k) == c.end() && std::find(bt.begin(), bt.end(), k) == bt.end())
              f.push_back(k);
          return f;
        };
        V lf = free(a.s, lc, lb), rf = free(b.s, rc, rb);
        Shape os, cs;
        for (auto k : lb) os.push_back(a.s[k]);
        for (auto k : lf) os.push_back(a.s[k]);
        for (auto k : rf) os.push_back(b.s[k]);
        for (auto k : lc) cs.push_back(a.s[k]);
        T o(os, 0);
        for_each_index(os, [&](const std::vector<int64_t>& oi) {
          double acc = 0;
          for_each_index(cs, [&](const std::vector<int64_t>& ci) {
            std::vector<int64_t> ai(a.s.size()), bi(b.s.size());
            size_t p = 0;
            for (size_t k = 0; k < lb.size(); ++k, ++p) {
              ai[static_cast<size_t>(lb[k])] = oi[p];
              bi[static_cast<size_t>(rb[k])] = oi[p];
            }
            for (auto k : lf) ai[static_cast<size_t>(k)] = oi[p++];
            for (auto k : rf) bi[static_cast<size_t>(k)] = oi[p++];
            for (size_t k = 0; k < lc.size(); ++k) {
              ai[static_cast<size_t>(lc[k])] = ci[k];
              bi[static_cast<size_t>(rc[k])] = ci[k];
            }
            acc += a.at(ai) * b.at(bi);
          });
          o.at(oi) = acc;
        });
        return Inputs{o.array(in[0].dtype())};
      },
      {true, true});
}

// ---- convolution: a reference straight from the definition -----------------------------------------------
struct ConvCase {
  Shape lhs, rhs;
  IntList strides, lhs_dil, rhs_dil;
  std::vector<std::pair<int64_t, int64_t>> padding;
  lax::ConvDims dn = lax::ConvDims::nchw(2);
  int64_t fgc = 1, bgc = 1;
};

Case conv_case(std::string name, ConvCase cc) {
  std::vector<IntList> pad;
  for (auto& [lo, hi] : cc.padding) pad.push_back({lo, hi});
  Params p{{"batch_group_count", cc.bgc},
           {"dimension_numbers", Ref<const ParamObject>(new lax::ConvDims(cc.dn))},
           {"feature_group_count", cc.fgc},
           {"lhs_dilation", cc.lhs_dil},
           {"padding", Ref<const ParamObject>(new lax::IntTuples(pad))},
           {"precision", ParamValue()},
           {"preferred_element_type", ParamValue()},
           {"rhs_dilation", cc.rhs_dil},
           {"window_strides", cc.strides}};
  auto ref = [cc](const Inputs& in) {
    T l(in[0]), r(in[1]);
    const auto& dn = cc.dn;
    size_t nsp = cc.strides.size();
    int64_t N = l.s[dn.lhs_spec[0]], O = r.s[dn.rhs_spec[0]], I = r.s[dn.rhs_spec[1]];
    int64_t Nout = N / cc.bgc, Oper = O / (cc.fgc * cc.bgc);
    Shape os(nsp + 2);
    os[dn.out_spec[0]] = Nout;
    os[dn.out_spec[1]] = O;
    Shape ks;
    for (size_t d = 0; d < nsp; ++d) {
      int64_t S = l.s[dn.lhs_spec[2 + d]], K = r.s[dn.rhs_spec[2 + d]];
      ks.push_back(K);
      int64_t padded = (S - 1) * cc.lhs_dil[d] + 1 + cc.padding[d].first + cc.padding[d].second;
      int64_t span = (K - 1) * cc.rhs_dil[d] + 1;
      os[dn.out_spec[2 + d]] = padded < span ? 0 : (padded - span) / cc.strides[d] + 1;
    }
    T o(os);
    for_each_index(os, [&](const std::vector<int64_t>& oi) {
      int64_t n_o = oi[static_cast<size_t>(dn.out_spec[0])], oc = oi[static_cast<size_t>(dn.out_spec[1])];
      int64_t grp = oc / Oper;
      int64_t c_base = cc.fgc > 1 ? grp * I : 0, n = cc.bgc > 1 ? grp * Nout + n_o : n_o;
      double acc = 0;
      for (int64_t i = 0; i < I; ++i)
        for_each_index(ks, [&](const std::vector<int64_t>& k) {
          std::vector<int64_t> li(nsp + 2), ri(nsp + 2);
          li[static_cast<size_t>(dn.lhs_spec[0])] = n;
          li[static_cast<size_t>(dn.lhs_spec[1])] = c_base + i;
          ri[static_cast<size_t>(dn.rhs_spec[0])] = oc;
          ri[static_cast<size_t>(dn.rhs_spec[1])] = i;
          for (size_t d = 0; d < nsp; ++d) {
            int64_t s = oi[static_cast<size_t>(dn.out_spec[2 + d])];
            int64_t pos = s * cc.strides[d] + k[d] * cc.rhs_dil[d] - cc.padding[d].first;
            if (pos < 0 || pos % cc.lhs_dil[d] != 0 || pos / cc.lhs_dil[d] >= l.s[dn.lhs_spec[2 + d]]) return;
            li[static_cast<size_t>(dn.lhs_spec[2 + d])] = pos / cc.lhs_dil[d];
            ri[static_cast<size_t>(dn.rhs_spec[2 + d])] = k[d];
          }
          acc += l.at(li) * r.at(ri);
        });
      o.at(oi) = acc;
    });
    return Inputs{o.array(in[0].dtype())};
  };
  return make(std::move(name), conv_general_dilated_p, p,
              [cc](Rng& r, DType d) { return Inputs{r.uniform(cc.lhs, d), r.uniform(cc.rhs, d)}; }, ref, {true, true});
}

// ---- windowed reductions -------------------------------------------------------------------------------
struct WinCase {
  Shape in;
  IntList window, strides, base_dil, win_dil;
  std::vector<std::pair<int64_t, int64_t>> padding;
};

Case window_case(std::string name, const Primitive& prim, WinCase wc, std::function<double(double, double)> f,
                 double init) {
  std::vector<IntList> pad;
  for (auto& [lo, hi] : wc.padding) pad.push_back({lo, hi});
  Params p{{"base_dilation", wc.base_dil},
           {"padding", Ref<const ParamObject>(new lax::IntTuples(pad))},
           {"window_dilation", wc.win_dil},
           {"window_dimensions", wc.window},
           {"window_strides", wc.strides}};
  auto ref = [wc, f, init](const Inputs& in) {
    T x(in[0]);
    size_t n = wc.in.size();
    Shape os, ws(wc.window.begin(), wc.window.end());
    for (size_t d = 0; d < n; ++d) {
      int64_t padded = (wc.in[d] - 1) * wc.base_dil[d] + 1 + wc.padding[d].first + wc.padding[d].second;
      int64_t span = (wc.window[d] - 1) * wc.win_dil[d] + 1;
      os.push_back(padded < span ? 0 : (padded - span) / wc.strides[d] + 1);
    }
    T o(os, init);
    for_each_index(os, [&](const std::vector<int64_t>& oi) {
      for_each_index(ws, [&](const std::vector<int64_t>& k) {
        std::vector<int64_t> xi(n);
        for (size_t d = 0; d < n; ++d) {
          int64_t pos = oi[d] * wc.strides[d] + k[d] * wc.win_dil[d] - wc.padding[d].first;
          if (pos < 0 || pos % wc.base_dil[d] != 0 || pos / wc.base_dil[d] >= wc.in[d]) return;
          xi[d] = pos / wc.base_dil[d];
        }
        o.at(oi) = f(o.at(oi), x.at(xi));
      });
    });
    return Inputs{o.array(in[0].dtype())};
  };
  return make(std::move(name), prim, p, one_input(wc.in), ref, {true});
}

Ref<const ParamObject> pad_cfg(std::vector<IntList> cfg) { return Ref<const ParamObject>(new lax::IntTuples(cfg)); }

Case pad_case(std::string name, Shape s, std::vector<IntList> cfg) {
  return make(
      std::move(name), pad_p, {{"padding_config", pad_cfg(cfg)}},
      [s](Rng& r, DType d) { return Inputs{r.uniform(s, d), r.uniform({}, d)}; },
      [s, cfg](const Inputs& in) {
        T x(in[0]);
        double pv = values(in[1])[0];
        Shape os;
        for (size_t k = 0; k < s.size(); ++k)
          os.push_back(cfg[k][0] + cfg[k][1] + s[k] + std::max<int64_t>(0, s[k] - 1) * cfg[k][2]);
        T o(os, pv);
        for_each_index(s, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> p(idx.size());
          for (size_t k = 0; k < idx.size(); ++k) {
            p[k] = cfg[k][0] + idx[k] * (cfg[k][2] + 1);
            if (p[k] < 0 || p[k] >= os[k]) return;
          }
          o.at(p) = x.at(idx);
        });
        return Inputs{o.array(in[0].dtype())};
      },
      {true, true});
}

Case cum(std::string name, const Primitive& p, int64_t axis, bool reverse, std::function<double(double, double)> f) {
  Shape s{3, 5};
  return make(std::move(name), p, {{"axis", axis}, {"reverse", reverse}}, one_input(s),
              [=](const Inputs& in) {
                T x(in[0]);
                T o(x.s);
                int64_t n = x.s[static_cast<size_t>(axis)];
                for_each_index(x.s, [&](const std::vector<int64_t>& idx) {
                  int64_t i = idx[static_cast<size_t>(axis)];
                  if (i != (reverse ? n - 1 : 0)) return;
                  std::vector<int64_t> j = idx;
                  double acc = 0;
                  for (int64_t r = 0; r < n; ++r) {
                    j[static_cast<size_t>(axis)] = reverse ? n - 1 - r : r;
                    acc = r == 0 ? x.at(j) : f(acc, x.at(j));
                    o.at(j) = acc;
                  }
                });
                return Inputs{o.array(in[0].dtype())};
              },
              {true});
}
}  // namespace

std::vector<Case> structural_cases() {
  std::vector<Case> v;
  auto add = [](double a, double b) { return a + b; };
  auto mx = [](double a, double b) { return std::max(a, b); };
  auto mn = [](double a, double b) { return std::min(a, b); };
  auto mul = [](double a, double b) { return a * b; };
  // ---- reductions ------------------------------------------------------------------------------------
  v.push_back(reduce("reduce_sum_axis0", reduce_sum_p, {3, 4}, {0}, add, 0));
  v.push_back(reduce("reduce_sum_axis1", reduce_sum_p, {3, 4}, {1}, add, 0));
  v.push_back(reduce("reduce_sum_all", reduce_sum_p, {3, 4}, {0, 1}, add, 0));
  v.push_back(reduce("reduce_sum_noncontiguous", reduce_sum_p, {2, 3, 4}, {0, 2}, add, 0));
  v.push_back(reduce("reduce_sum_middle", reduce_sum_p, {2, 3, 4}, {1}, add, 0));
  v.push_back(reduce("reduce_max_axis1", reduce_max_p, {3, 4}, {1}, mx, -INFINITY));
  v.push_back(reduce("reduce_max_noncontiguous", reduce_max_p, {2, 3, 4}, {0, 2}, mx, -INFINITY));
  v.push_back(reduce("reduce_min_axis0", reduce_min_p, {3, 4}, {0}, mn, INFINITY));
  v.push_back(reduce("reduce_prod_axis1", reduce_prod_p, {3, 4}, {1}, mul, 1, 0.5, 1.5));
  v.push_back(reduce("reduce_prod_all", reduce_prod_p, {2, 3}, {0, 1}, mul, 1, -1.5, 1.5));
  {
    Case c = reduce("reduce_and", reduce_and_p, {3, 4}, {1}, [](double a, double b) { return double(a && b); }, 1);
    c.inputs = [](Rng& r, DType) { return Inputs{r.ints({3, 4}, DType::bool_, 0, 1).at({0}).set(true)}; };
    c.diff = {false};
    c.smooth = false;
    c.value_dtypes = {DType::bool_};
    v.push_back(c);
  }
  {
    Case c = reduce("reduce_or", reduce_or_p, {3, 4}, {0}, [](double a, double b) { return double(a || b); }, 0);
    c.inputs = [](Rng& r, DType) { return Inputs{r.ints({3, 4}, DType::bool_, 0, 1)}; };
    c.diff = {false};
    c.smooth = false;
    c.value_dtypes = {DType::bool_};
    v.push_back(c);
  }
  {
    Case c = reduce("reduce_sum_i32", reduce_sum_p, {3, 4}, {1}, add, 0);
    c.inputs = [](Rng& r, DType) { return Inputs{r.ints({3, 4}, DType::i32, -100, 100)}; };
    c.diff = {false};
    c.smooth = false;
    c.value_dtypes = {DType::i32};
    v.push_back(c);
  }
  v.push_back(arg("argmax_axis1", argmax_p, {3, 4}, 1, true));
  v.push_back(arg("argmax_axis0", argmax_p, {3, 4}, 0, true));
  v.push_back(arg("argmin_axis1", argmin_p, {3, 4}, 1, false));
  // ---- structure ----------------------------------------------------------------------------------------
  v.push_back(make(
      "broadcast_in_dim_rows", broadcast_in_dim_p, {{"shape", IntList{2, 3}}, {"broadcast_dimensions", IntList{1}}},
      one_input({3}),
      [](const Inputs& in) {
        T x(in[0]), o(Shape{2, 3});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({i[1]}); });
        return Inputs{o.array(in[0].dtype())};
      },
      {true}));
  v.push_back(make(
      "broadcast_in_dim_size1", broadcast_in_dim_p, {{"shape", IntList{3, 4}}, {"broadcast_dimensions", IntList{0, 1}}},
      one_input({3, 1}),
      [](const Inputs& in) {
        T x(in[0]), o(Shape{3, 4});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({i[0], 0}); });
        return Inputs{o.array(in[0].dtype())};
      },
      {true}));
  v.push_back(make(
      "broadcast_in_dim_scalar", broadcast_in_dim_p, {{"shape", IntList{2, 3}}, {"broadcast_dimensions", IntList{}}},
      one_input({}),
      [](const Inputs& in) { return Inputs{T(Shape{2, 3}, values(in[0])[0]).array(in[0].dtype())}; }, {true}));
  v.push_back(make("reshape", reshape_p, {{"new_sizes", IntList{2, 6}}}, one_input({3, 4}),
                   [](const Inputs& in) { return Inputs{Rng::from_doubles(values(in[0]), {2, 6}, in[0].dtype())}; },
                   {true}));
  v.push_back(make(
      "transpose_3d", transpose_p, {{"permutation", IntList{2, 0, 1}}}, one_input({2, 3, 4}),
      [](const Inputs& in) {
        T x(in[0]), o(Shape{4, 2, 3});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({i[1], i[2], i[0]}); });
        return Inputs{o.array(in[0].dtype())};
      },
      {true}));
  v.push_back(make("squeeze", squeeze_p, {{"dimensions", IntList{1}}}, one_input({3, 1, 4}),
                   [](const Inputs& in) { return Inputs{Rng::from_doubles(values(in[0]), {3, 4}, in[0].dtype())}; },
                   {true}));
  v.push_back(make(
      "rev", rev_p, {{"dimensions", IntList{0, 1}}}, one_input({3, 4}),
      [](const Inputs& in) {
        T x(in[0]), o(x.s);
        for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({2 - i[0], 3 - i[1]}); });
        return Inputs{o.array(in[0].dtype())};
      },
      {true}));
  {
    Case c = make(
        "iota", iota_p, {{"dimension", int64_t(1)}, {"dtype", DType::i32}, {"shape", IntList{2, 3}}},
        [](Rng&, DType) { return Inputs{}; },
        [](const Inputs&) {
          T o(Shape{2, 3});
          for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = double(i[1]); });
          return Inputs{o.array(DType::i32)};
        },
        {});
    c.smooth = false;
    v.push_back(c);
  }
  // ---- slicing ----------------------------------------------------------------------------------------------
  v.push_back(make(
      "slice_strided", slice_p,
      {{"start_indices", IntList{1, 0}}, {"limit_indices", IntList{5, 5}}, {"strides", IntList{2, 2}}},
      one_input({5, 6}),
      [](const Inputs& in) {
        T x(in[0]), o(Shape{2, 3});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({1 + 2 * i[0], 2 * i[1]}); });
        return Inputs{o.array(in[0].dtype())};
      },
      {true}));
  v.push_back(make(
      "slice_unit", slice_p, {{"start_indices", IntList{1, 2}}, {"limit_indices", IntList{3, 6}}, {"strides", ParamValue()}},
      one_input({5, 6}),
      [](const Inputs& in) {
        T x(in[0]), o(Shape{2, 4});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({1 + i[0], 2 + i[1]}); });
        return Inputs{o.array(in[0].dtype())};
      },
      {true}));
  v.push_back(pad_case("pad_interior", {3, 4}, {{1, 2, 0}, {0, 1, 1}}));
  v.push_back(pad_case("pad_negative", {3, 4}, {{-1, 1, 0}, {1, -2, 1}}));
  v.push_back(make(
      "concatenate", concatenate_p, {{"dimension", int64_t(1)}},
      [](Rng& r, DType d) { return Inputs{r.uniform({2, 3}, d), r.uniform({2, 1}, d), r.uniform({2, 2}, d)}; },
      [](const Inputs& in) {
        T o(Shape{2, 6});
        int64_t at = 0;
        for (auto& a : in) {
          T x(a);
          for_each_index(x.s, [&](const std::vector<int64_t>& i) { o.at({i[0], at + i[1]}) = x.at(i); });
          at += x.s[1];
        }
        return Inputs{o.array(in[0].dtype())};
      },
      {true, true, true}));
  auto dslice_ref = [](const Inputs& in) {
    T x(in[0]);
    int64_t s0 = std::clamp<int64_t>(in[1].item<int64_t>(), 0, 5 - 2), s1 = std::clamp<int64_t>(in[2].item<int64_t>(), 0, 6 - 3);
    T o(Shape{2, 3});
    for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({s0 + i[0], s1 + i[1]}); });
    return Inputs{o.array(in[0].dtype())};
  };
  v.push_back(make(
      "dynamic_slice", dynamic_slice_p, {{"slice_sizes", IntList{2, 3}}},
      [](Rng& r, DType d) { return Inputs{r.uniform({5, 6}, d), r.ints({}, DType::i32, -1, 4), r.ints({}, DType::i32, 0, 5)}; },
      dslice_ref, {true, false, false}));
  v.push_back(make(
      "dynamic_update_slice", dynamic_update_slice_p, {},
      [](Rng& r, DType d) {
        return Inputs{r.uniform({5, 6}, d), r.uniform({2, 3}, d), r.ints({}, DType::i32, -1, 4), r.ints({}, DType::i32, 0, 5)};
      },
      [](const Inputs& in) {
        T x(in[0]), u(in[1]);
        int64_t s0 = std::clamp<int64_t>(in[2].item<int64_t>(), 0, 3), s1 = std::clamp<int64_t>(in[3].item<int64_t>(), 0, 3);
        for_each_index(u.s, [&](const std::vector<int64_t>& i) { x.at({s0 + i[0], s1 + i[1]}) = u.at(i); });
        return Inputs{x.array(in[0].dtype())};
      },
      {true, true, false, false}));
  // ---- gather / scatter ---------------------------------------------------------------------------------------
  auto gd_rows = Ref<const ParamObject>(new lax::GatherDims({1}, {0}, {0}));
  v.push_back(make(
      "gather_rows", gather_p,
      {{"dimension_numbers", gd_rows}, {"slice_sizes", IntList{1, 4}}, {"mode", std::string("GatherScatterMode.CLIP")},
       {"fill_value", ParamValue()}},
      [](Rng& r, DType d) { return Inputs{r.uniform({5, 4}, d), r.ints({3, 1}, DType::i32, 0, 4)}; },
      [](const Inputs& in) {
        T x(in[0]);
        auto idx = in[1].to_vector<int64_t>();
        T o(Shape{3, 4});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({idx[static_cast<size_t>(i[0])], i[1]}); });
        return Inputs{o.array(in[0].dtype())};
      },
      {true, false}));
  v.push_back(make(
      "gather_clip_out_of_range", gather_p,
      {{"dimension_numbers", gd_rows}, {"slice_sizes", IntList{1, 4}}, {"mode", std::string("GatherScatterMode.CLIP")},
       {"fill_value", ParamValue()}},
      [](Rng& r, DType d) { return Inputs{r.uniform({5, 4}, d), r.ints({3, 1}, DType::i32, -3, 8)}; },
      [](const Inputs& in) {
        T x(in[0]);
        auto idx = in[1].to_vector<int64_t>();
        T o(Shape{3, 4});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) {
          o.at(i) = x.at({std::clamp<int64_t>(idx[static_cast<size_t>(i[0])], 0, 4), i[1]});
        });
        return Inputs{o.array(in[0].dtype())};
      },
      {true, false}));
  v.push_back(make(
      "gather_fill", gather_p,
      {{"dimension_numbers", gd_rows}, {"slice_sizes", IntList{1, 4}},
       {"mode", std::string("GatherScatterMode.FILL_OR_DROP")}, {"fill_value", -7.0}},
      [](Rng& r, DType d) { return Inputs{r.uniform({5, 4}, d), r.ints({3, 1}, DType::i32, -2, 6)}; },
      [](const Inputs& in) {
        T x(in[0]);
        auto idx = in[1].to_vector<int64_t>();
        T o(Shape{3, 4});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) {
          int64_t k = idx[static_cast<size_t>(i[0])];
          o.at(i) = (k < 0 || k > 4) ? -7.0 : x.at({k, i[1]});
        });
        return Inputs{o.array(in[0].dtype())};
      },
      {true, false}));
  // x[i, j] pairs: a point gather with two collapsed dims
  v.push_back(make(
      "gather_points", gather_p,
      {{"dimension_numbers", Ref<const ParamObject>(new lax::GatherDims({}, {0, 1}, {0, 1}))},
       {"slice_sizes", IntList{1, 1}}, {"mode", std::string("GatherScatterMode.CLIP")}, {"fill_value", ParamValue()}},
      [](Rng& r, DType d) {
        Array ij = concatenate({r.ints({4, 1}, DType::i32, 0, 4), r.ints({4, 1}, DType::i32, 0, 5)}, 1);
        return Inputs{r.uniform({5, 6}, d), ij};
      },
      [](const Inputs& in) {
        T x(in[0]);
        auto idx = in[1].to_vector<int64_t>();
        T o(Shape{4});
        for (int64_t k = 0; k < 4; ++k) o.v[static_cast<size_t>(k)] = x.at({idx[2 * k], idx[2 * k + 1]});
        return Inputs{o.array(in[0].dtype())};
      },
      {true, false}));
  // per-row index with a batching dim: out[b, k] = x[b, idx[b, k]]
  v.push_back(make(
      "gather_batching_dims", gather_p,
      {{"dimension_numbers", Ref<const ParamObject>(new lax::GatherDims({}, {1}, {1}, {0}, {0}))},
       {"slice_sizes", IntList{1, 1}}, {"mode", std::string("GatherScatterMode.CLIP")}, {"fill_value", ParamValue()}},
      [](Rng& r, DType d) { return Inputs{r.uniform({3, 5}, d), r.ints({3, 2, 1}, DType::i32, 0, 4)}; },
      [](const Inputs& in) {
        T x(in[0]);
        auto idx = in[1].to_vector<int64_t>();
        T o(Shape{3, 2});
        for_each_index(o.s, [&](const std::vector<int64_t>& i) { o.at(i) = x.at({i[0], idx[static_cast<size_t>(i[0] * 2 + i[1])]}); });
        return Inputs{o.array(in[0].dtype())};
      },
      {true, false}));
  auto sd_rows = Ref<const ParamObject>(new lax::ScatterDims({1}, {0}, {0}));
  // combine(old, update); duplicates combine in order
  auto scatter_ref = [](std::function<double(double, double)> combine) {
    return [combine](const Inputs& in) {
      T x(in[0]), u(in[2]);
      auto idx = in[1].to_vector<int64_t>();
      for_each_index(u.s, [&](const std::vector<int64_t>& i) {
        int64_t row = idx[static_cast<size_t>(i[0])];
        if (row < 0 || row > 4) return;  // dropped
        double& t = x.at({row, i[1]});
        t = combine(t, u.at(i));
      });
      return Inputs{x.array(in[0].dtype())};
    };
  };
  v.push_back(make(
      "scatter_add_rows", scatter_add_p,
      {{"dimension_numbers", sd_rows}, {"mode", std::string("GatherScatterMode.FILL_OR_DROP")}},
      [](Rng& r, DType d) {
        return Inputs{r.uniform({5, 4}, d), r.ints({3, 1}, DType::i32, -1, 5), r.uniform({3, 4}, d)};
      },
      scatter_ref(add), {true, false, true}));
  // the combining scatters, with duplicate rows
  auto dup_rows = [](Rng& r, DType d) {
    std::vector<int32_t> rows{int32_t(r.integer(0, 4)), 0, 0};
    return Inputs{r.uniform({5, 4}, d, 0.5, 1.5), array(rows, {3, 1}), r.uniform({3, 4}, d, 0.5, 1.5)};
  };
  v.push_back(make("scatter_add_duplicates", scatter_add_p,
                   {{"dimension_numbers", sd_rows}, {"mode", std::string("GatherScatterMode.FILL_OR_DROP")}}, dup_rows,
                   scatter_ref(add), {true, false, true}));
  v.push_back(make("scatter_mul_duplicates", scatter_mul_p,
                   {{"dimension_numbers", sd_rows}, {"mode", std::string("GatherScatterMode.FILL_OR_DROP")}}, dup_rows,
                   scatter_ref(mul), {true, false, true}));
  v.push_back(make("scatter_min_duplicates", scatter_min_p,
                   {{"dimension_numbers", sd_rows}, {"mode", std::string("GatherScatterMode.FILL_OR_DROP")}}, dup_rows,
                   scatter_ref(mn), {true, false, true}));
  v.push_back(make("scatter_max_duplicates", scatter_max_p,
                   {{"dimension_numbers", sd_rows}, {"mode", std::string("GatherScatterMode.FILL_OR_DROP")}}, dup_rows,
                   scatter_ref(mx), {true, false, true}));
  {
    // overwrite with distinct rows (the derivative of duplicate writes is not unique)
    Case c = make(
        "scatter_rows", scatter_p,
        {{"dimension_numbers", sd_rows}, {"mode", std::string("GatherScatterMode.FILL_OR_DROP")}},
        [](Rng& r, DType d) {
          int64_t a = r.integer(0, 4), b = (a + r.integer(1, 4)) % 5;
          std::vector<int32_t> rows{int32_t(a), int32_t(b)};
          return Inputs{r.uniform({5, 4}, d), array(rows, {2, 1}), r.uniform({2, 4}, d)};
        },
        scatter_ref([](double, double u) { return u; }), {true, false, true});
    v.push_back(c);
  }
  // ---- dot_general -------------------------------------------------------------------------------------------
  v.push_back(dot("dot_general_matmul", {3, 4}, {4, 5}, {1}, {0}, {}, {}));
  v.push_back(dot("dot_general_batched", {2, 3, 4}, {2, 4, 5}, {2}, {1}, {0}, {0}));
  v.push_back(dot("dot_general_lhs_transposed", {4, 3}, {4, 5}, {0}, {0}, {}, {}));
  v.push_back(dot("dot_general_rhs_transposed", {3, 4}, {5, 4}, {1}, {1}, {}, {}));
  v.push_back(dot("dot_general_two_contractions", {2, 3, 4}, {4, 2, 5}, {0, 2}, {1, 0}, {}, {}));
  v.push_back(dot("dot_general_vector", {4}, {4, 3}, {0}, {0}, {}, {}));
  v.push_back(dot("dot_general_batch_not_leading", {3, 2, 4}, {4, 2}, {2}, {0}, {1}, {1}));
  // ---- scans ------------------------------------------------------------------------------------------------
  v.push_back(cum("cumsum_axis1", cumsum_p, 1, false, add));
  v.push_back(cum("cumsum_axis0_reverse", cumsum_p, 0, true, add));
  v.push_back(cum("cummax_axis1", cummax_p, 1, false, mx));
  v.push_back(cum("cummin_axis1_reverse", cummin_p, 1, true, mn));
  // ---- sort ---------------------------------------------------------------------------------------------------
  v.push_back(make(
      "sort_one", sort_p, {{"dimension", int64_t(1)}, {"is_stable", true}, {"num_keys", int64_t(1)}}, one_input({3, 5}),
      [](const Inputs& in) {
        T x(in[0]);
        for (int64_t r = 0; r < 3; ++r) std::sort(x.v.begin() + r * 5, x.v.begin() + r * 5 + 5);
        return Inputs{x.array(in[0].dtype())};
      },
      {true}));
  v.push_back(make(
      "sort_key_value", sort_p, {{"dimension", int64_t(0)}, {"is_stable", true}, {"num_keys", int64_t(1)}},
      [](Rng& r, DType d) { return Inputs{r.uniform({6}, d), r.uniform({6}, d)}; },
      [](const Inputs& in) {
        auto k = values(in[0]), w = values(in[1]);
        std::vector<size_t> p(k.size());
        std::iota(p.begin(), p.end(), 0);
        std::stable_sort(p.begin(), p.end(), [&](size_t a, size_t b) { return k[a] < k[b]; });
        std::vector<double> ks, ws;
        for (auto i : p) {
          ks.push_back(k[i]);
          ws.push_back(w[i]);
        }
        return Inputs{Rng::from_doubles(ks, {6}, in[0].dtype()), Rng::from_doubles(ws, {6}, in[1].dtype())};
      },
      {true, true}));
  // ---- convolution --------------------------------------------------------------------------------------
  v.push_back(conv_case("conv_basic", {{2, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}}));
  v.push_back(conv_case("conv_strided_padded", {{2, 3, 6, 5}, {4, 3, 3, 2}, {2, 1}, {1, 1}, {1, 1}, {{1, 1}, {2, 0}}}));
  v.push_back(conv_case("conv_dilated", {{1, 2, 5, 6}, {3, 2, 2, 2}, {1, 1}, {2, 1}, {1, 2}, {{0, 1}, {1, 0}}}));
  v.push_back(conv_case("conv_nhwc_hwio",
                        {{2, 5, 4, 3}, {3, 2, 3, 4}, {1, 1}, {1, 1}, {1, 1}, {{1, 1}, {0, 0}}, lax::ConvDims::nhwc(2)}));
  v.push_back(conv_case("conv_feature_groups",
                        {{2, 4, 5, 5}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}}, lax::ConvDims::nchw(2), 2}));
  v.push_back(conv_case("conv_batch_groups", {{4, 3, 5, 5}, {6, 3, 2, 2}, {1, 1}, {1, 1}, {1, 1}, {{0, 0}, {0, 0}},
                                              lax::ConvDims::nchw(2), 1, 2}));
  v.push_back(conv_case("conv_1d", {{2, 3, 7}, {4, 3, 3}, {2}, {1}, {1}, {{1, 1}}, lax::ConvDims::nchw(1)}));
  // ---- windows ------------------------------------------------------------------------------------------
  v.push_back(window_case("reduce_window_sum_pool", reduce_window_sum_p, {{2, 6, 6}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1},
                                                                         {1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}}},
                          add, 0));
  v.push_back(window_case("reduce_window_sum_dilated_padded", reduce_window_sum_p,
                          {{2, 5, 6}, {1, 3, 2}, {1, 1, 2}, {1, 2, 1}, {1, 1, 2}, {{0, 0}, {1, 1}, {0, 1}}}, add, 0));
  v.push_back(window_case("reduce_window_max_pool", reduce_window_max_p,
                          {{2, 6, 6}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}}}, mx,
                          -INFINITY));
  v.push_back(window_case("reduce_window_max_overlapping", reduce_window_max_p,
                          {{5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}}, mx, -INFINITY));
  v.push_back(window_case("reduce_window_min_strided", reduce_window_min_p,
                          {{6, 5}, {2, 3}, {2, 1}, {1, 1}, {1, 1}, {{0, 0}, {1, 0}}}, mn, INFINITY));
  // pooling over the last two dims without padding (the kernels' fast path), sizes that do not divide
  v.push_back(window_case("reduce_window_max_planes_floor", reduce_window_max_p,
                          {{2, 3, 7, 5}, {1, 1, 3, 2}, {1, 1, 2, 2}, {1, 1, 1, 1}, {1, 1, 1, 1},
                           {{0, 0}, {0, 0}, {0, 0}, {0, 0}}},
                          mx, -INFINITY));
  v.push_back(window_case("reduce_window_sum_planes_overlapping", reduce_window_sum_p,
                          {{3, 6, 5}, {1, 3, 3}, {1, 1, 2}, {1, 1, 1}, {1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}}}, add, 0));
  // select_and_gather_add / select_and_scatter_add: max-pool windows with padding and overlap, and
  // without padding (the fast path)
  for (auto [suffix, wc, out_shape] :
       {std::tuple{"", WinCase{{2, 5, 6}, {1, 3, 2}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {{0, 0}, {1, 1}, {0, 0}}},
                   Shape{2, 3, 3}},
        std::tuple{"_planes", WinCase{{2, 7, 6}, {1, 3, 2}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}}},
                   Shape{2, 3, 3}},
        // disjoint windows (the scatter writes bands of rows), with rows and columns left over
        std::tuple{"_disjoint", WinCase{{2, 7, 5}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}}},
                   Shape{2, 3, 2}},
        std::tuple{"_gaps", WinCase{{2, 8, 7}, {1, 2, 2}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {{0, 0}, {0, 0}, {0, 0}}},
                   Shape{2, 3, 2}}}) {
    std::vector<IntList> pad;
    for (auto& [lo, hi] : wc.padding) pad.push_back({lo, hi});
    Params p{{"base_dilation", wc.base_dil},   {"padding", Ref<const ParamObject>(new lax::IntTuples(pad))},
             {"select_prim", std::string("max")}, {"window_dilation", wc.win_dil},
             {"window_dimensions", wc.window}, {"window_strides", wc.strides}};
    // per window: the flat input offset of its first maximum (-1: all padding)
    auto selected = [wc](const T& x, Shape& os) {
      size_t n = wc.in.size();
      Shape ws(wc.window.begin(), wc.window.end());
      os.clear();
      for (size_t d = 0; d < n; ++d)
        os.push_back((wc.in[d] + wc.padding[d].first + wc.padding[d].second - wc.window[d]) / wc.strides[d] + 1);
      std::vector<int64_t> sel;
      for_each_index(os, [&](const std::vector<int64_t>& oi) {
        int64_t best = -1;
        double bv = 0;
        for_each_index(ws, [&](const std::vector<int64_t>& k) {
          std::vector<int64_t> xi(n);
          for (size_t d = 0; d < n; ++d) {
            xi[d] = oi[d] * wc.strides[d] + k[d] - wc.padding[d].first;
            if (xi[d] < 0 || xi[d] >= wc.in[d]) return;
          }
          double v = x.at(xi);
          if (best < 0 || v > bv) {
            best = x.off(xi);
            bv = v;
          }
        });
        sel.push_back(best);
      });
      return sel;
    };
    v.push_back(make(
        std::string("select_and_gather_add") + suffix, select_and_gather_add_p, p,
        [wc](Rng& r, DType d) { return Inputs{r.uniform(wc.in, d), r.uniform(wc.in, d)}; },
        [selected](const Inputs& in) {
          T t(in[0]), x(in[1]);
          Shape os;
          auto sel = selected(x, os);
          T o(os);
          for (size_t i = 0; i < sel.size(); ++i) o.v[i] = sel[i] < 0 ? 0 : t.v[static_cast<size_t>(sel[i])];
          return Inputs{o.array(in[0].dtype())};
        },
        {true, false}));
    v.push_back(make(
        std::string("select_and_scatter_add") + suffix, select_and_scatter_add_p, p,
        [wc, out_shape](Rng& r, DType d) { return Inputs{r.uniform(out_shape, d), r.uniform(wc.in, d)}; },
        [selected](const Inputs& in) {
          T s(in[0]), x(in[1]);
          Shape os;
          auto sel = selected(x, os);
          T o(x.s);
          for (size_t i = 0; i < sel.size(); ++i)
            if (sel[i] >= 0) o.v[static_cast<size_t>(sel[i])] += s.v[i];
          return Inputs{o.array(in[0].dtype())};
        },
        {true, false}));
  }
  // ---- random bits ------------------------------------------------------------------------------------
  {
    Case c = make(
        "threefry2x32", threefry2x32_p, {},
        [](Rng& r, DType) {
          return Inputs{r.ints({}, DType::u32, 0, 4000000000), r.ints({}, DType::u32, 0, 4000000000),
                        r.ints({6}, DType::u32, 0, 4000000000), r.ints({6}, DType::u32, 0, 4000000000)};
        },
        [](const Inputs& in) {
          // an independent scalar implementation of Threefry-2x32 (20 rounds)
          auto rotl = [](uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
          uint32_t k0 = in[0].item<uint32_t>(), k1 = in[1].item<uint32_t>();
          auto c0 = in[2].to_vector<uint32_t>(), c1 = in[3].to_vector<uint32_t>();
          std::vector<uint32_t> y0, y1;
          const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
          uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
          for (size_t i = 0; i < c0.size(); ++i) {
            uint32_t x0 = c0[i] + ks[0], x1 = c1[i] + ks[1];
            for (uint32_t s = 0; s < 5; ++s) {
              for (int j = 0; j < 4; ++j) {
                x0 += x1;
                x1 = rotl(x1, rot[s % 2][j]) ^ x0;
              }
              x0 += ks[(s + 1) % 3];
              x1 += ks[(s + 2) % 3] + s + 1;
            }
            y0.push_back(x0);
            y1.push_back(x1);
          }
          return Inputs{array(y0), array(y1)};
        },
        {false, false, false, false});
    c.smooth = false;
    c.value_dtypes = {DType::u32};
    v.push_back(c);
  }
  for (Case& c : linalg_cases()) v.push_back(std::move(c));
  return v;
}

}  // namespace graft::testing
