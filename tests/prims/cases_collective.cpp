// Conformance rows: collectives over named axes. Each row runs once per member of its named axes
// (Case::named_axes: nested vmap(axis_name), the reference of shard_map and pmap); its inputs and
// outputs hold the members along their leading dimensions, and the references below combine them with
// plain loops.
#include <algorithm>
#include <cmath>

#include "graft/core/axis_names.h"
#include "prims/conformance.h"

namespace graft::testing {

namespace {
using namespace graft::prims;
using V = std::vector<int64_t>;
using Idx = std::vector<int64_t>;

constexpr int64_t N = 3;  // members of axis "i"

Ref<const ParamObject> names(std::vector<std::string> n) { return Ref<const ParamObject>(new AxisNames(std::move(n))); }

Case row(std::string name, const Primitive& p, Params params, Shape in_shape,
         std::function<Inputs(const Inputs&)> ref, std::vector<std::pair<std::string, int64_t>> axes = {{"i", N}}) {
  Case c;
  c.name = std::move(name);
  c.prim = &p;
  c.params = std::move(params);
  // integers in a range where sums are exact; bf16 values rounded from f32 draws
  c.inputs = [in_shape](Rng& r, DType d) {
    return Inputs{is_floating(d) ? r.uniform(in_shape, d, -1, 1) : r.ints(in_shape, d, -1000, 1000)};
  };
  c.value_dtypes = {DType::f32, DType::f64, DType::i32, DType::bf16};
  c.reference = std::move(ref);
  c.diff = {true};
  c.named_axes = std::move(axes);
  return c;
}

Idx cat(const Idx& a, const Idx& b) {
  Idx r = a;
  r.insert(r.end(), b.begin(), b.end());
  return r;
}
// [N, s...]: the shape of a value stacked over the members
Shape members_of(const Shape& s) {
  Shape r{N};
  for (auto e : s) r.push_back(e);
  return r;
}

// psum / pmax / pmin over the member dimensions `over`: every member gets the fold (from `init`) of the
// values at the indices that differ from its own only in those dimensions.
std::function<Inputs(const Inputs&)> ref_allreduce(std::vector<size_t> over, std::function<double(double, double)> f,
                                                   double init) {
  return [=](const Inputs& in) {
    T x(in[0]);
    T o(x.s, init);
    for_each_index(x.s, [&](const Idx& k) {
      for_each_index(x.s, [&](const Idx& idx) {
        for (size_t d = 0; d < k.size(); ++d)
          if (std::find(over.begin(), over.end(), d) == over.end() && k[d] != idx[d]) return;
        o.at(idx) = f(o.at(idx), x.at(k));
      });
    });
    return Inputs{o.array(in[0].dtype())};
  };
}

Case allreduce(std::string name, const Primitive& p, std::vector<std::string> axes_named, std::vector<size_t> over,
               std::function<double(double, double)> f, double init, std::vector<std::pair<std::string, int64_t>> axes = {{"i", N}},
               Shape s = {N, 2, 4}) {
  return row(std::move(name), p, {{"axes", names(std::move(axes_named))}, {"axis_index_groups", std::monostate{}}},
             std::move(s), ref_allreduce(std::move(over), std::move(f), init), std::move(axes));
}

// The member's slice x[m] (dimension 0 is the member).
Shape member_shape(const T& x) { return Shape(x.s.begin() + 1, x.s.end()); }

Params gather_params(int64_t dim, bool tiled) {
  return {{"all_gather_dimension", dim},
          {"axis_index_groups", std::monostate{}},
          {"axis_name", names({"i"})},
          {"axis_size", N},
          {"tiled", tiled}};
}

Case all_gather_row(std::string name, int64_t dim, bool tiled, const Primitive& p = all_gather_p) {
  Shape s{N, 2, 5};
  return row(std::move(name), p, gather_params(dim, tiled), s, [=](const Inputs& in) {
    T x(in[0]);
    Shape ms = member_shape(x), os = ms;
    if (tiled) {
      os[static_cast<size_t>(dim)] *= N;
    } else {
      os.insert(os.begin() + dim, N);
    }
    T o(members_of(os));
    for_each_index(o.s, [&](const Idx& idx) {
      Idx e(idx.begin() + 1, idx.end());  // index into the gathered value
      int64_t m;
      if (tiled) {
        int64_t b = ms[static_cast<size_t>(dim)];
        m = e[static_cast<size_t>(dim)] / b;
        e[static_cast<size_t>(dim)] %= b;
      } else {
        m = e[static_cast<size_t>(dim)];
        e.erase(e.begin() + dim);
      }
      o.at(idx) = x.at(cat({m}, e));
    });
    return Inputs{o.array(in[0].dtype())};
  });
}

Case reduce_scatter_row(std::string name, Shape s, int64_t dim, bool tiled) {
  return row(std::move(name), reduce_scatter_p,
             {{"axis_index_groups", std::monostate{}},
              {"axis_name", names({"i"})},
              {"axis_size", N},
              {"scatter_dimension", dim},
              {"tiled", tiled}},
             s, [=](const Inputs& in) {
               T x(in[0]);
               Shape ms = member_shape(x), os = ms;
               int64_t b = tiled ? ms[static_cast<size_t>(dim)] / N : 1;
               if (tiled) {
                 os[static_cast<size_t>(dim)] = b;
               } else {
                 os.erase(os.begin() + dim);
               }
               T o(members_of(os));
               for_each_index(o.s, [&](const Idx& idx) {
                 int64_t k = idx[0];
                 Idx e(idx.begin() + 1, idx.end());
                 if (tiled) {
                   e[static_cast<size_t>(dim)] += k * b;
                 } else {
                   e.insert(e.begin() + dim, k);
                 }
                 double sum = 0;
                 for (int64_t m = 0; m < N; ++m) sum += x.at(cat({m}, e));
                 o.at(idx) = sum;
               });
               return Inputs{o.array(in[0].dtype())};
             });
}

Case ppermute_row(std::string name, std::vector<std::pair<int64_t, int64_t>> perm) {
  std::vector<IntList> pairs;
  for (auto [s, d] : perm) pairs.push_back({s, d});
  return row(std::move(name), ppermute_p,
             {{"axis_name", names({"i"})}, {"perm", Ref<const ParamObject>(new lax::IntTuples(pairs))}}, {N, 2, 5},
             [=](const Inputs& in) {
               T x(in[0]);
               T o(x.s, 0.0);
               for (auto [src, dst] : perm)
                 for_each_index(member_shape(x), [&](const Idx& e) { o.at(cat({dst}, e)) = x.at(cat({src}, e)); });
               return Inputs{o.array(in[0].dtype())};
             });
}

Case all_to_all_row(std::string name, Shape s, int64_t split, int64_t concat, bool tiled) {
  return row(std::move(name), all_to_all_p,
             {{"axis_index_groups", std::monostate{}},
              {"axis_name", names({"i"})},
              {"axis_size", N},
              {"concat_axis", concat},
              {"split_axis", split},
              {"tiled", tiled}},
             s, [=](const Inputs& in) {
               T x(in[0]);
               Shape ms = member_shape(x), os = ms;
               int64_t b = tiled ? ms[static_cast<size_t>(split)] / N : 1;
               Shape block = ms;
               if (tiled) {
                 block[static_cast<size_t>(split)] = b;
                 os = block;
                 os[static_cast<size_t>(concat)] *= N;
               } else {
                 block.erase(block.begin() + split);
                 os = block;
                 os.insert(os.begin() + concat, N);
               }
               T o(members_of(os));
               // member k receives block k of every member s's value, placed in s's slot of the concat axis
               for_each_index(o.s, [&](const Idx& idx) {
                 int64_t k = idx[0];
                 Idx e(idx.begin() + 1, idx.end());
                 int64_t src;
                 if (tiled) {
                   int64_t c = block[static_cast<size_t>(concat)];
                   src = e[static_cast<size_t>(concat)] / c;
                   e[static_cast<size_t>(concat)] %= c;
                   e[static_cast<size_t>(split)] += k * b;
                 } else {
                   src = e[static_cast<size_t>(concat)];
                   e.erase(e.begin() + concat);
                   e.insert(e.begin() + split, k);
                 }
                 o.at(idx) = x.at(cat({src}, e));
               });
               return Inputs{o.array(in[0].dtype())};
             });
}

double add(double a, double b) { return a + b; }
double mx(double a, double b) { return std::max(a, b); }
double mn(double a, double b) { return std::min(a, b); }

Case psum_row(std::string name, std::vector<std::string> axes_named, std::vector<size_t> over,
              std::vector<std::pair<std::string, int64_t>> axes = {{"i", N}}, Shape s = {N, 2, 4}) {
  return allreduce(std::move(name), psum_p, std::move(axes_named), std::move(over), add, 0.0, std::move(axes),
                   std::move(s));
}

}  // namespace

std::vector<Case> collective_cases() {
  std::vector<Case> c;
  const std::vector<std::pair<std::string, int64_t>> ij = {{"i", N}, {"j", 2}};
  c.push_back(psum_row("psum", {"i"}, {0}));
  c.push_back(psum_row("psum_ij", {"i", "j"}, {0, 1}, ij, {N, 2, 4}));
  c.push_back(psum_row("psum_inner_of_ij", {"j"}, {1}, ij, {N, 2, 4}));
  c.push_back(psum_row("psum_outer_of_ij", {"i"}, {0}, ij, {N, 2, 4}));
  c.push_back(allreduce("pmax", pmax_p, {"i"}, {0}, mx, -INFINITY));
  c.push_back(allreduce("pmin", pmin_p, {"i"}, {0}, mn, INFINITY));
  c.push_back(allreduce("pmax_ij", pmax_p, {"j", "i"}, {0, 1}, mx, -INFINITY, ij, {N, 2, 4}));
  c.push_back(row("pvary", pvary_p, {{"axes", names({"i"})}}, {N, 2, 3}, [](const Inputs& in) { return in; }));
  c.push_back(all_gather_row("all_gather", 0, false));
  c.push_back(all_gather_row("all_gather_dim2", 2, false));
  c.push_back(all_gather_row("all_gather_tiled", 1, true));
  c.push_back(all_gather_row("all_gather_invariant", 0, false, all_gather_invariant_p));
  c.push_back(all_gather_row("all_gather_invariant_tiled", 1, true, all_gather_invariant_p));
  c.push_back(reduce_scatter_row("reduce_scatter", {N, 2, N}, 1, false));
  c.push_back(reduce_scatter_row("reduce_scatter_tiled", {N, 2 * N, 2}, 0, true));
  c.push_back(ppermute_row("ppermute_cycle", {{0, 1}, {1, 2}, {2, 0}}));
  c.push_back(ppermute_row("ppermute_partial", {{0, 2}, {2, 1}}));
  c.push_back(all_to_all_row("all_to_all", {N, N, 2}, 0, 1, false));
  c.push_back(all_to_all_row("all_to_all_tiled", {N, 2, 2 * N}, 1, 0, true));
  c.push_back(all_to_all_row("all_to_all_tiled_same", {N, 2 * N, 2}, 0, 0, true));
  {
    Case a;
    a.name = "axis_index";
    a.prim = &axis_index_p;
    a.params = {{"axis_name", names({"i"})}};
    a.inputs = [](Rng&, DType) { return Inputs{}; };
    a.reference = [](const Inputs&) { return Inputs{Rng::from_doubles({0, 1, 2}, {N}, DType::i32)}; };
    a.diff = {};
    a.smooth = false;
    a.named_axes = {{"i", N}};
    c.push_back(a);
  }
  return c;
}

}  // namespace graft::testing
