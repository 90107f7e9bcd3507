// custom_jvp_call, custom_vjp_call and custom_lin: all their rules.
#include "graft/transforms/custom.h"

#include "graft/compiler/executable.h"
#include "graft/core/trace.h"
#include "graft/ir/print_rules.h"
#include "graft/prims/lax.h"
#include "graft/prims/primitives.h"
#include "graft/prims/rules.h"
#include "graft/transforms/control_util.h"
#include "graft/transforms/jit.h"

namespace graft {

namespace {

struct JvpRuleParam final : ParamObject {
  CustomJvpRule rule;
  std::string name;
  JvpRuleParam(CustomJvpRule r, std::string n) : rule(std::move(r)), name(std::move(n)) {}
  void print(std::ostream& os) const override { os << name << "_jvp"; }
};

struct VjpRuleParam final : ParamObject {
  CustomFwd fwd;
  CustomBwd bwd;
  std::string name;
  VjpRuleParam(CustomFwd f, CustomBwd b, std::string n) : fwd(std::move(f)), bwd(std::move(b)), name(std::move(n)) {}
  // printed as JAX's fwd= (its bwd= and name= are derived from the same name, see the spelling below)
  void print(std::ostream& os) const override { os << name << "_fwd"; }
};

struct AvalsParam final : ParamObject {
  std::vector<Aval> avals;
  explicit AvalsParam(std::vector<Aval> a) : avals(std::move(a)) {}
  void print(std::ostream& os) const override {
    os << '(';
    for (size_t i = 0; i < avals.size(); ++i) os << (i ? ", " : "") << avals[i].str();
    os << (avals.size() == 1 ? ",)" : ")");
  }
};

const ClosedJaxpr& call_of(const Params& p) { return p.get_jaxpr("call_jaxpr"); }

Avals call_shape(const Primitive& p, AvalPtrs in, const Params& params) {
  const ClosedJaxpr& c = call_of(params);
  if (in.size() != c.jaxpr->invars.size())
    fail<ValueError>(p.name, ": expected ", c.jaxpr->invars.size(), " operands, got ", in.size());
  Avals out;
  for (auto& a : c.out_avals()) out.push_back(a);
  return out;
}

Arrays call_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  return Executable::of(call_of(params)).run(in);
}


void check_rule_outputs(const char* what, const std::vector<Array>& got, const std::vector<Aval>& want) {
  if (got.size() != want.size())
    fail<ValueError>(what, ": the rule returned ", got.size(), " values, the function has ", want.size(), " outputs");
  for (size_t i = 0; i < got.size(); ++i)
    if (!got[i].valid() || got[i].shape() != want[i].shape || got[i].dtype() != want[i].dtype)
      fail<TypeError>(what, ": output ", i, " of the rule has type ",
                      got[i].valid() ? got[i].aval().str() : std::string("null"), ", expected ", want[i].str());
}

// ---- custom_jvp_call ----------------------------------------------------------------------------------
JvpResult custom_jvp_jvp(const Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                         const Params& params) {
  int64_t nc = params.get_int("num_consts");
  const auto& rule = params.get_object<JvpRuleParam>("jvp_jaxpr_fun");
  std::vector<Array> ps(primals.begin() + nc, primals.end()), ts;
  for (size_t i = static_cast<size_t>(nc); i < primals.size(); ++i)
    ts.push_back(prims::instantiate(tangents[i], primals[i].aval()));
  auto [outs, touts] = rule.rule(ps, ts);
  std::vector<Aval> want = call_of(params).out_avals();
  check_rule_outputs("custom_jvp", outs, want);
  check_rule_outputs("custom_jvp (tangents)", touts, want);
  return {Arrays(outs.begin(), outs.end()), Arrays(touts.begin(), touts.end())};
}

// What the batching rules of both custom calls need: the batched body (all outputs at axis 0) and
// the in_axes of the user-visible arguments (the consts come first and are not passed to the rules).
struct BatchedCall {
  ClosedJaxpr body;
  std::vector<std::optional<int64_t>> arg_axes;
  size_t n_out;
};
BatchedCall batched_call(std::span<const int64_t> dims, const BatchInfo& axis, const Params& params) {
  int64_t nc = params.get_int("num_consts");
  const ClosedJaxpr& c = call_of(params);
  BatchedCall b{batch_jaxpr(c, std::vector<int64_t>(dims.begin(), dims.end()), axis.size, axis.name), {},
                c.out_avals().size()};
  for (size_t i = static_cast<size_t>(nc); i < dims.size(); ++i)
    b.arg_axes.push_back(dims[i] == kNotMapped ? std::nullopt : std::optional<int64_t>(dims[i]));
  return b;
}

BatchResult custom_jvp_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                             const BatchInfo& axis, const Params& params) {
  auto [bj, arg_axes, n_out] = batched_call(dims, axis, params);
  const auto& old = params.get_object<JvpRuleParam>("jvp_jaxpr_fun");
  CustomJvpRule inner = old.rule;
  CustomJvpRule batched = [inner, arg_axes = arg_axes, axis, n_out = n_out](const std::vector<Array>& ps, const std::vector<Array>& ts) {
    std::vector<Array> both = ps;
    both.insert(both.end(), ts.begin(), ts.end());
    std::vector<std::optional<int64_t>> ax = arg_axes;
    ax.insert(ax.end(), arg_axes.begin(), arg_axes.end());
    size_t n = ps.size();
    FlatFn f = [&](const std::vector<Array>& xs) {
      std::vector<Array> p2(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n)), t2(xs.begin() + static_cast<std::ptrdiff_t>(n), xs.end());
      auto [o, to] = inner(p2, t2);
      o.insert(o.end(), to.begin(), to.end());
      return o;
    };
    std::vector<Array> r = vmap_flat(f, both, ax, {0}, axis.name, axis.size);
    return std::make_pair(std::vector<Array>(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n_out)),
                          std::vector<Array>(r.begin() + static_cast<std::ptrdiff_t>(n_out), r.end()));
  };
  Params np = params.with("call_jaxpr", hoisted(bj))
                  .with("jvp_jaxpr_fun", Ref<const ParamObject>(new JvpRuleParam(batched, old.name)));
  Arrays outs = bind(p, vals, np);
  BatchDims od(outs.size(), 0);
  return {std::move(outs), od};
}

// ---- custom_vjp_call ----------------------------------------------------------------------------------
JvpResult custom_vjp_jvp(const Primitive&, std::span<const Array>, std::span<const Array>, const Params&) {
  fail<TypeError>(
      "can't apply forward-mode autodiff (jvp) to a custom_vjp function; use custom_jvp for forward mode, or "
      "reverse mode (grad/vjp) for this function");
}

JvpResult custom_vjp_linearize(const Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                               const Params& params) {
  int64_t nc = params.get_int("num_consts");
  const auto& rule = params.get_object<VjpRuleParam>("rule");
  std::vector<Array> ps(primals.begin() + nc, primals.end());
  auto [outs, res] = rule.fwd(ps);
  std::vector<Aval> want = call_of(params).out_avals();
  check_rule_outputs("custom_vjp fwd", outs, want);
  Arrays lin_in(res.begin(), res.end());
  for (size_t i = static_cast<size_t>(nc); i < primals.size(); ++i)
    lin_in.push_back(prims::instantiate(tangents[i], primals[i].aval()));
  std::vector<Aval> arg_avals;
  for (size_t i = static_cast<size_t>(nc); i < primals.size(); ++i) arg_avals.push_back(primals[i].aval());
  Params lp{{"bwd", params.get<Ref<const ParamObject>>("rule")},
            {"num_res", static_cast<int64_t>(res.size())},
            {"out_avals", Ref<const ParamObject>(new AvalsParam(want))}};
  Arrays touts = bind(custom_lin_p, lin_in, lp);
  return {Arrays(outs.begin(), outs.end()), std::move(touts)};
}

BatchResult custom_vjp_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                             const BatchInfo& axis, const Params& params) {
  auto [bj, arg_axes, n_out] = batched_call(dims, axis, params);
  const auto& old = params.get_object<VjpRuleParam>("rule");
  CustomFwd fwd = [f = old.fwd, arg_axes = arg_axes, axis, n_out = n_out](const std::vector<Array>& ps) {
    auto n_res = std::make_shared<size_t>(0);
    FlatFn g = [&](const std::vector<Array>& xs) {
      auto [o, r] = f(xs);
      *n_res = r.size();
      o.insert(o.end(), r.begin(), r.end());
      return o;
    };
    std::vector<Array> all = vmap_flat(g, ps, arg_axes, {0}, axis.name, axis.size);
    return std::make_pair(std::vector<Array>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_out)),
                          std::vector<Array>(all.begin() + static_cast<std::ptrdiff_t>(n_out), all.end()));
  };
  CustomBwd bwd = [b = old.bwd, arg_axes = arg_axes, axis](const std::vector<Array>& res, const std::vector<Array>& cts) {
    std::vector<Array> both = res;
    both.insert(both.end(), cts.begin(), cts.end());
    size_t nr = res.size();
    FlatFn g = [&](const std::vector<Array>& xs) {
      return b(std::vector<Array>(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(nr)),
               std::vector<Array>(xs.begin() + static_cast<std::ptrdiff_t>(nr), xs.end()));
    };
    std::vector<std::optional<int64_t>> ax(both.size(), 0);
    std::vector<Array> out = vmap_flat(g, both, ax, {0}, axis.name, axis.size);
    // inputs that were not batched get the sum of the per-lane cotangents
    for (size_t i = 0; i < out.size() && i < arg_axes.size(); ++i) {
      if (!arg_axes[i]) {
        out[i] = lax::reduce_sum(out[i], {0});
      } else if (*arg_axes[i] != 0) {
        out[i] = lax::moveaxis(out[i], 0, *arg_axes[i]);
      }
    }
    return out;
  };
  Params np = params.with("call_jaxpr", hoisted(bj))
                  .with("rule", Ref<const ParamObject>(new VjpRuleParam(fwd, bwd, old.name)));
  Arrays outs = bind(p, vals, np);
  BatchDims od(outs.size(), 0);
  return {std::move(outs), od};
}

// ---- custom_lin -----------------------------------------------------------------------------------------
Avals lin_shape(const Primitive&, AvalPtrs, const Params& params) {
  Avals out;
  for (auto& a : params.get_object<AvalsParam>("out_avals").avals) out.push_back(a);
  return out;
}

Arrays lin_impl(const Primitive&, std::span<const Array>, std::span<const Aval>, const Params&) {
  fail<TypeError>("can't apply forward-mode autodiff (jvp) to a custom_vjp function");
}

Arrays lin_transpose(const Primitive&, std::span<const Array> cts, std::span<const TArg> args, const Params& params) {
  int64_t nr = params.get_int("num_res");
  const auto& rule = params.get_object<VjpRuleParam>("bwd");
  const auto& out_avals = params.get_object<AvalsParam>("out_avals").avals;
  std::vector<Array> res, ct;
  for (int64_t i = 0; i < nr; ++i) res.push_back(args[static_cast<size_t>(i)].value);
  for (size_t i = 0; i < cts.size(); ++i) ct.push_back(prims::instantiate(cts[i], out_avals[i]));
  std::vector<Array> in_cts = rule.bwd(res, ct);
  size_t n_args = args.size() - static_cast<size_t>(nr);
  if (in_cts.size() != n_args)
    fail<ValueError>("custom_vjp bwd returned ", in_cts.size(), " cotangents for ", n_args, " inputs");
  Arrays out(args.size());
  for (size_t i = 0; i < n_args; ++i) {
    const TArg& a = args[static_cast<size_t>(nr) + i];
    if (in_cts[i].valid() && (in_cts[i].shape() != a.aval.shape || in_cts[i].dtype() != a.aval.dtype))
      fail<TypeError>("custom_vjp bwd: cotangent ", i, " has type ", in_cts[i].aval().str(), ", the input has type ",
                      a.aval.str());
    out[static_cast<size_t>(nr) + i] = in_cts[i];
  }
  return out;
}

// ---- linear_call ------------------------------------------------------------------------------------------
struct LinearCallParam final : ParamObject {
  LinearFn fun, transpose;
  std::string name;
  LinearResJvp fun_res_jvp, transpose_res_jvp;
  LinearCallParam(LinearFn f, LinearFn t, std::string n, LinearResJvp fj, LinearResJvp tj)
      : fun(std::move(f)), transpose(std::move(t)), name(std::move(n)), fun_res_jvp(std::move(fj)),
        transpose_res_jvp(std::move(tj)) {}
  void print(std::ostream& os) const override { os << name; }
};

const LinearCallParam& linear_rule(const Params& p) { return p.get_object<LinearCallParam>("rule"); }
const std::vector<Aval>& out_avals_of(const Params& p) { return p.get_object<AvalsParam>("out_avals").avals; }

Params linear_params(LinearFn fun, LinearFn transpose, const std::string& name, int64_t num_res, std::vector<Aval> out,
                     LinearResJvp fun_res_jvp, LinearResJvp transpose_res_jvp) {
  return Params{{"rule", Ref<const ParamObject>(new LinearCallParam(std::move(fun), std::move(transpose), name,
                                                                    std::move(fun_res_jvp), std::move(transpose_res_jvp)))},
                {"num_res", num_res},
                {"out_avals", Ref<const ParamObject>(new AvalsParam(std::move(out)))}};
}

std::pair<std::vector<Array>, std::vector<Array>> split_at(std::span<const Array> in, size_t n) {
  return {std::vector<Array>(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n)),
          std::vector<Array>(in.begin() + static_cast<std::ptrdiff_t>(n), in.end())};
}

Avals linear_call_shape(const Primitive&, AvalPtrs, const Params& params) {
  const auto& a = out_avals_of(params);
  return Avals(a.begin(), a.end());
}

Arrays linear_call_impl(const Primitive&, std::span<const Array> in, std::span<const Aval>, const Params& params) {
  auto [res, lin] = split_at(in, static_cast<size_t>(params.get_int("num_res")));
  std::vector<Array> out = linear_rule(params).fun(res, lin);
  check_rule_outputs("linear_call", out, out_avals_of(params));
  return Arrays(out.begin(), out.end());
}

// Linear in its linear inputs: their part of the tangent is the same call on their tangents. Residuals
// with tangents (a second derivative: the point the solve linearizes at moves) add fun's own derivative
// in them, found by differentiating fun with the linear inputs held.
JvpResult linear_call_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                          const Params& params) {
  size_t nr = static_cast<size_t>(params.get_int("num_res"));
  JvpResult r;
  r.primals = bind(p, primals, params);
  Arrays t(primals.begin(), primals.begin() + static_cast<std::ptrdiff_t>(nr));
  for (size_t i = nr; i < primals.size(); ++i) t.push_back(prims::instantiate(tangents[i], primals[i].aval()));
  r.tangents = bind(p, t, params);
  bool res_moves = false;
  for (size_t i = 0; i < nr; ++i) res_moves = res_moves || tangents[i].valid();
  if (res_moves) {
    auto [res, lin] = split_at(primals, nr);
    std::vector<Array> res_dot;
    for (size_t i = 0; i < nr; ++i) res_dot.push_back(prims::instantiate(tangents[i], primals[i].aval()));
    const LinearCallParam& rule = linear_rule(params);
    std::vector<Array> extra;
    if (rule.fun_res_jvp) {
      extra = rule.fun_res_jvp(res, res_dot, lin, std::vector<Array>(r.primals.begin(), r.primals.end()));
      check_rule_outputs("linear_call residual jvp", extra, out_avals_of(params));
    } else {
      FlatFn at = [&rule, lin = lin](const std::vector<Array>& rs) { return rule.fun(rs, lin); };
      extra = jvp_flat(at, res, res_dot).second;
    }
    for (size_t k = 0; k < r.tangents.size(); ++k) r.tangents[k] = lax::add(r.tangents[k], extra[k]);
  }
  return r;
}

// The transpose is linear_call again, with fun and transpose exchanged (so it transposes back).
Arrays linear_call_transpose(const Primitive& p, std::span<const Array> cts, std::span<const TArg> args,
                             const Params& params) {
  size_t nr = static_cast<size_t>(params.get_int("num_res"));
  const LinearCallParam& rule = linear_rule(params);
  Arrays in;
  for (size_t i = 0; i < nr; ++i) {
    if (args[i].linear)
      fail<ValueError>("linear_call ", rule.name, ": residual ", i, " is linear in the differentiated inputs; pass it "
                       "among the linear inputs");
    in.push_back(args[i].value);
  }
  const auto& outs = out_avals_of(params);
  for (size_t k = 0; k < cts.size(); ++k) in.push_back(prims::instantiate(cts[k], outs[k]));
  std::vector<Aval> lin_avals;
  for (size_t i = nr; i < args.size(); ++i) lin_avals.push_back(args[i].aval);
  Arrays got = bind(p, in, linear_params(rule.transpose, rule.fun, rule.name + "_transpose", static_cast<int64_t>(nr), lin_avals,
                                         rule.transpose_res_jvp, rule.fun_res_jvp));
  Arrays out(args.size());
  for (size_t i = nr; i < args.size(); ++i) out[i] = got[i - nr];
  return out;
}

// vmap: the linear inputs batched in front; fun and transpose run under vmap with the residuals at their
// own batch dimensions (outputs and cotangents in front).
BatchResult linear_call_batch(const Primitive& p, std::span<const Array> vals, std::span<const int64_t> dims,
                              const BatchInfo& axis, const Params& params) {
  size_t nr = static_cast<size_t>(params.get_int("num_res"));
  const LinearCallParam& rule = linear_rule(params);
  Arrays args;
  std::vector<std::optional<int64_t>> res_axes;
  for (size_t i = 0; i < nr; ++i) {
    args.push_back(vals[i]);
    res_axes.push_back(dims[i] == kNotMapped ? std::nullopt : std::optional<int64_t>(dims[i]));
  }
  for (size_t i = nr; i < vals.size(); ++i) args.push_back(control::batched_at_front(vals[i], dims[i], axis.size));
  auto batched = [res_axes, nr, axis](LinearFn f) -> LinearFn {
    return [f, res_axes, nr, axis](const std::vector<Array>& res, const std::vector<Array>& lin) {
      std::vector<Array> all = res;
      all.insert(all.end(), lin.begin(), lin.end());
      std::vector<std::optional<int64_t>> ax = res_axes;
      ax.resize(all.size(), 0);
      FlatFn g = [&](const std::vector<Array>& xs) {
        auto [r, l] = split_at(xs, nr);
        return f(r, l);
      };
      return vmap_flat(g, all, ax, {0}, axis.name, axis.size);
    };
  };
  // a residual jvp under vmap: residuals and their tangents at the residuals' dimensions, the linear
  // inputs and the outputs in front
  auto batched_jvp = [res_axes, nr, axis](LinearResJvp f) -> LinearResJvp {
    if (!f) return f;
    return [f, res_axes, nr, axis](const std::vector<Array>& res, const std::vector<Array>& dres,
                                   const std::vector<Array>& lin, const std::vector<Array>& out) {
      std::vector<Array> all = res;
      all.insert(all.end(), dres.begin(), dres.end());
      std::vector<std::optional<int64_t>> ax = res_axes;
      ax.insert(ax.end(), res_axes.begin(), res_axes.end());
      all.insert(all.end(), lin.begin(), lin.end());
      all.insert(all.end(), out.begin(), out.end());
      ax.resize(all.size(), 0);
      size_t nl = lin.size();
      FlatFn g = [&](const std::vector<Array>& xs) {
        auto at = [&](size_t from, size_t n) {
          return std::vector<Array>(xs.begin() + static_cast<std::ptrdiff_t>(from), xs.begin() + static_cast<std::ptrdiff_t>(from + n));
        };
        return f(at(0, nr), at(nr, nr), at(2 * nr, nl), at(2 * nr + nl, xs.size() - 2 * nr - nl));
      };
      return vmap_flat(g, all, ax, {0}, axis.name, axis.size);
    };
  };
  std::vector<Aval> outs;
  for (Aval a : out_avals_of(params)) {
    a.shape.insert(a.shape.begin(), axis.size);
    outs.push_back(a);
  }
  Arrays r = bind(p, args, linear_params(batched(rule.fun), batched(rule.transpose), rule.name, static_cast<int64_t>(nr), outs,
                                         batched_jvp(rule.fun_res_jvp), batched_jvp(rule.transpose_res_jvp)));
  return {r, BatchDims(r.size(), 0)};
}

// ---- JAX 0.11's spelling (its _custom_jvp_call_pp_rule / _custom_vjp_call_pp_rule) ---------------------
// custom_jvp_call[name=f call_jaxpr={...} jvp=f_jvp symbolic_zeros=False], custom_vjp_call[name=f
// bwd=f_bwd call_jaxpr={...} fwd=f_fwd symbolic_zeros=False]: the function's name first, num_consts only
// when not 0. A rule read back from text is its printed name (a string).
std::string rule_name(const ParamValue* v, std::string_view suffix) {
  std::string s;
  if (auto* o = v ? std::get_if<Ref<const ParamObject>>(v) : nullptr) {
    if (auto* j = dynamic_cast<const JvpRuleParam*>(o->get())) return j->name;
    if (auto* f = dynamic_cast<const VjpRuleParam*>(o->get())) return f->name;
  } else if (auto* str = v ? std::get_if<std::string>(v) : nullptr) {
    s = *str;
  }
  if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
    s.resize(s.size() - suffix.size());
  return s;
}

void keep_num_consts(const Eqn& e, std::vector<PrintedParam>& out) {
  if (auto* n = e.params.find("num_consts"); n && !(std::holds_alternative<int64_t>(*n) && std::get<int64_t>(*n) == 0))
    out.push_back({"num_consts", *n});
}

std::vector<PrintedParam> print_custom_jvp(const Eqn& e) {
  const ParamValue* rule = e.params.find("jvp_jaxpr_fun");
  std::vector<PrintedParam> out{{"name", rule_name(rule, "_jvp")}};
  if (auto* c = e.params.find("call_jaxpr")) out.push_back({"call_jaxpr", *c});
  if (rule) out.push_back({"jvp", *rule});
  keep_num_consts(e, out);
  const ParamValue* sz = e.params.find("symbolic_zeros");
  out.push_back({"symbolic_zeros", sz ? *sz : ParamValue(false)});
  return out;
}

std::vector<PrintedParam> print_custom_vjp(const Eqn& e) {
  const ParamValue* rule = e.params.find("rule");
  std::string name = rule_name(rule, "_fwd");
  std::vector<PrintedParam> out{{"name", name}, {"bwd", name + "_bwd"}};
  if (auto* c = e.params.find("call_jaxpr")) out.push_back({"call_jaxpr", *c});
  if (rule) out.push_back({"fwd", *rule});
  keep_num_consts(e, out);
  out.push_back({"symbolic_zeros", false});
  return out;
}

void register_all() {
  static bool done = [] {
    prims::register_primitive(&custom_jvp_call_p);
    prims::register_primitive(&custom_vjp_call_p);
    prims::register_primitive(&custom_lin_p);
    prims::register_primitive(&linear_call_p);
    register_param_spelling("custom_jvp_call", {.print = &print_custom_jvp,
                                                .renamed = {{"jvp", "jvp_jaxpr_fun"}},
                                                .dropped = {"name"},
                                                .defaults = {{"num_consts", int64_t{0}}}});
    register_param_spelling("custom_vjp_call", {.print = &print_custom_vjp,
                                                .renamed = {{"fwd", "rule"}},
                                                .dropped = {"name", "bwd", "symbolic_zeros"},
                                                .defaults = {{"num_consts", int64_t{0}}}});
    return true;
  }();
  (void)done;
}

}  // namespace

void register_custom_call_primitives() { register_all(); }

namespace {

ClosedJaxpr trace_call(const FlatFn& f, const std::vector<Array>& args) {
  std::vector<Aval> avals;
  for (auto& a : args) avals.push_back(a.aval());
  return make_jaxpr_flat(f, avals, "custom");
}

}  // namespace

const Primitive custom_jvp_call_p{"custom_jvp_call", kHigherOrder | kMultipleResults | kCall, &call_shape, &call_impl,
                                  &custom_jvp_jvp,   nullptr,                         &custom_jvp_batch};
const Primitive custom_vjp_call_p{"custom_vjp_call", kHigherOrder | kMultipleResults | kCall,
                                  &call_shape,       &call_impl,
                                  &custom_vjp_jvp,   nullptr,
                                  &custom_vjp_batch, &custom_vjp_linearize};
const Primitive custom_lin_p{"custom_lin", kMultipleResults, &lin_shape, &lin_impl, nullptr, &lin_transpose, nullptr};
const Primitive linear_call_p{"linear_call",    kMultipleResults,        &linear_call_shape,
                              &linear_call_impl, &linear_call_jvp,       &linear_call_transpose,
                              &linear_call_batch};

std::vector<Array> linear_call(const LinearFn& fun, const LinearFn& transpose, const std::vector<Array>& residuals,
                               const std::vector<Array>& linear, const std::string& name,
                               const LinearResJvp& fun_res_jvp, const LinearResJvp& transpose_res_jvp) {
  if (current_trace() == eval_trace()) return fun(residuals, linear);
  register_all();
  // the outputs' types, from fun traced at the arguments' types
  size_t nr = residuals.size();
  std::vector<Array> all = residuals;
  all.insert(all.end(), linear.begin(), linear.end());
  FlatFn g = [&](const std::vector<Array>& xs) {
    auto [r, l] = split_at(xs, nr);
    return fun(r, l);
  };
  std::vector<Aval> outs = trace_call(g, all).out_avals();
  for (Aval& a : outs) a.vma = 0;
  Arrays r = bind(linear_call_p, all,
                  linear_params(fun, transpose, name, static_cast<int64_t>(nr), outs, fun_res_jvp, transpose_res_jvp));
  return std::vector<Array>(r.begin(), r.end());
}

std::vector<Array> custom_jvp_apply(const FlatFn& f, const CustomJvpRule& rule, const std::vector<Array>& args,
                                    const std::string& name) {
  if (current_trace() == eval_trace()) return f(args);
  register_all();
  ClosedJaxpr c;
  try {
    c = trace_call(f, args);
  } catch (const ConcretizationError&) {
    // f branches on its inputs' values. Where they are known (an eager call under grad or jvp, as JAX
    // allows in Python: its JVP trace calls the rule on the primal values), the call is staged with f's
    // outputs at these values: the derivatives, and the primal outputs under differentiation, come from
    // the rule, which sees the same concrete values. Elsewhere (jit, vmap) the error stands.
    std::vector<Array> concrete;
    for (const Array& a : args) {
      std::optional<Array> v = a.is_concrete() ? std::optional<Array>(a) : a.tracer()->concrete_value();
      if (!v) throw;
      concrete.push_back(*v);
    }
    std::vector<Array> outs;
    {
      TraceScope eager(eval_trace());
      outs = f(concrete);
    }
    c = trace_call([outs](const std::vector<Array>&) { return outs; }, args);
  }
  std::vector<Array> ins = c.consts;
  ins.insert(ins.end(), args.begin(), args.end());
  Params p{{"call_jaxpr", std::make_shared<const ClosedJaxpr>(hoist_consts(*c.jaxpr), std::vector<Array>{})},
           {"jvp_jaxpr_fun", Ref<const ParamObject>(new JvpRuleParam(rule, name))},
           {"num_consts", static_cast<int64_t>(c.consts.size())},
           {"symbolic_zeros", false}};
  Arrays out = bind(custom_jvp_call_p, ins, p);
  return std::vector<Array>(out.begin(), out.end());
}

std::vector<Array> custom_vjp_apply(const FlatFn& f, const CustomFwd& fwd, const CustomBwd& bwd,
                                    const std::vector<Array>& args, const std::string& name) {
  if (current_trace() == eval_trace()) return f(args);
  register_all();
  ClosedJaxpr c = trace_call(f, args);
  std::vector<Array> ins = c.consts;
  ins.insert(ins.end(), args.begin(), args.end());
  Params p{{"call_jaxpr", std::make_shared<const ClosedJaxpr>(hoist_consts(*c.jaxpr), std::vector<Array>{})},
           {"num_consts", static_cast<int64_t>(c.consts.size())},
           {"rule", Ref<const ParamObject>(new VjpRuleParam(fwd, bwd, name))}};
  Arrays out = bind(custom_vjp_call_p, ins, p);
  return std::vector<Array>(out.begin(), out.end());
}

}  // namespace graft
