// checkpoint and name: their rules, and the report of saved residuals.
#include "graft/transforms/remat.h"

#include <unordered_set>

#include "graft/compiler/pipeline.h"
#include "graft/core/trace.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"
#include "graft/transforms/control_util.h"

namespace graft {

std::string CheckpointPolicy::str() const {
  switch (kind) {
    case Kind::nothing_saveable:
      return "nothing_saveable";
    case Kind::dots_saveable:
      return "dots_saveable";
    case Kind::everything_saveable:
      return "everything_saveable";
    case Kind::save_names: {
      std::string s = "save_only_these_names(";
      for (size_t i = 0; i < names.size(); ++i) s += (i ? "," : "") + names[i];
      return s + ")";
    }
  }
  return "?";
}

namespace {

using control::share;

struct PolicyParam final : ParamObject {
  CheckpointPolicy policy;
  explicit PolicyParam(CheckpointPolicy p) : policy(std::move(p)) {}
  void print(std::ostream& os) const override { os << policy.str(); }
  size_t hash() const override { return std::hash<std::string>{}(policy.str()); }
  bool equals(const ParamObject& o) const override {
    auto* q = dynamic_cast<const PolicyParam*>(&o);
    return q && q->policy.str() == policy.str();
  }
};

const ClosedJaxpr& body_of(const Params& p) { return p.get_jaxpr("jaxpr"); }
const CheckpointPolicy& policy_of(const Params& p) { return p.get_object<PolicyParam>("policy").policy; }
Params with_body(const Params& p, JaxprPtr body) { return p.with("jaxpr", std::move(body)); }

// ---- name: the identity ------------------------------------------------------------------------------
Avals name_shape(const Primitive&, AvalPtrs in, const Params&) { return {*in[0]}; }
Arrays name_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params&) {
  return {in[0]};
}
JvpResult name_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                   const Params& params) {
  return {bind(p, primals, params), {tangents[0]}};
}
Arrays name_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg>, const Params&) {
  return {cts[0]};
}
BatchResult name_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                       const BatchInfo&, const Params& params) {
  return {bind(p, vals, params), {dims[0]}};
}

// ---- checkpoint ----------------------------------------------------------------------------------------
Avals checkpoint_shape(const Primitive&, AvalPtrs in, const Params& params) {
  const ClosedJaxpr& b = body_of(params);
  if (in.size() != b.jaxpr->invars.size())
    fail<ValueError>("checkpoint: the body takes ", b.jaxpr->invars.size(), " arrays, got ", in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i]->same_type(b.jaxpr->invars[i]->aval))
      fail<TypeError>("checkpoint: argument ", i, " has type ", in[i]->str(), ", the body expects ",
                      b.jaxpr->invars[i]->aval.str());
  std::vector<Aval> o = b.out_avals();
  return Avals(o.begin(), o.end());
}

Arrays checkpoint_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  return control::run_body(body_of(params), in);
}

JvpResult checkpoint_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                         const Params& params) {
  const ClosedJaxpr& b = body_of(params);
  std::vector<bool> nz;
  for (auto& t : tangents) nz.push_back(t.valid());
  auto jb = *b.derived<JaxprPtr>(control::mask_key("ckpt.jvp", nz), [&] { return share(jvp_jaxpr(b, nz)); });
  Arrays args(primals.begin(), primals.end());
  for (auto& t : tangents)
    if (t.valid()) args.push_back(t);
  Arrays outs = bind(p, args, with_body(params, jb));
  size_t n = outs.size() / 2;
  JvpResult r;
  r.primals.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n));
  r.tangents.assign(outs.begin() + static_cast<std::ptrdiff_t>(n), outs.end());
  return r;
}

// Whether the policy saves the value an equation of the forward pass computes.
bool saveable(const CheckpointPolicy& policy, const Eqn* producer) {
  switch (policy.kind) {
    case CheckpointPolicy::Kind::everything_saveable:
      return true;
    case CheckpointPolicy::Kind::nothing_saveable:
      return false;
    case CheckpointPolicy::Kind::dots_saveable:
      return producer && producer->prim == &prims::dot_general_p;
    case CheckpointPolicy::Kind::save_names:
      if (!producer || producer->prim != &name_p) return false;
      for (auto& n : policy.names)
        if (n == producer->params.get<std::string>("name")) return true;
      return false;
  }
  return false;
}

const Eqn* producer_of(const Jaxpr& j, const Atom& a) {
  if (a.is_literal()) return nullptr;
  for (auto& e : j.eqns)
    for (auto& v : e.outputs)
      if (v.get() == a.var.get()) return &e;
  return nullptr;
}

struct RematSplit {
  JaxprPtr forward;  ///< primals -> (outputs, saved residuals)
  JaxprPtr linear;   ///< (primals, saved residuals, tangents) -> output tangents, recomputing the rest
  std::vector<bool> out_nonzero;
};

// Under grad: the forward pass saves what the policy allows; the linear program's checkpoint equation
// recomputes the other residuals from the inputs and the saved ones, then applies the linear part.
JvpResult checkpoint_linearize(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                               const Params& params) {
  const ClosedJaxpr& b = body_of(params);
  const CheckpointPolicy& policy = policy_of(params);
  std::vector<bool> nz;
  for (auto& t : tangents) nz.push_back(t.valid());
  auto split = b.derived<RematSplit>(control::mask_key("ckpt.lin", nz), [&] {
    LinearizedJaxpr lj = linearize_jaxpr(b, nz, /*instantiate=*/false);
    const Jaxpr& known = *lj.known.jaxpr;
    size_t n = lj.out_nonzero.size(), R = lj.num_residuals;
    // What the forward pass saves: walking back from the residuals, the first values on each path
    // that the policy allows (the rest of the path is recomputed from them and the inputs)
    std::unordered_set<const Var*> needed, cut;
    for (size_t k = 0; k < R; ++k)
      if (lj.residual_input[k] < 0 && !known.outvars[n + k].is_literal()) needed.insert(known.outvars[n + k].var.get());
    for (auto it = known.eqns.rbegin(); it != known.eqns.rend(); ++it) {
      bool used = false;
      for (auto& v : it->outputs) used = used || needed.count(v.get());
      if (!used) continue;
      if (saveable(policy, &*it)) {
        for (auto& v : it->outputs) cut.insert(v.get());
      } else {
        for (auto& a : it->inputs)
          if (!a.is_literal()) needed.insert(a.var.get());
      }
    }
    std::vector<VarRef> saved;  // in program order
    for (auto& e : known.eqns)
      for (auto& v : e.outputs)
        if (cut.count(v.get())) saved.push_back(v);
    RematSplit r;
    {
      auto fj = std::make_shared<Jaxpr>(known);
      fj->outvars.resize(n);
      for (auto& v : saved) fj->outvars.push_back(Atom(v));
      r.forward = share(compiler::run_pass("dce", ClosedJaxpr(std::move(fj), lj.known.consts)));
    }
    r.out_nonzero = lj.out_nonzero;
    std::vector<Aval> avals = b.in_avals();
    size_t np = avals.size();
    for (auto& v : saved) avals.push_back(v->aval);
    for (size_t i = 0; i < nz.size(); ++i)
      if (nz[i]) avals.push_back(b.in_avals()[i]);
    FlatFn f = [&](const std::vector<Array>& a) {
      // recompute the forward pass with the saved residuals' equations replaced by their values
      std::unordered_map<const Var*, Array> env;
      for (size_t i = 0; i < known.constvars.size(); ++i) env[known.constvars[i].get()] = lj.known.consts[i];
      for (size_t i = 0; i < np; ++i) env[known.invars[i].get()] = a[i];
      std::unordered_map<const Var*, Array> given;
      for (size_t s = 0; s < saved.size(); ++s) given[saved[s].get()] = a[np + s];
      auto read = [&](const Atom& x) { return x.is_literal() ? x.literal : env.at(x.var.get()); };
      for (auto& e : known.eqns) {
        bool all_given = true;
        for (auto& v : e.outputs) all_given = all_given && given.count(v.get());
        if (all_given) {
          for (auto& v : e.outputs) env[v.get()] = given.at(v.get());
          continue;
        }
        Arrays in;
        for (auto& x : e.inputs) in.push_back(read(x));
        Arrays out = bind(*e.prim, in, e.params);
        for (size_t k = 0; k < e.outputs.size(); ++k) env[e.outputs[k].get()] = out[k];
      }
      std::vector<Array> lin_in;
      for (size_t k = 0; k < R; ++k) lin_in.push_back(read(known.outvars[n + k]));
      lin_in.insert(lin_in.end(), a.begin() + static_cast<std::ptrdiff_t>(np + saved.size()), a.end());
      Arrays t = eval_jaxpr(lj.linear, lin_in);
      return std::vector<Array>(t.begin(), t.end());
    };
    r.linear = share(compiler::run_pass("dce", make_jaxpr_flat(f, avals, "checkpoint")));
    return r;
  });
  Arrays fwd = bind(p, primals, with_body(params, split->forward));
  size_t n = split->out_nonzero.size();
  Arrays args(primals.begin(), primals.end());
  args.insert(args.end(), fwd.begin() + static_cast<std::ptrdiff_t>(n), fwd.end());
  for (auto& t : tangents)
    if (t.valid()) args.push_back(t);
  Arrays touts = bind(p, args, with_body(params, split->linear));
  JvpResult r;
  r.primals.assign(fwd.begin(), fwd.begin() + static_cast<std::ptrdiff_t>(n));
  r.tangents.resize(n);
  for (size_t k = 0, t = 0; k < n; ++k)
    if (split->out_nonzero[k]) r.tangents[k] = touts[t++];
  return r;
}

// The linear checkpoint equation's transpose: its body transposed, as another checkpoint equation (an
// opaque call, so the recomputation stays in the backward pass).
Arrays checkpoint_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                            const Params& params) {
  const ClosedJaxpr& b = body_of(params);
  std::vector<bool> linear;
  for (auto& a : args) linear.push_back(a.linear);
  auto tb = *b.derived<JaxprPtr>(control::mask_key("ckpt.T", linear), [&] { return share(transpose_jaxpr(b, linear)); });
  return control::transpose_call(cts, args, b.out_avals(), 0,
                                 [&](std::span<const Array> in) { return bind(p, in, with_body(params, tb)); });
}

BatchResult checkpoint_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                             const BatchInfo& axis, const Params& params) {
  const ClosedJaxpr& b = body_of(params);
  std::vector<int64_t> dv(dims.begin(), dims.end());
  std::string key = control::batch_key("ckpt.vmap", axis, dv);
  auto bb = *b.derived<JaxprPtr>(key, [&] { return share(batch_jaxpr(b, dv, axis.size, axis.name)); });
  Arrays outs = bind(p, vals, with_body(params, bb));
  return {outs, BatchDims(outs.size(), 0)};
}

// The policy as printed (CheckpointPolicy::str), for parse_jaxpr.
std::optional<ParamValue> read_policy(std::string_view text) {
  for (auto p : {CheckpointPolicy::nothing_saveable(), CheckpointPolicy::dots_saveable(),
                 CheckpointPolicy::everything_saveable()})
    if (text == p.str()) return checkpoint_policy_param(p);
  constexpr std::string_view head = "save_only_these_names(";
  if (text.substr(0, head.size()) != head || text.back() != ')') return std::nullopt;
  std::vector<std::string> names;
  std::string_view rest = text.substr(head.size(), text.size() - head.size() - 1);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    names.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return checkpoint_policy_param(CheckpointPolicy::save_only_these_names(std::move(names)));
}

// at load time: a process that only reads programs never calls checkpoint()
const bool kPolicyReader = (register_param_reader("policy", &read_policy), true);

void register_all() {
  static bool registered = (prims::register_primitive(&checkpoint_p), prims::register_primitive(&name_p), true);
  (void)registered;
}

}  // namespace

const Primitive checkpoint_p{"checkpoint",          kHigherOrder | kMultipleResults, &checkpoint_shape,
                             &checkpoint_impl,      &checkpoint_jvp,                 &checkpoint_transpose,
                             &checkpoint_batch,     &checkpoint_linearize};
const Primitive name_p{"name", 0, &name_shape, &name_impl, &name_jvp, &name_transpose, &name_batch};

Ref<const ParamObject> checkpoint_policy_param(const CheckpointPolicy& policy) {
  return Ref<const ParamObject>(new PolicyParam(policy));
}

Array checkpoint_name(const Array& x, const std::string& name) {
  register_all();
  return bind1(name_p, {x}, {{"name", name}});
}

std::vector<Array> checkpoint_flat(const FlatFn& f, const std::vector<Array>& args, const CheckpointPolicy& policy) {
  register_all();
  std::vector<Aval> avals;
  for (auto& x : args) avals.push_back(x.aval());
  control::TracedBody t = control::trace_body(f, avals, "checkpoint");
  std::vector<Array> in = t.consts;
  in.insert(in.end(), args.begin(), args.end());
  Arrays r = bind(checkpoint_p, in,
                  {{"jaxpr", t.jaxpr}, {"policy", checkpoint_policy_param(policy)}});
  return std::vector<Array>(r.begin(), r.end());
}

std::string saved_residuals_flat(const FlatFn& f, const std::vector<Aval>& in_avals) {
  ClosedJaxpr j = make_jaxpr_flat(f, in_avals);
  LinearizedJaxpr lj = linearize_jaxpr(j, control::float_mask(in_avals), /*instantiate=*/false);
  const Jaxpr& known = *lj.known.jaxpr;
  size_t n = lj.out_nonzero.size();
  std::ostringstream os;
  for (size_t k = 0; k < lj.num_residuals; ++k) {
    const Atom& a = known.outvars[n + k];
    os << a.aval().str() << "  ";
    int in = lj.residual_input[k];
    const Eqn* e = producer_of(known, a);
    if (in >= 0) {
      os << "from argument " << in;
    } else if (e && e->prim == &checkpoint_p) {
      // a value a checkpoint saved: name the equation inside its forward body
      size_t pos = 0;
      while (pos < e->outputs.size() && e->outputs[pos].get() != a.var.get()) ++pos;
      const Jaxpr& body = *body_of(e->params).jaxpr;
      const Eqn* inner = pos < body.outvars.size() ? producer_of(body, body.outvars[pos]) : nullptr;
      os << "saved by checkpoint: output of " << (inner ? inner->prim->name : "an input");
      if (inner && inner->prim == &name_p) os << " '" << inner->params.get<std::string>("name") << "'";
    } else if (e) {
      os << "output of " << e->prim->name;
      if (e->prim == &name_p) os << " '" << e->params.get<std::string>("name") << "'";
    } else {
      os << "a constant";
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace graft
