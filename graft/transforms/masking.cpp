// Masking over a batch dimension: aligning two traces, inferring the batch-dependent constants, the
// per-primitive rules for what combines rows, and the masked program.
#include "graft/transforms/masking.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "graft/compiler/jaxpr_text.h"
#include "graft/compiler/passes/passes.h"
#include "graft/core/trace.h"
#include "graft/prims/lax.h"
#include "graft/transforms/flat.h"

namespace graft {

namespace {

template <class... A>
[[noreturn]] void refuse(A&&... a) {
  fail<NotImplementedError>("batch polymorphism: ", std::forward<A>(a)...);
}

std::string eqn_str(const Jaxpr& j, size_t k) {
  const Eqn& e = j.eqns[k];
  std::ostringstream os;
  os << "equation " << k << " (" << e.prim->name;
  if (!e.outputs.empty()) os << " -> " << e.outputs[0]->aval.str();
  os << ")";
  return os.str();
}

bool same_bits(const Array& a, const Array& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape() || a.weak_type() != b.weak_type()) return false;
  // read on the host: a program traced under a GPU default device holds its constants there
  return std::memcmp(a.concretize("jit").raw_data(), b.concretize("jit").raw_data(), a.nbytes()) == 0;
}

// The batch axis of a value typed `a` at batch size b and `x` at batch size x.
BatchAxis axis_of(const Aval& a, int64_t b, const Aval& ax, int64_t x, const std::string& where) {
  if (a.dtype != ax.dtype || a.shape.size() != ax.shape.size())
    refuse(where, " is ", a.str(), " at batch size ", b, " but ", ax.str(), " at ", x);
  BatchAxis r;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    int64_t db = a.shape[i], dx = ax.shape[i];
    if (db == dx) continue;
    if (r.batched())
      refuse(where, " is ", a.str(), " at batch size ", b, " and ", ax.str(), " at ", x,
             ": two of its axes depend on the batch size");
    if (db % b != 0 || dx % x != 0 || db / b != dx / x)
      refuse(where, " is ", a.str(), " at batch size ", b, " and ", ax.str(), " at ", x, ": axis ", i,
             " is not a multiple of the batch size");
    r.axis = static_cast<int64_t>(i);
    r.factor = db / b;
  }
  return r;
}

// Parameter values equal, or integers that are the same multiple of the two batch sizes.
bool ints_match(int64_t p, int64_t q, int64_t b, int64_t x) {
  return p == q || (p > 0 && q > 0 && p % b == 0 && q % x == 0 && p / b == q / x);
}
bool lists_match(const IntList& p, const IntList& q, int64_t b, int64_t x) {
  if (p.size() != q.size()) return false;
  for (size_t i = 0; i < p.size(); ++i)
    if (!ints_match(p[i], q[i], b, x)) return false;
  return true;
}

bool param_matches(const ParamValue& u, const ParamValue& v, int64_t b, int64_t x) {
  if (u.index() != v.index()) return false;
  if (auto* p = std::get_if<int64_t>(&u)) return ints_match(*p, std::get<int64_t>(v), b, x);
  if (auto* p = std::get_if<IntList>(&u)) return lists_match(*p, std::get<IntList>(v), b, x);
  if (auto* p = std::get_if<Ref<const ParamObject>>(&u)) {
    const auto& q = std::get<Ref<const ParamObject>>(v);
    if (!*p || !q) return !*p && !q;
    if ((*p)->equals(*q)) return true;
    auto* tp = dynamic_cast<const lax::IntTuples*>(p->get());
    auto* tq = dynamic_cast<const lax::IntTuples*>(q.get());
    if (!tp || !tq || tp->items.size() != tq->items.size()) return false;
    for (size_t i = 0; i < tp->items.size(); ++i)
      if (!lists_match(tp->items[i], tq->items[i], b, x)) return false;
    return true;
  }
  if (auto* p = std::get_if<JaxprPtr>(&u)) {
    const auto& q = std::get<JaxprPtr>(v);
    return *p == q || (*p && q && same_program(**p, *q));
  }
  if (auto* p = std::get_if<JaxprList>(&u)) {
    const auto& q = std::get<JaxprList>(v);
    if (p->size() != q.size()) return false;
    for (size_t i = 0; i < p->size(); ++i)
      if (!((*p)[i] == q[i] || same_program(*(*p)[i], *q[i]))) return false;
    return true;
  }
  return u == v;
}

// Two traces of one function lined up: the batch axis of every variable of the first, and the
// literals that differ.
struct LiteralDiff {
  size_t eqn, input;
  Array at_b, at_x;
};
struct Aligned {
  std::unordered_map<const Var*, BatchAxis> axes;
  std::vector<BatchAxis> order;
  std::vector<LiteralDiff> literals;
  BatchAxis of(const Atom& a) const { return a.is_literal() ? BatchAxis{} : axes.at(a.var.get()); }
};

Aligned align(const ClosedJaxpr& jb, int64_t b, const ClosedJaxpr& jx, int64_t x) {
  const Jaxpr& A = *jb.jaxpr;
  const Jaxpr& X = *jx.jaxpr;
  if (A.constvars.size() != X.constvars.size() || A.invars.size() != X.invars.size() ||
      A.eqns.size() != X.eqns.size() || A.outvars.size() != X.outvars.size())
    refuse("the program has ", A.eqns.size(), " equations at batch size ", b, " but ", X.eqns.size(), " at ", x,
           " (the function's structure depends on the batch size)");
  Aligned al;
  std::unordered_map<const Var*, const Var*> x_to_b;
  auto pair = [&](const VarRef& vb, const VarRef& vx, const std::string& where) {
    BatchAxis ax = axis_of(vb->aval, b, vx->aval, x, where);
    al.axes[vb.get()] = ax;
    al.order.push_back(ax);
    x_to_b[vx.get()] = vb.get();
    return ax;
  };
  for (size_t i = 0; i < A.constvars.size(); ++i) {
    std::string where = "constant " + std::to_string(i);
    BatchAxis ax = pair(A.constvars[i], X.constvars[i], where);
    const Array &cb = jb.consts[i], &cx = jx.consts[i];
    if (!ax.batched()) {
      if (!same_bits(cb, cx)) refuse(where, " (", cb.aval().str(), ") has other values at batch size ", x);
      continue;
    }
    // a constant of batch-dependent shape must agree on the rows both sizes have
    if (ax.axis != 0)
      refuse(where, " is ", cb.aval().str(), ": its batch axis is ", ax.axis, ", not 0");
    size_t row = cb.nbytes() / static_cast<size_t>(cb.shape()[0]);
    size_t rows = static_cast<size_t>(std::min(cb.shape()[0], cx.shape()[0]));
    if (std::memcmp(cb.concretize("jit").raw_data(), cx.concretize("jit").raw_data(), row * rows) != 0)
      refuse(where, " (", cb.aval().str(), ") differs from the one at batch size ", x, " on their common rows");
  }
  for (size_t i = 0; i < A.invars.size(); ++i) pair(A.invars[i], X.invars[i], "input " + std::to_string(i));
  auto same_atom = [&](const Atom& a, const Atom& c) {
    if (a.is_literal() != c.is_literal()) return false;
    return a.is_literal() || x_to_b.at(c.var.get()) == a.var.get();
  };
  for (size_t k = 0; k < A.eqns.size(); ++k) {
    const Eqn &e = A.eqns[k], &f = X.eqns[k];
    if (e.prim != f.prim || e.inputs.size() != f.inputs.size() || e.outputs.size() != f.outputs.size())
      refuse(eqn_str(A, k), " is ", f.prim->name, " at batch size ", x,
             " (the function's structure depends on the batch size)");
    bool params_ok = e.params.size() == f.params.size();
    for (auto ie = e.params.begin(), fe = f.params.begin(); params_ok && ie != e.params.end(); ++ie, ++fe)
      params_ok = std::strcmp(ie->first, fe->first) == 0 && param_matches(ie->second, fe->second, b, x);
    if (!params_ok) refuse(eqn_str(A, k), ": its parameters depend on the batch size in another way than its shapes");
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      if (!same_atom(e.inputs[i], f.inputs[i]))
        refuse(eqn_str(A, k), " reads other operands at batch size ", x, " (the structure depends on the batch size)");
      if (e.inputs[i].is_literal() && !same_bits(e.inputs[i].literal, f.inputs[i].literal))
        al.literals.push_back({k, i, e.inputs[i].literal, f.inputs[i].literal});
    }
    for (size_t o = 0; o < e.outputs.size(); ++o) pair(e.outputs[o], f.outputs[o], eqn_str(A, k));
  }
  for (size_t i = 0; i < A.outvars.size(); ++i) {
    const Atom &a = A.outvars[i], &c = X.outvars[i];
    if (!same_atom(a, c) || (a.is_literal() && !same_bits(a.literal, c.literal)))
      refuse("output ", i, " differs at batch size ", x);
  }
  return al;
}

// ---- constants that depend on the batch size -----------------------------------------------------------

Array formula_value(const SizeFormula& s, const Array& n) {
  DType w = is_floating(s.dtype) ? DType::f64 : DType::i64;
  Array v = lax::convert_element_type(n, w);
  v = lax::add(lax::mul(v, Array::scalar(s.f, w)), Array::scalar(s.d, w));
  if (s.reciprocal) v = lax::div(Array::scalar(1.0, w), v);
  return lax::convert_element_type(v, s.dtype, s.weak);
}

double as_double(const Array& x) { return lax::convert_element_type(x, DType::f64).item<double>(); }

SizeFormula infer_formula(const LiteralDiff& l, int64_t b, int64_t x, const std::string& where) {
  TraceScope eager(eval_trace());
  SizeFormula s;
  s.eqn = l.eqn;
  s.input = l.input;
  s.dtype = l.at_b.dtype();
  s.weak = l.at_b.weak_type();
  if (l.at_b.ndim() == 0 && s.dtype != DType::bool_) {
    double vb = as_double(l.at_b), vx = as_double(l.at_x);
    // integer coefficients (a count, a count minus ddof, its reciprocal): two sizes fit any line, so
    // the coefficients are rounded and the formula must then give both constants bit for bit
    auto fits = [&](bool reciprocal) {
      double ub = reciprocal ? 1.0 / vb : vb, ux = reciprocal ? 1.0 / vx : vx;
      s.reciprocal = reciprocal;
      s.f = std::round((ub - ux) / static_cast<double>(b - x));
      s.d = std::round(ub - s.f * static_cast<double>(b));
      if (!std::isfinite(s.f) || !std::isfinite(s.d) || s.f == 0) return false;
      return same_bits(s.at(b), l.at_b) && same_bits(s.at(x), l.at_x);
    };
    if (fits(false) || (is_floating(s.dtype) && vb != 0 && vx != 0 && fits(true))) return s;
  }
  std::ostringstream vb, vx;
  vb << l.at_b;
  vx << l.at_x;
  refuse(where, " uses the constant ", vb.str(), " at batch size ", b, " and ", vx.str(), " at ", x,
         ", not a formula f*b + d or 1/(f*b + d) of the batch size");
}

// ---- what combines rows ----------------------------------------------------------------------------------

enum class Fill { zero, one, lowest, highest };

Array fill_scalar(Fill f, DType d) {
  if (f == Fill::zero) return Array::scalar(0, d);
  if (f == Fill::one) return Array::scalar(1, d);
  bool hi = f == Fill::highest;
  if (is_floating(d)) return Array::scalar(hi ? INFINITY : -INFINITY, d);
  auto make = [&](auto v) { return Array::from_data(&v, {}, d); };
  switch (d) {
    case DType::bool_: return make(hi);
    case DType::i8: return make(hi ? std::numeric_limits<int8_t>::max() : std::numeric_limits<int8_t>::lowest());
    case DType::i16: return make(hi ? std::numeric_limits<int16_t>::max() : std::numeric_limits<int16_t>::lowest());
    case DType::i32: return make(hi ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int32_t>::lowest());
    case DType::i64: return make(hi ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::lowest());
    case DType::u8: return make(hi ? std::numeric_limits<uint8_t>::max() : uint8_t{0});
    case DType::u16: return make(hi ? std::numeric_limits<uint16_t>::max() : uint16_t{0});
    case DType::u32: return make(hi ? std::numeric_limits<uint32_t>::max() : uint32_t{0});
    case DType::u64: return make(hi ? std::numeric_limits<uint64_t>::max() : uint64_t{0});
    default: fail<TypeError>("batch polymorphism: no fill value for ", d, " (complex numbers have no order)");
  }
}

struct MaskInput {
  size_t input;
  Fill fill;
};

bool contains(const IntList& l, int64_t v) { return std::find(l.begin(), l.end(), v) != l.end(); }
int64_t index_in(const IntList& l, int64_t v) {
  auto it = std::find(l.begin(), l.end(), v);
  return it == l.end() ? -1 : static_cast<int64_t>(it - l.begin());
}
int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}
// The operand dimensions that are windows of a gather/scatter (neither collapsed nor batching), in order.
IntList window_dims(size_t rank, const IntList& collapsed, const IntList& batching) {
  IntList w;
  for (int64_t i = 0; i < static_cast<int64_t>(rank); ++i)
    if (!contains(collapsed, i) && !contains(batching, i)) w.push_back(i);
  return w;
}

// Which operands of equation k must be masked, and with what; throws when masking cannot express it.
std::vector<MaskInput> plan(const Jaxpr& j, size_t k, const std::vector<BatchAxis>& in, const std::vector<BatchAxis>& out) {
  const Eqn& e = j.eqns[k];
  const std::string name = e.prim->name;
  const Params& P = e.params;
  bool any_in = std::any_of(in.begin(), in.end(), [](auto& a) { return a.batched(); });
  bool any_out = std::any_of(out.begin(), out.end(), [](auto& a) { return a.batched(); });
  if (!any_in && !any_out) return {};
  auto no = [&](const std::string& why) { refuse(eqn_str(j, k), ": ", why); };
  const Shape& s0 = e.inputs.empty() ? Shape{} : e.inputs[0].aval().shape;
  BatchAxis a0 = in.empty() ? BatchAxis{} : in[0];
  if (!any_in) {
    // values of batch-dependent shape made from nothing: the first rows are what a smaller batch has
    if (name == "iota" || name == "broadcast_in_dim") return {};
    no("it makes a value of batch-dependent shape that masking has no rule for");
  }
  auto all_same = [&] {
    BatchAxis ref = a0.batched() ? a0 : BatchAxis{};
    for (auto& a : in)
      if (a.batched()) ref = a;
    for (auto& a : in)
      if (a.batched() && !(a == ref)) return false;
    for (auto& a : out)
      if (a.batched() && !(a == ref)) return false;
    return true;
  };
  if (e.prim->has(kElementwise) || name == "threefry2x32") {
    if (!all_same()) no("its operands have their batch axes in different places");
    return {};
  }
  if (name == "broadcast_in_dim") {
    const IntList& bd = P.get_ints("broadcast_dimensions");
    if (!out[0].batched() || bd[static_cast<size_t>(a0.axis)] != out[0].axis || a0.factor != out[0].factor)
      no("the batch axis moves");
    return {};
  }
  if (name == "reshape") {
    const Shape& so = e.outputs[0]->aval.shape;
    BatchAxis o = out[0];
    // rows stay rows when the dimensions before the batch axis and the row sizes agree
    if (!o.batched() || prod(s0, 0, static_cast<size_t>(a0.axis)) != prod(so, 0, static_cast<size_t>(o.axis)) ||
        a0.factor * prod(s0, static_cast<size_t>(a0.axis) + 1, s0.size()) !=
            o.factor * prod(so, static_cast<size_t>(o.axis) + 1, so.size()))
      no("it regroups the rows of the batch");
    return {};
  }
  if (name == "transpose") {
    const IntList& perm = P.get_ints("permutation");
    if (!out[0].batched() || perm[static_cast<size_t>(out[0].axis)] != a0.axis) no("the batch axis moves");
    return {};
  }
  if (name == "squeeze") return {};
  if (name == "rev") {
    if (contains(P.get_ints("dimensions"), a0.axis)) no("it reverses the batch axis");
    return {};
  }
  static const std::unordered_map<std::string, Fill> reductions = {
      {"reduce_sum", Fill::zero},     {"reduce_prod", Fill::one},  {"reduce_max", Fill::lowest},
      {"reduce_min", Fill::highest},  {"reduce_and", Fill::highest}, {"reduce_or", Fill::lowest},
      {"argmax", Fill::lowest},       {"argmin", Fill::highest}};
  if (auto it = reductions.find(name); it != reductions.end()) {
    if (contains(P.get_ints("axes"), a0.axis)) return {{0, it->second}};
    return {};
  }
  static const std::unordered_map<std::string, Fill> scans = {
      {"cumsum", Fill::zero}, {"cummax", Fill::lowest}, {"cummin", Fill::highest}};
  if (auto it = scans.find(name); it != scans.end()) {
    // a forward scan's first rows only read earlier rows; a reverse one reads the padding
    if (P.get_int("axis") == a0.axis && P.get_bool("reverse")) return {{0, it->second}};
    return {};
  }
  if (name == "sort") {
    if (!all_same()) no("its operands have their batch axes in different places");
    if (P.get_int("dimension") == a0.axis) no("it sorts along the batch axis");
    return {};
  }
  if (name == "slice") {
    if (out[0].batched()) {
      size_t ax = static_cast<size_t>(a0.axis);
      if (out[0].axis != a0.axis || P.get_ints("start_indices")[ax] != 0 || P.get_ints("strides")[ax] != 1)
        no("it slices the batch axis other than from its start");
    }
    // a fixed slice of rows reads rows the smaller batch has too (its trace checked the bounds)
    return {};
  }
  if (name == "pad") {
    const auto& cfg = P.get_object<lax::IntTuples>("padding_config").items[static_cast<size_t>(a0.axis)];
    if (cfg[0] != 0 || cfg[1] != 0 || cfg[2] != 0) no("it pads the batch axis");
    if (in.size() > 1 && in[1].batched()) no("its padding value depends on the batch");
    return {};
  }
  if (name == "concatenate") {
    if (!all_same()) no("its operands have their batch axes in different places");
    for (auto& a : in)
      if (!a.batched()) no("it joins batched and unbatched values");
    if (P.get_int("dimension") == a0.axis) no("it concatenates along the batch axis");
    return {};
  }
  if (name == "dynamic_slice") {
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i].batched()) no("its start indices depend on the batch");
    if (!a0.batched() || !out[0].batched() || P.get_ints("slice_sizes")[static_cast<size_t>(a0.axis)] != s0[static_cast<size_t>(a0.axis)])
      no("it slices the batch axis at a run-time position");
    return {};
  }
  if (name == "dynamic_update_slice") {
    for (size_t i = 2; i < in.size(); ++i)
      if (in[i].batched()) no("its start indices depend on the batch");
    if (!a0.batched() || !in[1].batched() || !(in[1] == a0)) no("it writes rows of the batch at a run-time position");
    return {};
  }
  if (name == "dot_general") {
    const auto& dn = P.get_object<lax::DotDims>("dimension_numbers");
    BatchAxis l = in[0], r = in[1];
    if (l.batched()) {
      int64_t c = index_in(dn.lhs_contract, l.axis), bt = index_in(dn.lhs_batch, l.axis);
      if (c >= 0) {
        // a contraction over the batch: the padded rows must add nothing
        if (!r.batched() || dn.rhs_contract[static_cast<size_t>(c)] != r.axis || r.factor != l.factor)
          no("it contracts the batch axis with another axis");
        return {{0, Fill::zero}, {1, Fill::zero}};
      }
      if (bt >= 0 && (!r.batched() || dn.rhs_batch[static_cast<size_t>(bt)] != r.axis)) no("the batch axes do not correspond");
    }
    if (r.batched() && (contains(dn.rhs_contract, r.axis) || (contains(dn.rhs_batch, r.axis) && !l.batched())))
      no("the batch axes do not correspond");
    return {};
  }
  if (name == "conv_general_dilated") {
    const auto& dn = P.get_object<lax::ConvDims>("dimension_numbers");
    BatchAxis l = in[0], r = in[1];
    bool groups = P.get_int("feature_group_count") != 1 || P.get_int("batch_group_count") != 1;
    if (l.batched() && !r.batched() && l.axis == dn.lhs_spec[0] && P.get_int("batch_group_count") == 1) return {};
    if (!l.batched() && r.batched() && r.axis == dn.rhs_spec[0] && !groups) return {};
    if (l.batched() && r.batched() && l.axis == dn.lhs_spec[1] && r.axis == dn.rhs_spec[1] && l.factor == r.factor &&
        !groups)
      return {{0, Fill::zero}, {1, Fill::zero}};  // the kernel's gradient: a contraction over the batch
    no("masking has no rule for this use of the batch axes in a convolution");
  }
  if (name == "reduce_window_sum" || name == "reduce_window_max" || name == "reduce_window_min" ||
      name == "select_and_gather_add" || name == "select_and_scatter_add") {
    size_t ax = static_cast<size_t>(a0.axis);
    if (!all_same()) no("its operands have their batch axes in different places");
    bool one = P.get_ints("window_dimensions")[ax] == 1 && P.get_ints("window_strides")[ax] == 1;
    const auto& pad = P.get_object<lax::IntTuples>("padding").items[ax];
    one = one && pad[0] == 0 && pad[1] == 0;
    for (const char* key : {"base_dilation", "window_dilation"})
      if (P.has(key)) one = one && P.get_ints(key)[ax] == 1;
    if (!one) no("its window spans rows of the batch");
    return {};
  }
  if (name == "gather") {
    const auto& dn = P.get_object<lax::GatherDims>("dimension_numbers");
    BatchAxis op = in[0], idx = in[1];
    if (!op.batched()) return {};  // a lookup into a fixed table, one row of indices at a time
    int64_t bt = index_in(dn.operand_batching_dims, op.axis);
    if (bt >= 0) {
      if (!idx.batched() || dn.start_indices_batching_dims[static_cast<size_t>(bt)] != idx.axis)
        no("the batch axes of operand and indices do not correspond");
      return {};
    }
    IntList w = window_dims(s0.size(), dn.collapsed_slice_dims, dn.operand_batching_dims);
    if (!idx.batched() && contains(w, op.axis) &&
        P.get_ints("slice_sizes")[static_cast<size_t>(op.axis)] == s0[static_cast<size_t>(op.axis)])
      return {};  // whole batches sliced out along other axes
    no("it indexes along the batch axis");
  }
  if (name == "scatter" || name == "scatter_add" || name == "scatter_mul" || name == "scatter_min" ||
      name == "scatter_max") {
    const auto& dn = P.get_object<lax::ScatterDims>("dimension_numbers");
    BatchAxis op = in[0], idx = in[1], up = in[2];
    if (!op.batched()) {
      // rows of updates land in a fixed array: the padded rows must add nothing
      static const std::unordered_map<std::string, Fill> ident = {
          {"scatter_add", Fill::zero}, {"scatter_mul", Fill::one}, {"scatter_min", Fill::highest},
          {"scatter_max", Fill::lowest}};
      auto it = ident.find(name);
      if (it == ident.end()) no("the padded rows would overwrite values");
      return {{2, it->second}};
    }
    int64_t bt = index_in(dn.operand_batching_dims, op.axis);
    if (bt >= 0) {
      if (!idx.batched() || dn.scatter_indices_batching_dims[static_cast<size_t>(bt)] != idx.axis)
        no("the batch axes of operand and indices do not correspond");
      return {};
    }
    IntList w = window_dims(s0.size(), dn.inserted_window_dims, dn.operand_batching_dims);
    int64_t wi = index_in(w, op.axis);
    if (!idx.batched() && wi >= 0 && up.batched() && dn.update_window_dims[static_cast<size_t>(wi)] == up.axis)
      return {};  // whole batches written along other axes
    no("it writes along the batch axis");
  }
  if (e.prim->has(kHigherOrder)) no("masking does not look inside control flow yet (the batch flows into it)");
  if (e.prim->has(kCollective)) no("masking has no rule for collectives over batched values");
  refuse(eqn_str(j, k), ": masking has no rule for this primitive");
}

// x with the rows at or past n (the flattened ones past factor·n) replaced by `fill`.
Array mask_rows(const Array& x, BatchAxis ax, const Array& n, Fill fill) {
  int64_t dim = x.shape()[static_cast<size_t>(ax.axis)];
  Array lim = ax.factor == 1 ? n : lax::mul(n, Array::scalar(static_cast<double>(ax.factor), DType::i32));
  Array keep = lax::lt(lax::iota(DType::i32, {dim}, 0), lim);
  keep = lax::broadcast_in_dim(keep, x.shape(), {ax.axis});
  Array f = lax::broadcast_in_dim(fill_scalar(fill, x.dtype()), x.shape(), {});
  return lax::select(keep, x, f);
}

}  // namespace

Array SizeFormula::at(int64_t n) const {
  TraceScope eager(eval_trace());
  return formula_value(*this, Array::scalar(static_cast<double>(n), DType::i32));
}

MaskedProgram mask_batch(const ClosedJaxpr& at_b, int64_t b, const ClosedJaxpr& at_p, int64_t p) {
  if (b == p || b <= 0 || p <= 0) fail<ValueError>("mask_batch: needs two different positive batch sizes, got ", b, " and ", p);
  MaskedProgram m;
  m.bucket = b;
  m.reference = compiler::passes::inline_calls(at_b);
  const Jaxpr& J = *m.reference.jaxpr;
  Aligned al = align(m.reference, b, compiler::passes::inline_calls(at_p), p);
  m.var_axes = al.order;
  for (auto& l : al.literals) m.formulas.push_back(infer_formula(l, b, p, eqn_str(J, l.eqn)));
  for (auto& a : J.outvars) m.out_axes.push_back(al.of(a));

  // the rules first, so that a refusal costs no tracing
  std::vector<std::vector<MaskInput>> masks(J.eqns.size());
  for (size_t k = 0; k < J.eqns.size(); ++k) {
    std::vector<BatchAxis> in, out;
    for (auto& a : J.eqns[k].inputs) in.push_back(al.of(a));
    for (auto& v : J.eqns[k].outputs) out.push_back(al.axes.at(v.get()));
    masks[k] = plan(J, k, in, out);
  }
  std::unordered_map<uint64_t, const SizeFormula*> formula_at;
  for (auto& f : m.formulas) formula_at[(static_cast<uint64_t>(f.eqn) << 16) | f.input] = &f;

  std::vector<Aval> in_avals = J.in_avals();
  in_avals.emplace_back(Shape{}, DType::i32);
  const ClosedJaxpr& ref = m.reference;
  FlatFn fn = [&](const std::vector<Array>& args) {
    std::unordered_map<const Var*, Array> env;
    for (size_t i = 0; i < J.constvars.size(); ++i) env[J.constvars[i].get()] = ref.consts[i];
    for (size_t i = 0; i < J.invars.size(); ++i) env[J.invars[i].get()] = args[i];
    const Array& n = args.back();
    auto read = [&](const Atom& a) { return a.is_literal() ? a.literal : env.at(a.var.get()); };
    for (size_t k = 0; k < J.eqns.size(); ++k) {
      const Eqn& e = J.eqns[k];
      std::vector<Array> ins;
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        auto f = formula_at.find((static_cast<uint64_t>(k) << 16) | i);
        ins.push_back(f == formula_at.end() ? read(e.inputs[i]) : formula_value(*f->second, n));
      }
      for (auto& mi : masks[k]) ins[mi.input] = mask_rows(ins[mi.input], al.of(e.inputs[mi.input]), n, mi.fill);
      Arrays outs = bind(*e.prim, std::span<const Array>(ins.data(), ins.size()), e.params);
      for (size_t o = 0; o < e.outputs.size(); ++o) env[e.outputs[o].get()] = outs[o];
    }
    std::vector<Array> res;
    for (auto& a : J.outvars) res.push_back(read(a));
    return res;
  };
  m.jaxpr = make_jaxpr_flat(fn, in_avals, "mask");
  return m;
}

void check_batch_size(const MaskedProgram& m, const ClosedJaxpr& at_n, int64_t n) {
  if (n == m.bucket) return;
  ClosedJaxpr jn = compiler::passes::inline_calls(at_n);
  Aligned al = align(m.reference, m.bucket, jn, n);
  const Jaxpr& J = *m.reference.jaxpr;
  if (al.order != m.var_axes) {
    for (size_t i = 0; i < al.order.size() && i < m.var_axes.size(); ++i)
      if (!(al.order[i] == m.var_axes[i]))
        refuse("value ", i, " of the program has its batch axis elsewhere at batch size ", n);
    refuse("the program differs at batch size ", n);
  }
  auto is_formula = [&](size_t k, size_t i) {
    return std::any_of(m.formulas.begin(), m.formulas.end(), [&](auto& f) { return f.eqn == k && f.input == i; });
  };
  for (auto& l : al.literals)
    if (!is_formula(l.eqn, l.input)) {
      std::ostringstream vb, vn;
      vb << l.at_b;
      vn << l.at_x;
      refuse(eqn_str(J, l.eqn), " uses the constant ", vn.str(), " at batch size ", n, " where it used ", vb.str(),
             " at ", m.bucket, " and did not change at the size the program was built from");
    }
  for (auto& f : m.formulas) {
    const Array& lit = jn.jaxpr->eqns[f.eqn].inputs[f.input].literal;
    Array want = f.at(n);
    if (!same_bits(want, lit)) {
      std::ostringstream a, c;
      a << lit;
      c << want;
      refuse(eqn_str(J, f.eqn), " uses the constant ", a.str(), " at batch size ", n, ", not the ", c.str(),
             " its formula gives");
    }
  }
}

}  // namespace graft
