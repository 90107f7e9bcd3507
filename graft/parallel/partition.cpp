#include "graft/parallel/partition.h"

#include <algorithm>
#include <mutex>
#include <sstream>

#include "graft/compiler/passes/passes.h"
#include "graft/core/error.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"
#include "graft/transforms/control.h"

namespace graft {

using VS = ValueSharding;

// ---- ValueSharding --------------------------------------------------------------------------------------
namespace {
// A split of several axes: kMulti, and each axis + 1 in four bits, the major one lowest.
constexpr int kMulti = 1 << 24;
constexpr int kMaxMulti = 5;
}  // namespace

int ValueSharding::split_of(const std::vector<int>& axes) {
  if (axes.empty()) return -1;
  if (axes.size() == 1) return axes[0];
  if (axes.size() > static_cast<size_t>(kMaxMulti))
    fail<NotImplementedError>("sharded jit: a dimension split over ", axes.size(), " mesh axes (at most ", kMaxMulti, ")");
  int code = kMulti;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= 15)
      fail<NotImplementedError>("sharded jit: a dimension split over several axes of a mesh of more than 15 axes");
    code |= (axes[i] + 1) << (4 * i);
  }
  return code;
}

std::vector<int> ValueSharding::axes_of(int split) {
  if (split < 0) return {};
  if (split < kMulti) return {split};
  std::vector<int> r;
  for (int c = split & (kMulti - 1); c; c >>= 4) r.push_back((c & 15) - 1);
  return r;
}

uint32_t ValueSharding::bits_of(int split) {
  uint32_t b = 0;
  for (int k : axes_of(split)) b |= 1u << k;
  return b;
}

int64_t ValueSharding::devices_of(const Mesh& mesh, int split) {
  int64_t n = 1;
  for (int k : axes_of(split)) n *= mesh.shape()[static_cast<size_t>(k)];
  return n;
}

VS ValueSharding::from_spec(const PartitionSpec& spec, const Mesh& mesh, const Aval& a, const std::string& what) {
  if (static_cast<int64_t>(spec.dims.size()) > a.ndim())
    fail<ValueError>(what, " (", a.str(), ") has the spec ", spec.str(), ", which names ", spec.dims.size(),
                     " dimensions");
  VS s = replicated(a.ndim());
  uint32_t seen = 0;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    std::vector<int> axes;
    for (auto& name : spec.dims[d].axes) {
      int k = mesh.axis_index(name);
      if (k < 0) fail<ValueError>(what, " has the spec ", spec.str(), ", but ", mesh.str(), " has no axis '", name, "'");
      if (seen & (1u << k)) fail<ValueError>(what, " has the spec ", spec.str(), ", which splits over axis '", name, "' twice");
      seen |= 1u << k;
      axes.push_back(k);
    }
    if (axes.empty()) continue;
    int split = split_of(axes);
    int64_t n = devices_of(mesh, split);
    if (a.shape[d] % n != 0)
      fail<ValueError>(what, " (", a.str(), "): dimension ", d, " has ", a.shape[d], " entries, which do not divide over the ",
                       n, " devices of ", spec.dims[d].str(), " of ", mesh.str(), " (spec ", spec.str(), ")");
    s.dims[d] = split;
  }
  return s;
}

PartitionSpec ValueSharding::spec(const Mesh& mesh) const {
  PartitionSpec p;
  size_t last = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] >= 0) last = d + 1;
  for (size_t d = 0; d < last; ++d) {
    SpecDim sd;
    for (int k : axes_of(dims[d])) sd.axes.push_back(mesh.axis_names()[static_cast<size_t>(k)]);
    p.dims.push_back(std::move(sd));
  }
  return p;
}

uint32_t ValueSharding::used() const {
  uint32_t u = partial;
  for (int k : dims) u |= bits_of(k);
  return u;
}

namespace {

std::vector<std::string> names_of(uint32_t axes, const Mesh& mesh) {
  std::vector<std::string> r;
  for (size_t k = 0; k < mesh.axis_names().size(); ++k)
    if (axes & (1u << k)) r.push_back(mesh.axis_names()[k]);
  return r;
}

}  // namespace

std::string ValueSharding::str(const Mesh& mesh) const {
  std::string s = spec(mesh).str();
  if (partial) {
    s += "+partial(";
    auto n = names_of(partial, mesh);
    for (size_t i = 0; i < n.size(); ++i) s += (i ? ", '" : "'") + n[i] + "'";
    s += ")";
  }
  return s;
}

// ---- with_sharding_constraint ---------------------------------------------------------------------------
namespace {

struct ShardingParam final : ParamObject {
  NamedSharding s;
  explicit ShardingParam(NamedSharding x) : s(std::move(x)) {}
  void print(std::ostream& os) const override { os << "NamedSharding(" << s.mesh.str() << ", " << s.spec.str() << ")"; }
  size_t hash() const override { return std::hash<std::string>{}((std::ostringstream() << s.mesh.str() << s.spec.str()).str()); }
  bool equals(const ParamObject& o) const override {
    auto* p = dynamic_cast<const ShardingParam*>(&o);
    return p && p->s.spec == s.spec && p->s.mesh.str() == s.mesh.str() && p->s.mesh.devices().size() == s.mesh.devices().size();
  }
};
const NamedSharding& sharding_of(const Params& p) { return p.get_object<ShardingParam>("sharding").s; }
Params sharding_params(NamedSharding s) { return Params{{"sharding", Ref<const ParamObject>(new ShardingParam(std::move(s)))}}; }

Avals constraint_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  prims::check_arity(p, in, 1);
  const NamedSharding& s = sharding_of(params);
  if (static_cast<int64_t>(s.spec.dims.size()) > in[0]->ndim())
    prims::shape_error(p, in, "the spec " + s.spec.str() + " names more dimensions than the operand has");
  return {*in[0]};
}
Arrays constraint_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params&) { return {in[0]}; }
JvpResult constraint_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                         const Params& params) {
  JvpResult r;
  r.primals.push_back(bind1(p, primals, params));
  r.tangents.push_back(prims::is_zero(tangents[0]) ? Array() : bind1(p, {tangents[0]}, params));
  return r;
}
Arrays constraint_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg>, const Params& params) {
  if (prims::is_zero(cts[0])) return {Array()};
  return {bind1(p, {cts[0]}, params)};
}
BatchResult constraint_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                             const BatchInfo&, const Params& params) {
  if (dims[0] == kNotMapped) return {{bind1(p, vals, params)}, {kNotMapped}};
  NamedSharding s = sharding_of(params);
  // the spec with a whole dimension at the batch's place
  const auto& old = s.spec.dims;
  size_t bd = static_cast<size_t>(dims[0]);
  std::vector<SpecDim> spec(std::max(old.size(), bd) + 1);
  for (size_t i = 0, j = 0; i < spec.size(); ++i)
    if (i != bd && j < old.size()) spec[i] = old[j++];
  s.spec.dims = std::move(spec);
  return {{bind1(p, vals, sharding_params(std::move(s)))}, {dims[0]}};
}

}  // namespace

const Primitive sharding_constraint_p{"sharding_constraint", 0, &constraint_shape, &constraint_impl,
                                      &constraint_jvp, &constraint_transpose, &constraint_batch};

Array with_sharding_constraint(const Array& x, const NamedSharding& s) {
  static const bool registered = [] {
    prims::register_primitive(&sharding_constraint_p);
    return true;
  }();
  (void)registered;
  (void)ValueSharding::from_spec(s.spec, s.mesh, x.aval(), "with_sharding_constraint: the operand");
  return bind1(sharding_constraint_p, {x}, sharding_params(s));
}

// ---- propagation: one rule per primitive family ---------------------------------------------------------
namespace {

using Step = ShardingPlan::Step;

// The number of devices split `k` divides a dimension over.
int64_t axis_n(const Mesh& m, int k) { return VS::devices_of(m, k); }

// How many leading axes two splits of a dimension share (a block split as `from` is split as that prefix
// once its other axes are gathered).
size_t common_prefix(int from, int to) {
  std::vector<int> a = VS::axes_of(from), b = VS::axes_of(to);
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

VS whole(const VS& s) { return {s.dims, 0}; }

Step replicate_all(const Eqn& e) {
  Step st;
  for (auto& a : e.inputs) st.in.push_back(VS::replicated(a.aval().ndim()));
  for (auto& v : e.outputs) st.out.push_back(VS::replicated(v->aval.ndim()));
  return st;
}

double move_cost(const Aval& a, const VS& from, const VS& to, const Mesh& mesh);

// Elementwise: the result follows the operands' splits. Where they agree (or split different dimensions
// over different axes) it takes them all (the operands missing a split are sliced: free); where they
// conflict, it takes whichever candidate — that merge, or one operand's own layout — moves the fewest
// bytes (operands already brought to a layout for an earlier use count nothing), the merge among
// equals. A partial sum stays one through a linear operation (a sum or difference with another array,
// one partial factor of a product or numerator of a quotient, negation, conversion between float types).
Step elementwise(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh, const std::vector<std::vector<VS>>& avail) {
  int64_t r = e.outputs[0]->aval.ndim();
  VS t = VS::replicated(r);
  uint32_t used = 0;
  auto same_shape = [&](size_t i) { return e.inputs[i].aval().shape == e.outputs[0]->aval.shape; };
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (!same_shape(i)) continue;
    for (size_t d = 0; d < static_cast<size_t>(r); ++d) {
      int k = in[i].dims[d];
      if (k >= 0 && t.dims[d] < 0 && !(used & VS::bits_of(k))) {
        t.dims[d] = k;
        used |= VS::bits_of(k);
      }
    }
  }
  auto bytes_moved = [&](const VS& c) {
    double b = 0;
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      if (e.inputs[i].is_literal() || !same_shape(i)) continue;
      bool there = false;
      for (auto& a : avail[i]) there = there || a.dims == c.dims;
      if (!there) b += move_cost(e.inputs[i].aval(), whole(in[i]), c, mesh) * static_cast<double>(itemsize(e.inputs[i].aval().dtype));
    }
    return b;
  };
  double least = bytes_moved(t);
  for (size_t i = 0; i < e.inputs.size() && least > 0; ++i) {
    if (e.inputs[i].is_literal() || !same_shape(i)) continue;
    VS c = whole(in[i]);
    double b = bytes_moved(c);
    if (b < least) {
      least = b;
      t = c;
      used = c.used();
    }
  }
  // which operands may stay partial sums
  std::vector<bool> keep(e.inputs.size(), false);
  uint32_t p = 0;
  const Primitive* q = e.prim;
  auto partial_of = [&](size_t i) { return e.inputs[i].is_literal() ? 0u : in[i].partial; };
  if (q == &prims::add_p || q == &prims::sub_p || q == &prims::add_any_p) {
    // a sum with a partial sum stays one: the whole operand joins as a term on one device of each axis
    // (free), so a residual connection does not force the all-reduce
    bool arrays = !e.inputs[0].is_literal() && !e.inputs[1].is_literal() &&
                  e.inputs[0].aval().shape == e.inputs[1].aval().shape;
    if (arrays && (partial_of(0) | partial_of(1))) {
      p = partial_of(0) | partial_of(1);
      keep = {true, true};
    }
  } else if (q == &prims::neg_p || q == &prims::copy_p ||
             (q == &prims::convert_element_type_p && is_floating(e.inputs[0].aval().dtype) &&
              is_floating(e.outputs[0]->aval.dtype))) {
    p = partial_of(0);
    keep = {true};
  } else if (q == &prims::mul_p || q == &prims::div_p) {
    uint32_t p0 = partial_of(0), p1 = partial_of(1);
    if (p0 && !p1) {
      p = p0;
      keep = {true, false};
    } else if (p1 && !p0 && q == &prims::mul_p) {
      p = p1;
      keep = {false, true};
    }
  }
  if (p & used) {  // a split the result wants over an axis the operands are partial over: sum first
    p = 0;
    std::fill(keep.begin(), keep.end(), false);
  }
  Step st;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    int64_t ri = e.inputs[i].aval().ndim();
    VS s = ri == r && e.inputs[i].aval().shape == e.outputs[0]->aval.shape ? t : VS::replicated(ri);
    s.partial = keep[i] ? p : 0;
    st.in.push_back(s);
  }
  VS o = t;
  o.partial = p;
  for (size_t k = 0; k < e.outputs.size(); ++k) st.out.push_back(o);
  return st;
}

Step broadcast_rule(const Eqn& e, const VS& x) {
  const IntList& bd = e.params.get_ints("broadcast_dimensions");
  const Shape& is = e.inputs[0].aval().shape;
  const Shape& os = e.outputs[0]->aval.shape;
  VS in = x, out = VS::replicated(static_cast<int64_t>(os.size()));
  for (size_t i = 0; i < bd.size(); ++i) {
    if (in.dims[i] >= 0 && is[i] == os[static_cast<size_t>(bd[i])]) {
      out.dims[static_cast<size_t>(bd[i])] = in.dims[i];
    } else {
      in.dims[i] = -1;
    }
  }
  out.partial = in.partial;  // linear
  return {{in}, {out}};
}

// A split dimension d of the operand stays split through a reshape when some result dimension d' starts
// at the same place (the dimensions before each hold as many elements) and divides over the axis: each
// device's block of d is then a block of d'.
Step reshape_rule(const Eqn& e, const VS& x, const Mesh& mesh) {
  if (e.params.has("dimensions") && !std::holds_alternative<std::monostate>(*e.params.find("dimensions")))
    return replicate_all(e);
  const Shape& is = e.inputs[0].aval().shape;
  const Shape& os = e.outputs[0]->aval.shape;
  VS in = x, out = VS::replicated(static_cast<int64_t>(os.size()));
  for (size_t d = 0; d < is.size(); ++d) {
    int k = in.dims[d];
    if (k < 0) continue;
    int64_t n = axis_n(mesh, k), prefix = 1;
    for (size_t i = 0; i < d; ++i) prefix *= is[i];
    int64_t p = 1;
    int found = -1;
    for (size_t j = 0; j < os.size() && p <= prefix; ++j) {
      if (p == prefix && os[j] % n == 0 && (os[j] > 1 || n == 1) && out.dims[j] < 0) {
        found = static_cast<int>(j);
        break;
      }
      p *= os[j];
    }
    if (found >= 0) {
      out.dims[static_cast<size_t>(found)] = k;
    } else {
      in.dims[d] = -1;
    }
  }
  out.partial = in.partial;
  return {{in}, {out}};
}

Step transpose_rule(const Eqn& e, const VS& x) {
  const IntList& perm = e.params.get_ints("permutation");
  VS out = VS::replicated(static_cast<int64_t>(perm.size()));
  for (size_t i = 0; i < perm.size(); ++i) out.dims[i] = x.dims[static_cast<size_t>(perm[i])];
  out.partial = x.partial;
  return {{x}, {out}};
}

bool contains(const IntList& l, int64_t v) { return std::find(l.begin(), l.end(), v) != l.end(); }

VS drop_dims(const VS& x, const IntList& dims) {
  VS r;
  for (size_t d = 0; d < x.dims.size(); ++d)
    if (!contains(dims, static_cast<int64_t>(d))) r.dims.push_back(x.dims[d]);
  return r;
}

Step squeeze_rule(const Eqn& e, const VS& x) {
  VS in = x;
  for (auto d : e.params.get_ints("dimensions")) in.dims[static_cast<size_t>(d)] = -1;
  VS out = drop_dims(in, e.params.get_ints("dimensions"));
  out.partial = x.partial;
  return {{in}, {out}};
}

// Reductions: a sum over a split dimension leaves a partial sum; max / min finish with pmax / pmin; the
// others (product, and, or, argmax, argmin) take the dimension whole.
Step reduce_rule(const Eqn& e, const VS& x) {
  const Primitive* q = e.prim;
  const IntList& axes = e.params.get_ints("axes");
  Step st;
  VS in = q == &prims::reduce_sum_p ? x : whole(x);
  uint32_t over = 0;
  for (auto a : axes) {
    int k = in.dims[static_cast<size_t>(a)];
    if (k < 0) continue;
    if (q == &prims::reduce_sum_p || q == &prims::reduce_max_p || q == &prims::reduce_min_p) {
      over |= VS::bits_of(k);
    } else {
      in.dims[static_cast<size_t>(a)] = -1;
    }
  }
  VS out = drop_dims(in, axes);
  if (q == &prims::reduce_sum_p) {
    out.partial = in.partial | over;
  } else if (over) {
    st.post = q == &prims::reduce_max_p ? Step::kPmax : Step::kPmin;
    st.post_axes = over;
  }
  st.in = {in};
  st.out = {out};
  return st;
}

// Operations along one dimension (cumulative sums, sorts, reversal): that dimension whole, the others as
// they are; every operand and result alike.
Step along_rule(const Eqn& e, const std::vector<VS>& in, const IntList& along) {
  VS t = whole(in[0]);
  for (auto d : along) t.dims[static_cast<size_t>(d)] = -1;
  Step st;
  for (size_t i = 0; i < e.inputs.size(); ++i) st.in.push_back(t);
  for (size_t k = 0; k < e.outputs.size(); ++k) st.out.push_back(t);
  return st;
}

// Elements one device moves to bring a block laid out as `from` to `to` (gathers; partial sums and
// slices are left out: the former cost every choice alike, the latter nothing).
double move_cost(const Aval& a, const VS& from, const VS& to, const Mesh& mesh) {
  double local = 1;
  for (size_t d = 0; d < a.shape.size(); ++d)
    local *= static_cast<double>(a.shape[d]) / static_cast<double>(from.dims[d] >= 0 ? axis_n(mesh, from.dims[d]) : 1);
  double cost = 0;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (from.dims[d] >= 0 && from.dims[d] != to.dims[d]) {
      std::vector<int> axes = VS::axes_of(from.dims[d]);
      for (size_t i = axes.size(); i-- > common_prefix(from.dims[d], to.dims[d]);) {  // one gather per axis
        local *= static_cast<double>(axis_n(mesh, axes[i]));
        cost += local;
      }
    }
  return cost;
}

double local_size(const Aval& a, const VS& s, const Mesh& mesh) {
  double n = 1;
  for (size_t d = 0; d < a.shape.size(); ++d)
    n *= static_cast<double>(a.shape[d]) / static_cast<double>(s.dims[d] >= 0 ? axis_n(mesh, s.dims[d]) : 1);
  return n;
}

// A product of two operands (dot_general, convolution), described by how its dimensions pair up:
// batch pairs (lhs dimension, rhs dimension, result dimension), contraction pairs (lhs, rhs, -1), and
// free dimensions of one operand (lhs or rhs -1) with the result dimension they become. Dimensions in
// no role (a convolution's spatial ones) are whole.
struct Role {
  int l = -1, r = -1, out = -1;
  bool partial = false;
};

// Each mesh axis that splits an operand takes one role: a batch dimension split alike on both sides
// (the result's batch dimension is split), a contraction split alike on both sides (the result is a
// partial sum over the axis), a free dimension of one operand (the result's is split), or none
// (gathered). The roles are chosen together to move the fewest elements (gathers of operands, and the
// partial sum the result will need), and among equals to split the most work; an operand whose
// dimension is whole where the role wants it split is sliced to match (free).
Step product_rule(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh, const std::vector<std::vector<VS>>& avail,
                  const std::vector<Role>& roles) {
  // an operand already brought to a layout for an earlier use costs nothing there again
  auto cost_of = [&](size_t i, const VS& to) {
    for (auto& a : avail[i])
      if (a == to) return 0.0;
    return move_cost(e.inputs[i].aval(), whole(in[i]), to, mesh);
  };
  const Aval& la = e.inputs[0].aval();
  const Aval& ra = e.inputs[1].aval();
  const Aval& oa = e.outputs[0]->aval;
  // the splits the operands have (a mesh axis, or several), each taking one role
  std::vector<int> splits;
  for (const VS* s : {&in[0], &in[1]})
    for (int k : s->dims)
      if (k >= 0 && std::find(splits.begin(), splits.end(), k) == splits.end()) splits.push_back(k);
  std::sort(splits.begin(), splits.end());
  std::vector<int> axes;
  std::vector<std::vector<Role>> options;
  for (int k : splits) {
    auto has = [&](const VS& s, int d) { return d >= 0 && s.dims[static_cast<size_t>(d)] == k; };
    std::vector<Role> o;
    for (const Role& ro : roles)
      if (has(in[0], ro.l) || has(in[1], ro.r)) o.push_back(ro);
    if (o.empty()) continue;
    o.push_back({});  // none
    axes.push_back(k);
    options.push_back(std::move(o));
  }
  Step best;
  double best_cost = 0;
  int best_used = -1;
  std::vector<size_t> pick(axes.size(), 0);
  while (true) {
    VS l = VS::replicated(la.ndim()), r = VS::replicated(ra.ndim()), out = VS::replicated(oa.ndim());
    bool ok = true;
    int used = 0;
    uint32_t taken = 0;  // two splits sharing a mesh axis cannot both take a role
    for (size_t a = 0; a < axes.size() && ok; ++a) {
      const Role& ro = options[a][pick[a]];
      int k = axes[a];
      if (ro.l < 0 && ro.r < 0) continue;
      ++used;
      ok = !(taken & VS::bits_of(k));
      taken |= VS::bits_of(k);
      if (ro.l >= 0) {
        ok = ok && l.dims[static_cast<size_t>(ro.l)] < 0;
        l.dims[static_cast<size_t>(ro.l)] = k;
      }
      if (ro.r >= 0) {
        ok = ok && r.dims[static_cast<size_t>(ro.r)] < 0;
        r.dims[static_cast<size_t>(ro.r)] = k;
      }
      if (ro.out >= 0) {
        ok = ok && out.dims[static_cast<size_t>(ro.out)] < 0;
        out.dims[static_cast<size_t>(ro.out)] = k;
      }
      if (ro.partial) out.partial |= VS::bits_of(k);
    }
    if (ok) {
      double cost = cost_of(0, l) + cost_of(1, r) +
                    (out.partial ? local_size(oa, out, mesh) : 0);
      if (best_used < 0 || cost < best_cost || (cost == best_cost && used > best_used)) {
        best = Step{{l, r}, {out}};
        best_cost = cost;
        best_used = used;
      }
    }
    size_t a = 0;
    while (a < pick.size() && ++pick[a] == options[a].size()) pick[a++] = 0;
    if (a == pick.size()) break;
  }
  return best;
}

// dot_general: the result is (batch..., lhs free..., rhs free...).
Step dot_rule(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh, const std::vector<std::vector<VS>>& avail) {
  const auto& dn = e.params.get_object<lax::DotDims>("dimension_numbers");
  const Aval& la = e.inputs[0].aval();
  const Aval& ra = e.inputs[1].aval();
  std::vector<Role> roles;
  int out = 0;
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i)
    roles.push_back({static_cast<int>(dn.lhs_batch[i]), static_cast<int>(dn.rhs_batch[i]), out++, false});
  for (size_t i = 0; i < dn.lhs_contract.size(); ++i)
    roles.push_back({static_cast<int>(dn.lhs_contract[i]), static_cast<int>(dn.rhs_contract[i]), -1, true});
  for (int64_t d = 0; d < la.ndim(); ++d)
    if (!contains(dn.lhs_batch, d) && !contains(dn.lhs_contract, d)) roles.push_back({static_cast<int>(d), -1, out++, false});
  for (int64_t d = 0; d < ra.ndim(); ++d)
    if (!contains(dn.rhs_batch, d) && !contains(dn.rhs_contract, d)) roles.push_back({-1, static_cast<int>(d), out++, false});
  return product_rule(e, in, mesh, avail, roles);
}

// conv_general_dilated: the lhs's batch dimension becomes the result's, the kernel's output features
// the result's features, the input features are contracted; the spatial dimensions are whole (a split
// one would need its neighbours' halos). The kernel's gradient is such a convolution with the batch as
// its contraction: a partial sum over the data axis. With feature groups (a depthwise convolution)
// only the batch keeps its split (features split across groups would change the local group count);
// with batch groups (a grouped convolution's kernel gradient) the operands are whole.
Step conv_rule(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh, const std::vector<std::vector<VS>>& avail) {
  if (e.params.get_int("batch_group_count") != 1) return replicate_all(e);
  const auto& dn = e.params.get_object<lax::ConvDims>("dimension_numbers");
  auto at = [](const IntList& spec, size_t i) { return static_cast<int>(spec[i]); };
  std::vector<Role> roles{{at(dn.lhs_spec, 0), -1, at(dn.out_spec, 0), false}};
  if (e.params.get_int("feature_group_count") == 1) {
    roles.push_back({-1, at(dn.rhs_spec, 0), at(dn.out_spec, 1), false});
    roles.push_back({at(dn.lhs_spec, 1), at(dn.rhs_spec, 1), -1, true});
  }
  return product_rule(e, in, mesh, avail, roles);
}

// Windowed reductions (pooling) and their derivatives' select_and_* primitives: a dimension the window
// does not reach across (size 1, stride 1, no padding or dilation: a batch or feature dimension) keeps
// its split, alike in every operand and the result; the others are whole.
Step window_rule(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh) {
  const IntList& win = e.params.get_ints("window_dimensions");
  const IntList& strides = e.params.get_ints("window_strides");
  const IntList& bdil = e.params.get_ints("base_dilation");
  const IntList& wdil = e.params.get_ints("window_dilation");
  const auto& pad = e.params.get_object<lax::IntTuples>("padding").items;
  std::vector<int> pointwise;
  for (size_t d = 0; d < win.size(); ++d) {
    bool one = win[d] == 1 && strides[d] == 1 && (bdil.empty() || bdil[d] == 1) && (wdil.empty() || wdil[d] == 1) &&
               (pad.size() <= d || (pad[d].at(0) == 0 && pad[d].at(1) == 0));
    if (one) pointwise.push_back(static_cast<int>(d));
  }
  std::vector<std::vector<int>> ins(e.inputs.size(), pointwise), outs(e.outputs.size(), pointwise);
  return aligned_dims_rule(ins, outs)(e, in, mesh);
}
// gather (an embedding lookup): the indices' batch dimensions keep their splits into the result's
// batch dimensions; the operand's indexed dimensions are whole, its other dimensions, taken whole by
// every slice, keep theirs into the result's offset dimensions.
Step gather_rule(const Eqn& e, const std::vector<VS>& in) {
  const auto& g = e.params.get_object<lax::GatherDims>("dimension_numbers");
  if (!g.operand_batching_dims.empty()) return replicate_all(e);
  const Aval& oa = e.inputs[0].aval();
  const Aval& ia = e.inputs[1].aval();
  const IntList& ss = e.params.get_ints("slice_sizes");
  int64_t rank = e.outputs[0]->aval.ndim();
  VS op = VS::replicated(oa.ndim()), idx = VS::replicated(ia.ndim()), out = VS::replicated(rank);
  uint32_t used = 0;
  std::vector<int64_t> batch_out;
  for (int64_t d = 0; d < rank; ++d)
    if (!contains(g.offset_dims, d)) batch_out.push_back(d);
  for (size_t b = 0; b + 1 < static_cast<size_t>(ia.ndim()) && b < batch_out.size(); ++b) {
    int k = in[1].dims[b];
    if (k < 0 || (used & VS::bits_of(k))) continue;
    idx.dims[b] = k;
    out.dims[static_cast<size_t>(batch_out[b])] = k;
    used |= VS::bits_of(k);
  }
  size_t o = 0;
  for (int64_t d = 0; d < oa.ndim(); ++d) {
    if (contains(g.collapsed_slice_dims, d)) continue;
    int k = in[0].dims[static_cast<size_t>(d)];
    bool whole_slice = ss[static_cast<size_t>(d)] == oa.shape[static_cast<size_t>(d)];
    if (k >= 0 && whole_slice && !contains(g.start_index_map, d) && !(used & VS::bits_of(k)) && o < g.offset_dims.size()) {
      op.dims[static_cast<size_t>(d)] = k;
      out.dims[static_cast<size_t>(g.offset_dims[o])] = k;
      used |= VS::bits_of(k);
    }
    ++o;
  }
  return {{op, idx}, {out}};
}

// scatter_add (an embedding's gradient): each device adds its updates, split along their batch
// dimensions, into the whole operand; the result is a partial sum over those axes (the operand, added
// once, counts on one device of each).
Step scatter_add_rule(const Eqn& e, const std::vector<VS>& in) {
  const auto& sd = e.params.get_object<lax::ScatterDims>("dimension_numbers");
  if (!sd.operand_batching_dims.empty()) return replicate_all(e);
  const Aval& ia = e.inputs[1].aval();
  const Aval& ua = e.inputs[2].aval();
  VS op = VS::replicated(e.inputs[0].aval().ndim()), idx = VS::replicated(ia.ndim()), up = VS::replicated(ua.ndim());
  std::vector<int64_t> batch_up;
  for (int64_t d = 0; d < ua.ndim(); ++d)
    if (!contains(sd.update_window_dims, d)) batch_up.push_back(d);
  uint32_t used = 0;
  for (size_t b = 0; b + 1 < static_cast<size_t>(ia.ndim()) && b < batch_up.size(); ++b) {
    int k = in[2].dims[static_cast<size_t>(batch_up[b])];
    if (k < 0) k = in[1].dims[b];
    if (k < 0 || (used & VS::bits_of(k))) continue;
    idx.dims[b] = k;
    up.dims[static_cast<size_t>(batch_up[b])] = k;
    used |= VS::bits_of(k);
  }
  op.partial = used;
  VS out = op;
  return {{op, idx, up}, {out}};
}

// ---- control flow: bodies partitioned with their operands' layouts ---------------------------------------
std::shared_ptr<const Step::Sub> sub_plan(const ClosedJaxpr& body, const Mesh& mesh, const std::vector<VS>& in,
                                          const std::vector<std::optional<VS>>& out) {
  auto sub = std::make_shared<Step::Sub>();
  sub->body = compiler::passes::inline_calls(body);
  sub->plan = propagate_shardings(*sub->body.jaxpr, mesh, in, out);
  return sub;
}

VS drop_leading(const VS& s) { return VS{std::vector<int>(s.dims.begin() + 1, s.dims.end()), 0}; }
VS add_leading(const VS& s) {
  VS r = whole(s);
  r.dims.insert(r.dims.begin(), -1);
  return r;
}

// scan: consts keep their layouts, xs theirs but along the scanned dimension; the carry keeps one layout
// through the loop (the body's carry results are brought back to it): the init's, or, when the body
// turns it into another, that one.
Step scan_rule(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh) {
  const ClosedJaxpr& body = e.params.get_jaxpr("jaxpr");
  size_t nc = static_cast<size_t>(e.params.get_int("num_consts")), ncar = static_cast<size_t>(e.params.get_int("num_carry"));
  std::vector<VS> bin;
  Step st;
  for (size_t i = 0; i < in.size(); ++i) {
    VS s = whole(in[i]);
    if (i >= nc + ncar) s.dims[0] = -1;
    st.in.push_back(s);
    bin.push_back(i >= nc + ncar ? drop_leading(s) : s);
  }
  size_t nout = body.jaxpr->outvars.size();
  std::vector<std::optional<VS>> out(nout);
  auto first = sub_plan(body, mesh, bin, out);
  bool moved = false;
  for (size_t k = 0; k < ncar; ++k)
    if (!(first->plan.outputs[k] == bin[nc + k])) {
      bin[nc + k] = first->plan.outputs[k];
      st.in[nc + k] = bin[nc + k];
      moved = true;
    }
  for (size_t k = 0; k < ncar; ++k) out[k] = bin[nc + k];
  // (unmoved, the body already brings its carry back to the init's layout: the constraint holds as is)
  auto sub = moved ? sub_plan(body, mesh, bin, out) : first;
  for (size_t k = 0; k < nout; ++k) st.out.push_back(k < ncar ? sub->plan.outputs[k] : add_leading(sub->plan.outputs[k]));
  st.subs.push_back(sub);
  return st;
}

// cond: the index whole, the operands as they are; every branch partitioned with them, its results
// brought to the first branch's layouts.
Step cond_rule(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh) {
  const JaxprList& branches = e.params.get_jaxprs("branches");
  Step st;
  st.in.push_back(VS::replicated(e.inputs[0].aval().ndim()));
  std::vector<VS> ops;
  for (size_t i = 1; i < in.size(); ++i) {
    ops.push_back(whole(in[i]));
    st.in.push_back(ops.back());
  }
  std::vector<std::optional<VS>> out(e.outputs.size());
  auto first = sub_plan(*branches[0], mesh, ops, out);
  for (size_t k = 0; k < out.size(); ++k) out[k] = first->plan.outputs[k];
  for (auto& b : branches) st.subs.push_back(sub_plan(*b, mesh, ops, out));
  for (size_t k = 0; k < out.size(); ++k) st.out.push_back(*out[k]);
  return st;
}

// while: consts keep their layouts; the carry keeps one layout through the loop, as scan's (the init's,
// or the one the body turns it into); the predicate is computed on blocks of the carry and made whole
// (a sum or extremum over a split carry is reduced across devices), so every device iterates alike.
Step while_rule(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh) {
  const ClosedJaxpr& cj = e.params.get_jaxpr("cond_jaxpr");
  const ClosedJaxpr& bj = e.params.get_jaxpr("body_jaxpr");
  size_t ncc = static_cast<size_t>(e.params.get_int("cond_nconsts")), nbc = static_cast<size_t>(e.params.get_int("body_nconsts"));
  size_t ncar = in.size() - ncc - nbc;
  Step st;
  for (auto& s : in) st.in.push_back(whole(s));
  auto carry_in = [&](size_t first, size_t n) {  // operands [first, first + n) and the carry
    std::vector<VS> v(st.in.begin() + static_cast<std::ptrdiff_t>(first), st.in.begin() + static_cast<std::ptrdiff_t>(first + n));
    v.insert(v.end(), st.in.end() - static_cast<std::ptrdiff_t>(ncar), st.in.end());
    return v;
  };
  std::vector<std::optional<VS>> out(ncar);
  auto first = sub_plan(bj, mesh, carry_in(ncc, nbc), out);
  bool moved = false;
  for (size_t k = 0; k < ncar; ++k) {
    VS& c = st.in[ncc + nbc + k];
    if (!(first->plan.outputs[k] == c)) {
      c = first->plan.outputs[k];
      moved = true;
    }
    out[k] = c;
  }
  auto body = moved ? sub_plan(bj, mesh, carry_in(ncc, nbc), out) : first;
  auto pred = sub_plan(cj, mesh, carry_in(0, ncc), {VS::replicated(0)});
  st.subs = {pred, body};
  for (size_t k = 0; k < ncar; ++k) st.out.push_back(*out[k]);
  return st;
}

Step constraint_rule(const Eqn& e, const Mesh& mesh) {
  const NamedSharding& s = sharding_of(e.params);
  if (s.mesh.str() != mesh.str())
    fail<ValueError>("with_sharding_constraint: ", s.mesh.str(), " is not the mesh of the sharded jit (", mesh.str(), ")");
  VS t = VS::from_spec(s.spec, mesh, e.inputs[0].aval(), "with_sharding_constraint: the operand");
  return {{t}, {t}};
}

std::mutex& rules_mu() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<const Primitive*, ShardingRule>& registered_rules() {
  static std::unordered_map<const Primitive*, ShardingRule> r;
  return r;
}

Step rule_for(const Eqn& e, const std::vector<VS>& in, const Mesh& mesh, const std::vector<std::vector<VS>>& avail) {
  const Primitive* q = e.prim;
  if (e.inputs.empty()) return replicate_all(e);
  {
    ShardingRule r;
    {
      std::lock_guard<std::mutex> lock(rules_mu());
      auto it = registered_rules().find(q);
      if (it != registered_rules().end()) r = it->second;
    }
    if (r) {
      std::vector<VS> whole_in;
      for (auto& x : in) whole_in.push_back(whole(x));
      Step st = r(e, whole_in, mesh);
      if (st.in.size() != e.inputs.size() || st.out.size() != e.outputs.size())
        fail<ValueError>("sharded jit: the sharding rule of ", q->name, " gave ", st.in.size(), " operand and ", st.out.size(),
                         " result layouts for ", e.inputs.size(), " and ", e.outputs.size());
      return st;
    }
  }
  if (q == &sharding_constraint_p) return constraint_rule(e, mesh);
  if (q->has(kElementwise) && e.outputs.size() == 1) return elementwise(e, in, mesh, avail);
  if (q == &prims::broadcast_in_dim_p) return broadcast_rule(e, in[0]);
  if (q == &prims::reshape_p) return reshape_rule(e, in[0], mesh);
  if (q == &prims::transpose_p) return transpose_rule(e, in[0]);
  if (q == &prims::squeeze_p) return squeeze_rule(e, in[0]);
  if (q == &prims::reduce_sum_p || q == &prims::reduce_max_p || q == &prims::reduce_min_p ||
      q == &prims::reduce_prod_p || q == &prims::reduce_and_p || q == &prims::reduce_or_p ||
      q == &prims::argmax_p || q == &prims::argmin_p)
    return reduce_rule(e, in[0]);
  if (q == &prims::cumsum_p || q == &prims::cummax_p || q == &prims::cummin_p)
    return along_rule(e, in, {e.params.get_int("axis")});
  if (q == &prims::sort_p) return along_rule(e, in, {e.params.get_int("dimension")});
  if (q == &prims::rev_p) return along_rule(e, in, e.params.get_ints("dimensions"));
  if (q == &prims::dot_general_p) return dot_rule(e, in, mesh, avail);
  if (q == &prims::conv_general_dilated_p) return conv_rule(e, in, mesh, avail);
  if (q == &prims::reduce_window_sum_p || q == &prims::reduce_window_max_p || q == &prims::reduce_window_min_p ||
      q == &prims::select_and_gather_add_p || q == &prims::select_and_scatter_add_p)
    return window_rule(e, in, mesh);
  if (q == &scan_p) return scan_rule(e, in, mesh);
  if (q == &cond_p) return cond_rule(e, in, mesh);
  if (q == &while_p) return while_rule(e, in, mesh);
  if (q == &prims::gather_p) return gather_rule(e, in);
  if (q == &prims::scatter_add_p && e.inputs.size() == 3) return scatter_add_rule(e, in);
  return replicate_all(e);
}

// Backward: a broadcast makes any layout of its new dimensions for free (each device broadcasts to its
// block), so one whose every use wants the same layout produces that layout, moving its (smaller)
// operand instead of its result: a bias split over an axis is gathered as a vector, not as the
// [batch, n] matrix it becomes; zeros are made block by block.
void refine_broadcasts(const Jaxpr& j, ShardingPlan& plan) {
  // each variable's uses: (equation, operand), or (none, output)
  constexpr size_t kOut = static_cast<size_t>(-1);
  std::unordered_map<const Var*, std::vector<std::pair<size_t, size_t>>> uses;
  for (size_t n = 0; n < j.eqns.size(); ++n)
    for (size_t i = 0; i < j.eqns[n].inputs.size(); ++i)
      if (!j.eqns[n].inputs[i].is_literal()) uses[j.eqns[n].inputs[i].var.get()].push_back({n, i});
  for (size_t i = 0; i < j.outvars.size(); ++i)
    if (!j.outvars[i].is_literal()) uses[j.outvars[i].var.get()].push_back({kOut, i});
  auto wanted = [&](std::pair<size_t, size_t> u) -> const VS& {
    return u.first == kOut ? plan.outputs[u.second] : plan.steps[u.first].in[u.second];
  };
  for (size_t n = j.eqns.size(); n-- > 0;) {
    const Eqn& e = j.eqns[n];
    if (e.prim != &prims::broadcast_in_dim_p) continue;
    auto it = uses.find(e.outputs[0].get());
    if (it == uses.end() || it->second.empty()) continue;
    const VS& w = wanted(it->second[0]);
    bool same = w.partial == 0;
    for (auto& u : it->second) same = same && wanted(u) == w;
    if (!same || w == plan.steps[n].out[0]) continue;
    const IntList& bd = e.params.get_ints("broadcast_dimensions");
    const Shape& is = e.inputs[0].aval().shape;
    VS in = VS::replicated(static_cast<int64_t>(is.size()));
    for (size_t d = 0; d < bd.size(); ++d)
      if (is[d] == e.outputs[0]->aval.shape[static_cast<size_t>(bd[d])]) in.dims[d] = w.dims[static_cast<size_t>(bd[d])];
    plan.steps[n].in[0] = in;
    plan.steps[n].out[0] = w;
    plan.of[e.outputs[0].get()] = w;
  }
}

}  // namespace

void register_sharding_rule(const Primitive& p, ShardingRule rule) {
  std::lock_guard<std::mutex> lock(rules_mu());
  registered_rules()[&p] = std::move(rule);
}

ShardingRule aligned_dims_rule(std::vector<std::vector<int>> in_dims, std::vector<std::vector<int>> out_dims) {
  return [in_dims, out_dims](const Eqn& e, const std::vector<VS>& in, const Mesh&) {
    size_t shared = 0;
    for (auto& d : in_dims) shared = std::max(shared, d.size());
    std::vector<int> axis(shared, -1);
    uint32_t used = 0;
    for (size_t i = 0; i < in.size() && i < in_dims.size(); ++i)
      for (size_t j = 0; j < in_dims[i].size(); ++j) {
        int d = in_dims[i][j];
        if (d < 0 || axis[j] >= 0) continue;
        int k = in[i].dims[static_cast<size_t>(d)];
        if (k >= 0 && !(used & VS::bits_of(k))) {
          axis[j] = k;
          used |= VS::bits_of(k);
        }
      }
    auto layout = [&](const Aval& a, const std::vector<int>* dims) {
      VS s = VS::replicated(a.ndim());
      if (dims)
        for (size_t j = 0; j < dims->size(); ++j)
          if ((*dims)[j] >= 0) s.dims[static_cast<size_t>((*dims)[j])] = axis[j];
      return s;
    };
    Step st;
    for (size_t i = 0; i < e.inputs.size(); ++i) st.in.push_back(layout(e.inputs[i].aval(), i < in_dims.size() ? &in_dims[i] : nullptr));
    for (size_t k = 0; k < e.outputs.size(); ++k)
      st.out.push_back(layout(e.outputs[k]->aval, k < out_dims.size() ? &out_dims[k] : nullptr));
    return st;
  };
}

ShardingPlan propagate_shardings(const Jaxpr& j, const Mesh& mesh, const std::vector<VS>& in,
                                 const std::vector<std::optional<VS>>& out) {
  if (in.size() != j.invars.size())
    fail<ValueError>("propagate_shardings: ", in.size(), " input layouts for ", j.invars.size(), " inputs");
  ShardingPlan plan;
  for (auto& c : j.constvars) {
    plan.consts.push_back(VS::replicated(c->aval.ndim()));
    plan.of[c.get()] = plan.consts.back();
  }
  plan.inputs = in;
  for (size_t i = 0; i < in.size(); ++i) plan.of[j.invars[i].get()] = in[i];
  auto layout = [&](const Atom& a) { return a.is_literal() ? VS::replicated(0) : plan.of.at(a.var.get()); };
  // the layouts each variable has been brought to so far (the partitioner moves a value once per layout)
  std::unordered_map<const Var*, std::vector<VS>> avail;
  // a partial sum read by several equations (or returned) is summed once, where it is made: the rules
  // see it whole (carried through a linear operation, each use would sum its own derived value)
  std::unordered_map<const Var*, int> uses;
  for (const Eqn& e : j.eqns)
    for (auto& a : e.inputs)
      if (!a.is_literal()) ++uses[a.var.get()];
  for (auto& a : j.outvars)
    if (!a.is_literal()) ++uses[a.var.get()];
  for (const Eqn& e : j.eqns) {
    std::vector<VS> cur;
    std::vector<std::vector<VS>> av;
    for (auto& a : e.inputs) {
      cur.push_back(layout(a));
      if (!a.is_literal() && uses[a.var.get()] > 1) cur.back().partial = 0;
      av.push_back(a.is_literal() ? std::vector<VS>{} : avail[a.var.get()]);
    }
    Step st = rule_for(e, cur, mesh, av);
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      if (e.inputs[i].is_literal()) {
        st.in[i] = VS::replicated(0);
      } else {
        auto& v = avail[e.inputs[i].var.get()];
        if (std::find(v.begin(), v.end(), st.in[i]) == v.end()) v.push_back(st.in[i]);
      }
    }
    for (size_t k = 0; k < e.outputs.size(); ++k) plan.of[e.outputs[k].get()] = st.out[k];
    plan.steps.push_back(std::move(st));
  }
  for (size_t i = 0; i < j.outvars.size(); ++i) {
    VS s = i < out.size() && out[i] ? *out[i] : whole(layout(j.outvars[i]));
    s.partial = 0;
    plan.outputs.push_back(s);
  }
  refine_broadcasts(j, plan);
  return plan;
}

// ---- the partitioner ------------------------------------------------------------------------------------
namespace {

// How the partial sums a move does not keep are summed: scattered at once (psum_scatter) over the
// dimensions the target splits over axes the sum runs over and the source keeps whole, psum'd over the
// sum's other axes.
struct SumPlan {
  std::vector<std::pair<size_t, int>> scatter;  // (dimension, its target split)
  uint32_t psum = 0;
};

SumPlan plan_sum(const VS& from, const VS& to) {
  SumPlan p;
  uint32_t sum = from.partial & ~to.partial;
  for (size_t d = 0; d < to.dims.size(); ++d) {
    uint32_t b = VS::bits_of(to.dims[d]);
    if (b && from.dims[d] < 0 && (b & ~sum) == 0) {
      p.scatter.push_back({d, to.dims[d]});
      sum &= ~b;
    }
  }
  p.psum = sum;
  return p;
}

}  // namespace

Array reshard(const Array& x, const VS& from, const VS& to, const Mesh& mesh) {
  const auto& names = mesh.axis_names();
  Array y = x;
  VS cur = from;
  SumPlan sp = plan_sum(from, to);
  for (auto [d, split] : sp.scatter) {
    for (int k : VS::axes_of(split))  // the major axis first: its blocks are the outer ones
      y = lax::psum_scatter(y, names[static_cast<size_t>(k)], static_cast<int64_t>(d), true);
    cur.dims[d] = split;
  }
  if (sp.psum) y = lax::psum(y, names_of(sp.psum, mesh));
  cur.partial &= to.partial;
  // splits the target does not have: gathered, the minor axis first (each gather joins the blocks that
  // differ only along its axis) down to the axes the target's split starts with
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d] >= 0 && cur.dims[d] != to.dims[d]) {
      std::vector<int> axes = VS::axes_of(cur.dims[d]);
      size_t keep = common_prefix(cur.dims[d], to.dims[d]);
      for (size_t i = axes.size(); i-- > keep;)
        y = lax::all_gather_invariant(y, names[static_cast<size_t>(axes[i])], static_cast<int64_t>(d), true);
      axes.resize(keep);
      cur.dims[d] = VS::split_of(axes);
    }
  }
  // a whole value becomes a partial sum by staying on the first device of each new axis (zeros elsewhere)
  for (size_t k = 0; k < names.size(); ++k) {
    if (!((to.partial & ~cur.partial) & (1u << k))) continue;
    Array first = lax::eq(lax::axis_index(names[k]), lax::scalar(0.0, DType::i32));
    y = lax::select(lax::broadcast_in_dim(first, y.shape(), {}), y, lax::broadcast_in_dim(lax::scalar(0.0, y.dtype()), y.shape(), {}));
    cur.partial |= 1u << k;
  }
  // splits the target adds (past those the block has): each device keeps its block
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    if (to.dims[d] < 0 || cur.dims[d] == to.dims[d]) continue;
    std::vector<int> add = VS::axes_of(to.dims[d]);
    add.erase(add.begin(), add.begin() + static_cast<std::ptrdiff_t>(VS::axes_of(cur.dims[d]).size()));
    int64_t b = y.shape()[d] / axis_n(mesh, VS::split_of(add));
    // the device's position along the added axes, the major first
    Array idx;
    for (int k : add) {
      Array i = lax::axis_index(names[static_cast<size_t>(k)]);
      idx = idx.valid() ? lax::add(lax::mul(idx, lax::scalar(static_cast<double>(axis_n(mesh, k)), i.dtype())), i) : i;
    }
    std::vector<Array> start(static_cast<size_t>(y.ndim()), lax::scalar(0.0, idx.dtype()));
    start[d] = lax::mul(idx, lax::scalar(static_cast<double>(b), idx.dtype()));
    Shape sizes = y.shape();
    sizes[d] = b;
    y = lax::dynamic_slice(y, start, sizes);
    cur.dims[d] = to.dims[d];
  }
  return y;
}

namespace {

Shape local_shape(const Aval& a, const VS& s, const Mesh& mesh) {
  Shape r = a.shape;
  for (size_t d = 0; d < r.size(); ++d)
    if (s.dims[d] >= 0) r[d] /= axis_n(mesh, s.dims[d]);
  return r;
}

IntList ints(const Shape& s) { return IntList(s.begin(), s.end()); }

// The equation's parameters for blocks: the result shapes that parameters spell out become the blocks'.
Params local_params(const Eqn& e, const Step& st, const Mesh& mesh) {
  if (e.prim == &prims::broadcast_in_dim_p)
    return e.params.with("shape", ints(local_shape(e.outputs[0]->aval, st.out[0], mesh)));
  if (e.prim == &prims::reshape_p)
    return e.params.with("new_sizes", ints(local_shape(e.outputs[0]->aval, st.out[0], mesh)));
  if (e.prim == &prims::gather_p) {
    IntList ss = e.params.get_ints("slice_sizes");
    for (size_t d = 0; d < ss.size(); ++d)
      if (st.in[0].dims[d] >= 0) ss[d] /= axis_n(mesh, st.in[0].dims[d]);
    return e.params.with("slice_sizes", ss);
  }
  return e.params;
}

}  // namespace

std::vector<Array> run_partitioned(const ClosedJaxpr& cj, const ShardingPlan& plan, const Mesh& mesh,
                                   const std::vector<Array>& blocks) {
  const Jaxpr& j = *cj.jaxpr;
  if (blocks.size() != j.invars.size())
    fail<ValueError>("sharded jit: ", blocks.size(), " blocks for ", j.invars.size(), " inputs");
  std::unordered_map<const Var*, Array> env;
  for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i].get()] = cj.consts[i];
  for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i].get()] = blocks[i];
  // each variable moved once per layout its uses want (a parameter gathered in the forward pass serves
  // the backward pass too)
  std::unordered_map<const Var*, std::vector<std::pair<VS, Array>>> moved;
  auto read = [&](const Var* v, const VS& to) {
    const VS& have = plan.of.at(v);
    if (have == to) return env.at(v);
    auto& m = moved[v];
    for (auto& [s, x] : m)
      if (s == to) return x;
    Array x = reshard(env.at(v), have, to, mesh);
    m.push_back({to, x});
    return x;
  };
  for (size_t n = 0; n < j.eqns.size(); ++n) {
    const Eqn& e = j.eqns[n];
    const Step& st = plan.steps[n];
    Arrays in;
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      const Atom& a = e.inputs[i];
      in.push_back(a.is_literal() ? a.literal : read(a.var.get(), st.in[i]));
    }
    Arrays out;
    if (e.prim == &sharding_constraint_p) {
      out = {in[0]};
    } else if (e.prim == &scan_p && !st.subs.empty()) {
      size_t nc = static_cast<size_t>(e.params.get_int("num_consts")), ncar = static_cast<size_t>(e.params.get_int("num_carry"));
      std::vector<Array> consts(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(nc));
      std::vector<Array> init(in.begin() + static_cast<std::ptrdiff_t>(nc), in.begin() + static_cast<std::ptrdiff_t>(nc + ncar));
      std::vector<Array> xs(in.begin() + static_cast<std::ptrdiff_t>(nc + ncar), in.end());
      const auto& sub = *st.subs[0];
      FlatFn body = [&](const std::vector<Array>& v) {
        std::vector<Array> b = consts;
        b.insert(b.end(), v.begin(), v.end());
        return run_partitioned(sub.body, sub.plan, mesh, b);
      };
      auto r = scan_flat(body, init, xs, ScanOptions{e.params.get_int("length"), e.params.get_bool("reverse")});
      out.assign(r.begin(), r.end());
    } else if (e.prim == &while_p && !st.subs.empty()) {
      size_t ncc = static_cast<size_t>(e.params.get_int("cond_nconsts")), nbc = static_cast<size_t>(e.params.get_int("body_nconsts"));
      std::vector<Array> cc(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(ncc));
      std::vector<Array> bc(in.begin() + static_cast<std::ptrdiff_t>(ncc), in.begin() + static_cast<std::ptrdiff_t>(ncc + nbc));
      std::vector<Array> init(in.begin() + static_cast<std::ptrdiff_t>(ncc + nbc), in.end());
      auto with = [&mesh](const std::vector<Array>& consts, const ShardingPlan::Step::Sub& sub) -> FlatFn {
        return [&mesh, &consts, &sub](const std::vector<Array>& v) {
          std::vector<Array> a = consts;
          a.insert(a.end(), v.begin(), v.end());
          return run_partitioned(sub.body, sub.plan, mesh, a);
        };
      };
      WhileOptions opts;
      if (e.params.has("max_steps")) opts.max_steps = e.params.get_int("max_steps");
      auto r = while_flat(with(cc, *st.subs[0]), with(bc, *st.subs[1]), init, opts);
      out.assign(r.begin(), r.end());
    } else if (e.prim == &cond_p && !st.subs.empty()) {
      std::vector<Array> ops(in.begin() + 1, in.end());
      std::vector<FlatFn> branches;
      for (auto& sub : st.subs)
        branches.push_back([&mesh, sub](const std::vector<Array>& v) { return run_partitioned(sub->body, sub->plan, mesh, v); });
      auto r = cond_flat(in[0], branches, ops);
      out.assign(r.begin(), r.end());
    } else {
      out = bind(*e.prim, in, local_params(e, st, mesh));
    }
    if (st.post != Step::kNone)
      for (auto& o : out) o = st.post == Step::kPmax ? lax::pmax(o, names_of(st.post_axes, mesh)) : lax::pmin(o, names_of(st.post_axes, mesh));
    for (size_t k = 0; k < e.outputs.size(); ++k) env[e.outputs[k].get()] = out[k];
  }
  std::vector<Array> result;
  for (size_t i = 0; i < j.outvars.size(); ++i) {
    const Atom& a = j.outvars[i];
    if (a.is_literal()) {
      result.push_back(a.literal);
      continue;
    }
    result.push_back(read(a.var.get(), plan.outputs[i]));
  }
  return result;
}

namespace {

// The operand bytes of the collectives reshard() issues for one value of aval `a` (mirrors it).
double reshard_bytes(const Aval& a, const VS& from, const VS& to, const Mesh& mesh) {
  double local = static_cast<double>(itemsize(a.dtype));
  for (size_t d = 0; d < a.shape.size(); ++d)
    local *= static_cast<double>(a.shape[d]) / static_cast<double>(from.dims[d] >= 0 ? axis_n(mesh, from.dims[d]) : 1);
  double bytes = 0;
  VS cur = from;
  SumPlan sp = plan_sum(from, to);
  for (auto [d, split] : sp.scatter) {
    for (int k : VS::axes_of(split)) {
      bytes += local;
      local /= static_cast<double>(axis_n(mesh, k));
    }
    cur.dims[d] = split;
  }
  if (sp.psum) bytes += local;
  for (size_t d = 0; d < cur.dims.size(); ++d)
    if (cur.dims[d] >= 0 && cur.dims[d] != to.dims[d]) {
      std::vector<int> axes = VS::axes_of(cur.dims[d]);
      for (size_t i = axes.size(); i-- > common_prefix(cur.dims[d], to.dims[d]);) {  // one gather per axis
        bytes += local;
        local *= static_cast<double>(axis_n(mesh, axes[i]));
      }
    }
  return bytes;
}

}  // namespace

double plan_collective_bytes(const Jaxpr& j, const ShardingPlan& plan, const Mesh& mesh) {
  double bytes = 0;
  std::unordered_map<const Var*, std::vector<VS>> moved;
  auto read = [&](const Var* v, const VS& to) {
    const VS& have = plan.of.at(v);
    if (have == to) return;
    auto& m = moved[v];
    for (auto& s : m)
      if (s == to) return;
    m.push_back(to);
    bytes += reshard_bytes(v->aval, have, to, mesh);
  };
  for (size_t n = 0; n < j.eqns.size(); ++n) {
    const Eqn& e = j.eqns[n];
    const Step& st = plan.steps[n];
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (!e.inputs[i].is_literal()) read(e.inputs[i].var.get(), st.in[i]);
    if (!st.subs.empty()) {
      // a scan's body runs `length` times; a cond runs one branch (the dearest); a while's trip count is
      // unknown: one iteration (its predicate and body)
      double sub = 0;
      for (auto& b : st.subs) {
        double c = plan_collective_bytes(*b->body.jaxpr, b->plan, mesh);
        sub = e.prim == &while_p ? sub + c : std::max(sub, c);
      }
      bytes += e.prim == &scan_p ? sub * static_cast<double>(e.params.get_int("length")) : sub;
    }
    if (st.post != Step::kNone)
      for (size_t k = 0; k < e.outputs.size(); ++k) {
        double b = static_cast<double>(itemsize(e.outputs[k]->aval.dtype));
        for (size_t d = 0; d < e.outputs[k]->aval.shape.size(); ++d)
          b *= static_cast<double>(e.outputs[k]->aval.shape[d]) /
               static_cast<double>(st.out[k].dims[d] >= 0 ? axis_n(mesh, st.out[k].dims[d]) : 1);
        bytes += b;
      }
  }
  for (size_t i = 0; i < j.outvars.size(); ++i)
    if (!j.outvars[i].is_literal()) read(j.outvars[i].var.get(), plan.outputs[i]);
  return bytes;
}

std::string plan_str(const Jaxpr& j, const ShardingPlan& plan, const Mesh& mesh) {
  std::ostringstream os;
  os << "sharded over " << mesh.str() << "\n  inputs:";
  for (auto& s : plan.inputs) os << " " << s.str(mesh);
  os << "\n";
  for (size_t n = 0; n < j.eqns.size(); ++n) {
    const Eqn& e = j.eqns[n];
    const Step& st = plan.steps[n];
    os << "  " << e.prim->name << "(";
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      VS have = e.inputs[i].is_literal() ? VS::replicated(0) : plan.of.at(e.inputs[i].var.get());
      os << (i ? ", " : "") << st.in[i].str(mesh);
      if (!(have == st.in[i])) os << " <- " << have.str(mesh);
    }
    os << ") -> ";
    for (size_t k = 0; k < st.out.size(); ++k) os << (k ? ", " : "") << st.out[k].str(mesh);
    if (st.post != Step::kNone) os << (st.post == Step::kPmax ? " then pmax" : " then pmin");
    os << "\n";
  }
  os << "  outputs:";
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    os << " " << plan.outputs[i].str(mesh);
    const Atom& a = j.outvars[i];
    if (!a.is_literal() && !(plan.of.at(a.var.get()) == plan.outputs[i])) os << " <- " << plan.of.at(a.var.get()).str(mesh);
  }
  os << "\n";
  return os.str();
}

}  // namespace graft
