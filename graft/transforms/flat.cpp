#include "graft/transforms/flat.h"

#include "graft/runtime/collectives.h"

#include "graft/core/trace.h"
#include "graft/interp/batching.h"
#include "graft/interp/jvp.h"
#include "graft/interp/staging.h"
#include "graft/interp/transpose.h"
#include "graft/prims/lax.h"

namespace graft {

namespace {
// Ends a trace when the transformation returns, even by exception (later uses of its tracers are
// then reported as leaks instead of silently misbehaving).
struct EndOnExit {
  Trace* t;
  ~EndOnExit() { t->end(); }
};

Array zeros_for(const Aval& a) { return lax::zeros(Aval(a.shape, a.dtype)); }
}  // namespace

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& f, const std::vector<Array>& primals,
                                                         const std::vector<Array>& tangents) {
  if (primals.size() != tangents.size())
    fail<ValueError>("jvp: got ", primals.size(), " primals and ", tangents.size(), " tangents");
  for (size_t i = 0; i < primals.size(); ++i) {
    if (!tangents[i].valid()) continue;
    if (tangents[i].shape() != primals[i].shape() || tangents[i].dtype() != primals[i].dtype())
      fail<TypeError>("jvp: tangent ", i, " has type ", tangents[i].aval().str(), " but its primal has type ",
                      primals[i].aval().str(), "; primal and tangent types must match");
  }
  auto J = make_ref<JVPTrace>(Ref<Trace>(current_trace()), nullptr, "jvp");
  std::vector<Array> outs;
  {
    EndOnExit end{J.get()};
    std::vector<Array> ins;
    for (size_t i = 0; i < primals.size(); ++i)
      ins.push_back(is_inexact(primals[i].dtype()) ? J->make(primals[i], tangents[i]) : primals[i]);
    TraceScope scope(J.get());
    outs = f(ins);
  }
  std::vector<Array> po, to;
  for (auto& o : outs) {
    auto [p, t] = J->unpack(o);
    to.push_back(t.valid() ? t : zeros_for(p.aval()));
    po.push_back(std::move(p));
  }
  return {po, to};
}

Linearized linearize_flat(const FlatFn& f, const std::vector<Array>& primals, const std::vector<bool>& diff,
                          bool instantiate) {
  Ref<Trace> parent(current_trace());
  auto S = make_ref<StagingTrace>(parent, "grad", /*forward_known=*/true);
  auto L = make_ref<JVPTrace>(parent, S.get(), "grad");
  Linearized r;
  std::vector<Array> outs;
  {
    EndOnExit end_s{S.get()}, end_l{L.get()};
    std::vector<Array> ins;
    for (size_t i = 0; i < primals.size(); ++i) {
      if (!primals[i].valid()) fail<ValueError>("grad: argument ", i, " is a null array");
      Array t;
      if (is_inexact(primals[i].dtype()) && (diff.empty() || diff[i])) {
        t = S->new_arg(primals[i].aval());
        r.in_index.push_back(static_cast<int>(i));
        r.in_avals.push_back(primals[i].aval());
      }
      ins.push_back(L->make(primals[i], t));
    }
    {
      TraceScope scope(L.get());
      outs = f(ins);
    }
    std::vector<Array> touts;
    for (size_t i = 0; i < outs.size(); ++i) {
      auto [p, t] = L->unpack(outs[i]);
      if (!t.valid() && instantiate && is_inexact(p.dtype())) {
        TraceScope eager(eval_trace());  // a constant of the linear program, not a value of the parent
        t = zeros_for(p.aval());
      }
      if (t.valid()) {
        touts.push_back(t);
        r.out_index.push_back(static_cast<int>(i));
        r.out_avals.push_back(p.aval());
      }
      r.outs.push_back(std::move(p));
    }
    r.linear = S->finish(touts);
  }
  return r;
}

std::pair<std::vector<Array>, FlatFn> linearize_fn(const FlatFn& f, const std::vector<Array>& primals) {
  auto lin = std::make_shared<Linearized>(linearize_flat(f, primals, {}, /*instantiate=*/true));
  std::vector<Aval> in_avals;
  for (auto& p : primals) in_avals.push_back(p.aval());
  FlatFn f_jvp = [lin, in_avals](const std::vector<Array>& tangents) {
    if (tangents.size() != in_avals.size())
      fail<ValueError>("linearize: the linearized function takes ", in_avals.size(), " tangents, got ",
                       tangents.size());
    std::vector<Array> lin_in;
    for (size_t k = 0; k < lin->in_index.size(); ++k) {
      const Array& t = tangents[static_cast<size_t>(lin->in_index[k])];
      const Aval& a = lin->in_avals[k];
      if (t.valid() && (t.shape() != a.shape || t.dtype() != a.dtype))
        fail<TypeError>("linearize: tangent ", lin->in_index[k], " has type ", t.aval().str(), " but the primal has type ",
                        a.str());
      lin_in.push_back(t.valid() ? t : zeros_for(a));
    }
    Arrays lin_out = eval_jaxpr(lin->linear, lin_in);
    std::vector<Array> result(lin->outs.size());
    for (size_t k = 0; k < lin->out_index.size(); ++k) result[static_cast<size_t>(lin->out_index[k])] = lin_out[k];
    for (size_t i = 0; i < result.size(); ++i)
      if (!result[i].valid()) result[i] = zeros_for(lin->outs[i].aval());
    return result;
  };
  return {lin->outs, f_jvp};
}

FlatFn linear_transpose_fn(const FlatFn& f, const std::vector<Aval>& in_avals) {
  for (size_t i = 0; i < in_avals.size(); ++i)
    if (!is_inexact(in_avals[i].dtype))
      fail<TypeError>("linear_transpose: argument ", i, " has type ", in_avals[i].str(),
                      "; a linear function takes floating arguments");
  auto j = std::make_shared<ClosedJaxpr>(make_jaxpr_flat(f, in_avals, "linear_transpose"));
  auto t = std::make_shared<ClosedJaxpr>(transpose_jaxpr(*j, std::vector<bool>(in_avals.size(), true)));
  std::vector<Aval> out_avals = j->out_avals();
  return [t, out_avals](const std::vector<Array>& cts) {
    if (cts.size() != out_avals.size())
      fail<ValueError>("linear_transpose: the transpose takes ", out_avals.size(), " cotangents, got ", cts.size());
    std::vector<Array> in;
    for (size_t i = 0; i < cts.size(); ++i) {
      if (cts[i].valid() && (cts[i].shape() != out_avals[i].shape || cts[i].dtype() != out_avals[i].dtype))
        fail<TypeError>("linear_transpose: cotangent ", i, " has type ", cts[i].aval().str(), " but the output has type ",
                        out_avals[i].str());
      in.push_back(cts[i].valid() ? cts[i] : zeros_for(out_avals[i]));
    }
    Arrays r = eval_jaxpr(*t, in);
    return std::vector<Array>(r.begin(), r.end());
  };
}

std::vector<Aval> eval_shape_flat(const FlatFn& f, const std::vector<Aval>& in_avals) {
  return make_jaxpr_flat(f, in_avals, "eval_shape").out_avals();
}

VjpResult vjp_flat(const FlatFn& f, const std::vector<Array>& primals) {
  auto lin = std::make_shared<Linearized>(linearize_flat(f, primals));
  std::vector<Aval> in_avals, out_avals;
  for (auto& p : primals) in_avals.push_back(p.aval());
  for (auto& o : lin->outs) out_avals.push_back(o.aval());
  VjpResult r;
  r.outs = lin->outs;
  r.pullback = [lin, in_avals, out_avals](const std::vector<Array>& cts) {
    if (cts.size() != out_avals.size())
      fail<ValueError>("vjp: the pullback takes ", out_avals.size(), " cotangents, got ", cts.size());
    for (size_t i = 0; i < cts.size(); ++i)
      if (cts[i].valid() && (cts[i].shape() != out_avals[i].shape || cts[i].dtype() != out_avals[i].dtype))
        fail<TypeError>("vjp: cotangent ", i, " has type ", cts[i].aval().str(), " but the output has type ",
                        out_avals[i].str());
    std::vector<Array> lin_cts;
    for (int k : lin->out_index) lin_cts.push_back(cts[static_cast<size_t>(k)]);
    Arrays ct_in = backward_pass(*lin->linear.jaxpr, lin->linear.consts, lin_cts);
    std::vector<Array> result;
    result.resize(in_avals.size());
    for (size_t k = 0; k < lin->in_index.size(); ++k) result[static_cast<size_t>(lin->in_index[k])] = ct_in[k];
    for (size_t i = 0; i < result.size(); ++i)
      if (!result[i].valid()) result[i] = zeros_for(in_avals[i]);
    return result;
  };
  return r;
}

namespace {
// f under a BatchTrace: each output with its batch dimension (kNotMapped: the same on every lane).
std::vector<std::pair<Array, int64_t>> vmap_core(const FlatFn& f, const std::vector<Array>& args,
                                                 const std::vector<std::optional<int64_t>>& in_axes,
                                                 const std::string& axis_name, std::optional<int64_t> axis_size,
                                                 int64_t& size_out) {
  if (in_axes.size() != args.size())
    fail<ValueError>("vmap: in_axes has ", in_axes.size(), " entries for ", args.size(), " array arguments");
  std::optional<int64_t> size = axis_size;
  std::vector<int64_t> axes(args.size(), kNotMapped);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!in_axes[i]) continue;
    int64_t ax = normalize_axis(*in_axes[i], args[i].ndim(), "vmap in_axes");
    axes[i] = ax;
    int64_t n = args[i].shape()[ax];
    if (size && *size != n)
      fail<ValueError>("vmap got inconsistent sizes for the mapped axis: argument ", i, " (", args[i].aval().str(),
                       ") has size ", n, " along axis ", ax, ", expected ", *size);
    size = n;
  }
  if (!size) fail<ValueError>("vmap must have at least one non-None value in in_axes (or an axis_size)");
  size_out = *size;
  auto B = make_ref<BatchTrace>(Ref<Trace>(current_trace()), BatchInfo{*size, axis_name});
  std::vector<Array> outs;
  {
    std::optional<AxisScope> named;  // collectives inside find the axis's size by its name
    if (!axis_name.empty()) named.emplace(AxisFrame{axis_name, *size, nullptr});
    EndOnExit end{B.get()};
    std::vector<Array> ins;
    for (size_t i = 0; i < args.size(); ++i) ins.push_back(B->make(args[i], axes[i]));
    TraceScope scope(B.get());
    outs = f(ins);
  }
  std::vector<std::pair<Array, int64_t>> r;
  for (auto& o : outs) r.push_back(B->unpack(o));
  return r;
}

// v with a new axis of `size` at `pos` (an output the same on every lane).
Array broadcast_new_axis(const Array& v, int64_t pos, int64_t size) {
  Shape s = v.shape();
  s.insert(s.begin() + pos, size);
  Axes bd;
  for (int64_t k = 0; k < v.ndim(); ++k) bd.push_back(k < pos ? k : k + 1);
  return lax::broadcast_in_dim(v, s, bd);
}
}  // namespace

std::vector<Array> vmap_flat(const FlatFn& f, const std::vector<Array>& args,
                             const std::vector<std::optional<int64_t>>& in_axes,
                             const std::vector<std::optional<int64_t>>& out_axes, const std::string& axis_name,
                             std::optional<int64_t> axis_size) {
  int64_t size = 0;
  auto outs = vmap_core(f, args, in_axes, axis_name, axis_size, size);
  std::vector<Array> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    auto& [v, d] = outs[i];
    std::optional<int64_t> want = out_axes.empty() ? std::optional<int64_t>(0) : out_axes[out_axes.size() == 1 ? 0 : i];
    if (!want) {  // out_axes None: the same on every lane, returned once
      if (d != kNotMapped)
        fail<ValueError>("vmap: output ", i, " (", v.aval().str(), ") varies along the mapped axis",
                         axis_name.empty() ? std::string() : " '" + axis_name + "'",
                         " but its out_axes is None (it must be invariant: a psum or pmean of it is)");
      result.push_back(v);
    } else if (d == kNotMapped) {
      // an output that does not depend on the mapped inputs is broadcast along the new axis
      result.push_back(broadcast_new_axis(v, normalize_axis(*want, v.ndim() + 1, "vmap out_axes"), size));
    } else {
      result.push_back(lax::moveaxis(v, d, normalize_axis(*want, v.ndim(), "vmap out_axes")));
    }
  }
  return result;
}

ClosedJaxpr make_jaxpr_flat(const FlatFn& f, const std::vector<Aval>& in_avals, const std::string& kind) {
  auto S = make_ref<StagingTrace>(Ref<Trace>(current_trace()), kind);
  EndOnExit end{S.get()};
  std::vector<Array> args;
  for (auto& a : in_avals) args.push_back(S->new_arg(a));
  std::vector<Array> outs;
  {
    TraceScope scope(S.get());
    outs = f(args);
  }
  return S->finish(outs);
}

std::shared_ptr<const Jaxpr> hoist_consts(const Jaxpr& j) {
  auto h = std::make_shared<Jaxpr>();
  h->invars = j.constvars;
  h->invars.insert(h->invars.end(), j.invars.begin(), j.invars.end());
  h->eqns = j.eqns;
  h->outvars = j.outvars;
  return h;
}

ClosedJaxpr jvp_jaxpr(const ClosedJaxpr& j, const std::vector<bool>& nonzero) {
  std::vector<Aval> avals = j.in_avals();
  size_t n = avals.size();
  for (size_t i = 0; i < n; ++i)
    if (nonzero[i]) avals.push_back(avals[i]);
  FlatFn g = [&](const std::vector<Array>& args) {
    std::vector<Array> primals(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(n)), tangents(n);
    size_t k = n;
    for (size_t i = 0; i < n; ++i)
      if (nonzero[i]) tangents[i] = args[k++];
    FlatFn body = [&](const std::vector<Array>& xs) {
      Arrays o = eval_jaxpr(j, xs);
      return std::vector<Array>(o.begin(), o.end());
    };
    auto [po, to] = jvp_flat(body, primals, tangents);
    po.insert(po.end(), to.begin(), to.end());
    return po;
  };
  return make_jaxpr_flat(g, avals, "jvp");
}

ClosedJaxpr batch_jaxpr(const ClosedJaxpr& j, const std::vector<int64_t>& dims, int64_t size, const std::string& name,
                        std::vector<bool>* out_mapped) {
  std::vector<Aval> avals = j.in_avals();
  std::vector<std::optional<int64_t>> in_axes;
  for (size_t i = 0; i < avals.size(); ++i) {
    if (dims[i] == kNotMapped) {
      in_axes.push_back(std::nullopt);
    } else {
      avals[i].shape.insert(avals[i].shape.begin() + dims[i], size);
      in_axes.push_back(dims[i]);
    }
  }
  FlatFn g = [&](const std::vector<Array>& args) {
    FlatFn body = [&](const std::vector<Array>& xs) {
      Arrays o = eval_jaxpr(j, xs);
      return std::vector<Array>(o.begin(), o.end());
    };
    if (!out_mapped) return vmap_flat(body, args, in_axes, {0}, name, size);
    // outputs the same on every lane stay unmapped unless the caller needs them mapped
    int64_t n = 0;
    auto outs = vmap_core(body, args, in_axes, name, size, n);
    out_mapped->resize(outs.size(), false);
    std::vector<Array> r;
    for (size_t i = 0; i < outs.size(); ++i) {
      auto& [v, d] = outs[i];
      if (d == kNotMapped && (*out_mapped)[i]) {
        r.push_back(broadcast_new_axis(v, 0, n));
      } else {
        r.push_back(d == kNotMapped ? v : lax::moveaxis(v, d, 0));
        (*out_mapped)[i] = d != kNotMapped;
      }
    }
    return r;
  };
  return make_jaxpr_flat(g, avals, "vmap");
}

LinearizedJaxpr linearize_jaxpr(const ClosedJaxpr& j, const std::vector<bool>& nonzero, bool instantiate) {
  // trace the primal side into `known` (K) while linearize_flat records the tangent side
  auto K = make_ref<StagingTrace>(Ref<Trace>(current_trace()), "linearize");
  EndOnExit end{K.get()};
  std::vector<Array> primals;
  for (auto& a : j.in_avals()) primals.push_back(K->new_arg(a));
  Linearized lin;
  {
    TraceScope scope(K.get());
    FlatFn body = [&](const std::vector<Array>& xs) {
      Arrays o = eval_jaxpr(j, xs);
      return std::vector<Array>(o.begin(), o.end());
    };
    lin = linearize_flat(body, primals, nonzero, instantiate);
  }
  LinearizedJaxpr r;
  // residuals: the linear program's captured values that the primal side computes (K's tracers);
  // captured concrete values stay constants of the linear program
  const Jaxpr& lj = *lin.linear.jaxpr;
  auto linear = std::make_shared<Jaxpr>();
  std::vector<Array> lin_consts, known_outs = lin.outs;
  std::vector<VarRef> residual_vars;
  for (size_t i = 0; i < lj.constvars.size(); ++i) {
    const Array& c = lin.linear.consts[i];
    if (c.is_tracer() && c.tracer()->trace() == K.get()) {
      residual_vars.push_back(lj.constvars[i]);
      known_outs.push_back(c);
      int input = -1;
      for (size_t k = 0; k < primals.size(); ++k)
        if (primals[k].node() == c.node()) input = static_cast<int>(k);
      r.residual_input.push_back(input);
    } else {
      linear->constvars.push_back(lj.constvars[i]);
      lin_consts.push_back(c);
    }
  }
  r.num_residuals = residual_vars.size();
  linear->invars = residual_vars;
  linear->invars.insert(linear->invars.end(), lj.invars.begin(), lj.invars.end());
  linear->eqns = lj.eqns;
  linear->outvars = lj.outvars;
  r.linear = ClosedJaxpr(std::move(linear), std::move(lin_consts));
  r.known = K->finish(known_outs);
  r.out_nonzero.assign(lin.outs.size(), false);
  for (int k : lin.out_index) r.out_nonzero[static_cast<size_t>(k)] = true;
  return r;
}

ClosedJaxpr transpose_jaxpr(const ClosedJaxpr& j, const std::vector<bool>& linear) {
  const Jaxpr& body = *j.jaxpr;
  std::vector<Aval> avals;
  for (size_t i = 0; i < body.invars.size(); ++i)
    if (!linear[i]) avals.push_back(body.invars[i]->aval);
  size_t num_known = avals.size();
  for (auto& a : j.out_avals()) avals.push_back(a);
  // the body seen as linear in the linear inputs: the known ones join its constvars
  Jaxpr view;
  view.constvars = body.constvars;
  for (size_t i = 0; i < body.invars.size(); ++i) (linear[i] ? view.invars : view.constvars).push_back(body.invars[i]);
  view.eqns = body.eqns;
  view.outvars = body.outvars;
  FlatFn g = [&](const std::vector<Array>& args) {
    std::vector<Array> known = j.consts;
    known.insert(known.end(), args.begin(), args.begin() + static_cast<std::ptrdiff_t>(num_known));
    Arrays cts = backward_pass(view, known, std::span<const Array>(args).subspan(num_known));
    std::vector<Array> out;
    for (size_t k = 0; k < view.invars.size(); ++k)
      out.push_back(cts[k].valid() ? cts[k] : zeros_for(view.invars[k]->aval));
    return out;
  };
  return make_jaxpr_flat(g, avals, "transpose");
}

}  // namespace graft
